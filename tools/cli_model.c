/* Why: model flags and model construction shared by the CLI commands. */
#include "cli_model.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_args.h"

void cli_model_defaults_mlp(cli_model_opts *o, const char *cmd)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->batch = 64;
    o->seq = 128;
    o->desc.block = FMLP_BLOCK_GATED;
    o->desc.dim = 768;
    o->desc.hidden = 3072;
    o->desc.layers = 2;
    o->desc.act = FMLP_ACT_GELU_TANH;
    o->desc.dtype = FMLP_BF16;
    o->seed = 0;
    o->device = FMLP_DEVICE_CPU;
}

void cli_model_defaults_linear(cli_model_opts *o, const char *cmd)
{
    cli_model_defaults_mlp(o, cmd);
    o->batch = 1024;
    o->seq = 1;
    o->desc.block = FMLP_BLOCK_STACK;
    o->desc.layers = 1;
    o->desc.dim = 32;
    o->desc.out_dim = 64;
    o->desc.hidden = 0;
    o->desc.act = FMLP_ACT_NONE;
    o->desc.dtype = FMLP_F32;
}

/* geglu/swiglu are gated blocks; a plain activation makes a stack. */
static bool parse_act(cli_model_opts *o, const char *s)
{
    if (strcmp(s, "geglu") == 0) {
        o->desc.block = FMLP_BLOCK_GATED;
        o->desc.act = FMLP_ACT_GELU_TANH;
        return true;
    }
    if (strcmp(s, "swiglu") == 0) {
        o->desc.block = FMLP_BLOCK_GATED;
        o->desc.act = FMLP_ACT_SILU;
        return true;
    }
    fmlp_act a;
    if (!fmlp_act_parse(s, &a)) return false;
    o->desc.block = FMLP_BLOCK_STACK;
    o->desc.act = a;
    return true;
}

enum {
    M_BIAS = CLI_OPT_MODEL, M_GRAPH, M_HOST_IO, M_BATCH, M_SEQ, M_DIM, M_OUT_DIM, M_HIDDEN, M_LAYERS, M_ACT, M_WEIGHTS,
    M_PREFIX, M_THREADS, M_SEED, M_DEVICE, M_CPU_PATH, M_END
};

static const struct option common_options[] = {
    {"bias", no_argument, NULL, M_BIAS},           {"graph", no_argument, NULL, M_GRAPH},
    {"host-io", no_argument, NULL, M_HOST_IO},
    {"batch", required_argument, NULL, M_BATCH},   {"seq", required_argument, NULL, M_SEQ},
    {"out-dim", required_argument, NULL, M_OUT_DIM}, {"weights", required_argument, NULL, M_WEIGHTS},
    {"prefix", required_argument, NULL, M_PREFIX}, {"threads", required_argument, NULL, M_THREADS},
    {"seed", required_argument, NULL, M_SEED},     {"device", required_argument, NULL, M_DEVICE},
    {"cpu-path", required_argument, NULL, M_CPU_PATH}, {0},
};
static const struct option mlp_options[] = {
    {"dim", required_argument, NULL, M_DIM},       {"hidden", required_argument, NULL, M_HIDDEN},
    {"layers", required_argument, NULL, M_LAYERS}, {"act", required_argument, NULL, M_ACT},
    {0},
};
static const struct option linear_options[] = {{"in-dim", required_argument, NULL, M_DIM}, {0}};

void cli_model_options(cli_options *l, bool linear)
{
    cli_options_add(l, common_options);
    cli_options_add(l, linear ? linear_options : mlp_options);
}

/* "--act: "x" is unknown; use geglu, swiglu, gelu, ..., relu2 or none". */
static void act_unknown(const char *cmd, const char *v)
{
    char list[256] = "geglu, swiglu";
    for (int a = 1; a < FMLP_ACT_COUNT; a++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, ", %s", fmlp_act_name((fmlp_act)a));
    }
    cli_error(cmd, "--act: \"%s\" is unknown; use %s or %s", v, list, fmlp_act_name(FMLP_ACT_NONE));
}

int cli_model_take(cli_model_opts *o, const cli_arg *a)
{
    if (a->val < CLI_OPT_MODEL || a->val >= M_END) return 0;
    const char *cmd = o->cmd, *f = a->word, *v = NULL;
    if (a->val == M_BIAS) return o->desc.bias = true, 1;
    if (a->val == M_GRAPH) return o->graph = true, 1;
    if (a->val == M_HOST_IO) return o->host_io = true, 1;
    if (!(v = cli_arg_value(a, cmd))) return -1;
    int64_t seed;
    switch (a->val) {
    case M_BATCH: return cli_parse_i64(cmd, f, v, 1, 1 << 24, &o->batch) ? 1 : -1;
    case M_SEQ: return cli_parse_i64(cmd, f, v, 1, 1 << 24, &o->seq) ? 1 : -1;
    case M_DIM: return cli_parse_i64(cmd, f, v, 1, 1 << 20, &o->desc.dim) ? 1 : -1;
    case M_OUT_DIM: return cli_parse_i64(cmd, f, v, 1, 1 << 20, &o->desc.out_dim) ? 1 : -1;
    case M_HIDDEN: return cli_parse_i64(cmd, f, v, 1, 1 << 20, &o->desc.hidden) ? 1 : -1;
    case M_LAYERS: return cli_parse_int(cmd, f, v, 1, FMLP_MAX_LAYERS, &o->desc.layers) ? 1 : -1;
    case M_ACT:
        if (parse_act(o, v)) return 1;
        act_unknown(cmd, v);
        return -1;
    case M_WEIGHTS: return o->weights = v, 1;
    case M_PREFIX: return o->prefix = v, 1;
    case M_THREADS: return cli_parse_int(cmd, f, v, 0, 1024, &o->threads) ? 1 : -1;
    case M_SEED:
        if (!cli_parse_i64(cmd, f, v, 0, INT64_MAX, &seed)) return -1;
        o->seed = (uint64_t)seed;
        return 1;
    case M_DEVICE:
        if (fmlp_device_parse(v, &o->device)) return 1;
        cli_error(cmd, "--device: \"%s\" is unknown; use cpu or cuda", v);
        return -1;
    case M_CPU_PATH: return o->cpu_path = v, 1;
    }
    return 0;
}

