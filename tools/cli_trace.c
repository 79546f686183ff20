/* Why: see cli_trace.h. All three subcommands read files into the
 * profiler's event model, so what they print is computed exactly as a live
 * run computes it. */
#include "cli_trace.h"

#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "fmlp.h"
#include "profiler/analysis.h"
#include "profiler/prof.h"
#include "profiler/svg.h"
#include "profiler/trace_read.h"
#include "profiler/tree.h"

#define MAX_DIFF 4

static void usage(FILE *f)
{
    fprintf(f, "usage: fmlp trace render FILE.json[.gz] -o OUT.svg [--step N] [--title TEXT] [--width PX]\n"
               "       fmlp trace summarize FILE.json[.gz] [--sort-by COL] [--row-limit N]\n"
               "       fmlp trace diff A.json B.json [C.json [D.json]]\n"
               "  render     draw the timeline as a standalone SVG: a lane per CPU thread and GPU stream,\n"
               "             nested spans, launch-to-kernel arrows; --step N draws only ProfilerStep#N\n"
               "  summarize  the table and analyses of a trace written by fmlp or by torch.profiler\n"
               "  diff       traces side by side: kernels per step, time split, time per kernel name\n");
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "fmlp trace: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    usage(stderr);
    return CLI_USAGE_ERROR;
}

static bool load(const char *path, pe_set *s)
{
    if (pe_read_trace(path, s) == FMLP_OK) return true;
    fprintf(stderr, "fmlp trace: %s\n", fmlp_last_error());
    pe_set_free(s);
    return false;
}

static bool step_range(const pe_set *s, int step, int64_t *t0, int64_t *t1)
{
    char name[48];
    snprintf(name, sizeof name, "ProfilerStep#%d", step);
    for (size_t i = 0; i < s->n; i++)
        if (s->ev[i].kind == PE_STEP && strcmp(s->ev[i].name, name) == 0) {
            *t0 = s->ev[i].t0;
            *t1 = s->ev[i].t1;
            return true;
        }
    return false;
}

static int render(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *title = NULL;
    int step = -1, width = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v;
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (!(v = cli_value(argc, argv, &i, "trace render"))) return usage_error("%s needs a file", a);
            out = v;
        } else if (strcmp(a, "--step") == 0) {
            if (!(v = cli_value(argc, argv, &i, "trace render")) || !cli_parse_int("trace render", a, v, 0, 1 << 30, &step))
                return usage_error("%s needs a step number", a);
        } else if (strcmp(a, "--width") == 0) {
            if (!(v = cli_value(argc, argv, &i, "trace render")) ||
                !cli_parse_int("trace render", a, v, 400, 100000, &width))
                return usage_error("%s needs a width in pixels (400..100000)", a);
        } else if (strcmp(a, "--title") == 0) {
            if (!(title = cli_value(argc, argv, &i, "trace render"))) return usage_error("%s needs text", a);
        } else if (a[0] == '-' && a[1]) {
            return usage_error("render: unknown option \"%s\"", a);
        } else if (!in) {
            in = a;
        } else {
            return usage_error("render: one input file only, got \"%s\" too", a);
        }
    }
    if (!in || !out) return usage_error("%s", "render needs FILE.json and -o OUT.svg");
    pe_set s;
    if (!load(in, &s)) return 1;
    pe_svg_options o = {title ? title : in, 0, 0, width};
    if (step >= 0 && !step_range(&s, step, &o.t0, &o.t1)) {
        fprintf(stderr, "fmlp trace render: %s has no ProfilerStep#%d; run `fmlp trace summarize` to list its steps\n",
                in, step);
        pe_set_free(&s);
        return 1;
    }
    FILE *f = fopen(out, "w");
    if (!f) {
        fprintf(stderr, "fmlp trace render: cannot write %s\n", out);
        pe_set_free(&s);
        return 1;
    }
    bool ok = pe_render_svg(&s, &o, f);
    ok &= fclose(f) == 0;
    pe_set_free(&s);
    if (!ok) {
        fprintf(stderr, "fmlp trace render: writing %s failed\n", out);
        return 1;
    }
    printf("wrote %s\n", out);
    return 0;
}

static int summarize(int argc, char **argv)
{
    const char *in = NULL;
    fmlp_table_options t = fmlp_table_options_default();
    t.analyses = true;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v;
        if (strcmp(a, "--sort-by") == 0) {
            if (!(v = cli_value(argc, argv, &i, "trace summarize"))) return usage_error("%s needs a column", a);
            if (!fmlp_table_sort_key_valid(v)) return usage_error("--sort-by: \"%s\" is not a column", v);
            t.sort_by = v;
        } else if (strcmp(a, "--row-limit") == 0) {
            if (!(v = cli_value(argc, argv, &i, "trace summarize")) ||
                !cli_parse_int("trace summarize", a, v, 0, 1 << 30, &t.row_limit))
                return usage_error("%s needs a count", a);
        } else if (a[0] == '-' && a[1]) {
            return usage_error("summarize: unknown option \"%s\"", a);
        } else if (!in) {
            in = a;
        } else {
            return usage_error("summarize: one input file only, got \"%s\" too", a);
        }
    }
    if (!in) return usage_error("%s", "summarize needs a trace file");
    pe_set s;
    if (!load(in, &s)) return 1;
    /* Traces have tens of lanes and up to millions of events. */
    size_t lanes = 0, spans = 0;
    int64_t lane_id[2 * 256];
    for (size_t i = 0; i < s.n; i++) {
        spans += pe_is_span(&s.ev[i]);
        bool seen = false;
        for (size_t k = 0; k < lanes && !seen; k++) seen = lane_id[2 * k] == s.ev[i].pid && lane_id[2 * k + 1] == s.ev[i].tid;
        if (seen || lanes == 256) continue;
        lane_id[2 * lanes] = s.ev[i].pid;
        lane_id[2 * lanes + 1] = s.ev[i].tid;
        lanes++;
    }
    printf("trace %s: written by %s, %zu spans on %zu%s lanes\n\n", in, s.origin, spans, lanes, lanes == 256 ? "+" : "");
    fmlp_status st;
    char *table = prof_table(&s, &t, true, &st);
    pe_set_free(&s);
    if (!table) {
        fprintf(stderr, "fmlp trace summarize: %s\n", fmlp_last_error());
        return 1;
    }
    fputs(table, stdout);
    free(table);
    return 0;
}

