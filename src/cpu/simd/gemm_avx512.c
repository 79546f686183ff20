/* Why: the AVX-512 microkernels for f32, and for bf16 on CPUs without
 * vdpbf16ps (weights and A widened to f32 in registers, one FMA per k).
 * A tile is up to GEMM_MR_AVX512 rows by one 32-column panel (16 zmm
 * accumulators), or for 1-3 rows four panels; A elements are broadcast
 * straight from the caller's rows. */
#include <immintrin.h>

#include "cpu/gemm_internal.h"

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

/* rows is a constant after inlining, so c0/c1 live in registers. */
INLINE void tile_f32(int rows, const float *A, int64_t lda, const float *W, int64_t k, float *acc)
{
    __m512 c0[MR], c1[MR];
    for (int r = 0; r < rows; r++) c0[r] = c1[r] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < k; kk++) {
        __m512 w0 = _mm512_load_ps(W + kk * NR), w1 = _mm512_load_ps(W + kk * NR + 16);
        for (int r = 0; r < rows; r++) {
            __m512 a = _mm512_set1_ps(A[r * lda + kk]);
            c0[r] = _mm512_fmadd_ps(a, w0, c0[r]);
            c1[r] = _mm512_fmadd_ps(a, w1, c1[r]);
        }
    }
    for (int r = 0; r < rows; r++) {
        _mm512_store_ps(acc + r * NR, c0[r]);
        _mm512_store_ps(acc + r * NR + 16, c1[r]);
    }
}

INLINE void tile_bf16(int rows, const uint16_t *A, int64_t lda, const uint16_t *W, int64_t k, float *acc)
{
    __m512 c0[MR], c1[MR];
    for (int r = 0; r < rows; r++) c0[r] = c1[r] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < k; kk++) {
        __m512 w0 = widen16(W + kk * NR), w1 = widen16(W + kk * NR + 16);
        for (int r = 0; r < rows; r++) {
            __m512 a = bcast_bf16(A + r * lda + kk);
            c0[r] = _mm512_fmadd_ps(a, w0, c0[r]);
            c1[r] = _mm512_fmadd_ps(a, w1, c1[r]);
        }
    }
    for (int r = 0; r < rows; r++) {
        _mm512_store_ps(acc + r * NR, c0[r]);
        _mm512_store_ps(acc + r * NR + 16, c1[r]);
    }
}

/* Few rows (small batches) leave too few accumulators to hide the FMA
 * latency; these tiles take GEMM_WIDE panels at once instead. Each panel's
 * sums go to acc + panel * rows * NR. */
INLINE void tile_wide_f32(int rows, const float *A, int64_t lda, const float *W, int64_t pstride, int64_t k,
                          float *acc)
{
    __m512 c[GEMM_WIDE_ROWS][2 * GEMM_WIDE];
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < 2 * GEMM_WIDE; v++) c[r][v] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < k; kk++) {
        __m512 a[GEMM_WIDE_ROWS];
        for (int r = 0; r < rows; r++) a[r] = _mm512_set1_ps(A[r * lda + kk]);
        for (int v = 0; v < 2 * GEMM_WIDE; v++) {
            __m512 w = _mm512_load_ps(W + (v / 2) * pstride + kk * NR + (v % 2) * 16);
            for (int r = 0; r < rows; r++) c[r][v] = _mm512_fmadd_ps(a[r], w, c[r][v]);
        }
    }
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < 2 * GEMM_WIDE; v++)
            _mm512_store_ps(acc + ((v / 2) * rows + r) * NR + (v % 2) * 16, c[r][v]);
}

INLINE void tile_wide_bf16(int rows, const uint16_t *A, int64_t lda, const uint16_t *W, int64_t pstride, int64_t k,
                           float *acc)
{
    __m512 c[GEMM_WIDE_ROWS][2 * GEMM_WIDE];
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < 2 * GEMM_WIDE; v++) c[r][v] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < k; kk++) {
        __m512 a[GEMM_WIDE_ROWS];
        for (int r = 0; r < rows; r++) a[r] = bcast_bf16(A + r * lda + kk);
        for (int v = 0; v < 2 * GEMM_WIDE; v++) {
            __m512 w = widen16(W + (v / 2) * pstride + kk * NR + (v % 2) * 16);
            for (int r = 0; r < rows; r++) c[r][v] = _mm512_fmadd_ps(a[r], w, c[r][v]);
        }
    }
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < 2 * GEMM_WIDE; v++)
            _mm512_store_ps(acc + ((v / 2) * rows + r) * NR + (v % 2) * 16, c[r][v]);
}

