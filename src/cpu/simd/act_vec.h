/* Why: the vector activations, written once for every vector width. GEMM
 * epilogues and pointwise passes evaluate them a register at a time; libm
 * would cost a call per element. act_avx2.h and act_avx512.h say what the
 * width is: its type `actv`, its mask type `actv_mask`, ACTV_PS(op) naming
 * its _mm<bits>_<op>_ps intrinsics, and the few primitives whose
 * instructions differ (abs, compares, selects, rounding, scaling by 2^n);
 * then they include this file, so both widths run the same formulas with
 * the same constants (act_coef.h explains them, their accuracy and the
 * special values) and a new activation is written here alone. Include only
 * through those two headers, one of them per translation unit. */
#ifndef FMLP_CPU_SIMD_ACT_VEC_H
#define FMLP_CPU_SIMD_ACT_VEC_H

#include "cpu/simd/act_coef.h"
#include "fmlp.h"

static inline actv actv_set1(float c) { return ACTV_PS(set1)(c); }
static inline actv actv_zero(void) { return ACTV_PS(setzero)(); }
static inline actv actv_add(actv a, actv b) { return ACTV_PS(add)(a, b); }
static inline actv actv_sub(actv a, actv b) { return ACTV_PS(sub)(a, b); }
static inline actv actv_mul(actv a, actv b) { return ACTV_PS(mul)(a, b); }
static inline actv actv_div(actv a, actv b) { return ACTV_PS(div)(a, b); }
static inline actv actv_fmadd(actv a, actv b, actv c) { return ACTV_PS(fmadd)(a, b, c); }
static inline actv actv_fmsub(actv a, actv b, actv c) { return ACTV_PS(fmsub)(a, b, c); }
static inline actv actv_fnmadd(actv a, actv b, actv c) { return ACTV_PS(fnmadd)(a, b, c); }
/* min/max return their second operand for NaN. */
static inline actv actv_min(actv a, actv b) { return ACTV_PS(min)(a, b); }
static inline actv actv_max(actv a, actv b) { return ACTV_PS(max)(a, b); }

/* exp(x) = 2^n exp(r), n = round(x / ln 2), |r| <= ln2 / 2. */
static inline actv actv_exp(actv x)
{
    /* The clamp keeps NaN (min/max's second operand). */
    x = actv_max(actv_set1(ACT_EXP_LO), actv_min(actv_set1(ACT_EXP_HI), x));
    actv n = actv_round(actv_mul(x, actv_set1(ACT_LOG2E)));
    actv r = actv_fnmadd(n, actv_set1(ACT_LN2_HI), x);
    r = actv_fnmadd(n, actv_set1(ACT_LN2_LO), r);
    actv p = actv_fmadd(actv_set1(ACT_EXP_P4), r, actv_set1(ACT_EXP_P3));
    p = actv_fmadd(p, r, actv_set1(ACT_EXP_P2));
    p = actv_fmadd(p, r, actv_set1(ACT_EXP_P1));
    p = actv_fmadd(p, r, actv_set1(ACT_EXP_P0));
    actv e = actv_add(actv_fmadd(actv_mul(r, r), p, r), actv_set1(1.0f));
    return actv_scale2(e, n);
}

