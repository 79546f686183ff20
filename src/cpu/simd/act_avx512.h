/* Why: the AVX-512 width of the vector activations (act_vec.h): sixteen
 * lanes, masks in k registers, 2^n by vscalefps. Serves every AVX-512-class
 * path (avx512, avx512bf16, amx). Include only from files compiled with
 * AVX-512 flags. */
#ifndef FMLP_CPU_SIMD_ACT_AVX512_H
#define FMLP_CPU_SIMD_ACT_AVX512_H

#include <immintrin.h>

#include "fmlp.h"

typedef __m512 actv;
typedef __mmask16 actv_mask;
#define ACTV_PS(op) _mm512_##op##_ps

static inline actv actv_abs(actv a) { return _mm512_abs_ps(a); }
static inline actv_mask actv_lt(actv a, actv b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline actv_mask actv_isnan(actv a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
/* if_set in the lanes of m, if_clear elsewhere; a - b in the lanes of m */
static inline actv actv_select(actv_mask m, actv if_set, actv if_clear) { return _mm512_mask_mov_ps(if_clear, m, if_set); }
static inline actv actv_sub_where(actv_mask m, actv a, actv b, actv src) { return _mm512_mask_sub_ps(src, m, a, b); }
static inline actv actv_round(actv a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
/* e 2^n, rounded once into the denormal range, overflowing to Inf. */
static inline actv actv_scale2(actv e, actv n) { return _mm512_scalef_ps(e, n); }

#include "cpu/simd/act_vec.h"

static inline __m512 act512_apply(fmlp_act act, __m512 x) { return actv_apply(act, x); }

#endif
