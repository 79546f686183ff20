/* Why: on the GPU the trace must join the way Kineto's does, because HTA
 * joins on it: every runtime call (cuBLASLt's memset and launch included)
 * and the activity it started share the correlation CUPTI gave the call,
 * no two calls share one, and both carry the issuing op's External id
 * (fmlp::linear for a GEMM and its memset, fmlp::copy_ for a copy). The
 * shared rules of trace_check.h judge real CUPTI records here: eager steps
 * with a pinned copy, fused steps replayed from a CUDA graph (whose kernels
 * share the launch's correlation), and the verdicts of a pageable host
 * round trip (copy-bound) and of device-resident forwards (compute-bound
 * against the device's datasheet peaks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "cuda_test.h"
#include "trace_check.h"

enum { DIM = 768, HIDDEN = 3072, STEPS = 3 };

typedef struct {
    fmlp_mlp *m;
    fmlp_mode mode;
    fmlp_tensor *x, *y;
    const fmlp_tensor *copy_src; /* copied into x before each forward, or NULL */
} step_work;

/* Profiles `w` on the tutorial's schedule (1 warmup, 3 steps recorded);
 * returns the summary, writes the trace to `path` and prints each step's
 * wall time, so a step that paid a first-call cost shows. */
static bool profile(fmlp_ctx *ctx, const step_work *w, const char *path, fmlp_profile_summary *sum)
{
    fmlp_profiler_options o = fmlp_profiler_options_default();
    o.warmup = 1;
    o.active = STEPS;
    o.repeat = 1;
    o.with_flops = true;
    fmlp_profiler *p;
    if (fmlp_profiler_create(ctx, &o, &p) != FMLP_OK) return false;
    fmlp_status s = fmlp_profiler_start(p);
    for (int i = 0; i < 1 + STEPS && s == FMLP_OK; i++) {
        if (w->copy_src) s = fmlp_tensor_copy(ctx, w->x, w->copy_src);
        if (s == FMLP_OK) s = fmlp_mlp_forward(w->m, w->mode, w->x, w->y);
        if (s == FMLP_OK) s = fmlp_ctx_synchronize(ctx);
        if (s == FMLP_OK) s = fmlp_profiler_step(p);
    }
    if (s == FMLP_OK) s = fmlp_profiler_stop(p);
    if (s == FMLP_OK) s = fmlp_profiler_summary(p, sum);
    if (s == FMLP_OK) s = fmlp_profiler_export_trace(p, path);
    if (s != FMLP_OK) tu_check(false, "profiling %s: %s", path, fmlp_last_error());
    fmlp_profiler_destroy(p);
    fmlp_trace *t;
    if (s == FMLP_OK && fmlp_trace_open(path, &t) == FMLP_OK) {
        fmlp_trace_info info;
        fmlp_trace_step st;
        printf("  %s: step wall", path);
        for (int i = 0; fmlp_trace_get_info(t, &info) == FMLP_OK && i < info.steps; i++)
            if (fmlp_trace_step_info(t, i, &st) == FMLP_OK) printf(" %.1f", st.wall_us);
        printf(" us\n");
        fmlp_trace_close(t);
    }
    return s == FMLP_OK;
}

/* The ops whose External id each kind of activity carries. */
static void check_owners(const json_value *evs, const char *label)
{
    int memsets = 0, memcpys = 0, bad = 0;
    for (size_t i = 0; i < json_len(evs); i++) {
        const json_value *a = json_at(evs, i);
        const char *cat = json_get_str(a, "cat");
        if (!tc_is(a, "X", NULL) || !cat || (strcmp(cat, "gpu_memset") != 0 && strcmp(cat, "gpu_memcpy") != 0)) continue;
        bool set = strcmp(cat, "gpu_memset") == 0;
        memsets += set;
        memcpys += !set;
        int64_t ext = json_get_int(json_get(a, "args"), "External id", -1);
        const char *op = NULL;
        for (size_t k = 0; k < json_len(evs) && !op; k++) {
            const json_value *e = json_at(evs, k);
            if (tc_is(e, "X", "cpu_op") && json_get_int(json_get(e, "args"), "External id", -2) == ext)
                op = json_get_str(e, "name");
        }
        const char *name = json_get_str(a, "name");
        if (!op || strcmp(op, set ? "fmlp::linear" : "fmlp::copy_") != 0) bad++;
        if (!set && (!name || !strstr(name, "Memcpy HtoD (Pinned -> Device)"))) bad++;
    }
    tu_check(memcpys == STEPS && bad == 0,
             "%s: %d memsets under fmlp::linear, %d pinned copies (\"Memcpy HtoD (Pinned -> Device)\") under "
             "fmlp::copy_ (%d not)",
             label, memsets, memcpys, bad);
}

