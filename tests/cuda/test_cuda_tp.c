/* Why: tensor parallelism goes through NCCL, which one GPU can run only as
 * a world of one; that world still takes the real path (unique id, init,
 * the all-reduce on the context's stream, teardown), so it checks that a
 * rank's forward is the shard's forward summed by NCCL (for one rank: the
 * unsharded forward, bit for bit, and within the dtype's bound of the f64
 * reference), and that every wrong use fails naming the value: a rank
 * outside the world, a CPU context, two ranks on one GPU, a host or strided
 * y, a shard from another context, a y of the wrong width, a communicator
 * used after abort. Without NCCL or a GPU it says skipped. */
#include <stdlib.h>
#include <string.h>

#include "cuda_test.h"

enum { DIM = 768, HIDDEN = 3072, ROWS = 9 };

static bool fails_with(fmlp_status got, fmlp_status want, const char *needle, const char *what)
{
    const char *msg = fmlp_last_error();
    return tu_check(got == want && strstr(msg, needle) != NULL, "%s: %s (want %s naming \"%s\"): %s", what,
                    fmlp_status_name(got), fmlp_status_name(want), needle, msg);
}

static void bad_joins(fmlp_ctx *ctx, const fmlp_tp_id *id)
{
    fmlp_tp *tp = NULL;
    fails_with(fmlp_tp_init_rank(ctx, id, 1, 1, &tp), FMLP_ERR_INVALID_ARGUMENT, "rank 1", "rank 1 of a world of 1");
    fails_with(fmlp_tp_init_rank(ctx, id, -1, 2, &tp), FMLP_ERR_INVALID_ARGUMENT, "rank -1", "rank -1");
    fails_with(fmlp_tp_init_rank(ctx, id, 0, 0, &tp), FMLP_ERR_INVALID_ARGUMENT, "world size 0", "world size 0");
    fails_with(fmlp_tp_init_rank(ctx, NULL, 0, 1, &tp), FMLP_ERR_INVALID_ARGUMENT, "id", "no id");
    fmlp_ctx *cpu = NULL;
    if (tu_check(fmlp_ctx_create(NULL, &cpu) == FMLP_OK, "CPU context: %s", fmlp_last_error())) {
        fails_with(fmlp_tp_init_rank(cpu, id, 0, 1, &tp), FMLP_ERR_INVALID_ARGUMENT, "CUDA", "a CPU context");
        fmlp_ctx_destroy(cpu);
    }
    fmlp_ctx *twice[2] = {ctx, ctx};
    fmlp_tp *two[2] = {NULL, NULL};
    fails_with(fmlp_tp_init_all(twice, 2, two), FMLP_ERR_INVALID_ARGUMENT, "both on CUDA device", "two ranks on one GPU");
    fails_with(fmlp_tp_wrap(ctx, NULL, &tp), FMLP_ERR_INVALID_ARGUMENT, "communicator", "wrapping NULL");
    tu_check(tp == NULL && two[0] == NULL && two[1] == NULL, "failed joins leave no rank behind");
}

