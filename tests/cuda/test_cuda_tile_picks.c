/* Why: which Hopper GEMM tile a shape runs on is decided on the host from
 * its rows, widths and the SM count, and each pick was measured against
 * the others (gemm_tma.cu's tma_pick names the results). Checked here in
 * every CUDA build, with no GPU, so that a change to the table or the rule
 * that moves a measured shape to another tile fails before a device visit. */
#include <stdint.h>
#include <string.h>

#include "test_util.h"

#ifdef FMLP_HAVE_CUDA
#include "cuda/kernels.h"

/* A bf16 GEMM as the fused plan builds it: the GLU GEMM of dim -> hidden
 * (nw packed gate|up rows), or a plain one of k -> n. */
static fmlp_cu_gemm_args gemm(int dtype, bool glu, int64_t m, int64_t n, int64_t k)
{
    fmlp_cu_gemm_args a;
    memset(&a, 0, sizeof a);
    a.dtype = dtype;
    a.act = FMLP_ACT_GELU_TANH;
    a.glu = glu;
    a.m = m;
    a.n = n;
    a.k = k;
    a.nw = glu ? 2 * n : n;
    a.ldx = k;
    a.ldo = n;
    a.sm_count = 132;
    a.cc_major = 9;
    return a;
}

static void picks(fmlp_cu_gemm_args a, const char *want)
{
    const char *name = fmlp_cu_gemm_wgmma_config_name(&a, -1);
    tu_check(strcmp(name, want) == 0, "%s %lld x %lld x %lld: %s (picked %s)", a.glu ? "glu" : "plain", (long long)a.m,
             (long long)a.nw, (long long)a.k, want, name);
}

