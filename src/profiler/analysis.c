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
#include "core/json.h"

typedef struct {
    int64_t a, b;
} span;

static int by_start(const void *x, const void *y)
{
    const span *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a;
}

/* Length of the union of spans (sorts them). */
static int64_t union_len(span *v, size_t n)
{
    qsort(v, n, sizeof *v, by_start);
    int64_t total = 0, cur_a = 0, cur_b = 0;
    bool open = false;
    for (size_t i = 0; i < n; i++) {
        if (open && v[i].a <= cur_b) {
            if (v[i].b > cur_b) cur_b = v[i].b;
            continue;
        }
        if (open) total += cur_b - cur_a;
        cur_a = v[i].a;
        cur_b = v[i].b;
        open = true;
    }
    if (open) total += cur_b - cur_a;
    return total;
}

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

static int by_step_start(const void *x, const void *y)
{
    const pe_step_stat *p = x, *q = y;
    return p->t0 < q->t0 ? -1 : p->t0 > q->t0;
}

static bool collect_steps(const pe_calls *cs, pe_analysis *a)
{
    int n = 0;
    for (size_t i = 0; i < cs->n; i++) n += cs->c[i].kind == PE_STEP;
    a->steps = fmlp_calloc(n ? n : 1, sizeof *a->steps);
    if (!a->steps) return false;
    if (n) {
        for (size_t i = 0; i < cs->n; i++) {
            if (cs->c[i].kind != PE_STEP) continue;
            pe_step_stat *st = &a->steps[a->n_steps++];
            st->name = cs->c[i].name;
            st->t0 = cs->c[i].t0;
            st->t1 = cs->c[i].t1;
        }
        qsort(a->steps, a->n_steps, sizeof *a->steps, by_step_start);
        return true;
    }
    pe_step_stat *st = &a->steps[a->n_steps++];
    st->name = "(window)";
    st->t0 = INT64_MAX;
    st->t1 = INT64_MIN;
    for (size_t i = 0; i < cs->n; i++) {
        if (cs->c[i].t0 < st->t0) st->t0 = cs->c[i].t0;
        if (cs->c[i].t1 > st->t1) st->t1 = cs->c[i].t1;
    }
    return true;
}

static bool in_step(const pe_call *c, const pe_step_stat *st)
{
    return c->t0 >= st->t0 && c->t0 < st->t1;
}

static int64_t clip_len(span *v, size_t n, const pe_step_stat *st)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i].a < st->t0) v[i].a = st->t0;
        if (v[i].b > st->t1) v[i].b = st->t1;
        if (v[i].b < v[i].a) v[i].b = v[i].a;
    }
    return union_len(v, n);
}

/* The step's spans by what they are: kernels; the device's busy time
 * (kernels, copies and memsets, and the runtime calls that issue copies:
 * a pageable host copy holds its call for the whole transfer); everything
 * busy (plus ops and other runtime calls). */
typedef struct {
    span *kern, *dev, *all;
} step_spans;

static void step_numbers(const pe_calls *cs, const bool *is_work, const bool *issues_copy, pe_step_stat *st,
                         step_spans *sp)
{
    size_t nk = 0, nd = 0, na = 0;
    for (size_t i = 0; i < cs->n; i++) {
        const pe_call *c = &cs->c[i];
        if (!in_step(c, st)) continue;
        const span v = {c->t0, c->t1};
        if (is_work[i]) {
            sp->dev[nd++] = sp->all[na++] = v;
            /* A call is one activity: a CPU region's lanes are one call. */
            if (c->kind == PE_MEMCPY || c->kind == PE_MEMSET) {
                st->copies++;
                pe_note_copy(st, c->name, (double)c->bytes);
                continue;
            }
            sp->kern[nk++] = v;
            st->flops += (double)c->flops;
            st->bytes += (double)c->bytes;
            st->kernels++;
        } else if (c->kind == PE_CPU_OP || c->kind == PE_RUNTIME) {
            sp->all[na++] = v;
            if (issues_copy[i]) sp->dev[nd++] = v;
        }
    }
    st->wall_us = (double)(st->t1 - st->t0) / 1e3;
    st->kernel_us = (double)clip_len(sp->kern, nk, st) / 1e3;
    double dev_us = (double)clip_len(sp->dev, nd, st) / 1e3;
    double busy_us = (double)clip_len(sp->all, na, st) / 1e3;
    st->copy_us = dev_us - st->kernel_us;
    st->overhead_us = busy_us - dev_us;
    st->idle_us = st->wall_us - busy_us;
}

