/* Why: a fused plan's cuBLASLt GEMMs take the fastest of the heuristic's
 * algorithms, timed on first use (lt.c), while eager and compiled keep the
 * heuristic's first as PyTorch does. The timing runs must never show up
 * where they would mislead or break something: inside a caller's graph
 * capture, under a profiler, or with FMLP_CUDA_LT_TUNE=0. This checks the
 * pick rule (no GPU needed), and on a GPU where each of those cases times
 * or leaves the algorithms, with every forward's output against the f64
 * reference and graph replays bit for bit against the forward captured. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test.h"

#ifdef FMLP_HAVE_CUDA
#include "cuda/cuda_internal.h"

enum { DIM = 768, HIDDEN = 3072, ROWS = 512 };

static void pick_rule(void)
{
    const float faster[] = {10.0f, 12.0f, 9.0f, 9.5f};
    tu_check(fmlp_cu_lt_pick(faster, 4) == 2, "pick: the fastest, 10%% under the first");
    const float close[] = {10.0f, 9.9f, 9.85f};
    tu_check(fmlp_cu_lt_pick(close, 3) == 0, "pick: the first where no other is 2%% faster");
    const float failed[] = {10.0f, -1.0f, 8.0f};
    tu_check(fmlp_cu_lt_pick(failed, 3) == 2, "pick: a failed candidate is never taken");
    const float first_failed[] = {-1.0f, 12.0f, 11.0f};
    tu_check(fmlp_cu_lt_pick(first_failed, 3) == 2, "pick: the fastest that ran when the first failed");
    const float one[] = {10.0f};
    tu_check(fmlp_cu_lt_pick(one, 1) == 0, "pick: a single candidate");
}

typedef struct {
    fmlp_ctx *ctx;
    fmlp_mlp *m;
    fmlp_tensor dx, dy;
    uint16_t *hy;
    double *ref;
} setup;

static bool make(setup *s, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->ctx = ct_ctx();
    if (!s->ctx) return false;
    const fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_GELU_TANH, false, FMLP_BF16};
    if (!tu_check(fmlp_mlp_create(s->ctx, &d, seed, &s->m) == FMLP_OK, "create: %s", fmlp_last_error())) return false;
    uint16_t *hx = malloc(sizeof(uint16_t) * ROWS * DIM);
    double *xr = malloc(sizeof(double) * ROWS * DIM);
    s->hy = malloc(sizeof(uint16_t) * ROWS * DIM);
    s->ref = malloc(sizeof(double) * ROWS * DIM);
    tu_fill(FMLP_BF16, hx, ROWS * DIM, -2.0, 2.0, xr);
    bool ok = tu_mlp_reference(s->m, xr, ROWS, s->ref) == FMLP_OK &&
              ct_upload(s->ctx, FMLP_BF16, hx, ROWS, DIM, DIM, &s->dx) == FMLP_OK &&
              fmlp_tensor_alloc(s->ctx, FMLP_BF16, ROWS, DIM, &s->dy) == FMLP_OK;
    free(hx);
    free(xr);
    return tu_check(ok, "inputs: %s", fmlp_last_error());
}

static void drop(setup *s)
{
    if (s->ctx) {
        fmlp_tensor_free(s->ctx, &s->dx);
        fmlp_tensor_free(s->ctx, &s->dy);
    }
    fmlp_mlp_destroy(s->m);
    fmlp_ctx_destroy(s->ctx);
    free(s->hy);
    free(s->ref);
}

/* One forward into a poisoned y, checked against the reference. */
static bool forward_ok(setup *s, fmlp_mode mode, const char *what)
{
    tu_poison(FMLP_BF16, s->hy, ROWS * DIM);
    fmlp_status st = s->ctx->be->copy(s->ctx, s->dy.data, FMLP_DEVICE_CUDA, s->hy, FMLP_DEVICE_CPU,
                                      sizeof(uint16_t) * ROWS * DIM);
    if (st == FMLP_OK) st = fmlp_mlp_forward(s->m, mode, &s->dx, &s->dy);
    if (st == FMLP_OK) st = fmlp_ctx_synchronize(s->ctx);
    if (st == FMLP_OK) st = ct_download(s->ctx, &s->dy, s->hy);
    const tu_shape_case c = {"geglu", FMLP_BLOCK_GATED, FMLP_ACT_GELU_TANH, 0, DIM, HIDDEN, 0, false};
    const double err = st == FMLP_OK ? tu_rel_err(FMLP_BF16, s->hy, DIM, s->ref, DIM, ROWS, DIM) : INFINITY;
    return tu_check(err <= tu_tol_mode(&c, FMLP_BF16, mode), "%s: %s err=%.2e %s", what, fmlp_mode_name(mode), err,
                    st == FMLP_OK ? "" : fmlp_last_error());
}

