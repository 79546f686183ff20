/* Why: a rank's all-reduce of y is time the GPU's links spend while its
 * SMs could be computing. Cut the down GEMM into row chunks and each
 * chunk's rows of y are final as soon as that chunk is done: its
 * all-reduce starts then, on a second stream, while the next chunk is
 * computed, so only the last chunk's all-reduce is left exposed. The
 * compute stream records an event after each chunk, the second stream
 * waits for it and all-reduces the chunk, and the compute stream waits for
 * the last all-reduce before anything after the forward runs: y is whole
 * in stream order, as after an unchunked forward, with no host sync. How
 * many chunks and which rows is plan/tp_chunks.c's arithmetic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "cuda/tp_internal.h"
#include "plan/plan.h"
#include "plan/tp_chunks.h"

int fmlp_cu_tp_chunks(const fmlp_tp *tp, const fmlp_tensor *y, char *why, size_t why_len)
{
    return fmlp_tp_chunks_pick(tp->chunks, tp->chunks_env ? "FMLP_TP_CHUNKS=" : "chunks set to ", tp->world, y->rows,
                               y->cols, y->dtype, why, why_len);
}

/* The side stream at the device's highest priority, so a chunk's
 * all-reduce gets SMs as soon as it is ready instead of queueing behind
 * the next chunk's GEMM blocks. */
static fmlp_status overlap_make(fmlp_tp *tp)
{
    if (tp->side) return FMLP_OK;
    fmlp_cu_state *st = fmlp_cu_state_of(tp->ctx);
    int least = 0, greatest = 0;
    cudaError_t e = fmlp_cu_use_device(st);
    if (e == cudaSuccess) e = cudaDeviceGetStreamPriorityRange(&least, &greatest);
    if (e == cudaSuccess) e = cudaStreamCreateWithPriority(&tp->side, cudaStreamNonBlocking, greatest);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&tp->ready, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&tp->done, cudaEventDisableTiming);
    if (e == cudaSuccess) return FMLP_OK;
    fmlp_cu_tp_overlap_free(tp);
    return fmlp_cu_fail(e, "creating the all-reduce stream and events of a chunked forward");
}

void fmlp_cu_tp_overlap_free(fmlp_tp *tp)
{
    if (!tp->side && !tp->ready && !tp->done) return;
    fmlp_cu_use_device(fmlp_cu_state_of(tp->ctx));
    if (tp->side) cudaStreamSynchronize(tp->side);
    if (tp->ready) cudaEventDestroy(tp->ready);
    if (tp->done) cudaEventDestroy(tp->done);
    if (tp->side) cudaStreamDestroy(tp->side);
    tp->side = NULL;
    tp->ready = tp->done = NULL;
}

/* Stream `waiter` waits for what `from` has queued so far, through `ev`. */
static fmlp_status hand_over(const fmlp_tp *tp, cudaStream_t from, cudaEvent_t ev, cudaStream_t waiter)
{
    cudaError_t e = fmlp_cu_use_device(fmlp_cu_state_of(tp->ctx));
    if (e == cudaSuccess) e = cudaEventRecord(ev, from);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(waiter, ev, 0);
    return e == cudaSuccess ? FMLP_OK : fmlp_cu_fail(e, "ordering a chunk's all-reduce after its GEMM");
}

typedef struct {
    fmlp_exec_split sp;
    bool open;
    cudaStream_t stream; /* the rank's forwards' */
} rank_run;

