/* Why: a verdict is only useful if it is the one a careful engineer would
 * give. Synthetic GPU steps with hand-computed answers pin that down: a step
 * whose time goes to pageable host<->device copies is copy-bound and names
 * bytes, rate and fix (not "compute-bound, kernels busy 85%" as when copies
 * counted as kernels); a step of short kernels behind their launches is
 * overhead-bound; a busy GEMM is compute-bound against the device's
 * datasheet peak, and a pointwise pass memory-bound, each saying where its
 * ceilings came from, in the analyses and through a written and re-read
 * trace. Also: the peaks from device properties, and a trace in the old
 * shared-correlation scheme joined sensibly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/ceilings.h"
#include "profiler/analysis.h"
#include "profiler/prof.h"
#include "profiler/trace_read.h"
#include "profiler/tree.h"
#include "test_util.h"

#define US 1000 /* ns */
enum { CPU_PID = 100, TID = 1, STREAM = 7 };

static pe_event *span(pe_set *s, pe_kind k, const char *name, double t0_us, double t1_us, int64_t ext, int64_t corr)
{
    bool dev = k == PE_KERNEL || k == PE_MEMCPY || k == PE_MEMSET;
    pe_event *e = pe_add(s, k, name, dev ? 0 : CPU_PID, dev ? STREAM : TID);
    e->device = dev ? 0 : -1;
    e->t0 = (int64_t)(t0_us * US);
    e->t1 = (int64_t)(t1_us * US);
    e->ext_id = ext;
    e->corr = corr;
    return e;
}

/* e with these FLOPs and bytes. */
static pe_event *with_work(pe_set *s, pe_event *e, int64_t flops, int64_t bytes)
{
    pe_more m = *pe_more_of(s, e);
    m.flops = flops;
    m.bytes = bytes;
    return pe_set_more(s, e, &m) ? e : NULL;
}

static void new_set(pe_set *s)
{
    pe_set_init(s);
    s->pid = CPU_PID;
    s->main_tid = TID;
    s->base_ns = 1700000000000000000LL;
    s->origin = pe_intern(s, "fmlp");
}

/* A launch at t (8 us call) and its kernel `dur` us long starting `delay`
 * us after the call ends; corr is the call's own, ext its op's. */
static pe_event *launch(pe_set *s, double t, double delay, double dur, int64_t ext, int64_t corr, const char *name)
{
    span(s, PE_RUNTIME, "cudaLaunchKernel", t, t + 8, ext, corr);
    return span(s, PE_KERNEL, name, t + 8 + delay, t + 8 + delay + dur, ext, corr);
}

/* Whether the table with analyses holds `want`. */
static bool table_has(const pe_set *s, const char *want)
{
    fmlp_table_options o = fmlp_table_options_default();
    o.analyses = true;
    fmlp_status st;
    char *t = prof_table(s, &o, true, &st);
    bool has = t && strstr(t, want);
    free(t);
    return has;
}

static bool analyse(const pe_set *s, pe_analysis *a)
{
    pe_calls cs;
    bool ok = pe_calls_build(s, &cs) && pe_analyze(s, &cs, a);
    pe_calls_free(&cs);
    return ok;
}

/* The step: 12.58 MB in and out through pageable memory around
 * ~200 us of kernels, in a 2 ms step. */
static void test_copy_bound(void)
{
    pe_set s;
    new_set(&s);
    const double MB = 12582912; /* 8192 x 768 bf16 */
    span(&s, PE_STEP, "ProfilerStep#2", 0, 2000, 1, 0);
    span(&s, PE_CPU_OP, "fmlp::mlp", 5, 1995, 2, 0);
    span(&s, PE_CPU_OP, "fmlp::copy_", 10, 860, 3, 0);
    span(&s, PE_RUNTIME, "cudaMemcpyAsync", 12, 858, 3, 11);
    with_work(&s, span(&s, PE_MEMCPY, "Memcpy HtoD (Pageable -> Device)", 20, 850, 3, 11), 0, (int64_t)MB);
    span(&s, PE_CPU_OP, "fmlp::linear_glu", 870, 900, 4, 0);
    launch(&s, 875, 2, 150, 4, 12, "fmlp_gemm_glu_bf16_wgmma_128x128");
    span(&s, PE_CPU_OP, "fmlp::linear", 900, 930, 5, 0);
    launch(&s, 905, 122, 52, 5, 13, "nvjet_sm90_tst_128x128");
    span(&s, PE_CPU_OP, "fmlp::copy_", 1090, 1990, 6, 0);
    span(&s, PE_RUNTIME, "cudaMemcpyAsync", 1092, 1988, 6, 14);
    with_work(&s, span(&s, PE_MEMCPY, "Memcpy DtoH (Device -> Pageable)", 1100, 1980, 6, 14), 0, (int64_t)MB);
    pe_analysis a;
    if (!tu_check(analyse(&s, &a), "copy-bound step: analysis runs")) return;
    const pe_step_stat *st = &a.steps[0];
    /* kernels 150 + 52 us; copy calls and copies cover [12, 858] and
     * [1092, 1988]: 846 + 896 us. */
    tu_check(fabs(st->kernel_us - 202) < 1e-6 && fabs(st->copy_us - 1742) < 1e-6,
             "copy time apart from kernel time: kernels %.1f us (want 202), copies %.1f us (want 1742)", st->kernel_us,
             st->copy_us);
    tu_check(fabs(st->kernel_us + st->copy_us + st->overhead_us + st->idle_us - st->wall_us) < 1e-6,
             "wall = kernels + copies + overhead + idle");
    tu_check(st->kernels == 2 && st->copies == 2 && fabs(st->copy_bytes - 2 * MB) < 1 && fabs(st->host_bytes - 2 * MB) < 1,
             "2 kernels, 2 copies of 12.58 MB each, all to or from the host (got %d, %d, %.0f)", st->kernels, st->copies,
             st->host_bytes);
    tu_check(a.sum.bound == FMLP_BOUND_COPY && strstr(a.sum.reason, "1.74 ms of 2.00 ms moving 25.17 MB between host and device") &&
                 strstr(a.sum.reason, "pageable") && strstr(a.sum.reason, "fmlp_tensor_alloc_host"),
             "copy-bound, with time, bytes, memory kind and fix: %s", a.sum.reason);
    tu_check(fabs(a.sum.copy_us - 1742) < 1e-6 && fabs(a.sum.copy_bytes - 2 * MB) < 1, "summary: copy time and bytes per step");
    tu_check(table_has(&s, "Verdict: copy-bound, 2 kernels per step (and 2 memcpy/memset)") && table_has(&s, "Copies"),
             "analyses print the copy column and the copy-bound verdict");
    pe_analysis_free(&a);
    pe_set_free(&s);
}

