/* Why: `fmlp mlp` and `fmlp linear`, the tutorial's scripts as commands:
 * for each mode, print the plan (the guess), time the forward, profile it
 * (the look), and end with the speedup of each mode over eager. y keeps
 * the leading dims of x, as PyTorch's output does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "cli_commands.h"
#include "cli_io.h"
#include "cli_model.h"
#include "cli_profile.h"
#include "cli_run.h"
#include "cli_timing.h"

static void usage(FILE *f, bool linear)
{
    if (linear)
        fprintf(f, "usage: fmlp linear [--batch N] [--in-dim N] [--out-dim N] [--bias] [options]\n"
                   "Runs y = x @ W.T + b (nn.Linear) and profiles it.\n\n");
    else
        fprintf(f, "usage: fmlp mlp [--batch N] [--seq N] [--dim N] [--hidden N] [--act A] [--mode M] [--dtype D] [options]\n"
                   "Runs an MLP block in each mode, prints its plan, times and profiles it, and compares the modes.\n\n");
    cli_model_usage(f, linear);
    fprintf(f, "  --mode M           eager | compiled | fused | auto | all (default %s); a comma list works too\n"
               "  --dtype D          f32 | bf16 | f16 (default %s)\n"
               "  --input FILE       safetensors with tensor x of shape (batch, seq, dim), (rows, dim) or (dim)\n"
               "  --output FILE      write y (safetensors, tensor y, x's shape with out_dim last) from the last mode run\n"
               "  --explain          print each mode's plan and exit\n"
               "  --iters N          timed forwards per mode (default: repeat for about --budget seconds)\n"
               "  --budget S         seconds of timing per mode (default 1)\n",
            linear ? "eager" : "all", linear ? "f32" : "bf16");
    if (!linear)
        fprintf(f, "  --tp N             tensor parallelism over NCCL: the MLP sharded over GPUs 0..N-1, one rank each,\n"
                   "                     driven by this process (needs --device cuda); a plan and a profile per rank,\n"
                   "                     traces in DIR/<run>/rank<R>.json; FMLP_TP_CHUNKS=K cuts the down GEMM into K\n"
                   "                     row chunks whose all-reduces overlap the next chunk (docs/tensor_parallel.md)\n");
    cli_prof_usage(f);
}

static int parse_modes(const char *cmd, const char *s, fmlp_mode *modes, int *n)
{
    if (strcmp(s, "all") == 0) {
        modes[0] = FMLP_MODE_EAGER;
        modes[1] = FMLP_MODE_COMPILED;
        modes[2] = FMLP_MODE_FUSED;
        *n = 3;
        return 1;
    }
    char buf[128];
    const char *items[4];
    int k = cli_split_list(s, buf, sizeof buf, items, 4);
    for (int i = 0; i < k; i++) {
        if (!fmlp_mode_parse(items[i], &modes[i])) k = -1;
    }
    if (k < 1) {
        cli_error(cmd, "--mode: \"%s\" is not eager, compiled, fused, auto or all (or a comma list of them)", s);
        return -1;
    }
    *n = k;
    return 1;
}

fmlp_status cli_run_load_input(const char *cmd, const char *path, const fmlp_tensor *x)
{
    fmlp_st_file *f;
    fmlp_status s = fmlp_st_open(path, &f);
    int64_t r = 0, c = 0;
    if (s == FMLP_OK) {
        /* the file's own flattening: a (dim) vector reads as dim x 1 */
        s = fmlp_st_find(f, "x", NULL, &r, &c, NULL);
        if (s == FMLP_OK) s = fmlp_st_read(f, "x", x->dtype, x->data, r, c);
        fmlp_st_close(f);
    }
    if (s != FMLP_OK) fprintf(stderr, "fmlp %s: %s\n", cmd, fmlp_last_error());
    return s;
}

