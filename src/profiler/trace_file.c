/* Why: the public trace handle (see fmlp.h, "trace files"): opening a file
 * or a buffer into the event model, what can be counted from the events
 * (writer, spans, lanes, steps), and the per-step analysis made once and
 * shared by every call that reads it. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "profiler/trace_handle.h"
#include "profiler/trace_read.h"
#include "profiler/tree.h"

static fmlp_status new_trace(const void *src, fmlp_trace **out, const char *what, fmlp_trace **t)
{
    *t = NULL;
    if (!out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s: out is NULL; pass the address of an fmlp_trace *", what);
    *out = NULL;
    if (!src) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s: the input is NULL", what);
    *t = fmlp_calloc(1, sizeof **t);
    if (!*t) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory opening a trace");
    pthread_mutex_init(&(*t)->lock, NULL);
    return FMLP_OK;
}

/* Takes the status of reading `t`; on success counts its steps. */
static fmlp_status finish_open(fmlp_status s, fmlp_trace *t, const char *path, fmlp_trace **out)
{
    if (s == FMLP_OK && !(t->path = fmlp_strdup(path))) s = fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory reading %s", path);
    if (s != FMLP_OK) {
        fmlp_trace_close(t);
        return s;
    }
    for (size_t i = 0; i < t->s.n; i++) t->n_steps += t->s.ev[i].kind == PE_STEP && t->s.ev[i].t1 >= t->s.ev[i].t0;
    *out = t;
    return FMLP_OK;
}

fmlp_status fmlp_trace_open(const char *path, fmlp_trace **out)
{
    fmlp_trace *t;
    fmlp_status s = new_trace(path, out, "fmlp_trace_open", &t);
    return s != FMLP_OK ? s : finish_open(pe_read_trace(path, &t->s), t, path, out);
}

fmlp_status fmlp_trace_parse(const char *text, size_t len, const char *name, fmlp_trace **out)
{
    fmlp_trace *t;
    fmlp_status s = new_trace(text, out, "fmlp_trace_parse", &t);
    if (!name || !*name) name = "trace";
    return s != FMLP_OK ? s : finish_open(pe_parse_trace(text, len, name, &t->s), t, name, out);
}

void fmlp_trace_close(fmlp_trace *t)
{
    if (!t) return;
    pe_analysis_free(&t->a);
    pe_set_free(&t->s);
    pthread_mutex_destroy(&t->lock);
    free(t->path);
    free(t);
}

fmlp_status fmlp_trace_get_info(const fmlp_trace *t, fmlp_trace_info *out)
{
    if (!t || !out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_get_info: trace and out must not be NULL");
    memset(out, 0, sizeof *out);
    out->path = t->path;
    out->origin = t->s.origin;
    out->steps = t->n_steps;
    out->rank = t->s.dist_world > 0 ? t->s.dist_rank : 0;
    out->world_size = t->s.dist_world;
    out->dist_backend = t->s.dist_backend ? t->s.dist_backend : "none";
    bool *seen = fmlp_calloc(t->s.lanes.n + 1, sizeof *seen);
    if (!seen) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory counting the lanes of %s", t->path);
    for (size_t i = 0; i < t->s.n; i++) {
        const pe_event *e = &t->s.ev[i];
        out->spans += pe_is_span(e);
        if (seen[e->lane]) continue;
        seen[e->lane] = true;
        if (out->lanes < FMLP_TRACE_MAX_LANES) out->lanes++;
    }
    free(seen);
    return FMLP_OK;
}

const pe_analysis *trace_analysis(fmlp_trace *t, const char *what)
{
    pthread_mutex_lock(&t->lock);
    if (!t->analysed) {
        pe_calls cs;
        t->analysable = pe_calls_build(&t->s, &cs) && pe_analyze(&t->s, &cs, &t->a);
        pe_calls_free(&cs);
        t->analysed = true;
    }
    bool ok = t->analysable;
    pthread_mutex_unlock(&t->lock);
    if (ok) return &t->a;
    fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s: %s holds no spans to analyse (or memory ran out)", what, t->path);
    return NULL;
}

fmlp_status fmlp_trace_summary(fmlp_trace *t, fmlp_profile_summary *out)
{
    if (!t || !out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_summary: trace and out must not be NULL");
    memset(out, 0, sizeof *out);
    const pe_analysis *a = trace_analysis(t, "fmlp_trace_summary");
    if (!a) return FMLP_ERR_INVALID_ARGUMENT;
    *out = a->sum;
    return FMLP_OK;
}

fmlp_status fmlp_trace_step_info(fmlp_trace *t, int i, fmlp_trace_step *out)
{
    if (!t || !out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_step_info: trace and out must not be NULL");
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= t->n_steps)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_step_info: step %d is out of range; %s has %d steps (0..%d)",
                         i, t->path, t->n_steps, t->n_steps - 1);
    const pe_analysis *a = trace_analysis(t, "fmlp_trace_step_info");
    if (!a) return FMLP_ERR_INVALID_ARGUMENT;
    /* Steps are spans, so the analysis has one per ProfilerStep#N span. */
    const pe_step_stat *st = &a->steps[i];
    const char *hash = strchr(st->name, '#');
    char *end = NULL;
    long number = hash ? strtol(hash + 1, &end, 10) : -1;
    out->name = st->name;
    out->number = hash && end != hash + 1 && !*end && number >= 0 && number <= INT32_MAX ? (int)number : -1;
    out->start_ns = st->t0;
    out->end_ns = st->t1;
    out->wall_us = st->wall_us;
    out->kernel_us = st->kernel_us;
    out->overhead_us = st->overhead_us;
    out->idle_us = st->idle_us;
    out->kernels = st->kernels;
    out->copies = st->copies;
    out->copy_us = st->copy_us;
    out->copy_bytes = st->copy_bytes;
    out->bound = st->bound;
    snprintf(out->reason, sizeof out->reason, "%s", st->reason);
    return FMLP_OK;
}
