/* Why: every function of fmlp.h takes NULL where a handle (or an out
 * pointer, or a FILE) is expected and answers FMLP_ERR_INVALID_ARGUMENT
 * with a message, or, for getters and void calls, the neutral value the
 * header documents; none of them crashes. This calls each one so, through
 * the public header only, in the order fmlp.h declares them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static int g_checked;

/* A call that must fail with FMLP_ERR_INVALID_ARGUMENT and say why. */
static void refused(fmlp_status s, const char *what)
{
    g_checked++;
    if (s != FMLP_ERR_INVALID_ARGUMENT || !fmlp_last_error()[0])
        tu_check(false, "%s -> %s: \"%s\"", what, fmlp_status_name(s), fmlp_last_error());
}

static void neutral(bool ok, const char *what)
{
    g_checked++;
    if (!ok) tu_check(false, "%s gives its neutral value", what);
}

static void vocabulary(void)
{
    fmlp_dtype dt;
    fmlp_mode mode;
    fmlp_act act;
    fmlp_device dev;
    neutral(!fmlp_dtype_parse(NULL, &dt) && !fmlp_dtype_parse("f32", NULL), "fmlp_dtype_parse(NULL)");
    neutral(!fmlp_mode_parse(NULL, &mode) && !fmlp_mode_parse("eager", NULL), "fmlp_mode_parse(NULL)");
    neutral(!fmlp_act_parse(NULL, &act) && !fmlp_act_parse("relu", NULL), "fmlp_act_parse(NULL)");
    neutral(!fmlp_device_parse(NULL, &dev) && !fmlp_device_parse("cpu", NULL), "fmlp_device_parse(NULL)");
    fmlp_convert_buffer(FMLP_F32, NULL, FMLP_BF16, NULL, 16);
    neutral(true, "fmlp_convert_buffer(NULL, NULL, 16)");
    char buf[8] = "x";
    neutral(fmlp_si_format(1e9, NULL, buf, sizeof buf) == buf && fmlp_si_format(1e9, "B", NULL, 8) == NULL,
            "fmlp_si_format(NULL unit / buffer)");
    int64_t r;
    neutral(!fmlp_mul_i64(1, 2, NULL) && !fmlp_add_i64(1, 2, NULL) && fmlp_mul_i64(3, 4, &r) && r == 12,
            "fmlp_mul_i64/add_i64(NULL out)");
}

static void context_calls(void)
{
    refused(fmlp_ctx_create(NULL, NULL), "fmlp_ctx_create(NULL out)");
    fmlp_ctx_destroy(NULL);
    neutral(fmlp_ctx_threads(NULL) == 0, "fmlp_ctx_threads(NULL) = 0");
    neutral(fmlp_ctx_device(NULL) == FMLP_DEVICE_CPU, "fmlp_ctx_device(NULL) = FMLP_DEVICE_CPU");
    neutral(strcmp(fmlp_ctx_cpu_path(NULL, FMLP_F32), "none") == 0, "fmlp_ctx_cpu_path(NULL) = \"none\"");
    neutral(fmlp_cpu_paths(NULL, 4) > 0, "fmlp_cpu_paths(NULL) counts the paths");
    fmlp_print_info(NULL);
    neutral(true, "fmlp_print_info(NULL)");
}

static void tensor_calls(fmlp_ctx *ctx)
{
    fmlp_tensor t;
    memset(&t, 0, sizeof t);
    refused(fmlp_tensor_alloc(NULL, FMLP_F32, 2, 2, &t), "fmlp_tensor_alloc(NULL ctx)");
    refused(fmlp_tensor_alloc(ctx, FMLP_F32, 2, 2, NULL), "fmlp_tensor_alloc(NULL out)");
    refused(fmlp_tensor_alloc_host(NULL, FMLP_F32, 2, 2, &t), "fmlp_tensor_alloc_host(NULL ctx)");
    refused(fmlp_tensor_alloc_host(ctx, FMLP_F32, 2, 2, NULL), "fmlp_tensor_alloc_host(NULL out)");
    fmlp_tensor_free(NULL, &t);
    fmlp_tensor_free(ctx, NULL);
    float a[4] = {1, 2, 3, 4};
    fmlp_tensor v = fmlp_tensor_view(a, FMLP_F32, 2, 2, 2);
    refused(fmlp_tensor_copy(NULL, &v, &v), "fmlp_tensor_copy(NULL ctx)");
    refused(fmlp_tensor_copy(ctx, NULL, &v), "fmlp_tensor_copy(NULL dst)");
    refused(fmlp_tensor_copy(ctx, &v, NULL), "fmlp_tensor_copy(NULL src)");
}