typedef void (*wide_fn)(const void *A, int64_t lda, const void *W, int64_t pstride, int64_t k, float *acc);

#define WIDE_FNS(R)                                                                                              \
    static void wide_f32_##R(const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc)    \
    {                                                                                                            \
        tile_wide_f32(R, A, lda, W, ps, k, acc);                                                                 \
    }                                                                                                            \
    static void wide_bf16_##R(const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc)   \
    {                                                                                                            \
        tile_wide_bf16(R, A, lda, W, ps, k, acc);                                                                \
    }
WIDE_FNS(1)
WIDE_FNS(2)
WIDE_FNS(3)

_Static_assert(GEMM_WIDE_ROWS == 3, "the tables below list one wide tile per row count");
static const wide_fn k_wides_f32[GEMM_WIDE_ROWS + 1] = {NULL, wide_f32_1, wide_f32_2, wide_f32_3};
static const wide_fn k_wides_bf16[GEMM_WIDE_ROWS + 1] = {NULL, wide_bf16_1, wide_bf16_2, wide_bf16_3};

typedef void (*tile_fn)(const void *A, int64_t lda, const void *W, int64_t k, float *acc);

#define TILE_FNS(R)                                                                                              \
    static void tile_f32_##R(const void *A, int64_t lda, const void *W, int64_t k, float *acc)                \
    {                                                                                                            \
        tile_f32(R, A, lda, W, k, acc);                                                                          \
    }                                                                                                            \
    static void tile_bf16_##R(const void *A, int64_t lda, const void *W, int64_t k, float *acc)               \
    {                                                                                                            \
        tile_bf16(R, A, lda, W, k, acc);                                                                         \
    }
TILE_FNS(1)
TILE_FNS(2)
TILE_FNS(3)
TILE_FNS(4)
TILE_FNS(5)
TILE_FNS(6)
TILE_FNS(7)
TILE_FNS(8)

_Static_assert(MR == 8, "the tables below list one tile per row count");
static const tile_fn k_tiles_f32[MR + 1] = {NULL, tile_f32_1, tile_f32_2, tile_f32_3, tile_f32_4,
                                            tile_f32_5, tile_f32_6, tile_f32_7, tile_f32_8};
static const tile_fn k_tiles_bf16[MR + 1] = {NULL, tile_bf16_1, tile_bf16_2, tile_bf16_3, tile_bf16_4,
                                             tile_bf16_5, tile_bf16_6, tile_bf16_7, tile_bf16_8};

void gemm_block_avx512(const gemm_call *g, int64_t m0, int64_t m1, int64_t p0, int64_t p1)
{
    const cpu_packed *p = g->p;
    bool f32 = p->dtype == FMLP_F32;
    const tile_fn *tiles = f32 ? k_tiles_f32 : k_tiles_bf16;
    const wide_fn *wides = f32 ? k_wides_f32 : k_wides_bf16;
    size_t esz = f32 ? 4 : 2;
    float acc[MR * NR] __attribute__((aligned(64)));
    float wacc[GEMM_WIDE_ROWS * GEMM_WIDE * NR] __attribute__((aligned(64)));
    if (m1 - m0 <= GEMM_WIDE_ROWS) {
        int rows = (int)(m1 - m0);
        const void *A = (const char *)g->A + (size_t)(m0 * g->lda) * esz;
        int64_t panel = p0;
        for (; p1 - panel >= GEMM_WIDE; panel += GEMM_WIDE) {
            wides[rows](A, g->lda, gemm_panel(p, panel), p->panel_elems, p->k, wacc);
            for (int q = 0; q < GEMM_WIDE; q++) gemm_epilogue_avx512(g, wacc + q * rows * NR, rows, m0, panel + q);
        }
        for (; panel < p1; panel++) {
            tiles[rows](A, g->lda, gemm_panel(p, panel), p->k, acc);
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
        const void *A = (const char *)g->A + (size_t)((m0 + lo) * g->lda) * esz;
        for (int64_t panel = p0; panel < p1; panel++) {
            tiles[hi - lo](A, g->lda, gemm_panel(p, panel), p->k, acc);
            gemm_epilogue_avx512(g, acc, (int)(hi - lo), m0 + lo, panel);
        }
    }
}
