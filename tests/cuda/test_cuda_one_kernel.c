/* Why: at up to 16 rows on Hopper a gated MLP's fused forward is one
 * cooperative kernel (mlp_one.cu): a grid-wide barrier between gate/up and
 * down, and the down projection's K pieces added by whichever team
 * finishes its output group last, or by SMs that hold a down group in
 * shared memory; or the row-streaming forms (mlp_stream.cu at one row,
 * mlp_stream_mma.cu at 2..16), whose blocks own shares of columns that cut
 * across the gate/up packing and stream K in one pass or several; or the
 * hidden-slice form at one row where it fits (mlp_slice.cu). A
 * missing barrier or a miscounted piece shows up only at some row counts
 * and shapes, so every row count 1..16 is run, on shapes that take each
 * way and put the down projection in one piece and in many, outputs off
 * the 16-column grid, K split over 1 to 16 warps, with and without bias;
 * each result is held to the f64 reference, repeated and replayed from a
 * graph for the same bits and replayed with a new x, and the plan must
 * name the kernel. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test.h"

typedef struct {
    int64_t dim, hidden, out;
    fmlp_act act;
    bool bias;
} shape;

static const shape shapes[] = {
    {768, 3072, 768, FMLP_ACT_GELU_TANH, true}, /* the tutorial's: down groups resident in shared memory */
    {200, 328, 77, FMLP_ACT_SILU, false},       /* resident, outputs off the grid of 16 */
    {256, 5376, 520, FMLP_ACT_GELU_TANH, true}, /* down streamed (168 KB a group), K in many pieces */
    {64, 64, 8200, FMLP_ACT_GELU, true},        /* more output groups than SMs: streamed, one piece each */
    {520, 9000, 300, FMLP_ACT_SILU, true},      /* one row: the down rows split over all 16 warps */
    {1000, 4200, 1000, FMLP_ACT_SILU, true},    /* hidden slices of 31-32 columns, dim and out past 768 */
    {136, 48, 24, FMLP_ACT_GELU, false},        /* hidden slices: most blocks own no column and no output */
};

static bool hopper(fmlp_ctx *ctx)
{
    fmlp_device_props p;
    return ctx->be->device_props && ctx->be->device_props(ctx, &p) && p.compute_major == 9;
}

/* The device's SMs: the hidden-slice form takes at most 32 hidden columns a block, one block an SM. */
static int sm_count(fmlp_ctx *ctx)
{
    fmlp_device_props p;
    return ctx->be->device_props && ctx->be->device_props(ctx, &p) ? p.num_sms : 0;
}

