/* Why: verdicts are only as good as the ceilings they read. This pins down
 * the cache: values read back as written, a cache measured with another
 * thread count or damaged is treated as missing (never trusted, never a
 * crash), nothing is measured unless asked, a context keeps what it read
 * (a cache rewritten later reaches new contexts, not old ones), a
 * finished window carries the context's ceilings into its analyses, and a
 * path that is a FIFO, a directory or too large is refused, not read.
 * Measuring itself is timing, left to `fmlp info --ceilings`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "profiler/prof.h"
#include "test_util.h"

static fmlp_ctx *three_thread_ctx(void)
{
    fmlp_ctx_options co = fmlp_ctx_options_default();
    co.threads = 3;
    fmlp_ctx *ctx = NULL;
    if (fmlp_ctx_create(&co, &ctx) != FMLP_OK) tu_check(false, "3-thread context: %s", fmlp_last_error());
    return ctx;
}

/* fmlp_ceilings_get on a fresh context, which reads the cache file. */
static bool fresh_get(fmlp_ceilings *c)
{
    fmlp_ctx *ctx = three_thread_ctx();
    bool ok = ctx && fmlp_ceilings_get(ctx, false, c) == FMLP_OK;
    fmlp_ctx_destroy(ctx);
    return ok;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int main(void)
{
    char path[512], text[512];
    snprintf(path, sizeof path, "%s/ceilings_test/sub/ceilings.json", tu_tmpdir());
    setenv("FMLP_CEILINGS_FILE", path, 1);
    remove(path);

    fmlp_ceilings c;
    tu_check(fresh_get(&c) && !c.measured, "no cache, not asked to measure: not measured");

    snprintf(path, sizeof path, "%s/ceilings_test.json", tu_tmpdir());
    setenv("FMLP_CEILINGS_FILE", path, 1);
    snprintf(text, sizeof text,
             "{\"version\":2,\"threads\":3,\"cpu\":{\"gemm_gflops_f32\":100.5,\"gemm_gflops_bf16\":400,"
             "\"mem_gbps\":20},\"gpu\":{\"gemm_tflops_bf16\":0,\"mem_gbps\":0,\"launch_us\":0}}");
    write_file(path, text);
    fmlp_ctx *ctx = three_thread_ctx();
    if (!ctx) return tu_finish();
    tu_check(fmlp_ceilings_get(ctx, false, &c) == FMLP_OK && c.measured && c.gemm_gflops_f32 == 100.5 &&
                 c.gemm_gflops_bf16 == 400 && c.mem_gbps == 20,
             "cache read back as written");

    /* The context holds what it read: a rewritten cache reaches new
     * contexts only. */
    snprintf(text, sizeof text,
             "{\"version\":2,\"threads\":3,\"cpu\":{\"gemm_gflops_f32\":7,\"gemm_gflops_bf16\":9,\"mem_gbps\":3}}");
    write_file(path, text);
    tu_check(fmlp_ceilings_get(ctx, false, &c) == FMLP_OK && c.measured && c.gemm_gflops_bf16 == 400,
             "the context keeps the ceilings it read first");
    tu_check(fresh_get(&c) && c.measured && c.gemm_gflops_bf16 == 9, "a new context reads the rewritten cache");

    /* A finished window carries the context's ceilings into its analyses. */
    fmlp_profiler *p;
    fmlp_profiler_options o = fmlp_profiler_options_default();
    o.active = 1;
    fmlp_profiler_create(ctx, &o, &p);
    fmlp_profiler_start(p);
    fmlp_range_push(ctx, "r");
    fmlp_range_pop(ctx);
    fmlp_profiler_step(p);
    fmlp_profiler_stop(p);
    tu_check(p->have_done && p->done.ceil.have && p->done.ceil.gemm_gflops_bf16 == 400,
             "the saved window holds the context's ceilings");
    char *t = NULL;
    fmlp_table_options to = fmlp_table_options_default();
    to.analyses = true;
    tu_check(fmlp_profiler_table_string(p, &to, &t) == FMLP_OK && strstr(t, "Ceilings (measured): GEMM 100.5 GFLOP/s f32, 400.0 GFLOP/s bf16; memory read 20.00 GB/s"),
             "the analyses print them");
    free(t);
    fmlp_profiler_destroy(p);

    snprintf(text, sizeof text,
             "{\"version\":2,\"threads\":8,\"cpu\":{\"gemm_gflops_f32\":1,\"gemm_gflops_bf16\":1,\"mem_gbps\":1}}");
    write_file(path, text);
    tu_check(fresh_get(&c) && !c.measured, "a cache measured with 8 threads is not used by a 3-thread context");
    /* version 1 timed a copy (read and write bytes), not a read: measured again */
    snprintf(text, sizeof text,
             "{\"version\":1,\"threads\":3,\"cpu\":{\"gemm_gflops_f32\":7,\"gemm_gflops_bf16\":9,\"mem_gbps\":3}}");
    write_file(path, text);
    tu_check(fresh_get(&c) && !c.measured, "a version-1 cache (a copy's bandwidth) is not used");
    static const char *const damaged[] = {"", "{", "[1,2]", "{\"version\":2,\"threads\":3,\"cpu\":{}}",
                                          "{\"version\":2,\"threads\":3,\"cpu\":{\"gemm_gflops_f32\":\"x\"}}",
                                          "{\"version\":2,\"threads\":3,\"cpu\":{\"gemm_gflops_f32\":-1,\"mem_gbps\":5}}"};
    for (size_t i = 0; i < sizeof damaged / sizeof *damaged; i++) {
        write_file(path, damaged[i]);
        tu_check(fresh_get(&c) && !c.measured, "damaged cache %zu is treated as missing", i);
    }
    /* What is not a small regular file is refused, never opened: a FIFO
     * would block the first reader forever. */
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s/ceilings_fifo", tu_tmpdir());
    remove(fifo);
    if (mkfifo(fifo, 0600) == 0) {
        setenv("FMLP_CEILINGS_FILE", fifo, 1);
        fmlp_ctx *fc = three_thread_ctx();
        if (tu_expect_fail(fmlp_ceilings_get(fc, false, &c), FMLP_ERR_IO, "a FIFO as the cache"))
            tu_check(strstr(fmlp_last_error(), "FIFO") && strstr(fmlp_last_error(), "FMLP_CEILINGS_FILE"),
                     "  the message names it and the variable: %s", fmlp_last_error());
        fmlp_ctx_destroy(fc);
        remove(fifo);
    }
    setenv("FMLP_CEILINGS_FILE", tu_tmpdir(), 1);
    fmlp_ctx *dc = three_thread_ctx();
    tu_expect_fail(fmlp_ceilings_get(dc, false, &c), FMLP_ERR_IO, "a directory as the cache");
    fmlp_ctx_destroy(dc);
    char *big = calloc(70000, 1);
    memset(big, ' ', 69999);
    setenv("FMLP_CEILINGS_FILE", path, 1);
    write_file(path, big);
    free(big);
    dc = three_thread_ctx();
    if (tu_expect_fail(fmlp_ceilings_get(dc, false, &c), FMLP_ERR_IO, "a 70 KB cache"))
        tu_check(strstr(fmlp_last_error(), "65536") != NULL, "  refused by its 64 KiB bound: %s", fmlp_last_error());
    fmlp_ctx_destroy(dc);
    remove(path);

    /* A real measurement: the read's bandwidth is a positive, finite rate,
     * saved as version 2 and read back by the next context. */
    fmlp_ceilings m;
    if (tu_check(fmlp_ceilings_measure(ctx, &m) == FMLP_OK, "measure the ceilings: %s", fmlp_last_error())) {
        tu_check(m.measured && m.mem_gbps > 0.1 && m.mem_gbps < 1e5 && m.gemm_gflops_f32 > 0,
                 "measured memory read %.2f GB/s, f32 GEMM %.2f GFLOP/s", m.mem_gbps, m.gemm_gflops_f32);
        FILE *f = fopen(path, "r");
        char saved[512] = {0};
        if (f) {
            size_t n = fread(saved, 1, sizeof saved - 1, f);
            saved[n] = 0;
            fclose(f);
        }
        tu_check(strstr(saved, "\"version\":2,") != NULL, "the cache is written as version 2: %s", saved);
        tu_check(fresh_get(&c) && c.measured && c.mem_gbps == m.mem_gbps, "a new context reads the measurement back");
        remove(path);
    }

    tu_expect_fail(fmlp_ceilings_get(NULL, false, &c), FMLP_ERR_INVALID_ARGUMENT, "NULL ctx");
    tu_expect_fail(fmlp_ceilings_measure(ctx, NULL), FMLP_ERR_INVALID_ARGUMENT, "NULL out");
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
