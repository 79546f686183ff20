/* Why: `fmlp mlp` and `fmlp linear`, the tutorial's scripts as commands:
 * for each mode, print the plan (the guess), time the forward, profile it
 * (the look), and end with the speedup of each mode over eager. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "cli_commands.h"
#include "cli_model.h"
#include "cli_profile.h"
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
               "  --input FILE       safetensors with tensor x of shape (batch, seq, dim) or (rows, dim)\n"
               "  --output FILE      write y (safetensors, tensor y) from the last mode run\n"
               "  --explain          print each mode's plan and exit\n"
               "  --iters N          timed forwards per mode (default: repeat for about --budget seconds)\n"
               "  --budget S         seconds of timing per mode (default 1)\n",
            linear ? "eager" : "all", linear ? "f32" : "bf16");
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

/* x from --input, or seeded uniform(-1, 1) values; prints its own errors. */
static fmlp_status make_input(const char *cmd, const char *path, const cli_model_opts *o, fmlp_dtype dt,
                              fmlp_tensor *x)
{
    int64_t rows = o->batch * o->seq, dim = o->desc.dim;
    if (path) {
        fmlp_st_file *f;
        fmlp_status s = fmlp_st_open(path, &f);
        if (s != FMLP_OK) {
            fprintf(stderr, "fmlp %s: %s\n", cmd, fmlp_last_error());
            return s;
        }
        int64_t r, c;
        s = fmlp_st_find(f, "x", NULL, &r, &c, NULL);
        if (s == FMLP_OK && c != dim) {
            fmlp_st_close(f);
            fprintf(stderr, "fmlp %s: %s: x has %lld features but the MLP takes %lld\n", cmd, path, (long long)c,
                    (long long)dim);
            return FMLP_ERR_SHAPE;
        }
        if (s == FMLP_OK) {
            *x = fmlp_tensor_view(malloc((size_t)(r * c) * fmlp_dtype_size(dt)), dt, r, c, c);
            s = x->data ? fmlp_st_read(f, "x", dt, x->data, r, c) : FMLP_ERR_OUT_OF_MEMORY;
        }
        fmlp_st_close(f);
        if (s != FMLP_OK) fprintf(stderr, "fmlp %s: %s\n", cmd, fmlp_last_error());
        return s;
    }
    return cli_random_host(dt, rows, dim, o->seed, x);
}

static fmlp_status write_output(const char *path, const fmlp_tensor *y, const cli_model_opts *o)
{
    fmlp_st_tensor t = {"y", y->dtype, 3, {o->batch, o->seq, y->cols}, y->data};
    if (o->seq == 1 || o->batch * o->seq != y->rows) {
        t.rank = 2;
        t.shape[0] = y->rows;
        t.shape[1] = y->cols;
    }
    return fmlp_st_write(path, &t, 1);
}

typedef struct {
    fmlp_mode mode;
    double seconds;
    double gflops;
} mode_result;

static void print_summary(const mode_result *r, int n)
{
    double eager = 0;
    for (int i = 0; i < n; i++)
        if (r[i].mode == FMLP_MODE_EAGER) eager = r[i].seconds;
    printf("\n%-10s %14s %12s %18s\n", "mode", "median/forward", "GFLOP/s", "speedup vs eager");
    for (int i = 0; i < n; i++) {
        char t[32];
        cli_fmt_time(r[i].seconds, t, sizeof t);
        if (eager > 0)
            printf("%-10s %14s %12.1f %17.2fx\n", fmlp_mode_name(r[i].mode), t, r[i].gflops, eager / r[i].seconds);
        else
            printf("%-10s %14s %12.1f %18s\n", fmlp_mode_name(r[i].mode), t, r[i].gflops, "-");
    }
}

