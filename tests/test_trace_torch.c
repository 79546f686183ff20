/* Why: `fmlp trace summarize` must read what torch.profiler writes, not
 * only our own files. Two real torch.profiler runs of the tutorial's GeGLU
 * MLP: a CPU-only one (legacy array form: no categories, string pid,
 * integer us), checked against sums computed straight from the JSON, with
 * 2 steps of 5 compute ops; and a CUDA one (Kineto, gzip'd: launches on the
 * CPU, kernels on a stream, joined by correlation), checked for 5 kernels a
 * step, device time charged to the launching ops, launch delays, FLOPs
 * derived from the recorded shapes, and the verdict. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "profiler/analysis.h"
#include "profiler/prof.h"
#include "profiler/trace_read.h"
#include "profiler/tree.h"
#include "test_util.h"

/* Sum of durations of `name` and of spans directly inside them, straight
 * from the JSON (same lane, contained, no span in between). */
static void direct_sums(const json_value *evs, const char *name, double *total, double *self, int *calls)
{
    size_t n = json_len(evs);
    *total = *self = 0;
    *calls = 0;
    for (size_t i = 0; i < n; i++) {
        const json_value *p = json_at(evs, i);
        if (strcmp(json_get_str(p, "name"), name) != 0) continue;
        double a = json_get_num(p, "ts", 0), b = a + json_get_num(p, "dur", 0);
        (*calls)++;
        *total += b - a;
        double kids = 0;
        for (size_t j = 0; j < n; j++) {
            const json_value *c = json_at(evs, j);
            double ca = json_get_num(c, "ts", 0), cb = ca + json_get_num(c, "dur", 0);
            if (j == i || ca < a || cb > b || (ca == a && cb == b && j < i)) continue;
            bool direct = true;
            for (size_t k = 0; k < n && direct; k++) {
                const json_value *m = json_at(evs, k);
                double ma = json_get_num(m, "ts", 0), mb = ma + json_get_num(m, "dur", 0);
                if (k == i || k == j) continue;
                bool m_in_p = ma >= a && mb <= b && !(ma == a && mb == b && k < i);
                bool c_in_m = ca >= ma && cb <= mb && !(ca == ma && cb == mb && j < k);
                if (m_in_p && c_in_m) direct = false;
            }
            if (direct) kids += cb - ca;
        }
        *self += b - a - kids;
    }
}

static bool row_has(const char *table, const char *name, const char *a, const char *b)
{
    char key[64];
    snprintf(key, sizeof key, " %s  ", name);
    const char *r = strstr(table, key);
    if (!r) return false;
    const char *end = strchr(r, '\n');
    const char *pa = strstr(r, a), *pb = strstr(r, b);
    return pa && pa < end && pb && pb < end;
}

static void test_cuda_trace(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/torch_profiler_cuda_trace.json.gz", dir);
    pe_set s;
    fmlp_status st = pe_read_trace(path, &s);
    if (st != FMLP_OK) {
        if (strstr(fmlp_last_error(), "without zlib"))
            tu_skip("built without zlib: cannot read %s", path);
        else
            tu_check(false, "reads the CUDA trace: %s", fmlp_last_error());
        pe_set_free(&s);
        return;
    }
    pe_calls cs;
    pe_analysis a;
    tu_check(pe_calls_build(&s, &cs) && pe_analyze(&s, &cs, &a), "CUDA trace: analysis runs");
    tu_check(cs.has_device && !a.ops_as_kernels, "CUDA trace: GPU kernels are the work units");
    tu_check(a.n_steps == 2 && a.steps[0].kernels == 5 && a.steps[1].kernels == 5,
             "CUDA trace: 2 steps of 5 kernels (3 GEMMs, gelu, mul), got %d: %d, %d", a.n_steps,
             a.n_steps ? a.steps[0].kernels : -1, a.n_steps > 1 ? a.steps[1].kernels : -1);
    int64_t dev_ns = 0, mm_dev = 0, mm_flops = 0;
    int launched = 0, kernels = 0;
    for (size_t i = 0; i < cs.n; i++) {
        pe_call_view c = pe_call_get(&cs, i);
        int l = cs.c[i].launcher;
        if (c.device) {
            dev_ns += c.t1 - c.t0;
            kernels++;
            launched += l >= 0 && pe_call_event(&cs, (size_t)l)->kind == PE_RUNTIME && c.t0 >= pe_call_t0(&cs, (size_t)l);
            if (strncmp(c.name, "nvjet", 5) == 0) mm_dev += c.t1 - c.t0;
        }
        if (strcmp(c.name, "aten::mm") == 0 && !mm_flops) mm_flops = c.flops;
    }
    tu_check(launched == kernels, "every kernel joined to the runtime/driver call that launched it (%d of %d)", launched,
             kernels);
    tu_check(mm_flops == 2LL * 512 * 768 * 3072, "aten::mm FLOPs from Input Dims: 2*512*768*3072 (got %lld)",
             (long long)mm_flops);
    fmlp_table_options o = fmlp_table_options_default();
    char *t = prof_table(&s, &o, true, &st);
    char want[64];
    snprintf(want, sizeof want, "Self CUDA time total: %.3fus\n", (double)dev_ns / 1e3);
    tu_check(t && strstr(t, want), "CUDA footer is the kernels' summed time: %s", want);
    snprintf(want, sizeof want, "%.3fus", (double)mm_dev / 1e3);
    tu_check(t && row_has(t, "aten::mm", want, "  6  "), "aten::mm is charged its GEMM kernels' time, %s", want);
    tu_check(a.sum.bound == FMLP_BOUND_OVERHEAD, "tiny GPU kernels between Python-side launches: overhead-bound (%s)",
             a.sum.reason);
    free(t);
    pe_analysis_free(&a);
    pe_calls_free(&cs);
    pe_set_free(&s);
}

