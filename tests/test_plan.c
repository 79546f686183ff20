/* Why: the plan is a promise made before running: GeGLU is 5 kernels in
 * eager, 4 compiled, 2 fused, stacks fold their activations only in fused,
 * auto resolves to a real mode and says why, every kernel is named after
 * the code path that runs it, and a backend offering the one-kernel MLP gets
 * it at the row counts it accepts. */
#include <string.h>

#include "core/internal.h"
#include "test_util.h"

static int kernels(fmlp_mlp *m, fmlp_mode mode, fmlp_plan_info *p)
{
    if (fmlp_mlp_plan(m, mode, 8192, p) != FMLP_OK) return -1;
    return p->n_kernels;
}

static bool one_kernel_up_to_4(fmlp_ctx *ctx, const fmlp_mlp_desc *d, int64_t rows)
{
    (void)ctx;
    return d->block == FMLP_BLOCK_GATED && rows <= 4;
}

/* A backend that offers the one-kernel MLP gets it in fused mode at the row
 * counts it accepts, counted like the GEMM_GLU and GEMM it replaces. */
static void check_one_kernel(fmlp_ctx *ctx)
{
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 768, 3072, 0, 0, FMLP_ACT_GELU_TANH, true, FMLP_BF16};
    fmlp_mlp *m;
    if (!tu_check(fmlp_mlp_create(ctx, &d, 1, &m) == FMLP_OK, "create: %s", fmlp_last_error())) return;
    fmlp_plan_info two, one, five;
    const bool ok2 = fmlp_mlp_plan(m, FMLP_MODE_FUSED, 4, &two) == FMLP_OK;
    const fmlp_backend *real = ctx->be;
    fmlp_backend offering = *real;
    offering.one_kernel_mlp = one_kernel_up_to_4;
    ctx->be = &offering;
    const bool ok1 = fmlp_mlp_plan(m, FMLP_MODE_FUSED, 4, &one) == FMLP_OK;
    const bool ok5 = fmlp_mlp_plan(m, FMLP_MODE_FUSED, 5, &five) == FMLP_OK && five.n_kernels == 2;
    const bool eager = fmlp_mlp_plan(m, FMLP_MODE_EAGER, 4, &five) == FMLP_OK && five.n_kernels == 5;
    ctx->be = real;
    tu_check(ok2 && ok1 && two.n_kernels == 2 && one.n_kernels == 1 && !strcmp(one.kernels[0].op, "linear+glu+linear") &&
                 one.kernels[0].m == 4 && one.kernels[0].n == 768 && one.kernels[0].k == 768,
             "fused at 4 rows: 1 kernel (%d, op %s) where the backend offers it, else 2 (%d)", ok1 ? one.n_kernels : -1,
             ok1 ? one.kernels[0].op : "?", ok2 ? two.n_kernels : -1);
    tu_check(ok1 && ok2 && one.flops == two.flops && one.bytes == two.bytes,
             "the one kernel does the two kernels' work: %lld FLOPs, %lld bytes (two: %lld, %lld)", (long long)one.flops,
             (long long)one.bytes, (long long)two.flops, (long long)two.bytes);
    tu_check(ok5 && eager, "5 rows stay 2 kernels in fused, and eager stays 5 at 4 rows");
    fmlp_mlp_destroy(m);
}

int main(void)
{
    tu_seed();
    fmlp_ctx *ctx;
    if (!tu_check(fmlp_ctx_create(NULL, &ctx) == FMLP_OK, "context")) return tu_finish();
    fmlp_plan_info p;
    for (int dt = FMLP_F32; dt <= FMLP_BF16; dt++) {
        fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 768, 3072, 0, 0, FMLP_ACT_GELU_TANH, false, (fmlp_dtype)dt};
        fmlp_mlp *m;
        fmlp_mlp_create(ctx, &d, 1, &m);
        const char *path = fmlp_ctx_cpu_path(ctx, (fmlp_dtype)dt);
        tu_check(kernels(m, FMLP_MODE_EAGER, &p) == 5, "GeGLU eager: 5 kernels (%d)", p.n_kernels);
        tu_check(strstr(p.kernels[2].name, "gelu_tanh") && strstr(p.kernels[3].name, "mul"), "eager runs gelu_tanh then mul: %s, %s",
                 p.kernels[2].name, p.kernels[3].name);
        tu_check(p.flops == 2LL * 8192 * 768 * 3072 * 3 + 2LL * 8192 * 3072, "eager FLOPs: 3 GEMMs + 2 pointwise passes");
        tu_check(kernels(m, FMLP_MODE_COMPILED, &p) == 4, "GeGLU compiled: 4 kernels (%d)", p.n_kernels);
        tu_check(strstr(p.kernels[2].name, "fused_gelu_tanh_mul") != NULL, "compiled fuses gelu_tanh*mul: %s", p.kernels[2].name);
        tu_check(kernels(m, FMLP_MODE_FUSED, &p) == 2, "GeGLU fused: 2 kernels (%d)", p.n_kernels);
        tu_check(strstr(p.kernels[0].name, "geglu") && strstr(p.kernels[0].name, path) &&
                     strstr(p.kernels[0].name, fmlp_dtype_name((fmlp_dtype)dt)),
                 "fused names the GLU, dtype and path: %s", p.kernels[0].name);
        tu_check(kernels(m, FMLP_MODE_AUTO, &p) > 0 && p.resolved != FMLP_MODE_AUTO && p.why[0], "auto resolves to %s: %s",
                 fmlp_mode_name(p.resolved), p.why);
        fmlp_mlp_destroy(m);

        fmlp_mlp_desc s = {FMLP_BLOCK_STACK, 64, 128, 32, 3, FMLP_ACT_GELU, true, (fmlp_dtype)dt};
        fmlp_mlp_create(ctx, &s, 1, &m);
        tu_check(kernels(m, FMLP_MODE_EAGER, &p) == 5, "3-layer stack eager: 3 GEMM + 2 gelu = 5 (%d)", p.n_kernels);
        tu_check(kernels(m, FMLP_MODE_FUSED, &p) == 3, "3-layer stack fused: 3 (%d)", p.n_kernels);
        tu_check(strstr(p.kernels[0].name, "gelu") && !strstr(p.kernels[2].name, "gelu"),
                 "activation in the first GEMMs' epilogue only: %s / %s", p.kernels[0].name, p.kernels[2].name);
        fmlp_mlp_destroy(m);
    }
    check_one_kernel(ctx);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
