/* Why: a tensor-parallel run is read back as one trace per rank: each must
 * say which rank of which world wrote it (distributedInfo, as Holistic
 * Trace Analysis reads it), and the communication analysis must split a
 * step's GPU time into collectives, computation and their overlap exactly.
 * Hand-written traces with known intervals check the arithmetic (unions
 * over streams, clipping to a step); a live profiler with a rank set
 * checks the writer (spelled so that Holistic Trace Analysis, which finds a
 * file's rank with a pattern, reads it: checked with HTA's own source); `fmlp
 * trace summarize DIR` reads a folder of ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmlp.h"
#include "test_util.h"

/* A step over [0, step_us] and kernels (name, stream, start, duration) in us. */
static char *trace_text(int rank, int world, double step_us, const char *kernels)
{
    static char buf[8192];
    snprintf(buf, sizeof buf,
             "{\"schemaVersion\":1,\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":%d,\"world_size\":%d},"
             "\"traceEvents\":["
             "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":100,\"tid\":100,"
             "\"ts\":0,\"dur\":%g,\"args\":{\"External id\":1}}%s]}",
             rank, world, step_us, kernels);
    return buf;
}

#define KERNEL(name, stream, ts, dur)                                                                          \
    ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" name "\",\"pid\":0,\"tid\":" #stream ",\"ts\":" #ts           \
    ",\"dur\":" #dur ",\"args\":{\"External id\":0,\"device\":0,\"stream\":" #stream ",\"correlation\":" #ts "}}"

