/* Why: what `auto` runs on a CUDA device is a measured judgement per
 * architecture, block and dtype; it lives apart from the mechanics. */
#include <stdio.h>

#include "cuda/cuda_internal.h"
#include "cuda/kernels.h"

/* Measured on the tutorial's GeGLU (bench/results/h200_geglu.json): on
 * Hopper fmlp's TMA-fed GLU GEMM was as fast as or faster than cuBLASLt's
 * two GEMMs plus the fused pointwise kernel at every row count from 1 to
 * 32768, so gated bf16/f16 blocks run fused. Elsewhere (f32, whose fused
 * GEMM is the exact-FMA SIMT kernel; Linear-act stacks; other GPUs) fused
 * wins only while the forward is launch- and weight-bound. */
#define CUDA_FUSED_MAX_ROWS 128

fmlp_mode fmlp_cu_auto_mode(fmlp_ctx *ctx, fmlp_block block, fmlp_dtype dtype, int64_t rows, char *why,
                              size_t why_len)
{
    const fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    if (block == FMLP_BLOCK_GATED && dtype != FMLP_F32 && st->cc_major == 9 && fmlp_cu_gemm_wgmma_ready()) {
        snprintf(why, why_len,
                 "fused: on Hopper the one-pass GLU GEMM keeps up with cuBLASLt's two GEMMs at every row count");
        return FMLP_MODE_FUSED;
    }
    if (rows > CUDA_FUSED_MAX_ROWS) {
        snprintf(why, why_len, "compiled: above %d rows cuBLASLt's GEMMs outrun fmlp's fused GEMMs for this block and dtype",
                 CUDA_FUSED_MAX_ROWS);
        return FMLP_MODE_COMPILED;
    }
    return FMLP_MODE_AUTO;
}

/* Every block, dtype and mode runs on CUDA (f32 on the exact SIMT kernels). */
bool fmlp_cu_supports(fmlp_block block, fmlp_dtype dtype, fmlp_mode mode, char *why, size_t why_len)
{
    (void)block;
    (void)dtype;
    (void)mode;
    if (why_len) why[0] = 0;
    return true;
}
