/* Why: handles may be destroyed in any order, and a profiler may be stopped
 * or destroyed while other threads run forwards on its context (fmlp.h,
 * "Lifetimes"). A context destroyed before its MLPs and profilers stays
 * alive until the last of them goes; forwards that were recording when
 * their profiler went finish safely. Under ASan any use after free here is
 * a crash, and LeakSanitizer catches a context that is never freed. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define DIM 32
#define HIDDEN 48
#define ROWS 9
#define THREADS 3
#define CYCLES 120

static fmlp_mlp_desc geglu(void)
{
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_GELU_TANH, true, FMLP_F32};
    return d;
}

/* One forward against the double reference. */
static bool forward_ok(fmlp_mlp *m, fmlp_mode mode)
{
    float x[ROWS * DIM], y[ROWS * DIM];
    double xd[ROWS * DIM], ref[ROWS * DIM];
    tu_fill(FMLP_F32, x, ROWS * DIM, -1, 1, xd);
    tu_poison(FMLP_F32, y, ROWS * DIM);
    fmlp_tensor tx = fmlp_tensor_view(x, FMLP_F32, ROWS, DIM, DIM), ty = fmlp_tensor_view(y, FMLP_F32, ROWS, DIM, DIM);
    if (fmlp_mlp_forward(m, mode, &tx, &ty) != FMLP_OK || fmlp_mlp_reference(m, xd, ROWS, ref) != FMLP_OK) return false;
    return tu_rel_err(FMLP_F32, y, DIM, ref, DIM, ROWS, DIM) < tu_tol(FMLP_F32);
}

/* The context goes first: the MLP and the profiler keep working on it,
 * and whichever of them goes last frees it. */
static void context_first(bool profiler_last)
{
    fmlp_ctx_options o = fmlp_ctx_options_default();
    o.threads = 2;
    fmlp_ctx *ctx;
    fmlp_mlp *m;
    fmlp_profiler *p;
    fmlp_mlp_desc d = geglu();
    if (!tu_check(fmlp_ctx_create(&o, &ctx) == FMLP_OK && fmlp_mlp_create(ctx, &d, 3, &m) == FMLP_OK &&
                      fmlp_profiler_create(ctx, NULL, &p) == FMLP_OK,
                  "context, MLP and profiler"))
        return;
    fmlp_ctx_destroy(ctx);
    bool ok = fmlp_profiler_start(p) == FMLP_OK && forward_ok(m, FMLP_MODE_EAGER) && forward_ok(m, FMLP_MODE_FUSED) &&
              fmlp_profiler_stop(p) == FMLP_OK;
    fmlp_profile_summary s;
    ok = ok && fmlp_profiler_summary(p, &s) == FMLP_OK && s.kernels_per_step == 7;
    tu_check(ok, "after fmlp_ctx_destroy, forwards are right and profiled (%d kernels, want 5 + 2)", s.kernels_per_step);
    if (profiler_last) {
        fmlp_mlp_destroy(m);
        tu_check(fmlp_profiler_start(p) == FMLP_OK && fmlp_profiler_stop(p) == FMLP_OK,
                 "with the MLP gone too, the profiler still starts and stops");
        fmlp_profiler_destroy(p);
    } else {
        fmlp_profiler_destroy(p);
        tu_check(forward_ok(m, FMLP_MODE_COMPILED), "with the profiler gone too, the MLP still runs");
        fmlp_mlp_destroy(m);
    }
}

/* Forwards on one input checked against its reference, nonstop. */
typedef struct {
    fmlp_ctx *ctx;
    fmlp_mlp *mlp;
    float x[ROWS * DIM];
    double ref[ROWS * DIM];
    int stop;
    int forwards, wrong;
} runner;

