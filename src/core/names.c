/* Why: the words of the vocabulary (dtypes, modes, activations, devices) as
 * the CLI, plans and traces spell them, in one table each. */
#include <string.h>

#include "fmlp.h"

static const char *const dtype_names[] = {"f32", "bf16", "f16"};
static const char *const mode_names[] = {"eager", "compiled", "fused", "auto"};
static const char *const act_names[] = {"none", "gelu", "gelu_tanh", "silu", "relu"};
static const char *const device_names[] = {"cpu", "cuda"};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *name_of(const char *const *names, int n, int v) { return v >= 0 && v < n ? names[v] : "?"; }

static bool parse(const char *const *names, int n, const char *s, int *out)
{
    if (!s) return false;
    for (int i = 0; i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return true;
        }
    }
    return false;
}

const char *fmlp_dtype_name(fmlp_dtype d) { return name_of(dtype_names, COUNT(dtype_names), d); }
const char *fmlp_mode_name(fmlp_mode m) { return name_of(mode_names, COUNT(mode_names), m); }
const char *fmlp_act_name(fmlp_act a) { return name_of(act_names, COUNT(act_names), a); }
const char *fmlp_device_name(fmlp_device d) { return name_of(device_names, COUNT(device_names), d); }

bool fmlp_dtype_parse(const char *s, fmlp_dtype *out)
{
    int v;
    if (s && (strcmp(s, "float32") == 0 || strcmp(s, "fp32") == 0)) s = "f32";
    if (s && (strcmp(s, "bfloat16") == 0)) s = "bf16";
    if (s && (strcmp(s, "float16") == 0 || strcmp(s, "fp16") == 0)) s = "f16";
    if (!parse(dtype_names, COUNT(dtype_names), s, &v)) return false;
    *out = (fmlp_dtype)v;
    return true;
}

bool fmlp_mode_parse(const char *s, fmlp_mode *out)
{
    int v;
    if (!parse(mode_names, COUNT(mode_names), s, &v)) return false;
    *out = (fmlp_mode)v;
    return true;
}

bool fmlp_act_parse(const char *s, fmlp_act *out)
{
    int v;
    if (!parse(act_names, COUNT(act_names), s, &v)) return false;
    *out = (fmlp_act)v;
    return true;
}

bool fmlp_device_parse(const char *s, fmlp_device *out)
{
    int v;
    if (!parse(device_names, COUNT(device_names), s, &v)) return false;
    *out = (fmlp_device)v;
    return true;
}

size_t fmlp_dtype_size(fmlp_dtype d) { return d == FMLP_F32 ? 4 : 2; }
