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

/* Sizes in doubles, so damaged shapes cannot overflow; results clamped. */
static double dim(const json_value *dims, size_t i, size_t j)
{
    double d = json_num(json_at(json_at(dims, i), j), 0);
    return d > 0 && d < 1e12 ? d : 0;
}

static double numel(const json_value *shape)
{
    if (!shape || shape->type != JSON_ARRAY || json_len(shape) == 0) return 0;
    double n = 1;
    for (size_t i = 0; i < json_len(shape); i++) {
        double d = json_num(json_at(shape, i), 0);
        n *= d > 0 && d < 1e12 ? d : 0;
    }
    return n;
}

static int64_t count(double v)
{
    return v > 0 && v < 1e18 ? (int64_t)v : 0;
}

void pe_torch_work(pe_event *e, const json_value *args)
{
    const json_value *dims = json_get(args, "Input Dims");
    double es = (double)elem_size(json_str(json_at(json_get(args, "Input type"), 0)));
    if (!dims || json_len(dims) == 0 || !es) return;
    const char *n = e->name;
    /* addmm / baddbmm take the bias first. */
    size_t a = strcmp(n, "aten::addmm") == 0 || strcmp(n, "aten::baddbmm") == 0 ? 1 : 0;
    if (strcmp(n, "aten::mm") == 0 || strcmp(n, "aten::addmm") == 0) {
        double m = dim(dims, a, 0), k = dim(dims, a, 1), nn = dim(dims, a + 1, 1);
        e->flops = count(2 * m * k * nn);
        e->bytes = count((m * k + k * nn + m * nn) * es);
    } else if (strcmp(n, "aten::bmm") == 0 || strcmp(n, "aten::baddbmm") == 0) {
        double b = dim(dims, a, 0), m = dim(dims, a, 1), k = dim(dims, a, 2), nn = dim(dims, a + 1, 2);
        e->flops = count(2 * b * m * k * nn);
        e->bytes = count(b * (m * k + k * nn + m * nn) * es);
    } else if (strcmp(n, "aten::mul") == 0 || strcmp(n, "aten::add") == 0) {
        double in0 = numel(json_at(dims, 0)), other = numel(json_at(dims, 1)), out = in0 > other ? in0 : other;
        e->flops = count(out);
        e->bytes = count((in0 + other + out) * es);
    }
}
