/* Why: the GEMM is where the time goes. Weights are packed once at load
 * time into the layout the chosen microkernel streams; the run call blocks
 * for the caches, spreads tiles over the pool and applies the epilogue
 * (bias, activation, or the GLU of a gate/up pair) while the tile is hot. */
#ifndef FMLP_CPU_GEMM_H
#define FMLP_CPU_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/path.h"
#include "cpu/pool.h"
#include "fmlp.h"

typedef struct cpu_packed cpu_packed;

/* w: (n, k) row-major in `dtype` (PyTorch's Linear weight), b: (n) or NULL.
 * NULL on out-of-memory. `path` must be available and is mapped through
 * cpu_path_for_dtype. */
cpu_packed *cpu_gemm_pack(cpu_path path, fmlp_dtype dtype, const void *w, const void *b, int64_t n, int64_t k);
/* Gate and up (each (n, k)), packed so one pass over A computes both. */
cpu_packed *cpu_gemm_pack_glu(cpu_path path, fmlp_dtype dtype, const void *wg, const void *bg, const void *wu,
                              const void *bu, int64_t n, int64_t k);
void cpu_packed_free(cpu_packed *p);
/* Cuts k into chunks of kc (kc >= k: not cut) for later runs; the packing
 * picks a chunk by itself, and any chunk gives the same bits (tests and
 * benchmarks compare them). False where kc is not a multiple of the path's
 * k step, or the path's kernels cannot continue a sum. */
bool cpu_packed_set_k_chunk(cpu_packed *p, int64_t kc);
/* The k chunk a run of m rows uses (k rounded up to the path's step where
 * it is not cut). */
int64_t cpu_packed_k_chunk(const cpu_packed *p, int64_t m);
cpu_path cpu_packed_path(const cpu_packed *p);

/* C = act(A · Wᵀ + b), or for a GLU packing C = act(A · Gᵀ + bg) * (A · Uᵀ + bu).
 * A: (m, k) in the packing's dtype, row stride lda; C: (m, n), row stride
 * ldc, same dtype (accumulation in f32, one rounding at the end). Each C
 * element is computed by one thread in a fixed order whatever the thread
 * count, so results are bit-identical across runs and thread counts.
 * times: per-thread lanes for the profiler, or NULL. */
void cpu_gemm_run(cpu_pool *pool, const cpu_packed *p, fmlp_act act, const void *A, int64_t lda, void *C,
                  int64_t ldc, int64_t m, cpu_lane_time *times);
/* Threads cpu_gemm_run will use for m rows (for the profiler's lane count). */
int cpu_gemm_threads(cpu_pool *pool, const cpu_packed *p, int64_t m);

#endif