/* `want`: the substring the one kernel's name must hold, NULL when the plan is not checked. */
static void run_case(fmlp_ctx *ctx, const shape *sh, fmlp_dtype dt, int64_t rows, const char *want)
{
    const fmlp_mlp_desc d = {FMLP_BLOCK_GATED, sh->dim, sh->hidden, sh->out, 0, sh->act, sh->bias, dt};
    char what[96];
    snprintf(what, sizeof what, "%s %lldx%lldx%lld rows=%lld", fmlp_dtype_name(dt), (long long)sh->dim,
             (long long)sh->hidden, (long long)sh->out, (long long)rows);
    fmlp_mlp *m = NULL;
    if (!tu_check(fmlp_mlp_create(ctx, &d, 5 + (uint64_t)rows, &m) == FMLP_OK, "%s: create: %s", what, fmlp_last_error()))
        return;
    fmlp_plan_info plan;
    if (tu_check(fmlp_mlp_plan(m, FMLP_MODE_FUSED, rows, &plan) == FMLP_OK, "%s: plan: %s", what, fmlp_last_error()) &&
        want)
        tu_check(plan.n_kernels == 1 && strstr(plan.kernels[0].name, want) != NULL, "%s: fused is one %s kernel (%d, %s)",
                 what, want, plan.n_kernels, plan.kernels[0].name);

    const int64_t nx = rows * sh->dim, ny = rows * sh->out;
    uint16_t *hx = malloc(2 * (size_t)nx), *hy = malloc(2 * (size_t)ny), *h2 = malloc(2 * (size_t)ny);
    uint16_t *hp = malloc(2 * (size_t)ny);
    double *xr = malloc(sizeof(double) * (size_t)nx), *ref = malloc(sizeof(double) * (size_t)ny);
    tu_fill(dt, hx, nx, -1, 1, xr);
    tu_poison(dt, hp, ny);
    tu_mlp_reference(m, xr, rows, ref);
    fmlp_tensor x, y;
    fmlp_status s = ct_upload(ctx, dt, hx, rows, sh->dim, sh->dim, &x);
    if (s == FMLP_OK) s = ct_upload(ctx, dt, hp, rows, sh->out, sh->out, &y);
    if (s == FMLP_OK) s = fmlp_mlp_forward(m, FMLP_MODE_FUSED, &x, &y);
    if (s == FMLP_OK) s = fmlp_ctx_synchronize(ctx);
    if (s == FMLP_OK) s = ct_download(ctx, &y, hy);
    if (tu_check(s == FMLP_OK, "%s: forward: %s", what, fmlp_last_error())) {
        const double err = tu_rel_err(dt, hy, sh->out, ref, sh->out, rows, sh->out);
        tu_check(err <= tu_tol(dt), "%s: against f64: err=%.2e (bound %.0e)", what, err, tu_tol(dt));
        /* again over a poisoned y, then from a graph: the same bits */
        for (int g = 0; g < 2 && s == FMLP_OK; g++) {
            s = ctx->be->copy(ctx, y.data, FMLP_DEVICE_CUDA, hp, FMLP_DEVICE_CPU, 2 * (size_t)ny);
            if (s == FMLP_OK) s = g ? ct_forward_graph(m, FMLP_MODE_FUSED, &x, &y) : fmlp_mlp_forward(m, FMLP_MODE_FUSED, &x, &y);
            if (s == FMLP_OK) s = fmlp_ctx_synchronize(ctx);
            if (s == FMLP_OK) s = ct_download(ctx, &y, h2);
            tu_check(s == FMLP_OK && memcmp(hy, h2, 2 * (size_t)ny) == 0, "%s: %s gives the same bits: %s", what,
                     g ? "a graph replay" : "a second forward", s == FMLP_OK ? "" : fmlp_last_error());
        }
    }
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    free(hx);
    free(hy);
    free(h2);
    free(hp);
    free(xr);
    free(ref);
    fmlp_mlp_destroy(m);
}

/* x rows that are not 16-byte aligned take the two GEMMs instead, still right. */
static void misaligned(fmlp_ctx *ctx, fmlp_dtype dt)
{
    const shape *sh = &shapes[0];
    const int64_t rows = 5, ld = sh->dim + 1;
    const fmlp_mlp_desc d = {FMLP_BLOCK_GATED, sh->dim, sh->hidden, sh->out, 0, sh->act, sh->bias, dt};
    fmlp_mlp *m = NULL;
    uint16_t *hx = malloc(2 * (size_t)(rows * ld)), *hy = malloc(2 * (size_t)(rows * sh->out));
    double *xr = malloc(sizeof(double) * (size_t)(rows * sh->dim)), *ref = malloc(sizeof(double) * (size_t)(rows * sh->out));
    for (int64_t r = 0; r < rows; r++) tu_fill(dt, hx + r * ld, sh->dim, -1, 1, xr + r * sh->dim);
    fmlp_tensor x, y;
    fmlp_status s = fmlp_mlp_create(ctx, &d, 3, &m);
    if (s == FMLP_OK) s = ct_upload(ctx, dt, hx, rows, sh->dim, ld, &x);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, dt, rows, sh->out, &y);
    if (s == FMLP_OK) s = fmlp_mlp_forward(m, FMLP_MODE_FUSED, &x, &y);
    if (s == FMLP_OK) s = fmlp_ctx_synchronize(ctx);
    if (s == FMLP_OK) s = ct_download(ctx, &y, hy);
    if (tu_check(s == FMLP_OK, "%s misaligned x rows: forward: %s", fmlp_dtype_name(dt), fmlp_last_error())) {
        tu_mlp_reference(m, xr, rows, ref);
        const double err = tu_rel_err(dt, hy, sh->out, ref, sh->out, rows, sh->out);
        tu_check(err <= tu_tol(dt), "%s misaligned x rows (ld %lld): against f64: err=%.2e", fmlp_dtype_name(dt),
                 (long long)ld, err);
    }
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    fmlp_mlp_destroy(m);
    free(hx);
    free(hy);
    free(xr);
    free(ref);
}

