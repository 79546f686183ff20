/* Why: a plan is what a mode will run for an MLP and a row count, known
 * before anything runs, so users can guess first and then look. The
 * executor walks exactly this list; the profiler verifies it afterwards. */
#ifndef FMLP_PLAN_PLAN_H
#define FMLP_PLAN_PLAN_H

#include "core/internal.h"
#include "core/kernel.h"
#include "profiler/hook.h"

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

/* A kernel's FLOPs and minimum bytes from its kind and shape (k->m rows);
 * false when either overflows int64. */
bool fmlp_plan_count_work(const fmlp_mlp *m, fmlp_kernel *k);

/* exec.c: the plan's kernels on `bufs` (FMLP_BUF_COUNT views); `prof` NULL
 * records nothing. */
fmlp_status fmlp_exec_run_kernels(fmlp_mlp *m, const fmlp_plan *p, fmlp_tensor *bufs, struct fmlp_profiler *prof);

/* One forward made ready to run: x and y checked, the plan lent, the
 * workspace taken and laid out in bufs, a host x copied to the device
 * (a host y is written to bufs[FMLP_BUF_Y] and copied back by close). */
typedef struct {
    fmlp_mlp *m;
    const fmlp_plan *p;
    fmlp_ws_block *ws;
    fmlp_tensor bufs[FMLP_BUF_COUNT];
    fmlp_tensor y; /* the caller's */
    bool stage_x, stage_y;
} fmlp_exec_forward;
/* Nothing to close after a failure. */
fmlp_status fmlp_exec_open(fmlp_mlp *m, fmlp_mode mode, const fmlp_tensor *x, fmlp_tensor *y, fmlp_exec_forward *f);
/* Copies a staged y back and waits where anything was staged (unless s
 * failed), gives back the workspace and the plan; returns s, else its own
 * failure. */
fmlp_status fmlp_exec_close(fmlp_exec_forward *f, fmlp_status s);

/* A forward whose last kernel its caller runs on row ranges, one range
 * after another on the context's stream, doing work of its own between
 * them (tensor parallelism all-reduces each range of y while the next is
 * computed). Only a last kernel that is a GEMM reading an intermediate
 * into y is split (fmlp_exec_splits): every output row of it reads only
 * the same row of its input. Kernels run as fmlp_mlp_forward runs them,
 * under the same profiler ops, but never from a CUDA graph. */
typedef struct {
    fmlp_exec_forward f;
    bool split; /* false: begin ran the whole plan */
    fmlp_prof_hold hold;
    int64_t outer; /* the op around the forward */
} fmlp_exec_split;
bool fmlp_exec_splits(const fmlp_plan *p);
/* Opens the forward and runs every kernel but a split last one. Nothing
 * to end after a failure. */
fmlp_status fmlp_exec_split_begin(fmlp_mlp *m, fmlp_mode mode, const fmlp_tensor *x, fmlp_tensor *y,
                                  fmlp_exec_split *sp);
/* The last kernel on rows [r0, r0 + n) of its input and of y. */
fmlp_status fmlp_exec_split_rows(fmlp_exec_split *sp, int64_t r0, int64_t n);
/* Closes the op and the forward (fmlp_exec_close); returns s, else its
 * own failure. Forwards on other contexts split by the same thread end in
 * the reverse order of their begins, as the ops they opened nest. */
fmlp_status fmlp_exec_split_end(fmlp_exec_split *sp, fmlp_status s);

#endif
