/* Why: pointwise passes sixteen lanes at a time, so eager/compiled modes'
 * activation and product passes run at memory speed. Same arithmetic as the
 * scalar row (widen, f32 math, one rounding); tails use masked moves. */
#include "cpu/pointwise_internal.h"
#include "cpu/simd/act_avx512.h"
#include "cpu/simd/bf16_avx512.h"

static inline __m512 load16(fmlp_dtype dt, const void *p, int64_t i, __mmask16 mask)
{
    if (dt == FMLP_F32) return _mm512_maskz_loadu_ps(mask, (const float *)p + i);
    return bf16x16_load((const uint16_t *)p + i, mask);
}

static inline void store16(fmlp_dtype dt, void *p, int64_t i, __m512 v, __mmask16 mask)
{
    if (dt == FMLP_F32)
        _mm512_mask_storeu_ps((float *)p + i, mask, v);
    else
        bf16x16_store((uint16_t *)p + i, v, mask);
}

/* Inlined with `act` a constant, once per activation (pw_row_* below), so
 * no vector pays for a switch and each formula's constants stay in
 * registers across the row. */
static inline __attribute__((always_inline)) void row_loop(fmlp_dtype dt, cpu_pw_kind kind, fmlp_act act, const void *a,
                                                           const void *b, void *out, int64_t n)
{
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 mask = mask16_first(n - i);
        __m512 x = load16(dt, a, i, mask);
        __m512 y = kind == CPU_PW_MUL ? x : act512_apply(act, x);
        if (kind != CPU_PW_ACT) y = _mm512_mul_ps(y, load16(dt, b, i, mask));
        store16(dt, out, i, y, mask);
    }
}

void pw_row_avx512(fmlp_dtype dt, cpu_pw_kind kind, fmlp_act act, const void *a, const void *b, void *out, int64_t n)
{
#define ROW_LOOP_CASE_(e, ...) \
    case e: row_loop(dt, kind, e, a, b, out, n); break;
    switch (act) { FMLP_ACT_TABLE(ROW_LOOP_CASE_) }
#undef ROW_LOOP_CASE_
}