static void mlp_calls(fmlp_ctx *ctx, fmlp_mlp *m)
{
    fmlp_mlp_desc d = *fmlp_mlp_get_desc(m);
    fmlp_mlp *none = NULL;
    refused(fmlp_mlp_create(NULL, &d, 1, &none), "fmlp_mlp_create(NULL ctx)");
    refused(fmlp_mlp_create(ctx, NULL, 1, &none), "fmlp_mlp_create(NULL desc)");
    refused(fmlp_mlp_create(ctx, &d, 1, NULL), "fmlp_mlp_create(NULL out)");
    fmlp_mlp_destroy(NULL);
    neutral(fmlp_mlp_get_desc(NULL) == NULL, "fmlp_mlp_get_desc(NULL) = NULL");
    neutral(fmlp_mlp_out_dim(NULL) == 0, "fmlp_mlp_out_dim(NULL) = 0");
    neutral(fmlp_mlp_tensor_count(NULL) == 0, "fmlp_mlp_tensor_count(NULL) = 0");
    const char *name;
    int64_t rows, cols;
    refused(fmlp_mlp_tensor_info(NULL, 0, &name, &rows, &cols), "fmlp_mlp_tensor_info(NULL)");
    float w[64];
    refused(fmlp_mlp_set_weight(NULL, "0.weight", FMLP_F32, w, 4, 4), "fmlp_mlp_set_weight(NULL mlp)");
    refused(fmlp_mlp_set_weight(m, NULL, FMLP_F32, w, 4, 4), "fmlp_mlp_set_weight(NULL name)");
    refused(fmlp_mlp_set_weight(m, "0.weight", FMLP_F32, NULL, 4, 4), "fmlp_mlp_set_weight(NULL data)");
    refused(fmlp_mlp_get_weight(NULL, "0.weight", w, 4, 4), "fmlp_mlp_get_weight(NULL mlp)");
    refused(fmlp_mlp_get_weight(m, NULL, w, 4, 4), "fmlp_mlp_get_weight(NULL name)");
    refused(fmlp_mlp_get_weight(m, "0.weight", NULL, 4, 4), "fmlp_mlp_get_weight(NULL out)");
    refused(fmlp_mlp_load_safetensors(NULL, "x.safetensors", NULL), "fmlp_mlp_load_safetensors(NULL mlp)");
    refused(fmlp_mlp_load_safetensors(m, NULL, NULL), "fmlp_mlp_load_safetensors(NULL path)");
    refused(fmlp_mlp_save_safetensors(NULL, "x.safetensors", NULL), "fmlp_mlp_save_safetensors(NULL mlp)");
    refused(fmlp_mlp_save_safetensors(m, NULL, NULL), "fmlp_mlp_save_safetensors(NULL path)");
    refused(fmlp_mlp_desc_from_safetensors(NULL, NULL, &d), "fmlp_mlp_desc_from_safetensors(NULL path)");
    refused(fmlp_mlp_desc_from_safetensors("x.safetensors", NULL, NULL), "fmlp_mlp_desc_from_safetensors(NULL desc)");
}

/* A tensor-parallel call given NULL: refused like the others where NCCL
 * is built in; without it every call says how to get it instead. */
static void tp_refused(fmlp_status s, const char *what)
{
    g_checked++;
    const fmlp_status want = fmlp_tp_available(NULL) ? FMLP_ERR_INVALID_ARGUMENT : FMLP_ERR_UNSUPPORTED;
    if (s != want || !fmlp_last_error()[0])
        tu_check(false, "%s -> %s (want %s): \"%s\"", what, fmlp_status_name(s), fmlp_status_name(want),
                 fmlp_last_error());
}

