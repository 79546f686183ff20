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
    /* wall = kernel + copy + overhead + idle (see fmlp_profile_summary) */
    double wall_us, kernel_us, overhead_us, idle_us, copy_us;
    int kernels; /* kernel activities: GPU kernels, CPU regions (one per correlation) */
    int copies;  /* GPU memcpy and memset activities */
    double flops, bytes; /* the kernels' */
    double copy_bytes, host_bytes; /* the copies' and memsets': all, and those to or from the host */
    bool pageable, pinned;         /* a host copy named its host memory so */
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

/* verdict.c: adds one copy or memset activity (Kineto's name, its bytes)
 * to a step's copy figures. */
void pe_note_copy(pe_step_stat *st, const char *name, double bytes);
/* The step's bound and reason, from its time split, counts and work, the
 * set's ceilings, whether the work ran on a GPU (`device`) and in 16-bit
 * floats (`bf16`). */
void pe_verdict(const pe_set *s, bool device, bool bf16, pe_step_stat *st);

#endif
