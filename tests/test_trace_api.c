/* Why: the trace calls are public so that programs other than the CLI can
 * read traces; this test is such a program. It sees only fmlp.h (CMake
 * gives it no src/ include path) and holds the calls to what the CLI and
 * the profiler promise: the fixtures' writers, counts and 5 kernels per
 * step, a trace written by a live profiler read back to the live verdict,
 * the summary's header and table, the diff's 5 -> 2 story, an SVG file, and
 * clear failures (never a crash) for bad paths, bad options and NULLs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmlp.h"
#include "test_util.h"

static const char *data_path(const char *name)
{
    static char buf[1024];
    const char *dir = getenv("FMLP_TEST_DATA");
    snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "tests/data", name);
    return buf;
}

static fmlp_trace *open_ok(const char *path)
{
    fmlp_trace *t = NULL;
    fmlp_status s = fmlp_trace_open(path, &t);
    tu_check(s == FMLP_OK && t, "open %s (%s)", path, s == FMLP_OK ? "ok" : fmlp_last_error());
    return t;
}

static void check_torch_cpu(void)
{
    const char *path = data_path("torch_profiler_cpu_trace.json");
    fmlp_trace *t = open_ok(path);
    if (!t) return;
    fmlp_trace_info info;
    fmlp_status s = fmlp_trace_get_info(t, &info);
    tu_check(s == FMLP_OK && strcmp(info.origin, "torch.profiler") == 0 &&
                 strcmp(info.path, path) == 0 && info.spans == 90 && info.lanes == 1 && info.steps == 2,
             "torch CPU trace: torch.profiler's, 90 spans on 1 lane, 2 steps (got %zu, %d, %d)", info.spans, info.lanes,
             info.steps);
    fmlp_profile_summary sum;
    s = fmlp_trace_summary(t, &sum);
    tu_check(s == FMLP_OK && sum.steps == 2 && sum.kernels_per_step == 5 &&
                 sum.bound == FMLP_BOUND_COMPUTE,
             "torch CPU trace: 5 compute ops per step, compute-bound (got %d)", sum.kernels_per_step);
    int64_t prev_end = 0;
    for (int i = 0; i < info.steps; i++) {
        fmlp_trace_step st;
        s = fmlp_trace_step_info(t, i, &st);
        char want[32];
        snprintf(want, sizeof want, "ProfilerStep#%d", i + 1);
        tu_check(s == FMLP_OK && strcmp(st.name, want) == 0 && st.number == i + 1 && st.kernels == 5 &&
                     st.start_ns >= prev_end && st.end_ns > st.start_ns &&
                     st.wall_us == (double)(st.end_ns - st.start_ns) / 1e3 &&
                     st.kernel_us + st.overhead_us + st.idle_us > st.wall_us * 0.999 &&
                     st.kernel_us + st.overhead_us + st.idle_us < st.wall_us * 1.001,
                 "step %d: %s, 5 ops, in order, wall = kernels + overhead + idle", i, want);
        prev_end = st.end_ns;
    }
    fmlp_trace_step st;
    tu_expect_fail(fmlp_trace_step_info(t, 2, &st), FMLP_ERR_INVALID_ARGUMENT, "step 2 of 2");
    tu_expect_fail(fmlp_trace_step_info(t, -1, &st), FMLP_ERR_INVALID_ARGUMENT, "step -1");

    fmlp_table_options o = fmlp_table_options_default();
    o.analyses = true;
    char *text = NULL, head[1200];
    snprintf(head, sizeof head, "trace %s: written by torch.profiler, 90 spans on 1 lanes\n\n", path);
    tu_check(fmlp_trace_summary_string(t, &o, &text) == FMLP_OK && strncmp(text, head, strlen(head)) == 0 &&
                 strstr(text, "aten::mm") && strstr(text, "\nSelf CPU time total: ") &&
                 strstr(text, "\nVerdict: compute-bound, 5 compute ops per step"),
             "summary: header line, table, footer and verdict");
    free(text);
    text = NULL;
    o.analyses = false;
    o.row_limit = 2;
    tu_check(fmlp_trace_summary_string(t, &o, &text) == FMLP_OK && !strstr(text, "Verdict:") && strstr(text, "aten::gelu") &&
                 !strstr(text, "geglu_mlp"),
             "summary without analyses, 2 rows: no verdict, aten::gelu (row 2 by self CPU) kept, geglu_mlp (row 4) cut");
    free(text);
    text = NULL;
    o.sort_by = "nope";
    tu_expect_fail(fmlp_trace_summary_string(t, &o, &text), FMLP_ERR_INVALID_ARGUMENT, "sort_by nope");
    tu_check(text == NULL, "no string on failure");
    fmlp_trace_close(t);
}

static void check_torch_cuda(void)
{
    fmlp_trace *t = open_ok(data_path("torch_profiler_cuda_trace.json.gz"));
    if (!t) return;
    fmlp_profile_summary sum;
    tu_check(fmlp_trace_summary(t, &sum) == FMLP_OK && sum.kernels_per_step == 5 && sum.bound == FMLP_BOUND_OVERHEAD &&
                 sum.kernel_us < sum.wall_us,
             "torch CUDA trace (.json.gz): 5 kernels per step, overhead-bound");
    char *text = NULL;
    tu_check(fmlp_trace_summary_string(t, NULL, &text) == FMLP_OK && strstr(text, "Self CUDA %") &&
                 strstr(text, "\nSelf CUDA time total: ") && !strstr(text, "Verdict:"),
             "summary with default options: CUDA columns, no analyses");
    free(text);
    fmlp_trace_close(t);
}

typedef struct {
    fmlp_trace *t;
    int kernels;
} summary_job;

static void *summary_thread(void *arg)
{
    summary_job *j = arg;
    fmlp_profile_summary sum;
    j->kernels = fmlp_trace_summary(j->t, &sum) == FMLP_OK ? sum.kernels_per_step : -1;
    return NULL;
}

/* Profiles 2 steps of a small GeGLU in `mode`, exports the trace and
 * returns the live kernels per step (-1 on failure). */
