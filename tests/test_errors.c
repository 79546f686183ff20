/* Why: bad input must come back as a status and a message that names the
 * bad value, never as a crash; this walks every such path of the core API. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static fmlp_mlp_desc geglu(fmlp_dtype dt)
{
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 16, 24, 0, 0, FMLP_ACT_GELU_TANH, false, dt};
    return d;
}

/* The last message offers every name of a vocabulary in value order, as
 * "use a, b or c", so a new value shows up in it. */
static void offers_every_name(const char *what, const char *(*name_of)(int), int count)
{
    char want[256] = "use ";
    for (int v = 0; v < count; v++) {
        strcat(want, v == 0 ? "" : v == count - 1 ? " or " : ", ");
        strcat(want, name_of(v));
    }
    tu_check(strstr(fmlp_last_error(), want) != NULL, "%s: the message offers every value (\"%s\"): %s", what, want,
             fmlp_last_error());
}

static const char *act_name(int v) { return fmlp_act_name((fmlp_act)v); }
static const char *dtype_name(int v) { return fmlp_dtype_name((fmlp_dtype)v); }
static const char *mode_name(int v) { return fmlp_mode_name((fmlp_mode)v); }

static void desc_errors(fmlp_ctx *ctx)
{
    fmlp_mlp *m = NULL;
    fmlp_mlp_desc d = geglu(FMLP_F32);
    d.dim = 0;
    tu_expect_fail(fmlp_mlp_create(ctx, &d, 1, &m), FMLP_ERR_INVALID_ARGUMENT, "dim 0");
    tu_check(strstr(fmlp_last_error(), "dim = 0") != NULL, "message names the value: %s", fmlp_last_error());
    d = geglu(FMLP_F32);
    d.hidden = -3;
    tu_expect_fail(fmlp_mlp_create(ctx, &d, 1, &m), FMLP_ERR_INVALID_ARGUMENT, "negative hidden");
    d = geglu(FMLP_F32);
    d.block = FMLP_BLOCK_STACK;
    d.layers = 0;
    tu_expect_fail(fmlp_mlp_create(ctx, &d, 1, &m), FMLP_ERR_INVALID_ARGUMENT, "stack of 0 layers");
    d.layers = FMLP_MAX_LAYERS + 1;
    tu_expect_fail(fmlp_mlp_create(ctx, &d, 1, &m), FMLP_ERR_INVALID_ARGUMENT, "stack of too many layers");
    d = geglu(FMLP_F32);
    d.act = (fmlp_act)42;
    tu_expect_fail(fmlp_mlp_create(ctx, &d, 1, &m), FMLP_ERR_INVALID_ARGUMENT, "unknown activation");
    tu_check(strstr(fmlp_last_error(), "activation 42") != NULL, "message names the value: %s", fmlp_last_error());
    offers_every_name("unknown activation", act_name, FMLP_ACT_COUNT);
    d.act = (fmlp_act)FMLP_ACT_COUNT;
    tu_expect_fail(fmlp_mlp_create(ctx, &d, 1, &m), FMLP_ERR_INVALID_ARGUMENT, "activation one past the table");
    d = geglu((fmlp_dtype)9);
    tu_expect_fail(fmlp_mlp_create(ctx, &d, 1, &m), FMLP_ERR_INVALID_ARGUMENT, "unknown dtype");
    offers_every_name("unknown dtype", dtype_name, FMLP_DTYPE_COUNT);
    d = geglu(FMLP_F16);
    tu_expect_fail(fmlp_mlp_create(ctx, &d, 1, &m), FMLP_ERR_UNSUPPORTED, "f16 on the CPU");
    d = geglu(FMLP_F32);
    tu_expect_fail(fmlp_mlp_create(ctx, NULL, 1, &m), FMLP_ERR_INVALID_ARGUMENT, "NULL desc");
    tu_expect_fail(fmlp_mlp_create(ctx, &d, 1, NULL), FMLP_ERR_INVALID_ARGUMENT, "NULL out");
    tu_check(m == NULL, "no MLP handed out on failure");
}

