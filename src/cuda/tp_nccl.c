/* Why: tensor parallelism sums each rank's partial y over the GPUs, and
 * NCCL is the engine that does it at the links' speed; this file and
 * tp_overlap.c are the only ones that speak NCCL. A rank is bound to one
 * CUDA context: its collectives go on the stream that context's forwards
 * use on the calling thread, so they follow the shard's forward in order
 * with no host sync. This file joins ranks and all-reduces y whole; a
 * forward whose y is cut into chunks goes to tp_overlap.c. Built only when
 * CMake found NCCL (core/no_tp.c stands in otherwise). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "cuda/tp_internal.h"
#include "plan/tp_chunks.h"

_Static_assert(sizeof(ncclUniqueId) == FMLP_TP_ID_BYTES, "fmlp_tp_id must hold an ncclUniqueId");

fmlp_status fmlp_cu_tp_nccl_fail(ncclResult_t r, ncclComm_t comm, const char *what)
{
    const char *last = comm ? ncclGetLastError(comm) : NULL;
    return fmlp_fail(FMLP_ERR_DEVICE, "%s failed: %s%s%s", what, ncclGetErrorString(r), last && *last ? ": " : "",
                     last && *last ? last : "");
}

bool fmlp_tp_available(int *version)
{
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) return false;
    if (version) *version = v;
    return true;
}

fmlp_status fmlp_tp_unique_id(fmlp_tp_id *out)
{
    if (!out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tp_unique_id: out must not be NULL");
    ncclUniqueId id;
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) return fmlp_cu_tp_nccl_fail(r, NULL, "ncclGetUniqueId");
    memcpy(out->bytes, &id, sizeof id);
    return FMLP_OK;
}

/* The rank's context must be a CUDA one; its device becomes current. */
static fmlp_status cuda_ctx(fmlp_ctx *ctx, const char *what)
{
    if (!ctx) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s: the context must not be NULL", what);
    if (ctx->device != FMLP_DEVICE_CUDA)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "%s: tensor parallelism runs on CUDA contexts; this one is %s (create it with device cuda)", what,
                         fmlp_device_name(ctx->device));
    cudaError_t e = cudaSetDevice(fmlp_cu_state_of(ctx)->device);
    return e == cudaSuccess ? FMLP_OK : fmlp_cu_fail(e, "cudaSetDevice");
}

static fmlp_status check_rank(int rank, int world, const char *what)
{
    if (world < 1)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s: world size %d; it must be at least 1", what, world);
    if (rank < 0 || rank >= world)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s: rank %d is outside 0..%d (world size %d)", what, rank, world - 1,
                         world);
    return FMLP_OK;
}

/* `env` is FMLP_TP_CHUNKS as fmlp_tp_chunks_env read it, before the join
 * (a bad value fails before any rank waits for the others). */
static fmlp_status wrap(fmlp_ctx *ctx, ncclComm_t comm, bool owned, int env, fmlp_tp **out)
{
    int rank = -1, world = 0;
    ncclResult_t r = ncclCommUserRank(comm, &rank);
    if (r == ncclSuccess) r = ncclCommCount(comm, &world);
    if (r != ncclSuccess) return fmlp_cu_tp_nccl_fail(r, comm, "reading the communicator's rank and size");
    fmlp_tp *tp = fmlp_calloc(1, sizeof *tp);
    if (!tp) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of host memory for a tensor-parallel rank");
    fmlp_ctx_ref(ctx);
    *tp = (fmlp_tp){.ctx = ctx, .comm = comm, .rank = rank, .world = world, .owned = owned,
                    .chunks = env > 0 ? env : 0, .chunks_env = env >= 0};
    *out = tp;
    return FMLP_OK;
}

