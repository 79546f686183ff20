/* Why: GEMM epilogues and pointwise passes evaluate activations sixteen lanes
 * at a time; libm would cost a call per element. Accuracy, special values and
 * the formulas are explained in act_coef.h. Include only from files compiled
 * with AVX-512 flags. */
#ifndef FMLP_CPU_SIMD_ACT_AVX512_H
#define FMLP_CPU_SIMD_ACT_AVX512_H

#include <immintrin.h>

#include "cpu/simd/act_coef.h"
#include "fmlp.h"

static inline __m512 act512_exp(__m512 x)
{
    /* min/max return their second operand for NaN, so NaN survives. */
    x = _mm512_max_ps(_mm512_set1_ps(ACT_EXP_LO), _mm512_min_ps(_mm512_set1_ps(ACT_EXP_HI), x));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(ACT_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(ACT_LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(ACT_LN2_LO), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(ACT_EXP_P4), r, _mm512_set1_ps(ACT_EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(ACT_EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(ACT_EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(ACT_EXP_P0));
    __m512 e = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(r, r), p, r), _mm512_set1_ps(1.0f));
    /* scalef rounds once into the denormal range and overflows to Inf. */
    return _mm512_scalef_ps(e, n);
}

/* Phi(x), the standard normal CDF. */
static inline __m512 act512_phi(__m512 x)
{
    const __m512 half = _mm512_set1_ps(0.5f);
    __m512 t = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(ACT_SQRT1_2));
    /* t^2 = x^2 / 2 as a sum of two floats, so exp(-t^2) does not inherit
     * the rounding of t (which would cost ~100 ulp in the far tail). */
    __m512 x2 = _mm512_mul_ps(x, x);
    __m512 t2 = _mm512_mul_ps(x2, half);
    /* Its low part from |x| clamped where exp(-t^2) is already 0, so an
     * infinite x does not make it Inf - Inf. */
    __m512 xc = _mm512_min_ps(_mm512_abs_ps(x), _mm512_set1_ps(16.0f));
    __m512 t2lo = _mm512_mul_ps(_mm512_fmsub_ps(xc, xc, _mm512_mul_ps(xc, xc)), half);
    __m512 e = _mm512_fmadd_ps(_mm512_set1_ps(ACT_ERF_E5), t2, _mm512_set1_ps(ACT_ERF_E4));
    e = _mm512_fmadd_ps(e, t2, _mm512_set1_ps(ACT_ERF_E3));
    e = _mm512_fmadd_ps(e, t2, _mm512_set1_ps(ACT_ERF_E2));
    e = _mm512_fmadd_ps(e, t2, _mm512_set1_ps(ACT_ERF_E1));
    e = _mm512_fmadd_ps(e, t2, _mm512_set1_ps(ACT_ERF_E0));
    e = _mm512_mul_ps(_mm512_mul_ps(e, t), half); /* erf(t) / 2 */
    __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    __m512 small = _mm512_mask_sub_ps(_mm512_add_ps(half, e), neg, half, e);

    __m512 tc = _mm512_min_ps(t, _mm512_set1_ps(ACT_ERFC_TMAX));
    __m512 z = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(tc, half, _mm512_set1_ps(1.0f)));
    __m512 r = _mm512_fmadd_ps(_mm512_set1_ps(ACT_ERFC_R8), z, _mm512_set1_ps(ACT_ERFC_R7));
    r = _mm512_fmadd_ps(r, z, _mm512_set1_ps(ACT_ERFC_R6));
    r = _mm512_fmadd_ps(r, z, _mm512_set1_ps(ACT_ERFC_R5));
    r = _mm512_fmadd_ps(r, z, _mm512_set1_ps(ACT_ERFC_R4));
    r = _mm512_fmadd_ps(r, z, _mm512_set1_ps(ACT_ERFC_R3));
    r = _mm512_fmadd_ps(r, z, _mm512_set1_ps(ACT_ERFC_R2));
    r = _mm512_fmadd_ps(r, z, _mm512_set1_ps(ACT_ERFC_R1));
    r = _mm512_fmadd_ps(r, z, _mm512_set1_ps(ACT_ERFC_R0));
    /* erfc(t) / 2, with the unclamped t so it reaches 0 for huge |x|. */
    __m512 et2 = act512_exp(_mm512_sub_ps(_mm512_setzero_ps(), t2));
    __m512 c = _mm512_mul_ps(_mm512_mul_ps(et2, _mm512_fnmadd_ps(r, t2lo, r)), half);
    __m512 large = _mm512_mask_mov_ps(_mm512_sub_ps(_mm512_set1_ps(1.0f), c), neg, c);

    __mmask16 is_small = _mm512_cmp_ps_mask(t, _mm512_set1_ps(ACT_ERF_SPLIT), _CMP_LT_OQ);
    return _mm512_mask_mov_ps(large, is_small, small);
}

/* x sigmoid(2u) with -2u = x (C0 + C1 x^2) carried as a float pair: near
 * x = -4 the argument is ~20, so its own rounding would cost ~20 ulp. */
static inline __m512 act512_gelu_tanh(__m512 x)
{
    const __m512 c0 = _mm512_set1_ps(ACT_GT_C0), c1 = _mm512_set1_ps(ACT_GT_C1);
    __m512 x2 = _mm512_mul_ps(x, x), x2lo = _mm512_fmsub_ps(x, x, x2);
    __m512 q = _mm512_mul_ps(c1, x2), qlo = _mm512_fmsub_ps(c1, x2, q);
    __m512 p = _mm512_add_ps(c0, q), bb = _mm512_sub_ps(p, c0);
    __m512 plo = _mm512_add_ps(_mm512_sub_ps(c0, _mm512_sub_ps(p, bb)), _mm512_sub_ps(q, bb));
    plo = _mm512_add_ps(plo, _mm512_fmadd_ps(c1, x2lo, qlo));
    __m512 y = _mm512_mul_ps(x, p);
    __m512 ylo = _mm512_fmadd_ps(x, plo, _mm512_fmsub_ps(x, p, y));
    __m512 e = act512_exp(y);
    /* exp(y + ylo) = e (1 + ylo); a NaN ylo (Inf - Inf) only arises where e
     * is 0 or Inf, and then e alone decides. */
    __m512 den = _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(e, ylo, e));
    __m512 plain = _mm512_add_ps(_mm512_set1_ps(1.0f), e);
    __mmask16 bad = _mm512_cmp_ps_mask(den, den, _CMP_UNORD_Q);
    return _mm512_div_ps(x, _mm512_mask_mov_ps(den, bad, plain));
}

static inline __m512 act512_apply(fmlp_act act, __m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    switch (act) {
    case FMLP_ACT_GELU: return _mm512_mul_ps(x, act512_phi(x));
    case FMLP_ACT_GELU_TANH: return act512_gelu_tanh(x);
    case FMLP_ACT_SILU:
        return _mm512_div_ps(x, _mm512_add_ps(one, act512_exp(_mm512_sub_ps(_mm512_setzero_ps(), x))));
    case FMLP_ACT_RELU: return _mm512_max_ps(_mm512_setzero_ps(), x); /* NaN stays NaN */
    default: return x;
    }
}

#endif
