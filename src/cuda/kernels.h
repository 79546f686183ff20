/* Why: the CUDA kernels live in .cu files, the backend logic in C. This is
 * the C-callable seam between them: each launcher picks a kernel variant for
 * the shape, dtype and alignment it is given, names it (the same name CUPTI
 * reports, so plans and traces agree), and enqueues it on a stream.
 * dtype values are fmlp_dtype's, act values fmlp_act's. */
#ifndef FMLP_CUDA_KERNELS_H
#define FMLP_CUDA_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Pointwise ops. ACT: out = act(a); MUL: out = a * b; GLU: out = act(a) * b. */
enum { FMLP_CU_PW_ACT = 0, FMLP_CU_PW_MUL = 1, FMLP_CU_PW_GLU = 2 };

/* a, b, out: (rows, cols) with row strides lda, ldb, ldo (b unused for ACT).
 * `vec` picks the 16-byte variant; fmlp_cu_pw_can_vec says when it is legal.
 * Returns the kernel's name via *name when non-NULL; with launch false only
 * the name is computed. */
bool fmlp_cu_pw_can_vec(int dtype, int64_t cols, const void *a, int64_t lda, const void *b, int64_t ldb,
                        const void *out, int64_t ldo);
cudaError_t fmlp_cu_pointwise(cudaStream_t s, bool launch, int dtype, int op, int act, bool vec, int64_t rows,
                              int64_t cols, const void *a, int64_t lda, const void *b, int64_t ldb, void *out,
                              int64_t ldo, const char **name);

/* GEMM variants of fmlp's own kernels. */
typedef enum {
    FMLP_CU_GEMM_SIMT = 0,  /* any dtype, any alignment: the fallback and f32 path */
    FMLP_CU_GEMM_GEMV = 1,  /* rows <= 64, bf16/f16: streams the weights through mma.sync */
    FMLP_CU_GEMM_TILE64 = 2, /* 64x64 block tiles, mma.sync, cp.async pipeline */
    FMLP_CU_GEMM_TILE128 = 3, /* 128x128 block tiles */
    FMLP_CU_GEMM_WGMMA = 4,   /* Hopper: TMA-fed wgmma tiles (sm_90a image, cc 9.x only) */
    FMLP_CU_GEMM_GEMV_ROW = 5 /* one row, long K: whole row segments per warp, f32 FMAs (fmlp_cu_gemv_row_applies) */
} fmlp_cu_gemm_variant;

/* One GEMM: out = epi(x · Wᵀ + b).
 * x: (m, k) row stride ldx. w: (nw, k) row-major, contiguous (ld = k), the
 * packed weight. b: (nw) or NULL. With glu, w interleaves gate and up rows
 * in blocks of 8 (rows 16p..16p+7 gate cols 8p.., 16p+8..16p+15 up cols
 * 8p..), nw = 2 * round_up(n, 8), and out: (m, n) = act(gate) * up;
 * without, nw = n and out = act(x · Wᵀ + b). out row stride ldo. */
typedef struct {
    int dtype, act;
    bool glu;
    int64_t m, n, k, nw;
    const void *x;
    int64_t ldx;
    const void *w, *b;
    void *out;
    int64_t ldo;
    int sm_count; /* the device's multiprocessors (tile choice); 0: assume 132 */
    int cc_major; /* compute capability major; 9 and up: split-K clusters and PDL; 0: neither */
    int split;    /* gemv: blocks of a cluster splitting K (1..8); 0: chosen for the shape */
    bool pdl;     /* gemv and persistent wgmma GEMMs: launch with programmatic stream serialization (cc 9.x) */
} fmlp_cu_gemm_args;

/* Picks the variant for the shape, the device (SM count, compute capability
 * major) and the alignment of x (pass x = NULL to assume an aligned x, as
 * the plan does before buffers exist). */
fmlp_cu_gemm_variant fmlp_cu_gemm_pick(const fmlp_cu_gemm_args *a, int sm_count, int cc_major);
const char *fmlp_cu_gemm_name(const fmlp_cu_gemm_args *a, fmlp_cu_gemm_variant v);
/* Whether the row-streaming variant can run this GEMM: one row, bf16/f16,
 * K at least 2048 and a multiple of 8, x 16-byte aligned (or NULL). */
bool fmlp_cu_gemv_row_applies(const fmlp_cu_gemm_args *a);
cudaError_t fmlp_cu_gemm(cudaStream_t s, const fmlp_cu_gemm_args *a, fmlp_cu_gemm_variant v);
/* The wgmma variant (gemm_tma.cu); fmlp_cu_gemm dispatches to it. It needs
 * the driver's tensor-map encoder (ready), x and w rows 16-byte aligned.
 * Its tile configurations are numbered 0..configs()-1 for benchmarks;
 * config -1 is the one picked for the shape. */
