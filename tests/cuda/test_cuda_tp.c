/* Why: tensor parallelism goes through NCCL, which one GPU can run only as
 * a world of one; that world still takes the real path (unique id, init,
 * the all-reduce on the context's stream, teardown), so it checks that a
 * rank's forward is the shard's forward summed by NCCL (for one rank: the
 * unsharded forward, bit for bit, and within the dtype's bound of the f64
 * reference), and that every wrong use fails naming the value: a rank
 * outside the world, a CPU context, two ranks on one GPU, a host or strided
 * y, a shard from another context, a y of the wrong width, a communicator
 * used after abort. The overlapped forward, whose down GEMM runs in row
 * chunks each all-reduced on a second stream while the next is computed,
 * is checked the same way: chunk counts that do not divide the rows, more
 * chunks than rows, every mode, a one-kernel plan that cannot be cut, two
 * forwards queued back to back on one y, a host x, the caller's stream,
 * the grouped one-process forward, FMLP_TP_CHUNKS and the plan that says
 * all this. Without NCCL or a GPU it says skipped. */
#include <math.h>
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
        tu_mlp_reference(full, xr, ROWS, ref);
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

/* A random bf16 x (rows, DIM) on the device, its f64 copy and the
 * reference y of `full` for it. */
typedef struct {
    int64_t rows;
    uint16_t *hx, *hy;
    double *xr, *ref;
    fmlp_tensor x, y;
} tp_data;

static bool data_make(fmlp_ctx *ctx, const fmlp_mlp *full, int64_t rows, tp_data *t)
{
    memset(t, 0, sizeof *t);
    const size_t n = (size_t)rows * DIM;
    t->rows = rows;
    t->hx = malloc(2 * n);
    t->hy = malloc(2 * n);
    t->xr = malloc(sizeof(double) * n);
    t->ref = malloc(sizeof(double) * n);
    tu_fill(FMLP_BF16, t->hx, (int64_t)n, -1, 1, t->xr);
    tu_mlp_reference(full, t->xr, rows, t->ref);
    tu_poison(FMLP_BF16, t->hy, (int64_t)n);
    fmlp_status s = ct_upload(ctx, FMLP_BF16, t->hx, rows, DIM, DIM, &t->x);
    if (s == FMLP_OK) s = ct_upload(ctx, FMLP_BF16, t->hy, rows, DIM, DIM, &t->y);
    return tu_check(s == FMLP_OK, "%lld rows of x and a poisoned y on the device: %s", (long long)rows,
                    s == FMLP_OK ? "" : fmlp_last_error());
}

/* y against the reference once the device is done; a poisoned y again after. */
static double data_err(fmlp_ctx *ctx, tp_data *t)
{
    const size_t n = (size_t)t->rows * DIM;
    double err = INFINITY;
    if (fmlp_ctx_synchronize(ctx) == FMLP_OK && ct_download(ctx, &t->y, t->hy) == FMLP_OK)
        err = tu_rel_err(FMLP_BF16, t->hy, DIM, t->ref, DIM, t->rows, DIM);
    tu_poison(FMLP_BF16, t->hy, (int64_t)n);
    ctx->be->copy(ctx, t->y.data, FMLP_DEVICE_CUDA, t->hy, FMLP_DEVICE_CPU, 2 * n);
    return err;
}

static void data_free(fmlp_ctx *ctx, tp_data *t)
{
    fmlp_tensor_free(ctx, &t->x);
    fmlp_tensor_free(ctx, &t->y);
    free(t->hx);
    free(t->hy);
    free(t->xr);
    free(t->ref);
}

/* The plan of a chunked forward, and the forward against f64. */
static void chunked_case(fmlp_ctx *ctx, fmlp_tp *tp, fmlp_mlp *full, fmlp_mlp *shard, fmlp_mode mode, int64_t rows,
                         int chunks)
{
    tp_data t;
    if (!data_make(ctx, full, rows, &t)) return;
    fmlp_tp_plan_info p;
    fmlp_status s = fmlp_tp_set_chunks(tp, chunks);
    if (s == FMLP_OK) s = fmlp_tp_plan(tp, shard, mode, rows, &p);
    const int want = chunks < rows ? chunks : (int)rows;
    if (tu_check(s == FMLP_OK, "plan of %lld rows in %d chunks: %s", (long long)rows, chunks, fmlp_last_error())) {
        const bool one_kernel = p.plan.n_kernels == 1;
        tu_check(p.chunks == want && p.rank == 0 && p.world == 1 && p.overlapped == (want > 1 && !one_kernel) &&
                     p.chunk_rows >= (rows + want - 1) / want && p.reduce_bytes == rows * DIM * 2,
                 "%s %lld rows, %d asked: %d chunks of up to %lld rows, %s (%s)", fmlp_mode_name(mode),
                 (long long)rows, chunks, p.chunks, (long long)p.chunk_rows,
                 p.overlapped ? "overlapped" : "not overlapped", p.why);
        if (one_kernel && want > 1)
            tu_check(strstr(p.why, "one-kernel") != NULL, "a one-kernel plan says why it is not cut: %s", p.why);
    }
    s = fmlp_tp_forward(tp, shard, mode, &t.x, &t.y);
    const double err = s == FMLP_OK ? data_err(ctx, &t) : INFINITY;
    tu_check(s == FMLP_OK && err <= tu_tol(FMLP_BF16), "%s: %lld rows in %d chunks vs f64: err=%.2e %s",
             fmlp_mode_name(mode), (long long)rows, want, err, s == FMLP_OK ? "" : fmlp_last_error());
    data_free(ctx, &t);
}

