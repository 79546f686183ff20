/* Why: a vector microkernel keeps its accumulators in registers only when
 * its row count is a compile-time constant, yet the driver asks for any
 * count up to the tile's height. GEMM_UKERNEL(NAME, BODY, N) turns BODY, an
 * always-inline function with the gemm_ukernel signature, into one instance
 * per row count 1..N (N a plain number, or a macro that is one) and the
 * gemm_ukernel NAME, which jumps to the instance for its `rows` (1..N).
 * Kernels that widen bf16 share one body for both dtypes: GEMM_BY_DTYPE(BODY)
 * makes BODY_f32 and BODY_bf16 from BODY(bool bf16, <gemm_ukernel args>). */
#ifndef FMLP_CPU_SIMD_GEMM_TILES_H
#define FMLP_CPU_SIMD_GEMM_TILES_H

#include "cpu/gemm_internal.h"

#define GEMM_ROWS_1(X, B) X(1, B)
#define GEMM_ROWS_2(X, B) GEMM_ROWS_1(X, B) X(2, B)
#define GEMM_ROWS_3(X, B) GEMM_ROWS_2(X, B) X(3, B)
#define GEMM_ROWS_4(X, B) GEMM_ROWS_3(X, B) X(4, B)
#define GEMM_ROWS_5(X, B) GEMM_ROWS_4(X, B) X(5, B)
#define GEMM_ROWS_6(X, B) GEMM_ROWS_5(X, B) X(6, B)
#define GEMM_ROWS_7(X, B) GEMM_ROWS_6(X, B) X(7, B)
#define GEMM_ROWS_8(X, B) GEMM_ROWS_7(X, B) X(8, B)
#define GEMM_ROWS_9(X, B) GEMM_ROWS_8(X, B) X(9, B)
#define GEMM_ROWS_10(X, B) GEMM_ROWS_9(X, B) X(10, B)
#define GEMM_ROWS_11(X, B) GEMM_ROWS_10(X, B) X(11, B)
#define GEMM_ROWS_12(X, B) GEMM_ROWS_11(X, B) X(12, B)
#define GEMM_ROWS(N, X, B) GEMM_ROWS_(N, X, B)
#define GEMM_ROWS_(N, X, B) GEMM_ROWS_##N(X, B)

typedef void (*gemm_rows_fn)(const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);

#define GEMM_INSTANCE_(R, BODY)                                                                                  \
    static void BODY##_##R(const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc)      \
    {                                                                                                            \
        BODY(R, A, lda, W, ps, k, acc);                                                                          \
    }
#define GEMM_ENTRY_(R, BODY) BODY##_##R,

#define GEMM_UKERNEL(NAME, BODY, N)                                                                              \
    GEMM_ROWS(N, GEMM_INSTANCE_, BODY)                                                                           \
    static const gemm_rows_fn BODY##_rows[] = {NULL, GEMM_ROWS(N, GEMM_ENTRY_, BODY)};                          \
    void NAME(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc)         \
    {                                                                                                            \
        BODY##_rows[rows](A, lda, W, ps, k, acc);                                                                \
    }

#define GEMM_BY_DTYPE_(BODY, SUFFIX, BF16)                                                                      \
    static inline __attribute__((always_inline)) void BODY##SUFFIX(int rows, const void *A, int64_t lda,          \
                                                                    const void *W, int64_t ps, int64_t k,         \
                                                                    float *acc)                                   \
    {                                                                                                            \
        BODY(BF16, rows, A, lda, W, ps, k, acc);                                                                 \
    }
#define GEMM_BY_DTYPE(BODY) GEMM_BY_DTYPE_(BODY, _f32, false) GEMM_BY_DTYPE_(BODY, _bf16, true)

/* tile and tile_add (the gemm_ukernel bodies of GEMM_BY_DTYPE) from
 * FROM(bool bf16, bool add, rows, A, lda, W, k, acc), whose sums start from
 * acc where `add` is set (a k chunk after the first), else from zero. */
#define GEMM_TILE_AND_ADD_(NAME, FROM, ADD)                                                                     \
    static inline __attribute__((always_inline)) void NAME(bool bf16, int rows, const void *A, int64_t lda,       \
                                                           const void *W, int64_t ps, int64_t k, float *acc)       \
    {                                                                                                            \
        (void)ps;                                                                                                \
        FROM(bf16, ADD, rows, A, lda, W, k, acc);                                                                \
    }
#define GEMM_TILE_AND_ADD(FROM) GEMM_TILE_AND_ADD_(tile, FROM, false) GEMM_TILE_AND_ADD_(tile_add, FROM, true)

#endif
