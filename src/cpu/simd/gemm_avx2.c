/* Why: the AVX2 + FMA microkernel for CPUs without AVX-512: f32, and bf16
 * widened to f32 in registers. A tile is up to GEMM_MR_AVX2 rows by one
 * 16-column panel: 12 ymm accumulators, A broadcast from the caller's rows.
 * Its epilogue adds bias, applies the activation or GLU and rounds once. */
#include <immintrin.h>

#include "cpu/gemm_internal.h"
#include "cpu/simd/act_avx2.h"
#include "cpu/simd/bf16_avx2.h"
#include "cpu/simd/gemm_tiles.h"

#define MR GEMM_MR_AVX2
#define NR GEMM_NR_AVX2
#define INLINE static inline __attribute__((always_inline))

INLINE __m256 widen8(const uint16_t *p) { return bf16x8_widen(_mm_load_si128((const __m128i *)p)); }

INLINE __m256 bcast_bf16(const uint16_t *p)
{
    return _mm256_castsi256_ps(_mm256_set1_epi32((int)((uint32_t)*p << 16)));
}

/* The same from one 32-bit broadcast of the element and the one after it
 * (an unaligned load, folded into vpbroadcastd), shifted so that the
 * element fills the high half: two vector instructions fewer than the trip
 * through a general register. It reads 2 bytes past the element, so a row's
 * last k takes bcast_bf16. */
INLINE __m256 bcast_bf16_pair(const uint16_t *p)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_broadcastd_epi32(_mm_loadu_si32(p)), 16));
}

/* Weights and A in the packing's dtype; `bf16` is a constant after
 * inlining, so each instance loads one way. */
INLINE __m256 load_w(bool bf16, const void *W, int64_t i)
{
    return bf16 ? widen8((const uint16_t *)W + i) : _mm256_load_ps((const float *)W + i);
}

INLINE __m256 bcast_a(bool bf16, const void *A, int64_t i)
{
    return bf16 ? bcast_bf16((const uint16_t *)A + i) : _mm256_broadcast_ss((const float *)A + i);
}

/* bcast_a for a bf16 k that is not its row's last */
INLINE __m256 bcast_a_inner(bool bf16, const void *A, int64_t i)
{
    (void)bf16;
    return bcast_bf16_pair((const uint16_t *)A + i);
}

/* Accumulators are named variables, not arrays: with arrays GCC keeps a
 * memory copy of every ymm accumulator up to date inside the k loop. `add`
 * starts them from acc (a k chunk after the first), else from zero. */
#define ACC_DECL(r)                                                                                              \
    __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = _mm256_setzero_ps();                                         \
    if (add && rows > r) {                                                                                       \
        c##r##0 = _mm256_load_ps(acc + r * NR);                                                                  \
        c##r##1 = _mm256_load_ps(acc + r * NR + 8);                                                              \
    }
#define ACC_FMA_BY(r, BCAST)                                                                                     \
    if (rows > r) {                                                                                              \
        __m256 a = BCAST(bf16, A, r * lda + kk);                                                                 \
        c##r##0 = _mm256_fmadd_ps(a, w0, c##r##0);                                                               \
        c##r##1 = _mm256_fmadd_ps(a, w1, c##r##1);                                                               \
    }
#define ACC_FMA(r) ACC_FMA_BY(r, bcast_a)
#define ACC_FMA_INNER(r) ACC_FMA_BY(r, bcast_a_inner)
#define ACC_STORE(r)                                                                                             \
    if (rows > r) {                                                                                              \
        _mm256_store_ps(acc + r * NR, c##r##0);                                                                  \
        _mm256_store_ps(acc + r * NR + 8, c##r##1);                                                              \
    }
#define ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)

_Static_assert(MR == 6, "the tile below spells out six rows");

INLINE void tile_from(bool bf16, bool add, int rows, const void *A, int64_t lda, const void *W, int64_t k, float *acc)
{
    ROWS6(ACC_DECL)
    int64_t kk = 0;
    if (bf16)
        for (; kk + 1 < k; kk++) {
            __m256 w0 = load_w(bf16, W, kk * NR), w1 = load_w(bf16, W, kk * NR + 8);
            ROWS6(ACC_FMA_INNER)
        }
    for (; kk < k; kk++) {
        __m256 w0 = load_w(bf16, W, kk * NR), w1 = load_w(bf16, W, kk * NR + 8);
        ROWS6(ACC_FMA)
    }
    ROWS6(ACC_STORE)
}

GEMM_TILE_AND_ADD(tile_from)

GEMM_BY_DTYPE(tile)
GEMM_BY_DTYPE(tile_add)
GEMM_UKERNEL(gemm_tile_avx2_f32, tile_f32, GEMM_MR_AVX2)
GEMM_UKERNEL(gemm_tile_avx2_bf16, tile_bf16, GEMM_MR_AVX2)
GEMM_UKERNEL(gemm_tile_add_avx2_f32, tile_add_f32, GEMM_MR_AVX2)
GEMM_UKERNEL(gemm_tile_add_avx2_bf16, tile_add_bf16, GEMM_MR_AVX2)

static inline void store8(const gemm_call *g, int64_t row, int64_t col, __m256 v, int64_t count)
{
    if (g->p->dtype == FMLP_F32)
        _mm256_maskstore_ps((float *)g->C + row * g->ldc + col, mask8_first(count), v);
    else
        bf16x8_store((uint16_t *)g->C + row * g->ldc + col, v, count);
}

void gemm_epilogue_avx2(const gemm_call *g, const float *acc, int rows, int64_t i0, int64_t panel)
{
    const cpu_packed *p = g->p;
    int outs = gemm_panel_outs(p);
    int64_t col0 = panel * outs;
    int64_t valid = p->n - col0 < outs ? p->n - col0 : outs;
    __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps();
    if (p->bias) {
        b0 = _mm256_loadu_ps(p->bias + panel * NR);
        b1 = _mm256_loadu_ps(p->bias + panel * NR + 8);
    }
    for (int r = 0; r < rows; r++) {
        __m256 v0 = _mm256_add_ps(_mm256_load_ps(acc + r * NR), b0);
        __m256 v1 = _mm256_add_ps(_mm256_load_ps(acc + r * NR + 8), b1);
        if (p->glu) {
            store8(g, i0 + r, col0, _mm256_mul_ps(act256_apply(g->act, v0), v1), valid);
            continue;
        }
        store8(g, i0 + r, col0, act256_apply(g->act, v0), valid);
        if (valid > 8) store8(g, i0 + r, col0 + 8, act256_apply(g->act, v1), valid - 8);
    }
}