/* A rank's forward against the unsharded one and the f64 reference. */
static void forward_checks(fmlp_ctx *ctx, fmlp_tp *tp, fmlp_dtype dt)
{
    const fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_GELU_TANH, true, dt};
    fmlp_mlp *full = NULL, *shard = NULL;
    const size_t nx = (size_t)ROWS * DIM;
    uint16_t *hx = malloc(2 * nx), *hy = malloc(2 * nx), *hp = malloc(2 * nx), *href = malloc(2 * nx);
    double *xr = malloc(sizeof(double) * nx), *ref = malloc(sizeof(double) * nx);
    tu_fill(dt, hx, (int64_t)nx, -1, 1, xr);
    tu_poison(dt, hp, (int64_t)nx);
    fmlp_tensor x = {0}, y = {0}, yref = {0};
    fmlp_status s = fmlp_mlp_create(ctx, &d, 21, &full);
    if (s == FMLP_OK) s = fmlp_mlp_shard(full, ctx, 0, 1, &shard);
    if (s == FMLP_OK) s = ct_upload(ctx, dt, hx, ROWS, DIM, DIM, &x);
    if (s == FMLP_OK) s = ct_upload(ctx, dt, hp, ROWS, DIM, DIM, &y);
    if (s == FMLP_OK) s = ct_upload(ctx, dt, hp, ROWS, DIM, DIM, &yref);
    if (s == FMLP_OK) s = fmlp_mlp_forward(full, FMLP_MODE_FUSED, &x, &yref);
    if (s == FMLP_OK) s = fmlp_tp_forward(tp, shard, FMLP_MODE_FUSED, &x, &y);
    if (s == FMLP_OK) s = fmlp_ctx_synchronize(ctx);
    if (s == FMLP_OK) s = ct_download(ctx, &y, hy);
    if (s == FMLP_OK) s = ct_download(ctx, &yref, href);
    if (tu_check(s == FMLP_OK, "%s: world-1 forward: %s", fmlp_dtype_name(dt), fmlp_last_error())) {
        fmlp_mlp_reference(full, xr, ROWS, ref);
        const double err = tu_rel_err(dt, hy, DIM, ref, DIM, ROWS, DIM);
        tu_check(err <= tu_tol(dt), "%s: world-1 forward against f64: err=%.2e", fmlp_dtype_name(dt), err);
        tu_check(memcmp(hy, href, 2 * nx) == 0, "%s: world-1 forward = the unsharded forward, bit for bit",
                 fmlp_dtype_name(dt));
        /* the all-reduce of one rank leaves y as it was */
        s = fmlp_tp_all_reduce(tp, &y);
        if (s == FMLP_OK) s = fmlp_ctx_synchronize(ctx);
        if (s == FMLP_OK) s = ct_download(ctx, &y, hp);
        tu_check(s == FMLP_OK && memcmp(hy, hp, 2 * nx) == 0, "%s: an all-reduce over one rank keeps y: %s",
                 fmlp_dtype_name(dt), s == FMLP_OK ? "" : fmlp_last_error());
    }
    /* wrong uses */
    fmlp_tensor host = fmlp_tensor_view(hy, dt, ROWS, DIM, DIM);
    fails_with(fmlp_tp_all_reduce(tp, &host), FMLP_ERR_INVALID_ARGUMENT, "device tensor", "a host y");
    fmlp_tensor strided = fmlp_tensor_view(y.data, dt, ROWS / 2, DIM / 2, DIM);
    strided.device = FMLP_DEVICE_CUDA;
    fails_with(fmlp_tp_all_reduce(tp, &strided), FMLP_ERR_SHAPE, "contiguous", "a strided y");
    fmlp_tensor narrow = fmlp_tensor_view(y.data, dt, ROWS, DIM - 8, DIM - 8);
    narrow.device = FMLP_DEVICE_CUDA;
    fails_with(fmlp_tp_forward(tp, shard, FMLP_MODE_FUSED, &x, &narrow), FMLP_ERR_SHAPE, "columns", "a y of the wrong width");
    fmlp_ctx *other = ct_ctx();
    if (other) {
        fmlp_mlp *elsewhere = NULL;
        if (tu_check(fmlp_mlp_shard(full, other, 0, 1, &elsewhere) == FMLP_OK, "shard on a second context: %s",
                     fmlp_last_error()))
            fails_with(fmlp_tp_forward(tp, elsewhere, FMLP_MODE_FUSED, &x, &y), FMLP_ERR_INVALID_ARGUMENT,
                       "another context", "a shard from another context");
        fmlp_mlp_destroy(elsewhere);
        fmlp_ctx_destroy(other);
    }
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    fmlp_tensor_free(ctx, &yref);
    fmlp_mlp_destroy(shard);
    fmlp_mlp_destroy(full);
    free(hx);
    free(hy);
    free(hp);
    free(href);
    free(xr);
    free(ref);
}