bool fmlp_cu_gemm_wgmma_ready(void);
const char *fmlp_cu_gemm_wgmma_name(const fmlp_cu_gemm_args *a);
cudaError_t fmlp_cu_gemm_wgmma(cudaStream_t s, const fmlp_cu_gemm_args *a);
int fmlp_cu_gemm_wgmma_configs(void);
const char *fmlp_cu_gemm_wgmma_config_name(const fmlp_cu_gemm_args *a, int config);
cudaError_t fmlp_cu_gemm_wgmma_config(cudaStream_t s, const fmlp_cu_gemm_args *a, int config);
/* Blocks the configuration launches for the shape (0: it cannot run). */
int64_t fmlp_cu_gemm_wgmma_blocks(const fmlp_cu_gemm_args *a, int config);

/* The whole gated MLP in one cooperative launch (mlp_one.cu), at rows up
 * to FMLP_CU_ONE_MAX_ROWS: y = (act(x · Gᵀ + bg) * (x · Uᵀ + bu)) · Dᵀ + bd.
 * Gate and up come packed as the GLU GEMM reads them (wgu, nwgu rows, bgu),
 * the down weight as the plain GEMM does (wd (out, hidden), bd or NULL).
 * h: (m, hidden) workspace, contiguous; scratch: fmlp_cu_mlp_one_scratch
 * bytes, 256-byte aligned. dim and hidden must be multiples of 8, x rows
 * 16-byte aligned (fmlp_cu_mlp_one_fits; x NULL assumes an aligned x). */
#define FMLP_CU_ONE_MAX_ROWS 16
typedef struct {
    int dtype, act;
    int64_t m, dim, hidden, out;
    const void *x;
    int64_t ldx;
    const void *wgu, *bgu;
    int64_t nwgu;
    const void *wd, *bd;
    void *y;
    int64_t ldy;
    void *h, *scratch;
    int sm_count; /* one block per multiprocessor; 0: assume 132 */
    int cc_major;
    int row_stream; /* FMLP_CU_ROW_STREAM_*: where the row-streaming forms run (mlp_stream.cu, mlp_stream_mma.cu) */
    int slice;      /* nonzero: the hidden-slice form at one row where it fits (mlp_slice.cu) */
    const void *wdt; /* the down weight transposed, (hidden, out), where fmlp_cu_slice_down_fits; else NULL */
    /* filled by the launcher */
    int pieces;     /* the down projection's K pieces */
    float *part;    /* their partial sums */
    unsigned *count; /* pieces finished, per group of 16 outputs */
} fmlp_cu_mlp_args;

enum { FMLP_CU_ROW_STREAM_OFF = 0, FMLP_CU_ROW_STREAM_DEFAULT = 1, FMLP_CU_ROW_STREAM_WHEREVER = 2 };

bool fmlp_cu_mlp_one_fits(const fmlp_cu_mlp_args *a);
/* Whether the one kernel runs without being asked for everywhere
 * (FMLP_CUDA_ONE_KERNEL=1): where each SM holding down weights holds one
 * group of 16 outputs in shared memory (the "_smem" kernels), or at one
 * row in the row-streaming form. */
bool fmlp_cu_mlp_one_by_default(const fmlp_cu_mlp_args *a);
size_t fmlp_cu_mlp_one_scratch(const fmlp_cu_mlp_args *a);
const char *fmlp_cu_mlp_one_name(const fmlp_cu_mlp_args *a);
cudaError_t fmlp_cu_mlp_one(cudaStream_t s, const fmlp_cu_mlp_args *a);
/* The hidden-slice form (mlp_slice.cu), which fmlp_cu_mlp_one launches
 * where it fits: one row, bf16/f16, cc 9.x, dim and out multiples of 8 and
 * at most 1024, at most 32 hidden columns a block, a->slice set
 * (FMLP_CUDA_SLICE=0 clears it), a->wdt set. Scratch: fmlp_cu_mlp_slice_scratch
 * bytes, 4-byte aligned. */
bool fmlp_cu_mlp_slice_fits(const fmlp_cu_mlp_args *a);
size_t fmlp_cu_mlp_slice_scratch(const fmlp_cu_mlp_args *a);
const char *fmlp_cu_mlp_slice_name(const fmlp_cu_mlp_args *a);
cudaError_t fmlp_cu_mlp_slice(cudaStream_t s, const fmlp_cu_mlp_args *a);
/* Whether a plain Linear of (out, hidden) weights gets the transposed copy
 * the hidden-slice form reads, when it is a gated MLP's down projection. */
bool fmlp_cu_slice_down_fits(int dtype, int cc_major, int sm_count, int64_t out, int64_t hidden);
/* The row-streaming forms, which fmlp_cu_mlp_one launches where
 * a->row_stream allows them: cc 9.x, dim and hidden multiples of 8; at one
 * row (mlp_stream.cu) both at most 16384, at 2..16 rows (mlp_stream_mma.cu)
 * while a block's carried sums fit in shared memory (with dim above 2048,
 * hidden up to about 70000 on 132 SMs). They need no scratch. */
bool fmlp_cu_mlp_stream_fits(const fmlp_cu_mlp_args *a);
const char *fmlp_cu_mlp_stream_name(const fmlp_cu_mlp_args *a);
cudaError_t fmlp_cu_mlp_stream(cudaStream_t s, const fmlp_cu_mlp_args *a);

#ifdef __cplusplus
}
#endif
#endif