/* y has x's shape with its last dim replaced by out_dim. */
static fmlp_status write_output(const char *path, const fmlp_tensor *y, int x_rank, const int64_t *x_shape)
{
    fmlp_st_tensor t = {"y", y->dtype, x_rank, {0}, y->data};
    for (int d = 0; d < x_rank; d++) t.shape[d] = x_shape[d];
    t.shape[x_rank - 1] = y->cols;
    return fmlp_st_write(path, &t, 1);
}

void cli_run_print_summary(const cli_mode_result *r, int n)
{
    double eager = 0;
    for (int i = 0; i < n; i++)
        if (r[i].mode == FMLP_MODE_EAGER) eager = r[i].seconds;
    printf("\n%-10s %14s %14s %18s\n", "mode", "median/forward", "FLOP/s", "speedup vs eager");
    for (int i = 0; i < n; i++) {
        char t[32], rate[32];
        cli_fmt_time(r[i].seconds, t, sizeof t);
        fmlp_si_format(r[i].flops_per_s, "FLOP/s", rate, sizeof rate);
        if (eager > 0)
            printf("%-10s %14s %14s %17.2fx\n", fmlp_mode_name(r[i].mode), t, rate, eager / r[i].seconds);
        else
            printf("%-10s %14s %14s %18s\n", fmlp_mode_name(r[i].mode), t, rate, "-");
    }
}

enum { R_EXPLAIN = CLI_OPT_COMMAND, R_MODE, R_DTYPE, R_INPUT, R_OUTPUT, R_ITERS, R_BUDGET, R_TP, R_END };

static const struct option run_options[] = {
    {"help", no_argument, NULL, 'h'},           {"explain", no_argument, NULL, R_EXPLAIN},
    {"mode", required_argument, NULL, R_MODE},  {"dtype", required_argument, NULL, R_DTYPE},
    {"input", required_argument, NULL, R_INPUT}, {"output", required_argument, NULL, R_OUTPUT},
    {"iters", required_argument, NULL, R_ITERS}, {"budget", required_argument, NULL, R_BUDGET},
    {"tp", required_argument, NULL, R_TP},      {0},
};

/* Takes `a` if it is one of the command's own flags: 1 taken, 0 not ours,
 * -1 bad value (message printed). */
static int run_take(cli_run_opts *r, const cli_arg *a)
{
    if (a->val < CLI_OPT_COMMAND || a->val >= R_END) return 0;
    if (a->val == R_EXPLAIN) return r->explain = true, 1;
    const char *v = cli_arg_value(a, r->cmd);
    if (!v) return -1;
    switch (a->val) {
    case R_MODE: return parse_modes(r->cmd, v, r->modes, &r->n_modes);
    case R_DTYPE:
        if (fmlp_dtype_parse(v, &r->dtype)) return 1;
        cli_error(r->cmd, "--dtype: \"%s\" is unknown; use f32, bf16 or f16", v);
        return -1;
    case R_INPUT: return r->input = v, 1;
    case R_OUTPUT: return r->output = v, 1;
    case R_ITERS: return cli_parse_int(r->cmd, a->word, v, 1, CLI_MAX_ITERS, &r->iters) ? 1 : -1;
    case R_BUDGET: return cli_parse_double(r->cmd, a->word, v, 0.0, 3600.0, &r->budget) ? 1 : -1;
    case R_TP: return cli_parse_int(r->cmd, a->word, v, 1, CLI_TP_MAX_RANKS, &r->tp) ? 1 : -1;
    }
    return 0;
}

static int run_take_any(void *state, const cli_arg *a)
{
    cli_run_opts *r = state;
    int k = cli_model_take(&r->model, a);
    if (k == 0) k = cli_prof_take(&r->prof, a);
    return k == 0 ? run_take(r, a) : k;
}

static void run_usage(FILE *f, const void *state)
{
    usage(f, ((const cli_run_opts *)state)->linear);
}

/* Defaults, then the flags in order: 1 parsed, 0 help printed, -1 usage
 * error printed. */
