/*
 * fmlp — fused MLP inference with a built-in profiler.
 *
 * This is the library's one public header. Every handle is opaque; every
 * call that can fail returns an fmlp_status and, on failure, leaves a message
 * in fmlp_last_error() that names the bad value and says what to do. The
 * library never aborts or exits on bad input.
 *
 * Thread safety: an fmlp_ctx and fmlp_mlp may be shared between threads once
 * built. Concurrent fmlp_mlp_forward() calls on one MLP handle are safe and
 * give bit-identical results (each output element is computed by one thread
 * with one fixed summation order, whatever the thread count). Calls that
 * change an MLP (fmlp_mlp_set_weight, fmlp_mlp_init_random, loading) must not
 * run concurrently with forwards on that MLP. A profiler records the forwards
 * of the context it was created on, from any thread.
 *
 * Lifetimes: handles may be destroyed in any order. An MLP or profiler
 * keeps its context alive: fmlp_ctx_destroy gives up the caller's hold,
 * the MLPs and profilers made on it keep working, and the context is freed
 * with the last of them. fmlp_profiler_stop and fmlp_profiler_destroy may
 * run while other threads run forwards (or ranges) on the context: those
 * forwards finish normally; what they record after the stop is dropped,
 * and destroy waits (for at most the rest of one forward per thread) until
 * none of them still records into the profiler. Only the profiler calls
 * themselves (start, step, stop, destroy, the reports) must not run
 * concurrently with each other on one profiler.
 *
 * NULL: every function takes NULL where it expects a handle, an out
 * pointer or a FILE, and fails with FMLP_ERR_INVALID_ARGUMENT (getters give
 * the neutral value documented beside them; void calls do nothing).
 */
#ifndef FMLP_H
#define FMLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FMLP_VERSION "0.1.0"

/* ---------------------------------------------------------------- status */

typedef enum {
    FMLP_OK = 0,
    FMLP_ERR_INVALID_ARGUMENT, /* a value out of range, a NULL where data is needed */
    FMLP_ERR_SHAPE,            /* tensor shapes or strides that do not fit together */
    FMLP_ERR_OUT_OF_MEMORY,
    FMLP_ERR_IO,               /* a file could not be opened, read or written */
    FMLP_ERR_FORMAT,           /* a file is malformed */
    FMLP_ERR_UNSUPPORTED,      /* valid, but not available on this build or machine */
    FMLP_ERR_NO_DEVICE,        /* the requested device is absent */
    FMLP_ERR_DEVICE,           /* the device reported an error */
    FMLP_ERR_INTERNAL
} fmlp_status;

/* The message of the last failed call on this thread ("" if none). */
const char *fmlp_last_error(void);
const char *fmlp_status_name(fmlp_status s);

/* Writes `len` bytes to `path` whole or not at all, as fmlp writes every
 * file: into a temporary file beside it, each write checked, synced to disk
 * and renamed over it, so on any failure (a full disk) nothing is left
 * behind and a previous file is untouched. A symlink is written through:
 * its target is replaced and the link stays. A device or FIFO
 * (/dev/stdout) cannot be replaced and is written directly. */
fmlp_status fmlp_file_write(const char *path, const void *data, size_t len);

/* ------------------------------------------------------------ enumerations */

/* Each vocabulary is one table with a row per value, in value order:
 * X(ENUMERATOR, name, ...). The enum, its FMLP_<ENUM>_COUNT, the names that
 * fmlp_<enum>_name() prints and fmlp_<enum>_parse() reads, and whatever the
 * library keys by the value are all generated from the rows. Values are
 * part of the ABI: new rows go at the end. */

#define FMLP_DEVICE_TABLE(X) \
    X(FMLP_DEVICE_CPU, cpu)  \
    X(FMLP_DEVICE_CUDA, cuda)

/* X(ENUMERATOR, name, bytes per element) */
#define FMLP_DTYPE_TABLE(X) \
    X(FMLP_F32, f32, 4)     \
    X(FMLP_BF16, bf16, 2)   \
    X(FMLP_F16, f16, 2)

#define FMLP_MODE_TABLE(X)                                                      \
    X(FMLP_MODE_EAGER, eager)       /* one kernel per op */                     \
    X(FMLP_MODE_COMPILED, compiled) /* pointwise ops fused, GEMMs untouched */  \
    X(FMLP_MODE_FUSED, fused)       /* GLU / activation in the GEMM epilogue */ \
    X(FMLP_MODE_AUTO, auto)         /* the fastest of the above for the shape */

/* X(ENUMERATOR, name, glu, module):
 *   name    the activation's word in plans, kernel names and `--act`
 *   glu     the gated block that gates with it (GeGLU, SwiGLU, ...) as
 *           kernel names spell it
 *   module  the module op its kernels run under in profiles, fmlp::<module>
 *           (both GELUs are nn.GELU)
 * NONE is the identity; FMLP_ACT_FUNCTIONS are the rows after it. */