static void tp_calls(fmlp_mlp *m)
{
    fmlp_tp_id id = {{0}};
    fmlp_tp *tp = NULL, *tps[1] = {NULL};
    float y[8];
    fmlp_tensor ty = fmlp_tensor_view(y, FMLP_F32, 1, 8, 8);
    fmlp_tp_plan_info *plan = malloc(sizeof *plan);
    tp_refused(fmlp_tp_unique_id(NULL), "fmlp_tp_unique_id(NULL)");
    tp_refused(fmlp_tp_init_rank(NULL, &id, 0, 1, &tp), "fmlp_tp_init_rank(NULL ctx)");
    tp_refused(fmlp_tp_init_all(NULL, 1, tps), "fmlp_tp_init_all(NULL ctxs)");
    tp_refused(fmlp_tp_wrap(NULL, NULL, &tp), "fmlp_tp_wrap(NULL)");
    neutral(fmlp_tp_rank(NULL) == -1 && fmlp_tp_world(NULL) == 0, "fmlp_tp_rank/world(NULL) = -1, 0");
    tp_refused(fmlp_tp_all_reduce(NULL, &ty), "fmlp_tp_all_reduce(NULL tp)");
    tp_refused(fmlp_tp_forward(NULL, m, FMLP_MODE_FUSED, &ty, &ty), "fmlp_tp_forward(NULL tp)");
    tp_refused(fmlp_tp_forward_all(NULL, &m, FMLP_MODE_FUSED, &ty, &ty, 1), "fmlp_tp_forward_all(NULL tps)");
    tp_refused(fmlp_tp_set_chunks(NULL, 2), "fmlp_tp_set_chunks(NULL)");
    tp_refused(fmlp_tp_plan(NULL, m, FMLP_MODE_FUSED, 4, plan), "fmlp_tp_plan(NULL tp)");
    fmlp_tp_plan_print(NULL, stdout);
    fmlp_tp_plan_print(plan, NULL);
    neutral(true, "fmlp_tp_plan_print(NULL plan / NULL FILE)");
    tp_refused(fmlp_tp_abort(NULL), "fmlp_tp_abort(NULL)");
    fmlp_tp_destroy(NULL);
    neutral(tp == NULL && tps[0] == NULL, "failed joins leave *out NULL");
    free(plan);
}

static void safetensors_calls(void)
{
    fmlp_st_file *f = NULL;
    refused(fmlp_st_open(NULL, &f), "fmlp_st_open(NULL path)");
    refused(fmlp_st_open("x.safetensors", NULL), "fmlp_st_open(NULL out)");
    fmlp_st_close(NULL);
    neutral(fmlp_st_count(NULL) == 0, "fmlp_st_count(NULL) = 0");
    neutral(fmlp_st_name(NULL, 0) == NULL, "fmlp_st_name(NULL) = NULL");
    fmlp_dtype dt;
    int64_t rows, cols, shape[4];
    const void *data;
    int rank;
    float out[4];
    refused(fmlp_st_find(NULL, "x", &dt, &rows, &cols, &data), "fmlp_st_find(NULL file)");
    refused(fmlp_st_shape(NULL, "x", &rank, shape, 4), "fmlp_st_shape(NULL file)");
    refused(fmlp_st_read(NULL, "x", FMLP_F32, out, 2, 2), "fmlp_st_read(NULL file)");
    refused(fmlp_st_write(NULL, NULL, 0), "fmlp_st_write(NULL path)");
}

