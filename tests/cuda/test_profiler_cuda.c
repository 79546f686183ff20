/* Why: on a GPU the profiler's story moves to the device lane. Through the
 * public API only (the schedule drives CUPTI collection), this profiles the
 * tutorial's GeGLU on a CUDA context in each mode and checks each
 * ProfilerStep holds the plan's kernels on a GPU stream, every kernel joined
 * to its launch on the CPU lane by correlation (ac2g flow pair) and to its op
 * by External id, the trace well formed with the fields HTA joins on, and a
 * table with torch's CUDA columns and footer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "cuda_test.h"
#include "trace_check.h"

enum { ROWS = 512, DIM = 768, HIDDEN = 3072 };

static bool is_cat(const json_value *e, const char *cat)
{
    const char *c = json_get_str(e, "cat");
    return c && strcmp(c, cat) == 0;
}

static void check_trace(const char *path, const char *mode, int want)
{
    size_t len = 0;
    char *text = tu_read_file(path, &len);
    json_doc *d = text ? json_parse(text, len, NULL) : NULL;
    if (!tu_check(d != NULL, "%s: trace parses", mode)) {
        free(text);
        return;
    }
    const json_value *root = json_doc_root(d), *evs = json_get(root, "traceEvents");
    tc_check_trace(root, mode);
    tu_check(json_len(json_get(root, "deviceProperties")) >= 1, "%s: deviceProperties describes the GPU", mode);
    int steps = 0, no_ext = 0, no_launch = 0, flows = 0;
    for (size_t i = 0; i < json_len(evs); i++) {
        const json_value *s = json_at(evs, i);
        const char *name = json_get_str(s, "name");
        if (is_cat(s, "ac2g") && strcmp(json_get_str(s, "ph"), "f") == 0) flows++;
        if (!is_cat(s, "user_annotation") || !name || strncmp(name, "ProfilerStep#", 13) != 0) continue;
        steps++;
        double a = json_get_num(s, "ts", 0), b = a + json_get_num(s, "dur", 0);
        int kernels = 0;
        for (size_t j = 0; j < json_len(evs); j++) {
            const json_value *k = json_at(evs, j);
            const json_value *args = json_get(k, "args");
            if (!is_cat(k, "kernel") || json_get_int(args, "device", -1) < 0) continue;
            /* A kernel belongs to the step whose launch it follows. */
            int64_t corr = json_get_int(args, "correlation", -1);
            const json_value *launch = NULL;
            for (size_t q = 0; q < json_len(evs) && !launch; q++) {
                const json_value *r = json_at(evs, q);
                if (is_cat(r, "cuda_runtime") && json_get_int(json_get(r, "args"), "correlation", -2) == corr) launch = r;
            }
            if (!launch) {
                no_launch++;
                continue;
            }
            double lt = json_get_num(launch, "ts", 0);
            if (lt < a || lt >= b) continue;
            kernels++;
            if (json_get_int(args, "External id", 0) <= 0) no_ext++;
        }
        tu_check(kernels == want, "%s %s: %d GPU kernels launched in the step, want %d", mode, name, kernels, want);
    }
    tu_check(steps == 2, "%s: 2 ProfilerStep spans (got %d)", mode, steps);
    tu_check(no_launch == 0 && no_ext == 0, "%s: every kernel has its launch (%d without) and an External id (%d without)",
             mode, no_launch, no_ext);
    tu_check(flows >= 2 * want, "%s: ac2g flows from launches to kernels (%d)", mode, flows);
    json_free(d);
    free(text);
}

int main(void)
{
    tu_seed();
    fmlp_ctx *ctx = ct_ctx();
    if (!ctx) return tu_finish();
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_GELU_TANH, false, FMLP_BF16};
    fmlp_mlp *m;
    if (!tu_check(fmlp_mlp_create(ctx, &d, tu_rand_u64(), &m) == FMLP_OK, "mlp: %s", fmlp_last_error())) return tu_finish();
    fmlp_tensor x, y;
    fmlp_tensor_alloc(ctx, FMLP_BF16, ROWS, DIM, &x);
    fmlp_tensor_alloc(ctx, FMLP_BF16, ROWS, DIM, &y);
    static const fmlp_mode modes[] = {FMLP_MODE_EAGER, FMLP_MODE_COMPILED, FMLP_MODE_FUSED};
    for (int i = 0; i < 3; i++) {
        const char *mode = fmlp_mode_name(modes[i]);
        fmlp_plan_info plan;
        fmlp_mlp_plan(m, modes[i], ROWS, &plan);
        fmlp_profiler_options o = fmlp_profiler_options_default();
        o.wait = 1;
        o.warmup = 1;
        o.active = 2;
        o.repeat = 1;
        o.with_flops = true;
        fmlp_profiler *p;
        fmlp_profiler_create(ctx, &o, &p);
        fmlp_profiler_start(p);
        for (int s = 0; s < 4; s++) {
            fmlp_status st = fmlp_mlp_forward(m, modes[i], &x, &y);
            if (st != FMLP_OK) tu_check(false, "%s forward: %s", mode, fmlp_last_error());
            fmlp_ctx_synchronize(ctx);
            fmlp_profiler_step(p);
        }
        fmlp_profiler_stop(p);
        char path[512];
        snprintf(path, sizeof path, "%s/profiler_cuda_%s.json", tu_tmpdir(), mode);
        tu_check(fmlp_profiler_export_trace(p, path) == FMLP_OK, "%s: export: %s", mode, fmlp_last_error());
        char *t = NULL;
        fmlp_table_options to = fmlp_table_options_default();
        to.analyses = true;
        fmlp_status ts = fmlp_profiler_table_string(p, &to, &t);
        tu_check(ts == FMLP_OK && strstr(t, "Self CUDA %") && strstr(t, "Self CUDA time total: "),
                 "%s: table has torch's CUDA columns and footer", mode);
        if (t && i == 0) printf("%s", t);
        free(t);
        fmlp_profile_summary sum;
        fmlp_status ss = fmlp_profiler_summary(p, &sum);
        tu_check(ss == FMLP_OK && sum.kernels_per_step == plan.n_kernels, "%s: summary: %d kernels per step (plan %d): %s",
                 mode, sum.kernels_per_step, plan.n_kernels, sum.reason);
        fmlp_profiler_destroy(p);
        check_trace(path, mode, plan.n_kernels);
    }
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    fmlp_mlp_destroy(m);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
