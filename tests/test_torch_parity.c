/* Why: issue 2's acceptance is that an MLP saved from a PyTorch module runs
 * in fmlp, in every mode, and gives that module's output: ‖y − y_torch‖ /
 * ‖y_torch‖ ≤ 1e-5 in f32 and ≤ 1e-2 in bf16. The fixtures in tests/data
 * (made by tests/data/make_torch_fixtures.py with real PyTorch) hold the
 * state_dict and PyTorch's own x and y; this test checks them through the
 * public API (desc from the file, create, load, forward) and through the CLI
 * (`fmlp mlp --weights --input --output`, path in FMLP_CLI), so neither path
 * can drift from PyTorch unnoticed. Shapes too: the API folds x's leading
 * dims into rows and y comes back in PyTorch's row order, and the CLI writes
 * y with x's leading dims, exactly the shape PyTorch returned, for x given
 * as (batch, seq, dim), (rows, dim) or (dim). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test_util.h"

typedef struct {
    const char *name;    /* files NAME.safetensors and NAME_io.safetensors */
    const char *cli_act; /* the CLI's --act */
    fmlp_act act;
    fmlp_block block;
    fmlp_dtype dtype;
    const char *prefix;  /* NULL: tensors at the top level */
} fixture;

static const fixture FIXTURES[] = {
    {"geglu_f32", "geglu", FMLP_ACT_GELU_TANH, FMLP_BLOCK_GATED, FMLP_F32, NULL},
    {"geglu_bf16", "geglu", FMLP_ACT_GELU_TANH, FMLP_BLOCK_GATED, FMLP_BF16, NULL},
    {"swiglu_bias_f32", "swiglu", FMLP_ACT_SILU, FMLP_BLOCK_GATED, FMLP_F32, NULL},
    {"swiglu_bias_bf16", "swiglu", FMLP_ACT_SILU, FMLP_BLOCK_GATED, FMLP_BF16, NULL},
    {"seq_gelu_f32", "gelu", FMLP_ACT_GELU, FMLP_BLOCK_STACK, FMLP_F32, NULL},
    {"seq_gelu_bf16", "gelu", FMLP_ACT_GELU, FMLP_BLOCK_STACK, FMLP_BF16, NULL},
    {"seq_relu_f32", "relu", FMLP_ACT_RELU, FMLP_BLOCK_STACK, FMLP_F32, NULL},
    {"seq_relu_bf16", "relu", FMLP_ACT_RELU, FMLP_BLOCK_STACK, FMLP_BF16, NULL},
    {"prefix_geglu_f32", "geglu", FMLP_ACT_GELU_TANH, FMLP_BLOCK_GATED, FMLP_F32, "model.layers.0.mlp."},
};
#define N_FIXTURES ((int)(sizeof FIXTURES / sizeof FIXTURES[0]))

static const fmlp_mode MODES[] = {FMLP_MODE_EAGER, FMLP_MODE_COMPILED, FMLP_MODE_FUSED, FMLP_MODE_AUTO};

/* FMLP_TEST_DATA (ctest sets it), else tests/data seen from the source or
 * a build directory. */
static const char *data_dir(void)
{
    const char *d = getenv("FMLP_TEST_DATA");
    if (d && d[0]) return d;
    static const char *guesses[] = {"tests/data", "../tests/data", "../../tests/data"};
    for (size_t i = 0; i < sizeof guesses / sizeof guesses[0]; i++) {
        char probe[256];
        snprintf(probe, sizeof probe, "%s/geglu_f32.safetensors", guesses[i]);
        FILE *f = fopen(probe, "rb");
        if (f) {
            fclose(f);
            return guesses[i];
        }
    }
    return "tests/data";
}

/* x and y_torch of one fixture: x in the fixture's dtype, y as doubles. */
typedef struct {
    int64_t rows, dim, out_rows, out_dim;
    void *x;
    double *y;
    int x_rank, y_rank; /* the full shapes, as PyTorch saved them */
    int64_t x_shape[FMLP_ST_MAX_RANK], y_shape[FMLP_ST_MAX_RANK];
} io_data;

