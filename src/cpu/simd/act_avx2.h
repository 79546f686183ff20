/* Why: the AVX2 width of the vector activations (act_vec.h): eight lanes,
 * masks as all-ones lanes, 2^n built from two exponent halves. Include only
 * from files compiled with AVX2 + FMA flags. */
#ifndef FMLP_CPU_SIMD_ACT_AVX2_H
#define FMLP_CPU_SIMD_ACT_AVX2_H

#include <immintrin.h>

#include "fmlp.h"

typedef __m256 actv;
typedef __m256 actv_mask;
#define ACTV_PS(op) _mm256_##op##_ps

static inline actv actv_abs(actv a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
static inline actv_mask actv_lt(actv a, actv b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline actv_mask actv_isnan(actv a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
/* if_set in the lanes of m, if_clear elsewhere; a - b in the lanes of m */
static inline actv actv_select(actv_mask m, actv if_set, actv if_clear) { return _mm256_blendv_ps(if_clear, if_set, m); }
static inline actv actv_sub_where(actv_mask m, actv a, actv b, actv src)
{
    return _mm256_blendv_ps(src, _mm256_sub_ps(a, b), m);
}
static inline actv actv_round(actv a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

/* e 2^n for n in [-150, 128]: each half of n stays a normal power of two,
 * and the second product rounds once into denormals. */
static inline actv actv_scale2(actv e, actv n)
{
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1);
    __m256i n2 = _mm256_sub_epi32(ni, n1);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
    return _mm256_mul_ps(_mm256_mul_ps(e, s1), s2);
}

#include "cpu/simd/act_vec.h"

static inline __m256 act256_apply(fmlp_act act, __m256 x) { return actv_apply(act, x); }

#endif
