/* Why: the AVX2 + FMA GEMM path for CPUs without AVX-512: f32, and bf16
 * widened to f32 in registers. A tile is up to GEMM_MR_AVX2 rows by one
 * 16-column panel: 12 ymm accumulators, A broadcast from the caller's rows;
 * the epilogue adds bias, applies the activation or GLU and rounds once. */
#include <immintrin.h>

#include "cpu/gemm_internal.h"
#include "cpu/simd/act_avx2.h"
#include "cpu/simd/bf16_avx2.h"

#define MR GEMM_MR_AVX2
#define NR GEMM_NR_AVX2
#define INLINE static inline __attribute__((always_inline))

INLINE __m256 widen8(const uint16_t *p) { return bf16x8_widen(_mm_load_si128((const __m128i *)p)); }

INLINE __m256 bcast_bf16(const uint16_t *p)
{
    return _mm256_castsi256_ps(_mm256_set1_epi32((int)((uint32_t)*p << 16)));
}

/* Accumulators are named variables, not arrays: with arrays GCC keeps a
 * memory copy of every ymm accumulator up to date inside the k loop. */
#define ACC_DECL(r, unused) __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = _mm256_setzero_ps();
#define ACC_FMA(r, LOADA)                                                                                        \
    if (rows > r) {                                                                                              \
        __m256 a = LOADA(A + r * lda + kk);                                                                      \
        c##r##0 = _mm256_fmadd_ps(a, w0, c##r##0);                                                               \
        c##r##1 = _mm256_fmadd_ps(a, w1, c##r##1);                                                               \
    }
#define ACC_STORE(r, unused)                                                                                           \
    if (rows > r) {                                                                                              \
        _mm256_store_ps(acc + r * NR, c##r##0);                                                                  \
        _mm256_store_ps(acc + r * NR + 8, c##r##1);                                                              \
    }
#define ROWS6(X, ARG) X(0, ARG) X(1, ARG) X(2, ARG) X(3, ARG) X(4, ARG) X(5, ARG)

_Static_assert(MR == 6, "the tiles below spell out six rows");

INLINE void tile_f32(int rows, const float *A, int64_t lda, const float *W, int64_t k, float *acc)
{
    ROWS6(ACC_DECL, )
    for (int64_t kk = 0; kk < k; kk++) {
        __m256 w0 = _mm256_load_ps(W + kk * NR), w1 = _mm256_load_ps(W + kk * NR + 8);
        ROWS6(ACC_FMA, _mm256_broadcast_ss)
    }
    ROWS6(ACC_STORE, )
}

INLINE void tile_bf16(int rows, const uint16_t *A, int64_t lda, const uint16_t *W, int64_t k, float *acc)
{
    ROWS6(ACC_DECL, )
    for (int64_t kk = 0; kk < k; kk++) {
        __m256 w0 = widen8(W + kk * NR), w1 = widen8(W + kk * NR + 8);
        ROWS6(ACC_FMA, bcast_bf16)
    }
    ROWS6(ACC_STORE, )
}

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

_Static_assert(MR == 6, "the tables below list one tile per row count");
static const tile_fn k_tiles_f32[MR + 1] = {NULL, tile_f32_1, tile_f32_2, tile_f32_3,
                                            tile_f32_4, tile_f32_5, tile_f32_6};
static const tile_fn k_tiles_bf16[MR + 1] = {NULL, tile_bf16_1, tile_bf16_2, tile_bf16_3,
                                             tile_bf16_4, tile_bf16_5, tile_bf16_6};

static inline void store8(const gemm_call *g, int64_t row, int64_t col, __m256 v, int64_t count)
{
    if (g->p->dtype == FMLP_F32)
        _mm256_maskstore_ps((float *)g->C + row * g->ldc + col, mask8_first(count), v);
    else
        bf16x8_store((uint16_t *)g->C + row * g->ldc + col, v, count);
}

static void epilogue(const gemm_call *g, const float *acc, int rows, int64_t i0, int64_t panel)
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

void gemm_block_avx2(const gemm_call *g, int64_t m0, int64_t m1, int64_t p0, int64_t p1)
{
    const cpu_packed *p = g->p;
    const tile_fn *tiles = p->dtype == FMLP_F32 ? k_tiles_f32 : k_tiles_bf16;
    size_t esz = p->dtype == FMLP_F32 ? 4 : 2;
    float acc[MR * NR] __attribute__((aligned(32)));
    /* Row tiles outside: a tile's A rows stay in L1 while panels stream. */
    for (int64_t i = m0; i < m1; i += MR) {
        int rows = m1 - i < MR ? (int)(m1 - i) : MR;
        const void *A = (const char *)g->A + (size_t)(i * g->lda) * esz;
        for (int64_t panel = p0; panel < p1; panel++) {
            tiles[rows](A, g->lda, gemm_panel(p, panel), p->k, acc);
            epilogue(g, acc, rows, i, panel);
        }
    }
}