static bool same_shape(int ra, const int64_t *a, int rb, const int64_t *b)
{
    bool same = ra == rb;
    for (int d = 0; same && d < ra; d++) same = a[d] == b[d];
    return same;
}

static bool load_io(const fixture *fx, io_data *io)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s_io.safetensors", data_dir(), fx->name);
    memset(io, 0, sizeof *io);
    fmlp_st_file *f = NULL;
    fmlp_status s = fmlp_st_open(path, &f);
    if (!tu_check(s == FMLP_OK, "%s: open %s: %s", fx->name, path, fmlp_last_error())) return false;
    fmlp_dtype xd, yd;
    bool ok = fmlp_st_find(f, "x", &xd, &io->rows, &io->dim, NULL) == FMLP_OK &&
              fmlp_st_find(f, "y", &yd, &io->out_rows, &io->out_dim, NULL) == FMLP_OK;
    ok = tu_check(ok && xd == fx->dtype && yd == fx->dtype && io->rows == io->out_rows,
                  "%s: x (%lld x %lld) and y (%lld x %lld) present in %s", fx->name, (long long)io->rows,
                  (long long)io->dim, (long long)io->out_rows, (long long)io->out_dim, fmlp_dtype_name(fx->dtype));
    if (ok) {
        io->x = malloc((size_t)(io->rows * io->dim) * fmlp_dtype_size(fx->dtype));
        float *yf = malloc((size_t)(io->rows * io->out_dim) * sizeof(float));
        io->y = malloc((size_t)(io->rows * io->out_dim) * sizeof(double));
        ok = io->x && yf && io->y &&
             fmlp_st_read(f, "x", fx->dtype, io->x, io->rows, io->dim) == FMLP_OK &&
             fmlp_st_read(f, "y", FMLP_F32, yf, io->rows, io->out_dim) == FMLP_OK;
        tu_check(ok, "%s: read x and y: %s", fx->name, ok ? "" : fmlp_last_error());
        ok = ok && fmlp_st_shape(f, "x", &io->x_rank, io->x_shape, FMLP_ST_MAX_RANK) == FMLP_OK &&
             fmlp_st_shape(f, "y", &io->y_rank, io->y_shape, FMLP_ST_MAX_RANK) == FMLP_OK;
        /* The rule fmlp follows, as PyTorch's own output shows it. */
        int64_t want[FMLP_ST_MAX_RANK];
        memcpy(want, io->x_shape, sizeof want);
        if (ok) want[io->x_rank - 1] = io->out_dim;
        tu_check(ok && io->x_rank == 3 && same_shape(io->y_rank, io->y_shape, io->x_rank, want),
                 "%s: torch's y keeps x's leading dims (x rank %d, y rank %d)", fx->name, io->x_rank, io->y_rank);
        for (int64_t i = 0; ok && i < io->rows * io->out_dim; i++) io->y[i] = yf[i];
        free(yf);
    }
    fmlp_st_close(f);
    return ok;
}

static void free_io(io_data *io)
{
    free(io->x);
    free(io->y);
}

/* Builds the MLP the way a user would: shape from the file, act from us. */
static fmlp_mlp *load_mlp(fmlp_ctx *ctx, const fixture *fx, const char *prefix)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.safetensors", data_dir(), fx->name);
    fmlp_mlp_desc d;
    memset(&d, 0, sizeof d);
    d.act = fx->act;
    d.dtype = fx->dtype;
    fmlp_status s = fmlp_mlp_desc_from_safetensors(path, prefix, &d);
    if (!tu_check(s == FMLP_OK, "%s: desc from %s (prefix \"%s\"): %s", fx->name, path, prefix ? prefix : "",
                  fmlp_last_error()))
        return NULL;
    tu_check(d.block == fx->block && d.act == fx->act && d.dtype == fx->dtype,
             "%s: desc block %d act %s dtype %s, dim %lld hidden %lld out %lld layers %d bias %d", fx->name,
             (int)d.block, fmlp_act_name(d.act), fmlp_dtype_name(d.dtype), (long long)d.dim, (long long)d.hidden,
             (long long)d.out_dim, d.layers, (int)d.bias);
    fmlp_mlp *mlp = NULL;
    s = fmlp_mlp_create(ctx, &d, 12345, &mlp);
    if (!tu_check(s == FMLP_OK, "%s: create: %s", fx->name, fmlp_last_error())) return NULL;
    s = fmlp_mlp_load_safetensors(mlp, path, prefix);
    if (!tu_check(s == FMLP_OK, "%s: load weights: %s", fx->name, fmlp_last_error())) {
        fmlp_mlp_destroy(mlp);
        return NULL;
    }
    return mlp;
}

