/* Why: see cli_profile.h. The default schedule mirrors the tutorial's
 * scripts (wait 1, warmup 1, active 3); --cold records the very first call
 * instead, so packing and first-touch costs show up in the table. */
#include "cli_profile.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_args.h"

void cli_prof_defaults(cli_prof_opts *o)
{
    memset(o, 0, sizeof *o);
    o->enabled = true;
    o->wait = 1;
    o->warmup = 1;
    o->active = 3;
    o->repeat = 1;
}

void cli_prof_usage(FILE *f)
{
    fprintf(f, "profiling (on by default, torch.profiler's schedule and table):\n"
               "  --no-profile          time only\n"
               "  --wait N              steps skipped per cycle before warmup (default 1)\n"
               "  --warmup N            steps recorded then discarded (default 1)\n"
               "  --active N            steps recorded (default 3)\n"
               "  --repeat N            cycles (default 1)\n"
               "  --cold                record the first call, no wait or warmup (first-call costs)\n"
               "  --trace-dir DIR       write DIR/<shape>_<dtype>_<cold|warm>_<mode>.json and .txt (with --tp:\n"
               "                        DIR/<shape>_<dtype>_tp<N>_<cold|warm>_<mode>/rank<R>.json and .txt)\n"
               "  --sort-by COL         self_cpu_time_total (default), cpu_time_total, cpu_time, count, flops,\n"
               "                        self_cuda_time_total, cuda_time_total, cuda_time\n"
               "  --row-limit N         table rows (default all)\n"
               "  --record-shapes       record input shapes in the trace\n"
               "  --profile-memory      record workspace allocations with running totals\n");
}

enum { P_NO_PROFILE = CLI_OPT_PROFILE, P_COLD, P_SHAPES, P_MEMORY, P_WAIT, P_WARMUP, P_ACTIVE, P_REPEAT, P_ROWS,
       P_TRACE_DIR, P_SORT_BY, P_END };

static const struct option prof_options[] = {
    {"no-profile", no_argument, NULL, P_NO_PROFILE},    {"cold", no_argument, NULL, P_COLD},
    {"record-shapes", no_argument, NULL, P_SHAPES},     {"profile-memory", no_argument, NULL, P_MEMORY},
    {"wait", required_argument, NULL, P_WAIT},          {"warmup", required_argument, NULL, P_WARMUP},
    {"active", required_argument, NULL, P_ACTIVE},      {"repeat", required_argument, NULL, P_REPEAT},
    {"row-limit", required_argument, NULL, P_ROWS},     {"trace-dir", required_argument, NULL, P_TRACE_DIR},
    {"sort-by", required_argument, NULL, P_SORT_BY},    {0},
};

void cli_prof_options(cli_options *l) { cli_options_add(l, prof_options); }

static int int_flag(const cli_arg *a, const char *v, int lo, int *out)
{
    return cli_parse_int("profile", a->word, v, lo, 1000000, out) ? 1 : -1;
}

int cli_prof_take(cli_prof_opts *o, const cli_arg *a)
{
    if (a->val < CLI_OPT_PROFILE || a->val >= P_END) return 0;
    switch (a->val) {
    case P_NO_PROFILE: return o->enabled = false, 1;
    case P_COLD: return o->cold = true, 1;
    case P_SHAPES: return o->record_shapes = true, 1;
    case P_MEMORY: return o->profile_memory = true, 1;
    }
    const char *v = cli_arg_value(a, "profile");
    if (!v) return -1;
    switch (a->val) {
    case P_WAIT: return int_flag(a, v, 0, &o->wait);
    case P_WARMUP: return int_flag(a, v, 0, &o->warmup);
    case P_ACTIVE: return int_flag(a, v, 1, &o->active);
    case P_REPEAT: return int_flag(a, v, 1, &o->repeat);
    case P_ROWS: return int_flag(a, v, 0, &o->row_limit);
    case P_TRACE_DIR: return o->trace_dir = v, 1;
    }
    if (!fmlp_table_sort_key_valid(v)) { /* P_SORT_BY */
        cli_error("profile", "--sort-by: \"%s\" is not a column; use self_cpu_time_total, cpu_time_total, "
                             "cpu_time, count, flops, self_cuda_time_total, cuda_time_total or cuda_time",
                  v);
        return -1;
    }
    o->sort_by = v;
    return 1;
}