static void forward_errors(fmlp_ctx *ctx)
{
    fmlp_mlp_desc d = geglu(FMLP_F32);
    fmlp_mlp *m;
    if (!tu_check(fmlp_mlp_create(ctx, &d, 7, &m) == FMLP_OK, "create GeGLU")) return;
    float *x = calloc(64 * 16, sizeof(float)), *y = calloc(64 * 16, sizeof(float));
    uint16_t *xb = calloc(64 * 16, 2);
    tu_fill(FMLP_F32, x, 64 * 16, -1, 1, NULL);
    fmlp_tensor tx = fmlp_tensor_view(x, FMLP_F32, 4, 16, 16), ty = fmlp_tensor_view(y, FMLP_F32, 4, 16, 16);
    fmlp_tensor bad;
    tu_expect_fail(fmlp_mlp_forward(m, FMLP_MODE_FUSED, NULL, &ty), FMLP_ERR_INVALID_ARGUMENT, "x NULL");
    tu_expect_fail(fmlp_mlp_forward(NULL, FMLP_MODE_FUSED, &tx, &ty), FMLP_ERR_INVALID_ARGUMENT, "mlp NULL");
    bad = fmlp_tensor_view(x, FMLP_F32, 4, 15, 16);
    tu_expect_fail(fmlp_mlp_forward(m, FMLP_MODE_FUSED, &bad, &ty), FMLP_ERR_SHAPE, "x with 15 columns");
    tu_check(strstr(fmlp_last_error(), "15") != NULL, "message names 15: %s", fmlp_last_error());
    bad = fmlp_tensor_view(y, FMLP_F32, 4, 17, 17);
    tu_expect_fail(fmlp_mlp_forward(m, FMLP_MODE_FUSED, &tx, &bad), FMLP_ERR_SHAPE, "y with 17 columns");
    bad = fmlp_tensor_view(y, FMLP_F32, 5, 16, 16);
    tu_expect_fail(fmlp_mlp_forward(m, FMLP_MODE_FUSED, &tx, &bad), FMLP_ERR_SHAPE, "rows of x and y differ");
    bad = fmlp_tensor_view(xb, FMLP_BF16, 4, 16, 16);
    tu_expect_fail(fmlp_mlp_forward(m, FMLP_MODE_FUSED, &bad, &ty), FMLP_ERR_INVALID_ARGUMENT, "bf16 x into an f32 MLP");
    bad = fmlp_tensor_view(x, FMLP_F32, 4, 16, 8);
    tu_expect_fail(fmlp_mlp_forward(m, FMLP_MODE_FUSED, &bad, &ty), FMLP_ERR_SHAPE, "row stride below cols");
    bad = fmlp_tensor_view(x, FMLP_F32, 0, 16, 16);
    fmlp_tensor y0 = fmlp_tensor_view(y, FMLP_F32, 0, 16, 16);
    tu_expect_fail(fmlp_mlp_forward(m, FMLP_MODE_FUSED, &bad, &y0), FMLP_ERR_SHAPE, "zero rows");
    bad = fmlp_tensor_view(NULL, FMLP_F32, 4, 16, 16);
    tu_expect_fail(fmlp_mlp_forward(m, FMLP_MODE_FUSED, &bad, &ty), FMLP_ERR_INVALID_ARGUMENT, "NULL data");
    fmlp_tensor alias = fmlp_tensor_view(x + 8, FMLP_F32, 4, 16, 16);
    tu_expect_fail(fmlp_mlp_forward(m, FMLP_MODE_FUSED, &tx, &alias), FMLP_ERR_INVALID_ARGUMENT, "x and y overlap");
    tu_expect_fail(fmlp_mlp_forward(m, (fmlp_mode)17, &tx, &ty), FMLP_ERR_INVALID_ARGUMENT, "unknown mode");
    offers_every_name("unknown mode", mode_name, FMLP_MODE_COUNT);
    bad = tx;
    bad.device = FMLP_DEVICE_CUDA;
    tu_expect_fail(fmlp_mlp_forward(m, FMLP_MODE_FUSED, &bad, &ty), FMLP_ERR_INVALID_ARGUMENT, "device tensor on a CPU context");
    tu_check(fmlp_mlp_forward(m, FMLP_MODE_FUSED, &tx, &ty) == FMLP_OK, "a good forward still works after the failures");
    fmlp_plan_info plan;
    tu_expect_fail(fmlp_mlp_plan(m, FMLP_MODE_EAGER, 0, &plan), FMLP_ERR_INVALID_ARGUMENT, "plan for 0 rows");
    tu_expect_fail(fmlp_mlp_set_graph(m, true), FMLP_ERR_UNSUPPORTED, "CUDA graph on the CPU");

    float w[24 * 16];
    tu_fill(FMLP_F32, w, 24 * 16, -1, 1, NULL);
    tu_expect_fail(fmlp_mlp_set_weight(m, "gate_proj.wieght", FMLP_F32, w, 24, 16), FMLP_ERR_INVALID_ARGUMENT,
                   "misspelt tensor name");
    tu_check(strstr(fmlp_last_error(), "gate_proj.weight") != NULL, "message lists the real names: %s", fmlp_last_error());
    tu_expect_fail(fmlp_mlp_set_weight(m, "gate_proj.weight", FMLP_F32, w, 16, 24), FMLP_ERR_SHAPE, "transposed weight");
    tu_check(strstr(fmlp_last_error(), "[16, 24]") && strstr(fmlp_last_error(), "[24, 16]"), "message names both shapes: %s",
             fmlp_last_error());
    tu_expect_fail(fmlp_mlp_set_weight(m, "gate_proj.bias", FMLP_F32, w, 24, 1), FMLP_ERR_INVALID_ARGUMENT,
                   "bias on an MLP without biases");
    tu_check(fmlp_mlp_set_weight(m, "gate_proj.weight", FMLP_F32, w, 24, 16) == FMLP_OK, "a good set_weight works");
    float back[24 * 16];
    tu_check(fmlp_mlp_get_weight(m, "gate_proj.weight", back, 24, 16) == FMLP_OK && memcmp(back, w, sizeof w) == 0,
             "get_weight returns what set_weight stored");
    free(x);
    free(y);
    free(xb);
    fmlp_mlp_destroy(m);
}