static int profile_to(fmlp_ctx *ctx, fmlp_mlp *mlp, fmlp_mode mode, const char *path)
{
    const fmlp_mlp_desc *d = fmlp_mlp_get_desc(mlp);
    enum { ROWS = 8 };
    float *x = malloc(sizeof(float) * ROWS * (size_t)d->dim), *y = malloc(sizeof(float) * ROWS * (size_t)d->dim);
    tu_fill(FMLP_F32, x, ROWS * d->dim, -1, 1, NULL);
    tu_poison(FMLP_F32, y, ROWS * d->dim);
    fmlp_tensor tx = fmlp_tensor_view(x, FMLP_F32, ROWS, d->dim, d->dim), ty = fmlp_tensor_view(y, FMLP_F32, ROWS, d->dim, d->dim);
    fmlp_profiler_options po = fmlp_profiler_options_default();
    po.active = 2;
    po.repeat = 1;
    fmlp_profiler *p = NULL;
    fmlp_status s = fmlp_profiler_create(ctx, &po, &p);
    if (s == FMLP_OK) s = fmlp_profiler_start(p);
    for (int i = 0; i < 2 && s == FMLP_OK; i++) {
        s = fmlp_mlp_forward(mlp, mode, &tx, &ty);
        if (s == FMLP_OK) s = fmlp_profiler_step(p);
    }
    if (s == FMLP_OK) s = fmlp_profiler_stop(p);
    fmlp_profile_summary sum;
    if (s == FMLP_OK) s = fmlp_profiler_summary(p, &sum);
    if (s == FMLP_OK) s = fmlp_profiler_export_trace(p, path);
    tu_check(s == FMLP_OK, "%s: profiled and exported (%s)", fmlp_mode_name(mode), s == FMLP_OK ? path : fmlp_last_error());
    fmlp_profiler_destroy(p);
    free(x);
    free(y);
    return s == FMLP_OK ? sum.kernels_per_step : -1;
}

