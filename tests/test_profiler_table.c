/* Why: Self vs total, the table's formatting and the analyses are
 * arithmetic on nesting; a synthetic event set with hand-computed answers
 * pins them down without timing noise: a CPU-only window (a kernel run on
 * two worker lanes) and the same window with a GPU launch added. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/analysis.h"
#include "profiler/prof.h"
#include "profiler/tree.h"
#include "test_util.h"

#define US 1000 /* ns */

static pe_event *ev(pe_set *s, pe_kind k, const char *name, int64_t tid, int64_t t0_us, int64_t t1_us, int64_t ext,
                    int64_t corr)
{
    pe_event *e = pe_add(s, k, name, 100, tid);
    e->t0 = t0_us * US;
    e->t1 = t1_us * US;
    e->ext_id = ext;
    e->corr = corr;
    return e;
}

static pe_event *work(pe_set *s, pe_event *e, int64_t flops, int64_t bytes)
{
    pe_more m = *pe_more_of(s, e);
    m.flops = flops;
    m.bytes = bytes;
    pe_set_more(s, e, &m);
    return e;
}

/* step [0,1000] > range "fwd" [50,950] > fmlp::mlp [100,900] >
 *   fmlp::linear [120,400] > kernel A (lanes 1: [150,380], 2: [160,390])
 *   fmlp::gelu_tanh [420,600] > kernel B (lane 1: [430,590]) */
static void build_cpu(pe_set *s)
{
    pe_set_init(s);
    s->pid = 100;
    s->main_tid = 1;
    s->base_ns = 1700000000000000000LL;
    ev(s, PE_STEP, "ProfilerStep#3", 1, 0, 1000, 1, 0);
    ev(s, PE_USER, "fwd", 1, 50, 950, 2, 0);
    work(s, ev(s, PE_CPU_OP, "fmlp::mlp", 1, 100, 900, 3, 0), 3000, 0);
    work(s, ev(s, PE_CPU_OP, "fmlp::linear", 1, 120, 400, 4, 0), 2000, 480);
    work(s, ev(s, PE_KERNEL, "cpu_gemm_bf16_amx", 1, 150, 380, 4, 7), 2000, 480);
    ev(s, PE_KERNEL, "cpu_gemm_bf16_amx", 2, 160, 390, 4, 7);
    work(s, ev(s, PE_CPU_OP, "fmlp::gelu_tanh", 1, 420, 600, 5, 0), 1000, 0);
    work(s, ev(s, PE_KERNEL, "cpu_gelu_tanh_bf16_avx512", 1, 430, 590, 5, 8), 1000, 0);
}

/* The first call named `name`, or -1. */
static int find(const pe_calls *cs, const char *name)
{
    for (size_t i = 0; i < cs->n; i++)
        if (strcmp(pe_call_event(cs, i)->name, name) == 0) return (int)i;
    return -1;
}

static const char *call_name(const pe_calls *cs, int i) { return i >= 0 ? pe_call_event(cs, (size_t)i)->name : ""; }

static void check_call(const pe_calls *cs, const char *name, double self_us, double total_us, double self_dev_us,
                       double dev_total_us)
{
    int i = find(cs, name);
    const pe_call *c = i >= 0 ? &cs->c[i] : NULL;
    pe_call_view v = i >= 0 ? pe_call_get(cs, (size_t)i) : (pe_call_view){0};
    int64_t cpu_total = v.device ? 0 : v.t1 - v.t0;
    tu_check(c && c->self_cpu == (int64_t)(self_us * US) && cpu_total == (int64_t)(total_us * US) &&
                 c->self_dev == (int64_t)(self_dev_us * US) && c->dev_total == (int64_t)(dev_total_us * US),
             "%s: self %.0f / total %.0f us CPU, self %.0f / total %.0f us device (got %.0f / %.0f, %.0f / %.0f)", name,
             self_us, total_us, self_dev_us, dev_total_us, c ? c->self_cpu / 1e3 : -1, c ? cpu_total / 1e3 : -1,
             c ? c->self_dev / 1e3 : -1, c ? c->dev_total / 1e3 : -1);
}