static void check_trace(const char *path, const char *label, int kernels, bool copies)
{
    size_t len = 0;
    char *text = tu_read_file(path, &len);
    json_doc *d = text ? json_parse(text, len, NULL) : NULL;
    if (tu_check(d != NULL, "%s: trace parses", label)) {
        const json_value *root = json_doc_root(d), *evs = json_get(root, "traceEvents");
        tc_check_trace(root, label);
        tu_check(tc_check_correlations(evs, label) >= 2 * kernels, "%s: GPU activities joined", label);
        tu_check(tc_check_step_kernels(evs, label, kernels) == STEPS, "%s: %d steps", label, STEPS);
        if (copies) check_owners(evs, label);
    }
    json_free(d);
    free(text);
}

int main(void)
{
    tu_seed();
    char ceil_path[512];
    snprintf(ceil_path, sizeof ceil_path, "%s/no_ceilings_here.json", tu_tmpdir());
    remove(ceil_path);
    setenv("FMLP_CEILINGS_FILE", ceil_path, 1); /* the verdicts use the device's peaks */
    fmlp_ctx *ctx = ct_ctx();
    if (!ctx) return tu_finish();
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_GELU_TANH, false, FMLP_BF16};
    fmlp_mlp *m;
    if (!tu_check(fmlp_mlp_create(ctx, &d, tu_rand_u64(), &m) == FMLP_OK, "mlp: %s", fmlp_last_error())) return tu_finish();
    const int64_t rows = 8192;
    fmlp_tensor hx, hy, x, y;
    bool ok = fmlp_tensor_alloc_host(ctx, FMLP_BF16, rows, DIM, &hx) == FMLP_OK &&
              fmlp_tensor_alloc_host(ctx, FMLP_BF16, rows, DIM, &hy) == FMLP_OK &&
              fmlp_tensor_alloc(ctx, FMLP_BF16, rows, DIM, &x) == FMLP_OK &&
              fmlp_tensor_alloc(ctx, FMLP_BF16, rows, DIM, &y) == FMLP_OK;
    if (!tu_check(ok && hx.device == FMLP_DEVICE_CPU, "pinned host and device tensors: %s", fmlp_last_error()))
        return tu_finish();
    tu_fill(FMLP_BF16, hx.data, rows * DIM, -1, 1, NULL);
    char path[512];
    fmlp_profile_summary sum;

    step_work eager = {m, FMLP_MODE_EAGER, &x, &y, &hx};
    snprintf(path, sizeof path, "%s/cuda_kineto_eager.json", tu_tmpdir());
    if (profile(ctx, &eager, path, &sum)) check_trace(path, "eager + pinned copy", 5, true);

    step_work fused = {m, FMLP_MODE_FUSED, &x, &y, NULL};
    snprintf(path, sizeof path, "%s/cuda_kineto_fused.json", tu_tmpdir());
    if (profile(ctx, &fused, path, &sum)) {
        tu_check(sum.bound == FMLP_BOUND_COMPUTE && strstr(sum.reason, "(device properties)"),
                 "device-resident fused at 8192 rows: compute-bound against the datasheet peak: %s", sum.reason);
        tu_check(sum.copy_us < 0.05 * sum.wall_us, "device-resident: copies %.1f us of %.1f us", sum.copy_us, sum.wall_us);
    }

    fmlp_mlp_set_graph(m, true);
    snprintf(path, sizeof path, "%s/cuda_kineto_fused_graph.json", tu_tmpdir());
    if (profile(ctx, &fused, path, &sum)) check_trace(path, "fused from a CUDA graph", 2, false);
    fmlp_mlp_set_graph(m, false);

    /* Pageable host tensors: the forward copies 12.6 MB in and out. */
    void *px = malloc((size_t)(rows * DIM) * 2), *py = malloc((size_t)(rows * DIM) * 2);
    memcpy(px, hx.data, (size_t)(rows * DIM) * 2);
    fmlp_tensor vx = fmlp_tensor_view(px, FMLP_BF16, rows, DIM, DIM), vy = fmlp_tensor_view(py, FMLP_BF16, rows, DIM, DIM);
    step_work pageable = {m, FMLP_MODE_FUSED, &vx, &vy, NULL};
    snprintf(path, sizeof path, "%s/cuda_kineto_pageable.json", tu_tmpdir());
    if (profile(ctx, &pageable, path, &sum)) {
        tu_check(sum.bound == FMLP_BOUND_COPY && strstr(sum.reason, "between host and device") &&
                     strstr(sum.reason, "pageable") && sum.copy_bytes >= 2.0 * rows * DIM * 2,
                 "pageable host round trip: copy-bound, %.1f MB per step: %s", sum.copy_bytes / 1e6, sum.reason);
    }
    free(px);
    free(py);
    fmlp_tensor_free(ctx, &hx);
    fmlp_tensor_free(ctx, &hy);
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    fmlp_mlp_destroy(m);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
