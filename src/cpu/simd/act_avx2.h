/* Why: the AVX2 twin of act_avx512.h (same formulas and constants, eight
 * lanes). Include only from files compiled with AVX2 + FMA flags. */
#ifndef FMLP_CPU_SIMD_ACT_AVX2_H
#define FMLP_CPU_SIMD_ACT_AVX2_H

#include <immintrin.h>

#include "cpu/simd/act_coef.h"
#include "fmlp.h"

static inline __m256 act256_exp(__m256 x)
{
    x = _mm256_max_ps(_mm256_set1_ps(ACT_EXP_LO), _mm256_min_ps(_mm256_set1_ps(ACT_EXP_HI), x));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(ACT_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(ACT_LN2_HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(ACT_LN2_LO), r);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(ACT_EXP_P4), r, _mm256_set1_ps(ACT_EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(ACT_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(ACT_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(ACT_EXP_P0));
    __m256 e = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(r, r), p, r), _mm256_set1_ps(1.0f));
    /* 2^n in two halves: n spans [-150, 128], each half stays a normal
     * power of two, and the second product rounds once into denormals. */
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1);
    __m256i n2 = _mm256_sub_epi32(ni, n1);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
    return _mm256_mul_ps(_mm256_mul_ps(e, s1), s2);
}

static inline __m256 act256_phi(__m256 x)
{
    const __m256 half = _mm256_set1_ps(0.5f);
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 t = _mm256_mul_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), _mm256_set1_ps(ACT_SQRT1_2));
    /* t^2 = x^2 / 2 as a sum of two floats, so exp(-t^2) does not inherit
     * the rounding of t (which would cost ~100 ulp in the far tail). */
    __m256 x2 = _mm256_mul_ps(x, x);
    __m256 t2 = _mm256_mul_ps(x2, half);
    /* Its low part from |x| clamped where exp(-t^2) is already 0, so an
     * infinite x does not make it Inf - Inf. */
    __m256 xc = _mm256_min_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), _mm256_set1_ps(16.0f));
    __m256 t2lo = _mm256_mul_ps(_mm256_fmsub_ps(xc, xc, _mm256_mul_ps(xc, xc)), half);
    __m256 e = _mm256_fmadd_ps(_mm256_set1_ps(ACT_ERF_E5), t2, _mm256_set1_ps(ACT_ERF_E4));
    e = _mm256_fmadd_ps(e, t2, _mm256_set1_ps(ACT_ERF_E3));
    e = _mm256_fmadd_ps(e, t2, _mm256_set1_ps(ACT_ERF_E2));
    e = _mm256_fmadd_ps(e, t2, _mm256_set1_ps(ACT_ERF_E1));
    e = _mm256_fmadd_ps(e, t2, _mm256_set1_ps(ACT_ERF_E0));
    e = _mm256_mul_ps(_mm256_mul_ps(e, t), half);
    __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    __m256 small = _mm256_blendv_ps(_mm256_add_ps(half, e), _mm256_sub_ps(half, e), neg);

    __m256 tc = _mm256_min_ps(t, _mm256_set1_ps(ACT_ERFC_TMAX));
    __m256 z = _mm256_div_ps(one, _mm256_fmadd_ps(tc, half, one));
    __m256 r = _mm256_fmadd_ps(_mm256_set1_ps(ACT_ERFC_R8), z, _mm256_set1_ps(ACT_ERFC_R7));
    r = _mm256_fmadd_ps(r, z, _mm256_set1_ps(ACT_ERFC_R6));
    r = _mm256_fmadd_ps(r, z, _mm256_set1_ps(ACT_ERFC_R5));
    r = _mm256_fmadd_ps(r, z, _mm256_set1_ps(ACT_ERFC_R4));
    r = _mm256_fmadd_ps(r, z, _mm256_set1_ps(ACT_ERFC_R3));
    r = _mm256_fmadd_ps(r, z, _mm256_set1_ps(ACT_ERFC_R2));
    r = _mm256_fmadd_ps(r, z, _mm256_set1_ps(ACT_ERFC_R1));
    r = _mm256_fmadd_ps(r, z, _mm256_set1_ps(ACT_ERFC_R0));
    __m256 et2 = act256_exp(_mm256_sub_ps(_mm256_setzero_ps(), t2));
    __m256 c = _mm256_mul_ps(_mm256_mul_ps(et2, _mm256_fnmadd_ps(r, t2lo, r)), half);
    __m256 large = _mm256_blendv_ps(_mm256_sub_ps(one, c), c, neg);

    __m256 is_small = _mm256_cmp_ps(t, _mm256_set1_ps(ACT_ERF_SPLIT), _CMP_LT_OQ);
    return _mm256_blendv_ps(large, small, is_small);
}

/* x sigmoid(2u) with -2u = x (C0 + C1 x^2) carried as a float pair: near
 * x = -4 the argument is ~20, so its own rounding would cost ~20 ulp. */
static inline __m256 act256_gelu_tanh(__m256 x)
{
    const __m256 c0 = _mm256_set1_ps(ACT_GT_C0), c1 = _mm256_set1_ps(ACT_GT_C1);
    __m256 x2 = _mm256_mul_ps(x, x), x2lo = _mm256_fmsub_ps(x, x, x2);
    __m256 q = _mm256_mul_ps(c1, x2), qlo = _mm256_fmsub_ps(c1, x2, q);
    __m256 p = _mm256_add_ps(c0, q), bb = _mm256_sub_ps(p, c0);
    __m256 plo = _mm256_add_ps(_mm256_sub_ps(c0, _mm256_sub_ps(p, bb)), _mm256_sub_ps(q, bb));
    plo = _mm256_add_ps(plo, _mm256_fmadd_ps(c1, x2lo, qlo));
    __m256 y = _mm256_mul_ps(x, p);
    __m256 ylo = _mm256_fmadd_ps(x, plo, _mm256_fmsub_ps(x, p, y));
    __m256 e = act256_exp(y);
    /* exp(y + ylo) = e (1 + ylo); a NaN ylo (Inf - Inf) only arises where e
     * is 0 or Inf, and then e alone decides. */
    __m256 den = _mm256_add_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(e, ylo, e));
    __m256 plain = _mm256_add_ps(_mm256_set1_ps(1.0f), e);
    __m256 bad = _mm256_cmp_ps(den, den, _CMP_UNORD_Q);
    return _mm256_div_ps(x, _mm256_blendv_ps(den, plain, bad));
}

static inline __m256 act256_apply(fmlp_act act, __m256 x)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    switch (act) {
    case FMLP_ACT_GELU: return _mm256_mul_ps(x, act256_phi(x));
    case FMLP_ACT_GELU_TANH: return act256_gelu_tanh(x);
    case FMLP_ACT_SILU:
        return _mm256_div_ps(x, _mm256_add_ps(one, act256_exp(_mm256_sub_ps(_mm256_setzero_ps(), x))));
    case FMLP_ACT_RELU: return _mm256_max_ps(_mm256_setzero_ps(), x);
    default: return x;
    }
}

#endif