/* Forward in `mode`; returns ‖y − y_torch‖ / ‖y_torch‖ (+Inf on failure). */
static double run_mode(fmlp_mlp *mlp, const fixture *fx, const io_data *io, fmlp_mode mode)
{
    size_t es = fmlp_dtype_size(fx->dtype);
    void *y = malloc((size_t)(io->rows * io->out_dim) * es);
    if (!y) return INFINITY;
    tu_poison(fx->dtype, y, io->rows * io->out_dim);
    fmlp_tensor tx = fmlp_tensor_view(io->x, fx->dtype, io->rows, io->dim, io->dim);
    fmlp_tensor ty = fmlp_tensor_view(y, fx->dtype, io->rows, io->out_dim, io->out_dim);
    fmlp_status s = fmlp_mlp_forward(mlp, mode, &tx, &ty);
    double err = INFINITY;
    if (s == FMLP_OK)
        err = tu_rel_err(fx->dtype, y, io->out_dim, io->y, io->out_dim, io->rows, io->out_dim);
    else
        fprintf(stderr, "  %s %s: forward: %s\n", fx->name, fmlp_mode_name(mode), fmlp_last_error());
    free(y);
    return err;
}

static void test_api(fmlp_ctx *ctx, const fixture *fx, const io_data *io)
{
    fmlp_mlp *mlp = load_mlp(ctx, fx, fx->prefix);
    if (!mlp) return;
    tu_check(fmlp_mlp_out_dim(mlp) == io->out_dim, "%s: out_dim %lld matches y", fx->name,
             (long long)fmlp_mlp_out_dim(mlp));
    double tol = tu_tol(fx->dtype);
    const char *path = fmlp_ctx_cpu_path(ctx, fx->dtype);
    for (size_t m = 0; m < sizeof MODES / sizeof MODES[0]; m++) {
        double err = run_mode(mlp, fx, io, MODES[m]);
        tu_check(err <= tol, "api %-17s %-8s %-10s rel err %.3e (bound %.0e)", fx->name, fmlp_mode_name(MODES[m]),
                 path, err, tol);
    }
    fmlp_mlp_destroy(mlp);
}

/* The prefix must select the right submodule: the decoy under layer 1 has
 * the same shapes, so only its output gives it away. */
static void test_wrong_prefix(fmlp_ctx *ctx, const fixture *fx, const io_data *io)
{
    fmlp_mlp *mlp = load_mlp(ctx, fx, "model.layers.1.mlp.");
    if (!mlp) return;
    double err = run_mode(mlp, fx, io, FMLP_MODE_EAGER);
    tu_check(err > 0.1, "%s: decoy prefix model.layers.1.mlp. gives another output (rel err %.3e)", fx->name, err);
    fmlp_mlp_destroy(mlp);

    char path[1024];
    snprintf(path, sizeof path, "%s/%s.safetensors", data_dir(), fx->name);
    fmlp_mlp_desc d;
    memset(&d, 0, sizeof d);
    d.act = fx->act;
    d.dtype = fx->dtype;
    fmlp_status s = fmlp_mlp_desc_from_safetensors(path, NULL, &d);
    tu_check(s != FMLP_OK && fmlp_last_error()[0], "%s: no prefix finds no MLP at the top level: %s: \"%s\"",
             fx->name, fmlp_status_name(s), fmlp_last_error());
}

