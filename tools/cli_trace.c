/* Why: see cli_trace.h. The subcommands are argument handling over the
 * library's trace calls (fmlp.h, "trace files"), which read files into the
 * profiler's event model, so what they print is computed exactly as a live
 * run computes it. */
#include "cli_trace.h"

#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "fmlp.h"

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

static bool load(const char *path, fmlp_trace **t)
{
    if (fmlp_trace_open(path, t) == FMLP_OK) return true;
    fprintf(stderr, "fmlp trace: %s\n", fmlp_last_error());
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
    fmlp_trace *t;
    if (!load(in, &t)) return 1;
    fmlp_svg_options o = {title, step, width};
    fmlp_status s = fmlp_trace_render_svg(t, &o, out);
    fmlp_trace_close(t);
    if (s != FMLP_OK) {
        fprintf(stderr, "fmlp trace render: %s\n", fmlp_last_error());
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
    fmlp_trace *tr;
    if (!load(in, &tr)) return 1;
    fmlp_status s = fmlp_trace_summary_print(tr, &t, stdout);
    fmlp_trace_close(tr);
    if (s != FMLP_OK) {
        fprintf(stderr, "fmlp trace summarize: %s\n", fmlp_last_error());
        return 1;
    }
    return 0;
}

static int diff(int argc, char **argv)
{
    int n = argc - 2;
    if (n < 2 || n > FMLP_TRACE_DIFF_MAX) return usage_error("%s", "diff needs 2 to 4 trace files");
    for (int i = 2; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1]) return usage_error("diff: unknown option \"%s\"", argv[i]);
    fmlp_trace *t[FMLP_TRACE_DIFF_MAX] = {0};
    int status = 0;
    for (int i = 0; i < n && status == 0; i++) {
        fmlp_profile_summary sum;
        if (!load(argv[i + 2], &t[i])) {
            status = 1;
        } else if (fmlp_trace_summary(t[i], &sum) != FMLP_OK) {
            fprintf(stderr, "fmlp trace diff: %s holds no spans to compare\n", argv[i + 2]);
            status = 1;
        }
    }
    if (status == 0 && fmlp_trace_diff_print(t, n, stdout) != FMLP_OK) {
        fprintf(stderr, "fmlp trace diff: %s\n", fmlp_last_error());
        status = 1;
    }
    for (int i = 0; i < n; i++) fmlp_trace_close(t[i]);
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