static int parse_run(int argc, char **argv, bool linear, cli_run_opts *r)
{
    memset(r, 0, sizeof *r);
    r->cmd = linear ? "linear" : "mlp";
    r->linear = linear;
    if (linear)
        cli_model_defaults_linear(&r->model, r->cmd);
    else
        cli_model_defaults_mlp(&r->model, r->cmd);
    cli_prof_defaults(&r->prof);
    parse_modes(r->cmd, linear ? "eager" : "all", r->modes, &r->n_modes);
    r->dtype = r->model.desc.dtype;
    r->budget = 1.0;
    cli_options l = {0};
    cli_options_add(&l, run_options);
    cli_model_options(&l, linear);
    cli_prof_options(&l);
    cli_command c = {r->cmd, run_take_any, run_usage, r};
    return cli_parse(&c, argc, argv, &l);
}

/* x and y where forwards take them (on a GPU: on the device, x uploaded
 * once), x drawn at random or read from --input; --host-io measures the
 * copies up front, as its forwards make them. Prints its own errors. */
static int prepare_tensors(const cli_run_opts *r, fmlp_ctx *ctx, fmlp_mlp *mlp, cli_io *io)
{
    int64_t rows = r->model.batch * r->model.seq;
    if (cli_io_alloc(ctx, r->dtype, rows, r->model.desc.dim, fmlp_mlp_out_dim(mlp), r->model.host_io, io) != FMLP_OK)
        return 1;
    fmlp_status s = r->input ? cli_run_load_input(r->cmd, r->input, &io->hx) : cli_fill_random(&io->hx, r->model.seed);
    if (s != FMLP_OK) return 1;
    s = cli_io_upload(io);
    if (s == FMLP_OK && io->host_io) s = cli_io_download(io);
    if (s == FMLP_OK) return 0;
    fprintf(stderr, "fmlp %s: copying x to the device: %s\n", r->cmd, fmlp_last_error());
    return 1;
}

int cli_run_save_output(const cli_run_opts *r, cli_io *io, fmlp_mode last)
{
    fmlp_status s = io->host_io ? FMLP_OK : cli_io_download(io);
    if (s == FMLP_OK) s = write_output(r->output, &io->hy, r->x_rank, r->x_shape);
    if (s != FMLP_OK) {
        fprintf(stderr, "fmlp %s: writing %s: %s\n", r->cmd, r->output, fmlp_last_error());
        return 1;
    }
    cli_io_print(io, stdout);
    printf("wrote y (");
    for (int d = 0; d < r->x_rank; d++)
        printf("%s%lld", d ? ", " : "", (long long)(d + 1 < r->x_rank ? r->x_shape[d] : io->hy.cols));
    printf(") from %s mode to %s\n", fmlp_mode_name(last), r->output);
    return 0;
}

/* For each mode: the plan, then (unless explaining) timing and profiling;
 * then the comparison and --output. Returns the exit status. */