fmlp_status fmlp_tp_init_rank(fmlp_ctx *ctx, const fmlp_tp_id *id, int rank, int world, fmlp_tp **out)
{
    if (!out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tp_init_rank: out must not be NULL");
    *out = NULL;
    if (!id) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tp_init_rank: id must not be NULL (fmlp_tp_unique_id)");
    int env;
    fmlp_status s = check_rank(rank, world, "fmlp_tp_init_rank");
    if (s == FMLP_OK) s = cuda_ctx(ctx, "fmlp_tp_init_rank");
    if (s == FMLP_OK) s = fmlp_tp_chunks_env(&env);
    if (s != FMLP_OK) return s;
    ncclUniqueId nid;
    memcpy(&nid, id->bytes, sizeof nid);
    ncclComm_t comm = NULL;
    ncclResult_t r = ncclCommInitRank(&comm, world, nid, rank);
    if (r != ncclSuccess) return fmlp_cu_tp_nccl_fail(r, comm, "ncclCommInitRank");
    s = wrap(ctx, comm, true, env, out);
    if (s != FMLP_OK) ncclCommDestroy(comm);
    return s;
}

fmlp_status fmlp_tp_init_all(fmlp_ctx *const *ctxs, int world, fmlp_tp **out)
{
    if (!ctxs || !out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tp_init_all: ctxs and out must not be NULL");
    if (world < 1) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tp_init_all: world size %d; it must be at least 1", world);
    int devs[64];
    if (world > 64)
        return fmlp_fail(FMLP_ERR_UNSUPPORTED, "fmlp_tp_init_all: world size %d; one process drives at most 64 GPUs", world);
    for (int r = 0; r < world; r++) {
        out[r] = NULL;
        fmlp_status s = cuda_ctx(ctxs[r], "fmlp_tp_init_all");
        if (s != FMLP_OK) return s;
        devs[r] = fmlp_cu_state_of(ctxs[r])->device;
        for (int q = 0; q < r; q++)
            if (devs[q] == devs[r])
                return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                                 "fmlp_tp_init_all: ranks %d and %d are both on CUDA device %d; give each rank its own GPU",
                                 q, r, devs[r]);
    }
    int env;
    fmlp_status s = fmlp_tp_chunks_env(&env);
    if (s != FMLP_OK) return s;
    ncclComm_t comms[64];
    ncclResult_t r = ncclCommInitAll(comms, world, devs);
    if (r != ncclSuccess) return fmlp_cu_tp_nccl_fail(r, NULL, "ncclCommInitAll");
    for (int i = 0; i < world && s == FMLP_OK; i++) s = wrap(ctxs[i], comms[i], true, env, &out[i]);
    if (s != FMLP_OK)
        for (int i = 0; i < world; i++) {
            if (out[i]) {
                fmlp_tp_destroy(out[i]);
                out[i] = NULL;
            } else {
                ncclCommDestroy(comms[i]);
            }
        }
    return s;
}

fmlp_status fmlp_tp_wrap(fmlp_ctx *ctx, void *nccl_comm, fmlp_tp **out)
{
    if (!out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tp_wrap: out must not be NULL");
    *out = NULL;
    if (!nccl_comm) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tp_wrap: the communicator must not be NULL");
    int env;
    fmlp_status s = cuda_ctx(ctx, "fmlp_tp_wrap");
    if (s == FMLP_OK) s = fmlp_tp_chunks_env(&env);
    return s == FMLP_OK ? wrap(ctx, (ncclComm_t)nccl_comm, false, env, out) : s;
}

int fmlp_tp_rank(const fmlp_tp *tp) { return tp ? tp->rank : -1; }
int fmlp_tp_world(const fmlp_tp *tp) { return tp ? tp->world : 0; }

fmlp_status fmlp_tp_set_chunks(fmlp_tp *tp, int chunks)
{
    if (!tp) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tp_set_chunks: tp must not be NULL");
    if (chunks < 0 || chunks > FMLP_TP_MAX_CHUNKS)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "fmlp_tp_set_chunks: %d chunks; give 0 (chosen by rule), 1 (no chunks) up to %d", chunks,
                         FMLP_TP_MAX_CHUNKS);
    if (!tp->chunks_env) tp->chunks = chunks;
    return FMLP_OK;
}

static ncclDataType_t nccl_type(fmlp_dtype dt)
{
    return dt == FMLP_BF16 ? ncclBfloat16 : dt == FMLP_F16 ? ncclFloat16 : ncclFloat32;
}

fmlp_status fmlp_cu_tp_check_y(fmlp_tp *tp, const fmlp_tensor *y, const char *what)
{
    if (!tp || !y) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s: tp and y must not be NULL", what);
    if (tp->aborted)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "%s: rank %d's communicator was aborted (fmlp_tp_abort); destroy it and join a new one", what,
                         tp->rank);
    if (y->rows < 1 || y->cols < 1)
        return fmlp_fail(FMLP_ERR_SHAPE, "%s: y is %lld x %lld; nothing to reduce", what, (long long)y->rows,
                         (long long)y->cols);
    if (y->ld != y->cols && y->rows > 1)
        return fmlp_fail(FMLP_ERR_SHAPE, "%s: y's rows are %lld elements apart but %lld wide; pass a contiguous y", what,
                         (long long)y->ld, (long long)y->cols);
    if (y->device != FMLP_DEVICE_CUDA)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s: y must be a device tensor (fmlp_tensor_alloc on the rank's context)",
                         what);
    return fmlp_cu_check_device_ptr(fmlp_cu_state_of(tp->ctx), "y", y->data, y->dtype, true);
}

