/* Why: the AVX-512 microkernels for f32, and for bf16 on CPUs without
 * vdpbf16ps (weights and A widened to f32 in registers, one FMA per k).
 * A tile is up to GEMM_MR_AVX512 rows by one 32-column panel: 16 zmm
 * accumulators, A elements broadcast straight from the caller's rows. */
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

INLINE __m512 bcast_bf16(const uint16_t *p) { return _mm512_castsi512_ps(_mm512_set1_epi32((int)((uint32_t)*p << 16))); }

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
    const tile_fn *tiles = p->dtype == FMLP_F32 ? k_tiles_f32 : k_tiles_bf16;
    size_t esz = p->dtype == FMLP_F32 ? 4 : 2;
    float acc[MR * NR] __attribute__((aligned(64)));
    for (int64_t panel = p0; panel < p1; panel++) {
        const void *W = gemm_panel(p, panel);
        for (int64_t i = m0; i < m1; i += MR) {
            int rows = m1 - i < MR ? (int)(m1 - i) : MR;
            tiles[rows]((const char *)g->A + (size_t)(i * g->lda) * esz, g->lda, W, p->k, acc);
            gemm_epilogue_avx512(g, acc, rows, i, panel);
        }
    }
}