static void check_fmlp_traces(void)
{
    fmlp_ctx *ctx = NULL;
    fmlp_mlp *mlp = NULL;
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 32, 48, 0, 0, FMLP_ACT_GELU_TANH, false, FMLP_F32};
    fmlp_ctx_options co = fmlp_ctx_options_default();
    co.threads = 2;
    if (!tu_check(fmlp_ctx_create(&co, &ctx) == FMLP_OK && fmlp_mlp_create(ctx, &d, tu_rand_u64(), &mlp) == FMLP_OK,
                  "context and GeGLU MLP")) {
        fmlp_ctx_destroy(ctx);
        return;
    }
    char eager_path[600], fused_path[600];
    snprintf(eager_path, sizeof eager_path, "%s/trace_api_eager.json", tu_tmpdir());
    snprintf(fused_path, sizeof fused_path, "%s/trace_api_fused.json.gz", tu_tmpdir());
    int live_eager = profile_to(ctx, mlp, FMLP_MODE_EAGER, eager_path);
    int live_fused = profile_to(ctx, mlp, FMLP_MODE_FUSED, fused_path);
    fmlp_mlp_destroy(mlp);
    fmlp_ctx_destroy(ctx);
    tu_check(live_eager == 5 && live_fused == 2, "live: 5 kernels eager, 2 fused (got %d, %d)", live_eager, live_fused);

    fmlp_trace *tr[2] = {open_ok(eager_path), open_ok(fused_path)};
    if (!tr[0] || !tr[1]) {
        fmlp_trace_close(tr[0]);
        fmlp_trace_close(tr[1]);
        return;
    }
    fmlp_trace_info info;
    fmlp_status s = fmlp_trace_get_info(tr[1], &info);
    tu_check(s == FMLP_OK && strcmp(info.origin, "fmlp") == 0 && info.steps == 2 && info.lanes >= 1 && info.spans >= 12,
             "fused trace: written by fmlp, 2 steps, each step, fmlp::mlp, 2 ops and 2 kernels a span (%zu spans)",
             info.spans);
    /* Two threads ask for the first analysis of one handle at once. */
    summary_job jobs[2] = {{tr[0], 0}, {tr[0], 0}};
    pthread_t th;
    bool started = pthread_create(&th, NULL, summary_thread, &jobs[1]) == 0;
    summary_thread(&jobs[0]);
    if (started) pthread_join(th, NULL);
    tu_check(jobs[0].kernels == live_eager && (!started || jobs[1].kernels == live_eager),
             "read back, eager has the live run's kernels per step, asked from two threads (%d, %d)", jobs[0].kernels,
             jobs[1].kernels);
    fmlp_profile_summary sum;
    tu_check(fmlp_trace_summary(tr[1], &sum) == FMLP_OK && sum.kernels_per_step == live_fused,
             "read back (gzip'd), fused has the live run's kernels per step");

    char *text = NULL;
    tu_check(fmlp_trace_diff_string(tr, 2, &text) == FMLP_OK && strstr(text, "trace_api_eager.json") &&
                 strstr(text, "\nkernels per step ") && strstr(text, " 2 (-60%)\n") &&
                 strstr(text, "\ntime per step by kernel name"),
             "diff: file names as columns, 5 -> 2 (-60%%) kernels per step, time by kernel name");
    free(text);

    char svg[600];
    snprintf(svg, sizeof svg, "%s/trace_api.svg", tu_tmpdir());
    remove(svg);
    fmlp_svg_options so = fmlp_svg_options_default();
    so.step = 1;
    so.title = "eager <step 1>";
    size_t len = 0;
    tu_check(fmlp_trace_render_svg(tr[0], &so, svg) == FMLP_OK, "render ProfilerStep#1 (%s)", fmlp_last_error());
    text = tu_read_file(svg, &len);
    tu_check(text && strncmp(text, "<?xml", 5) == 0 && strstr(text, "<svg ") && strstr(text, "eager &lt;step 1&gt;") &&
                 strstr(text, "CPU thread") && len > 7 && strcmp(text + len - 7, "</svg>\n") == 0,
             "the SVG is a whole document with the escaped title and CPU lanes");
    free(text);
    so.step = 99;
    tu_expect_fail(fmlp_trace_render_svg(tr[0], &so, svg), FMLP_ERR_INVALID_ARGUMENT, "render a step not there");
    tu_check(strstr(fmlp_last_error(), "ProfilerStep#99") != NULL, "  the message names the step");
    so.step = -1;
    so.width = 10;
    tu_expect_fail(fmlp_trace_render_svg(tr[0], &so, svg), FMLP_ERR_INVALID_ARGUMENT, "render 10 pixels wide");
    tu_expect_fail(fmlp_trace_render_svg(tr[0], NULL, "/nonexistent/dir/x.svg"), FMLP_ERR_IO, "render into a missing dir");
    tu_check(strstr(fmlp_last_error(), "/nonexistent/dir/x.svg") != NULL, "  the message names the file");
    fmlp_trace_close(tr[0]);
    fmlp_trace_close(tr[1]);
}

