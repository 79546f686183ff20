/* Why: see torch_work.h. Sizes are doubles, so damaged shapes cannot
 * overflow; results are clamped. An entry that is an object counts like an
 * array for its sizes (its members in order) but has no element count, as
 * the shapes' readers have always treated them. */
#define _GNU_SOURCE
#include "profiler/torch_work.h"

#include <string.h>

/* Read as the C string it is up to any NUL, as the type names always were. */
static int64_t elem_size(const char *type, size_t len)
{
    size_t n = strnlen(type, len);
    if (memmem(type, n, "BFloat16", 8) || memmem(type, n, "Half", 4)) return 2;
    if ((n == 5 && memcmp(type, "float", 5) == 0) || memmem(type, n, "Float", 5)) return 4;
    if (n == 6 && memcmp(type, "double", 6) == 0) return 8;
    return 0;
}

static double size_of(double d) { return d > 0 && d < 1e12 ? d : 0; }

/* One entry of "Input Dims", its first token t. */
static bool read_entry(jp_parser *p, jp_token t, bool keep, pe_torch_dims *in)
{
    if (t != JP_ARRAY && t != JP_OBJECT) return jp_leave(p, t);
    bool array = t == JP_ARRAY;
    double numel = 1;
    size_t k = 0;
    for (;;) {
        jp_token c = jp_next(p);
        if (c == JP_KEY) c = jp_next(p);
        if (c == JP_ARRAY_END || c == JP_OBJECT_END) break;
        if (c == JP_ERROR) return false;
        double d = c == JP_NUMBER ? p->num : 0;
        if (keep && k < 3) in->d[k] = size_of(d);
        numel *= size_of(d);
        k++;
        if (!jp_leave(p, c)) return false;
    }
    if (keep) {
        in->array = array;
        in->numel = array && k ? numel : 0;
    }
    return true;
}

bool pe_torch_read_dims(jp_parser *p, jp_token t, pe_torch_args *a)
{
    a->have_dims = true;
    if (t != JP_ARRAY && t != JP_OBJECT) return jp_leave(p, t);
    for (;;) {
        jp_token c = jp_next(p);
        if (c == JP_KEY) c = jp_next(p);
        if (c == JP_ARRAY_END || c == JP_OBJECT_END) return true;
        if (c == JP_ERROR) return false;
        bool keep = a->n_dims < 3;
        if (!read_entry(p, c, keep, keep ? &a->in[a->n_dims] : NULL)) return false;
        a->n_dims++;
    }
}

bool pe_torch_read_type(jp_parser *p, jp_token t, pe_torch_args *a)
{
    a->have_type = true;
    if (t != JP_ARRAY && t != JP_OBJECT) return jp_leave(p, t);
    jp_token c = jp_next(p);
    if (c == JP_KEY) c = jp_next(p);
    if (c == JP_ARRAY_END || c == JP_OBJECT_END) return true;
    if (c == JP_STRING) a->elem_size = elem_size(p->str, p->len);
    return jp_leave(p, c) && jp_skip_rest(p);
}

static int64_t count(double v)
{
    return v > 0 && v < 1e18 ? (int64_t)v : 0;
}

/* Size j of entry i (0 beyond the first three entries or sizes). */
static double dim(const pe_torch_args *a, size_t i, size_t j)
{
    return i < 3 && i < a->n_dims && j < 3 ? a->in[i].d[j] : 0;
}

static double numel(const pe_torch_args *a, size_t i)
{
    return i < a->n_dims ? a->in[i].numel : 0;
}

bool pe_torch_work(const char *n, const pe_torch_args *a, int64_t *flops, int64_t *bytes)
{
    double es = (double)a->elem_size;
    if (!a->have_dims || a->n_dims == 0 || !es) return false;
    /* addmm / baddbmm take the bias first. */
    size_t b = strcmp(n, "aten::addmm") == 0 || strcmp(n, "aten::baddbmm") == 0 ? 1 : 0;
    if (strcmp(n, "aten::mm") == 0 || strcmp(n, "aten::addmm") == 0) {
        double m = dim(a, b, 0), k = dim(a, b, 1), nn = dim(a, b + 1, 1);
        *flops = count(2 * m * k * nn);
        *bytes = count((m * k + k * nn + m * nn) * es);
        return true;
    }
    if (strcmp(n, "aten::bmm") == 0 || strcmp(n, "aten::baddbmm") == 0) {
        double bt = dim(a, b, 0), m = dim(a, b, 1), k = dim(a, b, 2), nn = dim(a, b + 1, 2);
        *flops = count(2 * bt * m * k * nn);
        *bytes = count(bt * (m * k + k * nn + m * nn) * es);
        return true;
    }
    if (strcmp(n, "aten::mul") == 0 || strcmp(n, "aten::add") == 0) {
        double in0 = numel(a, 0), other = numel(a, 1), out = in0 > other ? in0 : other;
        *flops = count(out);
        *bytes = count((in0 + other + out) * es);
        return true;
    }
    return false;
}
