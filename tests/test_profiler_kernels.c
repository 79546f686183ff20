/* Why: the tutorial's story is told by kernel counts: a GeGLU MLP runs 5
 * kernels per step in eager mode, 4 compiled, 2 fused. This profiles real
 * forwards of the tutorial's shape in each mode, exports the trace and
 * counts distinct correlation ids of kernel events inside each
 * ProfilerStep span (a CPU kernel has one event per worker lane, all with
 * its launch's correlation), then holds the trace to the format rules,
 * checks nesting fmlp::mlp > op > kernel, and profiles two threads'
 * forwards at once. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "test_util.h"
#include "trace_check.h"

enum { ROWS = 128, DIM = 768, HIDDEN = 3072 };

typedef struct {
    fmlp_mlp *mlp;
    fmlp_mode mode;
    fmlp_tensor x, y;
} fwd;

typedef struct {
    const char *path;
    int windows;
} export_ctx;

static void export_on_ready(fmlp_profiler *p, void *user)
{
    export_ctx *e = user;
    e->windows++;
    fmlp_status s = fmlp_profiler_export_trace(p, e->path);
    tu_check(s == FMLP_OK, "export from on_trace_ready (%s)", s == FMLP_OK ? e->path : fmlp_last_error());
}

/* For each kernel event on the thread that ran the op: its External id's op
 * is an fmlp:: op that encloses it, inside an fmlp::mlp. */
static int bad_nesting(const json_value *evs)
{
    int bad = 0;
    for (size_t i = 0; i < json_len(evs); i++) {
        const json_value *k = json_at(evs, i);
        const char *cat = json_get_str(k, "cat");
        if (!cat || strcmp(cat, "kernel") != 0) continue;
        int64_t ext = json_get_int(json_get(k, "args"), "External id", 0);
        const json_value *op = NULL;
        for (size_t j = 0; j < json_len(evs) && !op; j++) {
            const json_value *o = json_at(evs, j);
            const char *oc = json_get_str(o, "cat");
            if (oc && strcmp(oc, "cpu_op") == 0 && json_get_int(json_get(o, "args"), "External id", -1) == ext) op = o;
        }
        if (!op || strncmp(json_get_str(op, "name"), "fmlp::", 6) != 0) {
            bad++;
            continue;
        }
        if (json_get_int(k, "tid", 0) == json_get_int(op, "tid", 1)) {
            double ka = json_get_num(k, "ts", 0), kb = ka + json_get_num(k, "dur", 0);
            double oa = json_get_num(op, "ts", 0), ob = oa + json_get_num(op, "dur", 0);
            if (ka < oa || kb > ob) bad++;
        }
    }
    return bad;
}

static void profile_mode(fmlp_ctx *ctx, fwd *f, int want)
{
    const char *mode = fmlp_mode_name(f->mode);
    char path[512];
    snprintf(path, sizeof path, "%s/kernels_%s.json", tu_tmpdir(), mode);
    export_ctx ec = {path, 0};
    fmlp_profiler_options o = fmlp_profiler_options_default();
    o.wait = 1;
    o.warmup = 1;
    o.active = 2;
    o.repeat = 1;
    o.record_shapes = true;
    o.profile_memory = true;
    o.with_flops = true;
    o.on_trace_ready = export_on_ready;
    o.user = &ec;
    fmlp_profiler *p;
    tu_check(fmlp_profiler_create(ctx, &o, &p) == FMLP_OK, "%s: profiler", mode);
    fmlp_profiler_start(p);
    for (int i = 0; i < 4; i++) {
        fmlp_range_push(ctx, "forward");
        fmlp_status s = fmlp_mlp_forward(f->mlp, f->mode, &f->x, &f->y);
        fmlp_range_pop(ctx);
        if (s != FMLP_OK) tu_check(false, "%s forward: %s", mode, fmlp_last_error());
        fmlp_profiler_step(p);
    }
    fmlp_profiler_stop(p);
    tu_check(ec.windows == 1, "%s: one window saved", mode);
    fmlp_profile_summary sum;
    fmlp_status ss = fmlp_profiler_summary(p, &sum);
    tu_check(ss == FMLP_OK && sum.steps == 2 && sum.kernels_per_step == want,
             "%s: summary says %d kernels per step over 2 steps (got %d over %d): %s", mode, want, sum.kernels_per_step,
             sum.steps, sum.reason);
    char *table = NULL;
    fmlp_table_options t = fmlp_table_options_default();
    t.analyses = true;
    tu_check(fmlp_profiler_table_string(p, &t, &table) == FMLP_OK && strstr(table, "fmlp::mlp") &&
                 strstr(table, "ProfilerStep*") && strstr(table, "Self CPU time total: ") && strstr(table, "Verdict: "),
             "%s: table has fmlp::mlp, ProfilerStep*, the footer and a verdict", mode);
    if (table && f->mode == FMLP_MODE_EAGER) printf("%s", table);
    free(table);
    fmlp_profiler_destroy(p);

    size_t len = 0;
    char *text = tu_read_file(path, &len);
    json_doc *d = text ? json_parse(text, len, NULL) : NULL;
    tu_check(d != NULL, "%s: trace file parses", mode);
    if (!d) {
        free(text);
        return;
    }
    const json_value *root = json_doc_root(d), *evs = json_get(root, "traceEvents");
    tc_check_trace(root, mode);
    const int steps = tc_check_step_kernels(evs, mode, want);
    tu_check(steps == 2, "%s: 2 ProfilerStep spans (steps 2 and 3), got %d", mode, steps);
    tu_check(bad_nesting(evs) == 0, "%s: every kernel's External id is an enclosing fmlp:: op", mode);
    json_free(d);
    free(text);
}

