/* Why: the overlapped tensor-parallel forward cuts y into row chunks,
 * runs the down GEMM chunk by chunk and all-reduces each chunk; only the
 * NCCL calls need GPUs. Everything else is checked here on the CPU: the
 * chunks cover y's rows once, in order, never empty, on 128-row
 * boundaries where they can, whatever the row count (counts that do not
 * divide it, more chunks than rows); the rule and FMLP_TP_CHUNKS choose
 * and name the count; the executor's split forward, its last kernel run
 * chunk by chunk into a poisoned y, equals the whole forward bit for bit
 * in every mode; the shards of an MLP, each split that way and summed
 * chunk by chunk (the all-reduce), match the f64 reference; and a rank's
 * printed plan says how y is reduced. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plan/tp_chunks.h"
#include "test_util.h"

/* Chunk c's rows, checked against the chunks before it. */
static void check_ranges(int64_t rows, int chunks)
{
    int64_t next = 0;
    bool ok = true, aligned = true;
    const bool can_align = rows >= (int64_t)FMLP_TP_CHUNK_ALIGN * chunks;
    for (int c = 0; c < chunks && ok; c++) {
        int64_t b = -1, n = -1;
        fmlp_tp_chunk_range(rows, chunks, c, &b, &n);
        ok = b == next && n >= 1;
        aligned = aligned && (!can_align || b % FMLP_TP_CHUNK_ALIGN == 0);
        next = b + n;
    }
    tu_check(ok && next == rows, "%d chunks of %lld rows: each begins where the last ended, none empty, all rows covered",
             chunks, (long long)rows);
    if (can_align) tu_check(aligned, "%d chunks of %lld rows begin on multiples of %d rows", chunks, (long long)rows,
                            FMLP_TP_CHUNK_ALIGN);
}

static void check_pick(void)
{
    char why[160];
    /* the tutorial's 8192 x 768 bf16 y: 12.6 MB, two chunks of 4096 rows keep 6.3 MB each */
    tu_check(fmlp_tp_chunks_pick(0, "", 2, 8192, 768, FMLP_BF16, why, sizeof why) == 2 && strstr(why, "rule"),
             "rule: 8192 x 768 bf16 over 2 ranks -> 2 chunks (%s)", why);
    tu_check(fmlp_tp_chunks_pick(0, "", 8, 8192, 4096, FMLP_BF16, why, sizeof why) == 4,
             "rule: 8192 x 4096 bf16 over 8 ranks -> 4 chunks (%s)", why);
    tu_check(fmlp_tp_chunks_pick(0, "", 2, 64, 768, FMLP_BF16, why, sizeof why) == 1 && strstr(why, "too few"),
             "rule: 64 rows are not cut (%s)", why);
    tu_check(fmlp_tp_chunks_pick(0, "", 1, 65536, 8192, FMLP_F32, why, sizeof why) == 1 && strstr(why, "one rank"),
             "rule: a world of one is not cut (%s)", why);
    tu_check(fmlp_tp_chunks_pick(3, "chunks set to ", 1, 100, 8, FMLP_F32, why, sizeof why) == 3 &&
                 strcmp(why, "chunks set to 3") == 0,
             "asked for 3: 3 even in a world of one (%s)", why);
    tu_check(fmlp_tp_chunks_pick(8, "FMLP_TP_CHUNKS=", 2, 5, 8, FMLP_F32, why, sizeof why) == 5 &&
                 strstr(why, "FMLP_TP_CHUNKS=8") && strstr(why, "one chunk per row"),
             "asked for 8 of 5 rows: 5 (%s)", why);
}