#define FMLP_ACT_TABLE(X) X(FMLP_ACT_NONE, none, bilinear, identity) FMLP_ACT_FUNCTIONS(X)
#define FMLP_ACT_FUNCTIONS(X)                                                  \
    X(FMLP_ACT_GELU, gelu, geglu_erf, gelu)       /* exact, erf-based */       \
    X(FMLP_ACT_GELU_TANH, gelu_tanh, geglu, gelu) /* tanh approximation */     \
    X(FMLP_ACT_SILU, silu, swiglu, silu)                                       \
    X(FMLP_ACT_RELU, relu, reglu, relu)                                        \
    X(FMLP_ACT_RELU2, relu2, relu2glu, relu2)     /* relu(x)^2 (Primer, Nemotron) */

#define FMLP_ENUMERATOR_(e, ...) e,
#define FMLP_COUNT_ROW_(e, ...) +1

typedef enum { FMLP_DEVICE_TABLE(FMLP_ENUMERATOR_) } fmlp_device;
typedef enum { FMLP_DTYPE_TABLE(FMLP_ENUMERATOR_) } fmlp_dtype;
typedef enum { FMLP_MODE_TABLE(FMLP_ENUMERATOR_) } fmlp_mode;
typedef enum { FMLP_ACT_TABLE(FMLP_ENUMERATOR_) } fmlp_act;

enum {
    FMLP_DEVICE_COUNT = 0 FMLP_DEVICE_TABLE(FMLP_COUNT_ROW_),
    FMLP_DTYPE_COUNT = 0 FMLP_DTYPE_TABLE(FMLP_COUNT_ROW_),
    FMLP_MODE_COUNT = 0 FMLP_MODE_TABLE(FMLP_COUNT_ROW_),
    FMLP_ACT_COUNT = 0 FMLP_ACT_TABLE(FMLP_COUNT_ROW_)
};

typedef enum {
    /* y = down(act(gate(x)) * up(x)); act GELU_TANH is GeGLU, SILU is SwiGLU */
    FMLP_BLOCK_GATED = 0,
    /* Linear, act, Linear, act, ..., Linear: nn.Sequential of `layers` Linears */
    FMLP_BLOCK_STACK = 1
} fmlp_block;

const char *fmlp_dtype_name(fmlp_dtype d);   /* "f32", "bf16", "f16" */
const char *fmlp_mode_name(fmlp_mode m);     /* "eager", ... */
const char *fmlp_act_name(fmlp_act a);       /* "none", "gelu", ... as FMLP_ACT_TABLE spells them */
const char *fmlp_device_name(fmlp_device d); /* "cpu", "cuda" */
/* Parse the names above; return false for an unknown name. */
bool fmlp_dtype_parse(const char *s, fmlp_dtype *out);
bool fmlp_mode_parse(const char *s, fmlp_mode *out);
bool fmlp_act_parse(const char *s, fmlp_act *out);
bool fmlp_device_parse(const char *s, fmlp_device *out);
size_t fmlp_dtype_size(fmlp_dtype d);
/* Converts n host elements between dtypes, rounding to nearest even. */
void fmlp_convert_buffer(fmlp_dtype dst_dtype, void *dst, fmlp_dtype src_dtype, const void *src, int64_t n);
/* Writes `value` (an amount or a rate in base units: "FLOP", "FLOP/s", "B",
 * "B/s") with the SI prefix (k, M, G, T, P) that puts it in [1, 1000), to
 * four significant digits: 5.48104e13, "FLOP/s" -> "54.81 TFLOP/s",
 * 4.255e12, "B/s" -> "4.255 TB/s". Returns buf. */
const char *fmlp_si_format(double value, const char *unit, char *buf, size_t len);

/* Checked arithmetic for sizes, counts and FLOPs: a * b and a + b into
 * *out, or false (and *out untouched) when the result does not fit int64.
 * The library computes every size, count and FLOP total with these and
 * fails with a message instead of wrapping; a program sizing buffers from
 * its users' numbers can do the same. */
bool fmlp_mul_i64(int64_t a, int64_t b, int64_t *out);
bool fmlp_add_i64(int64_t a, int64_t b, int64_t *out);

/* ----------------------------------------------------------------- context */

typedef struct fmlp_ctx fmlp_ctx;

typedef struct {
    fmlp_device device; /* default CPU */
    int device_index;   /* CUDA ordinal */
    int threads;        /* CPU worker threads; 0 = one per core */
    /* CPU code path: NULL or "" = best available; else one of the names that
     * fmlp_cpu_paths() lists ("scalar", "avx2", "avx512", "avx512bf16", "amx").
     * The environment variable FMLP_CPU_PATH overrides it. */
    const char *cpu_path;
} fmlp_ctx_options;

/* Options with every field at its default. */
fmlp_ctx_options fmlp_ctx_options_default(void);
fmlp_status fmlp_ctx_create(const fmlp_ctx_options *opt, fmlp_ctx **out);
/* Gives up the caller's hold on the context; do not use ctx after it. MLPs
 * and profilers made on it keep it alive until the last of them is
 * destroyed (see "Lifetimes" above). Free the tensors allocated on it
 * (fmlp_tensor_alloc) first. */
void fmlp_ctx_destroy(fmlp_ctx *ctx);
/* CPU worker threads; 0 for NULL or a device context. */
int fmlp_ctx_threads(const fmlp_ctx *ctx);
/* FMLP_DEVICE_CPU for NULL. */
fmlp_device fmlp_ctx_device(const fmlp_ctx *ctx);
/* The CPU code path the context runs for `dtype`, e.g. "avx512bf16";
 * "none" for NULL or a device context. */