/* Two chunked forwards queued on one y with no wait between them: the
 * second's GEMM must not write y while the first's all-reduce reads it. */
static void back_to_back(fmlp_ctx *ctx, fmlp_tp *tp, fmlp_mlp *full, fmlp_mlp *shard)
{
    tp_data a, b;
    if (!data_make(ctx, full, 1000, &a)) return;
    if (!data_make(ctx, full, 1000, &b)) {
        data_free(ctx, &a);
        return;
    }
    fmlp_tensor_free(ctx, &b.y);
    b.y = a.y;
    fmlp_status s = fmlp_tp_set_chunks(tp, 3);
    for (int i = 0; i < 4 && s == FMLP_OK; i++) s = fmlp_tp_forward(tp, shard, FMLP_MODE_FUSED, i % 2 ? &b.x : &a.x, &a.y);
    const double err = s == FMLP_OK ? data_err(ctx, &b) : INFINITY;
    tu_check(s == FMLP_OK && err <= tu_tol(FMLP_BF16), "four chunked forwards back to back into one y: the last's: "
             "err=%.2e %s", err, s == FMLP_OK ? "" : fmlp_last_error());
    b.y = (fmlp_tensor){0};
    data_free(ctx, &b);
    data_free(ctx, &a);
}

/* A host x (copied in within the forward) and the caller's own stream. */
static void other_inputs(fmlp_ctx *ctx, fmlp_tp *tp, fmlp_mlp *full, fmlp_mlp *shard)
{
    tp_data t;
    if (!data_make(ctx, full, 517, &t)) return;
    fmlp_tensor hx = fmlp_tensor_view(t.hx, FMLP_BF16, t.rows, DIM, DIM);
    fmlp_status s = fmlp_tp_set_chunks(tp, 4);
    if (s == FMLP_OK) s = fmlp_tp_forward(tp, shard, FMLP_MODE_EAGER, &hx, &t.y);
    double err = s == FMLP_OK ? data_err(ctx, &t) : INFINITY;
    tu_check(s == FMLP_OK && err <= tu_tol(FMLP_BF16), "chunked forward of a host x: err=%.2e %s", err,
             s == FMLP_OK ? "" : fmlp_last_error());
    fmlp_ctx *caller = ct_ctx();
    void *theirs = NULL;
    if (caller && fmlp_ctx_get_stream(caller, &theirs) == FMLP_OK && fmlp_ctx_set_stream(ctx, theirs) == FMLP_OK) {
        s = fmlp_tp_forward(tp, shard, FMLP_MODE_FUSED, &t.x, &t.y);
        err = s == FMLP_OK ? data_err(ctx, &t) : INFINITY;
        tu_check(s == FMLP_OK && err <= tu_tol(FMLP_BF16), "chunked forward on the caller's stream: err=%.2e %s", err,
                 s == FMLP_OK ? "" : fmlp_last_error());
        fmlp_ctx_set_stream(ctx, NULL);
    }
    fmlp_ctx_destroy(caller);
    data_free(ctx, &t);
}

/* The overlap on a world of one: every chunk's all-reduce is a real NCCL
 * call on the rank's second stream. */
