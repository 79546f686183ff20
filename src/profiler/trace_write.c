/* Why: a trace file in Kineto's conventions, so Perfetto draws it and
 * Holistic Trace Analysis loads it as it loads a torch.profiler run: the
 * same top-level keys, categories, args names (External id, correlation,
 * stream, grid, ...), ac2g flows from launch to kernel, M events naming and
 * ordering lanes, and microsecond timestamps with nanosecond precision. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/idx_sort.h"
#include "core/json.h"
#include "profiler/analysis.h"
#include "profiler/idmap.h"
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

static int by_time(const void *ctx, uint32_t a, uint32_t b)
{
    const pe_event *x = &((const pe_set *)ctx)->ev[a], *y = &((const pe_set *)ctx)->ev[b];
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1) return x->t1 > y->t1 ? -1 : 1;
    return a < b ? -1 : a > b;
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

static void put_common(FILE *f, const pe_set *s, const pe_event *e, bool first)
{
    if (!first) fputs(",\n", f);
    fputs("{\"ph\":\"X\",\"cat\":", f);
    json_write_string(f, pe_kind_cat(e->kind));
    fputs(",\"name\":", f);
    json_write_string(f, e->name);
    const pe_lane *l = pe_lane_of(s, e);
    fprintf(f, ",\"pid\":%lld,\"tid\":%lld,\"ts\":", (long long)l->pid, (long long)l->tid);
    put_us(f, e->t0);
    fputs(",\"dur\":", f);
    put_us(f, e->t1 - e->t0);
}

/* false when out of memory */
static bool put_span(FILE *f, const pe_set *s, const pe_event *e, bool first)
{
    const pe_more *m = pe_more_of(s, e);
    int64_t tid = pe_lane_of(s, e)->tid;
    put_common(f, s, e, first);
    fprintf(f, ",\"args\":{\"External id\":%lld", (long long)e->ext_id);
    switch (e->kind) {
    case PE_CPU_OP:
    case PE_USER:
    case PE_STEP:
        if (m->shapes && !put_dims(f, m->shapes)) return false;
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
                    (long long)tid, m->regs, m->smem, m->grid[0], m->grid[1], m->grid[2], m->block[0], m->block[1],
                    m->block[2]);
        fprintf(f, ",\"correlation\":%lld", (long long)e->corr);
        break;
    case PE_MEMCPY:
    case PE_MEMSET:
        fprintf(f, ",\"device\":%d,\"context\":0,\"stream\":%lld,\"correlation\":%lld", e->device, (long long)tid,
                (long long)e->corr);
        break;
    case PE_MEMORY: break;
    }
    if (m->flops) fprintf(f, ",\"flops\":%lld", (long long)m->flops);
    if (m->bytes) fprintf(f, ",\"bytes\":%lld", (long long)m->bytes);
    fputs("}}", f);
    return true;
}