const char *fmlp_ctx_cpu_path(const fmlp_ctx *ctx, fmlp_dtype dtype);

/* Every CPU code path compiled in, and whether this machine can run it. */
typedef struct {
    const char *name;
    bool available;
    const char *why_not; /* "" when available */
} fmlp_cpu_path_info;
int fmlp_cpu_paths(fmlp_cpu_path_info *out, int cap);

/* A human-readable report of the machine, features, paths and backends. */
void fmlp_print_info(FILE *f);
/* Number of CUDA devices (0 when the backend is absent or finds none). */
int fmlp_cuda_device_count(void);

/* ----------------------------------------------------------------- tensors */

/* A 2-D view: rows × cols elements of `dtype`, row r starting at element
 * r * ld.
 *
 * Inputs of higher rank, as PyTorch passes them to nn.Linear, are viewed
 * with their leading dims folded into rows: a contiguous x of shape
 * (batch, seq, dim) is fmlp_tensor_view(x, dt, batch * seq, dim, dim), row
 * b * seq + s holding x[b, s, :]. The forward writes y as (batch * seq,
 * out_dim) in the same row order, which is exactly the contiguous
 * (batch, seq, out_dim) tensor PyTorch returns: unfold it by keeping x's
 * leading dims and replacing the last with out_dim (fmlp_st_shape reads a
 * file tensor's full shape; fmlp_st_write writes y back in it). */
typedef struct {
    void *data;
    fmlp_dtype dtype;
    fmlp_device device;
    int64_t rows, cols;
    int64_t ld; /* row stride in elements, >= cols */
} fmlp_tensor;

fmlp_tensor fmlp_tensor_view(void *data, fmlp_dtype dtype, int64_t rows, int64_t cols, int64_t ld);

/* Device memory for tensors on the context's device (plain host memory on the
 * CPU). Steady-state forwards allocate nothing. */
fmlp_status fmlp_tensor_alloc(fmlp_ctx *ctx, fmlp_dtype dtype, int64_t rows, int64_t cols, fmlp_tensor *out);
/* Host memory for tensors that cross to and from the context's device:
 * page-locked (pinned) on a CUDA context, so copies run at the link's full
 * speed; plain host memory on the CPU. The tensor is a host tensor (device
 * FMLP_DEVICE_CPU). Pinning is slow: allocate once, reuse. */
fmlp_status fmlp_tensor_alloc_host(fmlp_ctx *ctx, fmlp_dtype dtype, int64_t rows, int64_t cols, fmlp_tensor *out);
/* Frees what fmlp_tensor_alloc or fmlp_tensor_alloc_host gave. */
void fmlp_tensor_free(fmlp_ctx *ctx, fmlp_tensor *t);
/* Copy between any two tensors of one shape and dtype (host or device). */
fmlp_status fmlp_tensor_copy(fmlp_ctx *ctx, fmlp_tensor *dst, const fmlp_tensor *src);

/* -------------------------------------------------------------------- MLPs */

typedef struct fmlp_mlp fmlp_mlp;

typedef struct {
    fmlp_block block;
    int64_t dim;     /* input features */
    int64_t hidden;  /* hidden width */
    int64_t out_dim; /* output features; 0 means dim */
    int layers;      /* STACK: number of Linear layers, 1..32; GATED: ignored */
    fmlp_act act;
    bool bias;
    fmlp_dtype dtype; /* storage dtype of weights and activations */
} fmlp_mlp_desc;

#define FMLP_MAX_LAYERS 32

/* Creates an MLP with weights drawn from `seed` (PyTorch's default Linear
 * init scale: uniform(-1/sqrt(in), 1/sqrt(in)) for weights and biases).
 * The weights are made at their first use (a forward, get or set weight,
 * load, save, reference), so creating an MLP and planning it allocates
 * nothing large; running out of memory for them is reported by that first
 * use, which then leaves the MLP as it was. */
fmlp_status fmlp_mlp_create(fmlp_ctx *ctx, const fmlp_mlp_desc *desc, uint64_t seed, fmlp_mlp **out);
void fmlp_mlp_destroy(fmlp_mlp *mlp);
/* NULL for NULL. */
const fmlp_mlp_desc *fmlp_mlp_get_desc(const fmlp_mlp *mlp);
/* 0 for NULL. */
int64_t fmlp_mlp_out_dim(const fmlp_mlp *mlp);

/* Names as PyTorch's state_dict() writes them: gated "gate_proj.weight",
 * "up_proj.weight", "down_proj.weight" (+ ".bias"); stacks "0.weight",
 * "0.bias", "2.weight", ... Weights are (out_features, in_features). */
int fmlp_mlp_tensor_count(const fmlp_mlp *mlp); /* 0 for NULL */
/* Name and shape of tensor i (cols = 1 for a bias, which has rows entries). */
fmlp_status fmlp_mlp_tensor_info(const fmlp_mlp *mlp, int i, const char **name, int64_t *rows, int64_t *cols);
/* Sets one tensor from host data of any dtype (converted to the MLP's). */
fmlp_status fmlp_mlp_set_weight(fmlp_mlp *mlp, const char *name, fmlp_dtype src_dtype, const void *data,
                                int64_t rows, int64_t cols);