static void ctx_errors(void)
{
    fmlp_ctx *ctx = NULL;
    fmlp_ctx_options o = fmlp_ctx_options_default();
    o.cpu_path = "sse9";
    tu_expect_fail(fmlp_ctx_create(&o, &ctx), FMLP_ERR_INVALID_ARGUMENT, "unknown CPU path");
    tu_check(strstr(fmlp_last_error(), "sse9") != NULL, "message names the path: %s", fmlp_last_error());
    fmlp_cpu_path_info paths[8];
    int n = fmlp_cpu_paths(paths, 8);
    for (int i = 0; i < n; i++) {
        if (paths[i].available) continue;
        o.cpu_path = paths[i].name;
        tu_expect_fail(fmlp_ctx_create(&o, &ctx), FMLP_ERR_UNSUPPORTED, paths[i].name);
    }
    o = fmlp_ctx_options_default();
    o.threads = -1;
    tu_expect_fail(fmlp_ctx_create(&o, &ctx), FMLP_ERR_INVALID_ARGUMENT, "threads -1");
    o = fmlp_ctx_options_default();
    o.device = FMLP_DEVICE_CUDA;
    fmlp_status s = fmlp_ctx_create(&o, &ctx);
    if (s == FMLP_OK) {
        tu_check(fmlp_cuda_device_count() > 0, "a CUDA context only where a GPU exists");
        fmlp_ctx_destroy(ctx);
    } else {
        tu_check((s == FMLP_ERR_UNSUPPORTED || s == FMLP_ERR_NO_DEVICE) && fmlp_last_error()[0],
                 "CUDA context without a GPU -> %s: %s", fmlp_status_name(s), fmlp_last_error());
    }
    tu_expect_fail(fmlp_ctx_create(NULL, NULL), FMLP_ERR_INVALID_ARGUMENT, "NULL out");
    fmlp_ctx_destroy(NULL);
    fmlp_mlp_destroy(NULL);
    tu_check(true, "destroy(NULL) is a no-op");
}

/* A CPU context has no streams: NULL is accepted, anything else refused. */
static void stream_errors(fmlp_ctx *ctx)
{
    int dummy;
    void *got = &dummy;
    tu_check(fmlp_ctx_set_stream(ctx, NULL) == FMLP_OK, "CPU: set_stream(NULL) is a no-op");
    tu_expect_fail(fmlp_ctx_set_stream(ctx, &dummy), FMLP_ERR_UNSUPPORTED, "CPU: a stream");
    tu_check(strstr(fmlp_last_error(), "cpu") != NULL, "message names the device: %s", fmlp_last_error());
    tu_check(fmlp_ctx_get_stream(ctx, &got) == FMLP_OK && got == NULL, "CPU: get_stream gives NULL");
    tu_expect_fail(fmlp_ctx_set_stream(NULL, NULL), FMLP_ERR_INVALID_ARGUMENT, "set_stream on a NULL context");
    tu_expect_fail(fmlp_ctx_get_stream(ctx, NULL), FMLP_ERR_INVALID_ARGUMENT, "get_stream into NULL");
}

int main(void)
{
    tu_seed();
    ctx_errors();
    fmlp_ctx *ctx;
    if (tu_check(fmlp_ctx_create(NULL, &ctx) == FMLP_OK, "default context")) {
        desc_errors(ctx);
        forward_errors(ctx);
        stream_errors(ctx);
        fmlp_ctx_destroy(ctx);
    }
    return tu_finish();
}
