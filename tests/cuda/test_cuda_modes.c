/* Why: every block × dtype × mode on the GPU, eager and replayed from CUDA
 * graphs, against the double reference: odd shapes that force the fallback
 * kernels, row counts from 1 to 32768 that cross every kernel variant, and
 * host tensors that go through the copy path. Outputs are poisoned first.
 * Every activation of the table is swept gated and in a stack at a row
 * count for the small-batch kernels and one for the tiled ones. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test.h"

static const tu_shape_case cases[] = {
    {"geglu", FMLP_BLOCK_GATED, FMLP_ACT_GELU_TANH, 0, 256, 768, 0, true},
    {"swiglu", FMLP_BLOCK_GATED, FMLP_ACT_SILU, 0, 72, 200, 0, false},
    {"gated-gelu-odd", FMLP_BLOCK_GATED, FMLP_ACT_GELU, 0, 33, 50, 27, true},
    {"stack-relu-3", FMLP_BLOCK_STACK, FMLP_ACT_RELU, 3, 64, 136, 40, true},
    {"linear", FMLP_BLOCK_STACK, FMLP_ACT_NONE, 1, 96, 0, 80, true},
};
static const int64_t row_counts[] = {1, 7, 64, 129, 1000};
static const fmlp_mode modes[] = {FMLP_MODE_EAGER, FMLP_MODE_COMPILED, FMLP_MODE_FUSED, FMLP_MODE_AUTO};

static void check(fmlp_ctx *ctx, const tu_shape_case *c, fmlp_dtype dt, int64_t rows, bool host)
{
    fmlp_mlp_desc d = {c->block, c->dim, c->hidden, c->out_dim, c->layers, c->act, c->bias, dt};
    fmlp_mlp *m;
    if (fmlp_mlp_create(ctx, &d, tu_rand_u64(), &m) != FMLP_OK) {
        tu_check(false, "create %s: %s", c->name, fmlp_last_error());
        return;
    }
    const int64_t out = fmlp_mlp_out_dim(m), ldx = c->dim, ldy = out;
    const size_t es = fmlp_dtype_size(dt);
    void *x = malloc((size_t)(rows * ldx) * es), *y = malloc((size_t)(rows * ldy) * es);
    double *xr = malloc(sizeof(double) * (size_t)(rows * c->dim)), *ref = malloc(sizeof(double) * (size_t)(rows * out));
    tu_fill(dt, x, rows * ldx, -2.0, 2.0, xr);
    tu_mlp_reference(m, xr, rows, ref);
    fmlp_tensor dx, dy;
    fmlp_status s = ct_upload(ctx, dt, x, rows, c->dim, ldx, &dx);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, dt, rows, out, &dy);
    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0] && s == FMLP_OK; mi++) {
        for (int graph = 0; graph < (host ? 1 : 2); graph++) {
            tu_poison(dt, y, rows * ldy);
            fmlp_status fs;
            if (host) {
                fmlp_tensor tx = fmlp_tensor_view(x, dt, rows, c->dim, ldx), ty = fmlp_tensor_view(y, dt, rows, out, ldy);
                fs = fmlp_mlp_forward(m, modes[mi], &tx, &ty);
            } else {
                fs = ctx->be->copy(ctx, dy.data, FMLP_DEVICE_CUDA, y, FMLP_DEVICE_CPU, (size_t)(rows * ldy) * es);
                if (fs == FMLP_OK)
                    fs = graph ? ct_forward_graph(m, modes[mi], &dx, &dy) : fmlp_mlp_forward(m, modes[mi], &dx, &dy);
                if (graph && fs == FMLP_OK)
                    fs = ct_forward_graph(m, modes[mi], &dx, &dy); /* the replay */
                if (fs == FMLP_OK) fs = fmlp_ctx_synchronize(ctx);
                if (fs == FMLP_OK) fs = ct_download(ctx, &dy, y);
            }
            const double err = fs == FMLP_OK ? tu_rel_err(dt, y, ldy, ref, out, rows, out) : INFINITY;
            tu_check(fs == FMLP_OK && err <= tu_tol_mode(c, dt, modes[mi]), "%-15s %-4s %-8s rows=%-5lld %-6s err=%.2e %s", c->name,
                     fmlp_dtype_name(dt), fmlp_mode_name(modes[mi]), (long long)rows,
                     host ? "host" : graph ? "graph" : "device", err, fs == FMLP_OK ? "" : fmlp_last_error());
        }
    }
    if (s != FMLP_OK) tu_check(false, "%s: device buffers: %s", c->name, fmlp_last_error());
    fmlp_tensor_free(ctx, &dx);
    fmlp_tensor_free(ctx, &dy);
    free(x);
    free(y);
    free(xr);
    free(ref);
    fmlp_mlp_destroy(m);
}

