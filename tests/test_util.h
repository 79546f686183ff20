/* Why: every test draws fresh random data, poisons outputs and measures
 * ‖out − ref‖ / ‖ref‖ against a double reference with a per-dtype bound;
 * these helpers keep that discipline in one place. A test prints one line per
 * check and ends with "N passed, N failed" (exit 0 only when none failed). */
#ifndef FMLP_TEST_UTIL_H
#define FMLP_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fmlp.h"

/* Deterministic per-test generator, reseeded from the clock unless
 * FMLP_TEST_SEED is set; the seed is printed so a failure can be replayed. */
void tu_seed(void);
uint64_t tu_rand_u64(void);
double tu_rand_uniform(double lo, double hi); /* never exactly 0 */
/* Fills n elements of `dtype` with uniform(lo, hi) and returns them, as
 * stored (rounded), in `as_f64` when non-NULL. */
void tu_fill(fmlp_dtype dtype, void *p, int64_t n, double lo, double hi, double *as_f64);
/* Fills with a NaN bit pattern so unwritten elements show up. */
void tu_poison(fmlp_dtype dtype, void *p, int64_t n);
/* Reads element i as double. */
double tu_get(fmlp_dtype dtype, const void *p, int64_t i);

/* ‖a − ref‖₂ / ‖ref‖₂ over rows × cols with row strides; NaN anywhere in a
 * (where ref is finite) gives +Inf. */
double tu_rel_err(fmlp_dtype dtype, const void *a, int64_t lda, const double *ref, int64_t ldr, int64_t rows,
                  int64_t cols);
/* The same over n doubles (sums of several outputs, such as the shards' of
 * a tensor-parallel forward); a non-finite a where ref is finite gives +Inf. */
double tu_rel_err_f64(const double *a, const double *ref, int64_t n);
/* The bound for a dtype: f32 1e-5, bf16 1e-2, f16 2e-3. */
double tu_tol(fmlp_dtype dtype);

/* Records one check; prints "ok"/"FAIL" with the message. */
bool tu_check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "skipped: why" and counts it. */
void tu_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints the summary line and returns the exit code (77 when everything was
 * skipped and nothing ran). */
int tu_finish(void);

/* Checks that a call failed with `want` and left a non-empty message. */
bool tu_expect_fail(fmlp_status got, fmlp_status want, const char *what);

/* One MLP shape a test sweeps over. */
typedef struct {
    const char *name;
    fmlp_block block;
    fmlp_act act;
    int layers;
    int64_t dim, hidden, out_dim;
    bool bias;
} tu_shape_case;

/* The bound for a whole block: tu_tol per rounded intermediate. A gated
 * block or a 2-layer stack rounds one (h); a stack of L layers rounds
 * L - 1, and to first order their relative errors add. */
double tu_tol_case(const tu_shape_case *c, fmlp_dtype dtype);

/* tu_tol_case for a forward in `mode`. Eager and compiled round a gated
 * block's gate and up outputs before the GLU, as PyTorch does, and eager
 * its activation's output too: each stage one more rounded intermediate
 * (test_modes over 200 seeds, bf16 at 1-3 rows: eager up to 1.3e-2,
 * compiled 1.1e-2, fused 0.7e-2; about one run in 100 failed the one-stage
 * bound in eager or compiled). */
double tu_tol_mode(const tu_shape_case *c, fmlp_dtype dtype, fmlp_mode mode);

/* The two cases that sweep activation `act`: gated (dim, hidden) and a
 * 3-layer stack (dim, hidden, out_dim), both with biases, named after it
 * ("gated-relu", "stack-relu-3+bias"). */
typedef struct {
    char names[2][40];
    tu_shape_case cases[2];
} tu_act_sweep;
void tu_act_sweep_for(fmlp_act act, int64_t dim, int64_t hidden, int64_t out_dim, tu_act_sweep *out);

/* A whole file, NUL-terminated, in malloc'd memory (NULL when unreadable);
 * its length in *len. */
char *tu_read_file(const char *path, size_t *len);

/* A scratch directory for files (created on demand). */
const char *tu_tmpdir(void);

/* Runs fn(arg, out) in a child process and copies its `out_len` bytes of
 * out back; *grew_kb gets how much the child's peak resident size grew
 * while fn ran (what fn held at its peak). false if the child failed. */
bool tu_run_in_child(void (*fn)(void *arg, void *out), void *arg, void *out, size_t out_len, long *grew_kb);

/* A CPU context of `threads` workers, or NULL after a failed check. */
fmlp_ctx *tu_ctx(int threads);

/* fmlp_mlp_reference, its rows split over up to 16 threads: a row's
 * reference depends on that row alone, so the result is the same bits as
 * one call. */
fmlp_status tu_mlp_reference(const fmlp_mlp *m, const double *x, int64_t rows, double *y);

#endif
