/* Why: `fmlp bench` sweeps rows × dtypes × modes on one model and writes
 * every figure (table on stdout, CSV or JSON on request, progress on
 * stderr), the raw material of bench/results and the PyTorch comparison.
 * On a GPU the forwards are device-resident (cli_io.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "cli_commands.h"
#include "cli_io.h"
#include "cli_model.h"
#include "cli_timing.h"

#define MAX_ITEMS 16

typedef struct {
    int64_t rows;
    fmlp_dtype dtype;
    fmlp_mode mode;
    cli_timing t;
    int64_t flops, bytes;
    int kernels;
} bench_row;


static void usage(FILE *f)
{
    fprintf(f, "usage: fmlp bench [--rows LIST] [--dtype LIST] [--mode LIST] [model options] [--json FILE | --csv FILE]\n"
               "Sweeps rows x dtypes x modes on one MLP (default: the tutorial's GeGLU, 768 -> 3072) and reports\n"
               "the median time per forward, FLOP/s and the speedup over eager.\n\n"
               "  --rows LIST        e.g. 1,16,128,1024,8192 (default)\n"
               "  --dtype LIST       e.g. f32,bf16 (default)\n"
               "  --mode LIST        e.g. eager,compiled,fused (default)\n"
               "  --budget S         seconds of timing per point (default 0.5)\n"
               "  --iters N          fixed timed forwards per point instead of a budget\n"
               "  --json FILE        write every figure as JSON\n"
               "  --csv FILE         write every figure as CSV\n");
    cli_model_usage(f, false);
}

static void write_json(FILE *f, const cli_model_opts *o, fmlp_ctx *ctx, const bench_row *r, int n)
{
    const fmlp_mlp_desc *d = &o->desc;
    fprintf(f, "{\n  \"tool\": \"fmlp bench\",\n  \"fmlp_version\": \"%s\",\n", FMLP_VERSION);
    fprintf(f, "  \"device\": \"%s\",\n  \"threads\": %d,\n", fmlp_device_name(fmlp_ctx_device(ctx)), fmlp_ctx_threads(ctx));
    fprintf(f, "  \"cpu_path_f32\": \"%s\",\n  \"cpu_path_bf16\": \"%s\",\n", fmlp_ctx_cpu_path(ctx, FMLP_F32),
            fmlp_ctx_cpu_path(ctx, FMLP_BF16));
    fprintf(f, "  \"model\": {\"block\": \"%s\", \"act\": \"%s\", \"dim\": %lld, \"hidden\": %lld, \"out_dim\": %lld, \"layers\": %d, \"bias\": %s},\n",
            d->block == FMLP_BLOCK_GATED ? "gated" : "stack", fmlp_act_name(d->act), (long long)d->dim,
            (long long)d->hidden, (long long)(d->out_dim ? d->out_dim : d->dim), d->layers, d->bias ? "true" : "false");
    fprintf(f, "  \"results\": [\n");
    for (int i = 0; i < n; i++) {
        const bench_row *b = &r[i];
        fprintf(f,
                "    {\"rows\": %lld, \"dtype\": \"%s\", \"mode\": \"%s\", \"kernels\": %d, \"median_us\": %.3f, \"min_us\": %.3f, \"iters\": %d, \"gflop\": %.6f, \"gflops\": %.3f, \"gbps\": %.3f}%s\n",
                (long long)b->rows, fmlp_dtype_name(b->dtype), fmlp_mode_name(b->mode), b->kernels, b->t.median_s * 1e6,
                b->t.min_s * 1e6, b->t.iters, (double)b->flops * 1e-9, (double)b->flops / b->t.median_s * 1e-9,
                (double)b->bytes / b->t.median_s * 1e-9, i + 1 < n ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
}

static void write_csv(FILE *f, const bench_row *r, int n)
{
    fprintf(f, "rows,dtype,mode,kernels,median_us,min_us,iters,gflops,gbps\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%lld,%s,%s,%d,%.3f,%.3f,%d,%.3f,%.3f\n", (long long)r[i].rows, fmlp_dtype_name(r[i].dtype),
                fmlp_mode_name(r[i].mode), r[i].kernels, r[i].t.median_s * 1e6, r[i].t.min_s * 1e6, r[i].t.iters,
                (double)r[i].flops / r[i].t.median_s * 1e-9, (double)r[i].bytes / r[i].t.median_s * 1e-9);
}

/* Writes the JSON or CSV whole or not at all (fmlp_file_write); prints
 * what happened. Returns the exit status. */
