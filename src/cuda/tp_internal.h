/* Why: tensor parallelism is two concerns over one record per rank:
 * joining communicators and all-reducing y (tp_nccl.c), and the chunked
 * forward whose all-reduces overlap the down GEMM (tp_overlap.c). This is
 * the record and what both files need of each other. Built only with
 * NCCL. */
#ifndef FMLP_CUDA_TP_INTERNAL_H
#define FMLP_CUDA_TP_INTERNAL_H

#include <nccl.h>

#include "cuda/cuda_internal.h"

struct fmlp_tp {
    fmlp_ctx *ctx;
    ncclComm_t comm;
    int rank, world;
    bool owned;   /* made here: destroyed here */
    bool aborted; /* fmlp_tp_abort ran: no more collectives */
    int chunks;   /* asked for: 0 the rule (fmlp_tp_set_chunks, FMLP_TP_CHUNKS) */
    bool chunks_env; /* FMLP_TP_CHUNKS gave it; fmlp_tp_set_chunks leaves it */
    /* The overlap's stream for the chunks' all-reduces, and its events:
     * `ready` marks a chunk of y computed, `done` the last all-reduce
     * queued. Made by the first chunked forward. */
    cudaStream_t side;
    cudaEvent_t ready, done;
};

/* ---- tp_nccl.c */

fmlp_status fmlp_cu_tp_nccl_fail(ncclResult_t r, ncclComm_t comm, const char *what);
/* What an all-reduce of y on tp needs, checked before NCCL sees it. */
fmlp_status fmlp_cu_tp_check_y(fmlp_tp *tp, const fmlp_tensor *y, const char *what);
fmlp_status fmlp_cu_tp_check_shard(const fmlp_tp *tp, const fmlp_mlp *shard, const char *what);
/* An error a collective left behind while it ran. */
fmlp_status fmlp_cu_tp_async_error(fmlp_tp *tp);
/* Queues the in-place all-reduce of `rows` rows of the contiguous y from
 * row r0 on `stream` of the rank's device. */
fmlp_status fmlp_cu_tp_reduce(fmlp_tp *tp, const fmlp_tensor *y, int64_t r0, int64_t rows, cudaStream_t stream);

/* ---- tp_overlap.c */

/* The chunks a forward of y on tp cuts into (tp_chunks.h); `why` says why. */
int fmlp_cu_tp_chunks(const fmlp_tp *tp, const fmlp_tensor *y, char *why, size_t why_len);
/* The forwards of `world` ranks (1 for a rank of its own process; every
 * rank of a one-process communicator, whose all-reduces of a chunk are one
 * NCCL group, when `group`) with y in `chunks` > 1 chunks. */
fmlp_status fmlp_cu_tp_forward_chunked(fmlp_tp *const *tps, fmlp_mlp *const *shards, fmlp_mode mode,
                                       const fmlp_tensor *xs, fmlp_tensor *ys, int world, bool group, int chunks);
/* Frees the overlap's stream and events (fmlp_tp_destroy). */
void fmlp_cu_tp_overlap_free(fmlp_tp *tp);

#endif
