/* Why: eager and compiled modes run activations and the gate·up product as
 * separate passes over memory, exactly as PyTorch's kernels do: inputs
 * widened to f32, one rounding to the storage dtype on the way out. Vector
 * versions keep those passes at memory speed. */
#ifndef FMLP_CPU_POINTWISE_H
#define FMLP_CPU_POINTWISE_H

#include <stdint.h>

#include "cpu/path.h"
#include "cpu/pool.h"
#include "fmlp.h"

typedef enum { CPU_PW_ACT, CPU_PW_MUL, CPU_PW_GLU } cpu_pw_kind;

/* out = act(a) | a * b | act(a) * b over (m, n) views with row strides. */
void cpu_pointwise_run(cpu_pool *pool, cpu_path path, fmlp_dtype dtype, cpu_pw_kind kind, fmlp_act act,
                       const void *a, int64_t lda, const void *b, int64_t ldb, void *out, int64_t ldo, int64_t m,
                       int64_t n, cpu_lane_time *times);
int cpu_pointwise_threads(cpu_pool *pool, int64_t m, int64_t n);

/* Scalar activations in f32 (the reference path and tails). */
float cpu_act_f32(fmlp_act act, float x);

#endif
