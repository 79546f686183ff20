/* Why: Holistic Trace Analysis and every Kineto reader join a trace on
 * correlation and External id, and people compare kernel counts between
 * torch.profiler's traces and fmlp's. Without a GPU this holds fmlp to
 * Kineto's semantics with hand-made GPU records handed through the
 * profiler hook exactly as the CUDA backend hands CUPTI's (each runtime call
 * with its own correlation, the op's External id on call and activity,
 * cuBLASLt's memset beside its GEMM, a copy under fmlp::copy_), and checks
 * the written trace with the same rules applied to the bundled torch 2.11
 * Kineto trace: the joins, and 5 kernels per eager step counted one way for
 * torch's trace, fmlp's GPU-shaped and CPU traces, and a trace in fmlp's old
 * shared-correlation scheme. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/json.h"
#include "profiler/hook.h"
#include "test_util.h"
#include "trace_check.h"

enum { STREAM = 7 };

static void spin_until(int64_t t)
{
    while (fmlp_now_ns() < t) {
    }
}

static int64_t g_corr = 7000; /* as CUPTI counts: one per runtime call */

/* One runtime call on this thread and the GPU activity it started. */
static void gpu_call(fmlp_profiler *p, int64_t ext, fmlp_rec_kind kind, const char *call, const char *act,
                     int64_t bytes)
{
    const int64_t corr = ++g_corr, t0 = fmlp_now_ns();
    spin_until(t0 + 2000);
    const int64_t t1 = fmlp_now_ns();
    fmlp_prof_record r = {.kind = FMLP_REC_RUNTIME, .name = call, .t0_ns = t0, .t1_ns = t1, .device = -1,
                          .lane = fmlp_thread_id(), .correlation = corr, .external_id = ext};
    fmlp_prof_record g = {.kind = kind, .name = act, .t0_ns = t1 + 500, .t1_ns = t1 + 3000, .device = 0,
                          .lane = STREAM, .correlation = corr, .external_id = ext, .bytes = bytes};
    fmlp_prof_record_add(p, &r);
    fmlp_prof_record_add(p, &g);
    spin_until(t1 + 3000);
}

/* An eager GeGLU forward as the CUDA backend reports it: x copied in,
 * three cuBLASLt GEMMs (memset + launch each), gelu and mul. */
static void gpu_forward(fmlp_profiler *p)
{
    int64_t mlp = fmlp_prof_op_begin(p, "fmlp::mlp", NULL, 0, 0);
    int64_t cp = fmlp_prof_op_begin(p, "fmlp::copy_", NULL, 0, 4096);
    gpu_call(p, cp, FMLP_REC_MEMCPY, "cudaMemcpyAsync", "Memcpy HtoD (Pinned -> Device)", 4096);
    fmlp_prof_op_end(p, cp);
    static const char *const ops[] = {"fmlp::linear", "fmlp::linear", "fmlp::gelu_tanh", "fmlp::mul", "fmlp::linear"};
    static const char *const kernels[] = {"nvjet_sm90_tst_96x128", "nvjet_sm90_tst_96x128", "fmlp_gelu_tanh_bf16_vec",
                                          "fmlp_mul_bf16_vec", "nvjet_sm90_tst_64x64"};
    for (int i = 0; i < 5; i++) {
        int64_t op = fmlp_prof_op_begin(p, ops[i], NULL, 1000, 100);
        bool lt = strcmp(ops[i], "fmlp::linear") == 0;
        if (lt) gpu_call(p, op, FMLP_REC_MEMSET, "cudaMemsetAsync", "Memset (Device)", 4);
        gpu_call(p, op, FMLP_REC_KERNEL, lt ? "cuLaunchKernelEx" : "cudaLaunchKernel", kernels[i], 0);
        fmlp_prof_op_end(p, op);
    }
    fmlp_prof_op_end(p, mlp);
}

static json_doc *parse(char *text, size_t len, const char *what)
{
    json_doc *d = text ? json_parse(text, len, NULL) : NULL;
    tu_check(d != NULL, "%s parses", what);
    return d;
}

static void test_fmlp_gpu_records(fmlp_ctx *ctx)
{
    fmlp_profiler_options o = fmlp_profiler_options_default();
    o.active = 2;
    o.repeat = 1;
    fmlp_profiler *p;
    if (!tu_check(fmlp_profiler_create(ctx, &o, &p) == FMLP_OK, "profiler: %s", fmlp_last_error())) return;
    fmlp_profiler_start(p);
    for (int i = 0; i < 2; i++) {
        gpu_forward(p);
        fmlp_profiler_step(p);
    }
    fmlp_profiler_stop(p);
    fmlp_profile_summary sum = {0};
    fmlp_status ss = fmlp_profiler_summary(p, &sum);
    tu_check(ss == FMLP_OK && sum.kernels_per_step == 5 && sum.copies_per_step == 4,
             "fmlp GPU records: 5 kernels per step, the copy and 3 memsets apart (got %d, %d)", sum.kernels_per_step,
             sum.copies_per_step);
    char path[512];
    snprintf(path, sizeof path, "%s/kineto_gpu_records.json", tu_tmpdir());
    tu_check(fmlp_profiler_export_trace(p, path) == FMLP_OK, "export: %s", fmlp_last_error());
    fmlp_profiler_destroy(p);
    size_t len = 0;
    char *text = tu_read_file(path, &len);
    json_doc *d = parse(text, len, "fmlp GPU-records trace");
    if (d) {
        const json_value *root = json_doc_root(d), *evs = json_get(root, "traceEvents");
        tc_check_trace(root, "fmlp GPU records");
        tu_check(tc_check_correlations(evs, "fmlp GPU records") == 2 * 9, "18 GPU activities checked");
        tu_check(tc_check_step_kernels(evs, "fmlp GPU records", 5) == 2, "2 steps");
        json_free(d);
    }
    free(text);
}