/* The down GEMM's cached cuBLASLt problem, fused (tuned) or eager. */
static const fmlp_cu_lt_plan *down_plan(setup *s, bool tuned)
{
    return fmlp_cu_lt_find(fmlp_cu_state_of(s->ctx), ROWS, DIM, HIDDEN, tuned);
}

static void timed_on_first_use(void)
{
    setup s;
    if (make(&s, 11)) {
        forward_ok(&s, FMLP_MODE_EAGER, "first use");
        forward_ok(&s, FMLP_MODE_FUSED, "first use");
        const fmlp_cu_lt_plan *e = down_plan(&s, false), *f = down_plan(&s, true);
        tu_check(e && e->n_cands == 1, "eager's down GEMM keeps the heuristic's first (no candidates to time)");
        tu_check(f && f->n_cands == 1, "fused's down GEMM was timed on first use");
        tu_check(e && f && memcmp(&e->algo, &f->cands[0], sizeof e->algo) == 0,
                 "eager runs the algorithm the heuristic names first for fused too");
        forward_ok(&s, FMLP_MODE_FUSED, "after timing");
        /* another MLP of the shape: the pick is reused, nothing timed */
        const fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_GELU_TANH, false, FMLP_BF16};
        fmlp_mlp *other = NULL;
        if (tu_check(fmlp_mlp_create(s.ctx, &d, 15, &other) == FMLP_OK, "second MLP: %s", fmlp_last_error())) {
            fmlp_cu_lt_plan first = *f;
            fmlp_status st = fmlp_mlp_forward(other, FMLP_MODE_FUSED, &s.dx, &s.dy);
            if (st == FMLP_OK) st = fmlp_ctx_synchronize(s.ctx);
            int plans = 0, same = 0;
            fmlp_cu_state *cs = fmlp_cu_state_of(s.ctx);
            for (int i = 0; i < cs->n_lt; i++) {
                const fmlp_cu_lt_plan *q = &cs->lt_plans[i];
                if (!q->tuned || q->m != ROWS || q->k != HIDDEN) continue;
                plans++;
                same += q->n_cands == 1 && memcmp(&q->algo, &first.algo, sizeof q->algo) == 0;
            }
            tu_check(st == FMLP_OK && plans == 2 && same == 2 && cs->n_lt_picks == 1,
                     "a second MLP of the shape takes the first's pick untimed (%d plans, %d with it, %d timings)",
                     plans, same, cs->n_lt_picks);
        }
        fmlp_mlp_destroy(other);
    }
    drop(&s);
}

/* fmlp's own capture times the candidates off the captured stream; the
 * replay then matches the captured forward bit for bit. */
static void timed_inside_own_capture(void)
{
    setup s;
    if (make(&s, 12)) {
        fmlp_mlp_set_graph(s.m, true);
        forward_ok(&s, FMLP_MODE_FUSED, "fmlp graph, captured");
        const fmlp_cu_lt_plan *f = down_plan(&s, true);
        tu_check(f && f->n_cands == 1, "timed while fmlp captured its graph");
        uint16_t *first = malloc(sizeof(uint16_t) * ROWS * DIM);
        memcpy(first, s.hy, sizeof(uint16_t) * ROWS * DIM);
        forward_ok(&s, FMLP_MODE_FUSED, "fmlp graph, replayed");
        tu_check(memcmp(first, s.hy, sizeof(uint16_t) * ROWS * DIM) == 0,
                 "the replay equals the captured forward bit for bit");
        free(first);
    }
    drop(&s);
}

