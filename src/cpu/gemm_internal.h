/* Why: the packed-weight layout and the block interface shared by the GEMM
 * driver (gemm.c: packing, threads, cache blocking) and the per-ISA tile
 * code under simd/ (microkernels and epilogues), which are compiled with
 * different target flags and so live in different files.
 *
 * Layout. The (n, k) weight is cut into panels of `nr` packed columns. A
 * plain packing's panel p holds output columns [p*nr, p*nr + nr); a GLU
 * packing's holds nr/2 gate columns then the nr/2 up columns of the same
 * outputs, so one tile computes both halves of its outputs. Columns past n
 * and k past the weight are zero, so tiles never test bounds on the weight.
 *   KN  (f32, and bf16 widened on AVX2/AVX-512): panel[kk][j], k-major.
 *   K2N (vdpbf16ps, AMX): panel[kk/2][j][kk%2]: bf16 k-pairs interleaved,
 *       one 32-bit pair per column, the order both instructions consume.
 * Biases are widened to f32 per packed column (zero padded).
 *
 * Determinism: every tile of a path accumulates each element from zero in
 * ascending k with one instruction sequence, whatever the tile's size or
 * position, so the partition over threads never changes a result. */
#ifndef FMLP_CPU_GEMM_INTERNAL_H
#define FMLP_CPU_GEMM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/gemm.h"

struct cpu_packed {
    cpu_path path;       /* the path tiles run on (after cpu_path_for_dtype) */
    fmlp_dtype dtype;    /* of weights, A and C */
    bool glu;
    bool pairs;          /* K2N layout */
    int64_t n, k;        /* output columns, reduction length */
    int nr;              /* packed columns per panel */
    int64_t kpad;        /* k rows stored per panel (k rounded up for pairs or AMX) */
    int64_t panels;
    int64_t panel_elems; /* elements (f32 or bf16) per panel */
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
    size_t esz = p->dtype == FMLP_F32 ? 4 : 2;
    return (const char *)p->w + (size_t)panel * (size_t)p->panel_elems * esz;
}

/* C rows [m0, m1) for panels [p0, p1), full k, epilogue included. */
typedef void (*gemm_block_fn)(const gemm_call *g, int64_t m0, int64_t m1, int64_t p0, int64_t p1);

void gemm_block_scalar(const gemm_call *g, int64_t m0, int64_t m1, int64_t p0, int64_t p1);
void gemm_block_avx2(const gemm_call *g, int64_t m0, int64_t m1, int64_t p0, int64_t p1);
void gemm_block_avx512(const gemm_call *g, int64_t m0, int64_t m1, int64_t p0, int64_t p1);
void gemm_block_avx512bf16(const gemm_call *g, int64_t m0, int64_t m1, int64_t p0, int64_t p1);
void gemm_block_amx(const gemm_call *g, int64_t m0, int64_t m1, int64_t p0, int64_t p1);

/* Panel widths (packed columns) and row tiles of each path's microkernel. */
#define GEMM_NR_SCALAR 8
#define GEMM_NR_AVX2 16
#define GEMM_NR_AVX512 32
#define GEMM_MR_SCALAR 4
#define GEMM_MR_AVX2 6
#define GEMM_MR_AVX512 8
#define GEMM_MR_AVX512BF16 12
#define GEMM_MR_AMX 32
/* Blocks of at most GEMM_WIDE_ROWS rows run AVX-512 tiles GEMM_WIDE panels
 * wide (small batches stream weights; they need more accumulators). */
#define GEMM_WIDE_ROWS 3
#define GEMM_WIDE 4
/* AMX tiles consume k in steps of 32 (16 pairs); its packing pads k to it. */
#define GEMM_AMX_KSTEP 32

/* Shared AVX-512 epilogue: acc holds `rows` rows of nr f32 sums (row stride
 * GEMM_NR_AVX512) for panel `panel`, rows starting at C row i0. Adds bias,
 * applies the activation or the GLU, rounds once and stores the valid
 * columns only. */
void gemm_epilogue_avx512(const gemm_call *g, const float *acc, int rows, int64_t i0, int64_t panel);

#endif
