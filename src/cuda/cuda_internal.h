/* Why: the CUDA backend is split by concern (status.c, discovery.c,
 * stream.c, memory.c, weights.c, dispatch.c, policy.c, lt.c, graph.c, cupti.c); this
 * is the state they share, one per context, the packed-weight record every
 * GEMM path reads, and each file's entry points. status.c and stream.c are
 * the leaves every other file may call; backend.c only assembles the table. */
#ifndef FMLP_CUDA_INTERNAL_H
#define FMLP_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "core/internal.h"
#include "cuda/kernels.h"

#define FMLP_CU_LT_CACHE 128
#define FMLP_CU_LT_TUNE 8
#define FMLP_CU_LT_PICKS 64
#define FMLP_CU_GRAPHS 64
#define FMLP_CU_FREE_BLOCKS 64
#define FMLP_CU_SEEN_PTRS 32

/* One cuBLASLt problem, ready to launch: descriptors and the algorithm,
 * keyed by everything they depend on. `tuned` (a fused plan's GEMM): the
 * fastest of the heuristic's first n_cands algorithms once timed (lt.c),
 * the heuristic's first until then; n_cands is 1 once timed. */
typedef struct {
    fmlp_dtype dtype;
    int64_t m, n, k, ldx, ldy;
    const void *w, *bias;
    int align_x, align_y;
    bool tuned;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    int n_cands;
    size_t tune_ws; /* the most workspace a candidate asks for */
    cublasLtMatmulAlgo_t cands[FMLP_CU_LT_TUNE];
} fmlp_cu_lt_plan;

/* A timed pick, kept by shape and layout alone: copies of an MLP (or a
 * plan rebuilt after the cache above was cleared) reuse it untimed. */
typedef struct {
    fmlp_dtype dtype;
    int64_t m, n, k, ldx, ldy;
    int align_x, align_y, align_w;
    bool bias;
    cublasLtMatmulAlgo_t algo;
} fmlp_cu_lt_pick_memo;

typedef struct {
    void *key;
    size_t key_bytes;
    cudaGraphExec_t exec;
    uint64_t last_use;
    bool pdl; /* captured with programmatic edges: replayed only while PDL is wanted */
} fmlp_cu_graph;

typedef struct {
    void *p;
    size_t bytes;
} fmlp_cu_block;

/* Where fused gated MLPs run as one kernel (FMLP_CUDA_ONE_KERNEL=0 / unset / 1). */
enum { FMLP_CU_ONE_OFF = 0, FMLP_CU_ONE_RESIDENT = 1, FMLP_CU_ONE_WHEREVER = 2 };

typedef struct {
    uint64_t id; /* unique per context, for stream.c's per-thread streams */
    int device;
    int sm_count;
    int cc_major;
    int64_t l2_bytes;
    cudaStream_t stream;         /* every forward's work, in order */
    cudaStream_t capture_stream; /* graph capture, on the capturing thread only */
    bool force_own;              /* FMLP_CUDA_OWN_GEMM=1: fmlp's GEMMs instead of cuBLASLt */
    bool force_lt;               /* FMLP_CUDA_OWN_GEMM=0: cuBLASLt for every plain GEMM */
    bool pdl;                    /* gemv kernels overlap the kernel before them (cc 9.x; FMLP_CUDA_PDL=0: off);
                                    off while CUPTI records, so each kernel's span is its own work */
    bool pdl_all;                /* FMLP_CUDA_PDL=1: PDL for every gemv, not only those with small weights */
    int one_kernel;              /* FMLP_CU_ONE_*: where a gated MLP's fused forward is one kernel */
    bool row_gemv;               /* one-row GEMMs on the row-streaming gemv (FMLP_CUDA_ROW_GEMV=0: off) */
    int row_stream;              /* FMLP_CU_ROW_STREAM_*: the row-streaming one-kernel MLP (FMLP_CUDA_ROW_STREAM) */
    bool slice;                  /* the hidden-slice one-kernel MLP at one row (FMLP_CUDA_SLICE=0: off) */
    bool lt_tune;                /* fused plans' cuBLASLt GEMMs: the fastest algorithm timed (FMLP_CUDA_LT_TUNE=0: off) */
    pthread_mutex_t lock;        /* guards the caches below */

    cublasLtHandle_t lt;
    void *lt_ws;
    size_t lt_ws_bytes;
    fmlp_cu_lt_plan lt_plans[FMLP_CU_LT_CACHE];
    int n_lt;
    cudaStream_t lt_tune_stream; /* where algorithms are timed; made at the first timing */
    fmlp_cu_lt_pick_memo lt_picks[FMLP_CU_LT_PICKS];
    int n_lt_picks, next_lt_pick; /* filled, then replaced in turn */

    pthread_mutex_t graph_lock; /* held from graph_begin to graph_end */
    fmlp_cu_graph graphs[FMLP_CU_GRAPHS];
    int n_graphs;
    uint64_t graph_clock;

    fmlp_cu_block *live; /* device allocations handed out */
    int n_live, cap_live;
    fmlp_cu_block cached[FMLP_CU_FREE_BLOCKS]; /* freed, kept for reuse */
    int n_cached;
    int64_t live_bytes;

    const void *seen[FMLP_CU_SEEN_PTRS]; /* pointers already checked to be device memory */
    int seen_next;
} fmlp_cu_state;