/* auto follows the measurements in the CUDA backend: gated bf16 runs fused
 * at every size where the Hopper GLU GEMM exists, f32 only at few rows. */
/* The backend's rule for auto, on a context that decides by rule alone
 * (measured decisions are test_auto_measure's and the benchmark's). */
static void check_auto(void)
{
    setenv("FMLP_AUTO_MEASURE", "0", 1);
    fmlp_ctx_options o = fmlp_ctx_options_default();
    o.device = FMLP_DEVICE_CUDA;
    fmlp_ctx *ctx = NULL;
    const bool made = fmlp_ctx_create(&o, &ctx) == FMLP_OK;
    unsetenv("FMLP_AUTO_MEASURE");
    if (!tu_check(made, "a CUDA context deciding auto by rule: %s", fmlp_last_error())) return;
    const fmlp_dtype dts[] = {FMLP_BF16, FMLP_F32};
    for (int di = 0; di < 2; di++) {
        fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 256, 512, 0, 0, FMLP_ACT_GELU_TANH, false, dts[di]};
        fmlp_mlp *m = NULL;
        if (!tu_check(fmlp_mlp_create(ctx, &d, 5, &m) == FMLP_OK, "create: %s", fmlp_last_error())) break;
        fmlp_plan_info fused, small, big;
        const bool ok = fmlp_mlp_plan(m, FMLP_MODE_FUSED, 8192, &fused) == FMLP_OK &&
                        fmlp_mlp_plan(m, FMLP_MODE_AUTO, 64, &small) == FMLP_OK &&
                        fmlp_mlp_plan(m, FMLP_MODE_AUTO, 8192, &big) == FMLP_OK;
        const bool hopper = ok && strstr(fused.kernels[0].name, "wgmma") != NULL;
        const fmlp_mode want_big = hopper && dts[di] != FMLP_F32 ? FMLP_MODE_FUSED : FMLP_MODE_COMPILED;
        tu_check(ok && small.resolved == FMLP_MODE_FUSED && big.resolved == want_big && big.why[0],
                 "auto %s: 64 rows -> %s, 8192 rows -> %s (want %s): %s", fmlp_dtype_name(dts[di]),
                 ok ? fmlp_mode_name(small.resolved) : "?", ok ? fmlp_mode_name(big.resolved) : "?",
                 fmlp_mode_name(want_big), ok ? big.why : fmlp_last_error());
        fmlp_mlp_destroy(m);
    }
    fmlp_ctx_destroy(ctx);
}

static void check_every_act(fmlp_ctx *ctx)
{
    static const int64_t rows[] = {7, 1000};
    static const fmlp_dtype dts[] = {FMLP_BF16, FMLP_F16, FMLP_F32};
    for (int a = FMLP_ACT_NONE + 1; a < FMLP_ACT_COUNT; a++) {
        tu_act_sweep s;
        tu_act_sweep_for((fmlp_act)a, 64, 136, 40, &s);
        for (int c = 0; c < 2; c++)
            for (int di = 0; di < 3; di++)
                for (int r = 0; r < 2; r++) check(ctx, &s.cases[c], dts[di], rows[r], false);
    }
}

int main(void)
{
    tu_seed();
    fmlp_ctx *ctx = ct_ctx();
    if (!ctx) return tu_finish();
    const fmlp_dtype dts[] = {FMLP_BF16, FMLP_F16, FMLP_F32};
    for (int di = 0; di < 3; di++)
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
            for (size_t ri = 0; ri < sizeof row_counts / sizeof row_counts[0]; ri++)
                check(ctx, &cases[ci], dts[di], row_counts[ri], false);
    check(ctx, &cases[0], FMLP_BF16, 33, true);
    check(ctx, &cases[3], FMLP_F32, 5, true);
    const tu_shape_case big = {"geglu-small-wide", FMLP_BLOCK_GATED, FMLP_ACT_GELU_TANH, 0, 64, 192, 0, true};
    check(ctx, &big, FMLP_BF16, 32768, false);
    check(ctx, &big, FMLP_F32, 8192, false);
    check_every_act(ctx);
    check_auto();
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
