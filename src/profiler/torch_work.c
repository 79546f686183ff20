/* Why: see torch_work.h. */
#include "profiler/torch_work.h"

#include <stdlib.h>
#include <string.h>

static int64_t elem_size(const char *type)
{
    if (!type) return 0;
    if (strstr(type, "BFloat16") || strstr(type, "Half")) return 2;
    if (strcmp(type, "float") == 0 || strstr(type, "Float")) return 4;
    if (strcmp(type, "double") == 0) return 8;
    return 0;
}

static int64_t dim(const json_value *dims, size_t i, size_t j)
{
    return (int64_t)json_num(json_at(json_at(dims, i), j), 0);
}

static int64_t numel(const json_value *shape)
{
    if (!shape || shape->type != JSON_ARRAY || json_len(shape) == 0) return 0;
    int64_t n = 1;
    for (size_t i = 0; i < json_len(shape); i++) n *= (int64_t)json_num(json_at(shape, i), 0);
    return n;
}

void pe_torch_work(pe_event *e, const json_value *args)
{
    const json_value *dims = json_get(args, "Input Dims");
    int64_t es = elem_size(json_str(json_at(json_get(args, "Input type"), 0)));
    if (!dims || json_len(dims) == 0 || !es) return;
    const char *n = e->name;
    /* addmm / baddbmm take the bias first. */
    size_t a = strcmp(n, "aten::addmm") == 0 || strcmp(n, "aten::baddbmm") == 0 ? 1 : 0;
    if (strcmp(n, "aten::mm") == 0 || strcmp(n, "aten::addmm") == 0) {
        int64_t m = dim(dims, a, 0), k = dim(dims, a, 1), nn = dim(dims, a + 1, 1);
        e->flops = 2 * m * k * nn;
        e->bytes = (m * k + k * nn + m * nn) * es;
    } else if (strcmp(n, "aten::bmm") == 0 || strcmp(n, "aten::baddbmm") == 0) {
        int64_t b = dim(dims, a, 0), m = dim(dims, a, 1), k = dim(dims, a, 2), nn = dim(dims, a + 1, 2);
        e->flops = 2 * b * m * k * nn;
        e->bytes = b * (m * k + k * nn + m * nn) * es;
    } else if (strcmp(n, "aten::mul") == 0 || strcmp(n, "aten::add") == 0) {
        int64_t out = numel(json_at(dims, 0)), other = numel(json_at(dims, 1));
        if (other > out) out = other;
        e->flops = out;
        e->bytes = (numel(json_at(dims, 0)) + other + out) * es;
    }
}
