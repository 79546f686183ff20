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

/* The one-kernel MLP (mlp_one.cu) on Hopper at up to 16 rows, where its
 * down groups stay in shared memory, and in its row-streaming forms
 * (mlp_stream.cu at one row, mlp_stream_mma.cu at 2..16) where they
 * would not. Measured on the H200
 * (bench/results/h200_one_kernel_2026-12-01.md), the tutorial's shape in a
 * graph: 8.2 us against 8.7 for the two gemvs at 1 row L2-warm, 10.4
 * against 13.4 L2-cold; at 16 rows 11.1 / 13.3 against 11.9 / 16.8. With
 * the down projection streamed in K pieces (Llama-3-8B) it was no faster
 * at 1 row and slower at 16 (122 us against 98), so that form runs only
 * when FMLP_CUDA_ONE_KERNEL=1 asks for it wherever it fits; the row stream
 * took the Llama-3-8B MLP's one row from 93 to 86-88 us
 * (bench/results/h200_row_stream_2026-12-02.md), and its 2, 8 and 16
 * rows from 93.8, 93.5 and 98.0 to 86.9, 91.1 and 95.9 L2-cold, the
 * 2048 -> 11008 MLP's 16 from 49.1 to 44.9
 * (bench/results/h200_row_stream_rows_2026-12-02.md); with its passes
 * rotated per block, 85.1, 89.7 and 94.2 at 2, 8 and 16 rows against
 * PyTorch's best 90.9, 92.0 and 93.4 in the same run
 * (bench/results/h200_pass_rotation_2026-12-04.md). */
bool fmlp_cu_one_kernel(fmlp_ctx *ctx, const fmlp_mlp_desc *d, int64_t rows, int64_t *ws_bytes)
{
    const fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    if (st->one_kernel == FMLP_CU_ONE_OFF || d->block != FMLP_BLOCK_GATED || st->cc_major != 9) return false;
    const fmlp_cu_mlp_args a =
        fmlp_cu_mlp_shape(st, d->dtype, d->act, rows, d->dim, d->hidden, d->out_dim ? d->out_dim : d->dim);
    if (!fmlp_cu_mlp_one_fits(&a)) return false;
    if (st->one_kernel == FMLP_CU_ONE_RESIDENT && !fmlp_cu_mlp_one_by_default(&a)) return false;
    *ws_bytes = (int64_t)fmlp_cu_mlp_one_scratch(&a);
    return true;
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