/* Five 3 us kernels, each 2 us behind its 8 us launch: the device waits. */
static void test_launch_bound(void)
{
    pe_set s;
    new_set(&s);
    span(&s, PE_STEP, "ProfilerStep#2", 0, 60, 1, 0);
    span(&s, PE_CPU_OP, "fmlp::mlp", 1, 59, 2, 0);
    for (int i = 0; i < 5; i++) {
        span(&s, PE_CPU_OP, "fmlp::linear", 2 + 11 * i, 12 + 11 * i, 3 + i, 0);
        launch(&s, 2 + 11 * i, 2, 3, 3 + i, 20 + i, "fmlp_gemv16_bf16");
    }
    pe_analysis a;
    if (!tu_check(analyse(&s, &a), "launch-bound step: analysis runs")) return;
    tu_check(a.steps[0].kernels == 5 && fabs(a.steps[0].kernel_us - 15) < 1e-6, "5 kernels, 15 us of kernel time");
    tu_check(a.sum.bound == FMLP_BOUND_OVERHEAD && strstr(a.sum.reason, "kernels busy 25% of 60.0 us") &&
                 strstr(a.sum.reason, "dispatch overhead") && strstr(a.sum.reason, "CUDA graph"),
             "overhead-bound, with the numbers and the fix: %s", a.sum.reason);
    pe_analysis_free(&a);
    pe_set_free(&s);
}

/* One busy GEMM (or pointwise pass) against the device's datasheet peaks. */
static void test_busy(bool gemm)
{
    pe_set s;
    new_set(&s);
    s.ceil = (pe_ceilings){true, 0, 0, 0, 1070, 4917, 0, true};
    span(&s, PE_STEP, "ProfilerStep#2", 0, 300, 1, 0);
    span(&s, PE_CPU_OP, "fmlp::linear", 1, 295, 2, 0);
    pe_event *k = launch(&s, 2, 5, 280, 2, 30, gemm ? "nvjet_sm90_bf16" : "fmlp_gelu_tanh_bf16_vec");
    with_work(&s, k, gemm ? (int64_t)2e11 : (int64_t)1e8, /* 714 TFLOP/s, or 0.36 */
              gemm ? (int64_t)3e7 : (int64_t)1.2e9);      /* 107 GB/s, or 4.29 TB/s */
    pe_analysis a;
    if (!tu_check(analyse(&s, &a), "busy step: analysis runs")) return;
    fmlp_bound want = gemm ? FMLP_BOUND_COMPUTE : FMLP_BOUND_MEMORY;
    tu_check(a.sum.bound == want && strstr(a.sum.reason, "(device properties)") &&
                 strstr(a.sum.reason, gemm ? "714.3 TFLOP/s = 67% of the 1.070 PFLOP/s" : "4.286 TB/s = 87% of 4.917 TB/s"),
             "%s against the datasheet peaks, saying so: %s", gemm ? "GEMM compute-bound" : "pointwise memory-bound",
             a.sum.reason);
    tu_check(table_has(&s, "GPU ceilings (from device properties"), "the analyses name the ceilings' source");
    /* The trace carries the ceilings and their source: re-read, same verdict. */
    size_t len = 0;
    char *json = prof_trace_json(&s, NULL, &len);
    pe_set r;
    bool read = json && pe_parse_trace(json, len, "verdict trace", &r) == FMLP_OK;
    pe_analysis b;
    tu_check(read && r.ceil.have && r.ceil.gpu_from_device && strstr(json, "\"gpu_source\":\"from device properties\"") &&
                 analyse(&r, &b) && b.sum.bound == want && strcmp(b.sum.reason, a.sum.reason) == 0,
             "written and re-read: ceilings from device properties, same verdict and reason");
    if (read) {
        pe_analysis_free(&b);
        pe_set_free(&r);
    }
    free(json);
    pe_analysis_free(&a);
    pe_set_free(&s);
}

