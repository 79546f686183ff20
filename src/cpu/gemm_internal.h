/* Why: the seam between the GEMM driver (gemm.c: packing, blocking,
 * threads, the small-row path and the row-tile loop) and the per-ISA code
 * under simd/ (microkernels and epilogues), which is compiled with other
 * target flags and so lives in other files. A path's GEMM is a gemm_path:
 * its geometry and the functions below; the path table (path_table.c) holds
 * one per path.
 *
 * Layout. The (n, k) weight is cut into panels of `nr` packed columns. A
 * plain packing's panel p holds output columns [p*nr, p*nr + nr); a GLU
 * packing's holds nr/2 gate columns then the nr/2 up columns of the same
 * outputs, so one tile computes both halves of its outputs. Columns past n
 * and k past the weight are zero, so tiles never test bounds on the weight.
 *   KN  (f32, and bf16 widened on AVX2/AVX-512): panel[kk][j], k-major.
 *   K2N (vdpbf16ps, AMX): panel[kk/2][j][kk%2]: bf16 k-pairs interleaved,
 *       one 32-bit pair per column, the order both instructions consume.
 * k is padded with zeros to the path's kstep (2 for pairs, 32 for AMX).
 * Biases are widened to f32 per packed column (zero padded).
 *
 * Determinism: every microkernel of a path accumulates each element from
 * zero in ascending k with one instruction sequence, whatever the row count
 * or position, so the partition over threads and tiles never changes a
 * result. Where k is cut into chunks (tile_add), each chunk's sums go on
 * from the f32 values the chunk before stored, which is the same sequence
 * of operations: the cut changes no bit either. */
#ifndef FMLP_CPU_GEMM_INTERNAL_H
#define FMLP_CPU_GEMM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/gemm.h"

struct gemm_path;
struct gemm_kernels;

struct cpu_packed {
    cpu_path path;                      /* the path tiles run on (after cpu_path_for_dtype) */
    const struct gemm_path *gp;         /* that path's GEMM */
    const struct gemm_kernels *kernels; /* its microkernels for `dtype` */
    fmlp_dtype dtype;                   /* of weights, A and C */
    size_t esz;                         /* bytes per element of that dtype */
    bool glu;
    bool pairs;          /* K2N layout */
    int64_t n, k;        /* output columns, reduction length */
    int nr;              /* packed columns per panel */
    int64_t kpad;        /* k rows stored per panel (k rounded up to the path's kstep) */
    int64_t panels;
    int64_t panel_elems; /* elements (f32 or bf16) per panel */
    int64_t kc;          /* k per chunk (a multiple of kstep), or kpad where k is never cut */
    int64_t cut_from;    /* runs of this many rows or more cut k (INT64_MAX: none) */
    void *w;
    float *bias;         /* panels * nr, or NULL */
};

/* One cpu_gemm_run call. */
typedef struct {
    const cpu_packed *p;
    fmlp_act act;
    const void *A;
    int64_t lda;
    void *C;
    int64_t ldc;
    int64_t m;
} gemm_call;

/* Output columns a panel produces. */
static inline int gemm_panel_outs(const cpu_packed *p) { return p->glu ? p->nr / 2 : p->nr; }

static inline const void *gemm_panel(const cpu_packed *p, int64_t panel)
{
    return (const char *)p->w + (size_t)panel * (size_t)p->panel_elems * p->esz;
}

/* A microkernel: the f32 sums of `rows` rows of A (the first at A, rows
 * lda elements apart, in the packing's dtype) by the packed panels that
 * start at W (pstride elements apart), over all k, each element from zero
 * in ascending k. A tile kernel takes one panel and 1..mr rows; a wide
 * kernel takes GEMM_WIDE panels and 1..GEMM_WIDE_ROWS rows. Row r of panel q
 * goes to acc + (q * rows + r) * nr, nr floats; acc is 64-byte aligned. */
typedef void (*gemm_ukernel)(int rows, const void *A, int64_t lda, const void *W, int64_t pstride, int64_t k,
                             float *acc);

