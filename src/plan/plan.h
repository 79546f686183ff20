/* Why: a plan is what a mode will run for an MLP and a row count, known
 * before anything runs, so users can guess first and then look. The
 * executor walks exactly this list; the profiler verifies it afterwards. */
#ifndef FMLP_PLAN_PLAN_H
#define FMLP_PLAN_PLAN_H

#include "core/internal.h"
#include "core/kernel.h"

typedef struct {
    fmlp_mode resolved;
    int n;
    fmlp_kernel k[FMLP_MAX_PLAN_KERNELS];
    int64_t t_cols[FMLP_BUF_COUNT]; /* widths of the workspace buffers T0..T2 (0 = unused) */
    const char *outer;              /* the module op around the whole forward */
    int64_t flops, bytes;           /* the kernels' totals */
    char why[128];
} fmlp_plan;

/* Builds the plan; rows must be >= 1, and its FLOP and byte counts must
 * fit int64 (too many rows is an error saying so). */
fmlp_status fmlp_plan_build(const fmlp_mlp *m, fmlp_mode mode, int64_t rows, fmlp_plan *out);

/* The cached plan for (mode, rows), built on first use; give it back with
 * fmlp_plan_release when the forward is done. Safe from concurrent forwards. */
fmlp_status fmlp_plan_get(fmlp_mlp *m, fmlp_mode mode, int64_t rows, const fmlp_plan **out);
void fmlp_plan_release(fmlp_mlp *m, const fmlp_plan *p);

/* The mode AUTO runs for this MLP and row count, and why: what the
 * context measured (auto.c), else the backend's rule, else fused. */
fmlp_mode fmlp_plan_auto(const fmlp_mlp *m, int64_t rows, char *why, size_t why_len);

/* auto.c. The mode an AUTO forward of `rows` runs. Where the context
 * decides AUTO by measurement, the first such forward of an MLP shape and
 * row bucket times the candidate modes on scratch tensors and remembers the
 * winner; it measures nothing (and remembers nothing) while a profiler
 * records or the caller captures a graph, and falls back to the rule. */
fmlp_mode fmlp_auto_resolve(fmlp_mlp *m, int64_t rows);
/* The remembered choice for this MLP's shape at `rows`, if any. */
bool fmlp_auto_lookup(const fmlp_mlp *m, int64_t rows, fmlp_mode *mode, char *why, size_t why_len);

/* exec.c: the plan's kernels on `bufs` (FMLP_BUF_COUNT views); `prof` NULL
 * records nothing. */
fmlp_status fmlp_exec_run_kernels(fmlp_mlp *m, const fmlp_plan *p, fmlp_tensor *bufs, struct fmlp_profiler *prof);

#endif
