/* Why: a trace file in Kineto's conventions, so Perfetto draws it and
 * Holistic Trace Analysis loads it as it loads a torch.profiler run: the
 * same top-level keys, categories, args names (External id, correlation,
 * stream, grid, ...), ac2g flows from launch to kernel, M events naming and
 * ordering lanes, and microsecond timestamps with nanosecond precision. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "profiler/analysis.h"
#include "profiler/prof.h"
#include "profiler/tree.h"

/* Fan-out flows (a CPU region's launching thread to its workers) and the
 * flows of a graph launch's kernels get ids above any correlation id, so no
 * flow id is used twice. */
#define FANOUT_ID_BASE (INT64_C(1) << 40)

static void put_us(FILE *f, int64_t ns)
{
    if (ns < 0) {
        fputc('-', f);
        ns = -ns;
    }
    fprintf(f, "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000));
}

/* The set qsort's comparators read (qsort takes no context): one per
 * thread, so traces written or drawn on two threads at once do not race. */
static _Thread_local const pe_set *g_set;

static int by_time(const void *a, const void *b)
{
    const pe_event *x = &g_set->ev[*(const size_t *)a], *y = &g_set->ev[*(const size_t *)b];
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1) return x->t1 > y->t1 ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* false when out of memory */
static bool put_dims(FILE *f, const char *shapes)
{
    json_error err;
    json_doc *d = json_parse(shapes, strlen(shapes), &err);
    if (!d && err.oom) return false;
    if (d && json_doc_root(d)->type == JSON_ARRAY) {
        fputs(",\"Input Dims\":", f);
        fputs(shapes, f);
    } else {
        fputs(",\"Input Shapes\":", f);
        json_write_string(f, shapes);
    }
    json_free(d);
    return true;
}

static void put_common(FILE *f, const pe_event *e, bool first)
{
    if (!first) fputs(",\n", f);
    fputs("{\"ph\":\"X\",\"cat\":", f);
    json_write_string(f, pe_kind_cat(e->kind));
    fputs(",\"name\":", f);
    json_write_string(f, e->name);
    fprintf(f, ",\"pid\":%lld,\"tid\":%lld,\"ts\":", (long long)e->pid, (long long)e->tid);
    put_us(f, e->t0);
    fputs(",\"dur\":", f);
    put_us(f, e->t1 - e->t0);
}

/* false when out of memory */
static bool put_span(FILE *f, const pe_event *e, bool first)
{
    put_common(f, e, first);
    fprintf(f, ",\"args\":{\"External id\":%lld", (long long)e->ext_id);
    switch (e->kind) {
    case PE_CPU_OP:
    case PE_USER:
    case PE_STEP:
        if (e->shapes && !put_dims(f, e->shapes)) return false;
        break;
    case PE_RUNTIME: fprintf(f, ",\"correlation\":%lld", (long long)e->corr); break;
    case PE_KERNEL:
        /* A CPU region's lanes say stream -1, the value HTA gives CPU
         * events, so nothing takes them for GPU kernels. */
        fprintf(f, ",\"device\":%d", e->device);
        if (e->device < 0) fputs(",\"stream\":-1", f);
        if (e->device >= 0)
            fprintf(f,
                    ",\"queued\":0,\"context\":0,\"stream\":%lld,\"registers per thread\":%d,\"shared memory\":%d,"
                    "\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d]",
                    (long long)e->tid, e->regs, e->smem, e->grid[0], e->grid[1], e->grid[2], e->block[0],
                    e->block[1], e->block[2]);
        fprintf(f, ",\"correlation\":%lld", (long long)e->corr);
        break;
    case PE_MEMCPY:
    case PE_MEMSET:
        fprintf(f, ",\"device\":%d,\"context\":0,\"stream\":%lld,\"correlation\":%lld", e->device,
                (long long)e->tid, (long long)e->corr);
        break;
    case PE_MEMORY: break;
    }
    if (e->flops) fprintf(f, ",\"flops\":%lld", (long long)e->flops);
    if (e->bytes) fprintf(f, ",\"bytes\":%lld", (long long)e->bytes);
    fputs("}}", f);
    return true;
}

static void put_memory(FILE *f, const pe_event *e)
{
    fputs(",\n{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\"", f);
    fprintf(f, ",\"pid\":%lld,\"tid\":%lld,\"ts\":", (long long)e->pid, (long long)e->tid);
    put_us(f, e->t0);
    fprintf(f,
            ",\"args\":{\"Total Reserved\":%lld,\"Total Allocated\":%lld,\"Bytes\":%lld,\"Addr\":%lld,"
            "\"Device Id\":%d,\"Device Type\":%d}}",
            (long long)e->mem_total, (long long)e->mem_total, (long long)e->mem_bytes, (long long)e->mem_addr,
            e->device, e->device >= 0 ? 1 : 0);
}

static void put_flow(FILE *f, const char *cat, int64_t id, int64_t pid, int64_t tid, int64_t t, bool finish)
{
    fprintf(f, ",\n{\"ph\":\"%s\",\"id\":%lld,\"pid\":%lld,\"tid\":%lld,\"ts\":", finish ? "f" : "s",
            (long long)id, (long long)pid, (long long)tid);
    put_us(f, t);
    fprintf(f, ",\"cat\":\"%s\",\"name\":\"%s\"%s}", cat, cat, finish ? ",\"bp\":\"e\"" : "");
}

/* ac2g: runtime launch -> GPU work; fan-out: launching thread -> each
 * worker lane of a CPU region. */
static void put_flows(FILE *f, const pe_set *s, const pe_calls *cs)
{
    int64_t fan = FANOUT_ID_BASE;
    for (size_t i = 0; i < cs->n; i++) {
        const pe_call *c = &cs->c[i];
        if (c->device && c->launcher >= 0) {
            const pe_call *rt = &cs->c[c->launcher];
            /* Kernels a graph launch ran share its correlation; each still
             * gets a flow of its own. */
            const int64_t id = strncmp(rt->name, "cudaGraphLaunch", 15) == 0 ? ++fan : c->e->corr;
            put_flow(f, "ac2g", id, rt->pid, rt->tid, rt->t0, false);
            put_flow(f, "ac2g", id, c->pid, c->tid, c->t0, true);
        }
        if (c->kind != PE_KERNEL || c->device || c->lanes < 2) continue;
        for (int k = 0; k < c->lanes; k++) {
            const pe_event *e = &s->ev[cs->lane_ev[c->lane0 + (size_t)k]];
            if (e->tid == c->tid && e->pid == c->pid) continue;
            fan++;
            put_flow(f, "fmlp_fanout", fan, c->pid, c->tid, c->t0, false);
            put_flow(f, "fmlp_fanout", fan, e->pid, e->tid, e->t0, true);
        }
    }
}

static void put_meta(FILE *f, const char *what, int64_t pid, int64_t tid, int64_t ts, const char *key,
                     const char *sval, int64_t ival)
{
    fprintf(f, ",\n{\"name\":\"%s\",\"ph\":\"M\",\"ts\":", what);
    put_us(f, ts);
    fprintf(f, ",\"pid\":%lld,\"tid\":%lld,\"args\":{\"%s\":", (long long)pid, (long long)tid, key);
    if (sval)
        json_write_string(f, sval);
    else
        fprintf(f, "%lld", (long long)ival);
    fputs("}}", f);
}

/* Names and orders every lane: CPU threads (the stepping thread first),
 * then each device's streams; false when out of memory. */
static bool put_lanes(FILE *f, const pe_set *s, int64_t t_first)
{
    char name[96];
    put_meta(f, "process_name", s->pid, 0, t_first, "name", "fmlp", 0);
    put_meta(f, "process_labels", s->pid, 0, t_first, "labels", "CPU", 0);
    put_meta(f, "process_sort_index", s->pid, 0, t_first, "sort_index", NULL, 0);
    int64_t *seen = fmlp_malloc((s->n + 1) * 2 * sizeof *seen);
    if (!seen) return false;
    size_t nseen = 0;
    for (size_t i = 0; i < s->n; i++) {
        const pe_event *e = &s->ev[i];
        bool dup = false;
        for (size_t k = 0; k < nseen && !dup; k++) dup = seen[2 * k] == e->pid && seen[2 * k + 1] == e->tid;
        if (dup) continue;
        seen[2 * nseen] = e->pid;
        seen[2 * nseen + 1] = e->tid;
        nseen++;
        if (e->device < 0) {
            bool main = e->tid == s->main_tid;
            snprintf(name, sizeof name, "thread %lld (%s)", (long long)e->tid, main ? "fmlp main" : "fmlp worker");
            put_meta(f, "thread_name", e->pid, e->tid, t_first, "name", name, 0);
            put_meta(f, "thread_sort_index", e->pid, e->tid, t_first, "sort_index", NULL, main ? 0 : e->tid);
            continue;
        }
        bool dev_named = false;
        for (size_t k = 0; k + 1 < nseen && !dev_named; k++) dev_named = seen[2 * k] == e->pid;
        if (!dev_named) {
            snprintf(name, sizeof name, "GPU %d", e->device);
            put_meta(f, "process_name", e->pid, 0, t_first, "name", name, 0);
            put_meta(f, "process_labels", e->pid, 0, t_first, "labels", name, 0);
            put_meta(f, "process_sort_index", e->pid, 0, t_first, "sort_index", NULL, 0x1000000LL + e->device);
        }
        snprintf(name, sizeof name, "stream %lld", (long long)e->tid);
        put_meta(f, "thread_name", e->pid, e->tid, t_first, "name", name, 0);
        put_meta(f, "thread_sort_index", e->pid, e->tid, t_first, "sort_index", NULL, e->tid);
    }
    free(seen);
    return true;
}

static void put_device_props(FILE *f, const fmlp_device_props *d)
{
    fprintf(f, "{\"id\": %d, \"name\": ", d->id);
    json_write_string(f, d->name);
    fprintf(f,
            ", \"totalGlobalMem\": %zu, \"computeMajor\": %d, \"computeMinor\": %d, \"maxThreadsPerBlock\": %d, "
            "\"maxThreadsPerMultiprocessor\": %d, \"regsPerBlock\": %d, \"regsPerMultiprocessor\": %d, \"warpSize\": %d, "
            "\"sharedMemPerBlock\": %zu, \"sharedMemPerMultiprocessor\": %zu, \"numSms\": %d, "
            "\"sharedMemPerBlockOptin\": %zu}",
            d->total_global_mem, d->compute_major, d->compute_minor, d->max_threads_per_block, d->max_threads_per_mp,
            d->regs_per_block, d->regs_per_mp, d->warp_size, d->shared_mem_per_block, d->shared_mem_per_mp, d->num_sms,
            d->shared_mem_per_block_optin);
}

/* The backend's own description when it gave one, else an id and name per
 * device seen. */
static void put_devices(FILE *f, const pe_set *s)
{
    int seen[64], n = 0;
    fputs("\"deviceProperties\":[", f);
    if (s->have_device) {
        put_device_props(f, &s->device);
        fputs("],\n", f);
        return;
    }
    for (size_t i = 0; i < s->n; i++) {
        int d = s->ev[i].device;
        bool dup = d < 0;
        for (int k = 0; k < n && !dup; k++) dup = seen[k] == d;
        if (dup || n == 64) continue;
        seen[n] = d;
        fprintf(f, "%s{\"id\":%d,\"name\":\"cuda:%d\"}", n ? "," : "", d, d);
        n++;
    }
    fputs("],\n", f);
}

char *prof_trace_json(const pe_set *s, const fmlp_profiler_options *opt, size_t *len)
{
    char *buf = NULL;
    *len = 0;
    FILE *f = open_memstream(&buf, len);
    if (!f) return NULL;
    size_t *order = fmlp_malloc((s->n + 1) * sizeof *order);
    pe_calls cs;
    bool have_calls = order && pe_calls_build(s, &cs);
    if (!have_calls) {
        free(order);
        fclose(f);
        free(buf);
        return NULL;
    }
    for (size_t i = 0; i < s->n; i++) order[i] = i;
    g_set = s;
    qsort(order, s->n, sizeof *order, by_time);
    int64_t t_first = s->n ? s->ev[order[0]].t0 : 0;

    fputs("{\"schemaVersion\":1,\n", f);
    put_devices(f, s);
    fputs("\"distributedInfo\":{\"backend\":\"none\",\"rank\":0,\"world_size\":1},\n", f);
    fprintf(f, "\"record_shapes\":%d,\"profile_memory\":%d,\"with_flops\":%d,\n", opt && opt->record_shapes,
            opt && opt->profile_memory, opt && opt->with_flops);
    fprintf(f, "\"traceName\":\"fmlp\",\"displayTimeUnit\":\"ms\",\"baseTimeNanoseconds\":%lld,\n",
            (long long)s->base_ns);
    /* The analysis fails only for want of memory once there are calls. */
    pe_analysis a;
    bool ok = true;
    if (pe_analyze(s, &cs, &a)) {
        fputs("\"fmlpAnalysis\":", f);
        pe_analysis_json(&a, s, f);
        fputs(",\n", f);
        pe_analysis_free(&a);
    } else {
        ok = cs.n == 0;
    }
    fputs("\"traceEvents\":[\n", f);
    bool first = true;
    for (size_t k = 0; k < s->n && ok; k++) {
        const pe_event *e = &s->ev[order[k]];
        if (e->kind == PE_MEMORY) continue;
        ok = put_span(f, e, first);
        first = false;
    }
    if (first) fputs("{\"name\":\"Record Window Start\",\"ph\":\"i\",\"s\":\"g\",\"pid\":0,\"tid\":0,\"ts\":0}", f);
    for (size_t k = 0; k < s->n; k++)
        if (s->ev[order[k]].kind == PE_MEMORY) put_memory(f, &s->ev[order[k]]);
    put_flows(f, s, &cs);
    ok = ok && put_lanes(f, s, t_first);
    fputs("\n]}\n", f);
    free(order);
    pe_calls_free(&cs);
    /* The memory stream's own growth failing shows as its error. */
    ok = ok && !ferror(f);
    if (fclose(f) != 0 || !ok) {
        free(buf);
        return NULL;
    }
    return buf;
}