/* Reads one tensor back in f32 into `out` (rows*cols floats). */
fmlp_status fmlp_mlp_get_weight(const fmlp_mlp *mlp, const char *name, float *out, int64_t rows, int64_t cols);

/* Loads every tensor of the MLP from a safetensors file, names prefixed by
 * `prefix` (NULL or "" for none; e.g. "model.layers.0.mlp."). */
fmlp_status fmlp_mlp_load_safetensors(fmlp_mlp *mlp, const char *path, const char *prefix);
fmlp_status fmlp_mlp_save_safetensors(const fmlp_mlp *mlp, const char *path, const char *prefix);
/* Fills in the shape fields of `desc` (block, dim, hidden, out_dim, layers,
 * bias) from the tensors a file holds under `prefix`; act and dtype are kept. */
fmlp_status fmlp_mlp_desc_from_safetensors(const char *path, const char *prefix, fmlp_mlp_desc *desc);

/* Tensor parallelism (Megatron-LM's split): rank `rank` of `world` holds
 * hidden features [begin, begin + count) of the MLP, as even as the width
 * allows (the first hidden % world ranks one more). Fails naming the value
 * for world < 1, a rank outside 0..world-1, or fewer features than ranks. */
fmlp_status fmlp_shard_range(int64_t hidden, int rank, int world, int64_t *begin, int64_t *count);
/* A new MLP on `ctx` holding rank `rank`'s slice of `full`: gate and up (a
 * stack's first layer) column-parallel over its hidden features, down (the
 * second layer) row-parallel over the same features, the down bias on rank
 * 0 only. Its forward gives that rank's partial y; the ranks' partial ys
 * add up to full's y (one all-reduce). Gated blocks and 2-layer stacks. */
fmlp_status fmlp_mlp_shard(const fmlp_mlp *full, fmlp_ctx *ctx, int rank, int world, fmlp_mlp **out);

/* One MLP across several GPUs over NCCL: each rank holds its shard
 * (fmlp_mlp_shard) on its own CUDA context, runs the shard's forward there,
 * and y is summed over the ranks by one NCCL all-reduce on that context's
 * stream. NCCL is the only engine: fmlp launches no collective of its own.
 * A build without NCCL keeps these calls; they fail with
 * FMLP_ERR_UNSUPPORTED saying how to get it (fmlp_tp_available). */
#define FMLP_TP_ID_BYTES 128
/* What ranks share to find each other (NCCL's unique id), made by one rank
 * and passed to the others by the caller (a file, MPI, a socket). */
typedef struct {
    unsigned char bytes[FMLP_TP_ID_BYTES];
} fmlp_tp_id;
/* One rank's membership of a communicator, bound to one CUDA context. */
typedef struct fmlp_tp fmlp_tp;

/* Whether this build has NCCL; *version gets NCCL's version code (e.g.
 * 22809 for 2.28.9) when non-NULL and it has. */
bool fmlp_tp_available(int *version);
fmlp_status fmlp_tp_unique_id(fmlp_tp_id *out);
/* One process per GPU: rank `rank` of `world` joins with the id every rank
 * was given (blocks until all `world` ranks have joined). */
fmlp_status fmlp_tp_init_rank(fmlp_ctx *ctx, const fmlp_tp_id *id, int rank, int world, fmlp_tp **out);
/* One process driving `world` GPUs: ctxs[r] is rank r's CUDA context (one
 * device each); out[r] gets rank r. */
fmlp_status fmlp_tp_init_all(fmlp_ctx *const *ctxs, int world, fmlp_tp **out);
/* Wraps the caller's own ncclComm_t (not destroyed by fmlp_tp_destroy). */
fmlp_status fmlp_tp_wrap(fmlp_ctx *ctx, void *nccl_comm, fmlp_tp **out);
int fmlp_tp_rank(const fmlp_tp *tp);  /* -1 for NULL */
int fmlp_tp_world(const fmlp_tp *tp); /* 0 for NULL */
/* y, a contiguous device tensor on the rank's context, summed over the
 * ranks in place (every rank passes a y of the same shape and dtype). */
fmlp_status fmlp_tp_all_reduce(fmlp_tp *tp, fmlp_tensor *y);
/* This rank's forward: the shard's forward into y, then the all-reduce,
 * whole or in chunks overlapping the down GEMM (fmlp_tp_set_chunks; a
 * chunked forward launches its kernels directly, never from a CUDA
 * graph). Like fmlp_mlp_forward it returns once the work is queued on the
 * context's stream. */
fmlp_status fmlp_tp_forward(fmlp_tp *tp, fmlp_mlp *shard, fmlp_mode mode, const fmlp_tensor *x, fmlp_tensor *y);
/* Every rank of a one-process communicator (fmlp_tp_init_all): the
 * shards' forwards, then the all-reduces, each chunk's over all ranks as
 * one NCCL group; every rank must use the same chunk count. */
