/* Why: the plan is a promise made before running: GeGLU is 5 kernels in
 * eager, 4 compiled, 2 fused, stacks fold their activations only in fused,
 * auto resolves to a real mode and says why, and every kernel is named after
 * the code path that runs it. */
#include <string.h>

#include "test_util.h"

static int kernels(fmlp_mlp *m, fmlp_mode mode, fmlp_plan_info *p)
{
    if (fmlp_mlp_plan(m, mode, 8192, p) != FMLP_OK) return -1;
    return p->n_kernels;
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
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