static void check_failures(void)
{
    fmlp_trace *t = (fmlp_trace *)&t; /* poisoned: a failed open must set it to NULL */
    tu_expect_fail(fmlp_trace_open("/nonexistent/trace.json", &t), FMLP_ERR_IO, "open a missing file");
    tu_check(t == NULL && strstr(fmlp_last_error(), "/nonexistent/trace.json"), "  no handle, the message names the file");
    tu_expect_fail(fmlp_trace_parse("not json", 8, "bad.json", &t), FMLP_ERR_FORMAT, "parse text that is not JSON");
    tu_check(strstr(fmlp_last_error(), "bad.json") != NULL, "  the message names it");
    tu_expect_fail(fmlp_trace_parse("{\"a\": 1}", 8, "x.json", &t), FMLP_ERR_FORMAT, "JSON without traceEvents");

    const char *empty = "{\"traceEvents\": []}";
    tu_check(fmlp_trace_parse(empty, strlen(empty), "empty.json", &t) == FMLP_OK, "an empty trace opens");
    fmlp_trace_info info;
    tu_check(fmlp_trace_get_info(t, &info) == FMLP_OK && info.spans == 0 && info.lanes == 0 && info.steps == 0 &&
                 strcmp(info.path, "empty.json") == 0,
             "  with nothing in it");
    fmlp_profile_summary sum;
    tu_expect_fail(fmlp_trace_summary(t, &sum), FMLP_ERR_INVALID_ARGUMENT, "summary of an empty trace");
    fmlp_trace *two[2] = {t, t};
    char *text = NULL;
    tu_expect_fail(fmlp_trace_diff_string(two, 2, &text), FMLP_ERR_INVALID_ARGUMENT, "diff of empty traces");
    tu_expect_fail(fmlp_trace_diff_string(two, 1, &text), FMLP_ERR_INVALID_ARGUMENT, "diff of one trace");
    tu_expect_fail(fmlp_trace_diff_string(two, FMLP_TRACE_DIFF_MAX + 1, &text), FMLP_ERR_INVALID_ARGUMENT,
                   "diff of too many traces");
    fmlp_trace *with_null[2] = {t, NULL};
    tu_expect_fail(fmlp_trace_diff_string(with_null, 2, &text), FMLP_ERR_INVALID_ARGUMENT, "diff with a NULL trace");

    tu_expect_fail(fmlp_trace_open(NULL, &t), FMLP_ERR_INVALID_ARGUMENT, "open NULL path");
    tu_expect_fail(fmlp_trace_open(data_path("torch_profiler_cpu_trace.json"), NULL), FMLP_ERR_INVALID_ARGUMENT,
                   "open into NULL");
    tu_expect_fail(fmlp_trace_parse(NULL, 3, "x", &t), FMLP_ERR_INVALID_ARGUMENT, "parse NULL text");
    fmlp_trace_step st;
    tu_expect_fail(fmlp_trace_get_info(NULL, &info), FMLP_ERR_INVALID_ARGUMENT, "info of NULL");
    tu_expect_fail(fmlp_trace_get_info(two[0], NULL), FMLP_ERR_INVALID_ARGUMENT, "info into NULL");
    tu_expect_fail(fmlp_trace_summary(NULL, &sum), FMLP_ERR_INVALID_ARGUMENT, "summary of NULL");
    tu_expect_fail(fmlp_trace_step_info(NULL, 0, &st), FMLP_ERR_INVALID_ARGUMENT, "step of NULL");
    tu_expect_fail(fmlp_trace_summary_string(NULL, NULL, &text), FMLP_ERR_INVALID_ARGUMENT, "summary string of NULL");
    tu_expect_fail(fmlp_trace_summary_string(two[0], NULL, NULL), FMLP_ERR_INVALID_ARGUMENT, "summary string into NULL");
    tu_expect_fail(fmlp_trace_summary_print(two[0], NULL, NULL), FMLP_ERR_INVALID_ARGUMENT, "summary to a NULL FILE");
    tu_expect_fail(fmlp_trace_diff_print(two, 2, NULL), FMLP_ERR_INVALID_ARGUMENT, "diff to a NULL FILE");
    tu_expect_fail(fmlp_trace_diff_string(NULL, 2, &text), FMLP_ERR_INVALID_ARGUMENT, "diff of a NULL array");
    tu_expect_fail(fmlp_trace_render_svg(NULL, NULL, "x.svg"), FMLP_ERR_INVALID_ARGUMENT, "render NULL");
    tu_expect_fail(fmlp_trace_render_svg(two[0], NULL, NULL), FMLP_ERR_INVALID_ARGUMENT, "render to a NULL path");
    fmlp_trace_close(two[0]);
    fmlp_trace_close(NULL);

    tu_check(fmlp_table_sort_key_valid(NULL) && fmlp_table_sort_key_valid("") &&
                 fmlp_table_sort_key_valid("self_cuda_time_total") && !fmlp_table_sort_key_valid("nope"),
             "sort keys: NULL and \"\" are the default, columns are valid, others not");
}

int main(void)
{
    check_torch_cpu();
    check_torch_cuda();
    check_fmlp_traces();
    check_failures();
    return tu_finish();
}