void cli_model_usage(FILE *f, bool linear)
{
    if (linear) {
        fprintf(f, "  --batch N          rows (default 1024)\n"
                   "  --in-dim N         in_features (default 32)\n"
                   "  --out-dim N        out_features (default 64)\n"
                   "  --bias             add a bias (folded into the GEMM epilogue, as addmm)\n");
    } else {
        fprintf(f, "  --batch N --seq N  input is (batch, seq, dim), viewed as batch*seq rows (default 64 x 128)\n"
                   "  --dim N            model width (default 768)\n"
                   "  --hidden N         hidden width (default 3072)\n"
                   "  --out-dim N        output width (default: dim)\n"
                   "  --act A            geglu | swiglu (gated MLP), or");
        for (int a = 0; a < FMLP_ACT_COUNT; a++) fprintf(f, "%s %s", a ? " |" : "", fmlp_act_name((fmlp_act)a));
        fprintf(f, "\n                     (a stack of Linear layers with A between them; default geglu)\n"
                   "  --layers N         Linear layers of a stack (default 2)\n"
                   "  --bias             biases on every Linear\n");
    }
    fprintf(f, "  --weights FILE     safetensors weights (PyTorch state_dict names); shapes come from the file\n"
               "  --prefix P         select a submodule in the file, e.g. model.layers.0.mlp.\n"
               "  --threads N        CPU worker threads (default: one per core)\n"
               "  --cpu-path P       force a CPU code path (see fmlp info)\n"
               "  --device D         cpu (default) or cuda\n"
               "  --graph            CUDA: replay forwards as CUDA graphs\n"
               "  --host-io          CUDA: forwards take pinned host x and y, so the times include copying them\n"
               "                     in and out (default: x and y live on the device)\n"
               "  --seed N           seed for random weights and input (default 0)\n");
}

bool cli_model_check(const cli_model_opts *o)
{
    if (!o->host_io || o->device != FMLP_DEVICE_CPU) return true;
    cli_error(o->cmd, "--host-io times copies between host and device memory; on the CPU x and y are host memory "
                      "already: add --device cuda or drop --host-io");
    return false;
}

fmlp_status cli_model_build(const cli_model_opts *o, fmlp_dtype dtype, fmlp_ctx **ctx, fmlp_mlp **mlp)
{
    fmlp_ctx_options co = fmlp_ctx_options_default();
    co.device = o->device;
    co.threads = o->threads;
    co.cpu_path = o->cpu_path;
    fmlp_mlp_desc d = o->desc;
    d.dtype = dtype;
    *ctx = NULL;
    *mlp = NULL;
    fmlp_status s = FMLP_OK;
    if (o->weights) s = fmlp_mlp_desc_from_safetensors(o->weights, o->prefix, &d);
    if (s == FMLP_OK) s = fmlp_ctx_create(&co, ctx);
    if (s == FMLP_OK) s = fmlp_mlp_create(*ctx, &d, o->seed, mlp);
    if (s == FMLP_OK && o->weights) s = fmlp_mlp_load_safetensors(*mlp, o->weights, o->prefix);
    if (s == FMLP_OK && o->graph) s = fmlp_mlp_set_graph(*mlp, true);
    if (s != FMLP_OK) {
        fprintf(stderr, "fmlp %s: %s\n", o->cmd, fmlp_last_error());
        fmlp_mlp_destroy(*mlp);
        fmlp_ctx_destroy(*ctx);
        *ctx = NULL;
        *mlp = NULL;
    }
    return s;
}

void cli_model_shape_name(const cli_model_opts *o, char *buf, size_t len)
{
    if (o->seq > 1)
        snprintf(buf, len, "%lldx%lldx%lld", (long long)o->batch, (long long)o->seq, (long long)o->desc.dim);
    else
        snprintf(buf, len, "%lldx%lld", (long long)o->batch, (long long)o->desc.dim);
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

fmlp_status cli_fill_random(const fmlp_tensor *t, uint64_t seed)
{
    int64_t n = t->rows * t->cols, bytes; /* the tensor exists, so n fits */
    float *tmp = fmlp_mul_i64(n ? n : 1, (int64_t)sizeof(float), &bytes) ? malloc((size_t)bytes) : NULL;
    if (!tmp) {
        fprintf(stderr, "fmlp: out of memory for a (%lld, %lld) input\n", (long long)t->rows, (long long)t->cols);
        return FMLP_ERR_OUT_OF_MEMORY;
    }
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 7;
    for (int64_t i = 0; i < n; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        float v = (float)((double)(st >> 11) / 9007199254740992.0) * 2.0f - 1.0f;
        tmp[i] = v == 0.0f ? 0.25f : v;
    }
    fmlp_convert_buffer(t->dtype, t->data, FMLP_F32, tmp, n);
    free(tmp);
    return FMLP_OK;
}