fmlp_status fmlp_cu_tp_async_error(fmlp_tp *tp)
{
    ncclResult_t a = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(tp->comm, &a);
    if (r != ncclSuccess) return fmlp_cu_tp_nccl_fail(r, tp->comm, "ncclCommGetAsyncError");
    return a == ncclSuccess || a == ncclInProgress ? FMLP_OK : fmlp_cu_tp_nccl_fail(a, tp->comm, "the all-reduce");
}

fmlp_status fmlp_cu_tp_reduce(fmlp_tp *tp, const fmlp_tensor *y, int64_t r0, int64_t rows, cudaStream_t stream)
{
    cudaError_t e = fmlp_cu_use_device(fmlp_cu_state_of(tp->ctx));
    if (e != cudaSuccess) return fmlp_cu_fail(e, "cudaSetDevice");
    void *p = (char *)y->data + (size_t)(r0 * y->cols) * fmlp_dtype_size(y->dtype);
    ncclResult_t r = ncclAllReduce(p, p, (size_t)(rows * y->cols), nccl_type(y->dtype), ncclSum, tp->comm, stream);
    return r == ncclSuccess ? FMLP_OK : fmlp_cu_tp_nccl_fail(r, tp->comm, "ncclAllReduce");
}

/* y whole, on the stream of the rank's forwards. */
static fmlp_status enqueue(fmlp_tp *tp, const fmlp_tensor *y)
{
    return fmlp_cu_tp_reduce(tp, y, 0, y->rows, fmlp_cu_stream(fmlp_cu_state_of(tp->ctx)));
}

fmlp_status fmlp_tp_all_reduce(fmlp_tp *tp, fmlp_tensor *y)
{
    fmlp_status s = fmlp_cu_tp_check_y(tp, y, "fmlp_tp_all_reduce");
    if (s == FMLP_OK) s = enqueue(tp, y);
    return s == FMLP_OK ? fmlp_cu_tp_async_error(tp) : s;
}

fmlp_status fmlp_cu_tp_check_shard(const fmlp_tp *tp, const fmlp_mlp *shard, const char *what)
{
    if (!shard) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s: the shard must not be NULL", what);
    if (shard->ctx != tp->ctx)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "%s: rank %d's shard lives on another context; create it on the rank's (fmlp_mlp_shard)", what,
                         tp->rank);
    return FMLP_OK;
}

fmlp_status fmlp_tp_forward(fmlp_tp *tp, fmlp_mlp *shard, fmlp_mode mode, const fmlp_tensor *x, fmlp_tensor *y)
{
    fmlp_status s = fmlp_cu_tp_check_y(tp, y, "fmlp_tp_forward");
    if (s == FMLP_OK) s = fmlp_cu_tp_check_shard(tp, shard, "fmlp_tp_forward");
    if (s != FMLP_OK) return s;
    char why[160];
    const int chunks = fmlp_cu_tp_chunks(tp, y, why, sizeof why);
    if (chunks > 1) return fmlp_cu_tp_forward_chunked(&tp, &shard, mode, x, y, 1, false, chunks);
    s = fmlp_mlp_forward(shard, mode, x, y);
    if (s == FMLP_OK) s = enqueue(tp, y);
    return s == FMLP_OK ? fmlp_cu_tp_async_error(tp) : s;
}

