/* Why: the core promise. Every block (GeGLU, SwiGLU, gated with other
 * activations, Linear stacks, a single Linear) × dtype × mode × CPU code path
 * matches the double reference, at awkward row counts and dims, on strided
 * views, with every output element written and the stride gaps untouched.
 * Every activation of the table is also swept gated and in a stack, so a new
 * one is covered without a case of its own. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static const tu_shape_case cases[] = {
    {"geglu", FMLP_BLOCK_GATED, FMLP_ACT_GELU_TANH, 0, 40, 72, 0, false},
    {"swiglu+bias", FMLP_BLOCK_GATED, FMLP_ACT_SILU, 0, 33, 50, 0, true},
    {"gated-gelu-erf", FMLP_BLOCK_GATED, FMLP_ACT_GELU, 0, 17, 31, 27, false},
    {"gated-relu+bias", FMLP_BLOCK_GATED, FMLP_ACT_RELU, 0, 24, 40, 0, true},
    {"stack-gelu-3+bias", FMLP_BLOCK_STACK, FMLP_ACT_GELU, 3, 37, 45, 25, true},
    {"stack-relu-2", FMLP_BLOCK_STACK, FMLP_ACT_RELU, 2, 64, 129, 0, false},
    {"stack-silu-4", FMLP_BLOCK_STACK, FMLP_ACT_SILU, 4, 3, 37, 29, false},
    {"linear+bias", FMLP_BLOCK_STACK, FMLP_ACT_NONE, 1, 32, 0, 64, true},
    {"linear-k1", FMLP_BLOCK_STACK, FMLP_ACT_NONE, 1, 1, 0, 7, false},
};

static const int64_t row_counts[] = {1, 3, 17, 200};

/* One forward on a strided view against the reference. */
static void check_one(fmlp_ctx *ctx, const char *path, const tu_shape_case *c, fmlp_dtype dt, fmlp_mode mode,
                      int64_t rows)
{
    fmlp_mlp_desc d = {c->block, c->dim, c->hidden, c->out_dim, c->layers, c->act, c->bias, dt};
    fmlp_mlp *m;
    if (fmlp_mlp_create(ctx, &d, tu_rand_u64(), &m) != FMLP_OK) {
        tu_check(false, "create %s: %s", c->name, fmlp_last_error());
        return;
    }
    int64_t out = fmlp_mlp_out_dim(m), ldx = c->dim + 5, ldy = out + 3;
    size_t es = fmlp_dtype_size(dt);
    void *x = malloc((size_t)(rows * ldx) * es), *y = malloc((size_t)(rows * ldy) * es);
    double *xr = malloc(sizeof(double) * (size_t)(rows * c->dim)), *ref = malloc(sizeof(double) * (size_t)(rows * out));
    tu_fill(dt, x, rows * ldx, -2.0, 2.0, NULL);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < c->dim; i++) xr[r * c->dim + i] = tu_get(dt, x, r * ldx + i);
    tu_fill(dt, y, rows * ldy, 5.0, 6.0, NULL);
    for (int64_t r = 0; r < rows; r++) tu_poison(dt, (char *)y + (size_t)(r * ldy) * es, out);
    fmlp_tensor tx = fmlp_tensor_view(x, dt, rows, c->dim, ldx), ty = fmlp_tensor_view(y, dt, rows, out, ldy);
    fmlp_status s = fmlp_mlp_forward(m, mode, &tx, &ty);
    tu_mlp_reference(m, xr, rows, ref);
    double err = s == FMLP_OK ? tu_rel_err(dt, y, ldy, ref, out, rows, out) : INFINITY;
    bool gaps = true;
    for (int64_t r = 0; r < rows && gaps; r++)
        for (int64_t j = out; j < ldy; j++) {
            double v = tu_get(dt, y, r * ldy + j);
            if (!(v >= 5.0 && v <= 6.0)) gaps = false;
        }
    tu_check(s == FMLP_OK && err <= tu_tol_mode(c, dt, mode) && gaps, "%-10s %-18s %-4s %-8s rows=%-4lld err=%.2e%s%s", path, c->name,
             fmlp_dtype_name(dt), fmlp_mode_name(mode), (long long)rows, err, gaps ? "" : " (wrote into the stride gap)",
             s == FMLP_OK ? "" : fmlp_last_error());
    free(x);
    free(y);
    free(xr);
    free(ref);
    fmlp_mlp_destroy(m);
}

static void check_every_act(fmlp_ctx *ctx, const char *path)
{
    static const int64_t rows[] = {3, 17};
    for (int a = FMLP_ACT_NONE + 1; a < FMLP_ACT_COUNT; a++) {
        tu_act_sweep s;
        tu_act_sweep_for((fmlp_act)a, 19, 37, 13, &s);
        for (int c = 0; c < 2; c++)
            for (int dt = FMLP_F32; dt <= FMLP_BF16; dt++)
                for (int mode = 0; mode < FMLP_MODE_COUNT; mode++)
                    for (int r = 0; r < 2; r++)
                        check_one(ctx, path, &s.cases[c], (fmlp_dtype)dt, (fmlp_mode)mode, rows[r]);
    }
}

int main(void)
{
    tu_seed();
    fmlp_cpu_path_info paths[8];
    int np = fmlp_cpu_paths(paths, 8);
    for (int p = 0; p < np; p++) {
        if (!paths[p].available) {
            tu_skip("CPU path %s: %s", paths[p].name, paths[p].why_not);
            continue;
        }
        fmlp_ctx_options o = fmlp_ctx_options_default();
        o.cpu_path = paths[p].name;
        fmlp_ctx *ctx;
        if (!tu_check(fmlp_ctx_create(&o, &ctx) == FMLP_OK, "context on path %s", paths[p].name)) continue;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            for (int dt = FMLP_F32; dt <= FMLP_BF16; dt++)
                for (int mode = FMLP_MODE_EAGER; mode <= FMLP_MODE_AUTO; mode++)
                    for (size_t r = 0; r < sizeof row_counts / sizeof row_counts[0]; r++)
                        check_one(ctx, paths[p].name, &cases[c], (fmlp_dtype)dt, (fmlp_mode)mode, row_counts[r]);
        check_every_act(ctx, paths[p].name);
        fmlp_ctx_destroy(ctx);
    }
    /* 1000 rows on the default path, the tutorial's activation. */
    fmlp_ctx *ctx;
    if (tu_check(fmlp_ctx_create(NULL, &ctx) == FMLP_OK, "default context")) {
        for (int dt = FMLP_F32; dt <= FMLP_BF16; dt++)
            for (int mode = FMLP_MODE_EAGER; mode <= FMLP_MODE_FUSED; mode++)
                check_one(ctx, "default", &cases[0], (fmlp_dtype)dt, (fmlp_mode)mode, 1000);
        fmlp_ctx_destroy(ctx);
    }
    return tu_finish();
}