static int fused_kernels(fmlp_ctx *ctx, const fmlp_mlp_desc *d, int64_t rows, const char *what)
{
    fmlp_mlp *m = NULL;
    fmlp_plan_info p;
    int n = -1;
    if (tu_check(fmlp_mlp_create(ctx, d, 1, &m) == FMLP_OK && fmlp_mlp_plan(m, FMLP_MODE_FUSED, rows, &p) == FMLP_OK,
                 "%s: plan: %s", what, fmlp_last_error()))
        n = p.n_kernels;
    fmlp_mlp_destroy(m);
    return n;
}

/* A NaN in x's last row reaches every output of that row through every h,
 * and no output of the other rows. */
static void nan_spreads(fmlp_ctx *ctx, const shape *sh, int64_t rows)
{
    const fmlp_mlp_desc d = {FMLP_BLOCK_GATED, sh->dim, sh->hidden, sh->out, 0, sh->act, sh->bias, FMLP_BF16};
    const int64_t nx = rows * sh->dim, ny = rows * sh->out;
    uint16_t *hx = malloc(2 * (size_t)nx), *hy = malloc(2 * (size_t)ny);
    tu_fill(FMLP_BF16, hx, nx, -1, 1, NULL);
    hx[(rows - 1) * sh->dim + sh->dim / 3] = 0x7fc0; /* bf16 quiet NaN */
    fmlp_mlp *m = NULL;
    fmlp_tensor x, y;
    fmlp_status s = fmlp_mlp_create(ctx, &d, 9, &m);
    if (s == FMLP_OK) s = ct_upload(ctx, FMLP_BF16, hx, rows, sh->dim, sh->dim, &x);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, FMLP_BF16, rows, sh->out, &y);
    if (s == FMLP_OK) s = fmlp_mlp_forward(m, FMLP_MODE_FUSED, &x, &y);
    if (s == FMLP_OK) s = fmlp_ctx_synchronize(ctx);
    if (s == FMLP_OK) s = ct_download(ctx, &y, hy);
    if (tu_check(s == FMLP_OK, "NaN in x %lldx%lld rows=%lld: forward: %s", (long long)sh->dim, (long long)sh->hidden,
                 (long long)rows, fmlp_last_error())) {
        int64_t finite_last = 0, nan_other = 0;
        for (int64_t i = 0; i < ny; i++) {
            const bool nan = (hy[i] & 0x7f80) == 0x7f80 && (hy[i] & 0x7f) != 0;
            if (i >= (rows - 1) * sh->out) finite_last += !nan;
            else nan_other += nan;
        }
        tu_check(finite_last == 0 && nan_other == 0,
                 "NaN in x %lldx%lld rows=%lld: %lld outputs of the last row are not NaN, %lld of the others are",
                 (long long)sh->dim, (long long)sh->hidden, (long long)rows, (long long)finite_last, (long long)nan_other);
    }
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    fmlp_mlp_destroy(m);
    free(hx);
    free(hy);
}

/* Graph replays with a new x each time follow it: a form that kept
 * anything of the last forward in its scratch (counts, partial sums)
 * and trusted it would read the last x's results. */
