/* Why: a parallel region must cost microseconds, not a thread creation, or
 * small-batch forwards drown in overhead (the tutorial's first lesson). The
 * workers persist, spin briefly for the next region and then sleep. */
#include "cpu/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/clock.h"

/* About 40 us of PAUSEs: long enough to catch the next kernel of a forward,
 * short enough not to steal a shared core for long. */
#define SPIN_ITERS 2000

struct cpu_pool {
    int n;
    pthread_t *threads;
    int *os_tids;
    pthread_mutex_t region_lock; /* one region at a time */
    pthread_mutex_t m;
    pthread_cond_t start_cv, done_cv;
    atomic_uint_fast64_t gen;
    atomic_int remaining;
    bool stop;
    cpu_task_fn fn;
    void *arg;
    int active;
    cpu_lane_time *times;
};

typedef struct {
    cpu_pool *p;
    int tid;
} worker_arg;

static inline void cpu_relax(void)
{
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
}

static void run_share(cpu_pool *p, int tid)
{
    int64_t t0 = p->times ? fmlp_now_ns() : 0;
    p->fn(p->arg, tid, p->active);
    if (p->times) {
        p->times[tid].t0_ns = t0;
        p->times[tid].t1_ns = fmlp_now_ns();
        p->times[tid].os_tid = p->os_tids[tid];
    }
}

static void *worker_main(void *vp)
{
    worker_arg *wa = vp;
    cpu_pool *p = wa->p;
    int tid = wa->tid;
    free(wa);
    p->os_tids[tid] = fmlp_thread_id();
    uint64_t seen = 0;
    for (;;) {
        uint64_t g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen && spins < SPIN_ITERS) {
            cpu_relax();
            spins++;
        }
        if (g == seen) {
            pthread_mutex_lock(&p->m);
            while ((g = atomic_load(&p->gen)) == seen) pthread_cond_wait(&p->start_cv, &p->m);
            pthread_mutex_unlock(&p->m);
        }
        seen = g;
        if (p->stop) return NULL;
        /* Every worker checks in, active or not, so the next region's
         * fields are never written while one of them still reads these. */
        if (tid < p->active) run_share(p, tid);
        if (atomic_fetch_sub(&p->remaining, 1) == 1) {
            pthread_mutex_lock(&p->m);
            pthread_cond_signal(&p->done_cv);
            pthread_mutex_unlock(&p->m);
        }
    }
}

cpu_pool *cpu_pool_create(int threads)
{
    if (threads < 1) threads = 1;
    cpu_pool *p = fmlp_calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = threads;
    p->threads = fmlp_calloc((size_t)threads, sizeof *p->threads);
    p->os_tids = fmlp_calloc((size_t)threads, sizeof *p->os_tids);
    if (!p->threads || !p->os_tids) goto fail;
    pthread_mutex_init(&p->region_lock, NULL);
    pthread_mutex_init(&p->m, NULL);
    pthread_cond_init(&p->start_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    p->os_tids[0] = fmlp_thread_id();
    for (int i = 1; i < threads; i++) {
        worker_arg *wa = fmlp_malloc(sizeof *wa);
        if (!wa) {
            p->n = i;
            cpu_pool_destroy(p);
            return NULL;
        }
        wa->p = p;
        wa->tid = i;
        if (pthread_create(&p->threads[i], NULL, worker_main, wa) != 0) {
            free(wa);
            p->n = i;
            cpu_pool_destroy(p);
            return NULL;
        }
    }
    return p;
fail:
    free(p->threads);
    free(p->os_tids);
    free(p);
    return NULL;
}

void cpu_pool_destroy(cpu_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->m);
    p->stop = true;
    atomic_fetch_add(&p->gen, 1);
    pthread_cond_broadcast(&p->start_cv);
    pthread_mutex_unlock(&p->m);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->region_lock);
    pthread_mutex_destroy(&p->m);
    pthread_cond_destroy(&p->start_cv);
    pthread_cond_destroy(&p->done_cv);
    free(p->threads);
    free(p->os_tids);
    free(p);
}

int cpu_pool_threads(const cpu_pool *p) { return p->n; }

void cpu_pool_run(cpu_pool *p, int nthreads, cpu_task_fn fn, void *arg, cpu_lane_time *times)
{
    if (nthreads <= 0 || nthreads > p->n) nthreads = p->n;
    pthread_mutex_lock(&p->region_lock);
    /* The caller is lane 0 whichever thread it is. */
    p->os_tids[0] = fmlp_thread_id();
    p->fn = fn;
    p->arg = arg;
    p->active = nthreads;
    p->times = times;
    bool wake = p->n > 1 && nthreads > 1;
    if (wake) {
        atomic_store(&p->remaining, p->n - 1);
        pthread_mutex_lock(&p->m);
        atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
        pthread_cond_broadcast(&p->start_cv);
        pthread_mutex_unlock(&p->m);
    }
    run_share(p, 0);
    if (wake) {
        int spins = 0;
        while (atomic_load_explicit(&p->remaining, memory_order_acquire) > 0 && spins < SPIN_ITERS) {
            cpu_relax();
            spins++;
        }
        if (atomic_load(&p->remaining) > 0) {
            pthread_mutex_lock(&p->m);
            while (atomic_load(&p->remaining) > 0) pthread_cond_wait(&p->done_cv, &p->m);
            pthread_mutex_unlock(&p->m);
        }
    }
    pthread_mutex_unlock(&p->region_lock);
}