static void check_env(void)
{
    int n = 7;
    unsetenv("FMLP_TP_CHUNKS");
    tu_check(fmlp_tp_chunks_env(&n) == FMLP_OK && n == -1, "FMLP_TP_CHUNKS unset: -1 (%d)", n);
    setenv("FMLP_TP_CHUNKS", "4", 1);
    tu_check(fmlp_tp_chunks_env(&n) == FMLP_OK && n == 4, "FMLP_TP_CHUNKS=4: 4 (%d)", n);
    setenv("FMLP_TP_CHUNKS", "0", 1);
    tu_check(fmlp_tp_chunks_env(&n) == FMLP_OK && n == 0, "FMLP_TP_CHUNKS=0: the rule (%d)", n);
    const char *bad[] = {"-1", "65", "two", "3x"};
    for (int i = 0; i < 4; i++) {
        setenv("FMLP_TP_CHUNKS", bad[i], 1);
        fmlp_status s = fmlp_tp_chunks_env(&n);
        tu_check(s == FMLP_ERR_INVALID_ARGUMENT && strstr(fmlp_last_error(), bad[i]) &&
                     strstr(fmlp_last_error(), "64"),
                 "FMLP_TP_CHUNKS=%s refused naming the value and the range: %s", bad[i], fmlp_last_error());
    }
    unsetenv("FMLP_TP_CHUNKS");
}

/* The split forward of `m` in `chunks` chunks into y. */
static fmlp_status split_forward(fmlp_mlp *m, fmlp_mode mode, const fmlp_tensor *x, fmlp_tensor *y, int chunks,
                                 bool *split)
{
    fmlp_exec_split sp;
    fmlp_status s = fmlp_exec_split_begin(m, mode, x, y, &sp);
    if (s != FMLP_OK) return s;
    *split = sp.split;
    for (int c = 0; c < chunks && s == FMLP_OK && sp.split; c++) {
        int64_t r0, n;
        fmlp_tp_chunk_range(x->rows, chunks, c, &r0, &n);
        s = fmlp_exec_split_rows(&sp, r0, n);
    }
    return fmlp_exec_split_end(&sp, s);
}

static const tu_shape_case cases[] = {
    {"geglu+bias", FMLP_BLOCK_GATED, FMLP_ACT_GELU_TANH, 0, 40, 96, 0, true},
    {"swiglu", FMLP_BLOCK_GATED, FMLP_ACT_SILU, 0, 33, 50, 27, false},
    {"stack-relu-2+bias", FMLP_BLOCK_STACK, FMLP_ACT_RELU, 2, 24, 77, 0, true},
};

/* Split in every mode = whole, bit for bit, and within bound of f64. */
static void check_split(fmlp_ctx *ctx, const tu_shape_case *c, fmlp_dtype dt, int64_t rows, int chunks)
{
    fmlp_mlp_desc d = {c->block, c->dim, c->hidden, c->out_dim, c->layers, c->act, c->bias, dt};
    fmlp_mlp *m;
    if (!tu_check(fmlp_mlp_create(ctx, &d, tu_rand_u64(), &m) == FMLP_OK, "create %s: %s", c->name, fmlp_last_error()))
        return;
    const int64_t out = fmlp_mlp_out_dim(m);
    const size_t es = fmlp_dtype_size(dt), ny = (size_t)(rows * out);
    void *x = malloc((size_t)(rows * c->dim) * es), *y = malloc(ny * es), *whole = malloc(ny * es);
    double *xr = malloc(sizeof(double) * (size_t)(rows * c->dim)), *ref = malloc(sizeof(double) * ny);
    tu_fill(dt, x, rows * c->dim, -2.0, 2.0, xr);
    tu_mlp_reference(m, xr, rows, ref);
    fmlp_tensor tx = fmlp_tensor_view(x, dt, rows, c->dim, c->dim), ty = fmlp_tensor_view(y, dt, rows, out, out),
                tw = fmlp_tensor_view(whole, dt, rows, out, out);
    const fmlp_mode modes[] = {FMLP_MODE_EAGER, FMLP_MODE_COMPILED, FMLP_MODE_FUSED};
    for (int i = 0; i < 3; i++) {
        bool split = false;
        tu_poison(dt, y, (int64_t)ny);
        tu_poison(dt, whole, (int64_t)ny);
        fmlp_status s = fmlp_mlp_forward(m, modes[i], &tx, &tw);
        if (s == FMLP_OK) s = split_forward(m, modes[i], &tx, &ty, chunks, &split);
        if (!tu_check(s == FMLP_OK && split, "%s %s %s: split forward of %lld rows in %d chunks: %s", c->name,
                      fmlp_dtype_name(dt), fmlp_mode_name(modes[i]), (long long)rows, chunks,
                      s == FMLP_OK ? "its last kernel was not split" : fmlp_last_error()))
            continue;
        const double err = tu_rel_err(dt, y, out, ref, out, rows, out);
        tu_check(memcmp(y, whole, ny * es) == 0 && err <= tu_tol_mode(c, dt, modes[i]),
                 "%s %s %s: %lld rows in %d chunks = the whole forward bit for bit, err=%.2e vs f64", c->name,
                 fmlp_dtype_name(dt), fmlp_mode_name(modes[i]), (long long)rows, chunks, err);
    }
    free(x);
    free(y);
    free(whole);
    free(xr);
    free(ref);
    fmlp_mlp_destroy(m);
}