static int run_modes(const cli_run_opts *r, fmlp_ctx *ctx, fmlp_mlp *mlp, cli_io *io, const char *shape)
{
    cli_forward_arg fa = {ctx, mlp, FMLP_MODE_EAGER, cli_io_x(io), cli_io_y(io)}, *a = &fa;
    const cli_prof_opts *po = &r->prof;
    int64_t rows = r->model.batch * r->model.seq;
    cli_mode_result results[4];
    int n_results = 0;
    for (int mi = 0; mi < r->n_modes; mi++) {
        fmlp_mode mode = r->modes[mi];
        fmlp_plan_info plan;
        if (fmlp_mlp_plan(mlp, mode, rows, &plan) != FMLP_OK) {
            fprintf(stderr, "fmlp %s: %s\n", r->cmd, fmlp_last_error());
            return 1;
        }
        printf("\n");
        fmlp_plan_print(&plan, stdout);
        if (r->explain) continue;
        a->mode = mode;
        char run_name[160];
        snprintf(run_name, sizeof run_name, "%s_%s_%s_%s", shape, fmlp_dtype_name(r->dtype), po->cold ? "cold" : "warm",
                 fmlp_mode_name(mode));
        if (po->enabled && po->cold && cli_prof_run(ctx, po, r->cmd, run_name, cli_forward_synced, a, stdout) != 0)
            return 1;
        cli_timing t = {0};
        if (cli_time(a, po->cold ? 0 : 1, r->iters, r->budget, &t) != FMLP_OK) {
            fprintf(stderr, "fmlp %s: %s forward failed: %s\n", r->cmd, fmlp_mode_name(mode), fmlp_last_error());
            return 1;
        }
        if (po->enabled && !po->cold && cli_prof_run(ctx, po, r->cmd, run_name, cli_forward_synced, a, stdout) != 0)
            return 1;
        char tb[32], how[96], rate[32];
        cli_fmt_time(t.median_s, tb, sizeof tb);
        cli_fmt_samples(&t, how, sizeof how);
        double flops = (double)plan.flops / t.median_s;
        printf("%s: %s per forward (%s), %s\n", fmlp_mode_name(mode), tb, how,
               fmlp_si_format(flops, "FLOP/s", rate, sizeof rate));
        /* auto may have measured its candidates on the first forward */
        fmlp_plan_info ran;
        if (mode == FMLP_MODE_AUTO && fmlp_mlp_plan(mlp, mode, rows, &ran) == FMLP_OK && strcmp(ran.why, plan.why) != 0)
            printf("  auto ran %s: %s\n", fmlp_mode_name(ran.resolved), ran.why);
        results[n_results++] = (cli_mode_result){mode, t.median_s, flops};
    }
    if (r->explain || n_results == 0) return 0;
    cli_run_print_summary(results, n_results);
    if (!r->output) {
        cli_io_print(io, stdout);
        return 0;
    }
    return cli_run_save_output(r, io, results[n_results - 1].mode);
}

/* --input decides x's shape, batch and seq; prints its own errors. */
static int input_shape(cli_run_opts *r)
{
    fmlp_st_file *f;
    fmlp_status s = fmlp_st_open(r->input, &f);
    int rank = 0;
    int64_t shape[FMLP_ST_MAX_RANK];
    if (s == FMLP_OK) {
        s = fmlp_st_shape(f, "x", &rank, shape, FMLP_ST_MAX_RANK);
        if (s == FMLP_OK) s = fmlp_st_find(f, "x", NULL, NULL, NULL, NULL);
        fmlp_st_close(f);
    }
    if (s != FMLP_OK) {
        fprintf(stderr, "fmlp %s: %s\n", r->cmd, fmlp_last_error());
        return 1;
    }
    if (rank < 1 || rank > 3) {
        fprintf(stderr, "fmlp %s: %s: x has %d dimensions; give x as (batch, seq, dim), (rows, dim) or (dim)\n", r->cmd,
                r->input, rank);
        return 1;
    }
    r->x_rank = rank;
    memcpy(r->x_shape, shape, (size_t)rank * sizeof *shape);
    r->model.batch = rank >= 2 ? shape[0] : 1;
    r->model.seq = rank == 3 ? shape[1] : 1;
    return 0;
}

/* x and y must be addressable: batch x seq rows of dim (out_dim) elements
 * in bytes that fit int64; prints its own error. */
static int check_sizes(const cli_run_opts *r)
{
    const fmlp_mlp_desc *d = &r->model.desc;
    int64_t rows, bytes, wide = d->dim > d->out_dim ? d->dim : d->out_dim;
    if (fmlp_mul_i64(r->model.batch, r->model.seq, &rows) && fmlp_mul_i64(rows, wide, &bytes) &&
        fmlp_mul_i64(bytes, (int64_t)fmlp_dtype_size(r->dtype), &bytes))
        return 0;
    char rows_s[64];
    if (r->linear)
        snprintf(rows_s, sizeof rows_s, "--batch %lld rows", (long long)r->model.batch);
    else
        snprintf(rows_s, sizeof rows_s, "--batch %lld x --seq %lld rows", (long long)r->model.batch, (long long)r->model.seq);
    fprintf(stderr, "fmlp %s: %s of %lld %s features need more than %lld bytes, the most fmlp addresses; use a smaller "
                    "%s\n",
            r->cmd, rows_s, (long long)wide, fmlp_dtype_name(r->dtype), (long long)INT64_MAX,
            r->linear ? "--batch" : "--batch or --seq");
    return 1;
}