fmlp_status fmlp_tp_forward_all(fmlp_tp *const *tps, fmlp_mlp *const *shards, fmlp_mode mode, const fmlp_tensor *xs,
                                fmlp_tensor *ys, int world);
/* Overlap: a rank's forward may cut its down GEMM (a stack's second
 * layer) into row chunks and all-reduce each chunk of y on a second
 * stream while the next chunk is computed. `chunks` 0 (the default) lets
 * the rule of docs/tensor_parallel.md choose from y's shape, 1 never
 * cuts, 2..FMLP_TP_MAX_CHUNKS cut that many (at most one per row). The
 * environment variable FMLP_TP_CHUNKS, read when a rank joins, overrides
 * it. Every rank of a communicator must use the same count, as each
 * chunk is an all-reduce of its own; the rule reads only what all ranks
 * share (y's shape and dtype, the world size). */
#define FMLP_TP_MAX_CHUNKS 64
fmlp_status fmlp_tp_set_chunks(fmlp_tp *tp, int chunks);

/* Ends the communicator at once (a rank gone, a hang); later calls on it
 * fail saying so. Destroy still frees it. */
fmlp_status fmlp_tp_abort(fmlp_tp *tp);
void fmlp_tp_destroy(fmlp_tp *tp);

/* ----------------------------------------------------------- safetensors */

/* Reading and writing plain tensors (CLI --input/--output, tests). */
typedef struct fmlp_st_file fmlp_st_file;
fmlp_status fmlp_st_open(const char *path, fmlp_st_file **out);
void fmlp_st_close(fmlp_st_file *f);
int fmlp_st_count(const fmlp_st_file *f);            /* 0 for NULL */
const char *fmlp_st_name(const fmlp_st_file *f, int i); /* NULL for NULL or i out of range */
/* Finds a tensor and reports it as rows × cols: cols is the last dimension
 * and rows the product of the others (rank 1: (n, 1); rank 0: (1, 1); rank 3
 * (b, s, d): rows = b*s). Any output may be NULL. The data pointer is the
 * mapped file's and may be unaligned; fmlp_st_read copes with that. */
fmlp_status fmlp_st_find(const fmlp_st_file *f, const char *name, fmlp_dtype *dtype, int64_t *rows, int64_t *cols,
                         const void **data);
/* Files hold tensors of at most this rank. */
#define FMLP_ST_MAX_RANK 16
/* The full shape of a tensor (any dtype): its rank, and its dims in
 * shape[0 .. rank) (nothing written for rank 0). FMLP_ERR_SHAPE when `cap`
 * is less than the rank, FMLP_ERR_INVALID_ARGUMENT when there is no such
 * tensor. */
fmlp_status fmlp_st_shape(const fmlp_st_file *f, const char *name, int *rank, int64_t *shape, int cap);
/* Reads a tensor converted to `dtype` into caller memory of rows*cols. */
fmlp_status fmlp_st_read(const fmlp_st_file *f, const char *name, fmlp_dtype dtype, void *out, int64_t rows,
                         int64_t cols);

typedef struct {
    const char *name;
    fmlp_dtype dtype;
    int rank;         /* 1..3 */
    int64_t shape[3];
    const void *data; /* contiguous */
} fmlp_st_tensor;
fmlp_status fmlp_st_write(const char *path, const fmlp_st_tensor *tensors, int n);

/* ------------------------------------------------------------------- plans */

#define FMLP_MAX_PLAN_KERNELS 72

typedef struct {
    char name[96];  /* e.g. "cpu_gemm_bf16_avx512bf16_geglu" */
    char op[32];    /* the op it implements: "linear", "gelu_tanh", "mul", "linear+geglu" ... */
    int64_t m, n, k; /* GEMM shape (k = 0 for pointwise kernels) */
    int64_t flops;
    int64_t bytes;  /* minimum bytes moved */
} fmlp_kernel_info;

typedef struct {
    fmlp_mode mode;      /* the mode asked for */
    fmlp_mode resolved;  /* the mode that runs (differs from mode for AUTO) */
    fmlp_device device;
    fmlp_dtype dtype;
    int64_t rows;
    bool graph;          /* CUDA: replayed as a CUDA graph */
    char why[128];       /* AUTO: why `resolved` was picked */
    int n_kernels;
    fmlp_kernel_info kernels[FMLP_MAX_PLAN_KERNELS];
    int64_t flops, bytes; /* totals */
} fmlp_plan_info;

/* The kernels `mode` will run for `rows` input rows, known before running. */
fmlp_status fmlp_mlp_plan(const fmlp_mlp *mlp, fmlp_mode mode, int64_t rows, fmlp_plan_info *out);
void fmlp_plan_print(const fmlp_plan_info *plan, FILE *f); /* nothing for NULL */

/* Tensor parallelism (fmlp_tp_* above): what a rank's forward of `rows`
 * runs: the shard's plan, then the all-reduce of y, in chunks that
 * overlap the down GEMM or after it. */
