/* Why: bf16 GEMM on vdpbf16ps, which multiplies bf16 pairs and accumulates
 * in f32 at twice the FMA rate of widened f32. Weights are packed as k-pairs
 * (K2N, gemm_internal.h); each A pair is broadcast as one 32-bit word. A tile
 * is up to GEMM_MR_AVX512BF16 rows by one 32-column panel (24 zmm
 * accumulators); a wide tile, for 1-3 rows, takes GEMM_WIDE panels. An odd
 * k ends with a single element paired with zero, matching the zero the
 * packing holds. */
#include <immintrin.h>
#include <string.h>

#include "cpu/gemm_internal.h"
#include "cpu/simd/gemm_tiles.h"

#define MR GEMM_MR_AVX512BF16
#define NR GEMM_NR_AVX512
#define INLINE static inline __attribute__((always_inline))

INLINE __m512bh pair_at(const uint16_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return (__m512bh)_mm512_set1_epi32((int)v);
}

/* `add` starts the sums from acc (a k chunk after the first), else from zero. */
INLINE void tile_from(bool add, int rows, const void *a, int64_t lda, const void *w, int64_t k, float *acc)
{
    const uint16_t *A = a, *W = w;
    __m512 c0[MR], c1[MR];
    for (int r = 0; r < rows; r++) {
        c0[r] = add ? _mm512_load_ps(acc + r * NR) : _mm512_setzero_ps();
        c1[r] = add ? _mm512_load_ps(acc + r * NR + 16) : _mm512_setzero_ps();
    }
    int64_t pairs = k / 2;
    for (int64_t kp = 0; kp < pairs; kp++) {
        __m512bh w0 = (__m512bh)_mm512_load_si512(W + kp * 2 * NR);
        __m512bh w1 = (__m512bh)_mm512_load_si512(W + kp * 2 * NR + 32);
        for (int r = 0; r < rows; r++) {
            __m512bh a = pair_at(A + r * lda + 2 * kp);
            c0[r] = _mm512_dpbf16_ps(c0[r], a, w0);
            c1[r] = _mm512_dpbf16_ps(c1[r], a, w1);
        }
    }
    if (k & 1) {
        __m512bh w0 = (__m512bh)_mm512_load_si512(W + pairs * 2 * NR);
        __m512bh w1 = (__m512bh)_mm512_load_si512(W + pairs * 2 * NR + 32);
        for (int r = 0; r < rows; r++) {
            __m512bh a = (__m512bh)_mm512_set1_epi32((int)A[r * lda + k - 1]);
            c0[r] = _mm512_dpbf16_ps(c0[r], a, w0);
            c1[r] = _mm512_dpbf16_ps(c1[r], a, w1);
        }
    }
    for (int r = 0; r < rows; r++) {
        _mm512_store_ps(acc + r * NR, c0[r]);
        _mm512_store_ps(acc + r * NR + 16, c1[r]);
    }
}

INLINE void tile(int rows, const void *a, int64_t lda, const void *w, int64_t ps, int64_t k, float *acc)
{
    (void)ps;
    tile_from(false, rows, a, lda, w, k, acc);
}

INLINE void tile_add(int rows, const void *a, int64_t lda, const void *w, int64_t ps, int64_t k, float *acc)
{
    (void)ps;
    tile_from(true, rows, a, lda, w, k, acc);
}

/* Few rows (small batches) leave too few accumulators to hide the dot
 * product's latency; these tiles take GEMM_WIDE panels at once instead. */
INLINE void wide(int rows, const void *a, int64_t lda, const void *w, int64_t pstride, int64_t k, float *acc)
{
    const uint16_t *A = a, *W = w;
    __m512 c[GEMM_WIDE_ROWS][2 * GEMM_WIDE];
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < 2 * GEMM_WIDE; v++) c[r][v] = _mm512_setzero_ps();
    int64_t pairs = k / 2;
    for (int64_t kp = 0; kp <= pairs; kp++) {
        __m512bh a[GEMM_WIDE_ROWS];
        if (kp == pairs && !(k & 1)) break;
        for (int r = 0; r < rows; r++)
            a[r] = kp < pairs ? pair_at(A + r * lda + 2 * kp) : (__m512bh)_mm512_set1_epi32((int)A[r * lda + k - 1]);
        for (int v = 0; v < 2 * GEMM_WIDE; v++) {
            __m512bh w = (__m512bh)_mm512_load_si512(W + (v / 2) * pstride + kp * 2 * NR + (v % 2) * 32);
            for (int r = 0; r < rows; r++) c[r][v] = _mm512_dpbf16_ps(c[r][v], a[r], w);
        }
    }
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < 2 * GEMM_WIDE; v++)
            _mm512_store_ps(acc + ((v / 2) * rows + r) * NR + (v % 2) * 16, c[r][v]);
}

GEMM_UKERNEL(gemm_tile_avx512bf16, tile, GEMM_MR_AVX512BF16)
GEMM_UKERNEL(gemm_tile_add_avx512bf16, tile_add, GEMM_MR_AVX512BF16)
GEMM_UKERNEL(gemm_wide_avx512bf16, wide, GEMM_WIDE_ROWS)