fmlp_status fmlp_tp_forward_all(fmlp_tp *const *tps, fmlp_mlp *const *shards, fmlp_mode mode, const fmlp_tensor *xs,
                                fmlp_tensor *ys, int world)
{
    if (!tps || !shards || !xs || !ys || world < 1)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tp_forward_all: tps, shards, xs and ys must hold world >= 1 entries");
    int chunks = 1;
    for (int r = 0; r < world; r++) {
        fmlp_status s = fmlp_cu_tp_check_y(tps[r], &ys[r], "fmlp_tp_forward_all");
        if (s == FMLP_OK) s = fmlp_cu_tp_check_shard(tps[r], shards[r], "fmlp_tp_forward_all");
        if (s == FMLP_OK && tps[r]->world != world)
            s = fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tp_forward_all: rank %d belongs to a world of %d, not %d", r,
                          tps[r]->world, world);
        if (s == FMLP_OK && (ys[r].rows != ys[0].rows || ys[r].cols != ys[0].cols || ys[r].dtype != ys[0].dtype))
            s = fmlp_fail(FMLP_ERR_SHAPE, "fmlp_tp_forward_all: rank %d's y is %lld x %lld %s, rank 0's %lld x %lld %s", r,
                          (long long)ys[r].rows, (long long)ys[r].cols, fmlp_dtype_name(ys[r].dtype),
                          (long long)ys[0].rows, (long long)ys[0].cols, fmlp_dtype_name(ys[0].dtype));
        char why[160];
        const int c = s == FMLP_OK ? fmlp_cu_tp_chunks(tps[r], &ys[r], why, sizeof why) : 1;
        if (s == FMLP_OK && r > 0 && c != chunks)
            s = fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                          "fmlp_tp_forward_all: rank %d cuts y into %d chunks (%s), rank 0 into %d; every rank must "
                          "all-reduce the same chunks: give them the same fmlp_tp_set_chunks",
                          r, c, why, chunks);
        if (s != FMLP_OK) return s;
        chunks = c;
    }
    if (chunks > 1) return fmlp_cu_tp_forward_chunked(tps, shards, mode, xs, ys, world, true, chunks);
    for (int r = 0; r < world; r++) {
        fmlp_status s = fmlp_mlp_forward(shards[r], mode, &xs[r], &ys[r]);
        if (s != FMLP_OK) return s;
    }
    ncclResult_t g = ncclGroupStart();
    if (g != ncclSuccess) return fmlp_cu_tp_nccl_fail(g, NULL, "ncclGroupStart");
    fmlp_status s = FMLP_OK;
    for (int r = 0; r < world && s == FMLP_OK; r++) s = enqueue(tps[r], &ys[r]);
    g = ncclGroupEnd();
    if (s == FMLP_OK && g != ncclSuccess) s = fmlp_cu_tp_nccl_fail(g, NULL, "ncclGroupEnd");
    for (int r = 0; r < world && s == FMLP_OK; r++) s = fmlp_cu_tp_async_error(tps[r]);
    return s;
}

fmlp_status fmlp_tp_abort(fmlp_tp *tp)
{
    if (!tp) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tp_abort: tp must not be NULL");
    if (tp->aborted) return FMLP_OK;
    tp->aborted = true;
    ncclResult_t r = ncclCommAbort(tp->comm);
    tp->comm = NULL;
    return r == ncclSuccess ? FMLP_OK : fmlp_cu_tp_nccl_fail(r, NULL, "ncclCommAbort");
}

void fmlp_tp_destroy(fmlp_tp *tp)
{
    if (!tp) return;
    fmlp_cu_tp_overlap_free(tp);
    if (tp->owned && tp->comm) ncclCommDestroy(tp->comm);
    fmlp_ctx_unref(tp->ctx);
    free(tp);
}