/* A Linear's weights on the device. GLU: gate and up interleaved in blocks
 * of 8 rows, nw = 2 * round_up(n, 8) rows, bias likewise (zeros in padding). */
typedef struct {
    fmlp_dtype dtype;
    bool glu;
    int64_t n, k, nw;
    void *w; /* (nw, k) row-major */
    void *b; /* (nw) or NULL */
    void *wt; /* a gated MLP's down projection where fmlp_cu_slice_down_fits (and slice is on): (k, n) row-major; else NULL */
} fmlp_cu_packed;

static inline fmlp_cu_state *fmlp_cu_state_of(fmlp_ctx *ctx) { return (fmlp_cu_state *)ctx->be_state; }

/* ---- status.c */

/* A failed CUDA call as a status with a message naming the call. */
fmlp_status fmlp_cu_fail(cudaError_t e, const char *what);

/* ---- stream.c: the stream work goes to, per thread */

void fmlp_cu_stream_init(fmlp_cu_state *st);
/* The stream kernels go to on the calling thread: the capture stream while
 * this thread captures an fmlp graph, else the stream it set, else the
 * context's own. */
cudaStream_t fmlp_cu_stream(fmlp_cu_state *st);
void fmlp_cu_set_capturing(fmlp_cu_state *st, bool on);
/* Makes the context's device the calling thread's current one, unless it
 * is already: kernels and graphs launch on the current device. */
cudaError_t fmlp_cu_use_device(const fmlp_cu_state *st);
/* Backend table entries (fmlp_ctx_set_stream and its neighbours). */
fmlp_status fmlp_cu_set_stream(fmlp_ctx *ctx, void *stream);
void *fmlp_cu_get_stream(fmlp_ctx *ctx);
bool fmlp_cu_caller_capturing(fmlp_ctx *ctx);
/* Whether the calling thread is capturing an fmlp graph (graph.c's capture). */
bool fmlp_cu_own_capture(const fmlp_cu_state *st);
/* Whether stream s is capturing into a graph other than fmlp's own: 1 yes,
 * 0 no, -1 where CUDA could not tell (its error cleared). */
int fmlp_cu_foreign_capture(const fmlp_cu_state *st, cudaStream_t s);

/* ---- discovery.c: devices, a context's device state, descriptions */

int fmlp_cu_device_count(void);
fmlp_status fmlp_cu_init(fmlp_ctx *ctx, const fmlp_ctx_options *opt);
void fmlp_cu_fini(fmlp_ctx *ctx);
void fmlp_cu_print_info(FILE *f);
bool fmlp_cu_device_props(fmlp_ctx *ctx, fmlp_device_props *out);

/* ---- memory.c: the caching allocator, copies, device-pointer checks */

fmlp_status fmlp_cu_alloc(fmlp_ctx *ctx, size_t bytes, void **out);
void fmlp_cu_free(fmlp_ctx *ctx, void *p);
/* Frees every allocation the context still holds (context teardown). */
void fmlp_cu_memory_release(fmlp_cu_state *st);
fmlp_status fmlp_cu_copy(fmlp_ctx *ctx, void *dst, fmlp_device dst_dev, const void *src, fmlp_device src_dev,
                         size_t bytes);
fmlp_status fmlp_cu_copy2d(fmlp_ctx *ctx, void *dst, size_t dld, fmlp_device dst_dev, const void *src, size_t sld,
                           fmlp_device src_dev, size_t row_bytes, size_t rows);
fmlp_status fmlp_cu_synchronize(fmlp_ctx *ctx);
/* Page-locked host memory (fmlp_tensor_alloc_host); free takes plain host memory too. */
fmlp_status fmlp_cu_host_alloc(fmlp_ctx *ctx, size_t bytes, void **out);
void fmlp_cu_host_free(fmlp_ctx *ctx, void *p);
/* FMLP_OK when p is device (or managed) memory, aligned to an element of dt
 * when `element`; else a message naming `what`. */
fmlp_status fmlp_cu_check_device_ptr(fmlp_cu_state *st, const char *what, const void *p, fmlp_dtype dt, bool element);

/* ---- weights.c: upload and re-layout */

fmlp_status fmlp_cu_pack(fmlp_ctx *ctx, fmlp_dtype dtype, const void *w, const void *b, int64_t n, int64_t k,
                         bool gated_down, void **packed);
