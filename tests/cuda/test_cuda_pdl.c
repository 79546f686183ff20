/* Why: with programmatic dependent launch a gemv starts while the kernel
 * before it still runs and must wait before it reads its input or writes
 * its output; a missed wait reads a stale buffer only now and then, and
 * silently. So forwards are chained back to back (each output the next
 * input, two buffers in turn, no synchronization between), where a stale
 * read changes every later step, and the chain must give the same bits
 * with PDL as without (FMLP_CUDA_PDL=0, a second context), directly and
 * replayed from graphs; the first step must also match the f64 reference.
 * The shapes put every plain GEMM on the gemv (the tutorial's width, rows
 * 1 to 32) and K over split-K clusters; at 300 and 4100 rows the GLU GEMM
 * is a persistent wgmma tile, and with FMLP_CUDA_OWN_GEMM=1 on both sides
 * at 4100 rows the down GEMM too. Past 64 rows the reference checks the
 * first 64. */
#include <math.h>
#include <stdlib.h>

#include "cuda_test.h"

enum { DIM = 768, HIDDEN = 3072, CHAIN = 12 };

/* y = f^CHAIN(x) on ctx, through buffers a and b in turn; the result lands in *out. */
static fmlp_status chain(fmlp_ctx *ctx, fmlp_mlp *m, fmlp_mode mode, bool graph, fmlp_tensor *a, fmlp_tensor *b,
                         fmlp_tensor **out)
{
    fmlp_tensor *src = a, *dst = b;
    for (int i = 0; i < CHAIN; i++) {
        fmlp_status s = graph ? ct_forward_graph(m, mode, src, dst) : fmlp_mlp_forward(m, mode, src, dst);
        if (s != FMLP_OK) return s;
        fmlp_tensor *t = src;
        src = dst;
        dst = t;
    }
    *out = src;
    return fmlp_ctx_synchronize(ctx);
}

typedef struct {
    fmlp_ctx *ctx;
    fmlp_mlp *m;
    fmlp_tensor a, b;
} side;

static bool side_make(side *sd, bool pdl, bool own, const fmlp_mlp_desc *d, int64_t rows)
{
    if (!pdl) setenv("FMLP_CUDA_PDL", "0", 1);
    if (own) setenv("FMLP_CUDA_OWN_GEMM", "1", 1);
    sd->ctx = ct_ctx();
    unsetenv("FMLP_CUDA_PDL");
    unsetenv("FMLP_CUDA_OWN_GEMM");
    if (!sd->ctx) return false;
    return tu_check(fmlp_mlp_create(sd->ctx, d, 11, &sd->m) == FMLP_OK &&
                        fmlp_tensor_alloc(sd->ctx, d->dtype, rows, DIM, &sd->a) == FMLP_OK &&
                        fmlp_tensor_alloc(sd->ctx, d->dtype, rows, DIM, &sd->b) == FMLP_OK,
                    "PDL %s: context, MLP and buffers: %s", pdl ? "on" : "off", fmlp_last_error());
}

static void side_free(side *sd)
{
    fmlp_tensor_free(sd->ctx, &sd->a);
    fmlp_tensor_free(sd->ctx, &sd->b);
    fmlp_mlp_destroy(sd->m);
    fmlp_ctx_destroy(sd->ctx);
}