bool cli_prof_check(const cli_prof_opts *o, const char *cmd)
{
    if (!o->enabled) return true;
    int64_t cycle = (int64_t)(o->cold ? 0 : o->wait + o->warmup) + o->active, steps;
    if (fmlp_mul_i64(cycle, o->repeat, &steps) && steps <= INT_MAX) return true;
    cli_error(cmd, "--wait %d + --warmup %d + --active %d steps per cycle x --repeat %d cycles is more than the %d steps "
                   "a profiler counts; use fewer",
              o->cold ? 0 : o->wait, o->cold ? 0 : o->warmup, o->active, o->repeat, INT_MAX);
    return false;
}

bool cli_prof_make_dir(const cli_prof_opts *o, const char *cmd)
{
    if (!o->enabled || !o->trace_dir) return true;
    struct stat st;
    if (mkdir(o->trace_dir, 0755) == 0 || (errno == EEXIST && stat(o->trace_dir, &st) == 0 && S_ISDIR(st.st_mode)))
        return true;
    cli_error(cmd, "cannot create --trace-dir %s: %s; give a directory that exists or can be made", o->trace_dir,
              strerror(errno == EEXIST ? ENOTDIR : errno));
    return false;
}

typedef struct {
    const cli_prof_opts *o;
    const char *run_name;
    int rank, world; /* world 0: one process, one GPU or the CPU */
    FILE *out;
    int windows;
    fmlp_status status;
    char why[1024]; /* the first failure's message */
} ready_ctx;

/* Where a window's files go: DIR/<run_name>[_wN], or for a rank of a
 * tensor-parallel run DIR/<run_name>/rank<R>[_wN], one folder per run as
 * Holistic Trace Analysis and `fmlp trace summarize DIR` read them. */
static void base_name(const ready_ctx *r, char *base, size_t len)
{
    char window[16] = "";
    if (r->windows > 1) snprintf(window, sizeof window, "_w%d", r->windows);
    if (r->world > 0)
        snprintf(base, len, "%s/%s/rank%d%s", r->o->trace_dir, r->run_name, r->rank, window);
    else
        snprintf(base, len, "%s/%s%s", r->o->trace_dir, r->run_name, window);
}

/* Prints the table and analyses of a closed window; with a trace dir,
 * writes them beside the trace. Later windows of --repeat get _wN names. */
static void on_ready(fmlp_profiler *prof, void *user)
{
    ready_ctx *r = user;
    r->windows++;
    fmlp_table_options t = fmlp_table_options_default();
    t.sort_by = r->o->sort_by;
    t.row_limit = r->o->row_limit;
    t.analyses = true;
    char *table = NULL;
    fmlp_status s = fmlp_profiler_table_string(prof, &t, &table);
    if (s == FMLP_OK) {
        char rank[32] = "";
        if (r->world > 0) snprintf(rank, sizeof rank, " rank %d of %d", r->rank, r->world);
        fprintf(r->out, "\nprofile %s%s%s:\n%s", r->run_name, rank, r->windows > 1 ? " (next window)" : "", table);
        if (r->o->trace_dir) {
            char base[4096], path[4200];
            base_name(r, base, sizeof base);
            snprintf(path, sizeof path, "%s.json", base);
            s = fmlp_profiler_export_trace(prof, path);
            if (s == FMLP_OK) {
                snprintf(path, sizeof path, "%s.txt", base);
                s = fmlp_file_write(path, table, strlen(table));
            }
            if (s == FMLP_OK) fprintf(r->out, "wrote %s.json and %s.txt\n", base, base);
        }
    }
    free(table);
    if (s != FMLP_OK && r->status == FMLP_OK) {
        r->status = s;
        snprintf(r->why, sizeof r->why, "%s", fmlp_last_error());
    }
}