/* A trace fmlp wrote before correlations were CUPTI's: cuBLASLt's memset
 * and GEMM and both their calls carried the op's correlation 6. */
static void test_old_scheme(void)
{
    pe_set s;
    new_set(&s);
    span(&s, PE_STEP, "ProfilerStep#2", 0, 100, 1, 0);
    span(&s, PE_CPU_OP, "fmlp::linear", 1, 40, 2, 0);
    span(&s, PE_RUNTIME, "cudaMemsetAsync", 2, 6, 2, 6);
    span(&s, PE_RUNTIME, "cuLaunchKernelEx", 8, 14, 2, 6);
    with_work(&s, span(&s, PE_MEMSET, "Memset (Device)", 10, 11, 2, 6), 0, 4);
    span(&s, PE_KERNEL, "nvjet_sm90_tst_128x128", 16, 90, 2, 6);
    pe_calls cs;
    pe_analysis a;
    bool ok = pe_calls_build(&s, &cs) && pe_analyze(&s, &cs, &a);
    if (!tu_check(ok, "old-scheme trace: analysis runs")) return;
    const char *kl = NULL, *ml = NULL;
    for (size_t i = 0; i < cs.n; i++) {
        pe_call_view c = pe_call_get(&cs, i);
        int32_t by = cs.c[i].launcher;
        if (c.device && by >= 0) *(c.kind == PE_KERNEL ? &kl : &ml) = pe_call_event(&cs, (size_t)by)->name;
    }
    tu_check(kl && strcmp(kl, "cuLaunchKernelEx") == 0 && ml && strcmp(ml, "cudaMemsetAsync") == 0,
             "each activity joins its own kind of call: GEMM <- %s, memset <- %s", kl ? kl : "none", ml ? ml : "none");
    tu_check(a.steps[0].kernels == 1 && a.steps[0].copies == 1, "1 kernel and 1 memset per step (got %d, %d)",
             a.steps[0].kernels, a.steps[0].copies);
    pe_analysis_free(&a);
    pe_calls_free(&cs);
    pe_set_free(&s);
}

static void test_device_peaks(void)
{
    fmlp_device_props h200 = {.compute_major = 9, .num_sms = 132, .clock_khz = 1980000, .mem_clock_khz = 3201000,
                              .mem_bus_bits = 6144};
    double tf = 0, bw = 0;
    bool ok = fmlp_ceilings_from_props(&h200, &tf, &bw);
    tu_check(ok && fabs(tf - 132 * 1.98e9 * 4096 * 1e-12) < 1e-9 && fabs(bw - 2 * 3.201e9 * 768 * 1e-9) < 1e-9,
             "H200 (sm_90, 132 SMs at 1980 MHz, 6144-bit at 3201 MHz): %.1f TFLOP/s, %.1f GB/s", tf, bw);
    fmlp_device_props a100 = {.compute_major = 8, .num_sms = 108, .clock_khz = 1410000, .mem_clock_khz = 1593000,
                              .mem_bus_bits = 5120};
    ok = fmlp_ceilings_from_props(&a100, &tf, &bw);
    tu_check(ok && fabs(tf - 311.86944) < 1e-6 && fabs(bw - 2039.04) < 1e-6,
             "A100 (sm_80): the whitepaper's 312 TFLOP/s dense bf16 and 2039 GB/s (got %.2f, %.2f)", tf, bw);
    tu_check(fmlp_tensor_flop_per_clock(8, 6) == 1024 && fmlp_tensor_flop_per_clock(8, 9) == 1024 &&
                 fmlp_tensor_flop_per_clock(9, 0) == 4096,
             "tensor FLOP per clock per SM: sm_86 1024, sm_89 1024, sm_90 4096");
    fmlp_device_props unknown = {.compute_major = 12, .num_sms = 100, .clock_khz = 2000000, .mem_clock_khz = 1000000,
                                 .mem_bus_bits = 512};
    tu_check(fmlp_ceilings_from_props(&unknown, &tf, &bw) && tf == 0 && bw > 0,
             "an architecture the table lacks: no compute peak, the bandwidth still known");
    fmlp_device_props none = {.compute_major = 9};
    tu_check(!fmlp_ceilings_from_props(&none, &tf, &bw), "no clocks, no peaks");
}

int main(void)
{
    test_copy_bound();
    test_launch_bound();
    test_busy(true);
    test_busy(false);
    test_old_scheme();
    test_device_peaks();
    return tu_finish();
}
