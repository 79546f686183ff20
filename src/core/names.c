/* Why: the words of the vocabulary (dtypes, modes, activations, devices) as
 * the CLI, plans and traces spell them, generated from fmlp.h's tables, and
 * the "a, b or c" lists that error messages offer. */
#include <stdio.h>
#include <string.h>

#include "core/names.h"

#define NAME_OF_ROW(e, name, ...) #name,

static const char *const device_names[] = {FMLP_DEVICE_TABLE(NAME_OF_ROW)};
static const char *const dtype_names[] = {FMLP_DTYPE_TABLE(NAME_OF_ROW)};
static const char *const mode_names[] = {FMLP_MODE_TABLE(NAME_OF_ROW)};
static const char *const act_names[] = {FMLP_ACT_TABLE(NAME_OF_ROW)};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

_Static_assert(COUNT(device_names) == FMLP_DEVICE_COUNT, "a device without a name");
_Static_assert(COUNT(dtype_names) == FMLP_DTYPE_COUNT, "a dtype without a name");
_Static_assert(COUNT(mode_names) == FMLP_MODE_COUNT, "a mode without a name");
_Static_assert(COUNT(act_names) == FMLP_ACT_COUNT, "an activation without a name");

/* Spellings PyTorch users type for the dtypes. */
static const struct {
    const char *alias;
    fmlp_dtype dtype;
} dtype_aliases[] = {
    {"float32", FMLP_F32}, {"fp32", FMLP_F32}, {"bfloat16", FMLP_BF16}, {"float16", FMLP_F16}, {"fp16", FMLP_F16},
};

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

static const char *join(const char *const *names, int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++) {
        const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
        used += (size_t)snprintf(buf + used, len - used, "%s%s", sep, names[i]);
    }
    return buf;
}

const char *fmlp_dtype_name(fmlp_dtype d) { return name_of(dtype_names, COUNT(dtype_names), d); }
const char *fmlp_mode_name(fmlp_mode m) { return name_of(mode_names, COUNT(mode_names), m); }
const char *fmlp_act_name(fmlp_act a) { return name_of(act_names, COUNT(act_names), a); }
const char *fmlp_device_name(fmlp_device d) { return name_of(device_names, COUNT(device_names), d); }

const char *fmlp_dtype_choices(char *buf, size_t len) { return join(dtype_names, COUNT(dtype_names), buf, len); }
const char *fmlp_mode_choices(char *buf, size_t len) { return join(mode_names, COUNT(mode_names), buf, len); }
const char *fmlp_act_choices(char *buf, size_t len) { return join(act_names, COUNT(act_names), buf, len); }

bool fmlp_dtype_parse(const char *s, fmlp_dtype *out)
{
    int v;
    for (int i = 0; s && i < COUNT(dtype_aliases); i++)
        if (strcmp(s, dtype_aliases[i].alias) == 0) s = dtype_names[dtype_aliases[i].dtype];
    if (!out || !parse(dtype_names, COUNT(dtype_names), s, &v)) return false;
    *out = (fmlp_dtype)v;
    return true;
}

bool fmlp_mode_parse(const char *s, fmlp_mode *out)
{
    int v;
    if (!out || !parse(mode_names, COUNT(mode_names), s, &v)) return false;
    *out = (fmlp_mode)v;
    return true;
}

bool fmlp_act_parse(const char *s, fmlp_act *out)
{
    int v;
    if (!out || !parse(act_names, COUNT(act_names), s, &v)) return false;
    *out = (fmlp_act)v;
    return true;
}

bool fmlp_device_parse(const char *s, fmlp_device *out)
{
    int v;
    if (!out || !parse(device_names, COUNT(device_names), s, &v)) return false;
    *out = (fmlp_device)v;
    return true;
}

#define SIZE_OF_ROW(e, name, bytes) [e] = bytes,
static const size_t dtype_sizes[] = {FMLP_DTYPE_TABLE(SIZE_OF_ROW)};
_Static_assert(COUNT(dtype_sizes) == FMLP_DTYPE_COUNT, "a dtype without a size");

size_t fmlp_dtype_size(fmlp_dtype d) { return (unsigned)d < FMLP_DTYPE_COUNT ? dtype_sizes[d] : 2; }