/* The CPU's stand-in for the overlapped tensor-parallel forward: each
 * rank's shard split into chunks, each chunk summed over the ranks as it
 * is done. */
static void check_ranks(fmlp_ctx *ctx, const tu_shape_case *c, fmlp_dtype dt, int world, int64_t rows, int chunks)
{
    fmlp_mlp_desc d = {c->block, c->dim, c->hidden, c->out_dim, c->layers, c->act, c->bias, dt};
    fmlp_mlp *full, *shards[8] = {0};
    if (fmlp_mlp_create(ctx, &d, tu_rand_u64(), &full) != FMLP_OK) return;
    const int64_t out = fmlp_mlp_out_dim(full);
    const size_t es = fmlp_dtype_size(dt), ny = (size_t)(rows * out);
    void *x = malloc((size_t)(rows * c->dim) * es), *y = malloc(ny * es);
    double *xr = malloc(sizeof(double) * (size_t)(rows * c->dim)), *ref = malloc(sizeof(double) * ny);
    double *sum = calloc(ny, sizeof(double));
    tu_fill(dt, x, rows * c->dim, -2.0, 2.0, xr);
    tu_mlp_reference(full, xr, rows, ref);
    fmlp_tensor tx = fmlp_tensor_view(x, dt, rows, c->dim, c->dim), ty = fmlp_tensor_view(y, dt, rows, out, out);
    fmlp_status s = FMLP_OK;
    for (int r = 0; r < world && s == FMLP_OK; r++) s = fmlp_mlp_shard(full, ctx, r, world, &shards[r]);
    /* NCCL would sum one y per rank; here each rank's chunk is added up
     * before the next rank writes its own */
    for (int ch = 0; ch < chunks && s == FMLP_OK; ch++) {
        int64_t r0, n;
        fmlp_tp_chunk_range(rows, chunks, ch, &r0, &n);
        for (int r = 0; r < world && s == FMLP_OK; r++) {
            fmlp_exec_split sp;
            tu_poison(dt, y, (int64_t)ny);
            s = fmlp_exec_split_begin(shards[r], FMLP_MODE_FUSED, &tx, &ty, &sp);
            if (s == FMLP_OK) s = fmlp_exec_split_end(&sp, fmlp_exec_split_rows(&sp, r0, n));
            for (int64_t i = r0 * out; s == FMLP_OK && i < (r0 + n) * out; i++) sum[i] += tu_get(dt, y, i);
        }
    }
    if (tu_check(s == FMLP_OK, "%s %s world=%d: shards split in %d chunks: %s", c->name, fmlp_dtype_name(dt), world,
                 chunks, s == FMLP_OK ? "" : fmlp_last_error())) {
        const double err = tu_rel_err_f64(sum, ref, (int64_t)ny);
        tu_check(err <= tu_tol_case(c, dt), "%s %s world=%d rows=%lld chunks=%d: summed chunks vs f64 err=%.2e",
                 c->name, fmlp_dtype_name(dt), world, (long long)rows, chunks, err);
    }
    for (int r = 0; r < world; r++) fmlp_mlp_destroy(shards[r]);
    fmlp_mlp_destroy(full);
    free(x);
    free(y);
    free(xr);
    free(ref);
    free(sum);
}