/* The tutorial's GeGLU on the CPU: a parallel region is one kernel, its
 * lanes one correlation, and each region's External id its own op's. */
static void test_fmlp_cpu_trace(fmlp_ctx *ctx)
{
    fmlp_mlp_desc desc = {FMLP_BLOCK_GATED, 768, 3072, 0, 0, FMLP_ACT_GELU_TANH, false, FMLP_BF16};
    fmlp_mlp *m;
    fmlp_tensor x, y;
    if (!tu_check(fmlp_mlp_create(ctx, &desc, tu_rand_u64(), &m) == FMLP_OK, "mlp: %s", fmlp_last_error())) return;
    fmlp_tensor_alloc(ctx, FMLP_BF16, 16, 768, &x);
    fmlp_tensor_alloc(ctx, FMLP_BF16, 16, 768, &y);
    tu_fill(FMLP_BF16, x.data, 16 * 768, -1, 1, NULL);
    fmlp_profiler_options o = fmlp_profiler_options_default();
    o.active = 2;
    o.repeat = 1;
    fmlp_profiler *p;
    fmlp_profiler_create(ctx, &o, &p);
    fmlp_profiler_start(p);
    for (int i = 0; i < 2; i++) {
        fmlp_mlp_forward(m, FMLP_MODE_EAGER, &x, &y);
        fmlp_profiler_step(p);
    }
    fmlp_profiler_stop(p);
    fmlp_profile_summary sum = {0};
    fmlp_status ss = fmlp_profiler_summary(p, &sum);
    tu_check(ss == FMLP_OK && sum.kernels_per_step == 5, "fmlp CPU eager: the library counts 5 kernels per step (got %d)",
             sum.kernels_per_step);
    char path[512];
    snprintf(path, sizeof path, "%s/kineto_cpu.json", tu_tmpdir());
    fmlp_profiler_export_trace(p, path);
    fmlp_profiler_destroy(p);
    size_t len = 0;
    char *text = tu_read_file(path, &len);
    json_doc *d = parse(text, len, "fmlp CPU trace");
    if (d) {
        const json_value *evs = json_get(json_doc_root(d), "traceEvents");
        tu_check(tc_check_step_kernels(evs, "fmlp CPU eager", 5) == 2, "2 steps");
        /* Regions by correlation: every lane of one carries one External id,
         * and no two regions share a correlation or an op. */
        int64_t corr[64], ext[64];
        int n = 0, mixed = 0, shared_op = 0;
        for (size_t i = 0; i < json_len(evs); i++) {
            const json_value *e = json_at(evs, i), *a = json_get(e, "args");
            if (!tc_is(e, "X", "kernel") || json_get_int(a, "device", 0) >= 0) continue;
            int64_t c = json_get_int(a, "correlation", 0), x_id = json_get_int(a, "External id", 0);
            int k = 0;
            while (k < n && corr[k] != c) k++;
            if (k < n) {
                mixed += ext[k] != x_id;
            } else if (n < 64) {
                for (int j = 0; j < n; j++) shared_op += ext[j] == x_id;
                corr[n] = c;
                ext[n++] = x_id;
            }
        }
        tu_check(n == 10 && mixed == 0 && shared_op == 0,
                 "10 regions (2 steps x 5), each one correlation over its lanes (%d lanes disagree) and its own op "
                 "(%d share one)",
                 mixed, shared_op);
        json_free(d);
    }
    free(text);
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    fmlp_mlp_destroy(m);
}

/* gzip -dc of a file, or NULL when gzip is not there. */
static char *gunzip(const char *path, size_t *len)
{
    char out[600], cmd[1800];
    snprintf(out, sizeof out, "%s/kineto_torch_fixture.json", tu_tmpdir());
    snprintf(cmd, sizeof cmd, "gzip -dc '%s' > '%s' 2>/dev/null", path, out);
    return system(cmd) == 0 ? tu_read_file(out, len) : NULL;
}