static void *forward_loop(void *arg)
{
    fwd *f = arg;
    for (int i = 0; i < 3; i++) fmlp_mlp_forward(f->mlp, f->mode, &f->x, &f->y);
    return NULL;
}

/* Two threads forward at once under one profiler: both threads' spans
 * nest correctly and every forward's kernels are there. */
static void test_concurrent(fmlp_ctx *ctx, fwd *a, fwd *b)
{
    char path[512];
    snprintf(path, sizeof path, "%s/kernels_concurrent.json", tu_tmpdir());
    fmlp_profiler *p;
    fmlp_profiler_create(ctx, NULL, &p);
    fmlp_profiler_start(p);
    pthread_t ta, tb;
    pthread_create(&ta, NULL, forward_loop, a);
    pthread_create(&tb, NULL, forward_loop, b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    fmlp_profiler_stop(p);
    tu_check(fmlp_profiler_export_trace(p, path) == FMLP_OK, "concurrent: export");
    fmlp_profiler_destroy(p);
    size_t len = 0;
    char *text = tu_read_file(path, &len);
    json_doc *d = text ? json_parse(text, len, NULL) : NULL;
    tu_check(d != NULL, "concurrent: parses");
    if (d) {
        const json_value *root = json_doc_root(d);
        tc_check_trace(root, "concurrent");
        int k = tc_kernels_in(json_get(root, "traceEvents"), 0, 1e30);
        tu_check(k == 6 * 5, "concurrent: 2 threads x 3 eager forwards x 5 kernels = 30 launches (got %d)", k);
    }
    json_free(d);
    free(text);
}

int main(void)
{
    tu_seed();
    fmlp_ctx_options co = fmlp_ctx_options_default();
    co.threads = 4;
    fmlp_ctx *ctx;
    if (fmlp_ctx_create(&co, &ctx) != FMLP_OK) {
        tu_check(false, "context: %s", fmlp_last_error());
        return tu_finish();
    }
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_GELU_TANH, false, FMLP_BF16};
    fmlp_mlp *mlp;
    if (fmlp_mlp_create(ctx, &d, tu_rand_u64(), &mlp) != FMLP_OK) {
        tu_check(false, "mlp: %s", fmlp_last_error());
        return tu_finish();
    }
    fwd f[2];
    for (int i = 0; i < 2; i++) {
        f[i].mlp = mlp;
        f[i].mode = FMLP_MODE_EAGER;
        fmlp_tensor_alloc(ctx, FMLP_BF16, ROWS, DIM, &f[i].x);
        fmlp_tensor_alloc(ctx, FMLP_BF16, ROWS, DIM, &f[i].y);
        tu_fill(FMLP_BF16, f[i].x.data, ROWS * DIM, -1, 1, NULL);
    }
    static const struct {
        fmlp_mode mode;
        int kernels;
    } modes[] = {{FMLP_MODE_EAGER, 5}, {FMLP_MODE_COMPILED, 4}, {FMLP_MODE_FUSED, 2}};
    for (int i = 0; i < 3; i++) {
        fmlp_plan_info plan;
        fmlp_mlp_plan(mlp, modes[i].mode, ROWS, &plan);
        tu_check(plan.n_kernels == modes[i].kernels, "%s plan: %d kernels", fmlp_mode_name(modes[i].mode),
                 plan.n_kernels);
        f[0].mode = modes[i].mode;
        profile_mode(ctx, &f[0], modes[i].kernels);
    }
    f[0].mode = FMLP_MODE_EAGER;
    test_concurrent(ctx, &f[0], &f[1]);
    for (int i = 0; i < 2; i++) {
        fmlp_tensor_free(ctx, &f[i].x);
        fmlp_tensor_free(ctx, &f[i].y);
    }
    fmlp_mlp_destroy(mlp);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