/* One process driving its GPUs (here the one): the grouped forward. */
static void one_process(fmlp_ctx *ctx)
{
    fmlp_tp *tp = NULL;
    if (!tu_check(fmlp_tp_init_all(&ctx, 1, &tp) == FMLP_OK, "ncclCommInitAll of one GPU: %s", fmlp_last_error())) return;
    tu_check(fmlp_tp_rank(tp) == 0 && fmlp_tp_world(tp) == 1, "init_all: rank %d of %d", fmlp_tp_rank(tp),
             fmlp_tp_world(tp));
    const fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_SILU, false, FMLP_BF16};
    fmlp_mlp *full = NULL, *shard = NULL;
    fmlp_tensor x = {0}, y = {0}, yref = {0};
    const size_t nx = (size_t)ROWS * DIM;
    uint16_t *hx = malloc(2 * nx), *hy = malloc(2 * nx), *href = malloc(2 * nx);
    tu_fill(FMLP_BF16, hx, (int64_t)nx, -1, 1, NULL);
    fmlp_status s = fmlp_mlp_create(ctx, &d, 4, &full);
    if (s == FMLP_OK) s = fmlp_mlp_shard(full, ctx, 0, 1, &shard);
    if (s == FMLP_OK) s = ct_upload(ctx, FMLP_BF16, hx, ROWS, DIM, DIM, &x);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, FMLP_BF16, ROWS, DIM, &y);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, FMLP_BF16, ROWS, DIM, &yref);
    if (s == FMLP_OK) s = fmlp_mlp_forward(full, FMLP_MODE_EAGER, &x, &yref);
    if (s == FMLP_OK) s = fmlp_tp_forward_all(&tp, &shard, FMLP_MODE_EAGER, &x, &y, 1);
    if (s == FMLP_OK) s = fmlp_ctx_synchronize(ctx);
    if (s == FMLP_OK) s = ct_download(ctx, &y, hy);
    if (s == FMLP_OK) s = ct_download(ctx, &yref, href);
    tu_check(s == FMLP_OK && memcmp(hy, href, 2 * nx) == 0, "forward_all over one GPU = the unsharded forward: %s",
             s == FMLP_OK ? "" : fmlp_last_error());
    fails_with(fmlp_tp_forward_all(&tp, &shard, FMLP_MODE_EAGER, &x, &y, 2), FMLP_ERR_INVALID_ARGUMENT, "world",
               "forward_all with the wrong world size");
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    fmlp_tensor_free(ctx, &yref);
    fmlp_mlp_destroy(shard);
    fmlp_mlp_destroy(full);
    fmlp_tp_destroy(tp);
    free(hx);
    free(hy);
    free(href);
}

int main(void)
{
    tu_seed();
    int version = 0;
    if (!fmlp_tp_available(&version)) {
        fmlp_tp_id id;
        fails_with(fmlp_tp_unique_id(&id), FMLP_ERR_UNSUPPORTED, "NCCL", "without NCCL");
        tu_skip("this build has no NCCL");
        return tu_finish();
    }
    tu_check(version >= 21300, "NCCL version %d", version);
    fmlp_ctx *ctx = ct_ctx();
    if (!ctx) return tu_finish();
    fmlp_tp_id id;
    fmlp_tp *tp = NULL;
    if (tu_check(fmlp_tp_unique_id(&id) == FMLP_OK, "ncclGetUniqueId: %s", fmlp_last_error())) {
        bad_joins(ctx, &id);
        if (tu_check(fmlp_tp_init_rank(ctx, &id, 0, 1, &tp) == FMLP_OK, "ncclCommInitRank, world 1: %s",
                     fmlp_last_error())) {
            tu_check(fmlp_tp_rank(tp) == 0 && fmlp_tp_world(tp) == 1, "rank %d of %d", fmlp_tp_rank(tp),
                     fmlp_tp_world(tp));
            forward_checks(ctx, tp, FMLP_BF16);
            forward_checks(ctx, tp, FMLP_F16);
            tu_check(fmlp_tp_abort(tp) == FMLP_OK, "abort: %s", fmlp_last_error());
            fmlp_tensor y;
            if (tu_check(fmlp_tensor_alloc(ctx, FMLP_BF16, 2, 8, &y) == FMLP_OK, "y: %s", fmlp_last_error())) {
                fails_with(fmlp_tp_all_reduce(tp, &y), FMLP_ERR_INVALID_ARGUMENT, "aborted", "after abort");
                fmlp_tensor_free(ctx, &y);
            }
            fmlp_tp_destroy(tp);
        }
    }
    one_process(ctx);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
