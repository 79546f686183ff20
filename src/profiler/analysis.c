/* Why: see analysis.h. One definition covers CPU and GPU runs and read
 * traces alike: "kernel" time is the union of kernels on any lane; "copy"
 * time is what GPU copies and memsets (and the runtime calls that issue
 * them) add on top; "dispatch overhead" is the rest of the time inside ops
 * and runtime calls (for a GPU, the device waiting on launches); "idle" is
 * the rest of the step's wall time. The verdict itself is verdict.c's. */
#include "profiler/analysis.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/idx_sort.h"
#include "core/json.h"
#include "profiler/idmap.h"

const char *pe_bound_name(fmlp_bound b)
{
    switch (b) {
    case FMLP_BOUND_OVERHEAD: return "overhead-bound";
    case FMLP_BOUND_MEMORY: return "memory-bound";
    case FMLP_BOUND_COMPUTE: return "compute-bound";
    case FMLP_BOUND_COPY: return "copy-bound";
    }
    return "?";
}

/* Calls by start, ties in call order. */
static int by_call_start(const void *ctx, uint32_t a, uint32_t b)
{
    const pe_calls *cs = ctx;
    int64_t x = pe_call_t0(cs, a), y = pe_call_t0(cs, b);
    if (x != y) return x < y ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* The steps in start order; steps starting together keep their order in
 * the trace (the sort key carries it). */
static bool collect_steps(const pe_calls *cs, pe_analysis *a)
{
    int n = 0;
    for (size_t i = 0; i < cs->n; i++) n += pe_call_event(cs, i)->kind == PE_STEP;
    a->steps = fmlp_calloc(n ? (size_t)n : 1, sizeof *a->steps);
    if (!a->steps) return false;
    if (n) {
        uint32_t *idx = fmlp_malloc((size_t)n * sizeof *idx);
        if (!idx) return false;
        for (size_t i = 0; i < cs->n; i++)
            if (pe_call_event(cs, i)->kind == PE_STEP) idx[a->n_steps++] = (uint32_t)i;
        bool ok = idx_sort(idx, (size_t)n, by_call_start, cs);
        for (int k = 0; k < n && ok; k++) {
            pe_step_stat *st = &a->steps[k];
            st->name = pe_call_event(cs, idx[k])->name;
            st->t0 = pe_call_t0(cs, idx[k]);
            st->t1 = pe_call_t1(cs, idx[k]);
        }
        free(idx);
        return ok;
    }
    pe_step_stat *st = &a->steps[a->n_steps++];
    st->name = "(window)";
    st->t0 = INT64_MAX;
    st->t1 = INT64_MIN;
    for (size_t i = 0; i < cs->n; i++) {
        if (pe_call_t0(cs, i) < st->t0) st->t0 = pe_call_t0(cs, i);
        if (pe_call_t1(cs, i) > st->t1) st->t1 = pe_call_t1(cs, i);
    }
    return true;
}

/* What a step's numbers are made of: everything that keeps the CPU or
 * device busy (work, ops and runtime calls), in start order, each marked
 * with what else it is. A step's calls are those starting inside it, so
 * they lie together in the list. */
enum {
    C_DEV = 1,  /* keeps the device busy: work, and the runtime calls that issue
                   copies (a pageable host copy holds its call for the whole transfer) */
    C_KERN = 2, /* a kernel: work other than copies and memsets */
    C_COPY = 4  /* a copy or memset that is work */
};

typedef struct {
    uint32_t *busy;
    size_t n_busy;
    uint8_t *cls; /* per call: C_* */
} step_lists;

/* issues[i]: call i is the runtime call that started a copy or memset. */
static bool copy_issuers(const pe_calls *cs, bool **issues)
{
    bool *v = fmlp_calloc(cs->n + 1, sizeof *v);
    if (!v) return false;
    for (size_t i = 0; i < cs->n; i++) {
        pe_kind k = (pe_kind)pe_call_event(cs, i)->kind;
        int32_t by = cs->c[i].launcher;
        if ((k == PE_MEMCPY || k == PE_MEMSET) && by >= 0 && pe_call_event(cs, (size_t)by)->kind == PE_RUNTIME) v[by] = true;
    }
    *issues = v;
    return true;
}

static bool make_lists(const pe_calls *cs, const bool *is_work, step_lists *l)
{
    memset(l, 0, sizeof *l);
    bool *issues_copy = NULL;
    l->busy = fmlp_malloc((cs->n + 1) * sizeof *l->busy);
    l->cls = fmlp_malloc(cs->n + 1);
    if (!l->busy || !l->cls || !copy_issuers(cs, &issues_copy)) return false;
    for (size_t i = 0; i < cs->n; i++) {
        pe_kind k = (pe_kind)pe_call_event(cs, i)->kind;
        bool copy = k == PE_MEMCPY || k == PE_MEMSET;
        l->cls[i] = (uint8_t)((is_work[i] || issues_copy[i] ? C_DEV : 0) | (is_work[i] && !copy ? C_KERN : 0) |
                              (is_work[i] && copy ? C_COPY : 0));
        if (is_work[i] || k == PE_CPU_OP || k == PE_RUNTIME) l->busy[l->n_busy++] = (uint32_t)i;
    }
    free(issues_copy);
    return idx_sort(l->busy, l->n_busy, by_call_start, cs);
}

/* First position in v (by start) whose call starts at or after t. */
static size_t lower_bound(const pe_calls *cs, const uint32_t *v, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pe_call_t0(cs, v[mid]) < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The length of a union of spans added in start order. */
typedef struct {
    int64_t total, a, b;
    bool open;
} span_union;

static void union_add(span_union *u, int64_t a, int64_t b)
{
    if (u->open && a <= u->b) {
        if (b > u->b) u->b = b;
        return;
    }
    if (u->open) u->total += u->b - u->a;
    u->a = a;
    u->b = b;
    u->open = true;
}

static int64_t union_len(const span_union *u) { return u->total + (u->open ? u->b - u->a : 0); }

/* One pass over the calls starting inside the step, each cut at its end. */
static void step_numbers(const pe_calls *cs, const step_lists *l, pe_step_stat *st)
{
    span_union kern = {0}, dev = {0}, busy = {0};
    int64_t flops = 0, bytes = 0;
    for (size_t k = lower_bound(cs, l->busy, l->n_busy, st->t0); k < l->n_busy; k++) {
        uint32_t i = l->busy[k];
        int64_t a = pe_call_t0(cs, i), b = pe_call_t1(cs, i);
        if (a >= st->t1) break;
        if (b > st->t1) b = st->t1;
        union_add(&busy, a, b);
        if (l->cls[i] & C_DEV) union_add(&dev, a, b);
        if (!(l->cls[i] & (C_KERN | C_COPY))) continue;
        pe_call_view c = pe_call_get(cs, i);
        /* A call is one activity: a CPU region's lanes are one call. */
        if (l->cls[i] & C_COPY) {
            st->copies++;
            pe_note_copy(st, c.name, (double)c.bytes);
            continue;
        }
        union_add(&kern, a, b);
        flops = pe_add_sat(flops, c.flops);
        bytes = pe_add_sat(bytes, c.bytes);
        st->kernels++;
    }
    st->flops = (double)flops;
    st->bytes = (double)bytes;
    st->wall_us = (double)(st->t1 - st->t0) / 1e3;
    st->kernel_us = (double)union_len(&kern) / 1e3;
    double dev_us = (double)union_len(&dev) / 1e3;
    double busy_us = (double)union_len(&busy) / 1e3;
    st->copy_us = dev_us - st->kernel_us;
    st->overhead_us = busy_us - dev_us;
    st->idle_us = st->wall_us - busy_us;
}

static int by_total_time(const void *x, const void *y)
{
    const pe_kernel_stat *p = x, *q = y;
    double a = p->dur_us * p->calls, b = q->dur_us * q->calls;
    if (a != b) return a > b ? -1 : 1;
    return p->first < q->first ? -1 : p->first > q->first;
}

/* What it cost to get a unit of work running: for a kernel, from its launch
 * (runtime call, or the op around a CPU region) to its start; for an op of a
 * CPU-only trace, the CPU time of the wrappers above it that hold no other
 * work (aten::linear > aten::matmul around aten::mm). */
static double dispatch_ns(const pe_calls *cs, const int *below, size_t i)
{
    const pe_call *c = &cs->c[i];
    if (cs->has_kernels) return c->launcher >= 0 ? (double)(pe_call_t0(cs, i) - pe_call_t0(cs, (size_t)c->launcher)) : 0;
    double ns = 0;
    for (int a = c->parent; a >= 0 && below[a] == 1; a = cs->c[a].parent) ns += (double)cs->c[a].self_cpu;
    return ns;
}

/* Per name, in first-seen order (names are interned: one pointer each). */
static bool kernel_stats(const pe_calls *cs, const bool *is_work, const int *below, pe_analysis *a)
{
    size_t cap = 16;
    pe_idmap by_name;
    a->kernels = fmlp_calloc(cap, sizeof *a->kernels);
    if (!a->kernels || !pe_idmap_init(&by_name, 0, 0, 0)) return false;
    bool ok = true;
    for (size_t i = 0; i < cs->n && ok; i++) {
        if (!is_work[i]) continue;
        pe_call_view c = pe_call_get(cs, i);
        int32_t j = pe_idmap_get(&by_name, (int64_t)(uintptr_t)c.name);
        if (j < 0) {
            if ((size_t)a->n_kernels == cap) {
                pe_kernel_stat *nk = fmlp_realloc(a->kernels, cap * 2 * sizeof *nk);
                if (!nk) {
                    ok = false;
                    break;
                }
                a->kernels = nk;
                cap *= 2;
            }
            j = a->n_kernels++;
            a->kernels[j] = (pe_kernel_stat){.name = c.name, .device = c.device, .first = (size_t)j};
            ok = pe_idmap_put(&by_name, (int64_t)(uintptr_t)c.name, j);
        }
        pe_kernel_stat *k = &a->kernels[j];
        k->calls++;
        k->dur_us += (double)(c.t1 - c.t0) / 1e3;
        k->dispatch_us += dispatch_ns(cs, below, i) / 1e3;
        k->flops += (double)c.flops;
        k->bytes += (double)c.bytes;
        a->device |= c.device;
    }
    pe_idmap_free(&by_name);
    if (!ok) return false;
    for (int j = 0; j < a->n_kernels; j++) {
        a->kernels[j].dur_us /= a->kernels[j].calls;
        a->kernels[j].dispatch_us /= a->kernels[j].calls;
    }
    qsort(a->kernels, (size_t)a->n_kernels, sizeof *a->kernels, by_total_time);
    return true;
}

static bool any_bf16(const pe_analysis *a)
{
    for (int j = 0; j < a->n_kernels; j++)
        if (strstr(a->kernels[j].name, "bf16") || strstr(a->kernels[j].name, "f16")) return true;
    return false;
}

static void add_step(pe_step_stat *tot, const pe_step_stat *st)
{
    tot->wall_us += st->wall_us;
    tot->kernel_us += st->kernel_us;
    tot->copy_us += st->copy_us;
    tot->overhead_us += st->overhead_us;
    tot->idle_us += st->idle_us;
    tot->kernels += st->kernels;
    tot->copies += st->copies;
    tot->flops += st->flops;
    tot->bytes += st->bytes;
    tot->copy_bytes += st->copy_bytes;
    tot->host_bytes += st->host_bytes;
    tot->pageable |= st->pageable;
    tot->pinned |= st->pinned;
}

static void average_steps(pe_step_stat *tot, int n)
{
    tot->wall_us /= n, tot->kernel_us /= n, tot->copy_us /= n, tot->overhead_us /= n, tot->idle_us /= n;
    tot->flops /= n, tot->bytes /= n, tot->copy_bytes /= n, tot->host_bytes /= n;
    tot->kernels = (tot->kernels + n / 2) / n;
    tot->copies = (tot->copies + n / 2) / n;
}

/* Steps by wall time, ties in start order. */
static int by_wall(const void *x, const void *y)
{
    const pe_step_stat *p = *(const pe_step_stat *const *)x, *q = *(const pe_step_stat *const *)y;
    if (p->wall_us != q->wall_us) return p->wall_us < q->wall_us ? -1 : 1;
    return p < q ? -1 : p > q;
}

/* The window's summary speaks for its typical step: with three steps or
 * more, the one of median wall time (a step that paid a first-call cost,
 * such as the GPU activity collector's milliseconds in the first recorded
 * step, stands apart in the per-step table instead); with fewer, their
 * average. false when out of memory. */
static bool typical_step(const pe_analysis *a, pe_step_stat *tot)
{
    if (a->n_steps < 3) {
        for (int i = 0; i < a->n_steps; i++) add_step(tot, &a->steps[i]);
        average_steps(tot, a->n_steps);
        return true;
    }
    const pe_step_stat **by = fmlp_malloc((size_t)a->n_steps * sizeof *by);
    if (!by) return false;
    for (int i = 0; i < a->n_steps; i++) by[i] = &a->steps[i];
    qsort(by, (size_t)a->n_steps, sizeof *by, by_wall);
    add_step(tot, by[(a->n_steps - 1) / 2]);
    free(by);
    return true;
}

bool pe_analyze(const pe_set *s, const pe_calls *cs, pe_analysis *a)
{
    memset(a, 0, sizeof *a);
    if (cs->n == 0) return false;
    bool *is_work = NULL;
    int *below = NULL;
    step_lists lists = {0};
    bool ok = pe_calls_work(cs, &is_work, &below) && collect_steps(cs, a) && kernel_stats(cs, is_work, below, a);
    /* Each per-call array goes once its last user is done: a 1 GB trace
     * has millions of calls, and the peak is what is held together. */
    free(below);
    ok = ok && make_lists(cs, is_work, &lists);
    free(is_work);
    pe_step_stat tot = {.name = "all"};
    bool bf16 = false;
    if (ok) {
        a->ops_as_kernels = !cs->has_kernels;
        bf16 = any_bf16(a);
        for (int i = 0; i < a->n_steps; i++) {
            pe_step_stat *st = &a->steps[i];
            step_numbers(cs, &lists, st);
            pe_verdict(s, a->device, bf16, st);
        }
        ok = typical_step(a, &tot);
    }
    if (ok) {
        pe_verdict(s, a->device, bf16, &tot);
        fmlp_profile_summary *sum = &a->sum;
        sum->steps = a->n_steps;
        sum->wall_us = tot.wall_us;
        sum->kernel_us = tot.kernel_us;
        sum->overhead_us = tot.overhead_us;
        sum->idle_us = tot.idle_us;
        sum->copy_us = tot.copy_us;
        sum->copy_bytes = tot.copy_bytes;
        sum->kernels_per_step = tot.kernels;
        sum->copies_per_step = tot.copies;
        sum->bound = tot.bound;
        snprintf(sum->reason, sizeof sum->reason, "%s", tot.reason);
    }
    free(lists.busy);
    free(lists.cls);
    if (!ok) pe_analysis_free(a);
    return ok;
}

void pe_analysis_free(pe_analysis *a)
{
    free(a->steps);
    free(a->kernels);
    memset(a, 0, sizeof *a);
}

static double pct(double part, double whole)
{
    return whole > 0 ? part * 100.0 / whole : 0;
}

static void print_steps(const pe_analysis *a, FILE *f)
{
    const char *unit = a->ops_as_kernels ? "compute ops (CPU-only trace: leaf ops stand in for kernels)" : "kernels";
    fprintf(f, "Where the time went, per step (%s):\n", unit);
    fprintf(f, "%16s  %12s  %19s  ", "Step", "Wall", "Kernels");
    if (a->device) fprintf(f, "%19s  ", "Copies");
    fprintf(f, "%19s  %19s  %7s  %s\n", "Dispatch overhead", "Idle", "Kernels", "Verdict");
    for (int i = 0; i < a->n_steps; i++) {
        const pe_step_stat *st = &a->steps[i];
        fprintf(f, "%16s  %10.1fus  %10.1fus %6.1f%%  ", st->name, st->wall_us, st->kernel_us,
                pct(st->kernel_us, st->wall_us));
        if (a->device) fprintf(f, "%10.1fus %6.1f%%  ", st->copy_us, pct(st->copy_us, st->wall_us));
        fprintf(f, "%10.1fus %6.1f%%  %10.1fus %6.1f%%  %7d  %s\n", st->overhead_us, pct(st->overhead_us, st->wall_us),
                st->idle_us, pct(st->idle_us, st->wall_us), st->kernels, pe_bound_name(st->bound));
    }
}

/* The kernel's peak and bandwidth, 0 when unknown. */
static void kernel_ceilings(const pe_set *s, const pe_kernel_stat *k, double *peak, double *bw)
{
    bool half = strstr(k->name, "bf16") || strstr(k->name, "f16");
    *peak = k->device ? s->ceil.gpu_gemm_tflops_bf16 * 1e12 : (half ? s->ceil.gemm_gflops_bf16 : s->ceil.gemm_gflops_f32) * 1e9;
    *bw = (k->device ? s->ceil.gpu_mem_gbps : s->ceil.mem_gbps) * 1e9;
}

static void print_kernels(const pe_analysis *a, const pe_set *s, FILE *f)
{
    fprintf(f, "\nPer kernel (averaged over launches):\n");
    fprintf(f, "%48s  %7s  %12s  %12s  %10s  %14s  %14s", "Name", "Calls", "Duration", "Dispatch", "Disp/Dur",
            "FLOP/s", "Bytes/s");
    if (s->ceil.have) fprintf(f, "  %7s  %7s", "% peak", "% BW");
    fputc('\n', f);
    for (int j = 0; j < a->n_kernels; j++) {
        const pe_kernel_stat *k = &a->kernels[j];
        double t_s = k->dur_us * k->calls * 1e-6;
        double flops = t_s > 0 ? k->flops / t_s : 0, bytes = t_s > 0 ? k->bytes / t_s : 0;
        char fr[32] = "--", br[32] = "--";
        if (k->flops > 0 && t_s > 0) fmlp_si_format(flops, "FLOP/s", fr, sizeof fr);
        if (k->bytes > 0 && t_s > 0) fmlp_si_format(bytes, "B/s", br, sizeof br);
        fprintf(f, "%48.48s  %7d  %10.3fus  %10.3fus  %10.2f  %14s  %14s", k->name, k->calls, k->dur_us,
                k->dispatch_us, k->dur_us > 0 ? k->dispatch_us / k->dur_us : 0, fr, br);
        if (s->ceil.have) {
            double peak, bw;
            kernel_ceilings(s, k, &peak, &bw);
            char pp[32] = "--", pb[32] = "--";
            if (k->flops > 0 && peak > 0) snprintf(pp, sizeof pp, "%.0f%%", pct(flops, peak));
            if (k->bytes > 0 && bw > 0) snprintf(pb, sizeof pb, "%.0f%%", pct(bytes, bw));
            fprintf(f, "  %7s  %7s", pp, pb);
        }
        fputc('\n', f);
    }
}

/* Which ceilings the verdicts used, and where they came from. */
static void print_ceilings(const pe_analysis *a, const pe_set *s, FILE *f)
{
    const pe_ceilings *c = &s->ceil;
    char x[32], y[32], z[32];
    bool cpu = c->have && c->gemm_gflops_f32 > 0, gpu = c->have && c->gpu_gemm_tflops_bf16 > 0;
    fputc('\n', f);
    if (cpu && (!a->device || !gpu))
        fprintf(f, "Ceilings (measured): GEMM %s f32, %s bf16; memory read %s\n",
                fmlp_si_format(c->gemm_gflops_f32 * 1e9, "FLOP/s", x, sizeof x),
                fmlp_si_format(c->gemm_gflops_bf16 * 1e9, "FLOP/s", y, sizeof y),
                fmlp_si_format(c->mem_gbps * 1e9, "B/s", z, sizeof z));
    if (gpu && a->device)
        fprintf(f, "GPU ceilings (%s): %s %s, memory %s\n",
                c->gpu_from_device ? "from device properties: SMs x clock x tensor FLOP/clock, memory clock x bus width"
                                   : "measured",
                fmlp_si_format(c->gpu_gemm_tflops_bf16 * 1e12, "FLOP/s", x, sizeof x),
                c->gpu_from_device ? "dense bf16 tensor peak" : "bf16 GEMM", fmlp_si_format(c->gpu_mem_gbps * 1e9, "B/s", y, sizeof y));
    if (!(cpu && !a->device) && !(gpu && a->device))
        fprintf(f, "Ceilings: not measured (run `fmlp info --ceilings` once to compare against this machine)\n");
}

void pe_analysis_print(const pe_analysis *a, const pe_set *s, FILE *f)
{
    print_steps(a, f);
    print_kernels(a, s, f);
    print_ceilings(a, s, f);
    char copies[64] = "";
    if (a->sum.copies_per_step > 0)
        snprintf(copies, sizeof copies, " (and %d memcpy/memset)", a->sum.copies_per_step);
    fprintf(f, "Verdict: %s, %d %s%s per step%s, %.1f us per step: %s\n", pe_bound_name(a->sum.bound),
            a->sum.kernels_per_step, a->ops_as_kernels ? "compute op" : "kernel", a->sum.kernels_per_step == 1 ? "" : "s",
            copies, a->sum.wall_us, a->sum.reason);
}

static void kv_num(FILE *f, const char *key, double v, bool comma)
{
    json_write_string(f, key);
    fputc(':', f);
    json_write_number(f, v);
    if (comma) fputc(',', f);
}

void pe_analysis_json(const pe_analysis *a, const pe_set *s, FILE *f)
{
    fputs("{\"steps\":[", f);
    for (int i = 0; i < a->n_steps; i++) {
        const pe_step_stat *st = &a->steps[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        json_write_string(f, st->name);
        fputc(',', f);
        kv_num(f, "wall_us", st->wall_us, true);
        kv_num(f, "kernel_us", st->kernel_us, true);
        kv_num(f, "overhead_us", st->overhead_us, true);
        kv_num(f, "idle_us", st->idle_us, true);
        kv_num(f, "copy_us", st->copy_us, true);
        kv_num(f, "kernels", st->kernels, true);
        kv_num(f, "copies", st->copies, true);
        kv_num(f, "flops", st->flops, true);
        kv_num(f, "bytes", st->bytes, true);
        kv_num(f, "copy_bytes", st->copy_bytes, true);
        kv_num(f, "host_copy_bytes", st->host_bytes, true);
        fputs("\"verdict\":", f);
        json_write_string(f, pe_bound_name(st->bound));
        fputs(",\"reason\":", f);
        json_write_string(f, st->reason);
        fputc('}', f);
    }
    fputs("],\"kernels\":[", f);
    for (int j = 0; j < a->n_kernels; j++) {
        const pe_kernel_stat *k = &a->kernels[j];
        fputs(j ? ",{\"name\":" : "{\"name\":", f);
        json_write_string(f, k->name);
        fputc(',', f);
        kv_num(f, "calls", k->calls, true);
        kv_num(f, "avg_us", k->dur_us, true);
        kv_num(f, "avg_dispatch_us", k->dispatch_us, true);
        kv_num(f, "flops", k->flops, true);
        kv_num(f, "bytes", k->bytes, false);
        fputc('}', f);
    }
    fputs("],\"ceilings\":", f);
    if (s->ceil.have) {
        fputc('{', f);
        kv_num(f, "gemm_gflops_f32", s->ceil.gemm_gflops_f32, true);
        kv_num(f, "gemm_gflops_bf16", s->ceil.gemm_gflops_bf16, true);
        kv_num(f, "mem_gbps", s->ceil.mem_gbps, true);
        kv_num(f, "gpu_gemm_tflops_bf16", s->ceil.gpu_gemm_tflops_bf16, true);
        kv_num(f, "gpu_mem_gbps", s->ceil.gpu_mem_gbps, true);
        kv_num(f, "gpu_launch_us", s->ceil.gpu_launch_us, true);
        fputs("\"cpu_source\":", f);
        json_write_string(f, s->ceil.gemm_gflops_f32 > 0 ? "measured" : "none");
        fputs(",\"gpu_source\":", f);
        json_write_string(f, s->ceil.gpu_gemm_tflops_bf16 <= 0 ? "none"
                             : s->ceil.gpu_from_device     ? "from device properties"
                                                           : "measured");
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    fputc(',', f);
    kv_num(f, "kernels_per_step", a->sum.kernels_per_step, true);
    kv_num(f, "copies_per_step", a->sum.copies_per_step, true);
    kv_num(f, "wall_us", a->sum.wall_us, true);
    kv_num(f, "kernel_us", a->sum.kernel_us, true);
    kv_num(f, "overhead_us", a->sum.overhead_us, true);
    kv_num(f, "idle_us", a->sum.idle_us, true);
    kv_num(f, "copy_us", a->sum.copy_us, true);
    kv_num(f, "copy_bytes", a->sum.copy_bytes, true);
    fputs("\"verdict\":", f);
    json_write_string(f, pe_bound_name(a->sum.bound));
    fputs(",\"reason\":", f);
    json_write_string(f, a->sum.reason);
    fputc('}', f);
}
