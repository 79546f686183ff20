/* Why: every vocabulary is one table in fmlp.h, and the CLI, plans, traces
 * and files speak it through the name and parse functions; each value must
 * have a name of its own that parses back to it, and values past the table
 * must have none. Plans must spell every activation from its row. */
#include <stdio.h>
#include <string.h>

#include "test_util.h"

typedef struct {
    const char *vocabulary;
    int count;
    const char *(*name)(int v);
    bool (*parse)(const char *s, int *v);
} vocab;

#define VOCAB_FNS(type, word)                                               \
    static const char *word##_name(int v) { return fmlp_##word##_name((type)v); } \
    static bool word##_parse(const char *s, int *v)                          \
    {                                                                        \
        type t;                                                              \
        if (!fmlp_##word##_parse(s, &t)) return false;                       \
        *v = (int)t;                                                         \
        return true;                                                         \
    }
VOCAB_FNS(fmlp_device, device)
VOCAB_FNS(fmlp_dtype, dtype)
VOCAB_FNS(fmlp_mode, mode)
VOCAB_FNS(fmlp_act, act)

static void round_trip(const vocab *w)
{
    bool ok = w->count > 0;
    for (int v = 0; v < w->count; v++) {
        const char *n = w->name(v);
        int back = -1;
        bool fine = n && n[0] && strcmp(n, "?") != 0 && w->parse(n, &back) && back == v;
        for (int u = 0; fine && u < v; u++) fine = strcmp(w->name(u), n) != 0;
        if (!fine) printf("  %s %d: name \"%s\" parses back to %d\n", w->vocabulary, v, n ? n : "(null)", back);
        ok = ok && fine;
    }
    tu_check(ok, "%s: all %d values have distinct names that parse back to them", w->vocabulary, w->count);
    int v = 12345;
    tu_check(strcmp(w->name(w->count), "?") == 0 && strcmp(w->name(-1), "?") == 0 && !w->parse("", &v) &&
                 !w->parse(NULL, &v) && !w->parse("no-such-name", &v) && v == 12345,
             "%s: no name past the table (\"%s\"), and unknown names do not parse", w->vocabulary, w->name(w->count));
}

static void dtype_words(void)
{
    static const struct {
        const char *word;
        fmlp_dtype dtype;
        size_t bytes;
    } words[] = {{"f32", FMLP_F32, 4},      {"float32", FMLP_F32, 4},  {"fp32", FMLP_F32, 4}, {"bf16", FMLP_BF16, 2},
                 {"bfloat16", FMLP_BF16, 2}, {"f16", FMLP_F16, 2},     {"float16", FMLP_F16, 2}, {"fp16", FMLP_F16, 2}};
    bool ok = true;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        fmlp_dtype d = (fmlp_dtype)-1;
        ok = ok && fmlp_dtype_parse(words[i].word, &d) && d == words[i].dtype && fmlp_dtype_size(d) == words[i].bytes;
    }
    tu_check(ok, "dtypes: PyTorch's spellings parse too, and sizes are 4, 2, 2 bytes");
}

/* Each activation's plans: eager runs a kernel named after it, compiled a
 * fused act*mul under fmlp::fused_<name>_mul, fused a GLU GEMM; no two
 * activations share a kernel name. */
static void plans_spell_every_act(fmlp_ctx *ctx)
{
    char seen[FMLP_ACT_COUNT][3][96];
    bool ok = true;
    for (int a = FMLP_ACT_NONE + 1; a < FMLP_ACT_COUNT; a++) {
        const char *an = fmlp_act_name((fmlp_act)a);
        fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 16, 24, 0, 0, (fmlp_act)a, false, FMLP_F32};
        fmlp_mlp *m;
        if (!tu_check(fmlp_mlp_create(ctx, &d, 1, &m) == FMLP_OK, "create gated %s", an)) return;
        fmlp_plan_info eager, compiled, fused;
        bool made = fmlp_mlp_plan(m, FMLP_MODE_EAGER, 4, &eager) == FMLP_OK &&
                    fmlp_mlp_plan(m, FMLP_MODE_COMPILED, 4, &compiled) == FMLP_OK &&
                    fmlp_mlp_plan(m, FMLP_MODE_FUSED, 4, &fused) == FMLP_OK;
        fmlp_mlp_destroy(m);
        char fused_op[64];
        snprintf(fused_op, sizeof fused_op, "fused_%s_mul", an);
        bool fine = made && strcmp(eager.kernels[2].op, an) == 0 && strstr(eager.kernels[2].name, an) &&
                    strcmp(compiled.kernels[2].op, "act*mul") == 0 && strstr(compiled.kernels[2].name, fused_op) &&
                    strcmp(fused.kernels[0].op, "linear+glu") == 0;
        if (made) {
            snprintf(seen[a][0], sizeof seen[a][0], "%s", eager.kernels[2].name);
            snprintf(seen[a][1], sizeof seen[a][1], "%s", compiled.kernels[2].name);
            snprintf(seen[a][2], sizeof seen[a][2], "%s", fused.kernels[0].name);
            for (int b = FMLP_ACT_NONE + 1; b < a; b++)
                for (int k = 0; k < 3; k++) fine = fine && strcmp(seen[a][k], seen[b][k]) != 0;
        }
        if (!fine)
            printf("  %s: %s (%s), %s (%s), %s\n", an, made ? eager.kernels[2].name : "?", made ? eager.kernels[2].op : "?",
                   made ? compiled.kernels[2].name : "?", made ? compiled.kernels[2].op : "?",
                   made ? fused.kernels[0].name : "?");
        ok = ok && fine;
    }
    tu_check(ok, "plans name every activation's kernels after it, and no two activations share a kernel");
}

int main(void)
{
    tu_seed();
    const vocab all[] = {{"devices", FMLP_DEVICE_COUNT, device_name, device_parse},
                         {"dtypes", FMLP_DTYPE_COUNT, dtype_name, dtype_parse},
                         {"modes", FMLP_MODE_COUNT, mode_name, mode_parse},
                         {"activations", FMLP_ACT_COUNT, act_name, act_parse}};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) round_trip(&all[i]);
    dtype_words();
    fmlp_ctx *ctx;
    if (tu_check(fmlp_ctx_create(NULL, &ctx) == FMLP_OK, "context")) {
        plans_spell_every_act(ctx);
        fmlp_ctx_destroy(ctx);
    }
    return tu_finish();
}