/* A run's own folder under --trace-dir for the traces of its ranks. */
static bool make_run_dir(const cli_prof_opts *o, const char *cmd, const char *run_name)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", o->trace_dir, run_name);
    const cli_prof_opts sub = {.enabled = true, .trace_dir = dir};
    return cli_prof_make_dir(&sub, cmd);
}

int cli_prof_run_ranks(fmlp_ctx *const *ctxs, int world, const cli_prof_opts *o, const char *cmd, const char *run_name,
                       fmlp_status (*forward)(void *arg), void *arg, FILE *out)
{
    if (!cli_prof_make_dir(o, cmd)) return 1;
    if (world > 0 && o->trace_dir && !make_run_dir(o, cmd, run_name)) return 1;
    const int n = world > 0 ? world : 1;
    ready_ctx *r = calloc((size_t)n, sizeof *r);
    fmlp_profiler **prof = calloc((size_t)n, sizeof *prof);
    if (!r || !prof) {
        free(r);
        free(prof);
        cli_error(cmd, "profiling %s: out of memory", run_name);
        return 1;
    }
    fmlp_profiler_options po = fmlp_profiler_options_default();
    po.record_shapes = o->record_shapes;
    po.profile_memory = o->profile_memory;
    po.with_flops = true;
    po.wait = o->cold ? 0 : o->wait;
    po.warmup = o->cold ? 0 : o->warmup;
    po.active = o->active;
    po.repeat = o->repeat;
    po.on_trace_ready = on_ready;
    po.world_size = world;
    fmlp_status s = FMLP_OK, fwd = FMLP_OK;
    for (int i = 0; i < n && s == FMLP_OK; i++) {
        r[i] = (ready_ctx){o, run_name, i, world, out, 0, FMLP_OK, ""};
        po.rank = world > 0 ? i : 0;
        po.user = &r[i];
        s = fmlp_profiler_create(ctxs[i], &po, &prof[i]);
    }
    if (s != FMLP_OK) cli_error(cmd, "profiling %s: %s", run_name, fmlp_last_error());
    int steps = (po.wait + po.warmup + po.active) * po.repeat; /* cli_prof_check bounds it */
    for (int i = 0; i < n && s == FMLP_OK; i++) s = fmlp_profiler_start(prof[i]);
    for (int i = 0; i < steps && s == FMLP_OK && fwd == FMLP_OK; i++) {
        fwd = forward(arg);
        for (int k = 0; k < n && fwd == FMLP_OK && s == FMLP_OK; k++) s = fmlp_profiler_step(prof[k]);
    }
    if (fwd != FMLP_OK)
        cli_error(cmd, "%s forward failed while profiling: %s", run_name, fmlp_last_error());
    else if (s != FMLP_OK && prof[n - 1])
        cli_error(cmd, "profiling %s: %s", run_name, fmlp_last_error());
    /* in reverse: rank 0's profiler, the last to stop, is given the GPU
     * calls no device claims (synchronizations) */
    for (int i = n - 1; i >= 0; i--) {
        if (!prof[i]) continue;
        fmlp_status st = fmlp_profiler_stop(prof[i]);
        if (fwd == FMLP_OK && s == FMLP_OK && st != FMLP_OK) {
            cli_error(cmd, "profiling %s: %s", run_name, fmlp_last_error());
            s = st;
        }
    }
    for (int i = 0; i < n; i++) fmlp_profiler_destroy(prof[i]);
    int status = fwd != FMLP_OK || s != FMLP_OK ? 1 : 0;
    for (int i = 0; i < n && status == 0; i++)
        if (r[i].status != FMLP_OK) {
            cli_error(cmd, "writing the profile of %s: %s", run_name, r[i].why);
            status = 1;
        }
    free(r);
    free(prof);
    return status;
}

int cli_prof_run(fmlp_ctx *ctx, const cli_prof_opts *o, const char *cmd, const char *run_name,
                 fmlp_status (*forward)(void *arg), void *arg, FILE *out)
{
    return cli_prof_run_ranks(&ctx, 0, o, cmd, run_name, forward, arg, out);
}
