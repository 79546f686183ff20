/* Why: see checked.h. */
#include "core/checked.h"

#include <stdio.h>

#include "core/error.h"

bool fmlp_mul_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (!out || __builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

bool fmlp_add_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (!out || __builtin_add_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

bool fmlp_mul3_i64(int64_t a, int64_t b, int64_t c, int64_t *out)
{
    int64_t ab;
    return fmlp_mul_i64(a, b, &ab) && fmlp_mul_i64(ab, c, out);
}

fmlp_status fmlp_too_large(const char *what, const char *detail, const char *unit, const char *fix)
{
    return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s (%s) is more than %lld %s, the most fmlp counts; %s", what, detail,
                     (long long)FMLP_SIZE_LIMIT, unit, fix);
}

fmlp_status fmlp_checked_bytes(const char *what, int64_t rows, int64_t cols, fmlp_dtype dtype, const char *fix,
                               int64_t *bytes)
{
    if (fmlp_mul3_i64(rows, cols, (int64_t)fmlp_dtype_size(dtype), bytes)) return FMLP_OK;
    char detail[128];
    snprintf(detail, sizeof detail, "%lld x %lld %s elements of %zu bytes", (long long)rows, (long long)cols,
             fmlp_dtype_name(dtype), fmlp_dtype_size(dtype));
    return fmlp_too_large(what, detail, "bytes", fix);
}
