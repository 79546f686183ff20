/* Why: the tutorial's lesson made automatic. Per step: where the wall time
 * went (kernels, dispatch overhead, idle); per kernel: what it cost to get
 * it running against how long it ran, and how close it came to the
 * machine's ceilings; and a verdict with the numbers behind it. */
#ifndef FMLP_PROFILER_ANALYSIS_H
#define FMLP_PROFILER_ANALYSIS_H

#include <stdio.h>

#include "fmlp.h"
#include "profiler/events.h"
#include "profiler/tree.h"

typedef struct {
    const char *name; /* ProfilerStep#N, or "(window)" when no steps */
    int64_t t0, t1;
    double wall_us, kernel_us, overhead_us, idle_us;
    int kernels; /* distinct launches (correlation ids), copies apart */
    int copies;  /* GPU memcpy and memset launches */
    double flops, bytes;
    fmlp_bound bound;
    char reason[256];
} pe_step_stat;

typedef struct {
    const char *name;
    int calls;
    double dur_us, dispatch_us; /* averages per launch */
    double flops, bytes;        /* totals */
    bool device;
    size_t first; /* first-seen rank, for ties in the order */
} pe_kernel_stat;

typedef struct {
    int n_steps;
    pe_step_stat *steps;
    int n_kernels;
    pe_kernel_stat *kernels; /* by total time, largest first */
    bool ops_as_kernels;     /* a CPU-only torch trace: leaf ops stand in */
    bool device;             /* work ran on a GPU */
    fmlp_profile_summary sum;
} pe_analysis;

/* false when out of memory or the set holds no spans. */
bool pe_analyze(const pe_set *s, const pe_calls *cs, pe_analysis *out);
void pe_analysis_free(pe_analysis *a);
void pe_analysis_print(const pe_analysis *a, const pe_set *s, FILE *f);
/* The "fmlpAnalysis" object stored in traces. */
void pe_analysis_json(const pe_analysis *a, const pe_set *s, FILE *f);
const char *pe_bound_name(fmlp_bound b); /* "overhead-bound", ... */

#endif