static void replays_follow_x(fmlp_ctx *ctx, fmlp_dtype dt, int64_t rows)
{
    const shape *sh = &shapes[0];
    const fmlp_mlp_desc d = {FMLP_BLOCK_GATED, sh->dim, sh->hidden, sh->out, 0, sh->act, sh->bias, dt};
    const int64_t nx = rows * sh->dim, ny = rows * sh->out;
    fmlp_mlp *m = NULL;
    uint16_t *hx = malloc(2 * (size_t)nx), *hy = malloc(2 * (size_t)ny);
    double *xr = malloc(sizeof(double) * (size_t)nx), *ref = malloc(sizeof(double) * (size_t)ny);
    fmlp_tensor x = {0}, y = {0};
    fmlp_status s = fmlp_mlp_create(ctx, &d, 13, &m);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, dt, rows, sh->dim, &x);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, dt, rows, sh->out, &y);
    for (int r = 0; r < 4 && s == FMLP_OK; r++) {
        tu_fill(dt, hx, nx, -1, 1, xr);
        tu_mlp_reference(m, xr, rows, ref);
        s = ctx->be->copy(ctx, x.data, FMLP_DEVICE_CUDA, hx, FMLP_DEVICE_CPU, 2 * (size_t)nx);
        if (s == FMLP_OK) s = ct_forward_graph(m, FMLP_MODE_FUSED, &x, &y);
        if (s == FMLP_OK) s = fmlp_ctx_synchronize(ctx);
        if (s == FMLP_OK) s = ct_download(ctx, &y, hy);
        if (s != FMLP_OK) break;
        const double err = tu_rel_err(dt, hy, sh->out, ref, sh->out, rows, sh->out);
        tu_check(err <= tu_tol(dt), "%s rows=%lld: graph replay %d with a new x: against f64: err=%.2e", fmlp_dtype_name(dt),
                 (long long)rows, r, err);
    }
    tu_check(s == FMLP_OK, "%s rows=%lld: replays: %s", fmlp_dtype_name(dt), (long long)rows,
             s == FMLP_OK ? "" : fmlp_last_error());
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    fmlp_mlp_destroy(m);
    free(hx);
    free(hy);
    free(xr);
    free(ref);
}

/* A context made with one environment variable set, which is then unset. */
static fmlp_ctx *ctx_with(const char *name, const char *value)
{
    setenv(name, value, 1);
    fmlp_ctx *c = ct_ctx();
    unsetenv(name);
    return c;
}

/* By default one kernel where the down groups stay resident and, in the
 * row-streaming forms, where they would not; never above 16 rows, nor with
 * FMLP_CUDA_ONE_KERNEL=0; FMLP_CUDA_ROW_STREAM=0 keeps the two kernels
 * where the down projection would stream. */
static void where_not(fmlp_ctx *ctx)
{
    const fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 768, 3072, 0, 0, FMLP_ACT_GELU_TANH, true, FMLP_BF16};
    const fmlp_mlp_desc streamed = {FMLP_BLOCK_GATED, 256, 5376, 520, 0, FMLP_ACT_GELU_TANH, true, FMLP_BF16};
    int n = fused_kernels(ctx, &d, 17, "17 rows");
    tu_check(n == 2, "17 rows: fused is two kernels (%d)", n);
    fmlp_ctx *dflt = ct_ctx();
    if (dflt) {
        n = fused_kernels(dflt, &d, 1, "default, resident");
        tu_check(n == 1, "by default the tutorial's shape at 1 row is one kernel (%d)", n);
        n = fused_kernels(dflt, &streamed, 1, "default, streamed, 1 row");
        tu_check(n == 1, "by default a streamed down projection at 1 row is one (row-streaming) kernel (%d)", n);
        n = fused_kernels(dflt, &streamed, 2, "default, streamed, 2 rows");
        tu_check(n == 1, "by default a streamed down projection at 2 rows is one (row-streaming) kernel (%d)", n);
        fmlp_ctx_destroy(dflt);
    }
    fmlp_ctx *norow = ctx_with("FMLP_CUDA_ROW_STREAM", "0");
    if (norow) {
        n = fused_kernels(norow, &streamed, 1, "FMLP_CUDA_ROW_STREAM=0");
        tu_check(n == 2, "FMLP_CUDA_ROW_STREAM=0: a streamed down projection keeps two kernels at 1 row (%d)", n);
        n = fused_kernels(norow, &streamed, 16, "FMLP_CUDA_ROW_STREAM=0, 16 rows");
        tu_check(n == 2, "FMLP_CUDA_ROW_STREAM=0: a streamed down projection keeps two kernels at 16 rows (%d)", n);
        fmlp_ctx_destroy(norow);
    }
    fmlp_ctx *off = ctx_with("FMLP_CUDA_ONE_KERNEL", "0");
    if (!off) return;
    n = fused_kernels(off, &d, 1, "FMLP_CUDA_ONE_KERNEL=0");
    tu_check(n == 2, "FMLP_CUDA_ONE_KERNEL=0: fused is two kernels at 1 row (%d)", n);
    fmlp_ctx_destroy(off);
}