typedef struct {
    int rank, world;
    int64_t hidden;       /* the shard's hidden features */
    int chunks;           /* all-reduces of y, one per row chunk (1: all of y after the forward) */
    int64_t chunk_rows;   /* rows of the largest chunk */
    bool overlapped;      /* chunks > 1 and the down GEMM runs chunk by chunk, each chunk's
                             all-reduce on the rank's second stream while the next is computed */
    int64_t reduce_bytes; /* y's bytes: what each rank sends and receives, summed over the ranks */
    char why[160];        /* how the chunk count came about, and why there is no overlap if none */
    fmlp_plan_info plan;  /* the shard's forward */
} fmlp_tp_plan_info;
fmlp_status fmlp_tp_plan(const fmlp_tp *tp, const fmlp_mlp *shard, fmlp_mode mode, int64_t rows,
                         fmlp_tp_plan_info *out);
void fmlp_tp_plan_print(const fmlp_tp_plan_info *plan, FILE *f); /* nothing for NULL */

/* ----------------------------------------------------------------- forward */

/* y = mlp(x). x: (rows, dim), y: (rows, out_dim), both in the MLP's dtype and
 * on the context's device. Any row strides; x and y must not overlap. On a
 * CUDA context with device tensors the call returns once the work is queued
 * (fmlp_ctx_synchronize waits for it). Host tensors on a CUDA context are
 * copied in and out within the call, which then waits for the device; such
 * copies usually cost more than the forward itself, so keep x and y on the
 * device (fmlp_tensor_alloc) and copy only what must cross, from pinned
 * memory (fmlp_tensor_alloc_host). A (batch, seq, dim) input: see
 * fmlp_tensor. */
fmlp_status fmlp_mlp_forward(fmlp_mlp *mlp, fmlp_mode mode, const fmlp_tensor *x, fmlp_tensor *y);

/* CUDA: capture forwards into a CUDA graph per (mode, rows) and replay it. */
fmlp_status fmlp_mlp_set_graph(fmlp_mlp *mlp, bool on);

/* Waits for all device work of the context (no-op on the CPU). */
fmlp_status fmlp_ctx_synchronize(fmlp_ctx *ctx);

/* CUDA: the stream forwards go to. After fmlp_ctx_set_stream(ctx, s), the
 * forwards the calling thread runs on ctx are enqueued on `s` (a
 * cudaStream_t of the context's device, e.g. PyTorch's current stream), in
 * order with the caller's other work there, and nothing waits for them to
 * finish; NULL restores the context's own stream (for the legacy default
 * stream, pass cudaStreamLegacy, (void *)1). The setting belongs to the
 * calling thread, like PyTorch's current stream: other threads keep theirs.
 * While the caller captures `s` into a CUDA graph of its own, forwards start
 * no fmlp graph capture (fmlp_mlp_set_graph is ignored) and never
 * synchronize: their kernels land in the caller's graph. Such a graph uses
 * the context's workspace, so replay it in order with the context's other
 * forwards (on the stream it was captured from), and capture only with
 * device tensors. A CPU context accepts NULL as a no-op and refuses a
 * stream with FMLP_ERR_UNSUPPORTED. */
fmlp_status fmlp_ctx_set_stream(fmlp_ctx *ctx, void *stream);
/* The stream the calling thread's forwards on ctx go to (the one set, else
 * the context's own); NULL on the CPU. */
fmlp_status fmlp_ctx_get_stream(fmlp_ctx *ctx, void **stream);

/* The double-precision reference of the whole block on host data, rounding
 * inputs and weights as stored. x: (rows, dim) f64, y: (rows, out_dim) f64. */
fmlp_status fmlp_mlp_reference(const fmlp_mlp *mlp, const double *x, int64_t rows, double *y);

/* -------------------------------------------------------------- profiler */

typedef struct fmlp_profiler fmlp_profiler;

typedef enum { FMLP_ACTIVITY_CPU = 1, FMLP_ACTIVITY_CUDA = 2 } fmlp_activity;

typedef struct {
    int activities;     /* FMLP_ACTIVITY_* bits; 0 = CPU, plus CUDA on a CUDA context */
    bool record_shapes;
    bool profile_memory;
    bool with_flops;
    /* Schedule, with torch.profiler.schedule's semantics; all 0 = record
     * every step from start to stop as one active span. */
    int skip_first, wait, warmup, active, repeat;
    /* Called when an active window closes; the trace of that window can be
     * exported from within the callback. */
    void (*on_trace_ready)(fmlp_profiler *prof, void *user);
    void *user;
    /* Tensor parallelism: this process's rank of world_size (0: one process,
     * no collectives), written as the trace's distributedInfo with backend
     * (NULL: "nccl" when world_size > 0), one trace per rank, as Holistic
     * Trace Analysis reads a folder of them. fmlp_tp_rank/fmlp_tp_world
     * give the values. */
    int rank, world_size;
    const char *dist_backend;
} fmlp_profiler_options;

fmlp_profiler_options fmlp_profiler_options_default(void);
fmlp_status fmlp_profiler_create(fmlp_ctx *ctx, const fmlp_profiler_options *opt, fmlp_profiler **out);
void fmlp_profiler_destroy(fmlp_profiler *prof);
fmlp_status fmlp_profiler_start(fmlp_profiler *prof);
fmlp_status fmlp_profiler_stop(fmlp_profiler *prof);
/* Ends one step (ProfilerStep#N) and advances the schedule. */
fmlp_status fmlp_profiler_step(fmlp_profiler *prof);
/* User ranges, like torch.profiler.record_function. */
void fmlp_range_push(fmlp_ctx *ctx, const char *name);
void fmlp_range_pop(fmlp_ctx *ctx);