static void test_torch_trace(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/torch_profiler_cuda_trace.json.gz", dir);
    size_t len = 0;
    char *text = gunzip(path, &len);
    if (!text) {
        tu_skip("gzip could not read %s", path);
        return;
    }
    json_doc *d = parse(text, len, "torch 2.11 Kineto trace");
    if (d) {
        const json_value *evs = json_get(json_doc_root(d), "traceEvents");
        tu_check(tc_check_step_kernels(evs, "torch 2.11 Kineto", 5) == 2, "torch: 2 steps");
        tu_check(tc_check_correlations(evs, "torch 2.11 Kineto") == 10, "torch: 10 GPU activities checked");
        json_free(d);
    }
    free(text);
    fmlp_trace *t;
    fmlp_profile_summary sum = {0};
    if (fmlp_trace_open(path, &t) == FMLP_OK) {
        fmlp_status ss = fmlp_trace_summary(t, &sum);
        tu_check(ss == FMLP_OK && sum.kernels_per_step == 5 && sum.copies_per_step == 0,
                 "torch: the library counts 5 kernels per step too (got %d)", sum.kernels_per_step);
        fmlp_trace_close(t);
    } else {
        tu_skip("built without zlib: %s", fmlp_last_error());
    }
}

/* fmlp's old scheme: every call and activity of one op shared the op's
 * correlation, so cuBLASLt's memset and GEMM carried the same one. */
static void test_old_fmlp_trace(void)
{
    char text[8192];
    size_t n = (size_t)snprintf(text, sizeof text, "{\"schemaVersion\":1,\"fmlpAnalysis\":{},\"traceEvents\":[\n"
                                                 "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\","
                                                 "\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":500,\"args\":{\"External id\":1}}");
    for (int k = 0; k < 5; k++) {
        double t = 10 + 90 * k;
        bool lt = k != 2 && k != 3;
        if (lt)
            n += (size_t)snprintf(text + n, sizeof text - n,
                                  ",\n{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaMemsetAsync\",\"pid\":1,"
                                  "\"tid\":1,\"ts\":%.1f,\"dur\":2,\"args\":{\"External id\":%d,\"correlation\":%d}},\n"
                                  "{\"ph\":\"X\",\"cat\":\"gpu_memset\",\"name\":\"Memset (Device)\",\"pid\":0,\"tid\":7,"
                                  "\"ts\":%.1f,\"dur\":1,\"args\":{\"External id\":%d,\"correlation\":%d,\"device\":0,"
                                  "\"stream\":7,\"bytes\":4}}",
                                  t, 10 + k, 6 + k, t + 5, 10 + k, 6 + k);
        n += (size_t)snprintf(text + n, sizeof text - n,
                              ",\n{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cuLaunchKernelEx\",\"pid\":1,"
                              "\"tid\":1,\"ts\":%.1f,\"dur\":5,\"args\":{\"External id\":%d,\"correlation\":%d}},\n"
                              "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k%d\",\"pid\":0,\"tid\":7,\"ts\":%.1f,"
                              "\"dur\":30,\"args\":{\"External id\":%d,\"correlation\":%d,\"device\":0,\"stream\":7}}",
                              t + 10, 10 + k, 6 + k, k, t + 20, 10 + k, 6 + k);
    }
    n += (size_t)snprintf(text + n, sizeof text - n, "\n]}\n");
    json_doc *d = parse(text, n, "old-scheme fmlp trace");
    if (d) {
        const json_value *evs = json_get(json_doc_root(d), "traceEvents");
        tu_check(tc_check_step_kernels(evs, "old fmlp scheme", 5) == 1, "1 step");
        /* The check the new traces pass catches what HTA cross-joined here. */
        const tc_joins j = tc_count_joins(evs);
        tu_check(j.acts == 8 && j.no_call == 6, "old scheme: 6 of 8 activities share their call's correlation with "
                                                "another call (got %d of %d)", j.no_call, j.acts);
        json_free(d);
    }
    fmlp_trace *t;
    fmlp_profile_summary sum = {0};
    bool ok = fmlp_trace_parse(text, n, "old scheme", &t) == FMLP_OK && fmlp_trace_summary(t, &sum) == FMLP_OK;
    tu_check(ok && sum.kernels_per_step == 5 && sum.copies_per_step == 3,
             "old fmlp scheme: the library counts 5 kernels and 3 memsets per step (got %d, %d)", sum.kernels_per_step,
             sum.copies_per_step);
    fmlp_trace_close(t);
}

int main(void)
{
    tu_seed();
    fmlp_ctx *ctx;
    fmlp_ctx_options co = fmlp_ctx_options_default();
    co.threads = 3;
    if (!tu_check(fmlp_ctx_create(&co, &ctx) == FMLP_OK, "context: %s", fmlp_last_error())) return tu_finish();
    test_fmlp_gpu_records(ctx);
    test_fmlp_cpu_trace(ctx);
    fmlp_ctx_destroy(ctx);
    const char *dir = getenv("FMLP_TEST_DATA");
    test_torch_trace(dir ? dir : "tests/data");
    test_old_fmlp_trace();
    return tu_finish();
}