int main(void)
{
    /* the tutorial's GLU GEMM (768 -> 3072): 48-wide tiles where the square
     * ones leave SMs idle, the TMA-stored ping-pong from 193 rows */
    picks(gemm(FMLP_BF16, true, 33, 3072, 768), "fmlp_gemm_glu_bf16_wgmma_64x48");
    picks(gemm(FMLP_BF16, true, 64, 3072, 768), "fmlp_gemm_glu_bf16_wgmma_64x48");
    picks(gemm(FMLP_F16, true, 64, 3072, 768), "fmlp_gemm_glu_f16_wgmma_64x48");
    picks(gemm(FMLP_BF16, true, 65, 3072, 768), "fmlp_gemm_glu_bf16_wgmma_128x48");
    picks(gemm(FMLP_BF16, true, 96, 3072, 768), "fmlp_gemm_glu_bf16_wgmma_128x48");
    picks(gemm(FMLP_BF16, true, 128, 3072, 768), "fmlp_gemm_glu_bf16_wgmma_128x48");
    picks(gemm(FMLP_BF16, true, 129, 3072, 768), "fmlp_gemm_glu_bf16_wgmma_64x128");
    picks(gemm(FMLP_BF16, true, 192, 3072, 768), "fmlp_gemm_glu_bf16_wgmma_64x128");
    picks(gemm(FMLP_BF16, true, 193, 3072, 768), "fmlp_gemm_glu_bf16_wgmma_128x128_pingpong_tmastore");
    picks(gemm(FMLP_BF16, true, 256, 3072, 768), "fmlp_gemm_glu_bf16_wgmma_128x128_pingpong_tmastore");
    /* with more than two 128x192 tiles per SM, its wider TMA-stored tile
     * where its waves hold less work than the 128x128 one's, weighed 10%
     * dearer for the 128-wide tile (H100, GEMM-only against cuBLASLt:
     * bench/results/h100_glu_128x192_tmastore_2026-12-06.md) */
    picks(gemm(FMLP_BF16, true, 1024, 3072, 768), "fmlp_gemm_glu_bf16_wgmma_128x128_pingpong_tmastore");
    picks(gemm(FMLP_BF16, true, 2048, 3072, 768), "fmlp_gemm_glu_bf16_wgmma_128x192_pingpong_tmastore");
    picks(gemm(FMLP_BF16, true, 8192, 3072, 768), "fmlp_gemm_glu_bf16_wgmma_128x192_pingpong_tmastore");
    picks(gemm(FMLP_F16, true, 32768, 3072, 768), "fmlp_gemm_glu_f16_wgmma_128x192_pingpong_tmastore");
    /* Qwen2.5-0.5B's (896 -> 4864): 64x64 tiles reach every SM at 64 rows,
     * 128x128 ones cover more than half of them at 128 */
    picks(gemm(FMLP_BF16, true, 64, 4864, 896), "fmlp_gemm_glu_bf16_wgmma_64x64");
    picks(gemm(FMLP_BF16, true, 128, 4864, 896), "fmlp_gemm_glu_bf16_wgmma_128x128");
    /* at 1024 rows a fourth wave of 128x192 tiles would hold 9% of a wave */
    picks(gemm(FMLP_BF16, true, 1024, 4864, 896), "fmlp_gemm_glu_bf16_wgmma_128x128_pingpong_tmastore");
    picks(gemm(FMLP_BF16, true, 2048, 4864, 896), "fmlp_gemm_glu_bf16_wgmma_128x192_pingpong_tmastore");
    /* 1024 -> 4096 at 1024 rows: three 128x192 waves, the last 61% full */
    picks(gemm(FMLP_BF16, true, 1024, 4096, 1024), "fmlp_gemm_glu_bf16_wgmma_128x128_pingpong_tmastore");
    picks(gemm(FMLP_BF16, true, 4096, 4096, 1024), "fmlp_gemm_glu_bf16_wgmma_128x192_pingpong_tmastore");
    picks(gemm(FMLP_BF16, true, 1024, 8960, 1536), "fmlp_gemm_glu_bf16_wgmma_128x192_pingpong_tmastore");
    /* K = 2048 and 2304 (Llama-3.2-1B, Gemma-2-2B) take the same rule */
    picks(gemm(FMLP_BF16, true, 1024, 8192, 2048), "fmlp_gemm_glu_bf16_wgmma_128x128_pingpong_tmastore");
    picks(gemm(FMLP_BF16, true, 4096, 8192, 2048), "fmlp_gemm_glu_bf16_wgmma_128x192_pingpong_tmastore");
    picks(gemm(FMLP_BF16, true, 1024, 9216, 2304), "fmlp_gemm_glu_bf16_wgmma_128x192_pingpong_tmastore");
    /* Llama-3-8B's (4096 -> 14336) at 1024 rows: the 128x160 waves are the fullest */
    picks(gemm(FMLP_BF16, true, 1024, 14336, 4096), "fmlp_gemm_glu_bf16_wgmma_128x160_pingpong");
    /* from K = 3072 the 192-wide candidate is the TMA-stored one with five
     * stages (its output staged one box a round) */
    picks(gemm(FMLP_BF16, true, 4096, 14336, 4096), "fmlp_gemm_glu_bf16_wgmma_128x192_pingpong_tmastore_s5");
    picks(gemm(FMLP_BF16, true, 8192, 14336, 4096), "fmlp_gemm_glu_bf16_wgmma_128x192_pingpong_tmastore_s5");
    picks(gemm(FMLP_F16, true, 1024, 18944, 3584), "fmlp_gemm_glu_f16_wgmma_128x192_pingpong_tmastore_s5");
    picks(gemm(FMLP_BF16, true, 4096, 8192, 3072), "fmlp_gemm_glu_bf16_wgmma_128x192_pingpong_tmastore_s5");
    /* plain GEMMs never take the 48-wide tiles */
    picks(gemm(FMLP_BF16, false, 64, 768, 3072), "fmlp_gemm_bf16_wgmma_64x64");
    picks(gemm(FMLP_BF16, false, 128, 768, 3072), "fmlp_gemm_bf16_wgmma_64x64");
    picks(gemm(FMLP_BF16, false, 1024, 3072, 768), "fmlp_gemm_bf16_wgmma_128x128");
    /* the down projection's shape where fmlp runs it: the TMA-stored
     * 128x192 from a wave of its tiles (staged in rounds), the shared
     * 128x256 where its tiles fill whole waves */
    picks(gemm(FMLP_BF16, false, 4096, 768, 3072), "fmlp_gemm_bf16_wgmma_128x128");
    picks(gemm(FMLP_BF16, false, 8192, 768, 3072), "fmlp_gemm_bf16_wgmma_128x192_pingpong_tmastore");
    picks(gemm(FMLP_F16, false, 32768, 768, 3072), "fmlp_gemm_f16_wgmma_128x192_pingpong_tmastore");
    picks(gemm(FMLP_BF16, false, 4096, 4096, 14336), "fmlp_gemm_bf16_wgmma_128x256_coop");
    return tu_finish();
}
#else
int main(void)
{
    tu_skip("built without the CUDA backend");
    return tu_finish();
}
#endif