/* compute [10, 50) on stream 7 and [60, 65) on stream 9; an all-reduce [40, 70) on stream 8 */
static const char *const KERNELS = KERNEL("fmlp_gemm_bf16_gemv8", 7, 10, 40) KERNEL("fmlp_gemm_bf16_gemv8", 9, 60, 5)
    KERNEL("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 8, 40, 30);

static bool near(double a, double b) { return a > b - 1e-6 && a < b + 1e-6; }

static void arithmetic(void)
{
    const char *text = trace_text(1, 2, 100, KERNELS);
    fmlp_trace *t = NULL;
    if (!tu_check(fmlp_trace_parse(text, strlen(text), "ranks.json", &t) == FMLP_OK, "parse: %s", fmlp_last_error()))
        return;
    fmlp_trace_info in;
    memset(&in, 0, sizeof in);
    const bool got = fmlp_trace_get_info(t, &in) == FMLP_OK;
    tu_check(got && in.rank == 1 && in.world_size == 2 && strcmp(in.dist_backend, "nccl") == 0,
             "distributedInfo read: rank %d of %d, backend %s", in.rank, in.world_size, got ? in.dist_backend : "-");
    fmlp_trace_comm c;
    for (int step = -1; step <= 0; step++) {
        const bool ok = fmlp_trace_comm_info(t, step, &c) == FMLP_OK;
        tu_check(ok && near(c.comm_us, 30) && near(c.compute_us, 45) && near(c.overlap_us, 15) && c.comm_kernels == 1 &&
                     c.compute_kernels == 2,
                 "%s: 30 us communicating, 45 computing, 15 both (got %.3f, %.3f, %.3f; %d and %d kernels)",
                 step < 0 ? "whole trace" : "step 0", c.comm_us, c.compute_us, c.overlap_us, c.comm_kernels,
                 c.compute_kernels);
    }
    tu_expect_fail(fmlp_trace_comm_info(t, 1, &c), FMLP_ERR_INVALID_ARGUMENT, "step 1 of a one-step trace");
    fmlp_trace_close(t);

    /* the step ends at 45 us: everything is clipped to it */
    text = trace_text(0, 2, 45, KERNELS);
    if (tu_check(fmlp_trace_parse(text, strlen(text), "clipped.json", &t) == FMLP_OK, "parse: %s", fmlp_last_error())) {
        bool ok = fmlp_trace_comm_info(t, 0, &c) == FMLP_OK;
        tu_check(ok && near(c.comm_us, 5) && near(c.compute_us, 35) && near(c.overlap_us, 5),
                 "a step ending at 45 us: 5 us communicating, 35 computing, 5 both (got %.3f, %.3f, %.3f)", c.comm_us,
                 c.compute_us, c.overlap_us);
        fmlp_trace_close(t);
    }

    /* no distributedInfo, or one that makes no sense: none given */
    text = "{\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":3,\"world_size\":2},\"traceEvents\":[]}";
    if (tu_check(fmlp_trace_parse(text, strlen(text), "bad.json", &t) == FMLP_OK, "parse: %s", fmlp_last_error())) {
        const bool ok = fmlp_trace_get_info(t, &in) == FMLP_OK;
        tu_check(ok && in.world_size == 0 && in.rank == 0, "rank 3 of 2 reads as no world (%d of %d)", in.rank,
                 in.world_size);
        fmlp_trace_close(t);
    }
}

/* A live profiler that knows its rank writes it. */
static void writer(const char *dir)
{
    fmlp_ctx *ctx = NULL;
    if (!tu_check(fmlp_ctx_create(NULL, &ctx) == FMLP_OK, "context: %s", fmlp_last_error())) return;
    fmlp_profiler_options o = fmlp_profiler_options_default();
    o.rank = 4;
    o.world_size = 4;
    fmlp_profiler *p = NULL;
    tu_expect_fail(fmlp_profiler_create(ctx, &o, &p), FMLP_ERR_INVALID_ARGUMENT, "rank 4 of a world of 4");
    const fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 64, 128, 0, 0, FMLP_ACT_GELU_TANH, false, FMLP_F32};
    fmlp_mlp *m = NULL;
    fmlp_tensor x, y;
    fmlp_status s = fmlp_mlp_create(ctx, &d, 1, &m);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, FMLP_F32, 2, 64, &x);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, FMLP_F32, 2, 64, &y);
    if (s == FMLP_OK) tu_fill(FMLP_F32, x.data, 128, -1, 1, NULL);
    for (int r = 0; r < 2 && s == FMLP_OK; r++) {
        o.rank = r;
        o.world_size = 2;
        s = fmlp_profiler_create(ctx, &o, &p);
        if (s == FMLP_OK) s = fmlp_profiler_start(p);
        for (int i = 0; i < 2 && s == FMLP_OK; i++) {
            s = fmlp_mlp_forward(m, FMLP_MODE_FUSED, &x, &y);
            if (s == FMLP_OK) s = fmlp_profiler_step(p);
        }
        if (s == FMLP_OK) s = fmlp_profiler_stop(p);
        char path[600];
        snprintf(path, sizeof path, "%s/rank%d.json", dir, r);
        if (s == FMLP_OK) s = fmlp_profiler_export_trace(p, path);
        fmlp_profiler_destroy(p);
        fmlp_trace *t = NULL;
        fmlp_trace_info in;
        memset(&in, 0, sizeof in);
        in.dist_backend = "-";
        if (s == FMLP_OK) s = fmlp_trace_open(path, &t);
        if (s == FMLP_OK) s = fmlp_trace_get_info(t, &in);
        tu_check(s == FMLP_OK && in.rank == r && in.world_size == 2 && strcmp(in.dist_backend, "nccl") == 0,
                 "rank %d's trace says rank %d of %d (%s): %s", r, in.rank, in.world_size, in.dist_backend,
                 s == FMLP_OK ? "" : fmlp_last_error());
        fmlp_trace_close(t);
        /* Holistic Trace Analysis finds the rank with the pattern "rank":\s+(\d+) */
        size_t len = 0;
        char *text = s == FMLP_OK ? tu_read_file(path, &len) : NULL;
        char want[32];
        snprintf(want, sizeof want, "\"rank\": %d,", r);
        tu_check(text && strstr(text, want), "rank %d's trace spells %s as Holistic Trace Analysis looks for it", r, want);
        free(text);
    }
    tu_check(s == FMLP_OK, "profiled forwards: %s", s == FMLP_OK ? "" : fmlp_last_error());
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    fmlp_mlp_destroy(m);
    fmlp_ctx_destroy(ctx);
}

static void cli(const char *dir)
{
    const char *fmlp = getenv("FMLP_CLI");
    if (!fmlp || !*fmlp) {
        tu_skip("FMLP_CLI is not set (ctest sets it to the built fmlp)");
        return;
    }
    char cmd[2048], out[700];
    snprintf(out, sizeof out, "%s/summary.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s' trace summarize '%s' > '%s' 2>&1", fmlp, dir, out);
    const int rc = system(cmd);
    size_t len = 0;
    char *text = tu_read_file(out, &len);
    tu_check(rc == 0 && text && strstr(text, "2 traces, world size 2 (nccl)") && strstr(text, "rank 0: ") &&
                 strstr(text, "rank 1: ") && strstr(text, "all ranks, mean per step"),
             "fmlp trace summarize DIR: both ranks and the mean (status %d):\n%s", rc, text ? text : "(no output)");
    free(text);
}

int main(void)
{
    tu_seed();
    arithmetic();
    char dir[512], cmd[1100];
    snprintf(dir, sizeof dir, "%s/trace_ranks", tu_tmpdir());
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (tu_check(system(cmd) == 0, "scratch folder %s", dir)) {
        writer(dir);
        cli(dir);
    }
    return tu_finish();
}
