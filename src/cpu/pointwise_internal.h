/* Why: pointwise.c splits a pass over threads and rows; the per-ISA files
 * under simd/ transform one contiguous row segment. This is their seam. */
#ifndef FMLP_CPU_POINTWISE_INTERNAL_H
#define FMLP_CPU_POINTWISE_INTERNAL_H

#include <stdint.h>

#include "cpu/pointwise.h"

/* out[i] = act(a[i]) | a[i] * b[i] | act(a[i]) * b[i] for i < n, all three
 * pointers already at the segment's first element. */
typedef void (*pw_row_fn)(fmlp_dtype dt, cpu_pw_kind kind, fmlp_act act, const void *a, const void *b, void *out,
                          int64_t n);

void pw_row_scalar(fmlp_dtype dt, cpu_pw_kind kind, fmlp_act act, const void *a, const void *b, void *out, int64_t n);
void pw_row_avx2(fmlp_dtype dt, cpu_pw_kind kind, fmlp_act act, const void *a, const void *b, void *out, int64_t n);
void pw_row_avx512(fmlp_dtype dt, cpu_pw_kind kind, fmlp_act act, const void *a, const void *b, void *out, int64_t n);

#endif
