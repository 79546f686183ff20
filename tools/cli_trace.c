/* Why: see cli_trace.h. The subcommands are argument handling over the
 * library's trace calls (fmlp.h, "trace files"), which read files into the
 * profiler's event model, so what they print is computed exactly as a live
 * run computes it. */
#include "cli_trace.h"

#include <stdarg.h>
#include <string.h>

#include <sys/stat.h>

#include "cli_args.h"
#include "cli_trace_ranks.h"
#include "fmlp.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: fmlp trace render FILE.json[.gz] -o OUT.svg [--step N] [--title TEXT] [--width PX]\n"
               "       fmlp trace summarize FILE.json[.gz] [--sort-by COL] [--row-limit N]\n"
               "       fmlp trace summarize DIR     (one trace per rank of a tensor-parallel run)\n"
               "       fmlp trace diff A.json B.json [C.json [D.json]]\n"
               "  render     draw the timeline as a standalone SVG: a lane per CPU thread and GPU stream,\n"
               "             nested spans, launch-to-kernel arrows; --step N draws only ProfilerStep#N\n"
               "  summarize  the table and analyses of a trace written by fmlp or by torch.profiler\n"
               "  diff       traces side by side: kernels per step, time split, time per kernel name\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fmlp trace: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
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

enum { T_STEP = CLI_OPT_COMMAND, T_WIDTH, T_TITLE, T_SORT_BY, T_ROW_LIMIT };

static const struct option render_options[] = {
    {"output", required_argument, NULL, 'o'}, {"step", required_argument, NULL, T_STEP},
    {"width", required_argument, NULL, T_WIDTH}, {"title", required_argument, NULL, T_TITLE},
    {0},
};
static const struct option summarize_options[] = {
    {"sort-by", required_argument, NULL, T_SORT_BY},
    {"row-limit", required_argument, NULL, T_ROW_LIMIT},
    {0},
};

/* A subcommand's flags, read from argv[2..]; its one input file is the
 * positional argument, wherever it stands. */
typedef struct {
    const char *sub;
    char cmd[32]; /* "trace render" */
    cli_options l;
    cli_parser p;
    cli_arg a;
    const char *in;
    const char *value; /* the flag's value; NULL when missing (message printed) */
} trace_args;

static void trace_args_init(trace_args *t, const char *sub, const struct option *flags, const char *shorts, int argc,
                            char **argv)
{
    memset(t, 0, sizeof *t);
    t->sub = sub;
    snprintf(t->cmd, sizeof t->cmd, "trace %s", sub);
    cli_options_add(&t->l, flags);
    cli_parser_init(&t->p, argc - 1, argv + 1, &t->l, shorts);
}

/* The next flag's val (its value in t->value), 0 at the end, or a negative
 * number after a usage error (message printed). */
static int next_flag(trace_args *t)
{
    while (cli_next(&t->p, &t->a)) {
        if (t->a.val == CLI_ARG_UNKNOWN) return -usage_error("%s: unknown option \"%s\"", t->sub, t->a.word);
        if (t->a.val != CLI_ARG_POSITIONAL) {
            t->value = cli_arg_value(&t->a, t->cmd);
            return t->a.val;
        }
        if (t->in) return -usage_error("%s: one input file only, got \"%s\" too", t->sub, t->a.word);
        t->in = t->a.word;
    }
    return 0;
}

static int render(int argc, char **argv)
{
    const char *out = NULL, *title = NULL;
    int step = -1, width = 0, flag;
    trace_args ta;
    trace_args_init(&ta, "render", render_options, "o:", argc, argv);
    while ((flag = next_flag(&ta)) > 0) {
        const char *v = ta.value, *f = ta.a.word, *cmd = ta.cmd;
        if (flag == 'o') {
            if (!(out = v)) return usage_error("%s needs a file", f);
        } else if (flag == T_STEP) {
            if (!v || !cli_parse_int(cmd, f, v, 0, 1 << 30, &step)) return usage_error("%s needs a step number", f);
        } else if (flag == T_WIDTH) {
            if (!v || !cli_parse_int(cmd, f, v, 400, 100000, &width))
                return usage_error("%s needs a width in pixels (400..100000)", f);
        } else if (!(title = v)) {
            return usage_error("%s needs text", f);
        }
    }
    if (flag < 0) return CLI_USAGE_ERROR;
    const char *in = ta.in;
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
    fmlp_table_options t = fmlp_table_options_default();
    t.analyses = true;
    int flag;
    trace_args ta;
    trace_args_init(&ta, "summarize", summarize_options, "", argc, argv);
    while ((flag = next_flag(&ta)) > 0) {
        const char *v = ta.value, *f = ta.a.word;
        if (flag == T_SORT_BY) {
            if (!v) return usage_error("%s needs a column", f);
            if (!fmlp_table_sort_key_valid(v)) return usage_error("--sort-by: \"%s\" is not a column", v);
            t.sort_by = v;
        } else if (!v || !cli_parse_int(ta.cmd, f, v, 0, 1 << 30, &t.row_limit)) {
            return usage_error("%s needs a count", f);
        }
    }
    if (flag < 0) return CLI_USAGE_ERROR;
    if (!ta.in) return usage_error("%s", "summarize needs a trace file");
    struct stat sb;
    if (stat(ta.in, &sb) == 0 && S_ISDIR(sb.st_mode)) return cli_trace_summarize_ranks(ta.in);
    fmlp_trace *tr;
    if (!load(ta.in, &tr)) return 1;
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
