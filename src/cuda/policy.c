/* Why: what `auto` runs on a CUDA device is a measured judgement per
 * architecture, block and dtype; it lives apart from the mechanics. */
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
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

/* Up to this many rows mode fused runs a gated bf16/f16 block as one
 * cooperative kernel (mlp_stream.cu) rather than the streaming GLU GEMM and
 * down GEMM chained by PDL. A first setting, to be fitted from
 * bench/cuda/small_batch.sh (its one-kernel and PDL-pair lines at 1..64
 * rows); FMLP_CUDA_ONE_KERNEL_MAX_ROWS overrides it (0 disables). */
#define CUDA_ONE_KERNEL_MAX_ROWS 16

static fmlp_status env_int(const char *name, int lo, int hi, int *out)
{
    const char *v = getenv(name);
    if (!v || !*v) return FMLP_OK;
    char *end;
    const long n = strtol(v, &end, 10);
    if (*end || n < lo || n > hi)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s=%s: expected an integer from %d to %d; unset it for the default",
                         name, v, lo, hi);
    *out = (int)n;
    return FMLP_OK;
}

fmlp_status fmlp_cu_policy_init(fmlp_cu_state *st)
{
    st->one_kernel_max_rows = CUDA_ONE_KERNEL_MAX_ROWS;
    int pdl = st->cc_major >= 9;
    fmlp_status s = env_int("FMLP_CUDA_ONE_KERNEL_MAX_ROWS", 0, 64, &st->one_kernel_max_rows);
    if (s == FMLP_OK) s = env_int("FMLP_CUDA_PDL", 0, 1, &pdl);
    st->pdl = pdl && st->cc_major >= 9;
    return s;
}

bool fmlp_cu_one_kernel_mlp(fmlp_ctx *ctx, const fmlp_mlp_desc *d, int64_t rows)
{
    const fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    if (d->block != FMLP_BLOCK_GATED || rows > st->one_kernel_max_rows || !st->coop || !st->scratch) return false;
    const int64_t hidden = d->hidden, out = d->out_dim ? d->out_dim : d->dim;
    const fmlp_cu_gemm_args glu = {d->dtype, d->act, true, rows, hidden, d->dim, 2 * ((hidden + 7) / 8 * 8), NULL,
                                   d->dim, NULL, NULL, NULL, hidden, st->sm_count, st->scratch, false, 0, 0};
    const fmlp_cu_gemm_args down = {d->dtype, FMLP_ACT_NONE, false, rows, out, hidden, out, NULL, hidden, NULL, NULL,
                                    NULL, out, st->sm_count, st->scratch, false, 0, 0};
    return fmlp_cu_mlp_fits(&glu, &down);
}