/* Phi(x), the standard normal CDF. */
static inline actv actv_phi(actv x)
{
    const actv half = actv_set1(0.5f), one = actv_set1(1.0f);
    actv t = actv_mul(actv_abs(x), actv_set1(ACT_SQRT1_2));
    /* t^2 = x^2 / 2 as a sum of two floats, so exp(-t^2) does not inherit
     * the rounding of t (which would cost ~100 ulp in the far tail). */
    actv x2 = actv_mul(x, x);
    actv t2 = actv_mul(x2, half);
    /* Its low part from |x| clamped where exp(-t^2) is already 0, so an
     * infinite x does not make it Inf - Inf. */
    actv xc = actv_min(actv_abs(x), actv_set1(16.0f));
    actv t2lo = actv_mul(actv_fmsub(xc, xc, actv_mul(xc, xc)), half);
    actv e = actv_fmadd(actv_set1(ACT_ERF_E5), t2, actv_set1(ACT_ERF_E4));
    e = actv_fmadd(e, t2, actv_set1(ACT_ERF_E3));
    e = actv_fmadd(e, t2, actv_set1(ACT_ERF_E2));
    e = actv_fmadd(e, t2, actv_set1(ACT_ERF_E1));
    e = actv_fmadd(e, t2, actv_set1(ACT_ERF_E0));
    e = actv_mul(actv_mul(e, t), half); /* erf(t) / 2 */
    actv_mask neg = actv_lt(x, actv_zero());
    actv small = actv_sub_where(neg, half, e, actv_add(half, e));

    actv tc = actv_min(t, actv_set1(ACT_ERFC_TMAX));
    actv z = actv_div(one, actv_fmadd(tc, half, one));
    actv r = actv_fmadd(actv_set1(ACT_ERFC_R8), z, actv_set1(ACT_ERFC_R7));
    r = actv_fmadd(r, z, actv_set1(ACT_ERFC_R6));
    r = actv_fmadd(r, z, actv_set1(ACT_ERFC_R5));
    r = actv_fmadd(r, z, actv_set1(ACT_ERFC_R4));
    r = actv_fmadd(r, z, actv_set1(ACT_ERFC_R3));
    r = actv_fmadd(r, z, actv_set1(ACT_ERFC_R2));
    r = actv_fmadd(r, z, actv_set1(ACT_ERFC_R1));
    r = actv_fmadd(r, z, actv_set1(ACT_ERFC_R0));
    /* erfc(t) / 2, with the unclamped t so it reaches 0 for huge |x|. */
    actv et2 = actv_exp(actv_sub(actv_zero(), t2));
    actv c = actv_mul(actv_mul(et2, actv_fnmadd(r, t2lo, r)), half);
    actv large = actv_select(neg, c, actv_sub(one, c));

    actv_mask is_small = actv_lt(t, actv_set1(ACT_ERF_SPLIT));
    return actv_select(is_small, small, large);
}

/* x sigmoid(2u) with -2u = x (C0 + C1 x^2) carried as a float pair: near
 * x = -4 the argument is ~20, so its own rounding would cost ~20 ulp. */
static inline actv actv_gelu_tanh(actv x)
{
    const actv c0 = actv_set1(ACT_GT_C0), c1 = actv_set1(ACT_GT_C1), one = actv_set1(1.0f);
    actv x2 = actv_mul(x, x), x2lo = actv_fmsub(x, x, x2);
    actv q = actv_mul(c1, x2), qlo = actv_fmsub(c1, x2, q);
    actv p = actv_add(c0, q), bb = actv_sub(p, c0);
    actv plo = actv_add(actv_sub(c0, actv_sub(p, bb)), actv_sub(q, bb));
    plo = actv_add(plo, actv_fmadd(c1, x2lo, qlo));
    actv y = actv_mul(x, p);
    actv ylo = actv_fmadd(x, plo, actv_fmsub(x, p, y));
    actv e = actv_exp(y);
    /* exp(y + ylo) = e (1 + ylo); a NaN ylo (Inf - Inf) only arises where e
     * is 0 or Inf, and then e alone decides. */
    actv den = actv_add(one, actv_fmadd(e, ylo, e));
    actv plain = actv_add(one, e);
    return actv_div(x, actv_select(actv_isnan(den), plain, den));
}

static inline actv actv_apply(fmlp_act act, actv x)
{
    switch (act) {
    case FMLP_ACT_GELU: return actv_mul(x, actv_phi(x));
    case FMLP_ACT_GELU_TANH: return actv_gelu_tanh(x);
    case FMLP_ACT_SILU: return actv_div(x, actv_add(actv_set1(1.0f), actv_exp(actv_sub(actv_zero(), x))));
    case FMLP_ACT_RELU: return actv_max(actv_zero(), x); /* max returns its second operand for NaN */
    case FMLP_ACT_RELU2: {
        actv r = actv_max(actv_zero(), x);
        return actv_mul(r, r); /* one rounding, as the scalar path's */
    }
    default: return x;
    }
}

#endif
