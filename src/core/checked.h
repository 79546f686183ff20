/* Why: sizes, counts and FLOPs are products of values users choose (shapes,
 * row counts, schedules, file headers, flags), and in int64 they overflow
 * long before memory runs out; a wrapped size turns into a tiny allocation
 * and writes past it. Every such product in the library is computed with
 * fmlp_mul_i64 / fmlp_add_i64 (fmlp.h), and these helpers turn an overflow
 * into a failure that names the values, the limit and what to do. */
#ifndef FMLP_CORE_CHECKED_H
#define FMLP_CORE_CHECKED_H

#include <stddef.h>
#include <stdint.h>

#include "fmlp.h"

/* The most bytes, elements or FLOPs fmlp counts: INT64_MAX. */
#define FMLP_SIZE_LIMIT INT64_MAX

/* a * b * c; false when it does not fit int64. */
bool fmlp_mul3_i64(int64_t a, int64_t b, int64_t c, int64_t *out);

/* The bytes of rows x cols elements of `dtype` (both >= 0). On overflow
 * fails as fmlp_too_large does, the detail naming rows, cols and dtype. */
fmlp_status fmlp_checked_bytes(const char *what, int64_t rows, int64_t cols, fmlp_dtype dtype, const char *fix,
                               int64_t *bytes);

/* The failure for a product found too large, FMLP_ERR_INVALID_ARGUMENT:
 * "<what> (<detail>) is more than <limit> <unit>, the most fmlp counts;
 * <fix>". */
fmlp_status fmlp_too_large(const char *what, const char *detail, const char *unit, const char *fix);

#endif
