/* Why: tensor parallelism is only as good as its sharding arithmetic, and
 * that can be checked without a single GPU: the shards of an MLP, run one
 * after another on the CPU and summed (the all-reduce), must give the
 * unsharded output within the dtype's bound against the f64 reference, for
 * gated blocks and 2-layer stacks, with and without biases, in every mode,
 * at world sizes that do and do not divide the hidden width, down to one
 * feature per rank; each shard must hold exactly its slice; bad ranks,
 * world sizes, fewer features than ranks and deeper stacks fail naming the
 * value. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static const tu_shape_case cases[] = {
    {"geglu", FMLP_BLOCK_GATED, FMLP_ACT_GELU_TANH, 0, 40, 100, 0, false},
    {"swiglu+bias", FMLP_BLOCK_GATED, FMLP_ACT_SILU, 0, 33, 50, 27, true},
    {"stack-relu-2+bias", FMLP_BLOCK_STACK, FMLP_ACT_RELU, 2, 24, 77, 0, true},
    {"stack-gelu-2", FMLP_BLOCK_STACK, FMLP_ACT_GELU, 2, 17, 31, 9, false},
    {"geglu-8+bias", FMLP_BLOCK_GATED, FMLP_ACT_GELU_TANH, 0, 16, 8, 0, true}, /* world 8: one feature each */
};

static void check_sum(fmlp_ctx *ctx, const tu_shape_case *c, fmlp_dtype dt, fmlp_mode mode, int world, int64_t rows)
{
    fmlp_mlp_desc d = {c->block, c->dim, c->hidden, c->out_dim, c->layers, c->act, c->bias, dt};
    fmlp_mlp *full;
    if (!tu_check(fmlp_mlp_create(ctx, &d, tu_rand_u64(), &full) == FMLP_OK, "create %s: %s", c->name,
                  fmlp_last_error()))
        return;
    const int64_t out = fmlp_mlp_out_dim(full);
    const size_t es = fmlp_dtype_size(dt);
    void *x = malloc((size_t)(rows * c->dim) * es), *y = malloc((size_t)(rows * out) * es);
    double *xr = malloc(sizeof(double) * (size_t)(rows * c->dim)), *ref = malloc(sizeof(double) * (size_t)(rows * out));
    double *sum = calloc((size_t)(rows * out), sizeof(double));
    tu_fill(dt, x, rows * c->dim, -2.0, 2.0, xr);
    tu_mlp_reference(full, xr, rows, ref);
    fmlp_tensor tx = fmlp_tensor_view(x, dt, rows, c->dim, c->dim), ty = fmlp_tensor_view(y, dt, rows, out, out);
    bool ok = true;
    int64_t covered = 0;
    for (int r = 0; r < world && ok; r++) {
        fmlp_mlp *shard;
        int64_t begin = -1, count = -1;
        ok = fmlp_shard_range(c->hidden, r, world, &begin, &count) == FMLP_OK && begin == covered;
        covered += count;
        ok = ok && fmlp_mlp_shard(full, ctx, r, world, &shard) == FMLP_OK;
        if (!tu_check(ok, "%s %s world=%d rank %d: shard of hidden [%lld, +%lld): %s", c->name, fmlp_dtype_name(dt),
                      world, r, (long long)begin, (long long)count, fmlp_last_error()))
            break;
        ok = fmlp_mlp_get_desc(shard)->hidden == count;
        tu_poison(dt, y, rows * out);
        ok = ok && fmlp_mlp_forward(shard, mode, &tx, &ty) == FMLP_OK;
        for (int64_t i = 0; ok && i < rows * out; i++) sum[i] += tu_get(dt, y, i);
        fmlp_mlp_destroy(shard);
        tu_check(ok, "%s %s world=%d rank %d: forward of a shard with %lld hidden features: %s", c->name,
                 fmlp_dtype_name(dt), world, r, (long long)count, ok ? "" : fmlp_last_error());
    }
    tu_check(!ok || covered == c->hidden, "%s world=%d: the shards cover all %lld hidden features once (%lld)",
             c->name, world, (long long)c->hidden, (long long)covered);
    if (ok) {
        const double err = tu_rel_err_f64(sum, ref, rows * out), bound = tu_tol_mode(c, dt, mode);
        tu_check(err <= bound,
                 "%s %s %s world=%d rows=%lld: sum of the shards' outputs vs f64 reference err=%.2e (bound %.0e)",
                 c->name, fmlp_dtype_name(dt), fmlp_mode_name(mode), world, (long long)rows, err, bound);
    }
    free(x);
    free(y);
    free(xr);
    free(ref);
    free(sum);
    fmlp_mlp_destroy(full);
}

