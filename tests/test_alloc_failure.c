/* Why: any host allocation can fail, and each failure must come back as
 * FMLP_ERR_OUT_OF_MEMORY from the call that needed it, with everything
 * made so far still destroyable, nothing leaked and no half-written file.
 * One whole use of the library on the CPU (create a context, read a
 * description and weights from safetensors, create the MLP, profile
 * forwards in each mode, print the table, export the trace, destroy it all)
 * is run again and again, the Nth allocation failing in run N, until a run
 * reaches its end with no failure injected. Leaks are LeakSanitizer's to
 * find in the sanitizer build; here each run must end with a clean status,
 * and a run that reports success must have computed y and written a trace
 * that reads back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "test_util.h"

enum { DIM = 16, HIDDEN = 24, ROWS = 4 };

typedef struct {
    const char *weights, *trace;
    size_t spans; /* the trace's span count without failures, once known */
    float x[ROWS * DIM], y[ROWS * DIM];
    double ref[ROWS * DIM];
} scenario;

typedef struct {
    scenario *sc;
    int windows;
    fmlp_status status;
} ready;

/* The closed window's table and trace, as `fmlp mlp --trace-dir` makes
 * them. */
static void on_ready(fmlp_profiler *p, void *user)
{
    ready *r = user;
    r->windows++;
    char *table = NULL;
    fmlp_table_options to = fmlp_table_options_default();
    to.analyses = true;
    fmlp_status s = fmlp_profiler_table_string(p, &to, &table);
    free(table);
    if (s == FMLP_OK) s = fmlp_profiler_export_trace(p, r->sc->trace);
    if (r->status == FMLP_OK) r->status = s;
}

/* The profiled part: a window of two steps of forwards in each mode. */
static fmlp_status profile(fmlp_ctx *ctx, fmlp_mlp *m, scenario *sc)
{
    ready r = {sc, 0, FMLP_OK};
    fmlp_profiler_options po = fmlp_profiler_options_default();
    po.wait = po.warmup = 0;
    po.active = 2;
    po.repeat = 1;
    po.record_shapes = po.profile_memory = po.with_flops = true;
    po.on_trace_ready = on_ready;
    po.user = &r;
    fmlp_profiler *p;
    fmlp_status s = fmlp_profiler_create(ctx, &po, &p);
    if (s != FMLP_OK) return s;
    fmlp_tensor tx = fmlp_tensor_view(sc->x, FMLP_F32, ROWS, DIM, DIM);
    fmlp_tensor ty = fmlp_tensor_view(sc->y, FMLP_F32, ROWS, DIM, DIM);
    s = fmlp_profiler_start(p);
    for (int i = 0; i < 2 && s == FMLP_OK; i++) {
        s = fmlp_mlp_forward(m, FMLP_MODE_EAGER, &tx, &ty);
        if (s == FMLP_OK) s = fmlp_mlp_forward(m, FMLP_MODE_COMPILED, &tx, &ty);
        if (s == FMLP_OK) s = fmlp_mlp_forward(m, FMLP_MODE_FUSED, &tx, &ty);
        if (s == FMLP_OK) s = fmlp_profiler_step(p);
    }
    fmlp_status stop = fmlp_profiler_stop(p);
    if (s == FMLP_OK) s = stop;
    if (s == FMLP_OK) s = r.status;
    if (s == FMLP_OK && r.windows != 1) s = fmlp_fail(FMLP_ERR_INTERNAL, "%d windows closed, not 1", r.windows);
    fmlp_profiler_destroy(p);
    return s;
}

/* Create -> load -> forward -> profile -> export -> destroy; the first
 * failing status. */
static fmlp_status run(scenario *sc)
{
    fmlp_ctx_options co = fmlp_ctx_options_default();
    co.threads = 2;
    fmlp_ctx *ctx;
    fmlp_status s = fmlp_ctx_create(&co, &ctx);
    if (s != FMLP_OK) return s;
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 1, 1, 0, 0, FMLP_ACT_GELU_TANH, false, FMLP_F32};
    fmlp_mlp *m = NULL;
    s = fmlp_mlp_desc_from_safetensors(sc->weights, NULL, &d);
    if (s == FMLP_OK) s = fmlp_mlp_create(ctx, &d, 1, &m);
    if (s == FMLP_OK) s = fmlp_mlp_load_safetensors(m, sc->weights, NULL);
    if (s == FMLP_OK) s = profile(ctx, m, sc);
    fmlp_mlp_destroy(m);
    fmlp_ctx_destroy(ctx);
    return s;
}

/* What a successful run must leave: y as the reference computes it and a
 * trace that opens, holds the 2 steps and every span. */