typedef struct {
    const char *path;
    pe_set s;
    pe_calls cs;
    pe_analysis a;
} diff_run;

static void fmt_us(char *b, size_t n, double us)
{
    if (us >= 1e3)
        snprintf(b, n, "%.3fms", us / 1e3);
    else
        snprintf(b, n, "%.3fus", us);
}

static void diff_row(const char *label, diff_run *r, int n, double (*get)(const diff_run *), bool time)
{
    printf("%-28s", label);
    for (int i = 0; i < n; i++) {
        char b[48];
        double v = get(&r[i]);
        if (time)
            fmt_us(b, sizeof b, v);
        else
            snprintf(b, sizeof b, "%.0f", v);
        if (i > 0 && r[0].a.n_steps && get(&r[0]) > 0) {
            size_t l = strlen(b);
            snprintf(b + l, sizeof b - l, " (%+.0f%%)", (v / get(&r[0]) - 1) * 100);
        }
        printf("  %24s", b);
    }
    putchar('\n');
}

static double g_kernels(const diff_run *r) { return r->a.sum.kernels_per_step; }
static double g_wall(const diff_run *r) { return r->a.sum.wall_us; }
static double g_kern(const diff_run *r) { return r->a.sum.kernel_us; }
static double g_over(const diff_run *r) { return r->a.sum.overhead_us; }
static double g_idle(const diff_run *r) { return r->a.sum.idle_us; }

static void diff_kernels(diff_run *r, int n)
{
    printf("\ntime per step by kernel name (avg per launch x launches / steps):\n");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < r[i].a.n_kernels; k++) {
            const char *name = r[i].a.kernels[k].name;
            bool earlier = false;
            for (int j = 0; j < i && !earlier; j++)
                for (int q = 0; q < r[j].a.n_kernels && !earlier; q++) earlier = strcmp(r[j].a.kernels[q].name, name) == 0;
            if (earlier) continue;
            printf("%-28.28s", name);
            for (int j = 0; j < n; j++) {
                char b[48] = "--";
                for (int q = 0; q < r[j].a.n_kernels; q++) {
                    const pe_kernel_stat *ks = &r[j].a.kernels[q];
                    if (strcmp(ks->name, name) == 0)
                        fmt_us(b, sizeof b, ks->dur_us * ks->calls / (r[j].a.n_steps ? r[j].a.n_steps : 1));
                }
                printf("  %24s", b);
            }
            putchar('\n');
        }
}

static int diff(int argc, char **argv)
{
    int n = argc - 2;
    if (n < 2 || n > MAX_DIFF) return usage_error("%s", "diff needs 2 to 4 trace files");
    for (int i = 2; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1]) return usage_error("diff: unknown option \"%s\"", argv[i]);
    diff_run r[MAX_DIFF];
    memset(r, 0, sizeof r);
    int status = 0, loaded = 0;
    for (int i = 0; i < n && status == 0; i++, loaded++) {
        r[i].path = argv[i + 2];
        if (!load(r[i].path, &r[i].s)) {
            status = 1;
            break;
        }
        if (!pe_calls_build(&r[i].s, &r[i].cs) || !pe_analyze(&r[i].s, &r[i].cs, &r[i].a)) {
            fprintf(stderr, "fmlp trace diff: %s holds no spans to compare\n", r[i].path);
            status = 1;
        }
    }
    if (status == 0) {
        printf("%-28s", "");
        for (int i = 0; i < n; i++) {
            const char *base = strrchr(r[i].path, '/');
            printf("  %24.24s", base ? base + 1 : r[i].path);
        }
        printf("\n");
        diff_row("kernels per step", r, n, g_kernels, false);
        diff_row("wall per step", r, n, g_wall, true);
        diff_row("kernel time per step", r, n, g_kern, true);
        diff_row("dispatch overhead per step", r, n, g_over, true);
        diff_row("idle per step", r, n, g_idle, true);
        printf("%-28s", "verdict");
        for (int i = 0; i < n; i++) printf("  %24s", pe_bound_name(r[i].a.sum.bound));
        putchar('\n');
        diff_kernels(r, n);
    }
    for (int i = 0; i < loaded; i++) {
        pe_analysis_free(&r[i].a);
        pe_calls_free(&r[i].cs);
        pe_set_free(&r[i].s);
    }
    return status;
}

int cli_trace_main(int argc, char **argv)
{
    if (argc < 2) return usage_error("%s", "missing subcommand (render, summarize or diff)");
    const char *sub = argv[1];
    if (cli_is_help(sub)) {
        usage(stdout);
        return 0;
    }
    for (int i = 2; i < argc; i++)
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
    if (strcmp(sub, "render") == 0) return render(argc, argv);
    if (strcmp(sub, "summarize") == 0) return summarize(argc, argv);
    if (strcmp(sub, "diff") == 0) return diff(argc, argv);
    return usage_error("unknown subcommand \"%s\"; use render, summarize or diff", sub);
}
