/* Why: the reader and analyses used to be quadratic in steps x calls, in
 * lanes and in distinct names, and leaked when an allocation failed while
 * building calls. This checks results only (the time is the benchmark's
 * business, bench/trace_read_bench.sh): a trace of 1000 steps x 16 layers
 * gives the right counts per step and per row; 200k distinct kernel names
 * and 200k lanes give a row each and a capped lane count; a file read in
 * chunks gives the summary the same text gives in memory; and every
 * allocation of parsing, building calls and analysing, made to fail in
 * turn, fails cleanly (ASan's leak check runs over this in CI). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "profiler/analysis.h"
#include "profiler/trace_read.h"
#include "profiler/tree.h"
#include "test_util.h"

typedef struct {
    char *s;
    size_t n, cap;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
        va_end(ap);
        if ((size_t)n < t->cap - t->n) {
            t->n += (size_t)n;
            return;
        }
        t->cap = (t->cap + (size_t)n + 1) * 2;
        t->s = realloc(t->s, t->cap);
    }
}

/* Kineto-style: per step, per layer an op launching one GPU kernel through
 * a runtime call; `sep` goes between events (newlines make a file whose
 * tokens cross the reader's window edges). */
static text steps_trace(int steps, int layers, bool distinct_names, const char *sep)
{
    text t = {0};
    add(&t, "{\"schemaVersion\":1,\"traceEvents\":[");
    long ext = 0, corr = 0;
    double ts = 1000;
    for (int s = 0; s < steps; s++) {
        add(&t, "%s%s{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\",\"pid\":1,\"tid\":1,"
                "\"ts\":%.3f,\"dur\":%d,\"args\":{\"External id\":%ld}}",
            s ? "," : "", sep, s, ts, layers * 10, ++ext);
        for (int l = 0; l < layers; l++, ts += 10) {
            ext++;
            corr++;
            add(&t, ",%s{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,\"ts\":%.3f,\"dur\":8,"
                    "\"args\":{\"External id\":%ld,\"flops\":1000}}",
                sep, ts + 1, ext);
            add(&t, ",%s{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":%.3f,"
                    "\"dur\":3,\"args\":{\"External id\":%ld,\"correlation\":%ld}}",
                sep, ts + 2, ext, corr);
            add(&t, ",%s{\"ph\":\"f\",\"id\":%ld,\"pid\":0,\"tid\":7,\"ts\":%.3f,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}", sep,
                corr, ts + 6);
            if (distinct_names)
                add(&t, ",%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"kernel_%d_%d\",\"pid\":0,\"tid\":7,\"ts\":%.3f,\"dur\":2,"
                        "\"args\":{\"External id\":%ld,\"correlation\":%ld,\"device\":0}}",
                    sep, s, l, ts + 6, ext, corr);
            else
                add(&t, ",%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm_%d\",\"pid\":0,\"tid\":7,\"ts\":%.3f,\"dur\":2,"
                        "\"args\":{\"External id\":%ld,\"correlation\":%ld,\"device\":0}}",
                    sep, l % 4, ts + 6, ext, corr);
        }
    }
    add(&t, "]}");
    return t;
}

static fmlp_trace *parse(const text *t, const char *name)
{
    fmlp_trace *tr = NULL;
    fmlp_status s = fmlp_trace_parse(t->s, t->n, name, &tr);
    tu_check(s == FMLP_OK, "%s parses: %s", name, s == FMLP_OK ? "ok" : fmlp_last_error());
    return tr;
}

static void test_many_steps(void)
{
    text t = steps_trace(1000, 16, false, "");
    fmlp_trace *tr = parse(&t, "steps");
    if (tr) {
        fmlp_profile_summary sum;
        fmlp_status st = fmlp_trace_summary(tr, &sum);
        tu_check(st == FMLP_OK && sum.steps == 1000 && sum.kernels_per_step == 16,
                 "1000 steps of 16 kernels (got %d steps, %d per step)", sum.steps, sum.kernels_per_step);
        int bad = 0;
        for (int i = 0; i < 1000; i++) {
            fmlp_trace_step st;
            bad += fmlp_trace_step_info(tr, i, &st) != FMLP_OK || st.kernels != 16 || st.number != i ||
                   st.kernel_us != 32.0 || st.wall_us != 160.0;
        }
        tu_check(bad == 0, "every step: 16 kernels, 32 us of kernel time in 160 us (%d steps differ)", bad);
        char *s = NULL;
        tu_check(fmlp_trace_summary_string(tr, NULL, &s) == FMLP_OK && strstr(s, "49000 spans on 2 lanes") &&
                     strstr(s, "ProfilerStep*") && strstr(s, "  16000  "),
                 "table: 49000 spans on 2 lanes, aten::mm and cudaLaunchKernel 16000 calls each");
        free(s);
    }
    fmlp_trace_close(tr);

    /* The same trace read from a file, one event per line, in chunks. */
    text lines = steps_trace(1000, 16, false, "\n   ");
    char path[1024];
    snprintf(path, sizeof path, "%s/scale_steps.json", tu_tmpdir());
    FILE *f = fopen(path, "wb");
    fwrite(lines.s, 1, lines.n, f);
    fclose(f);
    fmlp_trace *a = NULL, *b = parse(&t, path);
    tu_check(fmlp_trace_open(path, &a) == FMLP_OK, "the file opens: %s", fmlp_last_error());
    char *sa = NULL, *sb = NULL;
    fmlp_table_options o = fmlp_table_options_default();
    o.analyses = true;
    bool same = a && b && fmlp_trace_summary_string(a, &o, &sa) == FMLP_OK &&
                fmlp_trace_summary_string(b, &o, &sb) == FMLP_OK && strcmp(sa, sb) == 0;
    tu_check(same, "summary from the file (read in windows) = summary from memory");
    free(sa);
    free(sb);
    fmlp_trace_close(a);
    fmlp_trace_close(b);
    free(lines.s);
    free(t.s);
}