static void plan_and_forward_calls(fmlp_ctx *ctx, fmlp_mlp *m)
{
    fmlp_plan_info *plan = malloc(sizeof *plan);
    refused(fmlp_mlp_plan(NULL, FMLP_MODE_EAGER, 4, plan), "fmlp_mlp_plan(NULL mlp)");
    refused(fmlp_mlp_plan(m, FMLP_MODE_EAGER, 4, NULL), "fmlp_mlp_plan(NULL out)");
    fmlp_plan_print(NULL, stdout);
    if (fmlp_mlp_plan(m, FMLP_MODE_EAGER, 4, plan) == FMLP_OK) fmlp_plan_print(plan, NULL);
    neutral(true, "fmlp_plan_print(NULL plan / NULL FILE)");
    free(plan);
    float x[4 * 8], y[4 * 8];
    fmlp_tensor tx = fmlp_tensor_view(x, FMLP_F32, 4, 8, 8), ty = fmlp_tensor_view(y, FMLP_F32, 4, 8, 8);
    refused(fmlp_mlp_forward(NULL, FMLP_MODE_EAGER, &tx, &ty), "fmlp_mlp_forward(NULL mlp)");
    refused(fmlp_mlp_forward(m, FMLP_MODE_EAGER, NULL, &ty), "fmlp_mlp_forward(NULL x)");
    refused(fmlp_mlp_forward(m, FMLP_MODE_EAGER, &tx, NULL), "fmlp_mlp_forward(NULL y)");
    refused(fmlp_mlp_set_graph(NULL, true), "fmlp_mlp_set_graph(NULL)");
    refused(fmlp_ctx_synchronize(NULL), "fmlp_ctx_synchronize(NULL)");
    refused(fmlp_ctx_set_stream(NULL, NULL), "fmlp_ctx_set_stream(NULL ctx)");
    void *stream;
    refused(fmlp_ctx_get_stream(NULL, &stream), "fmlp_ctx_get_stream(NULL ctx)");
    refused(fmlp_ctx_get_stream(ctx, NULL), "fmlp_ctx_get_stream(NULL out)");
    double xr[8], yr[8];
    refused(fmlp_mlp_reference(NULL, xr, 1, yr), "fmlp_mlp_reference(NULL mlp)");
    refused(fmlp_mlp_reference(m, NULL, 1, yr), "fmlp_mlp_reference(NULL x)");
    refused(fmlp_mlp_reference(m, xr, 1, NULL), "fmlp_mlp_reference(NULL y)");
}

static void profiler_calls(fmlp_ctx *ctx)
{
    fmlp_profiler *p = NULL;
    refused(fmlp_profiler_create(NULL, NULL, &p), "fmlp_profiler_create(NULL ctx)");
    refused(fmlp_profiler_create(ctx, NULL, NULL), "fmlp_profiler_create(NULL out)");
    fmlp_profiler_destroy(NULL);
    refused(fmlp_profiler_start(NULL), "fmlp_profiler_start(NULL)");
    refused(fmlp_profiler_stop(NULL), "fmlp_profiler_stop(NULL)");
    refused(fmlp_profiler_step(NULL), "fmlp_profiler_step(NULL)");
    fmlp_range_push(NULL, "r");
    fmlp_range_pop(NULL);
    fmlp_range_push(ctx, NULL);
    fmlp_range_pop(ctx);
    neutral(fmlp_table_sort_key_valid(NULL), "fmlp_table_sort_key_valid(NULL) = true (the default)");
    char *s = NULL;
    refused(fmlp_profiler_table(NULL, NULL, stdout), "fmlp_profiler_table(NULL profiler)");
    refused(fmlp_profiler_table_string(NULL, NULL, &s), "fmlp_profiler_table_string(NULL profiler)");
    refused(fmlp_profiler_export_trace(NULL, "t.json"), "fmlp_profiler_export_trace(NULL profiler)");
    fmlp_profile_summary sum;
    refused(fmlp_profiler_summary(NULL, &sum), "fmlp_profiler_summary(NULL profiler)");
    if (fmlp_profiler_create(ctx, NULL, &p) != FMLP_OK) return;
    refused(fmlp_profiler_table(p, NULL, NULL), "fmlp_profiler_table(NULL FILE)");
    refused(fmlp_profiler_table_string(p, NULL, NULL), "fmlp_profiler_table_string(NULL out)");
    refused(fmlp_profiler_export_trace(p, NULL), "fmlp_profiler_export_trace(NULL path)");
    refused(fmlp_profiler_summary(p, NULL), "fmlp_profiler_summary(NULL out)");
    fmlp_profiler_destroy(p);
    fmlp_ceilings c;
    refused(fmlp_ceilings_get(NULL, false, &c), "fmlp_ceilings_get(NULL ctx)");
    refused(fmlp_ceilings_get(ctx, false, NULL), "fmlp_ceilings_get(NULL out)");
    refused(fmlp_ceilings_measure(NULL, &c), "fmlp_ceilings_measure(NULL ctx)");
    refused(fmlp_ceilings_measure(ctx, NULL), "fmlp_ceilings_measure(NULL out)");
}