typedef struct {
    const char *sort_by; /* a column: "self_cpu_time_total", "cpu_time_total",
                            "self_cuda_time_total", "cuda_time_total", "count",
                            "flops"; NULL = "self_cpu_time_total" (or cuda when present) */
    int row_limit;       /* 0 or less = all */
    bool analyses;       /* print the analyses after the table */
} fmlp_table_options;

fmlp_table_options fmlp_table_options_default(void);
/* Whether `sort_by` names a column fmlp_table_options.sort_by takes (NULL
 * and "" do: the default), for checking a flag before any work. */
bool fmlp_table_sort_key_valid(const char *sort_by);
fmlp_status fmlp_profiler_table(fmlp_profiler *prof, const fmlp_table_options *opt, FILE *f);
/* Returns a malloc'd string; free with free(). */
fmlp_status fmlp_profiler_table_string(fmlp_profiler *prof, const fmlp_table_options *opt, char **out);
/* Writes a Chrome/Kineto trace; gzip when the path ends in ".gz". */
fmlp_status fmlp_profiler_export_trace(fmlp_profiler *prof, const char *path);

/* The verdict of the last completed window: per step, where the time went.
 * wall = kernel + copy + overhead + idle: kernel time is the union of the
 * kernels (memcpy and memset are not kernels); copy time is what copies,
 * memsets and the calls that issue them add on top (a pageable host copy
 * keeps its runtime call busy while it runs); overhead is the rest of the
 * time inside ops and runtime calls (launching); idle is outside them. */
typedef enum {
    FMLP_BOUND_OVERHEAD = 0, /* launches and dispatch: kernels busy less than half the step */
    FMLP_BOUND_MEMORY = 1,
    FMLP_BOUND_COMPUTE = 2,
    FMLP_BOUND_COPY = 3 /* host<->device (or device) copies take the largest share of the step */
} fmlp_bound;
typedef struct {
    int steps;
    double wall_us, kernel_us, overhead_us, idle_us; /* per step: the median step's (3+ steps), else averaged */
    int kernels_per_step; /* kernel activities: each GPU kernel, each CPU parallel region (one correlation, all its lanes) */
    int copies_per_step;  /* GPU memcpy/memset (host tensors, library memsets), not counted as kernels */
    fmlp_bound bound;
    char reason[256];
    double copy_us;    /* per step, as above */
    double copy_bytes; /* per step: bytes the copies and memsets moved */
} fmlp_profile_summary;
fmlp_status fmlp_profiler_summary(fmlp_profiler *prof, fmlp_profile_summary *out);

/* Machine ceilings for the verdicts, measured once by `fmlp info --ceilings`
 * and cached (FMLP_CEILINGS_FILE, or ~/.cache/fmlp/ceilings.json). A context
 * reads the cache at its first fmlp_ceilings_get and keeps what it found
 * (fmlp_ceilings_measure on it replaces that); its profilers' verdicts use
 * the context's numbers. A cache written later is seen by new contexts. A
 * cache path that is not a regular file (a FIFO, a directory) is never
 * opened: the calls fail with FMLP_ERR_IO.
 * On a CUDA context whose GPU figures were not measured, they come from the
 * device's properties instead: SMs x SM clock x dense bf16 tensor FLOP per
 * clock per SM of its architecture, and memory clock x bus width x 2 (the
 * datasheet peaks; gpu_from_device says so, and gpu_launch_us stays 0). */
typedef struct {
    double gemm_gflops_f32, gemm_gflops_bf16; /* CPU */
    double mem_gbps;                          /* CPU */
    double gpu_gemm_tflops_bf16, gpu_mem_gbps, gpu_launch_us;
    bool measured;        /* the CPU figures (and GPU ones unless gpu_from_device) were measured */
    bool gpu_from_device; /* the GPU figures are the device's peaks from its properties */
} fmlp_ceilings;
fmlp_status fmlp_ceilings_get(fmlp_ctx *ctx, bool measure_if_missing, fmlp_ceilings *out);
fmlp_status fmlp_ceilings_measure(fmlp_ctx *ctx, fmlp_ceilings *out);

/* ----------------------------------------------------------- trace files */

/* Traces read back: a file fmlp or torch.profiler wrote (Kineto JSON, or the
 * legacy autograd-profiler array; either one gzip'd as .json.gz) gives the
 * same table, analyses, verdict and timeline a live run gives. These are the
 * calls `fmlp trace summarize|diff|render` makes, open to any program. They
 * are a section of this header rather than a header of their own because
 * they speak in its types (fmlp_status, fmlp_table_options,
 * fmlp_profile_summary, fmlp_bound) and the library keeps one public header.
 * An open trace may be read from several threads at once; its analysis is
 * made at the first call that needs it. */
typedef struct fmlp_trace fmlp_trace;