static void test_many_names_and_lanes(void)
{
    text t = steps_trace(1, 200000, true, "");
    fmlp_trace *tr = parse(&t, "names");
    char *s = NULL;
    if (tr && fmlp_trace_summary_string(tr, NULL, &s) == FMLP_OK) {
        /* memmem with lengths: strstr from each hit would rescan the rest. */
        size_t rows = 0, len = strlen(s);
        for (const char *p = s; (p = memmem(p, len - (size_t)(p - s), "kernel_0_", 9)); p++) rows++;
        tu_check(rows == 200000 && strstr(s, "kernel_0_199999"), "200000 distinct kernel names: a row each (%zu)", rows);
        fmlp_trace *two[2] = {tr, tr};
        char *d = NULL;
        tu_check(fmlp_trace_diff_string(two, 2, &d) == FMLP_OK && strstr(d, "kernel_0_199999"),
                 "the diff matches 200000 names across traces");
        free(d);
    }
    free(s);
    fmlp_trace_close(tr);
    free(t.s);

    t = (text){0};
    add(&t, "[");
    for (int i = 0; i < 200000; i++)
        add(&t, "%s{\"ph\":\"X\",\"name\":\"op\",\"pid\":1,\"tid\":%d,\"ts\":%d,\"dur\":1}", i ? "," : "", i, i);
    add(&t, "]");
    tr = parse(&t, "lanes");
    fmlp_trace_info info;
    char svg[1024];
    snprintf(svg, sizeof svg, "%s/scale_lanes.svg", tu_tmpdir());
    tu_check(tr && fmlp_trace_get_info(tr, &info) == FMLP_OK && info.spans == 200000 && info.lanes == FMLP_TRACE_MAX_LANES,
             "200000 lanes: counted up to %d", FMLP_TRACE_MAX_LANES);
    tu_check(tr && fmlp_trace_render_svg(tr, NULL, svg) == FMLP_OK, "and drawn");
    fmlp_trace_close(tr);
    free(t.s);
}

/* Each allocation of `what`, made to fail in turn (the others succeed),
 * must be survived (ASan watches for leaks and bad accesses); at least one
 * of them must make it fail, and it must run whole with none failing. */
static void sweep(const char *what, bool (*run)(const void *), const void *arg)
{
    long n, failures = 0;
    for (n = 1; n < 100000; n++) {
        fmlp_alloc_test_arm(n, 0);
        bool ok = run(arg);
        bool fired = fmlp_alloc_test_fired();
        fmlp_alloc_test_disarm();
        if (!fired) {
            tu_check(ok, "%s: runs whole when no allocation fails", what);
            break;
        }
        failures += !ok;
        fmlp_clear_error();
    }
    tu_check(failures > 0 && n < 100000, "%s: each of its %ld allocations made to fail in turn, %ld of the runs failed",
             what, n - 1, failures);
}

static bool build_calls(const void *arg)
{
    pe_calls cs;
    if (!pe_calls_build(arg, &cs)) return false;
    pe_analysis a;
    bool ok = pe_analyze(arg, &cs, &a);
    if (ok) pe_analysis_free(&a);
    pe_calls_free(&cs);
    return ok;
}

static bool parse_text(const void *arg)
{
    const text *t = arg;
    pe_set s;
    fmlp_status st = pe_parse_trace(t->s, t->n, "sweep", &s);
    pe_set_free(&s);
    return st == FMLP_OK;
}

static void test_allocation_failures(void)
{
    text t = steps_trace(3, 4, false, "\n");
    sweep("parsing a trace", parse_text, &t);
    pe_set s;
    if (tu_check(pe_parse_trace(t.s, t.n, "sweep", &s) == FMLP_OK, "the sweep's trace reads"))
        sweep("building calls and analysing (two id maps, regions, orders)", build_calls, &s);
    pe_set_free(&s);
    free(t.s);
}

int main(void)
{
    tu_seed();
    test_many_steps();
    test_many_names_and_lanes();
    test_allocation_failures();
    return tu_finish();
}