static void trace_calls(void)
{
    fmlp_trace *t = NULL;
    refused(fmlp_trace_open(NULL, &t), "fmlp_trace_open(NULL path)");
    refused(fmlp_trace_open("t.json", NULL), "fmlp_trace_open(NULL out)");
    refused(fmlp_trace_parse(NULL, 4, "t", &t), "fmlp_trace_parse(NULL text)");
    refused(fmlp_trace_parse("[]", 2, "t", NULL), "fmlp_trace_parse(NULL out)");
    fmlp_trace_close(NULL);
    fmlp_trace_info info;
    fmlp_trace_step step;
    fmlp_profile_summary sum;
    char *s = NULL;
    refused(fmlp_trace_get_info(NULL, &info), "fmlp_trace_get_info(NULL trace)");
    refused(fmlp_trace_step_info(NULL, 0, &step), "fmlp_trace_step_info(NULL trace)");
    refused(fmlp_trace_summary(NULL, &sum), "fmlp_trace_summary(NULL trace)");
    refused(fmlp_trace_summary_string(NULL, NULL, &s), "fmlp_trace_summary_string(NULL trace)");
    refused(fmlp_trace_summary_print(NULL, NULL, stdout), "fmlp_trace_summary_print(NULL trace)");
    fmlp_trace *pair[2] = {NULL, NULL};
    refused(fmlp_trace_diff_string(NULL, 2, &s), "fmlp_trace_diff_string(NULL array)");
    refused(fmlp_trace_diff_string(pair, 2, &s), "fmlp_trace_diff_string(NULL traces)");
    refused(fmlp_trace_diff_print(pair, 2, stdout), "fmlp_trace_diff_print(NULL traces)");
    refused(fmlp_trace_render_svg(NULL, NULL, "t.svg"), "fmlp_trace_render_svg(NULL trace)");
    const char *text = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"cat\":\"cpu_op\",\"pid\":1,\"tid\":1,"
                       "\"ts\":1,\"dur\":2}]}";
    if (fmlp_trace_parse(text, strlen(text), "mem", &t) != FMLP_OK) return;
    refused(fmlp_trace_get_info(t, NULL), "fmlp_trace_get_info(NULL out)");
    refused(fmlp_trace_step_info(t, 0, NULL), "fmlp_trace_step_info(NULL out)");
    refused(fmlp_trace_summary(t, NULL), "fmlp_trace_summary(NULL out)");
    refused(fmlp_trace_summary_string(t, NULL, NULL), "fmlp_trace_summary_string(NULL out)");
    refused(fmlp_trace_summary_print(t, NULL, NULL), "fmlp_trace_summary_print(NULL FILE)");
    fmlp_trace *two[2] = {t, t};
    refused(fmlp_trace_diff_string(two, 2, NULL), "fmlp_trace_diff_string(NULL out)");
    refused(fmlp_trace_diff_print(two, 2, NULL), "fmlp_trace_diff_print(NULL FILE)");
    refused(fmlp_trace_render_svg(t, NULL, NULL), "fmlp_trace_render_svg(NULL path)");
    fmlp_trace_close(t);
}

int main(void)
{
    vocabulary();
    context_calls();
    fmlp_ctx *ctx = tu_ctx(1);
    fmlp_mlp *m;
    fmlp_mlp_desc d = {FMLP_BLOCK_STACK, 8, 8, 8, 2, FMLP_ACT_RELU, false, FMLP_F32};
    if (!ctx) return tu_finish();
    if (tu_check(fmlp_mlp_create(ctx, &d, 1, &m) == FMLP_OK, "MLP")) {
        tensor_calls(ctx);
        mlp_calls(ctx, m);
        tp_calls(m);
        safetensors_calls();
        plan_and_forward_calls(ctx, m);
        profiler_calls(ctx);
        trace_calls();
        fmlp_mlp_destroy(m);
    }
    fmlp_ctx_destroy(ctx);
    tu_check(g_checked >= 100, "%d NULL calls answered without a crash", g_checked);
    return tu_finish();
}