int cli_run_main(int argc, char **argv, bool linear)
{
    cli_run_opts r;
    int parsed = parse_run(argc, argv, linear, &r);
    if (parsed <= 0) return parsed == 0 ? 0 : CLI_USAGE_ERROR;
    if (!cli_model_check(&r.model) || !cli_prof_check(&r.prof, r.cmd)) {
        usage(stderr, linear);
        return CLI_USAGE_ERROR;
    }
    if (r.tp && !cli_tp_check_flags(&r)) {
        usage(stderr, linear);
        return CLI_USAGE_ERROR;
    }
    if (r.tp && !cli_tp_check_machine(&r)) return 1;
    if (r.input && input_shape(&r) != 0) return 1;
    if (!r.explain && !cli_prof_make_dir(&r.prof, r.cmd)) return 1;
    fmlp_ctx *ctx;
    fmlp_mlp *mlp;
    /* --tp: the whole MLP on the host, where each rank's slice is cut */
    cli_model_opts build = r.model;
    if (r.tp) {
        build.device = FMLP_DEVICE_CPU;
        build.threads = 1;
        build.graph = false;
    }
    if (cli_model_build(&build, r.dtype, &ctx, &mlp) != FMLP_OK) return 1;
    r.model.desc = *fmlp_mlp_get_desc(mlp);
    if (!r.input) {
        bool seq = r.model.seq > 1;
        int64_t shape[3] = {r.model.batch, seq ? r.model.seq : r.model.desc.dim, r.model.desc.dim};
        r.x_rank = seq ? 3 : 2;
        memcpy(r.x_shape, shape, sizeof shape);
    }
    int status = r.explain ? 0 : check_sizes(&r);
    if (status == 0 && r.input && r.x_shape[r.x_rank - 1] != r.model.desc.dim) {
        fprintf(stderr, "fmlp %s: %s: x has %lld features but the MLP takes %lld\n", r.cmd, r.input,
                (long long)r.x_shape[r.x_rank - 1], (long long)r.model.desc.dim);
        status = 1;
    }
    char shape[64];
    cli_model_shape_name(&r.model, shape, sizeof shape);
    if (r.tp) {
        if (status == 0) status = cli_tp_run(&r, mlp, shape);
        fmlp_mlp_destroy(mlp);
        fmlp_ctx_destroy(ctx);
        return status;
    }
    cli_io io;
    memset(&io, 0, sizeof io);
    io.ctx = ctx;
    if (status == 0 && !r.explain) status = prepare_tensors(&r, ctx, mlp, &io);
    printf("fmlp %s: %s, %s, %lld rows, device %s", r.cmd, shape, fmlp_dtype_name(r.dtype),
           (long long)(r.model.batch * r.model.seq), fmlp_device_name(fmlp_ctx_device(ctx)));
    if (fmlp_ctx_device(ctx) == FMLP_DEVICE_CPU)
        printf(", %d threads, CPU path %s\n", fmlp_ctx_threads(ctx), fmlp_ctx_cpu_path(ctx, r.dtype));
    else
        printf(", x and y %s\n", r.model.host_io ? "in pinned host memory (--host-io)" : "on the device");
    if (status == 0) status = run_modes(&r, ctx, mlp, &io, shape);
    cli_io_free(&io);
    fmlp_mlp_destroy(mlp);
    fmlp_ctx_destroy(ctx);
    return status;
}
