/* Why: every AVX-512-class GEMM path (f32, widened bf16, vdpbf16ps, AMX)
 * ends a tile the same way: bias in f32, activation or GLU, one rounding to
 * the storage dtype, masked stores so columns past n are never written. */
#include "cpu/gemm_internal.h"
#include "cpu/simd/act_avx512.h"
#include "cpu/simd/bf16_avx512.h"

static inline void store16(const gemm_call *g, int64_t row, int64_t col, __m512 v, __mmask16 mask)
{
    if (g->p->dtype == FMLP_F32)
        _mm512_mask_storeu_ps((float *)g->C + row * g->ldc + col, mask, v);
    else
        bf16x16_store((uint16_t *)g->C + row * g->ldc + col, v, mask);
}

void gemm_epilogue_avx512(const gemm_call *g, const float *acc, int rows, int64_t i0, int64_t panel)
{
    const cpu_packed *p = g->p;
    int outs = gemm_panel_outs(p);
    int64_t col0 = panel * outs;
    int64_t valid = p->n - col0 < outs ? p->n - col0 : outs;
    __m512 b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
    if (p->bias) {
        b0 = _mm512_loadu_ps(p->bias + panel * GEMM_NR_AVX512);
        b1 = _mm512_loadu_ps(p->bias + panel * GEMM_NR_AVX512 + 16);
    }
    __mmask16 m0 = mask16_first(valid), m1 = valid > 16 ? mask16_first(valid - 16) : 0;
    for (int r = 0; r < rows; r++) {
        const float *a = acc + r * GEMM_NR_AVX512;
        __m512 v0 = _mm512_add_ps(_mm512_loadu_ps(a), b0);
        __m512 v1 = _mm512_add_ps(_mm512_loadu_ps(a + 16), b1);
        if (p->glu) {
            store16(g, i0 + r, col0, _mm512_mul_ps(act512_apply(g->act, v0), v1), m0);
            continue;
        }
        store16(g, i0 + r, col0, act512_apply(g->act, v0), m0);
        if (m1) store16(g, i0 + r, col0 + 16, act512_apply(g->act, v1), m1);
    }
}