static void put_memory(FILE *f, const pe_set *s, const pe_event *e)
{
    const pe_lane *l = pe_lane_of(s, e);
    const pe_more *m = pe_more_of(s, e);
    fputs(",\n{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\"", f);
    fprintf(f, ",\"pid\":%lld,\"tid\":%lld,\"ts\":", (long long)l->pid, (long long)l->tid);
    put_us(f, e->t0);
    fprintf(f,
            ",\"args\":{\"Total Reserved\":%lld,\"Total Allocated\":%lld,\"Bytes\":%lld,\"Addr\":%lld,"
            "\"Device Id\":%d,\"Device Type\":%d}}",
            (long long)m->mem_total, (long long)m->mem_total, (long long)m->mem_bytes, (long long)m->mem_addr,
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
        pe_call_view c = pe_call_get(cs, i);
        if (c.device && cs->c[i].launcher >= 0) {
            pe_call_view rt = pe_call_get(cs, (size_t)cs->c[i].launcher);
            /* Kernels a graph launch ran share its correlation; each still
             * gets a flow of its own. */
            const int64_t id = strncmp(rt.name, "cudaGraphLaunch", 15) == 0 ? ++fan : c.e->corr;
            put_flow(f, "ac2g", id, rt.pid, rt.tid, rt.t0, false);
            put_flow(f, "ac2g", id, c.pid, c.tid, c.t0, true);
        }
        if (c.kind != PE_KERNEL || c.device || c.lanes < 2) continue;
        for (int k = 0; k < c.lanes; k++) {
            const pe_event *e = &s->ev[c.rec[k]];
            const pe_lane *l = pe_lane_of(s, e);
            if (l->tid == c.tid && l->pid == c.pid) continue;
            fan++;
            put_flow(f, "fmlp_fanout", fan, c.pid, c.tid, c.t0, false);
            put_flow(f, "fmlp_fanout", fan, l->pid, l->tid, e->t0, true);
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
    /* Lanes in the order their first events come; a device process is
     * named with its first lane, unless a CPU lane had its pid. */
    bool *seen = fmlp_calloc(s->lanes.n + 1, sizeof *seen);
    pe_idmap named;
    if (!seen || !pe_idmap_init(&named, 0, 0, 0)) {
        free(seen);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < s->n; i++) {
        const pe_event *e = &s->ev[i];
        if (seen[e->lane]) continue;
        seen[e->lane] = true;
        int64_t pid = pe_lane_of(s, e)->pid, tid = pe_lane_of(s, e)->tid;
        bool pid_named = pe_idmap_get(&named, pid) >= 0;
        if (!(ok = pe_idmap_put(&named, pid, 1))) break;
        if (e->device < 0) {
            bool main = tid == s->main_tid;
            snprintf(name, sizeof name, "thread %lld (%s)", (long long)tid, main ? "fmlp main" : "fmlp worker");
            put_meta(f, "thread_name", pid, tid, t_first, "name", name, 0);
            put_meta(f, "thread_sort_index", pid, tid, t_first, "sort_index", NULL, main ? 0 : tid);
            continue;
        }
        if (!pid_named) {
            snprintf(name, sizeof name, "GPU %d", e->device);
            put_meta(f, "process_name", pid, 0, t_first, "name", name, 0);
            put_meta(f, "process_labels", pid, 0, t_first, "labels", name, 0);
            put_meta(f, "process_sort_index", pid, 0, t_first, "sort_index", NULL, 0x1000000LL + e->device);
        }
        snprintf(name, sizeof name, "stream %lld", (long long)tid);
        put_meta(f, "thread_name", pid, tid, t_first, "name", name, 0);
        put_meta(f, "thread_sort_index", pid, tid, t_first, "sort_index", NULL, tid);
    }
    pe_idmap_free(&named);
    free(seen);
    return ok;
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

/* Who wrote the trace: the live profiler's options, else what a read trace
 * said; one process with no collectives when neither says. */
static void put_distributed(FILE *f, const pe_set *s, const fmlp_profiler_options *opt)
{
    int rank = 0, world = 1;
    const char *backend = "none";
    if (opt && opt->world_size > 0) {
        rank = opt->rank;
        world = opt->world_size;
        backend = opt->dist_backend ? opt->dist_backend : "nccl";
    } else if (!opt && s->dist_world > 0) {
        rank = s->dist_rank;
        world = s->dist_world;
        backend = s->dist_backend ? s->dist_backend : "none";
    }
    /* spaced as Kineto writes it: Holistic Trace Analysis finds a file's
     * rank with the pattern "rank":\s+(\d+) */
    fputs("\"distributedInfo\": {\"backend\": ", f);
    json_write_string(f, backend);
    fprintf(f, ", \"rank\": %d, \"world_size\": %d},\n", rank, world);
}

char *prof_trace_json(const pe_set *s, const fmlp_profiler_options *opt, size_t *len)
{
    char *buf = NULL;
    *len = 0;
    FILE *f = open_memstream(&buf, len);
    if (!f) return NULL;
    uint32_t *order = fmlp_malloc((s->n + 1) * sizeof *order);
    pe_calls cs;
    bool have_calls = order && pe_calls_build(s, &cs);
    if (have_calls) {
        for (size_t i = 0; i < s->n; i++) order[i] = (uint32_t)i;
        if (!idx_sort(order, s->n, by_time, s)) {
            pe_calls_free(&cs);
            have_calls = false;
        }
    }
    if (!have_calls) {
        free(order);
        fclose(f);
        free(buf);
        return NULL;
    }
    int64_t t_first = s->n ? s->ev[order[0]].t0 : 0;

    fputs("{\"schemaVersion\":1,\n", f);
    put_devices(f, s);
    put_distributed(f, s, opt);
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
        ok = put_span(f, s, e, first);
        first = false;
    }
    if (first) fputs("{\"name\":\"Record Window Start\",\"ph\":\"i\",\"s\":\"g\",\"pid\":0,\"tid\":0,\"ts\":0}", f);
    for (size_t k = 0; k < s->n; k++)
        if (s->ev[order[k]].kind == PE_MEMORY) put_memory(f, s, &s->ev[order[k]]);
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
