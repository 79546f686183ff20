/* Why: the profiler joins CPU spans, worker-thread kernels and (through
 * CUPTI) GPU records on one clock; this is it. CLOCK_MONOTONIC in ns, which
 * is also what CUPTI's default timestamps use on Linux. */
#ifndef FMLP_CORE_CLOCK_H
#define FMLP_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t fmlp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The OS thread id, as Kineto writes it for CPU lanes. */
int fmlp_thread_id(void);

#endif
