/* Why: what `fmlp trace summarize` and `render` produce, as library calls
 * on an open trace (see fmlp.h, "trace files"): the summary (a line naming
 * the file, then the very table and analyses a live window prints) and the
 * standalone SVG timeline, whole or one ProfilerStep#N. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/file_out.h"
#include "profiler/prof.h"
#include "profiler/svg.h"
#include "profiler/trace_handle.h"

fmlp_status fmlp_trace_summary_string(const fmlp_trace *t, const fmlp_table_options *opt, char **out)
{
    if (!out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_summary_string: out is NULL");
    *out = NULL;
    if (!t) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_summary_string: trace is NULL");
    fmlp_trace_info info;
    fmlp_status s = fmlp_trace_get_info(t, &info);
    if (s != FMLP_OK) return s;
    char *table = prof_table(&t->s, opt, true, &s);
    if (!table) return s;
    size_t len = 0;
    FILE *m = open_memstream(out, &len);
    if (m) {
        fprintf(m, "trace %s: written by %s, %zu spans on %d%s lanes\n\n", info.path, info.origin, info.spans,
                info.lanes, info.lanes == FMLP_TRACE_MAX_LANES ? "+" : "");
        fputs(table, m);
        fclose(m);
    }
    free(table);
    return m ? FMLP_OK : fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory summarizing %s", info.path);
}

/* Prints and frees what a *_string call made, or passes its failure on. */
static fmlp_status put_string(fmlp_status s, char *text, FILE *f)
{
    if (s == FMLP_OK) fputs(text, f);
    free(text);
    return s;
}

fmlp_status fmlp_trace_summary_print(const fmlp_trace *t, const fmlp_table_options *opt, FILE *f)
{
    if (!f) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_summary_print: FILE is NULL; pass stdout or an open file");
    char *text = NULL;
    fmlp_status s = fmlp_trace_summary_string(t, opt, &text);
    return put_string(s, text, f);
}

fmlp_status fmlp_trace_diff_print(fmlp_trace *const *traces, int n, FILE *f)
{
    if (!f) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_diff_print: FILE is NULL; pass stdout or an open file");
    char *text = NULL;
    fmlp_status s = fmlp_trace_diff_string(traces, n, &text);
    return put_string(s, text, f);
}

fmlp_svg_options fmlp_svg_options_default(void)
{
    fmlp_svg_options o;
    memset(&o, 0, sizeof o);
    o.step = -1;
    return o;
}

/* The time range of the first ProfilerStep#step span. */
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

fmlp_status fmlp_trace_render_svg(const fmlp_trace *t, const fmlp_svg_options *opt, const char *path)
{
    if (!t) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_render_svg: trace is NULL");
    if (!path || !*path) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_render_svg: path is empty; give an .svg file name");
    fmlp_svg_options o = opt ? *opt : fmlp_svg_options_default();
    if (o.width != 0 && (o.width < 400 || o.width > 100000))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_render_svg: width %d is out of range; use 400..100000 pixels (0: 1600)",
                         o.width);
    if (o.step < -1)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_render_svg: step %d is not a step; use N >= 0, or -1 for the whole trace",
                         o.step);
    pe_svg_options so = {o.title ? o.title : t->path, 0, 0, o.width};
    if (o.step >= 0 && !step_range(&t->s, o.step, &so.t0, &so.t1))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s has no ProfilerStep#%d; run `fmlp trace summarize` to list its steps",
                         t->path, o.step);
    fmlp_file_out out;
    fmlp_status s = fmlp_file_out_open(&out, path);
    if (s != FMLP_OK) return s;
    FILE *f = fmlp_file_out_stream(&out);
    if (f && pe_render_svg(&t->s, &so, f)) return fmlp_file_out_commit(&out);
    fmlp_file_out_abort(&out);
    return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory drawing %s; nothing was written", path);
}
