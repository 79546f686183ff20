/* Why: which mode is fastest depends on the shape, the row count and the
 * device, and a rule written from one shape's measurements is wrong on the
 * next (on the H200, fused wins the tutorial MLP and loses the Llama-3-8B
 * one at 1024 rows and up). So where the context decides AUTO by
 * measurement, the first AUTO forward of an MLP shape and row bucket times
 * the candidate modes once, on scratch tensors of its own, and the context
 * remembers the winner for every MLP of that shape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/dtype.h"
#include "core/error.h"
#include "model/mlp_internal.h"
#include "plan/plan.h"

#define AUTO_REPS 5
/* A candidate must be this much faster than fused to be picked over it:
 * fused runs the fewest kernels, and a closer call is noise. */
#define AUTO_MARGIN 1.02

/* Rows share a decision within a power-of-two bucket. */
static int64_t bucket_of(int64_t rows)
{
    int64_t b = 1;
    while (b < rows && b < ((int64_t)1 << 40)) b *= 2;
    return b;
}

static bool same_shape(const fmlp_auto_choice *c, const fmlp_mlp_desc *d, int64_t bucket)
{
    return c->block == d->block && c->act == d->act && c->dtype == d->dtype && c->dim == d->dim &&
           c->hidden == d->hidden && c->out_dim == d->out_dim && c->layers == d->layers && c->bias == d->bias &&
           c->bucket == bucket;
}

bool fmlp_auto_lookup(const fmlp_mlp *m, int64_t rows, fmlp_mode *mode, char *why, size_t why_len)
{
    fmlp_ctx *ctx = m->ctx;
    if (!ctx->auto_measure) return false;
    const int64_t bucket = bucket_of(rows);
    bool hit = false;
    pthread_mutex_lock(&ctx->auto_lock);
    for (int i = 0; i < ctx->n_auto && !hit; i++) {
        const fmlp_auto_choice *c = &ctx->auto_memo[i];
        if (!same_shape(c, &m->desc, bucket)) continue;
        *mode = c->mode;
        if (why_len) snprintf(why, why_len, "%s", c->why);
        hit = true;
    }
    pthread_mutex_unlock(&ctx->auto_lock);
    return hit;
}

static void remember(fmlp_mlp *m, int64_t rows, fmlp_mode mode, const char *why)
{
    fmlp_ctx *ctx = m->ctx;
    fmlp_auto_choice c;
    memset(&c, 0, sizeof c);
    c.block = m->desc.block;
    c.act = m->desc.act;
    c.dtype = m->desc.dtype;
    c.dim = m->desc.dim;
    c.hidden = m->desc.hidden;
    c.out_dim = m->desc.out_dim;
    c.layers = m->desc.layers;
    c.bias = m->desc.bias;
    c.bucket = bucket_of(rows);
    c.mode = mode;
    snprintf(c.why, sizeof c.why, "%s", why);
    pthread_mutex_lock(&ctx->auto_lock);
    bool known = false;
    for (int i = 0; i < ctx->n_auto && !known; i++) known = same_shape(&ctx->auto_memo[i], &m->desc, c.bucket);
    /* When the memo is full the oldest decision goes. */
    if (!known) {
        if (ctx->n_auto == FMLP_AUTO_MEMO) {
            memmove(ctx->auto_memo, ctx->auto_memo + 1, (FMLP_AUTO_MEMO - 1) * sizeof c);
            ctx->n_auto--;
        }
        ctx->auto_memo[ctx->n_auto++] = c;
    }
    pthread_mutex_unlock(&ctx->auto_lock);
}

/* Scratch x (filled with values in [-1, 1), never zeros: the matrix units
 * run faster on zeros) and y, plus the plan's temporaries, on the device. */
typedef struct {
    fmlp_ws_block *ws;
    fmlp_tensor bufs[FMLP_BUF_COUNT];
} scratch;