static void test_cli(const char *cli, const fixture *fx, const io_data *io)
{
    double tol = tu_tol(fx->dtype);
    for (size_t m = 0; m < sizeof MODES / sizeof MODES[0]; m++) {
        const char *mode = fmlp_mode_name(MODES[m]);
        char out[1024], cmd[4096];
        snprintf(out, sizeof out, "%s/torch_parity_%s_%s.safetensors", tu_tmpdir(), fx->name, mode);
        remove(out);
        snprintf(cmd, sizeof cmd,
                 "'%s' mlp --weights '%s/%s.safetensors'%s%s%s --input '%s/%s_io.safetensors' --output '%s' "
                 "--act %s --mode %s --dtype %s --no-profile > '%s.log' 2>&1",
                 cli, data_dir(), fx->name, fx->prefix ? " --prefix '" : "", fx->prefix ? fx->prefix : "",
                 fx->prefix ? "'" : "", data_dir(), fx->name, out, fx->cli_act, mode, fmlp_dtype_name(fx->dtype),
                 out);
        int rc = system(cmd);
        if (!tu_check(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "cli %s %s: exit status %d (log %s.log)",
                      fx->name, mode, rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out))
            continue;
        fmlp_st_file *f = NULL;
        fmlp_dtype yd;
        int64_t rows = 0, cols = 0;
        if (!tu_check(fmlp_st_open(out, &f) == FMLP_OK && fmlp_st_find(f, "y", &yd, &rows, &cols, NULL) == FMLP_OK,
                      "cli %s %s: output has y: %s", fx->name, mode, fmlp_last_error())) {
            fmlp_st_close(f);
            continue;
        }
        double err = INFINITY;
        int rank = 0;
        int64_t shape[FMLP_ST_MAX_RANK] = {0};
        bool shaped = fmlp_st_shape(f, "y", &rank, shape, FMLP_ST_MAX_RANK) == FMLP_OK &&
                      same_shape(rank, shape, io->y_rank, io->y_shape);
        tu_check(shaped, "cli %s %s: y has torch's shape (rank %d, leading dim %lld)", fx->name, mode, rank,
                 (long long)shape[0]);
        if (tu_check(rows == io->rows && cols == io->out_dim && yd == fx->dtype,
                     "cli %s %s: y is %lld x %lld %s", fx->name, mode, (long long)rows, (long long)cols,
                     fmlp_dtype_name(yd))) {
            float *y = malloc((size_t)(rows * cols) * sizeof(float));
            if (y && fmlp_st_read(f, "y", FMLP_F32, y, rows, cols) == FMLP_OK)
                err = tu_rel_err(FMLP_F32, y, cols, io->y, io->out_dim, rows, cols);
            free(y);
        }
        fmlp_st_close(f);
        tu_check(err <= tol, "cli %-17s %-8s rel err %.3e (bound %.0e)", fx->name, mode, err, tol);
    }
}

/* x given to the CLI as (rows, dim), and its first row as (dim): y comes
 * back as (rows, out_dim) and (out_dim), holding torch's values. */
