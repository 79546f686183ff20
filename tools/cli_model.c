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

int cli_model_parse(cli_model_opts *o, bool linear, int argc, char **argv, int *i)
{
    const char *f = argv[*i], *cmd = o->cmd, *v;
#define VALUE()                                         \
    do {                                                \
        if (!(v = cli_value(argc, argv, i, cmd))) return -1; \
    } while (0)
    if (strcmp(f, "--bias") == 0) {
        o->desc.bias = true;
        return 1;
    }
    if (strcmp(f, "--graph") == 0) {
        o->graph = true;
        return 1;
    }
    if (strcmp(f, "--batch") == 0) {
        VALUE();
        return cli_parse_i64(cmd, f, v, 1, 1 << 24, &o->batch) ? 1 : -1;
    }
    if (strcmp(f, "--seq") == 0) {
        VALUE();
        return cli_parse_i64(cmd, f, v, 1, 1 << 24, &o->seq) ? 1 : -1;
    }
    if (strcmp(f, linear ? "--in-dim" : "--dim") == 0) {
        VALUE();
        return cli_parse_i64(cmd, f, v, 1, 1 << 20, &o->desc.dim) ? 1 : -1;
    }
    if (strcmp(f, "--out-dim") == 0) {
        VALUE();
        return cli_parse_i64(cmd, f, v, 1, 1 << 20, &o->desc.out_dim) ? 1 : -1;
    }
    if (!linear && strcmp(f, "--hidden") == 0) {
        VALUE();
        return cli_parse_i64(cmd, f, v, 1, 1 << 20, &o->desc.hidden) ? 1 : -1;
    }
    if (!linear && strcmp(f, "--layers") == 0) {
        VALUE();
        return cli_parse_int(cmd, f, v, 1, FMLP_MAX_LAYERS, &o->desc.layers) ? 1 : -1;
    }
    if (!linear && strcmp(f, "--act") == 0) {
        VALUE();
        if (parse_act(o, v)) return 1;
        cli_error(cmd, "--act: \"%s\" is unknown; use geglu, swiglu, gelu, gelu_tanh, relu, silu or none", v);
        return -1;
    }
    if (strcmp(f, "--weights") == 0) {
        VALUE();
        o->weights = v;
        return 1;
    }
    if (strcmp(f, "--prefix") == 0) {
        VALUE();
        o->prefix = v;
        return 1;
    }
    if (strcmp(f, "--threads") == 0) {
        VALUE();
        return cli_parse_int(cmd, f, v, 0, 1024, &o->threads) ? 1 : -1;
    }
    if (strcmp(f, "--seed") == 0) {
        int64_t s;
        VALUE();
        if (!cli_parse_i64(cmd, f, v, 0, INT64_MAX, &s)) return -1;
        o->seed = (uint64_t)s;
        return 1;
    }
    if (strcmp(f, "--device") == 0) {
        VALUE();
        if (fmlp_device_parse(v, &o->device)) return 1;
        cli_error(cmd, "--device: \"%s\" is unknown; use cpu or cuda", v);
        return -1;
    }
    if (strcmp(f, "--cpu-path") == 0) {
        VALUE();
        o->cpu_path = v;
        return 1;
    }
#undef VALUE
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
               "  --seed N           seed for random weights and input (default 0)\n");
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

fmlp_status cli_random_host(fmlp_dtype dtype, int64_t rows, int64_t cols, uint64_t seed, fmlp_tensor *out)
{
    int64_t n = rows * cols;
    float *tmp = malloc(sizeof(float) * (size_t)n);
    void *data = malloc((size_t)n * fmlp_dtype_size(dtype));
    if (!tmp || !data) {
        free(tmp);
        free(data);
        fprintf(stderr, "fmlp: out of memory for a (%lld, %lld) input\n", (long long)rows, (long long)cols);
        return FMLP_ERR_OUT_OF_MEMORY;
    }
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 7;
    for (int64_t i = 0; i < n; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        float v = (float)((double)(st >> 11) / 9007199254740992.0) * 2.0f - 1.0f;
        tmp[i] = v == 0.0f ? 0.25f : v;
    }
    fmlp_convert_buffer(dtype, data, FMLP_F32, tmp, n);
    free(tmp);
    *out = fmlp_tensor_view(data, dtype, rows, cols, cols);
    return FMLP_OK;
}