int main(void)
{
    tu_seed();
    /* every shape that fits, streamed down projections too; at one row the
     * other forms through contexts of their own */
    fmlp_ctx *ctx = ctx_with("FMLP_CUDA_ONE_KERNEL", "1");
    if (!ctx) return tu_finish();
    const bool one = hopper(ctx);
    if (!one) tu_skip("the one-kernel plan runs on Hopper only; checking the fused plan's results only");
    setenv("FMLP_CUDA_ONE_KERNEL", "1", 1);
    fmlp_ctx *norow = ctx_with("FMLP_CUDA_ROW_STREAM", "0");
    fmlp_ctx *noslice = ctx_with("FMLP_CUDA_SLICE", "0");
    unsetenv("FMLP_CUDA_ONE_KERNEL");
    fmlp_ctx *row = ctx_with("FMLP_CUDA_ROW_STREAM", "1");
    /* FMLP_TEST_QUICK (the sanitizer runs): three row counts, the forms
     * FMLP_CUDA_ROW_STREAM=0 keeps at one row only */
    const bool quick = getenv("FMLP_TEST_QUICK") != NULL;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        for (int64_t rows = 1; rows <= 16; rows += quick ? 7 : 1) {
            const bool f16 = rows % 5 == 1;
            run_case(ctx, &shapes[i], FMLP_BF16, rows, one ? "onekernel" : NULL);
            if (f16) run_case(ctx, &shapes[i], FMLP_F16, rows, one ? "onekernel" : NULL);
            if (norow && !quick) run_case(norow, &shapes[i], FMLP_BF16, rows, one ? "onekernel" : NULL);
            if (norow && f16) run_case(norow, &shapes[i], FMLP_F16, rows, one ? "onekernel" : NULL);
            if (row) run_case(row, &shapes[i], FMLP_BF16, rows, one ? "rowstream" : NULL);
            if (row && f16) run_case(row, &shapes[i], FMLP_F16, rows, one ? "rowstream" : NULL);
        }
    }
    /* the shapes the hidden-slice form takes name it at one row; with
     * FMLP_CUDA_SLICE=0 every shape takes one of the other forms there */
    const int sms = sm_count(ctx);
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const shape *sh = &shapes[i];
        const bool takes = sms > 0 && sh->out % 8 == 0 && sh->out <= 1024 && sh->dim <= 1024 &&
                           (sh->hidden + sms - 1) / sms <= 32;
        run_case(ctx, sh, FMLP_BF16, 1, one && takes ? "onekernel1_slice" : NULL);
        run_case(ctx, sh, FMLP_F16, 1, one && takes ? "onekernel1_slice" : NULL);
        if (noslice) run_case(noslice, sh, FMLP_BF16, 1, one ? "onekernel" : NULL);
        if (noslice) run_case(noslice, sh, FMLP_F16, 1, one ? "onekernel" : NULL);
    }
    for (int64_t rows = 1; rows <= 16; rows += 5) {
        if (row) nan_spreads(row, &shapes[0], rows);
        if (norow) nan_spreads(norow, &shapes[0], rows);
        nan_spreads(ctx, &shapes[4], rows);
    }
    for (int64_t rows = 1; rows <= 16; rows += 15) {
        replays_follow_x(ctx, FMLP_BF16, rows);
        replays_follow_x(ctx, FMLP_F16, rows);
        if (row) replays_follow_x(row, FMLP_F16, rows);
        if (noslice) replays_follow_x(noslice, FMLP_F16, rows);
    }
    misaligned(ctx, FMLP_BF16);
    misaligned(ctx, FMLP_F16);
    if (one) where_not(ctx);
    nan_spreads(ctx, &shapes[0], 1);
    if (noslice) nan_spreads(noslice, &shapes[0], 1);
    if (row) fmlp_ctx_destroy(row);
    if (noslice) fmlp_ctx_destroy(noslice);
    if (norow) fmlp_ctx_destroy(norow);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
