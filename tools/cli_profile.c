/* Why: see cli_profile.h. The default schedule mirrors the tutorial's
 * scripts (wait 1, warmup 1, active 3); --cold records the very first call
 * instead, so packing and first-touch costs show up in the table. */
#include "cli_profile.h"

#include <errno.h>
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
               "  --trace-dir DIR       write DIR/<shape>_<dtype>_<cold|warm>_<mode>.json and .txt\n"
               "  --sort-by COL         self_cpu_time_total (default), cpu_time_total, cpu_time, count, flops,\n"
               "                        self_cuda_time_total, cuda_time_total, cuda_time\n"
               "  --row-limit N         table rows (default all)\n"
               "  --record-shapes       record input shapes in the trace\n"
               "  --profile-memory      record workspace allocations with running totals\n");
}

static int int_flag(const char *flag, int argc, char **argv, int *i, int lo, int *out)
{
    const char *v = cli_value(argc, argv, i, "profile");
    if (!v || !cli_parse_int("profile", flag, v, lo, 1000000, out)) return -1;
    return 1;
}

int cli_prof_parse(cli_prof_opts *o, int argc, char **argv, int *i)
{
    const char *f = argv[*i];
    if (strcmp(f, "--no-profile") == 0) return o->enabled = false, 1;
    if (strcmp(f, "--cold") == 0) return o->cold = true, 1;
    if (strcmp(f, "--record-shapes") == 0) return o->record_shapes = true, 1;
    if (strcmp(f, "--profile-memory") == 0) return o->profile_memory = true, 1;
    if (strcmp(f, "--wait") == 0) return int_flag(f, argc, argv, i, 0, &o->wait);
    if (strcmp(f, "--warmup") == 0) return int_flag(f, argc, argv, i, 0, &o->warmup);
    if (strcmp(f, "--active") == 0) return int_flag(f, argc, argv, i, 1, &o->active);
    if (strcmp(f, "--repeat") == 0) return int_flag(f, argc, argv, i, 1, &o->repeat);
    if (strcmp(f, "--row-limit") == 0) return int_flag(f, argc, argv, i, 0, &o->row_limit);
    if (strcmp(f, "--trace-dir") == 0) {
        const char *v = cli_value(argc, argv, i, "profile");
        if (!v) return -1;
        o->trace_dir = v;
        return 1;
    }
    if (strcmp(f, "--sort-by") == 0) {
        const char *v = cli_value(argc, argv, i, "profile");
        if (!v) return -1;
        if (!fmlp_table_sort_key_valid(v)) {
            cli_error("profile", "--sort-by: \"%s\" is not a column; use self_cpu_time_total, cpu_time_total, "
                                 "cpu_time, count, flops, self_cuda_time_total, cuda_time_total or cuda_time",
                      v);
            return -1;
        }
        o->sort_by = v;
        return 1;
    }
    return 0;
}

typedef struct {
    const cli_prof_opts *o;
    const char *run_name;
    FILE *out;
    int windows;
    fmlp_status status;
} ready_ctx;

static fmlp_status write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "fmlp: cannot write %s: %s\n", path, strerror(errno));
        return FMLP_ERR_IO;
    }
    fputs(text, f);
    return fclose(f) == 0 ? FMLP_OK : FMLP_ERR_IO;
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
        fprintf(r->out, "\nprofile %s%s:\n%s", r->run_name, r->windows > 1 ? " (next window)" : "", table);
        if (r->o->trace_dir) {
            char base[4096], path[4200];
            if (r->windows > 1)
                snprintf(base, sizeof base, "%s/%s_w%d", r->o->trace_dir, r->run_name, r->windows);
            else
                snprintf(base, sizeof base, "%s/%s", r->o->trace_dir, r->run_name);
            snprintf(path, sizeof path, "%s.json", base);
            s = fmlp_profiler_export_trace(prof, path);
            if (s == FMLP_OK) {
                snprintf(path, sizeof path, "%s.txt", base);
                s = write_text(path, table);
            }
            if (s == FMLP_OK) fprintf(r->out, "wrote %s.json and %s.txt\n", base, base);
        }
    }
    free(table);
    if (s != FMLP_OK && r->status == FMLP_OK) r->status = s;
}

fmlp_status cli_prof_run(fmlp_ctx *ctx, const cli_prof_opts *o, const char *run_name,
                         fmlp_status (*forward)(void *arg), void *arg, FILE *out)
{
    if (o->trace_dir && mkdir(o->trace_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fmlp: cannot create --trace-dir %s: %s\n", o->trace_dir, strerror(errno));
        return FMLP_ERR_IO;
    }
    ready_ctx r = {o, run_name, out, 0, FMLP_OK};
    fmlp_profiler_options po = fmlp_profiler_options_default();
    po.record_shapes = o->record_shapes;
    po.profile_memory = o->profile_memory;
    po.with_flops = true;
    po.wait = o->cold ? 0 : o->wait;
    po.warmup = o->cold ? 0 : o->warmup;
    po.active = o->active;
    po.repeat = o->repeat;
    po.on_trace_ready = on_ready;
    po.user = &r;
    fmlp_profiler *prof;
    fmlp_status s = fmlp_profiler_create(ctx, &po, &prof);
    if (s != FMLP_OK) return s;
    int steps = (po.wait + po.warmup + po.active) * (po.repeat > 0 ? po.repeat : 1);
    s = fmlp_profiler_start(prof);
    for (int i = 0; i < steps && s == FMLP_OK; i++) {
        s = forward(arg);
        if (s == FMLP_OK) s = fmlp_profiler_step(prof);
    }
    fmlp_status st = fmlp_profiler_stop(prof);
    if (s == FMLP_OK) s = st;
    fmlp_profiler_destroy(prof);
    return s != FMLP_OK ? s : r.status;
}
