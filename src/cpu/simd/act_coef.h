/* Why: the vector activations of every ISA share one set of constants, so
 * the AVX2 and AVX-512 paths agree with each other to the last bit of each
 * polynomial. The polynomials were fitted (weighted least squares, iterated
 * towards minimax) to the double-precision functions on the ranges named
 * below; each keeps the f32 relative error of its factor under ~1e-7.
 *
 * Strategy: every activation is written as x * s(x) with a factor s that
 * never cancels catastrophically:
 *   silu       s = 1 / (1 + exp(-x))
 *   gelu_tanh  s = 1 / (1 + exp(-2u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
 *              (identical to 0.5 (1 + tanh(u)), without the cancellation
 *              of 1 + tanh for negative x)
 *   gelu       s = Phi(x) = 0.5 erfc(-x / sqrt(2)); erf by an odd
 *              polynomial for |t| < ACT_ERF_SPLIT, erfc(t) = exp(-t^2) R(t)
 *              above it with R a polynomial in z = 1 / (1 + t / 2). */
#ifndef FMLP_CPU_SIMD_ACT_COEF_H
#define FMLP_CPU_SIMD_ACT_COEF_H

/* exp(r) = 1 + r + r^2 P(r) on |r| <= ln2 / 2. */
#define ACT_EXP_P0 0.5f
#define ACT_EXP_P1 0.166665733f
#define ACT_EXP_P2 0.0416668616f
#define ACT_EXP_P3 0.00836373307f
#define ACT_EXP_P4 0.00139015238f
#define ACT_LOG2E 1.44269504f
/* ln 2 split so that n * ACT_LN2_HI is exact for |n| < 2^15. */
#define ACT_LN2_HI 0.693359375f
#define ACT_LN2_LO -2.12194440e-4f
/* exp's argument is clamped here: below, the result is 0 even as a
 * denormal; above, it is +Inf. NaN passes through the clamp. */
#define ACT_EXP_LO -104.0f
#define ACT_EXP_HI 89.0f

/* erf(t) = t E(t^2) on 0 <= t <= 0.9. */
#define ACT_ERF_SPLIT 0.9f
#define ACT_ERF_E0 1.12837911f
#define ACT_ERF_E1 -0.376125246f
#define ACT_ERF_E2 0.112821408f
#define ACT_ERF_E3 -0.0267789084f
#define ACT_ERF_E4 0.00501196226f
#define ACT_ERF_E5 -0.000609035604f

/* erfc(t) exp(t^2) = R(z), z = 1 / (1 + t/2), on 0.9 <= t <= 10; beyond 10
 * erfc(t) is below f32's range, so t is clamped there before R. */
#define ACT_ERFC_TMAX 10.0f
#define ACT_ERFC_R0 -5.64721859e-06f
#define ACT_ERFC_R1 0.282238841f
#define ACT_ERFC_R2 0.280564249f
#define ACT_ERFC_R3 0.255515128f
#define ACT_ERFC_R4 0.148842886f
#define ACT_ERFC_R5 0.125913069f
#define ACT_ERFC_R6 -0.00279798824f
#define ACT_ERFC_R7 -0.164119959f
#define ACT_ERFC_R8 0.0742100775f

#define ACT_SQRT1_2 0.707106781f
/* -2 sqrt(2/pi) and -2 sqrt(2/pi) 0.044715: gelu_tanh's -2u = x (C0 + C1 x^2). */
#define ACT_GT_C0 -1.59576912f
#define ACT_GT_C1 -0.0713548162f

#endif