static void test_cpu_arithmetic(void)
{
    pe_set s;
    build_cpu(&s);
    pe_calls cs;
    tu_check(pe_calls_build(&s, &cs), "calls built");
    tu_check(cs.n == 7, "7 calls: the kernel's two lanes merge into one (got %zu)", cs.n);
    check_call(&cs, "ProfilerStep#3", 100, 1000, 0, 0);
    check_call(&cs, "fwd", 100, 900, 0, 0);
    check_call(&cs, "fmlp::mlp", 340, 800, 0, 0);
    check_call(&cs, "fmlp::linear", 40, 280, 0, 0);
    check_call(&cs, "cpu_gemm_bf16_amx", 240, 240, 0, 0);
    check_call(&cs, "fmlp::gelu_tanh", 20, 180, 0, 0);
    check_call(&cs, "cpu_gelu_tanh_bf16_avx512", 160, 160, 0, 0);
    int ki = find(&cs, "cpu_gemm_bf16_amx");
    pe_call_view k = ki >= 0 ? pe_call_get(&cs, (size_t)ki) : (pe_call_view){0};
    tu_check(ki >= 0 && k.lanes == 2 && k.tid == 1 && k.flops == 2000, "merged kernel: 2 lanes, on the launching thread, FLOPs kept");
    tu_check(ki >= 0 && strcmp(call_name(&cs, cs.c[ki].parent), "fmlp::linear") == 0, "kernel's parent is fmlp::linear");

    pe_analysis a;
    tu_check(pe_analyze(&s, &cs, &a), "analysis runs");
    tu_check(a.n_steps == 1 && a.steps[0].wall_us == 1000 && a.steps[0].kernel_us == 400 &&
                 a.steps[0].overhead_us == 400 && a.steps[0].idle_us == 200 && a.steps[0].kernels == 2,
             "step: wall 1000 = kernels 400 + overhead 400 + idle 200 us, 2 kernels (got %.0f %.0f %.0f %.0f, %d)",
             a.steps[0].wall_us, a.steps[0].kernel_us, a.steps[0].overhead_us, a.steps[0].idle_us, a.steps[0].kernels);
    tu_check(a.sum.bound == FMLP_BOUND_OVERHEAD && strstr(a.sum.reason, "busy 40%"),
             "verdict overhead-bound with the numbers: %s", a.sum.reason);
    const pe_kernel_stat *g = NULL;
    for (int i = 0; i < a.n_kernels; i++)
        if (strcmp(a.kernels[i].name, "cpu_gemm_bf16_amx") == 0) g = &a.kernels[i];
    tu_check(g && g->calls == 1 && g->dur_us == 240 && g->dispatch_us == 30, "GEMM: 240 us, dispatched 30 us after its op began");
    pe_analysis_free(&a);

    /* Busy kernels and ceilings: compute- vs memory-bound. */
    s.ceil = (pe_ceilings){true, 100, 200, 10, 0, 0, 0, false};
    pe_step_stat *st;
    tu_check(pe_analyze(&s, &cs, &a), "analysis with ceilings");
    st = &a.steps[0];
    tu_check(strstr(a.sum.reason, "dispatch overhead") != NULL, "still overhead-bound: %s", st->reason);
    pe_analysis_free(&a);
    pe_calls_free(&cs);
    pe_set_free(&s);
}

static void test_gpu_arithmetic(void)
{
    pe_set s;
    build_cpu(&s);
    ev(&s, PE_RUNTIME, "cudaLaunchKernel", 1, 122, 132, 4, 20);
    pe_event *k = ev(&s, PE_KERNEL, "sm90_gemm", 7, 250, 450, 4, 20);
    pe_set_lane(&s, k, 0, 7);
    k->device = 0;
    pe_calls cs;
    tu_check(pe_calls_build(&s, &cs), "calls built with a GPU kernel");
    tu_check(cs.has_device, "device time present");
    check_call(&cs, "fmlp::linear", 30, 280, 200, 200);
    check_call(&cs, "cudaLaunchKernel", 10, 10, 0, 0);
    check_call(&cs, "sm90_gemm", 0, 0, 200, 200);
    check_call(&cs, "fmlp::mlp", 340, 800, 0, 200);
    check_call(&cs, "ProfilerStep#3", 100, 1000, 0, 200);
    int g = find(&cs, "sm90_gemm");
    tu_check(g >= 0 && strcmp(call_name(&cs, cs.c[g].launcher), "cudaLaunchKernel") == 0,
             "GPU kernel launched by its runtime call (same correlation)");
    pe_calls_free(&cs);

    fmlp_table_options o = fmlp_table_options_default();
    fmlp_status st;
    char *t = prof_table(&s, &o, true, &st);
    tu_check(t && strstr(t, "Self CUDA time total: 200.000us\n"), "CUDA footer");
    tu_check(t && strstr(t, "Self CUDA %"), "CUDA columns present with device time");
    /* Default sort with device time is Self CUDA: fmlp::mlp, first by Self
     * CPU, is not first. */
    const char *first_row = t ? strstr(strstr(strstr(t, "# of Calls"), "\n") + 1, "\n") + 1 : NULL;
    tu_check(first_row && strstr(first_row, "200.000us") < strchr(first_row, '\n') &&
                 !(strstr(first_row, "fmlp::mlp") && strstr(first_row, "fmlp::mlp") < strchr(first_row, '\n')),
             "default sort is self_cuda_time_total when there is device time");
    free(t);
    pe_set_free(&s);

    /* Records handed over at window end carry no External id; they get the
     * launching op's, through the launch call around which they nest. */
    build_cpu(&s);
    pe_event *rt = ev(&s, PE_RUNTIME, "cudaLaunchKernel", 1, 122, 132, 0, 20);
    pe_event *gk = ev(&s, PE_KERNEL, "sm90_gemm", 7, 250, 450, 0, 20);
    pe_set_lane(&s, gk, 0, 7);
    gk->device = 0;
    size_t rti = (size_t)(rt - s.ev), gki = (size_t)(gk - s.ev);
    bool resolved = pe_resolve_external_ids(&s);
    tu_check(resolved && s.ev[rti].ext_id == 4 && s.ev[gki].ext_id == 4,
             "late launch and kernel records get fmlp::linear's External id (got %lld, %lld)",
             (long long)s.ev[rti].ext_id, (long long)s.ev[gki].ext_id);
    tu_check(pe_give_work_to_kernels(&s) && pe_more_of(&s, &s.ev[gki])->flops == 2000 &&
                 pe_more_of(&s, &s.ev[gki])->bytes == 480,
             "the one GPU kernel of fmlp::linear gets its FLOPs and bytes");
    pe_set_free(&s);
}