int cli_run_main(int argc, char **argv, bool linear)
{
    const char *cmd = linear ? "linear" : "mlp";
    cli_model_opts o;
    if (linear)
        cli_model_defaults_linear(&o, cmd);
    else
        cli_model_defaults_mlp(&o, cmd);
    cli_prof_opts po;
    cli_prof_defaults(&po);
    fmlp_mode modes[4];
    int n_modes = 0;
    parse_modes(cmd, linear ? "eager" : "all", modes, &n_modes);
    fmlp_dtype dtype = o.desc.dtype;
    const char *input = NULL, *output = NULL;
    bool explain = false;
    int iters = 0;
    double budget = 1.0;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        if (cli_is_help(f)) {
            usage(stdout, linear);
            return 0;
        }
        int r = cli_model_parse(&o, linear, argc, argv, &i);
        if (r == 0) r = cli_prof_parse(&po, argc, argv, &i);
        if (r == 1) continue;
        if (r == 0) {
            if (strcmp(f, "--explain") == 0) {
                explain = true;
                r = 1;
            } else if (strcmp(f, "--mode") == 0 || strcmp(f, "--dtype") == 0 || strcmp(f, "--input") == 0 ||
                       strcmp(f, "--output") == 0 || strcmp(f, "--iters") == 0 || strcmp(f, "--budget") == 0) {
                if (!(v = cli_value(argc, argv, &i, cmd))) {
                    r = -1;
                } else if (strcmp(f, "--mode") == 0) {
                    r = parse_modes(cmd, v, modes, &n_modes);
                } else if (strcmp(f, "--dtype") == 0) {
                    r = fmlp_dtype_parse(v, &dtype) ? 1 : -1;
                    if (r < 0) cli_error(cmd, "--dtype: \"%s\" is unknown; use f32, bf16 or f16", v);
                } else if (strcmp(f, "--input") == 0) {
                    input = v;
                    r = 1;
                } else if (strcmp(f, "--output") == 0) {
                    output = v;
                    r = 1;
                } else if (strcmp(f, "--iters") == 0) {
                    r = cli_parse_int(cmd, f, v, 1, CLI_MAX_ITERS, &iters) ? 1 : -1;
                } else {
                    r = cli_parse_double(cmd, f, v, 0.0, 3600.0, &budget) ? 1 : -1;
                }
            } else {
                cli_error(cmd, "unknown argument \"%s\"", f);
            }
        }
        if (r != 1) {
            usage(stderr, linear);
            return CLI_USAGE_ERROR;
        }
    }

    if (input) {
        /* The input's own shape decides batch and seq. */
        fmlp_st_file *f;
        int64_t r = 0, c = 0;
        if (fmlp_st_open(input, &f) != FMLP_OK || fmlp_st_find(f, "x", NULL, &r, &c, NULL) != FMLP_OK) {
            fprintf(stderr, "fmlp %s: %s\n", cmd, fmlp_last_error());
            return 1;
        }
        fmlp_st_close(f);
        o.batch = r;
        o.seq = 1;
    }
    fmlp_ctx *ctx;
    fmlp_mlp *mlp;
    if (cli_model_build(&o, dtype, &ctx, &mlp) != FMLP_OK) return 1;
    o.desc = *fmlp_mlp_get_desc(mlp);
    int64_t rows = o.batch * o.seq;
    int status = 0;
    cli_forward_arg a = {mlp, FMLP_MODE_EAGER, {0}, {0}};
    fmlp_status s = FMLP_OK;
    if (!explain) {
        s = make_input(cmd, input, &o, dtype, &a.x);
        if (s != FMLP_OK) status = 1;
        if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, dtype, rows, fmlp_mlp_out_dim(mlp), &a.y);
        if (s == FMLP_OK && ctx && fmlp_ctx_device(ctx) != FMLP_DEVICE_CPU) {
            /* host output buffer; the executor stages device copies */
            fmlp_tensor_free(ctx, &a.y);
            a.y = fmlp_tensor_view(malloc((size_t)(rows * fmlp_mlp_out_dim(mlp)) * fmlp_dtype_size(dtype)), dtype, rows,
                                   fmlp_mlp_out_dim(mlp), 0);
            if (!a.y.data) s = FMLP_ERR_OUT_OF_MEMORY;
        }
        if (s != FMLP_OK && status == 0) {
            fprintf(stderr, "fmlp %s: preparing tensors: %s\n", cmd, fmlp_last_error());
            status = 1;
        }
    }
    char shape[64];
    cli_model_shape_name(&o, shape, sizeof shape);
    printf("fmlp %s: %s, %s, %lld rows, device %s, %d threads, CPU path %s\n", cmd, shape, fmlp_dtype_name(dtype),
           (long long)rows, fmlp_device_name(fmlp_ctx_device(ctx)), fmlp_ctx_threads(ctx), fmlp_ctx_cpu_path(ctx, dtype));
    mode_result results[4];
    int n_results = 0;
    for (int mi = 0; mi < n_modes && status == 0; mi++) {
        fmlp_plan_info plan;
        if (fmlp_mlp_plan(mlp, modes[mi], rows, &plan) != FMLP_OK) {
            fprintf(stderr, "fmlp %s: %s\n", cmd, fmlp_last_error());
            status = 1;
            break;
        }
        printf("\n");
        fmlp_plan_print(&plan, stdout);
        if (explain) continue;
        a.mode = modes[mi];
        char run_name[160];
        snprintf(run_name, sizeof run_name, "%s_%s_%s_%s", shape, fmlp_dtype_name(dtype), po.cold ? "cold" : "warm",
                 fmlp_mode_name(modes[mi]));
        if (po.enabled && po.cold) s = cli_prof_run(ctx, &po, run_name, cli_forward, &a, stdout);
        cli_timing t = {0};
        if (s == FMLP_OK) s = cli_time(cli_forward, &a, po.cold ? 0 : 1, iters, budget, &t);
        if (s == FMLP_OK && po.enabled && !po.cold) s = cli_prof_run(ctx, &po, run_name, cli_forward, &a, stdout);
        if (s != FMLP_OK) {
            fprintf(stderr, "fmlp %s: %s forward failed: %s\n", cmd, fmlp_mode_name(modes[mi]), fmlp_last_error());
            status = 1;
            break;
        }
        char tb[32];
        cli_fmt_time(t.median_s, tb, sizeof tb);
        double gflops = (double)plan.flops / t.median_s * 1e-9;
        printf("%s: %s per forward (median of %d), %.1f GFLOP/s\n", fmlp_mode_name(modes[mi]), tb, t.iters, gflops);
        results[n_results++] = (mode_result){modes[mi], t.median_s, gflops};
    }
    if (status == 0 && !explain && n_results > 0) {
        print_summary(results, n_results);
        if (output) {
            if (write_output(output, &a.y, &o) != FMLP_OK) {
                fprintf(stderr, "fmlp %s: writing %s: %s\n", cmd, output, fmlp_last_error());
                status = 1;
            } else {
                printf("wrote y (%s mode) to %s\n", fmlp_mode_name(results[n_results - 1].mode), output);
            }
        }
    }
    free(a.x.data);
    if (fmlp_ctx_device(ctx) == FMLP_DEVICE_CPU)
        fmlp_tensor_free(ctx, &a.y);
    else
        free(a.y.data);
    fmlp_mlp_destroy(mlp);
    fmlp_ctx_destroy(ctx);
    return status;
}
