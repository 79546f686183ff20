/* Why: where a context decides `auto` by measurement, the first AUTO
 * forward of a shape and row bucket times the candidates (every mode a
 * gated block has) and every later plan of that bucket says what was
 * measured; it must still compute the
 * block exactly, measure nothing while a profiler records, and share a
 * decision across the rows of one bucket only. The CPU backend decides by
 * rule, so FMLP_AUTO_MEASURE=1 turns measurement on here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { DIM = 24, HIDDEN = 56 };

static double forward_err(fmlp_mlp *m, int64_t rows)
{
    void *x = malloc((size_t)(rows * DIM) * 4), *y = malloc((size_t)(rows * DIM) * 4);
    double *xr = malloc(sizeof(double) * (size_t)(rows * DIM)), *ref = malloc(sizeof(double) * (size_t)(rows * DIM));
    tu_fill(FMLP_F32, x, rows * DIM, -1, 1, xr);
    tu_poison(FMLP_F32, y, rows * DIM);
    fmlp_tensor tx = fmlp_tensor_view(x, FMLP_F32, rows, DIM, 0), ty = fmlp_tensor_view(y, FMLP_F32, rows, DIM, 0);
    fmlp_status s = fmlp_mlp_forward(m, FMLP_MODE_AUTO, &tx, &ty);
    tu_mlp_reference(m, xr, rows, ref);
    double err = s == FMLP_OK ? tu_rel_err(FMLP_F32, y, DIM, ref, DIM, rows, DIM) : INFINITY;
    free(x);
    free(y);
    free(xr);
    free(ref);
    return err;
}

static bool measured(fmlp_mlp *m, int64_t rows, const char *at)
{
    fmlp_plan_info p;
    return fmlp_mlp_plan(m, FMLP_MODE_AUTO, rows, &p) == FMLP_OK && strstr(p.why, "measured at") &&
           (!at || strstr(p.why, at)) && p.resolved != FMLP_MODE_AUTO;
}

int main(void)
{
    tu_seed();
    setenv("FMLP_AUTO_MEASURE", "1", 1);
    fmlp_ctx *ctx;
    if (!tu_check(fmlp_ctx_create(NULL, &ctx) == FMLP_OK, "context")) return tu_finish();
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_GELU_TANH, true, FMLP_F32};
    fmlp_mlp *m, *twin;
    fmlp_mlp_create(ctx, &d, tu_rand_u64(), &m);
    fmlp_mlp_create(ctx, &d, tu_rand_u64(), &twin);

    tu_check(!measured(m, 33, NULL), "before any forward, auto's plan is the rule's");
    double err = forward_err(m, 33);
    tu_check(err <= tu_tol(FMLP_F32), "the measuring AUTO forward computes the block: err %.2e", err);
    tu_check(measured(m, 33, "at 33 rows"), "after it, the plan says what was measured");
    fmlp_plan_info p;
    tu_check(fmlp_mlp_plan(m, FMLP_MODE_AUTO, 33, &p) == FMLP_OK && strstr(p.why, "fused ") && strstr(p.why, "eager ") &&
                 strstr(p.why, "compiled ") && strstr(p.why, " us"),
             "a gated block's decision times fused, eager and compiled: \"%s\"", p.why);
    tu_check(measured(m, 60, "at 33 rows"), "rows of the same bucket (33..64) share the decision");
    tu_check(measured(twin, 40, "at 33 rows"), "so does another MLP of the same shape");
    tu_check(!measured(m, 65, NULL) && !measured(m, 20, NULL), "neighbouring buckets are not decided by it");
    err = forward_err(m, 64);
    tu_check(err <= tu_tol(FMLP_F32), "a decided bucket's forward: err %.2e", err);

    fmlp_profiler *prof;
    fmlp_profiler_create(ctx, NULL, &prof);
    fmlp_profiler_start(prof);
    err = forward_err(m, 7);
    fmlp_profiler_stop(prof);
    tu_check(err <= tu_tol(FMLP_F32) && !measured(m, 7, NULL),
             "while a profiler records, AUTO runs the rule and measures nothing: err %.2e", err);
    fmlp_profiler_destroy(prof);

    fmlp_mlp_destroy(twin);
    fmlp_mlp_destroy(m);
    fmlp_ctx_destroy(ctx);

    setenv("FMLP_AUTO_MEASURE", "0", 1);
    if (tu_check(fmlp_ctx_create(NULL, &ctx) == FMLP_OK, "context without measurement")) {
        fmlp_mlp_create(ctx, &d, tu_rand_u64(), &m);
        err = forward_err(m, 9);
        tu_check(err <= tu_tol(FMLP_F32) && !measured(m, 9, NULL), "FMLP_AUTO_MEASURE=0: the rule alone: err %.2e", err);
        fmlp_mlp_destroy(m);
        fmlp_ctx_destroy(ctx);
    }
    return tu_finish();
}