static bool results_right(scenario *sc, const char **why)
{
    if (tu_rel_err(FMLP_F32, sc->y, DIM, sc->ref, DIM, ROWS, DIM) > tu_tol(FMLP_F32)) return *why = "y is wrong", false;
    fmlp_trace *t;
    if (fmlp_trace_open(sc->trace, &t) != FMLP_OK) return *why = "the trace does not open", false;
    fmlp_trace_info info;
    bool ok = fmlp_trace_get_info(t, &info) == FMLP_OK && info.steps == 2 && (!sc->spans || info.spans == sc->spans);
    if (ok && !sc->spans) sc->spans = info.spans;
    fmlp_trace_close(t);
    if (!ok) *why = "the trace lacks steps or spans";
    return ok;
}

/* A forward that fails ends the window early, and stopping exports what
 * it holds: a shorter trace, but a whole one. */
static bool trace_opens(const char *path)
{
    fmlp_trace *t;
    if (fmlp_trace_open(path, &t) != FMLP_OK) return false;
    fmlp_trace_close(t);
    return true;
}

/* A small GeGLU's weights in a file, and the double reference of x. */
static bool setup(scenario *sc, char *weights, char *trace, size_t cap)
{
    snprintf(weights, cap, "%s/alloc_failure_w.safetensors", tu_tmpdir());
    snprintf(trace, cap, "%s/alloc_failure_trace.json", tu_tmpdir());
    sc->weights = weights;
    sc->trace = trace;
    fmlp_ctx *ctx = tu_ctx(1);
    fmlp_mlp *m;
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_GELU_TANH, true, FMLP_F32};
    if (!ctx) return false;
    bool ok = fmlp_mlp_create(ctx, &d, 42, &m) == FMLP_OK;
    double xd[ROWS * DIM];
    tu_fill(FMLP_F32, sc->x, ROWS * DIM, -1, 1, xd);
    ok = ok && fmlp_mlp_save_safetensors(m, weights, NULL) == FMLP_OK && fmlp_mlp_reference(m, xd, ROWS, sc->ref) == FMLP_OK;
    if (ok) fmlp_mlp_destroy(m);
    fmlp_ctx_destroy(ctx);
    return ok;
}

int main(void)
{
    tu_seed();
    char weights[600], trace[600], ceilings[600];
    /* The verdicts read a ceilings cache: one the test controls. */
    snprintf(ceilings, sizeof ceilings, "%s/alloc_failure_ceilings.json", tu_tmpdir());
    FILE *f = fopen(ceilings, "w");
    if (f) {
        fputs("{\"version\":2,\"threads\":2,\"cpu\":{\"gemm_gflops_f32\":100,\"gemm_gflops_bf16\":400,\"mem_gbps\":20}}", f);
        fclose(f);
    }
    setenv("FMLP_CEILINGS_FILE", ceilings, 1);
    scenario *sc = calloc(1, sizeof *sc);
    if (!tu_check(sc && setup(sc, weights, trace, sizeof weights), "weights file and reference")) return tu_finish();

    const char *why = "";
    tu_poison(FMLP_F32, sc->y, ROWS * DIM);
    tu_check(run(sc) == FMLP_OK && results_right(sc, &why), "the run with no failure: %s", why);

    int64_t n = 1, oom = 0, ok_anyway = 0, bad = 0;
    for (;; n++) {
        tu_poison(FMLP_F32, sc->y, ROWS * DIM);
        unlink(sc->trace);
        fmlp_clear_error();
        fmlp_alloc_test_arm(n, 0);
        fmlp_status s = run(sc);
        bool fired = fmlp_alloc_test_fired();
        fmlp_alloc_test_disarm();
        if (!fired) {
            tu_check(s == FMLP_OK && results_right(sc, &why), "past the last of %lld allocations the run succeeds: %s",
                     (long long)n - 1, fmlp_status_name(s));
            break;
        }
        const char *wrong = NULL;
        if (s == FMLP_ERR_OUT_OF_MEMORY) {
            oom++;
            if (!fmlp_last_error()[0]) wrong = "no message";
            else if (access(sc->trace, F_OK) == 0 && !trace_opens(sc->trace)) wrong = "a broken trace file was left";
        } else if (s == FMLP_OK) {
            /* A failure the library works around is fine only if the
             * results are whole: reading the ceilings cache (the verdicts
             * then go without, as with no cache) and the empty window a
             * stop opens for the next start. */
            ok_anyway++;
            if (!results_right(sc, &why)) wrong = why;
        } else {
            wrong = fmlp_status_name(s);
        }
        if (wrong) {
            bad++;
            printf("  allocation %lld failing: %s (%s: %s)\n", (long long)n, wrong, fmlp_status_name(s), fmlp_last_error());
        }
    }
    tu_check(n > 50 && bad == 0,
             "each of %lld allocations failing: %lld out of memory, %lld worked around with whole results, %lld wrong",
             (long long)n - 1, (long long)oom, (long long)ok_anyway, (long long)bad);
    free(sc);
    return tu_finish();
}