/* issues[i]: call i is the runtime call that started a copy or memset. */
static bool copy_issuers(const pe_calls *cs, bool **issues)
{
    bool *v = fmlp_calloc(cs->n + 1, sizeof *v);
    if (!v) return false;
    for (size_t i = 0; i < cs->n; i++) {
        const pe_call *c = &cs->c[i];
        if ((c->kind == PE_MEMCPY || c->kind == PE_MEMSET) && c->launcher >= 0 && cs->c[c->launcher].kind == PE_RUNTIME)
            v[c->launcher] = true;
    }
    *issues = v;
    return true;
}

static int by_total_time(const void *x, const void *y)
{
    const pe_kernel_stat *p = x, *q = y;
    double a = p->dur_us * p->calls, b = q->dur_us * q->calls;
    return a > b ? -1 : a < b;
}

/* What it cost to get a unit of work running: for a kernel, from its launch
 * (runtime call, or the op around a CPU region) to its start; for an op of a
 * CPU-only trace, the CPU time of the wrappers above it that hold no other
 * work (aten::linear > aten::matmul around aten::mm). */
static double dispatch_ns(const pe_calls *cs, const int *below, size_t i)
{
    const pe_call *c = &cs->c[i];
    if (cs->has_kernels) return c->launcher >= 0 ? (double)(c->t0 - cs->c[c->launcher].t0) : 0;
    double ns = 0;
    for (int a = c->parent; a >= 0 && below[a] == 1; a = cs->c[a].parent) ns += (double)cs->c[a].self_cpu;
    return ns;
}

static bool kernel_stats(const pe_calls *cs, const bool *is_work, const int *below, pe_analysis *a)
{
    a->kernels = fmlp_calloc(cs->n + 1, sizeof *a->kernels);
    if (!a->kernels) return false;
    for (size_t i = 0; i < cs->n; i++) {
        if (!is_work[i]) continue;
        const pe_call *c = &cs->c[i];
        int j = 0;
        while (j < a->n_kernels && strcmp(a->kernels[j].name, c->name) != 0) j++;
        pe_kernel_stat *k = &a->kernels[j];
        if (j == a->n_kernels) {
            a->n_kernels++;
            k->name = c->name;
            k->device = c->device;
        }
        k->calls++;
        k->dur_us += (double)(c->t1 - c->t0) / 1e3;
        k->dispatch_us += dispatch_ns(cs, below, i) / 1e3;
        k->flops += (double)c->flops;
        k->bytes += (double)c->bytes;
        a->device |= c->device;
    }
    for (int j = 0; j < a->n_kernels; j++) {
        a->kernels[j].dur_us /= a->kernels[j].calls;
        a->kernels[j].dispatch_us /= a->kernels[j].calls;
    }
    qsort(a->kernels, a->n_kernels, sizeof *a->kernels, by_total_time);
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

bool pe_analyze(const pe_set *s, const pe_calls *cs, pe_analysis *a)
{
    memset(a, 0, sizeof *a);
    if (cs->n == 0) return false;
    bool *is_work = NULL, *issues_copy = NULL;
    int *below = NULL;
    step_spans sp = {fmlp_malloc(cs->n * sizeof *sp.kern), fmlp_malloc(cs->n * sizeof *sp.dev), fmlp_malloc(cs->n * sizeof *sp.all)};
    bool ok = pe_calls_work(cs, &is_work, &below) && copy_issuers(cs, &issues_copy) && sp.kern && sp.dev && sp.all &&
              collect_steps(cs, a) && kernel_stats(cs, is_work, below, a);
    if (ok) {
        a->ops_as_kernels = !cs->has_kernels;
        bool bf16 = any_bf16(a);
        pe_step_stat tot = {.name = "all"};
        for (int i = 0; i < a->n_steps; i++) {
            pe_step_stat *st = &a->steps[i];
            step_numbers(cs, is_work, issues_copy, st, &sp);
            pe_verdict(s, a->device, bf16, st);
            add_step(&tot, st);
        }
        average_steps(&tot, a->n_steps);
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
    free(is_work);
    free(issues_copy);
    free(below);
    free(sp.kern);
    free(sp.dev);
    free(sp.all);
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
        fprintf(f, "Ceilings (measured): GEMM %s f32, %s bf16; memory %s\n",
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