/* The exact text of torch's table for this window, built by hand from
 * torch's rules: name column max(len)+4 right-aligned, 12-wide columns two
 * spaces apart, times with 3 decimals, shares with 2. */
static void test_table_text(void)
{
    pe_set s;
    build_cpu(&s);
    fmlp_table_options o = fmlp_table_options_default();
    fmlp_status st;
    char *t = prof_table(&s, &o, false, &st);
    const char *want =
        "-----------------------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
        "                         Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  \n"
        "-----------------------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
        "                    fmlp::mlp        34.00%     340.000us        80.00%     800.000us     800.000us             1  \n"
        "            cpu_gemm_bf16_amx        24.00%     240.000us        24.00%     240.000us     240.000us             1  \n"
        "    cpu_gelu_tanh_bf16_avx512        16.00%     160.000us        16.00%     160.000us     160.000us             1  \n"
        "                ProfilerStep*        10.00%     100.000us       100.00%       1.000ms       1.000ms             1  \n"
        "                          fwd        10.00%     100.000us        90.00%     900.000us     900.000us             1  \n"
        "                 fmlp::linear         4.00%      40.000us        28.00%     280.000us     280.000us             1  \n"
        "              fmlp::gelu_tanh         2.00%      20.000us        18.00%     180.000us     180.000us             1  \n"
        "-----------------------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
        "Self CPU time total: 1.000ms\n";
    tu_check(t && strcmp(t, want) == 0, "table text matches torch's layout exactly");
    if (t && strcmp(t, want) != 0) printf("%s", t);
    free(t);

    o.sort_by = "cpu_time_total";
    o.row_limit = 2;
    t = prof_table(&s, &o, true, &st);
    tu_check(t && strstr(t, "ProfilerStep*") && strstr(t, "fwd") && !strstr(t, "fmlp::mlp"),
             "sort_by cpu_time_total with row_limit 2 keeps the two largest totals");
    tu_check(t && strstr(t, "Total KFLOPs") && strstr(t, "FLOP/s") && strstr(t, "Bytes/s"),
             "FLOPs columns: torch's auto-scaled header (smallest count 1000 -> KFLOPs), FLOP/s, Bytes/s");
    tu_check(t && strstr(t, "Self CPU time total: 1.000ms\n"), "footer counts every row, not only those shown");
    free(t);

    o.sort_by = "count";
    o.row_limit = 0;
    o.analyses = true;
    t = prof_table(&s, &o, true, &st);
    tu_check(t && strstr(t, "Where the time went") && strstr(t, "Verdict: overhead-bound"), "analyses follow the table");
    /* The GEMM row: 2000 FLOP and 480 bytes over its 240 us, each rate with
     * the prefix that fits it. */
    const char *g = t ? strstr(t, "cpu_gemm_bf16_amx  ") : NULL, *end = g ? strchr(g, '\n') : NULL;
    const char *fr = g ? strstr(g, "8.333 MFLOP/s") : NULL, *br = g ? strstr(g, "2.000 MB/s") : NULL;
    tu_check(fr && fr < end && br && br < end, "GEMM row rates: 8.333 MFLOP/s and 2.000 MB/s");
    free(t);

    o.sort_by = "bogus";
    t = prof_table(&s, &o, true, &st);
    tu_check(!t && st == FMLP_ERR_INVALID_ARGUMENT && strstr(fmlp_last_error(), "bogus"),
             "unknown sort_by fails naming the value: %s", fmlp_last_error());
    tu_check(fmlp_table_sort_key_valid(NULL) && fmlp_table_sort_key_valid("flops") && !fmlp_table_sort_key_valid("x"), "sort key check");
    pe_set_free(&s);
}

static void test_time_format(void)
{
    pe_set s;
    pe_set_init(&s);
    ev(&s, PE_CPU_OP, "long", 1, 0, 2500000, 1, 0);
    ev(&s, PE_CPU_OP, "mid", 1, 2500000, 2501500, 2, 0);
    fmlp_status st;
    char *t = prof_table(&s, NULL, false, &st);
    tu_check(t && strstr(t, "2.500s") && strstr(t, "1.500ms") && strstr(t, "Self CPU time total: 2.50"),
             "seconds and milliseconds formatted like torch");
    free(t);
    pe_set_free(&s);
}

int main(void)
{
    test_cpu_arithmetic();
    test_gpu_arithmetic();
    test_table_text();
    test_time_format();
    return tu_finish();
}