/* Inside a caller's capture and under a profiler nothing is timed: the
 * first plain forward after them is. */
static void left_for_later(void)
{
    setup s;
    fmlp_ctx *caller = NULL;
    if (make(&s, 13) && (caller = ct_ctx())) {
        void *own = NULL, *capturing = NULL;
        fmlp_ctx_get_stream(s.ctx, &own);
        if (tu_check(caller->be->graph_begin(caller) == FMLP_OK, "caller begins a capture: %s", fmlp_last_error())) {
            fmlp_ctx_get_stream(caller, &capturing);
            fmlp_ctx_set_stream(s.ctx, capturing);
            const fmlp_status st = fmlp_mlp_forward(s.m, FMLP_MODE_FUSED, &s.dx, &s.dy);
            const char key[] = "caller";
            const fmlp_status end = caller->be->graph_end(caller, key, sizeof key, 0);
            fmlp_ctx_set_stream(s.ctx, NULL);
            tu_check(st == FMLP_OK && end == FMLP_OK, "fused inside the caller's capture: %s", fmlp_last_error());
            const fmlp_cu_lt_plan *f = down_plan(&s, true);
            tu_check(f && f->n_cands > 1, "not timed inside the caller's capture (%d candidates left)",
                     f ? f->n_cands : -1);
            fmlp_ctx_synchronize(caller);
        }
        fmlp_profiler_options o = fmlp_profiler_options_default();
        fmlp_profiler *p = NULL;
        const bool started = fmlp_profiler_create(s.ctx, &o, &p) == FMLP_OK && fmlp_profiler_start(p) == FMLP_OK;
        if (tu_check(started, "profiler: %s", fmlp_last_error())) {
            /* under compute-sanitizer CUPTI cannot attach: nothing records */
            const bool records = fmlp_cu_prof_active();
            forward_ok(&s, FMLP_MODE_FUSED, "profiled");
            const fmlp_cu_lt_plan *f = down_plan(&s, true);
            if (records)
                tu_check(f && f->n_cands > 1, "not timed while the profiler records");
            else
                tu_skip("not timed while the profiler records: CUPTI records nothing in this process");
            fmlp_profiler_stop(p);
        }
        fmlp_profiler_destroy(p);
        forward_ok(&s, FMLP_MODE_FUSED, "after capture and profile");
        const fmlp_cu_lt_plan *f = down_plan(&s, true);
        tu_check(f && f->n_cands == 1, "timed by the first plain forward");
    }
    fmlp_ctx_destroy(caller);
    drop(&s);
}

static void switched_off(void)
{
    setenv("FMLP_CUDA_LT_TUNE", "0", 1);
    setup s;
    if (make(&s, 14)) {
        forward_ok(&s, FMLP_MODE_EAGER, "tuning off");
        forward_ok(&s, FMLP_MODE_FUSED, "tuning off");
        const fmlp_cu_lt_plan *e = down_plan(&s, false), *f = down_plan(&s, true);
        tu_check(f && f->n_cands == 1 && e && memcmp(&e->algo, &f->algo, sizeof e->algo) == 0,
                 "FMLP_CUDA_LT_TUNE=0: fused runs the heuristic's first, as eager does");
    }
    drop(&s);
    unsetenv("FMLP_CUDA_LT_TUNE");
}

int main(void)
{
    tu_seed();
    pick_rule();
    fmlp_ctx *probe = ct_ctx();
    if (!probe) return tu_finish();
    fmlp_ctx_destroy(probe);
    timed_on_first_use();
    timed_inside_own_capture();
    left_for_later();
    switched_off();
    return tu_finish();
}
#else
int main(void)
{
    tu_skip("built without CUDA");
    return tu_finish();
}
#endif