static void run_rows(fmlp_dtype dt, int64_t rows, bool own)
{
    const fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_GELU_TANH, true, dt};
    const int64_t ref_rows = rows < 64 ? rows : 64;
    side on, off;
    if (!side_make(&on, true, own, &d, rows)) return;
    if (!side_make(&off, false, own, &d, rows)) {
        side_free(&on);
        return;
    }
    const size_t n = (size_t)(rows * DIM);
    uint16_t *hx = malloc(2 * n), *h_on = malloc(2 * n), *h_off = malloc(2 * n), *hp = malloc(2 * n);
    double *xr = malloc(sizeof(double) * n), *ref = malloc(sizeof(double) * n);
    tu_fill(dt, hx, (int64_t)n, -1, 1, xr);
    tu_poison(dt, hp, (int64_t)n);
    tu_mlp_reference(on.m, xr, ref_rows, ref);

    const fmlp_mode modes[] = {FMLP_MODE_EAGER, FMLP_MODE_COMPILED, FMLP_MODE_FUSED};
    for (int g = 0; g < 2; g++)
        for (int mi = 0; mi < 3; mi++) {
            fmlp_tensor *y_on = NULL, *y_off = NULL;
            fmlp_status s = FMLP_OK;
            side *sides[2] = {&on, &off};
            for (int k = 0; k < 2 && s == FMLP_OK; k++) {
                side *sd = sides[k];
                s = sd->ctx->be->copy(sd->ctx, sd->a.data, FMLP_DEVICE_CUDA, hx, FMLP_DEVICE_CPU, 2 * n);
                if (s == FMLP_OK) s = sd->ctx->be->copy(sd->ctx, sd->b.data, FMLP_DEVICE_CUDA, hp, FMLP_DEVICE_CPU, 2 * n);
                if (s == FMLP_OK && k == 0) {
                    /* one step alone first: it must match the reference */
                    fmlp_tensor *one = &sd->b;
                    s = fmlp_mlp_forward(sd->m, modes[mi], &sd->a, one);
                    if (s == FMLP_OK) s = fmlp_ctx_synchronize(sd->ctx);
                    if (s == FMLP_OK) s = ct_download(sd->ctx, one, h_on);
                    const double err = s == FMLP_OK ? tu_rel_err(dt, h_on, DIM, ref, DIM, ref_rows, DIM) : INFINITY;
                    const tu_shape_case gated = {"gated", FMLP_BLOCK_GATED, FMLP_ACT_GELU_TANH, 0, DIM, HIDDEN, 0, true};
                    tu_check(err <= tu_tol_mode(&gated, dt, modes[mi]), "%s rows=%lld%s %s, one step with PDL: err=%.2e",
                             fmlp_dtype_name(dt), (long long)rows, own ? " own GEMMs" : "", fmlp_mode_name(modes[mi]),
                             err);
                    if (s == FMLP_OK)
                        s = sd->ctx->be->copy(sd->ctx, sd->b.data, FMLP_DEVICE_CUDA, hp, FMLP_DEVICE_CPU, 2 * n);
                }
                if (s == FMLP_OK) s = chain(sd->ctx, sd->m, modes[mi], g == 1, &sd->a, &sd->b, k == 0 ? &y_on : &y_off);
            }
            if (!tu_check(s == FMLP_OK, "%s rows=%lld %s%s chain: %s", fmlp_dtype_name(dt), (long long)rows,
                          fmlp_mode_name(modes[mi]), g ? " (graphs)" : "", fmlp_last_error()))
                continue;
            ct_download(on.ctx, y_on, h_on);
            ct_download(off.ctx, y_off, h_off);
            double norm = 0;
            size_t differ = 0;
            for (size_t i = 0; i < n; i++) {
                const double v = tu_get(dt, h_on, (int64_t)i);
                norm += v * v;
                differ += h_on[i] != h_off[i];
            }
            tu_check(isfinite(norm) && norm > 0, "%s rows=%lld %s%s: the chain's output is finite and not zero (%g)",
                     fmlp_dtype_name(dt), (long long)rows, fmlp_mode_name(modes[mi]), g ? " (graphs)" : "", norm);
            tu_check(differ == 0, "%s rows=%lld %s%s: %d back-to-back forwards, the same bits with PDL as without "
                     "(%zu of %zu differ)", fmlp_dtype_name(dt), (long long)rows, fmlp_mode_name(modes[mi]),
                     g ? " (graphs)" : "", CHAIN, differ, n);
        }
    free(hx);
    free(h_on);
    free(h_off);
    free(hp);
    free(xr);
    free(ref);
    side_free(&on);
    side_free(&off);
}

int main(void)
{
    tu_seed();
    fmlp_ctx *probe = ct_ctx();
    if (!probe) return tu_finish();
    fmlp_ctx_destroy(probe);
    const int64_t rows[] = {1, 7, 16, 32, 300, 4100};
    for (int i = 0; i < 6; i++) {
        run_rows(FMLP_BF16, rows[i], false);
        run_rows(FMLP_F16, rows[i], false);
    }
    run_rows(FMLP_BF16, 4100, true);
    run_rows(FMLP_F16, 4100, true);
    return tu_finish();
}