int main(void)
{
    const char *dir = getenv("FMLP_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/torch_profiler_cpu_trace.json", dir ? dir : "tests/data");
    size_t len = 0;
    char *text = tu_read_file(path, &len);
    if (!text) {
        tu_skip("fixture %s not found (set FMLP_TEST_DATA)", path);
        return tu_finish();
    }
    json_doc *d = json_parse(text, len, NULL);
    tu_check(d != NULL, "fixture parses as JSON");
    const json_value *evs = json_doc_root(d);

    pe_set s;
    fmlp_status st = pe_read_trace(path, &s);
    tu_check(st == FMLP_OK, "reads the torch.profiler trace (%s)", st ? fmlp_last_error() : "ok");
    tu_check(s.origin && strcmp(s.origin, "torch.profiler") == 0, "recognised as torch.profiler's");

    fmlp_table_options o = fmlp_table_options_default();
    o.analyses = true;
    char *t = prof_table(&s, &o, true, &st);
    tu_check(t != NULL, "table built");
    if (t) printf("%s", t);
    static const char *const names[] = {"aten::mm", "aten::linear", "aten::matmul", "geglu_mlp", "aten::gelu", "aten::mul"};
    for (size_t i = 0; t && i < sizeof names / sizeof *names; i++) {
        double total, self;
        int calls;
        direct_sums(evs, names[i], &total, &self, &calls);
        char want_self[32], want_total[32], want_calls[32];
        /* torch's format for these magnitudes */
        snprintf(want_self, sizeof want_self, self >= 1000 ? "%.3fms" : "%.3fus", self >= 1000 ? self / 1e3 : self);
        snprintf(want_total, sizeof want_total, total >= 1000 ? "%.3fms" : "%.3fus", total >= 1000 ? total / 1e3 : total);
        snprintf(want_calls, sizeof want_calls, "  %d  ", calls);
        tu_check(row_has(t, names[i], want_self, want_total) && row_has(t, names[i], want_calls, want_calls),
                 "%s: self %s, total %s, %d calls, as summed from the JSON", names[i], want_self, want_total, calls);
    }
    tu_check(t && row_has(t, "ProfilerStep*", "  2  ", "  2  "), "ProfilerStep#1, #2 grouped as ProfilerStep*, 2 calls");

    pe_calls cs;
    pe_analysis a;
    tu_check(pe_calls_build(&s, &cs) && pe_analyze(&s, &cs, &a), "analysis runs");
    tu_check(a.ops_as_kernels, "CPU-only trace: leaf compute ops stand in for kernels");
    tu_check(a.n_steps == 2, "2 profiled steps (got %d)", a.n_steps);
    for (int i = 0; i < a.n_steps; i++)
        tu_check(a.steps[i].kernels == 5, "%s: 5 compute ops (3 mm, gelu, mul), got %d", a.steps[i].name,
                 a.steps[i].kernels);
    tu_check(a.sum.kernels_per_step == 5 && a.sum.wall_us > 0, "summary: 5 per step");
    tu_check(t && strstr(t, "Verdict: "), "verdict printed");
    pe_analysis_free(&a);
    pe_calls_free(&cs);
    free(t);
    pe_set_free(&s);
    json_free(d);
    free(text);
    test_cuda_trace(dir ? dir : "tests/data");
    return tu_finish();
}
