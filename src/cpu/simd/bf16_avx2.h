/* Why: bf16 loads and stores for the AVX2 GEMM epilogue and pointwise
 * passes, rounding exactly as fmlp_f32_to_bf16 (nearest even, NaN kept
 * quiet). AVX2 has no 16-bit masked moves, so partial vectors go through a
 * small buffer. */
#ifndef FMLP_CPU_SIMD_BF16_AVX2_H
#define FMLP_CPU_SIMD_BF16_AVX2_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

static inline __m256 bf16x8_widen(__m128i h)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* The first `count` (<= 8) elements of p, widened; other lanes 0. */
static inline __m256 bf16x8_load(const uint16_t *p, int64_t count)
{
    if (count >= 8) return bf16x8_widen(_mm_loadu_si128((const __m128i *)p));
    uint16_t buf[8] = {0};
    memcpy(buf, p, (size_t)count * 2);
    return bf16x8_widen(_mm_loadu_si128((const __m128i *)buf));
}

static inline void bf16x8_store(uint16_t *p, __m256 x, int64_t count)
{
    __m256i u = _mm256_castps_si256(x);
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i bias = _mm256_add_epi32(_mm256_and_si256(hi, _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7fff));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
    __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    if (count >= 8) {
        _mm_storeu_si128((__m128i *)p, packed);
        return;
    }
    uint16_t buf[8];
    _mm_storeu_si128((__m128i *)buf, packed);
    memcpy(p, buf, (size_t)count * 2);
}

static inline __m256i mask8_first(int64_t count)
{
    __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count >= 8 ? 8 : (int)count), lanes);
}

#endif
