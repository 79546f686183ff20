/* Why: `fmlp trace summarize|render|diff` read Chrome/Kineto trace files
 * that torch.profiler or anyone else wrote. Each input goes through the
 * public calls those commands make (fmlp_trace_parse, info, summary,
 * steps, the summary text under every sort key, diff, SVG render) and
 * through the writer: a trace read, written back out as fmlp writes traces
 * and read again must parse. Output goes to memory or /dev/null. Limits
 * are lowered so their failure paths run too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmlp.h"
#include "profiler/prof.h"
#include "profiler/trace_read.h"

static void public_calls(const uint8_t *data, size_t size)
{
    fmlp_trace *t = NULL;
    if (fmlp_trace_parse((const char *)data, size, "fuzz input", &t) != FMLP_OK) {
        if (t || !fmlp_last_error()[0]) abort();
        return;
    }
    fmlp_trace_info info;
    if (fmlp_trace_get_info(t, &info) != FMLP_OK || info.lanes > FMLP_TRACE_MAX_LANES) abort();
    fmlp_profile_summary sum;
    fmlp_trace_summary(t, &sum);
    for (int i = 0; i < info.steps && i < 8; i++) {
        fmlp_trace_step st;
        if (fmlp_trace_step_info(t, i, &st) != FMLP_OK) abort();
    }
    static const char *const sorts[] = {NULL, "count", "cpu_time_total", "self_cuda_time_total", "flops"};
    fmlp_table_options o = fmlp_table_options_default();
    o.analyses = true;
    o.sort_by = sorts[size % 5];
    o.row_limit = (int)(size % 4);
    char *text = NULL;
    if (fmlp_trace_summary_string(t, &o, &text) == FMLP_OK && !text) abort();
    free(text);
    fmlp_trace *two[2] = {t, t};
    fmlp_trace_diff_string(two, 2, &text);
    free(text);
    fmlp_svg_options so = fmlp_svg_options_default();
    so.step = info.steps && size % 2 ? 0 : -1;
    fmlp_trace_render_svg(t, &so, "/dev/null");
    fmlp_trace_close(t);
}

static void round_trip(const uint8_t *data, size_t size)
{
    pe_set s, back;
    if (pe_parse_trace((const char *)data, size, "fuzz input", &s) == FMLP_OK) {
        fmlp_profiler_options po = fmlp_profiler_options_default();
        size_t n = 0;
        char *json = prof_trace_json(&s, &po, &n);
        /* Escaping may take a name written back past the string limit. */
        if (json && pe_parse_trace(json, n, "written back", &back) != FMLP_OK && !strstr(fmlp_last_error(), "the limit is"))
            abort();
        if (json) pe_set_free(&back);
        free(json);
    }
    pe_set_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    if (!once++) {
        setenv("FMLP_TRACE_MAX_EVENTS", "5000", 1);
        setenv("FMLP_TRACE_MAX_STRING", "4096", 1);
        setenv("FMLP_TRACE_MAX_DEPTH", "32", 1);
    }
    public_calls(data, size);
    round_trip(data, size);
    return 0;
}