static void test_cli_ranks(const char *cli, const fixture *fx, const io_data *io)
{
    for (int rank = 2; rank >= 1; rank--) {
        char in[1024], out[1024], cmd[4096];
        snprintf(in, sizeof in, "%s/rank%d_%s_x.safetensors", tu_tmpdir(), rank, fx->name);
        snprintf(out, sizeof out, "%s/rank%d_%s_y.safetensors", tu_tmpdir(), rank, fx->name);
        remove(out);
        int64_t rows = rank == 2 ? io->rows : 1;
        fmlp_st_tensor x = {"x", fx->dtype, rank, {rows, io->dim, 0}, io->x};
        if (rank == 1) x.shape[0] = io->dim;
        if (!tu_check(fmlp_st_write(in, &x, 1) == FMLP_OK, "rank %d x written: %s", rank, fmlp_last_error())) continue;
        snprintf(cmd, sizeof cmd,
                 "'%s' mlp --weights '%s/%s.safetensors' --input '%s' --output '%s' --act %s --mode fused --dtype %s "
                 "--iters 1 --no-profile > '%s.log' 2>&1",
                 cli, data_dir(), fx->name, in, out, fx->cli_act, fmlp_dtype_name(fx->dtype), out);
        int rc = system(cmd);
        fmlp_st_file *f = NULL;
        int yr = 0;
        int64_t ys[FMLP_ST_MAX_RANK] = {0};
        bool ok = rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0 && fmlp_st_open(out, &f) == FMLP_OK &&
                  fmlp_st_shape(f, "y", &yr, ys, FMLP_ST_MAX_RANK) == FMLP_OK;
        int64_t want[2] = {rows, io->out_dim};
        bool shaped = ok && same_shape(yr, ys, rank, rank == 2 ? want : want + 1);
        tu_check(shaped,
                 "cli x of rank %d: y of rank %d (%lld, ...), want %s", rank, yr, (long long)ys[0],
                 rank == 2 ? "(rows, out_dim)" : "(out_dim)");
        float *y = malloc((size_t)(rows * io->out_dim) * sizeof(float));
        double err = ok && y && fmlp_st_read(f, "y", FMLP_F32, y, rank == 2 ? rows : io->out_dim, rank == 2 ? io->out_dim : 1) == FMLP_OK
                         ? tu_rel_err(FMLP_F32, y, io->out_dim, io->y, io->out_dim, rows, io->out_dim)
                         : INFINITY;
        tu_check(err <= tu_tol(fx->dtype), "cli x of rank %d: y matches torch's rows, rel err %.3e", rank, err);
        free(y);
        fmlp_st_close(f);
    }
}

/* The API checks run on every CPU code path this machine can run (or only
 * the one FMLP_CPU_PATH forces); the CLI checks on the default path. */
int main(void)
{
    tu_seed();
    fmlp_cpu_path_info paths[16];
    int np = fmlp_cpu_paths(paths, 16);
    const char *forced = getenv("FMLP_CPU_PATH");
    if (forced && forced[0]) np = 0;
    const char *names[17];
    int nn = 0;
    names[nn++] = NULL; /* the default path, with the CLI checks */
    for (int i = 0; i < np && i < 16; i++)
        if (paths[i].available) names[nn++] = paths[i].name;
    const char *cli = getenv("FMLP_CLI");
    if (!cli || !cli[0]) tu_skip("CLI checks: FMLP_CLI is not set (ctest sets it to the fmlp program)");
    for (int p = 0; p < nn; p++) {
        fmlp_ctx *ctx = NULL;
        fmlp_ctx_options opt = fmlp_ctx_options_default();
        opt.cpu_path = names[p];
        if (!tu_check(fmlp_ctx_create(&opt, &ctx) == FMLP_OK, "context (path %s): %s",
                      names[p] ? names[p] : "default", fmlp_last_error()))
            continue;
        printf("== data %s, CPU path %s: f32 runs %s, bf16 runs %s, %d threads\n", data_dir(),
               names[p] ? names[p] : "default", fmlp_ctx_cpu_path(ctx, FMLP_F32), fmlp_ctx_cpu_path(ctx, FMLP_BF16),
               fmlp_ctx_threads(ctx));
        for (int i = 0; i < N_FIXTURES; i++) {
            const fixture *fx = &FIXTURES[i];
            io_data io;
            if (!load_io(fx, &io)) {
                free_io(&io);
                continue;
            }
            test_api(ctx, fx, &io);
            if (p == 0 && fx->prefix) test_wrong_prefix(ctx, fx, &io);
            if (p == 0 && cli && cli[0]) test_cli(cli, fx, &io);
            if (p == 0 && cli && cli[0] && i == 0) test_cli_ranks(cli, fx, &io);
            free_io(&io);
        }
        fmlp_ctx_destroy(ctx);
    }
    return tu_finish();
}