static void *run_forwards(void *arg)
{
    runner *r = arg;
    static const fmlp_mode modes[] = {FMLP_MODE_EAGER, FMLP_MODE_COMPILED, FMLP_MODE_FUSED};
    float y[ROWS * DIM];
    fmlp_tensor tx = fmlp_tensor_view(r->x, FMLP_F32, ROWS, DIM, DIM), ty = fmlp_tensor_view(y, FMLP_F32, ROWS, DIM, DIM);
    for (int n = 0; !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE); n++) {
        tu_poison(FMLP_F32, y, ROWS * DIM);
        fmlp_range_push(r->ctx, "caller");
        bool ok = fmlp_mlp_forward(r->mlp, modes[n % 3], &tx, &ty) == FMLP_OK &&
                  tu_rel_err(FMLP_F32, y, DIM, r->ref, DIM, ROWS, DIM) < tu_tol(FMLP_F32);
        fmlp_range_pop(r->ctx);
        if (!ok) __atomic_add_fetch(&r->wrong, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&r->forwards, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* Waits until the threads have run `n` more forwards. */
static void let_run(runner *r, int n)
{
    int until = __atomic_load_n(&r->forwards, __ATOMIC_ACQUIRE) + n;
    while (__atomic_load_n(&r->forwards, __ATOMIC_ACQUIRE) < until) sched_yield();
}

/* Profilers made, stepped, stopped and destroyed over and over while
 * THREADS threads run forwards and ranges nonstop. */
static void destroy_under_forwards(void)
{
    fmlp_ctx_options o = fmlp_ctx_options_default();
    o.threads = 1;
    runner r;
    memset(&r, 0, sizeof r);
    fmlp_mlp_desc d = geglu();
    if (!tu_check(fmlp_ctx_create(&o, &r.ctx) == FMLP_OK && fmlp_mlp_create(r.ctx, &d, 5, &r.mlp) == FMLP_OK,
                  "context and MLP for the threads"))
        return;
    double xd[ROWS * DIM];
    tu_fill(FMLP_F32, r.x, ROWS * DIM, -1, 1, xd);
    fmlp_mlp_reference(r.mlp, xd, ROWS, r.ref);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, run_forwards, &r);
    let_run(&r, THREADS);
    int failures = 0, recorded = 0;
    for (int c = 0; c < CYCLES; c++) {
        fmlp_profiler_options po = fmlp_profiler_options_default();
        po.record_shapes = true;
        po.profile_memory = c % 2 == 0;
        if (c % 3 == 1) {
            po.wait = 1;
            po.active = 2;
        }
        fmlp_profiler *p;
        if (fmlp_profiler_create(r.ctx, &po, &p) != FMLP_OK) {
            failures++;
            continue;
        }
        failures += fmlp_profiler_start(p) != FMLP_OK;
        let_run(&r, 2);
        for (int s = 0; s < c % 4; s++) {
            failures += fmlp_profiler_step(p) != FMLP_OK;
            let_run(&r, 1);
        }
        if (c % 2) {
            /* destroyed while still recording, not stopped first */
            fmlp_profiler_destroy(p);
            continue;
        }
        failures += fmlp_profiler_stop(p) != FMLP_OK;
        fmlp_profile_summary s;
        if (fmlp_profiler_summary(p, &s) == FMLP_OK && s.kernels_per_step > 0) recorded++;
        fmlp_profiler_destroy(p);
    }
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    tu_check(failures == 0, "%d profilers made, started, stepped and destroyed under forwards: %d calls failed", CYCLES,
             failures);
    tu_check(r.forwards > 0 && r.wrong == 0, "%d forwards on %d threads meanwhile, %d wrong", r.forwards, THREADS,
             r.wrong);
    tu_check(recorded > 0, "windows stopped under forwards recorded them (%d of %d)", recorded, CYCLES / 2);
    fmlp_ctx_destroy(r.ctx); /* before the MLP: it goes when the MLP does */
    fmlp_mlp_destroy(r.mlp);
}

int main(void)
{
    tu_seed();
    context_first(false);
    context_first(true);
    destroy_under_forwards();
    return tu_finish();
}
