/* Why: the AVX-512 microkernels for f32, and for bf16 on CPUs without
 * vdpbf16ps (weights and A widened to f32 in registers, one FMA per k).
 * A tile is up to GEMM_MR_AVX512 rows by one 32-column panel (16 zmm
 * accumulators); a wide tile, for 1-3 rows, takes GEMM_WIDE panels. A
 * elements are broadcast straight from the caller's rows. */
#include <immintrin.h>

#include "cpu/gemm_internal.h"
#include "cpu/simd/gemm_tiles.h"

#define MR GEMM_MR_AVX512
#define NR GEMM_NR_AVX512
#define INLINE static inline __attribute__((always_inline))

INLINE __m512 widen16(const uint16_t *p)
{
    __m512i w = _mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

INLINE __m512 bcast_bf16(const uint16_t *p)
{
    return _mm512_castsi512_ps(_mm512_set1_epi32((int)((uint32_t)*p << 16)));
}

/* Weights and A in the packing's dtype; `bf16` is a constant after
 * inlining, so each instance loads one way. */
INLINE __m512 load_w(bool bf16, const void *W, int64_t i)
{
    return bf16 ? widen16((const uint16_t *)W + i) : _mm512_load_ps((const float *)W + i);
}

INLINE __m512 bcast_a(bool bf16, const void *A, int64_t i)
{
    return bf16 ? bcast_bf16((const uint16_t *)A + i) : _mm512_set1_ps(((const float *)A)[i]);
}

/* rows is a constant after inlining, so c0/c1 live in registers. `add`
 * starts them from acc (a k chunk after the first), else from zero. */
INLINE void tile_from(bool bf16, bool add, int rows, const void *A, int64_t lda, const void *W, int64_t k,
                      float *acc)
{
    __m512 c0[MR], c1[MR];
    for (int r = 0; r < rows; r++) {
        c0[r] = add ? _mm512_load_ps(acc + r * NR) : _mm512_setzero_ps();
        c1[r] = add ? _mm512_load_ps(acc + r * NR + 16) : _mm512_setzero_ps();
    }
    for (int64_t kk = 0; kk < k; kk++) {
        __m512 w0 = load_w(bf16, W, kk * NR), w1 = load_w(bf16, W, kk * NR + 16);
        for (int r = 0; r < rows; r++) {
            __m512 a = bcast_a(bf16, A, r * lda + kk);
            c0[r] = _mm512_fmadd_ps(a, w0, c0[r]);
            c1[r] = _mm512_fmadd_ps(a, w1, c1[r]);
        }
    }
    for (int r = 0; r < rows; r++) {
        _mm512_store_ps(acc + r * NR, c0[r]);
        _mm512_store_ps(acc + r * NR + 16, c1[r]);
    }
}

GEMM_TILE_AND_ADD(tile_from)

/* Few rows (small batches) leave too few accumulators to hide the FMA
 * latency; these tiles take GEMM_WIDE panels at once instead. */
INLINE void wide(bool bf16, int rows, const void *A, int64_t lda, const void *W, int64_t pstride, int64_t k,
                 float *acc)
{
    __m512 c[GEMM_WIDE_ROWS][2 * GEMM_WIDE];
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < 2 * GEMM_WIDE; v++) c[r][v] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < k; kk++) {
        __m512 a[GEMM_WIDE_ROWS];
        for (int r = 0; r < rows; r++) a[r] = bcast_a(bf16, A, r * lda + kk);
        for (int v = 0; v < 2 * GEMM_WIDE; v++) {
            __m512 w = load_w(bf16, W, (v / 2) * pstride + kk * NR + (v % 2) * 16);
            for (int r = 0; r < rows; r++) c[r][v] = _mm512_fmadd_ps(a[r], w, c[r][v]);
        }
    }
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < 2 * GEMM_WIDE; v++)
            _mm512_store_ps(acc + ((v / 2) * rows + r) * NR + (v % 2) * 16, c[r][v]);
}

GEMM_BY_DTYPE(tile)
GEMM_BY_DTYPE(tile_add)
GEMM_BY_DTYPE(wide)
GEMM_UKERNEL(gemm_tile_avx512_f32, tile_f32, GEMM_MR_AVX512)
GEMM_UKERNEL(gemm_tile_avx512_bf16, tile_bf16, GEMM_MR_AVX512)
GEMM_UKERNEL(gemm_tile_add_avx512_f32, tile_add_f32, GEMM_MR_AVX512)
GEMM_UKERNEL(gemm_tile_add_avx512_bf16, tile_add_bf16, GEMM_MR_AVX512)
GEMM_UKERNEL(gemm_wide_avx512_f32, wide_f32, GEMM_WIDE_ROWS)
GEMM_UKERNEL(gemm_wide_avx512_bf16, wide_bf16, GEMM_WIDE_ROWS)