static int save(const char *path, bool json, const cli_model_opts *o, fmlp_ctx *ctx, const bench_row *r, int n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    bool built = false;
    if (m) {
        if (json)
            write_json(m, o, ctx, r, n);
        else
            write_csv(m, r, n);
        built = !ferror(m);
        built = fclose(m) == 0 && built;
    }
    fmlp_status s = built ? fmlp_file_write(path, buf, len) : FMLP_ERR_OUT_OF_MEMORY;
    free(buf);
    if (s == FMLP_OK) {
        fprintf(stderr, "wrote %s\n", path);
        return 0;
    }
    fprintf(stderr, "fmlp bench: %s\n", built ? fmlp_last_error() : "out of memory formatting the results");
    return 1;
}

static double eager_time(const bench_row *r, int n, const bench_row *me)
{
    for (int i = 0; i < n; i++)
        if (r[i].rows == me->rows && r[i].dtype == me->dtype && r[i].mode == FMLP_MODE_EAGER) return r[i].t.median_s;
    return 0;
}

/* The sweep's own flags; the model flags come from cli_model. */
typedef struct {
    const char *rows, *dtypes, *modes, *json, *csv;
    double budget;
    int iters;
} bench_opts;

enum { B_ROWS = CLI_OPT_COMMAND, B_DTYPE, B_MODE, B_JSON, B_CSV, B_BUDGET, B_ITERS, B_END };

static const struct option bench_options[] = {
    {"help", no_argument, NULL, 'h'},           {"rows", required_argument, NULL, B_ROWS},
    {"dtype", required_argument, NULL, B_DTYPE}, {"mode", required_argument, NULL, B_MODE},
    {"json", required_argument, NULL, B_JSON},  {"csv", required_argument, NULL, B_CSV},
    {"budget", required_argument, NULL, B_BUDGET}, {"iters", required_argument, NULL, B_ITERS},
    {0},
};

typedef struct {
    cli_model_opts *model;
    bench_opts *b;
} bench_state;

static int bench_take(void *state, const cli_arg *a)
{
    bench_state *st = state;
    bench_opts *b = st->b;
    const char *cmd = st->model->cmd;
    int k = cli_model_take(st->model, a);
    if (k != 0 || a->val < CLI_OPT_COMMAND || a->val >= B_END) return k;
    const char *v = cli_arg_value(a, cmd);
    if (!v) return -1;
    switch (a->val) {
    case B_ROWS: return b->rows = v, 1;
    case B_DTYPE: return b->dtypes = v, 1;
    case B_MODE: return b->modes = v, 1;
    case B_JSON: return b->json = v, 1;
    case B_CSV: return b->csv = v, 1;
    case B_BUDGET: return cli_parse_double(cmd, a->word, v, 0.0, 3600.0, &b->budget) ? 1 : -1;
    case B_ITERS: return cli_parse_int(cmd, a->word, v, 1, CLI_MAX_ITERS, &b->iters) ? 1 : -1;
    }
    return 0;
}

static void bench_usage(FILE *f, const void *state)
{
    (void)state;
    usage(f);
}

/* 1 parsed, 0 help printed, -1 usage error printed. */
static int parse_bench(int argc, char **argv, cli_model_opts *o, bench_opts *b)
{
    cli_model_defaults_mlp(o, "bench");
    *b = (bench_opts){"1,16,128,1024,8192", "f32,bf16", "eager,compiled,fused", NULL, NULL, 0.5, 0};
    cli_options l = {0};
    cli_options_add(&l, bench_options);
    cli_model_options(&l, false);
    bench_state st = {o, b};
    cli_command c = {"bench", bench_take, bench_usage, &st};
    return cli_parse(&c, argc, argv, &l);
}