fmlp_status fmlp_cu_tp_forward_chunked(fmlp_tp *const *tps, fmlp_mlp *const *shards, fmlp_mode mode,
                                       const fmlp_tensor *xs, fmlp_tensor *ys, int world, bool group, int chunks)
{
    rank_run *runs = fmlp_calloc((size_t)world, sizeof *runs);
    if (!runs) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of host memory for a chunked forward of %d ranks", world);
    fmlp_status s = FMLP_OK;
    for (int r = 0; r < world && s == FMLP_OK; r++) {
        s = overlap_make(tps[r]);
        runs[r].stream = fmlp_cu_stream(fmlp_cu_state_of(tps[r]->ctx));
        if (s == FMLP_OK) s = fmlp_exec_split_begin(shards[r], mode, &xs[r], &ys[r], &runs[r].sp);
        runs[r].open = s == FMLP_OK;
    }
    for (int c = 0; c < chunks && s == FMLP_OK; c++) {
        int64_t r0, n;
        fmlp_tp_chunk_range(ys[0].rows, chunks, c, &r0, &n);
        for (int r = 0; r < world && s == FMLP_OK; r++) {
            if (runs[r].sp.split) s = fmlp_exec_split_rows(&runs[r].sp, r0, n);
            if (s == FMLP_OK) s = hand_over(tps[r], runs[r].stream, tps[r]->ready, tps[r]->side);
        }
        if (s != FMLP_OK) break;
        ncclResult_t g = group ? ncclGroupStart() : ncclSuccess;
        if (g != ncclSuccess) s = fmlp_cu_tp_nccl_fail(g, NULL, "ncclGroupStart");
        for (int r = 0; r < world && s == FMLP_OK; r++) s = fmlp_cu_tp_reduce(tps[r], &ys[r], r0, n, tps[r]->side);
        g = group && g == ncclSuccess ? ncclGroupEnd() : ncclSuccess;
        if (s == FMLP_OK && g != ncclSuccess) s = fmlp_cu_tp_nccl_fail(g, NULL, "ncclGroupEnd");
    }
    /* whatever was queued, the forward's stream goes on only after it: the
     * next forward writes y after these all-reduces read it */
    for (int r = 0; r < world; r++) {
        if (!tps[r]->side) continue;
        fmlp_status h = hand_over(tps[r], tps[r]->side, tps[r]->done, runs[r].stream);
        if (s == FMLP_OK) s = h;
    }
    for (int r = world - 1; r >= 0; r--)
        if (runs[r].open) s = fmlp_exec_split_end(&runs[r].sp, s);
    for (int r = 0; r < world && s == FMLP_OK; r++) s = fmlp_cu_tp_async_error(tps[r]);
    free(runs);
    return s;
}

fmlp_status fmlp_tp_plan(const fmlp_tp *tp, const fmlp_mlp *shard, fmlp_mode mode, int64_t rows, fmlp_tp_plan_info *out)
{
    if (!tp || !out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tp_plan: tp and out must not be NULL");
    fmlp_status s = fmlp_cu_tp_check_shard(tp, shard, "fmlp_tp_plan");
    if (s != FMLP_OK) return s;
    memset(out, 0, sizeof *out);
    fmlp_plan *p = fmlp_malloc(sizeof *p);
    if (!p) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of host memory for the plan of a %lld-row forward", (long long)rows);
    s = fmlp_mlp_plan(shard, mode, rows, &out->plan);
    if (s == FMLP_OK) s = fmlp_plan_build(shard, mode, rows, p);
    const bool splits = s == FMLP_OK && fmlp_exec_splits(p);
    free(p);
    if (s != FMLP_OK) return s;
    const fmlp_mlp_desc *d = fmlp_mlp_get_desc(shard);
    const int64_t cols = fmlp_mlp_out_dim(shard);
    if (!fmlp_mul_i64(rows, cols * (int64_t)fmlp_dtype_size(d->dtype), &out->reduce_bytes))
        return fmlp_fail(FMLP_ERR_SHAPE, "fmlp_tp_plan: %lld rows of y are more bytes than fmlp addresses", (long long)rows);
    const fmlp_tensor y = fmlp_tensor_view(NULL, d->dtype, rows, cols, cols);
    out->rank = tp->rank;
    out->world = tp->world;
    out->hidden = d->hidden;
    out->chunks = fmlp_cu_tp_chunks(tp, &y, out->why, sizeof out->why);
    out->overlapped = out->chunks > 1 && splits;
    for (int c = 0; c < out->chunks; c++) {
        int64_t r0, n;
        fmlp_tp_chunk_range(rows, out->chunks, c, &r0, &n);
        if (n > out->chunk_rows) out->chunk_rows = n;
    }
    if (out->chunks > 1 && !splits) {
        const size_t used = strlen(out->why);
        snprintf(out->why + used, sizeof out->why - used, "; the %s plan has no down GEMM of its own to cut, so they follow it",
                 out->plan.n_kernels == 1 ? "one-kernel" : "shard's");
    }
    return FMLP_OK;
}