/* A shard's tensors are the full MLP's slices, element for element. */
static void check_slices(fmlp_ctx *ctx)
{
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 6, 10, 4, 0, FMLP_ACT_SILU, true, FMLP_F32};
    fmlp_mlp *full, *shard;
    if (fmlp_mlp_create(ctx, &d, 5, &full) != FMLP_OK) return;
    float up[10 * 6], down[4 * 10], dbias[4], s_up[3 * 6], s_down[4 * 3], s_dbias[4];
    /* 10 features over 4 ranks: 3, 3, 2, 2; rank 1 holds [3, 6) */
    bool ok = fmlp_mlp_get_weight(full, "up_proj.weight", up, 10, 6) == FMLP_OK &&
              fmlp_mlp_get_weight(full, "down_proj.weight", down, 4, 10) == FMLP_OK &&
              fmlp_mlp_get_weight(full, "down_proj.bias", dbias, 4, 1) == FMLP_OK &&
              fmlp_mlp_shard(full, ctx, 1, 4, &shard) == FMLP_OK &&
              fmlp_mlp_get_weight(shard, "up_proj.weight", s_up, 3, 6) == FMLP_OK &&
              fmlp_mlp_get_weight(shard, "down_proj.weight", s_down, 4, 3) == FMLP_OK &&
              fmlp_mlp_get_weight(shard, "down_proj.bias", s_dbias, 4, 1) == FMLP_OK;
    if (!tu_check(ok, "rank 1 of 4: shard made and its tensors read back: %s", fmlp_last_error())) {
        fmlp_mlp_destroy(full);
        return;
    }
    bool rows_ok = memcmp(s_up, up + 3 * 6, sizeof s_up) == 0, cols_ok = true, zero_bias = true;
    for (int r = 0; r < 4; r++) {
        for (int c = 0; c < 3; c++) cols_ok = cols_ok && s_down[r * 3 + c] == down[r * 10 + 3 + c];
        zero_bias = zero_bias && s_dbias[r] == 0.0f && dbias[r] != 0.0f;
    }
    tu_check(rows_ok, "rank 1 of 4: up_proj holds rows 3..5 of the full weight");
    tu_check(cols_ok, "rank 1 of 4: down_proj holds columns 3..5 of the full weight");
    tu_check(zero_bias, "rank 1 of 4: the down bias is left to rank 0 (zeros here)");
    fmlp_mlp_destroy(shard);
    fmlp_mlp_destroy(full);
}

static void check_errors(fmlp_ctx *ctx)
{
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 8, 6, 0, 0, FMLP_ACT_GELU_TANH, false, FMLP_F32};
    fmlp_mlp_desc s3 = {FMLP_BLOCK_STACK, 8, 6, 0, 3, FMLP_ACT_RELU, false, FMLP_F32};
    fmlp_mlp *full, *stack3, *shard = (fmlp_mlp *)&d;
    if (fmlp_mlp_create(ctx, &d, 1, &full) != FMLP_OK || fmlp_mlp_create(ctx, &s3, 1, &stack3) != FMLP_OK) return;
    tu_expect_fail(fmlp_mlp_shard(full, ctx, 2, 2, &shard), FMLP_ERR_INVALID_ARGUMENT, "rank 2 of world 2");
    tu_check(shard == NULL, "a failed shard leaves *out NULL");
    tu_check(strstr(fmlp_last_error(), "rank 2") != NULL, "the message names the rank: %s", fmlp_last_error());
    tu_expect_fail(fmlp_mlp_shard(full, ctx, -1, 2, &shard), FMLP_ERR_INVALID_ARGUMENT, "rank -1");
    tu_expect_fail(fmlp_mlp_shard(full, ctx, 0, 0, &shard), FMLP_ERR_INVALID_ARGUMENT, "world size 0");
    tu_expect_fail(fmlp_mlp_shard(full, ctx, 0, 7, &shard), FMLP_ERR_SHAPE, "7 ranks for 6 hidden features");
    tu_check(strstr(fmlp_last_error(), "at most 6") != NULL, "the message says how many ranks fit: %s",
             fmlp_last_error());
    tu_expect_fail(fmlp_mlp_shard(stack3, ctx, 0, 2, &shard), FMLP_ERR_UNSUPPORTED, "a 3-layer stack");
    tu_expect_fail(fmlp_mlp_shard(NULL, ctx, 0, 2, &shard), FMLP_ERR_INVALID_ARGUMENT, "NULL mlp");
    tu_expect_fail(fmlp_mlp_shard(full, NULL, 0, 2, &shard), FMLP_ERR_INVALID_ARGUMENT, "NULL ctx");
    tu_expect_fail(fmlp_mlp_shard(full, ctx, 0, 2, NULL), FMLP_ERR_INVALID_ARGUMENT, "NULL out");
    fmlp_mlp_destroy(stack3);
    fmlp_mlp_destroy(full);
}

int main(void)
{
    tu_seed();
    fmlp_ctx *ctx = tu_ctx(2);
    if (!ctx) return tu_finish();
    const fmlp_dtype dts[] = {FMLP_F32, FMLP_BF16};
    const int worlds[] = {1, 2, 3, 4, 8};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int t = 0; t < 2; t++) {
            for (int w = 0; w < 5; w++) check_sum(ctx, &cases[c], dts[t], FMLP_MODE_FUSED, worlds[w], w % 2 ? 5 : 16);
            check_sum(ctx, &cases[c], dts[t], FMLP_MODE_EAGER, 3, 7);
            check_sum(ctx, &cases[c], dts[t], FMLP_MODE_COMPILED, 3, 7);
        }
    check_slices(ctx);
    check_errors(ctx);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