int cli_bench_main(int argc, char **argv)
{
    const char *cmd = "bench";
    cli_model_opts o;
    bench_opts bo;
    int parsed = parse_bench(argc, argv, &o, &bo);
    if (parsed <= 0) return parsed == 0 ? 0 : CLI_USAGE_ERROR;
    if (!cli_model_check(&o)) {
        usage(stderr);
        return CLI_USAGE_ERROR;
    }
    char b1[256], b2[256], b3[256];
    const char *rows_l[MAX_ITEMS], *dt_l[MAX_ITEMS], *mode_l[MAX_ITEMS];
    int nr = cli_split_list(bo.rows, b1, sizeof b1, rows_l, MAX_ITEMS);
    int nd = cli_split_list(bo.dtypes, b2, sizeof b2, dt_l, MAX_ITEMS);
    int nm = cli_split_list(bo.modes, b3, sizeof b3, mode_l, MAX_ITEMS);
    int64_t rows[MAX_ITEMS];
    fmlp_dtype dts[MAX_ITEMS];
    fmlp_mode modes[MAX_ITEMS];
    bool ok = nr > 0 && nd > 0 && nm > 0;
    for (int i = 0; ok && i < nr; i++) ok = cli_parse_i64(cmd, "--rows", rows_l[i], 1, 1 << 24, &rows[i]);
    for (int i = 0; ok && i < nd; i++) {
        ok = fmlp_dtype_parse(dt_l[i], &dts[i]);
        if (!ok) cli_error(cmd, "--dtype: \"%s\" is unknown; use f32, bf16 or f16", dt_l[i]);
    }
    for (int i = 0; ok && i < nm; i++) {
        ok = fmlp_mode_parse(mode_l[i], &modes[i]);
        if (!ok) cli_error(cmd, "--mode: \"%s\" is unknown; use eager, compiled, fused or auto", mode_l[i]);
    }
    if (!ok) {
        if (nr < 1 || nd < 1 || nm < 1) cli_error(cmd, "--rows, --dtype and --mode take non-empty comma lists of at most %d", MAX_ITEMS);
        usage(stderr);
        return CLI_USAGE_ERROR;
    }
    bench_row *res = calloc((size_t)(nr * nd * nm), sizeof *res);
    if (!res) return 1;
    int n = 0, total = nr * nd * nm, status = 0;
    fmlp_ctx *last_ctx = NULL;
    printf("%8s %6s %-9s %8s %14s %14s %9s\n", "rows", "dtype", "mode", "kernels", "median", "FLOP/s", "vs eager");
    for (int di = 0; di < nd && !status; di++) {
        fmlp_ctx *ctx;
        fmlp_mlp *mlp;
        if (cli_model_build(&o, dts[di], &ctx, &mlp) != FMLP_OK) {
            status = 1;
            break;
        }
        for (int ri = 0; ri < nr && !status; ri++) {
            cli_io io;
            fmlp_status s = cli_io_alloc(ctx, dts[di], rows[ri], o.desc.dim, fmlp_mlp_out_dim(mlp), o.host_io, &io);
            if (s != FMLP_OK) {
                status = 1;
                break;
            }
            s = cli_fill_random(&io.hx, o.seed + (uint64_t)ri);
            if (s == FMLP_OK) s = cli_io_upload(&io);
            cli_forward_arg a = {ctx, mlp, FMLP_MODE_EAGER, cli_io_x(&io), cli_io_y(&io)};
            for (int mi = 0; mi < nm && s == FMLP_OK; mi++) {
                bench_row *b = &res[n];
                a.mode = modes[mi];
                fmlp_plan_info plan;
                s = fmlp_mlp_plan(mlp, modes[mi], rows[ri], &plan);
                if (s == FMLP_OK) s = cli_time(&a, 1, bo.iters, bo.budget, &b->t);
                if (s != FMLP_OK) break;
                b->rows = rows[ri];
                b->dtype = dts[di];
                b->mode = modes[mi];
                b->flops = plan.flops;
                b->bytes = plan.bytes;
                b->kernels = plan.n_kernels;
                n++;
                char tb[32], rate[32];
                cli_fmt_time(b->t.median_s, tb, sizeof tb);
                double e = eager_time(res, n, b);
                fprintf(stderr, "[%d/%d] %s rows=%lld %s: %s\n", n, total, fmlp_dtype_name(b->dtype), (long long)b->rows,
                        fmlp_mode_name(b->mode), tb);
                printf("%8lld %6s %-9s %8d %14s %14s", (long long)b->rows, fmlp_dtype_name(b->dtype),
                       fmlp_mode_name(b->mode), b->kernels, tb,
                       fmlp_si_format((double)b->flops / b->t.median_s, "FLOP/s", rate, sizeof rate));
                if (e > 0)
                    printf(" %8.2fx\n", e / b->t.median_s);
                else
                    printf(" %9s\n", "-");
                fflush(stdout);
            }
            if (s != FMLP_OK) {
                fprintf(stderr, "fmlp bench: %s\n", fmlp_last_error());
                status = 1;
            }
            cli_io_free(&io);
        }
        fmlp_mlp_destroy(mlp);
        if (di + 1 < nd || status) {
            fmlp_ctx_destroy(ctx);
        } else {
            last_ctx = ctx;
        }
    }
    const char *paths[2] = {bo.json, bo.csv};
    for (int w = 0; w < 2 && !status; w++)
        if (paths[w]) status = save(paths[w], w == 0, &o, last_ctx, res, n);
    fmlp_ctx_destroy(last_ctx);
    free(res);
    return status;
}