/* Ends a tile: acc holds `rows` rows of nr f32 sums (row stride nr) for
 * `panel`, rows starting at C row i0. Adds bias, applies the activation or
 * the GLU, rounds once and stores the valid columns only. */
typedef void (*gemm_epilogue)(const gemm_call *g, const float *acc, int rows, int64_t i0, int64_t panel);

/* How a block (a run of rows by a group of panels) walks its tiles. */
typedef enum {
    /* Row tiles outside, sharing the rows evenly (cpu_split; 16 rows are
     * two of 8, not 12 and 4, so none runs short of accumulators): a tile's
     * A rows stay in L1 while the group's panels stream past from L2. */
    GEMM_ROWS_OUTSIDE,
    /* Panels outside, row tiles of mr (the last one short) inside. */
    GEMM_PANELS_OUTSIDE,
} gemm_order;

typedef struct gemm_kernels {
    gemm_ukernel tile;     /* NULL: this dtype runs on another path */
    gemm_ukernel wide;     /* NULL: small blocks run `tile` panel by panel */
    gemm_ukernel tile_add; /* `tile` with its sums starting from acc, for the
                            * k chunks after the first; NULL: k is never cut */
} gemm_kernels;

typedef struct gemm_path {
    int mr, nr;              /* rows per tile, packed columns per panel */
    int kstep;               /* the packing pads k to a multiple of this */
    bool pairs;              /* bf16 is packed K2N (else KN) */
    gemm_order order;
    gemm_kernels f32, bf16;
    gemm_epilogue epilogue;
    void (*enter)(int rows); /* before and after each block of `rows` rows */
    void (*leave)(void);     /* (AMX's tile configuration), or NULL */
} gemm_path;

/* Panel widths (packed columns) and row tiles of each path's microkernel:
 * plain numbers, since simd/gemm_tiles.h pastes them into names. */
#define GEMM_NR_SCALAR 8
#define GEMM_NR_AVX2 16
#define GEMM_NR_AVX512 32
#define GEMM_MR_SCALAR 4
#define GEMM_MR_AVX2 6
#define GEMM_MR_AVX512 8
#define GEMM_MR_AVX512BF16 12
#define GEMM_MR_AMX 32
/* Blocks of at most GEMM_WIDE_ROWS rows run wide kernels, GEMM_WIDE panels
 * at once, where the path has them (small batches stream weights; they need
 * more accumulators than one panel gives). */
#define GEMM_WIDE_ROWS 3
#define GEMM_WIDE 4
/* AMX tiles consume k in steps of 32 (16 pairs); its packing pads k to it. */
#define GEMM_AMX_KSTEP 32
/* The largest acc any microkernel writes, in floats. */
#define GEMM_ACC_FLOATS (GEMM_MR_AMX * GEMM_NR_AVX512)

/* The microkernels and epilogues, by path (simd/ and gemm_scalar.c). */
void gemm_tile_scalar_f32(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_tile_scalar_bf16(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_tile_add_scalar_f32(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_tile_add_scalar_bf16(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_epilogue_scalar(const gemm_call *g, const float *acc, int rows, int64_t i0, int64_t panel);

void gemm_tile_avx2_f32(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_tile_avx2_bf16(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_tile_add_avx2_f32(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_tile_add_avx2_bf16(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_epilogue_avx2(const gemm_call *g, const float *acc, int rows, int64_t i0, int64_t panel);

void gemm_tile_avx512_f32(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_tile_avx512_bf16(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_tile_add_avx512_f32(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_tile_add_avx512_bf16(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_wide_avx512_f32(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_wide_avx512_bf16(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
/* Shared by every AVX-512-class path (avx512, avx512bf16, amx): nr 32. */
void gemm_epilogue_avx512(const gemm_call *g, const float *acc, int rows, int64_t i0, int64_t panel);

void gemm_tile_avx512bf16(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_tile_add_avx512bf16(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_wide_avx512bf16(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);

void gemm_tile_amx(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc);
void gemm_amx_enter(int rows);
void gemm_amx_leave(void);

#endif
