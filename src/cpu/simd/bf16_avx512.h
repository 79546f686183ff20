/* Why: bf16 loads and stores for the AVX-512 GEMM epilogues and pointwise
 * passes, rounding exactly as fmlp_f32_to_bf16 (nearest even, NaN kept
 * quiet), so vector and scalar paths store identical bits. */
#ifndef FMLP_CPU_SIMD_BF16_AVX512_H
#define FMLP_CPU_SIMD_BF16_AVX512_H

#include <immintrin.h>
#include <stdint.h>

static inline __mmask16 mask16_first(int64_t count)
{
    return count >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << count) - 1u);
}

/* The first lanes of `mask` from p, widened; other lanes 0. */
static inline __m512 bf16x16_load(const uint16_t *p, __mmask16 mask)
{
    __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

static inline void bf16x16_store(uint16_t *p, __m512 x, __mmask16 mask)
{
    __m512i u = _mm512_castps_si512(x);
    __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i bias = _mm512_add_epi32(_mm512_and_si512(hi, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7fff));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, hi, _mm512_set1_epi32(0x40));
    _mm512_mask_cvtepi32_storeu_epi16(p, mask, r);
}

#endif