fmlp_status fmlp_cu_pack_glu(fmlp_ctx *ctx, fmlp_dtype dtype, const void *wg, const void *bg, const void *wu,
                             const void *bu, int64_t n, int64_t k, void **packed);
void fmlp_cu_unpack(fmlp_ctx *ctx, void *packed);

/* The one-kernel MLP's shape on this device, no tensors yet (mlp_one.cu
 * takes x NULL as an aligned x): what the plan, the name and the launch
 * all start from. */
static inline fmlp_cu_mlp_args fmlp_cu_mlp_shape(const fmlp_cu_state *st, fmlp_dtype dtype, fmlp_act act, int64_t rows,
                                                 int64_t dim, int64_t hidden, int64_t out)
{
    return (fmlp_cu_mlp_args){.dtype = dtype, .act = act, .m = rows, .dim = dim, .hidden = hidden, .out = out,
                              .ldx = dim, .sm_count = st->sm_count, .cc_major = st->cc_major,
                              .row_stream = st->row_stream, .slice = st->slice};
}

/* ---- dispatch.c: naming and launching planned kernels */

void fmlp_cu_name_kernel(fmlp_ctx *ctx, fmlp_dtype dtype, fmlp_kernel *k);
fmlp_status fmlp_cu_run(fmlp_ctx *ctx, fmlp_dtype dtype, const fmlp_kernel *k, const void *packed,
                        const fmlp_tensor *in0, const fmlp_tensor *in1, fmlp_tensor *out, int64_t external_id);

/* ---- policy.c: what this backend runs and what `auto` picks */

bool fmlp_cu_supports(fmlp_block block, fmlp_dtype dtype, fmlp_mode mode, char *why, size_t why_len);
bool fmlp_cu_one_kernel(fmlp_ctx *ctx, const fmlp_mlp_desc *d, int64_t rows, int64_t *ws_bytes);
fmlp_mode fmlp_cu_auto_mode(fmlp_ctx *ctx, fmlp_block block, fmlp_dtype dtype, int64_t rows, char *why,
                            size_t why_len);

/* ---- lt.c: cuBLASLt: out (m, n) = x (m, k) · wᵀ + bias, the way aten::addmm runs;
 * `tuned`: with the fastest of the heuristic's algorithms instead (fused plans). */
fmlp_status fmlp_cu_lt_init(fmlp_cu_state *st);
void fmlp_cu_lt_fini(fmlp_cu_state *st);
fmlp_status fmlp_cu_lt_gemm(fmlp_cu_state *st, cudaStream_t s, fmlp_dtype dt, int64_t m, int64_t n, int64_t k,
                            const void *x, int64_t ldx, const void *w, const void *bias, void *y, int64_t ldy,
                            bool tuned);
/* Which of n timed algorithms (µs each, the heuristic's order; < 0: failed)
 * a tuned GEMM keeps: the fastest, if it beats the heuristic's first by
 * the margin lt.c names; else the first. */
int fmlp_cu_lt_pick(const float *us, int n);
/* A cached problem of this shape, or NULL (for tests). */
const fmlp_cu_lt_plan *fmlp_cu_lt_find(fmlp_cu_state *st, int64_t m, int64_t n, int64_t k, bool tuned);
/* The plan's name for a cuBLASLt GEMM; `timed`: a tuned one, which may run another algorithm than eager's. */
const char *fmlp_cu_lt_name(fmlp_dtype dt, bool bias, bool timed);
/* Drops the cached problems that read weight `w` (before it is freed). */
void fmlp_cu_lt_forget(fmlp_cu_state *st, const void *w);

/* ---- graph.c: CUDA graphs (backend table entries) and their cache */
fmlp_status fmlp_cu_graph_launch(fmlp_ctx *ctx, const void *key, size_t key_bytes, int64_t external_id, bool *hit);
fmlp_status fmlp_cu_graph_begin(fmlp_ctx *ctx);
fmlp_status fmlp_cu_graph_end(fmlp_ctx *ctx, const void *key, size_t key_bytes, int64_t external_id);
void fmlp_cu_graph_clear(fmlp_cu_state *st);

/* ---- cupti.c: GPU activity (backend table entries) and the launch-side tagging */
fmlp_status fmlp_cu_prof_start(fmlp_ctx *ctx);
fmlp_status fmlp_cu_prof_stop(fmlp_ctx *ctx, struct fmlp_profiler *prof);
fmlp_status fmlp_cu_prof_discard(fmlp_ctx *ctx);
bool fmlp_cu_prof_active(void);
/* Whether kernels launch with PDL now: on for the context, and no profiler recording. */
bool fmlp_cu_pdl_now(const fmlp_cu_state *st);
/* Tags the runtime calls between push and pop, and the GPU work they start,
 * with the External id of the op that issues them (CUPTI's external
 * correlation); their own correlations stay CUPTI's. */
void fmlp_cu_prof_push(int64_t external_id);
void fmlp_cu_prof_pop(void);

#endif
