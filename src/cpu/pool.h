/* Why: one persistent set of worker threads per context, so a parallel
 * region costs a wake-up, not a thread creation. One region runs at a time
 * per pool; concurrent callers queue on it. Kernels decide how work is cut
 * (by shape only) and may let threads claim pieces dynamically, so results
 * never depend on which thread ran what. */
#ifndef FMLP_CPU_POOL_H
#define FMLP_CPU_POOL_H

#include <stdint.h>

typedef struct cpu_pool cpu_pool;

/* fn runs once on every thread: tid 0 is the calling thread. */
typedef void (*cpu_task_fn)(void *arg, int tid, int nthreads);

/* Where each thread spent the region, for the profiler's kernel lanes. */
typedef struct {
    int64_t t0_ns, t1_ns;
    int os_tid;
} cpu_lane_time;

cpu_pool *cpu_pool_create(int threads); /* NULL on failure */
void cpu_pool_destroy(cpu_pool *p);
int cpu_pool_threads(const cpu_pool *p);
/* Runs fn on `nthreads` threads (<= pool size; 0 = all) and waits; fills
 * times[0..nthreads) when times is non-NULL. */
void cpu_pool_run(cpu_pool *p, int nthreads, cpu_task_fn fn, void *arg, cpu_lane_time *times);

/* Splits [0, n) into `parts` near-equal ranges; range `i` is [*lo, *hi). */
static inline void cpu_split(int64_t n, int parts, int i, int64_t *lo, int64_t *hi)
{
    int64_t q = n / parts, r = n % parts;
    *lo = i * q + (i < r ? i : r);
    *hi = *lo + q + (i < r ? 1 : 0);
}

#endif