static void overlap_checks(fmlp_ctx *ctx, fmlp_tp *tp)
{
    const fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_GELU_TANH, true, FMLP_BF16};
    fmlp_mlp *full = NULL, *shard = NULL;
    if (!tu_check(fmlp_mlp_create(ctx, &d, 8, &full) == FMLP_OK && fmlp_mlp_shard(full, ctx, 0, 1, &shard) == FMLP_OK,
                  "an MLP and its one shard: %s", fmlp_last_error())) {
        fmlp_mlp_destroy(full);
        return;
    }
    const fmlp_mode modes[] = {FMLP_MODE_EAGER, FMLP_MODE_COMPILED, FMLP_MODE_FUSED};
    for (int m = 0; m < 3; m++) {
        chunked_case(ctx, tp, full, shard, modes[m], 300, 3);  /* 128, 128, 44 rows */
        chunked_case(ctx, tp, full, shard, modes[m], 1000, 7); /* 7 does not divide 1000 */
        chunked_case(ctx, tp, full, shard, modes[m], 5, 8);    /* fewer rows than chunks */
    }
    chunked_case(ctx, tp, full, shard, FMLP_MODE_FUSED, 9, 3); /* one kernel on Hopper: cut after it */
    chunked_case(ctx, tp, full, shard, FMLP_MODE_FUSED, 4096, 64);
    chunked_case(ctx, tp, full, shard, FMLP_MODE_FUSED, 300, 1);
    back_to_back(ctx, tp, full, shard);
    other_inputs(ctx, tp, full, shard);
    fails_with(fmlp_tp_set_chunks(tp, -1), FMLP_ERR_INVALID_ARGUMENT, "-1", "chunks -1");
    fails_with(fmlp_tp_set_chunks(tp, FMLP_TP_MAX_CHUNKS + 1), FMLP_ERR_INVALID_ARGUMENT, "65", "chunks 65");
    fails_with(fmlp_tp_set_chunks(NULL, 2), FMLP_ERR_INVALID_ARGUMENT, "NULL", "chunks on a NULL rank");
    fmlp_tp_plan_info p;
    fails_with(fmlp_tp_plan(tp, NULL, FMLP_MODE_FUSED, 8, &p), FMLP_ERR_INVALID_ARGUMENT, "shard", "plan of no shard");
    fmlp_tp_set_chunks(tp, 0);
    if (tu_check(fmlp_tp_plan(tp, shard, FMLP_MODE_FUSED, 65536, &p) == FMLP_OK, "plan by rule: %s", fmlp_last_error()))
        tu_check(p.chunks == 1 && strstr(p.why, "one rank"), "the rule does not cut y in a world of one: %s", p.why);
    fmlp_mlp_destroy(shard);
    fmlp_mlp_destroy(full);
}

/* FMLP_TP_CHUNKS, read as a rank joins, wins over fmlp_tp_set_chunks; a
 * bad value fails the join before NCCL is called. */
static void env_checks(fmlp_ctx *ctx)
{
    fmlp_tp *tp = NULL;
    setenv("FMLP_TP_CHUNKS", "lots", 1);
    fails_with(fmlp_tp_init_all(&ctx, 1, &tp), FMLP_ERR_INVALID_ARGUMENT, "FMLP_TP_CHUNKS=\"lots\"", "a bad FMLP_TP_CHUNKS");
    setenv("FMLP_TP_CHUNKS", "5", 1);
    const fmlp_mlp_desc d = {FMLP_BLOCK_STACK, DIM, HIDDEN, 0, 2, FMLP_ACT_RELU, false, FMLP_BF16};
    fmlp_mlp *full = NULL, *shard = NULL;
    fmlp_tp_plan_info p;
    fmlp_status s = fmlp_tp_init_all(&ctx, 1, &tp);
    if (s == FMLP_OK) s = fmlp_tp_set_chunks(tp, 2);
    if (s == FMLP_OK) s = fmlp_mlp_create(ctx, &d, 2, &full);
    if (s == FMLP_OK) s = fmlp_mlp_shard(full, ctx, 0, 1, &shard);
    if (s == FMLP_OK) s = fmlp_tp_plan(tp, shard, FMLP_MODE_FUSED, 640, &p);
    if (tu_check(s == FMLP_OK, "FMLP_TP_CHUNKS=5: %s", fmlp_last_error()))
        tu_check(p.chunks == 5 && p.overlapped && strstr(p.why, "FMLP_TP_CHUNKS=5") && p.chunk_rows == 128,
                 "FMLP_TP_CHUNKS=5 wins over fmlp_tp_set_chunks(2): %d chunks of %lld rows (%s)", p.chunks,
                 (long long)p.chunk_rows, p.why);
    if (s == FMLP_OK) {
        tp_data t;
        if (data_make(ctx, full, 640, &t)) {
            s = fmlp_tp_forward_all(&tp, &shard, FMLP_MODE_EAGER, &t.x, &t.y, 1);
            const double err = s == FMLP_OK ? data_err(ctx, &t) : INFINITY;
            tu_check(s == FMLP_OK && err <= tu_tol(FMLP_BF16), "grouped forward of a 2-layer stack in 5 chunks: "
                     "err=%.2e %s", err, s == FMLP_OK ? "" : fmlp_last_error());
            data_free(ctx, &t);
        }
    }
    unsetenv("FMLP_TP_CHUNKS");
    fmlp_mlp_destroy(shard);
    fmlp_mlp_destroy(full);
    fmlp_tp_destroy(tp);
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
    unsetenv("FMLP_TP_CHUNKS"); /* the chunk counts are the tests' own */
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
            overlap_checks(ctx, tp);
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
    env_checks(ctx);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
