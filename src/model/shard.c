/* Why: tensor parallelism needs each rank to hold its slice of an MLP and
 * nothing else, cut the way Megatron-LM cuts it so that only one
 * all-reduce of y is needed per MLP: gate and up (or a stack's first
 * layer) column-parallel, each rank holding a contiguous slice of the hidden
 * features of both, so the GLU stays local; down (the second layer)
 * row-parallel over the same slice, its bias on rank 0 only, so the ranks'
 * outputs add up to the unsharded output. The slices are read and written
 * through the public weight API, so the shard may live on any context. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/checked.h"
#include "core/error.h"
#include "fmlp.h"

fmlp_status fmlp_shard_range(int64_t hidden, int rank, int world, int64_t *begin, int64_t *count)
{
    if (world < 1)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "tensor parallelism: world size %d; it must be at least 1", world);
    if (rank < 0 || rank >= world)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "tensor parallelism: rank %d is outside 0..%d (world size %d)", rank,
                         world - 1, world);
    if (hidden < world)
        return fmlp_fail(FMLP_ERR_SHAPE,
                         "tensor parallelism: hidden width %lld cannot give each of %d ranks a feature; use at most %lld "
                         "ranks",
                         (long long)hidden, world, (long long)hidden);
    const int64_t base = hidden / world, extra = hidden % world;
    if (begin) *begin = rank * base + (rank < extra ? rank : extra);
    if (count) *count = base + (rank < extra ? 1 : 0);
    return FMLP_OK;
}

/* Copies rows [r0, r0 + nr) and columns [c0, c0 + nc) of full tensor `name`
 * (rows x cols) into the shard's tensor of the same name; zeros when
 * `zero` (the down bias off rank 0). */
static fmlp_status copy_slice(const fmlp_mlp *full, fmlp_mlp *shard, const char *name, int64_t rows, int64_t cols,
                              int64_t r0, int64_t nr, int64_t c0, int64_t nc, bool zero)
{
    int64_t all = 0, part = 0;
    if (!fmlp_mul3_i64((int64_t)sizeof(float), rows, cols, &all) || !fmlp_mul3_i64((int64_t)sizeof(float), nr, nc, &part))
        return fmlp_fail(FMLP_ERR_SHAPE, "tensor parallelism: %s of [%lld, %lld] is too large to slice", name,
                         (long long)rows, (long long)cols);
    float *src = zero ? NULL : fmlp_malloc((size_t)all), *dst = fmlp_malloc((size_t)part > 0 ? (size_t)part : 1);
    fmlp_status s = FMLP_OK;
    if ((!zero && !src) || !dst) {
        s = fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "tensor parallelism: out of host memory slicing %s (%lld bytes)", name,
                      (long long)(all + part));
    } else if (zero) {
        memset(dst, 0, (size_t)part);
    } else if ((s = fmlp_mlp_get_weight(full, name, src, rows, cols)) == FMLP_OK) {
        for (int64_t r = 0; r < nr; r++) memcpy(dst + r * nc, src + (r0 + r) * cols + c0, sizeof(float) * (size_t)nc);
    }
    if (s == FMLP_OK) s = fmlp_mlp_set_weight(shard, name, FMLP_F32, dst, nr, nc);
    free(src);
    free(dst);
    return s;
}

fmlp_status fmlp_mlp_shard(const fmlp_mlp *full, fmlp_ctx *ctx, int rank, int world, fmlp_mlp **out)
{
    if (!out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_shard: out must not be NULL");
    *out = NULL;
    if (!full || !ctx) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_shard: mlp and ctx must not be NULL");
    const fmlp_mlp_desc *d = fmlp_mlp_get_desc(full);
    if (d->block == FMLP_BLOCK_STACK && d->layers != 2)
        return fmlp_fail(FMLP_ERR_UNSUPPORTED,
                         "tensor parallelism: a stack of %d Linear layers; only 2-layer stacks (column- then "
                         "row-parallel, one all-reduce) are sharded",
                         d->layers);
    int64_t h0 = 0, hn = 0;
    fmlp_status s = fmlp_shard_range(d->hidden, rank, world, &h0, &hn);
    if (s != FMLP_OK) return s;
    fmlp_mlp_desc sd = *d;
    sd.hidden = hn;
    fmlp_mlp *shard = NULL;
    if ((s = fmlp_mlp_create(ctx, &sd, 0, &shard)) != FMLP_OK) return s;
    const int64_t dim = d->dim, hid = d->hidden, od = fmlp_mlp_out_dim(full);
    const char *cols_in[2], *cols_bias[2], *down, *down_bias;
    int n_in;
    if (d->block == FMLP_BLOCK_GATED) {
        cols_in[0] = "gate_proj.weight", cols_in[1] = "up_proj.weight";
        cols_bias[0] = "gate_proj.bias", cols_bias[1] = "up_proj.bias";
        down = "down_proj.weight", down_bias = "down_proj.bias";
        n_in = 2;
    } else {
        cols_in[0] = "0.weight", cols_bias[0] = "0.bias";
        down = "2.weight", down_bias = "2.bias";
        n_in = 1;
    }
    for (int i = 0; i < n_in && s == FMLP_OK; i++) {
        s = copy_slice(full, shard, cols_in[i], hid, dim, h0, hn, 0, dim, false);
        if (s == FMLP_OK && d->bias) s = copy_slice(full, shard, cols_bias[i], hid, 1, h0, hn, 0, 1, false);
    }
    if (s == FMLP_OK) s = copy_slice(full, shard, down, od, hid, 0, od, h0, hn, false);
    if (s == FMLP_OK && d->bias) s = copy_slice(full, shard, down_bias, od, 1, 0, od, 0, 1, rank != 0);
    if (s != FMLP_OK) {
        fmlp_mlp_destroy(shard);
        return s;
    }
    *out = shard;
    return FMLP_OK;
}
