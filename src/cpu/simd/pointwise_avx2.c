/* Why: the AVX2 twin of pointwise_avx512.c, eight lanes at a time; partial
 * vectors at row ends go through masked moves (f32) or a small buffer
 * (bf16). */
#include "cpu/pointwise_internal.h"
#include "cpu/simd/act_avx2.h"
#include "cpu/simd/bf16_avx2.h"

static inline __m256 load8(fmlp_dtype dt, const void *p, int64_t i, int64_t count)
{
    if (dt == FMLP_F32) return _mm256_maskload_ps((const float *)p + i, mask8_first(count));
    return bf16x8_load((const uint16_t *)p + i, count);
}

static inline void store8(fmlp_dtype dt, void *p, int64_t i, __m256 v, int64_t count)
{
    if (dt == FMLP_F32)
        _mm256_maskstore_ps((float *)p + i, mask8_first(count), v);
    else
        bf16x8_store((uint16_t *)p + i, v, count);
}

/* Inlined with `act` a constant, once per activation (pw_row_* below), so
 * no vector pays for a switch and each formula's constants stay in
 * registers across the row. */
static inline __attribute__((always_inline)) void row_loop(fmlp_dtype dt, cpu_pw_kind kind, fmlp_act act, const void *a,
                                                           const void *b, void *out, int64_t n)
{
    for (int64_t i = 0; i < n; i += 8) {
        int64_t count = n - i;
        __m256 x = load8(dt, a, i, count);
        __m256 y = kind == CPU_PW_MUL ? x : act256_apply(act, x);
        if (kind != CPU_PW_ACT) y = _mm256_mul_ps(y, load8(dt, b, i, count));
        store8(dt, out, i, y, count);
    }
}

void pw_row_avx2(fmlp_dtype dt, cpu_pw_kind kind, fmlp_act act, const void *a, const void *b, void *out, int64_t n)
{
#define ROW_LOOP_CASE_(e, ...) \
    case e: row_loop(dt, kind, e, a, b, out, n); break;
    switch (act) { FMLP_ACT_TABLE(ROW_LOOP_CASE_) }
#undef ROW_LOOP_CASE_
}
