/* Why: a build without NCCL (or without CUDA) keeps the tensor-parallel
 * calls, so programs link the same everywhere; each says how to get it. */
#include "core/error.h"
#include "fmlp.h"

#define NO_TP                                                                                                    \
    fmlp_fail(FMLP_ERR_UNSUPPORTED, "tensor parallelism needs NCCL, and this fmlp was built without it; install " \
                                    "NCCL (or pip's nvidia-nccl and set NCCL_ROOT to it) and rebuild with CUDA")

bool fmlp_tp_available(int *version)
{
    if (version) *version = 0;
    return false;
}

fmlp_status fmlp_tp_unique_id(fmlp_tp_id *out)
{
    (void)out;
    return NO_TP;
}

fmlp_status fmlp_tp_init_rank(fmlp_ctx *ctx, const fmlp_tp_id *id, int rank, int world, fmlp_tp **out)
{
    (void)ctx;
    (void)id;
    (void)rank;
    (void)world;
    if (out) *out = NULL;
    return NO_TP;
}

fmlp_status fmlp_tp_init_all(fmlp_ctx *const *ctxs, int world, fmlp_tp **out)
{
    (void)ctxs;
    for (int r = 0; out && r < world; r++) out[r] = NULL;
    return NO_TP;
}

fmlp_status fmlp_tp_wrap(fmlp_ctx *ctx, void *nccl_comm, fmlp_tp **out)
{
    (void)ctx;
    (void)nccl_comm;
    if (out) *out = NULL;
    return NO_TP;
}

int fmlp_tp_rank(const fmlp_tp *tp)
{
    (void)tp;
    return -1;
}

int fmlp_tp_world(const fmlp_tp *tp)
{
    (void)tp;
    return 0;
}

fmlp_status fmlp_tp_all_reduce(fmlp_tp *tp, fmlp_tensor *y)
{
    (void)tp;
    (void)y;
    return NO_TP;
}

fmlp_status fmlp_tp_forward(fmlp_tp *tp, fmlp_mlp *shard, fmlp_mode mode, const fmlp_tensor *x, fmlp_tensor *y)
{
    (void)tp;
    (void)shard;
    (void)mode;
    (void)x;
    (void)y;
    return NO_TP;
}

fmlp_status fmlp_tp_forward_all(fmlp_tp *const *tps, fmlp_mlp *const *shards, fmlp_mode mode, const fmlp_tensor *xs,
                                fmlp_tensor *ys, int world)
{
    (void)tps;
    (void)shards;
    (void)mode;
    (void)xs;
    (void)ys;
    (void)world;
    return NO_TP;
}

fmlp_status fmlp_tp_set_chunks(fmlp_tp *tp, int chunks)
{
    (void)tp;
    (void)chunks;
    return NO_TP;
}

fmlp_status fmlp_tp_plan(const fmlp_tp *tp, const fmlp_mlp *shard, fmlp_mode mode, int64_t rows, fmlp_tp_plan_info *out)
{
    (void)tp;
    (void)shard;
    (void)mode;
    (void)rows;
    (void)out;
    return NO_TP;
}

fmlp_status fmlp_tp_abort(fmlp_tp *tp)
{
    (void)tp;
    return NO_TP;
}

void fmlp_tp_destroy(fmlp_tp *tp) { (void)tp; }
