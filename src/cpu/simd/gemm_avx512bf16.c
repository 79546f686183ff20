/* Why: bf16 GEMM on vdpbf16ps, which multiplies bf16 pairs and accumulates
 * in f32 at twice the FMA rate of widened f32. Weights are packed as k-pairs
 * (K2N, gemm_internal.h); each A pair is broadcast as one 32-bit word. A tile
 * is up to GEMM_MR_AVX512BF16 rows by one 32-column panel (24 zmm
 * accumulators) or, for 1-3 rows, four panels; an odd k ends with a
 * single element paired with zero, matching the zero the packing holds. */
#include <immintrin.h>
#include <string.h>

#include "cpu/gemm_internal.h"

#define MR GEMM_MR_AVX512BF16
#define NR GEMM_NR_AVX512
#define INLINE static inline __attribute__((always_inline))

INLINE __m512bh pair_at(const uint16_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return (__m512bh)_mm512_set1_epi32((int)v);
}

INLINE void tile(int rows, const uint16_t *A, int64_t lda, const uint16_t *W, int64_t k, float *acc)
{
    __m512 c0[MR], c1[MR];
    for (int r = 0; r < rows; r++) c0[r] = c1[r] = _mm512_setzero_ps();
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

/* Few rows (small batches) leave too few accumulators to hide the dot
 * product's latency; these tiles take GEMM_WIDE panels at once instead.
 * Each panel's sums go to acc + panel * rows * NR. */
INLINE void tile_wide(int rows, const uint16_t *A, int64_t lda, const uint16_t *W, int64_t pstride, int64_t k,
                      float *acc)
{
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

static void wide_1(const uint16_t *A, int64_t lda, const uint16_t *W, int64_t ps, int64_t k, float *acc)
{
    tile_wide(1, A, lda, W, ps, k, acc);
}
static void wide_2(const uint16_t *A, int64_t lda, const uint16_t *W, int64_t ps, int64_t k, float *acc)
{
    tile_wide(2, A, lda, W, ps, k, acc);
}
static void wide_3(const uint16_t *A, int64_t lda, const uint16_t *W, int64_t ps, int64_t k, float *acc)
{
    tile_wide(3, A, lda, W, ps, k, acc);
}
typedef void (*wide_fn)(const uint16_t *A, int64_t lda, const uint16_t *W, int64_t ps, int64_t k, float *acc);
_Static_assert(GEMM_WIDE_ROWS == 3, "the table below lists one wide tile per row count");
static const wide_fn k_wides[GEMM_WIDE_ROWS + 1] = {NULL, wide_1, wide_2, wide_3};

typedef void (*tile_fn)(const uint16_t *A, int64_t lda, const uint16_t *W, int64_t k, float *acc);

#define TILE_FN(R)                                                                                               \
    static void tile_##R(const uint16_t *A, int64_t lda, const uint16_t *W, int64_t k, float *acc)            \
    {                                                                                                            \
        tile(R, A, lda, W, k, acc);                                                                              \
    }
TILE_FN(1)
TILE_FN(2)
TILE_FN(3)
TILE_FN(4)
TILE_FN(5)
TILE_FN(6)
TILE_FN(7)
TILE_FN(8)
TILE_FN(9)
TILE_FN(10)
TILE_FN(11)
TILE_FN(12)

_Static_assert(MR == 12, "the table below lists one tile per row count");
static const tile_fn k_tiles[MR + 1] = {NULL, tile_1, tile_2, tile_3, tile_4, tile_5, tile_6, tile_7, tile_8,
                                        tile_9, tile_10, tile_11, tile_12};

void gemm_block_avx512bf16(const gemm_call *g, int64_t m0, int64_t m1, int64_t p0, int64_t p1)
{
    const cpu_packed *p = g->p;
    float acc[MR * NR] __attribute__((aligned(64)));
    float wacc[GEMM_WIDE_ROWS * GEMM_WIDE * NR] __attribute__((aligned(64)));
    const uint16_t *A = (const uint16_t *)g->A;
    if (m1 - m0 <= GEMM_WIDE_ROWS) {
        int rows = (int)(m1 - m0);
        int64_t panel = p0;
        for (; p1 - panel >= GEMM_WIDE; panel += GEMM_WIDE) {
            k_wides[rows](A + m0 * g->lda, g->lda, gemm_panel(p, panel), p->panel_elems, p->k, wacc);
            for (int q = 0; q < GEMM_WIDE; q++) gemm_epilogue_avx512(g, wacc + q * rows * NR, rows, m0, panel + q);
        }
        for (; panel < p1; panel++) {
            k_tiles[rows](A + m0 * g->lda, g->lda, gemm_panel(p, panel), p->k, acc);
            gemm_epilogue_avx512(g, acc, rows, m0, panel);
        }
        return;
    }
    /* Row tiles outside: a tile's A rows stay in L1 while the group's
     * panels stream past from L2. Tiles share the rows evenly (16 rows are
     * two of 8, not 12 and 4), so none runs short of accumulators. */
    int64_t ntiles = (m1 - m0 + MR - 1) / MR;
    for (int t = 0; t < ntiles; t++) {
        int64_t lo, hi;
        cpu_split(m1 - m0, (int)ntiles, t, &lo, &hi);
        for (int64_t panel = p0; panel < p1; panel++) {
            k_tiles[hi - lo](A + (m0 + lo) * g->lda, g->lda, gemm_panel(p, panel), p->k, acc);
            gemm_epilogue_avx512(g, acc, (int)(hi - lo), m0 + lo, panel);
        }
    }
}
