/* Why: see analysis.h. One definition covers CPU and GPU runs and read
 * traces alike: "kernel" time is the union of work on any lane; "dispatch
 * overhead" is time spent inside ops while no kernel runs (for a GPU, the
 * device waiting on launches); "idle" is the rest of the step's wall time. */
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
    }
    return "?";
}

/* Without measured ceilings, the FLOP/byte at which a CPU GEMM turns from
 * memory- to compute-bound is assumed to be about this. */
#define RIDGE_GUESS 10.0

static void verdict(const pe_set *s, bool device, bool bf16, pe_step_stat *st)
{
    double busy = st->wall_us > 0 ? st->kernel_us / st->wall_us : 0;
    if (st->kernels + st->copies == 0 || busy < 0.5) {
        st->bound = FMLP_BOUND_OVERHEAD;
        snprintf(st->reason, sizeof st->reason,
                 "kernels busy %.0f%% of %.1f us; %.1f us dispatch overhead (%.1f us per kernel over %d) and %.1f "
                 "us idle",
                 busy * 100, st->wall_us, st->overhead_us, st->kernels ? st->overhead_us / st->kernels : 0,
                 st->kernels, st->idle_us);
        return;
    }
    if (st->flops <= 0 && st->bytes <= 0) {
        st->bound = FMLP_BOUND_COMPUTE;
        snprintf(st->reason, sizeof st->reason,
                 "kernels busy %.0f%% of %.1f us, so the work itself is the cost; the trace has no FLOP or byte "
                 "counts (profile with record_shapes or with_flops) to tell compute from memory",
                 busy * 100, st->wall_us);
        return;
    }
    double kern_ns = st->kernel_us * 1e3;
    double gflops = st->flops / kern_ns, gbps = st->bytes / kern_ns;
    double peak = device ? s->ceil.gpu_gemm_tflops_bf16 * 1e3 : bf16 ? s->ceil.gemm_gflops_bf16 : s->ceil.gemm_gflops_f32;
    double bw = device ? s->ceil.gpu_mem_gbps : s->ceil.mem_gbps;
    if (s->ceil.have && peak > 0 && bw > 0) {
        double fc = gflops / peak, fm = gbps / bw;
        st->bound = fm > fc ? FMLP_BOUND_MEMORY : FMLP_BOUND_COMPUTE;
        snprintf(st->reason, sizeof st->reason,
                 "kernels busy %.0f%%; %.1f GFLOP/s = %.0f%% of the %.0f GFLOP/s %s GEMM peak, %.1f GB/s = %.0f%% of "
                 "%.0f GB/s memory bandwidth",
                 busy * 100, gflops, fc * 100, peak, bf16 ? "bf16" : "f32", gbps, fm * 100, bw);
        return;
    }
    double ai = st->bytes > 0 ? st->flops / st->bytes : 0;
    st->bound = ai >= RIDGE_GUESS ? FMLP_BOUND_COMPUTE : FMLP_BOUND_MEMORY;
    snprintf(st->reason, sizeof st->reason,
             "kernels busy %.0f%%; %.1f GFLOP/s, %.1f GB/s, %.1f FLOP/byte against an assumed ridge of %.0f "
             "(ceilings not measured: run `fmlp info --ceilings`)",
             busy * 100, gflops, gbps, ai, RIDGE_GUESS);
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

/* What a step's numbers are made of, each list in start order: the work
 * units, and everything that keeps the CPU or device busy (work, ops and
 * runtime calls). A step's calls are those starting inside it, so they lie
 * together in both lists. */
typedef struct {
    uint32_t *work, *busy;
    size_t n_work, n_busy;
} step_lists;

static bool make_lists(const pe_calls *cs, const bool *is_work, step_lists *l)
{
    memset(l, 0, sizeof *l);
    l->work = fmlp_malloc((cs->n + 1) * sizeof *l->work);
    l->busy = fmlp_malloc((cs->n + 1) * sizeof *l->busy);
    if (!l->work || !l->busy) return false;
    for (size_t i = 0; i < cs->n; i++) {
        pe_kind k = (pe_kind)pe_call_event(cs, i)->kind;
        if (is_work[i]) l->work[l->n_work++] = (uint32_t)i;
        if (is_work[i] || k == PE_CPU_OP || k == PE_RUNTIME) l->busy[l->n_busy++] = (uint32_t)i;
    }
    return idx_sort(l->work, l->n_work, by_call_start, cs) && idx_sort(l->busy, l->n_busy, by_call_start, cs);
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

/* Length of the union of the spans of the calls v[from..) that start
 * inside the step, each cut at its end; *end gets where they stop. */
static int64_t union_in_step(const pe_calls *cs, const uint32_t *v, size_t n, size_t from, const pe_step_stat *st,
                             size_t *end)
{
    int64_t total = 0, cur_a = 0, cur_b = 0;
    bool open = false;
    size_t i = from;
    for (; i < n && pe_call_t0(cs, v[i]) < st->t1; i++) {
        int64_t a = pe_call_t0(cs, v[i]), b = pe_call_t1(cs, v[i]);
        if (b > st->t1) b = st->t1;
        if (open && a <= cur_b) {
            if (b > cur_b) cur_b = b;
            continue;
        }
        if (open) total += cur_b - cur_a;
        cur_a = a;
        cur_b = b;
        open = true;
    }
    if (open) total += cur_b - cur_a;
    *end = i;
    return total;
}

static void step_numbers(const pe_calls *cs, const step_lists *l, pe_step_stat *st)
{
    size_t w0 = lower_bound(cs, l->work, l->n_work, st->t0), w1;
    size_t b0 = lower_bound(cs, l->busy, l->n_busy, st->t0), b1;
    int64_t kernel_ns = union_in_step(cs, l->work, l->n_work, w0, st, &w1);
    int64_t busy_ns = union_in_step(cs, l->busy, l->n_busy, b0, st, &b1);
    int64_t flops = 0, bytes = 0;
    for (size_t k = w0; k < w1; k++) {
        pe_call_view c = pe_call_get(cs, l->work[k]);
        flops = pe_add_sat(flops, c.flops);
        bytes = pe_add_sat(bytes, c.bytes);
        /* A call is one launch: a CPU region's lanes are one call. */
        if (c.kind == PE_MEMCPY || c.kind == PE_MEMSET)
            st->copies++;
        else
            st->kernels++;
    }
    st->flops = (double)flops;
    st->bytes = (double)bytes;
    st->wall_us = (double)(st->t1 - st->t0) / 1e3;
    st->kernel_us = (double)kernel_ns / 1e3;
    double busy_us = (double)busy_ns / 1e3;
    st->overhead_us = busy_us - st->kernel_us;
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

bool pe_analyze(const pe_set *s, const pe_calls *cs, pe_analysis *a)
{
    memset(a, 0, sizeof *a);
    if (cs->n == 0) return false;
    bool *is_work = NULL;
    int *below = NULL;
    step_lists lists = {0};
    bool ok = pe_calls_work(cs, &is_work, &below) && collect_steps(cs, a) && kernel_stats(cs, is_work, below, a) &&
              make_lists(cs, is_work, &lists);
    if (ok) {
        a->ops_as_kernels = !cs->has_kernels;
        bool bf16 = any_bf16(a);
        pe_step_stat tot = {.name = "all"};
        for (int i = 0; i < a->n_steps; i++) {
            pe_step_stat *st = &a->steps[i];
            step_numbers(cs, &lists, st);
            verdict(s, a->device, bf16, st);
            tot.wall_us += st->wall_us;
            tot.kernel_us += st->kernel_us;
            tot.overhead_us += st->overhead_us;
            tot.idle_us += st->idle_us;
            tot.kernels += st->kernels;
            tot.copies += st->copies;
            tot.flops += st->flops;
            tot.bytes += st->bytes;
        }
        int n = a->n_steps;
        tot.wall_us /= n, tot.kernel_us /= n, tot.overhead_us /= n, tot.idle_us /= n;
        tot.flops /= n, tot.bytes /= n;
        tot.kernels = (tot.kernels + n / 2) / n;
        tot.copies = (tot.copies + n / 2) / n;
        verdict(s, a->device, bf16, &tot);
        fmlp_profile_summary *sum = &a->sum;
        sum->steps = n;
        sum->wall_us = tot.wall_us;
        sum->kernel_us = tot.kernel_us;
        sum->overhead_us = tot.overhead_us;
        sum->idle_us = tot.idle_us;
        sum->kernels_per_step = tot.kernels;
        sum->copies_per_step = tot.copies;
        sum->bound = tot.bound;
        snprintf(sum->reason, sizeof sum->reason, "%s", tot.reason);
    }
    free(is_work);
    free(below);
    free(lists.work);
    free(lists.busy);
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

void pe_analysis_print(const pe_analysis *a, const pe_set *s, FILE *f)
{
    const char *unit = a->ops_as_kernels ? "compute ops (CPU-only trace: leaf ops stand in for kernels)" : "kernels";
    fprintf(f, "Where the time went, per step (%s):\n", unit);
    fprintf(f, "%16s  %12s  %19s  %19s  %19s  %7s  %s\n", "Step", "Wall", "Kernels", "Dispatch overhead", "Idle",
            "Kernels", "Verdict");
    for (int i = 0; i < a->n_steps; i++) {
        const pe_step_stat *st = &a->steps[i];
        fprintf(f, "%16s  %10.1fus  %10.1fus %6.1f%%  %10.1fus %6.1f%%  %10.1fus %6.1f%%  %7d  %s\n", st->name,
                st->wall_us, st->kernel_us, pct(st->kernel_us, st->wall_us), st->overhead_us,
                pct(st->overhead_us, st->wall_us), st->idle_us, pct(st->idle_us, st->wall_us), st->kernels,
                pe_bound_name(st->bound));
    }
    fprintf(f, "\nPer kernel (averaged over launches):\n");
    fprintf(f, "%48s  %7s  %12s  %12s  %10s  %10s  %10s", "Name", "Calls", "Duration", "Dispatch", "Disp/Dur",
            "GFLOP/s", "GB/s");
    if (s->ceil.have) fprintf(f, "  %7s  %7s", "% peak", "% BW");
    fputc('\n', f);
    for (int j = 0; j < a->n_kernels; j++) {
        const pe_kernel_stat *k = &a->kernels[j];
        double t_ns = k->dur_us * k->calls * 1e3;
        double gflops = t_ns > 0 ? k->flops / t_ns : 0, gbps = t_ns > 0 ? k->bytes / t_ns : 0;
        char gf[32] = "--", gb[32] = "--";
        if (k->flops > 0 && t_ns > 0) snprintf(gf, sizeof gf, "%.1f", gflops);
        if (k->bytes > 0 && t_ns > 0) snprintf(gb, sizeof gb, "%.1f", gbps);
        fprintf(f, "%48.48s  %7d  %10.3fus  %10.3fus  %10.2f  %10s  %10s", k->name, k->calls, k->dur_us,
                k->dispatch_us, k->dur_us > 0 ? k->dispatch_us / k->dur_us : 0, gf, gb);
        if (s->ceil.have) {
            bool half = strstr(k->name, "bf16") || strstr(k->name, "f16");
            double peak = k->device ? s->ceil.gpu_gemm_tflops_bf16 * 1e3
                                    : half ? s->ceil.gemm_gflops_bf16 : s->ceil.gemm_gflops_f32;
            double bw = k->device ? s->ceil.gpu_mem_gbps : s->ceil.mem_gbps;
            char pp[32] = "--", pb[32] = "--";
            if (k->flops > 0 && peak > 0) snprintf(pp, sizeof pp, "%.0f%%", pct(gflops, peak));
            if (k->bytes > 0 && bw > 0) snprintf(pb, sizeof pb, "%.0f%%", pct(gbps, bw));
            fprintf(f, "  %7s  %7s", pp, pb);
        }
        fputc('\n', f);
    }
    if (s->ceil.have)
        fprintf(f, "\nCeilings (measured): GEMM %.0f GFLOP/s f32, %.0f GFLOP/s bf16; memory %.1f GB/s\n",
                s->ceil.gemm_gflops_f32, s->ceil.gemm_gflops_bf16, s->ceil.mem_gbps);
    else
        fprintf(f, "\nCeilings: not measured (run `fmlp info --ceilings` once to compare against this machine)\n");
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
        kv_num(f, "kernels", st->kernels, true);
        kv_num(f, "copies", st->copies, true);
        kv_num(f, "flops", st->flops, true);
        kv_num(f, "bytes", st->bytes, true);
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
        kv_num(f, "gpu_launch_us", s->ceil.gpu_launch_us, false);
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
    fputs("\"verdict\":", f);
    json_write_string(f, pe_bound_name(a->sum.bound));
    fputs(",\"reason\":", f);
    json_write_string(f, a->sum.reason);
    fputc('}', f);
}