static fmlp_status scratch_take(fmlp_mlp *m, const fmlp_plan *widest, int64_t rows, scratch *sc)
{
    fmlp_ctx *ctx = m->ctx;
    const fmlp_mlp_desc *d = &m->desc;
    const size_t es = fmlp_dtype_size(d->dtype);
    size_t off[FMLP_BUF_COUNT] = {0}, total = 0;
    int64_t cols[FMLP_BUF_COUNT] = {d->dim, d->out_dim};
    for (int b = FMLP_BUF_T0; b < FMLP_BUF_COUNT; b++) cols[b] = widest->t_cols[b];
    for (int b = 0; b < FMLP_BUF_COUNT; b++) {
        off[b] = total;
        total += ((size_t)(rows * cols[b]) * es + 63) & ~(size_t)63;
    }
    fmlp_status s = fmlp_ws_take(ctx, total, &sc->ws);
    if (s != FMLP_OK) return s;
    for (int b = 0; b < FMLP_BUF_COUNT; b++) {
        sc->bufs[b] = fmlp_tensor_view((char *)sc->ws->data + off[b], d->dtype, rows, cols[b], cols[b]);
        sc->bufs[b].device = ctx->device;
    }
    void *host = fmlp_malloc((size_t)(rows * d->dim) * es);
    if (!host) {
        fmlp_ws_give(ctx, sc->ws);
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory for the input that times auto's candidates");
    }
    uint64_t z = 0x9E3779B97F4A7C15ull;
    for (int64_t i = 0; i < rows * d->dim; i++) {
        z ^= z << 13, z ^= z >> 7, z ^= z << 17;
        fmlp_store(d->dtype, host, i, (float)((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0));
    }
    fmlp_tensor hx = fmlp_tensor_view(host, d->dtype, rows, d->dim, d->dim);
    s = fmlp_tensor_copy(ctx, &sc->bufs[FMLP_BUF_X], &hx);
    free(host);
    if (s != FMLP_OK) fmlp_ws_give(ctx, sc->ws);
    return s;
}

/* Wall time of one forward of `p`, waited for. */
static fmlp_status time_plan(fmlp_mlp *m, const fmlp_plan *p, scratch *sc, double *us)
{
    const int64_t t0 = fmlp_now_ns();
    fmlp_status s = fmlp_exec_run_kernels(m, p, sc->bufs, NULL);
    if (s == FMLP_OK) s = fmlp_ctx_synchronize(m->ctx);
    *us = (double)(fmlp_now_ns() - t0) / 1e3;
    return s;
}

/* Best of AUTO_REPS forwards of each plan after one untimed forward each,
 * the plans taking turns: on the H200 a run of matrix work lowers the
 * clock (software power cap) over some 100 ms, so plans timed one after
 * another would read the clock the plan before left
 * (bench/results/h200_power_cap_2026-12-02.md). */
static fmlp_status time_plans(fmlp_mlp *m, const fmlp_plan *plans, int n, scratch *sc, double *best)
{
    fmlp_status s = FMLP_OK;
    double us;
    for (int i = 0; i < n && s == FMLP_OK; i++) {
        best[i] = 1e300;
        s = time_plan(m, &plans[i], sc, &us);
    }
    for (int r = 0; r < AUTO_REPS && s == FMLP_OK; r++)
        for (int j = 0; j < n && s == FMLP_OK; j++) {
            const int i = (j + r) % n;
            s = time_plan(m, &plans[i], sc, &us);
            if (us < best[i]) best[i] = us;
        }
    return s;
}

/* The candidates, fused first: every mode the block has, so AUTO is never
 * slower than the fastest of them by more than the timing's noise, eager
 * included (bench/results/h200_auto_2026-12-02.md); a stack's compiled
 * plan is its eager one. */
static int candidates_of(const fmlp_mlp *m, fmlp_mode *out)
{
    out[0] = FMLP_MODE_FUSED;
    out[1] = FMLP_MODE_EAGER;
    if (m->desc.block != FMLP_BLOCK_GATED) return 2;
    out[2] = FMLP_MODE_COMPILED;
    return 3;
}

/* Times the candidates and remembers the winner: fused unless another is
 * AUTO_MARGIN faster, then the fastest. */
static fmlp_status measure(fmlp_mlp *m, int64_t rows, fmlp_mode *out)
{
    fmlp_mode modes[3];
    const int n = candidates_of(m, modes);
    /* the candidates run on the weights, which are made at first use */
    fmlp_status s = fmlp_mlp_ensure_packed(m);
    if (s != FMLP_OK) return s;
    fmlp_plan *plans = fmlp_malloc((size_t)n * sizeof *plans);
    if (!plans) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory for auto's candidate plans");
    for (int i = 0; i < n && s == FMLP_OK; i++) s = fmlp_plan_build(m, modes[i], rows, &plans[i]);
    fmlp_plan widest;
    if (s == FMLP_OK) {
        widest = plans[0];
        for (int i = 1; i < n; i++)
            for (int b = FMLP_BUF_T0; b < FMLP_BUF_COUNT; b++)
                if (plans[i].t_cols[b] > widest.t_cols[b]) widest.t_cols[b] = plans[i].t_cols[b];
    }
    scratch sc;
    if (s == FMLP_OK) s = scratch_take(m, &widest, rows, &sc);
    if (s != FMLP_OK) {
        free(plans);
        return s;
    }
    double us[3] = {0, 0, 0};
    s = time_plans(m, plans, n, &sc, us);
    fmlp_ws_give(m->ctx, sc.ws);
    free(plans);
    if (s != FMLP_OK) return s;
    int best = 1;
    for (int i = 2; i < n; i++)
        if (us[i] < us[best]) best = i;
    if (us[best] * AUTO_MARGIN >= us[0]) best = 0;
    char why[128];
    int len = snprintf(why, sizeof why, "%s: measured at %lld rows", fmlp_mode_name(modes[best]), (long long)rows);
    for (int i = 0; i < n && len > 0 && (size_t)len < sizeof why; i++)
        len += snprintf(why + len, sizeof why - (size_t)len, ", %s %.1f us", fmlp_mode_name(modes[i]), us[i]);
    *out = modes[best];
    remember(m, rows, *out, why);
    return FMLP_OK;
}

fmlp_mode fmlp_auto_resolve(fmlp_mlp *m, int64_t rows)
{
    fmlp_mode mode;
    char why[128];
    if (fmlp_auto_lookup(m, rows, &mode, why, 0)) return mode;
    fmlp_ctx *ctx = m->ctx;
    const fmlp_mlp_desc *d = &m->desc;
    const bool one_way = d->block == FMLP_BLOCK_STACK && (d->layers == 1 || d->act == FMLP_ACT_NONE);
    const bool capturing = ctx->be->caller_capturing && ctx->be->caller_capturing(ctx);
    if (ctx->auto_measure && !one_way && !capturing && !ctx->prof) {
        if (measure(m, rows, &mode) == FMLP_OK) return mode;
        fmlp_clear_error();
    }
    return fmlp_plan_auto(m, rows, why, sizeof why);
}
