/* Why: the public reporting calls. They all read the last completed window,
 * as torch's key_averages() and export_chrome_trace() do after a window
 * closes or the profiler stops. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "profiler/analysis.h"
#include "profiler/prof.h"
#include "profiler/tree.h"

static fmlp_status need_window(const fmlp_profiler *p, const char *what)
{
    if (!p) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s: profiler is NULL", what);
    if (!p->have_done)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "%s: no completed profiling window yet; call fmlp_profiler_stop, or step through a whole "
                         "active window (or call it from on_trace_ready)",
                         what);
    if (p->done.oom)
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "%s: the profiler ran out of memory while recording; profile fewer steps",
                         what);
    return FMLP_OK;
}

fmlp_status fmlp_profiler_table_string(fmlp_profiler *p, const fmlp_table_options *opt, char **out)
{
    if (!out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_table_string: out is NULL");
    *out = NULL;
    fmlp_status s = need_window(p, "fmlp_profiler_table_string");
    if (s != FMLP_OK) return s;
    *out = prof_table(&p->done, opt, p->opt.with_flops, &s);
    return s;
}

fmlp_status fmlp_profiler_table(fmlp_profiler *p, const fmlp_table_options *opt, FILE *f)
{
    if (!f) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_table: FILE is NULL; pass stdout or an open file");
    char *t = NULL;
    fmlp_status s = fmlp_profiler_table_string(p, opt, &t);
    if (s != FMLP_OK) return s;
    fputs(t, f);
    free(t);
    return FMLP_OK;
}

fmlp_status fmlp_profiler_export_trace(fmlp_profiler *p, const char *path)
{
    fmlp_status s = need_window(p, "fmlp_profiler_export_trace");
    if (s != FMLP_OK) return s;
    if (!path || !*path) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_export_trace: path is empty; give a .json or .json.gz file name");
    size_t len;
    char *json = prof_trace_json(&p->done, &p->opt, &len);
    if (!json) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory writing the trace");
    s = prof_write_file(path, json, len);
    free(json);
    return s;
}

fmlp_status fmlp_profiler_summary(fmlp_profiler *p, fmlp_profile_summary *out)
{
    if (!out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_summary: out is NULL");
    memset(out, 0, sizeof *out);
    fmlp_status s = need_window(p, "fmlp_profiler_summary");
    if (s != FMLP_OK) return s;
    pe_calls cs;
    if (!pe_calls_build(&p->done, &cs)) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory analysing the profile");
    pe_analysis a;
    bool ok = pe_analyze(&p->done, &cs, &a);
    pe_calls_free(&cs);
    if (!ok)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "fmlp_profiler_summary: the window recorded no events; run forwards while the profiler is active");
    *out = a.sum;
    pe_analysis_free(&a);
    return FMLP_OK;
}