/* A 1-layer stack's plan is one GEMM reading x: nothing to split. */
static void check_unsplit(fmlp_ctx *ctx)
{
    fmlp_mlp_desc d = {FMLP_BLOCK_STACK, 16, 0, 8, 1, FMLP_ACT_NONE, true, FMLP_F32};
    fmlp_mlp *m;
    if (fmlp_mlp_create(ctx, &d, 3, &m) != FMLP_OK) return;
    float x[4 * 16], y[4 * 8], whole[4 * 8];
    tu_fill(FMLP_F32, x, 4 * 16, -1, 1, NULL);
    tu_poison(FMLP_F32, y, 4 * 8);
    fmlp_tensor tx = fmlp_tensor_view(x, FMLP_F32, 4, 16, 16), ty = fmlp_tensor_view(y, FMLP_F32, 4, 8, 8),
                tw = fmlp_tensor_view(whole, FMLP_F32, 4, 8, 8);
    fmlp_exec_split sp;
    fmlp_status s = fmlp_mlp_forward(m, FMLP_MODE_FUSED, &tx, &tw);
    if (s == FMLP_OK) s = fmlp_exec_split_begin(m, FMLP_MODE_FUSED, &tx, &ty, &sp);
    if (tu_check(s == FMLP_OK, "split begin of a Linear: %s", fmlp_last_error())) {
        tu_check(!sp.split && memcmp(y, whole, sizeof y) == 0, "a Linear is not split: begin ran it whole");
        tu_expect_fail(fmlp_exec_split_rows(&sp, 0, 2), FMLP_ERR_INTERNAL, "rows of an unsplit forward");
        fmlp_exec_split_end(&sp, FMLP_OK);
    }
    tu_expect_fail(fmlp_exec_split_begin(NULL, FMLP_MODE_FUSED, &tx, &ty, &sp), FMLP_ERR_INVALID_ARGUMENT, "NULL mlp");
    fmlp_mlp_destroy(m);
}

static void check_print(void)
{
    fmlp_tp_plan_info p;
    memset(&p, 0, sizeof p);
    p.rank = 1;
    p.world = 2;
    p.hidden = 1536;
    p.chunks = 4;
    p.chunk_rows = 2048;
    p.overlapped = true;
    p.reduce_bytes = 8192 * 768 * 2;
    snprintf(p.why, sizeof p.why, "FMLP_TP_CHUNKS=4");
    p.plan.mode = p.plan.resolved = FMLP_MODE_FUSED;
    p.plan.rows = 8192;
    p.plan.device = FMLP_DEVICE_CUDA;
    p.plan.dtype = FMLP_BF16;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return;
    fmlp_tp_plan_print(&p, f);
    p.chunks = 1;
    p.overlapped = false;
    fmlp_tp_plan_print(&p, f);
    fmlp_tp_plan_print(NULL, f);
    fclose(f);
    tu_check(strstr(text, "rank 1 of 2: 1536 hidden features") != NULL, "the plan names the rank and its features");
    tu_check(strstr(text, "down in 4 row chunks of up to 2048 rows") && strstr(text, "overlapped on stream 2") &&
                 strstr(text, "12.58 MB") && strstr(text, "(FMLP_TP_CHUNKS=4)"),
             "the overlapped plan says how y is cut, reduced and why");
    tu_check(strstr(text, "then all-reduce y (12.58 MB, NCCL, sum over 2 ranks) on the forward's stream") != NULL,
             "the unchunked plan reduces y after the forward");
    free(text);
}

int main(void)
{
    tu_seed();
    const int64_t rows[] = {1, 7, 127, 128, 129, 300, 1000, 4096, 8191};
    const int chunks[] = {1, 2, 3, 4, 7, 64};
    for (int r = 0; r < 9; r++)
        for (int c = 0; c < 6; c++)
            if (chunks[c] <= rows[r]) check_ranges(rows[r], chunks[c]);
    check_pick();
    check_env();
    fmlp_ctx *ctx = tu_ctx(2);
    if (!ctx) return tu_finish();
    const fmlp_dtype dts[] = {FMLP_F32, FMLP_BF16};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int t = 0; t < 2; t++) {
            check_split(ctx, &cases[c], dts[t], 37, 3);
            check_split(ctx, &cases[c], dts[t], 5, 5);
            check_split(ctx, &cases[c], dts[t], 300, 4);
            check_ranks(ctx, &cases[c], dts[t], 3, 29, 4);
        }
    check_unsplit(ctx);
    check_print();
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