/* Reads a trace file; a gzip'd one is recognised by its content, whatever
 * its name, when fmlp was built with zlib. The file is streamed once, never
 * held: only regular files are read (a FIFO, a device or a directory fails
 * with FMLP_ERR_IO), a damaged .gz says how, and a file past one of the
 * reader's limits (bytes, events, string length, nesting, names, memory:
 * FMLP_TRACE_MAX_BYTES ... FMLP_TRACE_MAX_MEMORY, see docs/profiler.md)
 * fails with FMLP_ERR_UNSUPPORTED naming the limit. */
fmlp_status fmlp_trace_open(const char *path, fmlp_trace **out);
/* The same from `len` bytes in memory; `name` stands for the path in
 * messages and output. */
fmlp_status fmlp_trace_parse(const char *text, size_t len, const char *name, fmlp_trace **out);
void fmlp_trace_close(fmlp_trace *trace);

/* Lanes are counted up to this many; a trace at the limit may have more. */
#define FMLP_TRACE_MAX_LANES 256

typedef struct {
    const char *path;   /* as opened (the name given to fmlp_trace_parse) */
    const char *origin; /* the writer: "fmlp" or "torch.profiler" */
    size_t spans;       /* events with a duration: everything but memory instants */
    int lanes;          /* distinct (pid, tid) lanes, at most FMLP_TRACE_MAX_LANES */
    int steps;          /* ProfilerStep#N spans */
    /* distributedInfo: the rank of world_size that wrote it (world_size 0:
     * none given, or one process) and the collectives' backend ("none"). */
    int rank, world_size;
    const char *dist_backend;
} fmlp_trace_info;
/* Strings stay valid until the trace is closed. */
fmlp_status fmlp_trace_get_info(const fmlp_trace *trace, fmlp_trace_info *out);

/* One ProfilerStep#N span and where its wall time went. */
typedef struct {
    const char *name;         /* "ProfilerStep#N", valid until the trace is closed */
    int number;               /* N */
    int64_t start_ns, end_ns; /* on the trace's clock */
    double wall_us, kernel_us, overhead_us, idle_us;
    int kernels; /* kernel activities (each GPU kernel, each CPU parallel region); copies apart */
    int copies;  /* GPU memcpy and memset activities */
    fmlp_bound bound;
    char reason[256];
    double copy_us, copy_bytes; /* as in fmlp_profile_summary */
} fmlp_trace_step;
/* Step i (0 <= i < info.steps), in start order. */
fmlp_status fmlp_trace_step_info(fmlp_trace *trace, int i, fmlp_trace_step *out);

/* Communication against computation on the GPU, over step i (-1: the whole
 * trace): the time some collective kernel (NCCL's, named "nccl...") runs,
 * the time some other kernel runs, and the time both do at once (the
 * all-reduce hidden under computation). Unions over all device lanes. */
typedef struct {
    double comm_us, compute_us, overlap_us;
    int comm_kernels, compute_kernels;
} fmlp_trace_comm;
fmlp_status fmlp_trace_comm_info(fmlp_trace *trace, int i, fmlp_trace_comm *out);

/* The verdict over all steps (or the whole trace when it has none), as
 * fmlp_profiler_summary gives it for a live window: kernels per step, the
 * time split, bound and reason. */
fmlp_status fmlp_trace_summary(fmlp_trace *trace, fmlp_profile_summary *out);

/* What `fmlp trace summarize` prints: "trace PATH: written by ORIGIN, N
 * spans on L lanes", a blank line, then the table of fmlp_profiler_table
 * (FLOPs columns included when the trace has FLOPs) under `opt`; the CLI
 * passes analyses = true. NULL opt = fmlp_table_options_default(). The
 * string is malloc'd; free it with free(). */
fmlp_status fmlp_trace_summary_string(const fmlp_trace *trace, const fmlp_table_options *opt, char **out);
fmlp_status fmlp_trace_summary_print(const fmlp_trace *trace, const fmlp_table_options *opt, FILE *f);

#define FMLP_TRACE_DIFF_MAX 4
/* What `fmlp trace diff` prints: 2..FMLP_TRACE_DIFF_MAX traces side by side
 * (columns named by file name), kernels per step and the time split per step
 * with each change against the first trace, the verdicts, then time per step
 * by kernel name. Fails when a trace holds no spans. */
fmlp_status fmlp_trace_diff_string(fmlp_trace *const *traces, int n, char **out);
fmlp_status fmlp_trace_diff_print(fmlp_trace *const *traces, int n, FILE *f);

typedef struct {
    const char *title; /* first line above the timeline; NULL = the trace's path */
    int step;          /* draw only ProfilerStep#step; -1 = the whole trace */
    int width;         /* pixels, 400..100000; 0 = 1600 */
} fmlp_svg_options;
/* title NULL, step -1, width 0. */
fmlp_svg_options fmlp_svg_options_default(void);
/* What `fmlp trace render` draws, written to `path` as one standalone SVG: a
 * lane per CPU thread and GPU stream, nested spans, launch-to-kernel arrows.
 * NULL opt = fmlp_svg_options_default(). */
fmlp_status fmlp_trace_render_svg(const fmlp_trace *trace, const fmlp_svg_options *opt, const char *path);

#ifdef __cplusplus
}
#endif
#endif
