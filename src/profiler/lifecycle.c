/* Why: start, step and stop drive torch's schedule state machine: they
 * decide when ctx->prof is set (so forwards record), when a window's events
 * are dropped (warmup) or handed over as the completed trace, and when
 * on_trace_ready fires. ProfilerStep#N spans are opened and closed here. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/internal.h"
#include "profiler/prof.h"
#include "profiler/tree.h"

fmlp_profiler_options fmlp_profiler_options_default(void)
{
    fmlp_profiler_options o;
    memset(&o, 0, sizeof o);
    return o;
}

fmlp_status fmlp_profiler_create(fmlp_ctx *ctx, const fmlp_profiler_options *opt, fmlp_profiler **out)
{
    if (!out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_create: out is NULL; pass the address of an fmlp_profiler *");
    *out = NULL;
    if (!ctx) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_create: ctx is NULL; create a context first (fmlp_ctx_create)");
    fmlp_profiler_options o = opt ? *opt : fmlp_profiler_options_default();
    fmlp_status s = prof_schedule_check(&o);
    if (s != FMLP_OK) return s;
    if (o.world_size < 0 || (o.world_size > 0 && (o.rank < 0 || o.rank >= o.world_size)))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "fmlp_profiler_create: rank %d of world size %d; the rank must be in 0..world_size-1 "
                         "(world_size 0: one process)",
                         o.rank, o.world_size);
    if (o.dist_backend && strlen(o.dist_backend) >= sizeof ((fmlp_profiler *)0)->dist_backend)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_create: dist_backend \"%.40s...\" is too long (at most %zu "
                         "bytes)", o.dist_backend, sizeof ((fmlp_profiler *)0)->dist_backend - 1);
    fmlp_profiler *p = fmlp_calloc(1, sizeof *p);
    if (!p) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory creating a profiler");
    static uint64_t serials;
    p->ctx = ctx;
    p->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
    fmlp_ctx_ref(ctx);
    p->opt = o;
    if (o.dist_backend) {
        snprintf(p->dist_backend, sizeof p->dist_backend, "%s", o.dist_backend);
        p->opt.dist_backend = p->dist_backend;
    }
    pthread_mutex_init(&p->lock, NULL);
    pe_set_init(&p->cur);
    pe_set_init(&p->done);
    atomic_init(&p->next_id, 1);
    atomic_init(&p->next_corr, 1);
    *out = p;
    return FMLP_OK;
}

void fmlp_profiler_destroy(fmlp_profiler *p)
{
    if (!p) return;
    fmlp_ctx *ctx = p->ctx;
    prof_detach_and_wait(p);
    if (p->collecting) ctx->be->prof_stop(ctx, NULL);
    pe_set_free(&p->cur);
    pe_set_free(&p->done);
    pthread_mutex_destroy(&p->lock);
    free(p);
    fmlp_ctx_unref(ctx);
}

static bool recording(prof_action a)
{
    return a == PA_RECORD || a == PA_RECORD_AND_SAVE;
}

/* Unix-epoch ns minus monotonic ns: Kineto's baseTimeNanoseconds. */
static int64_t epoch_offset_ns(void)
{
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    int64_t mono = fmlp_now_ns();
    return (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - mono;
}

/* Called with the lock held: starts an empty window (drops warmup events). */
static void window_clear(fmlp_profiler *p)
{
    pe_set_reset(&p->cur);
    p->cur.pid = getpid();
    p->cur.main_tid = fmlp_thread_id();
    p->cur.origin = pe_intern(&p->cur, "fmlp");
    p->step_open = false;
    p->gen++;
}

/* Called with the lock held: the window becomes `done`. Spans still open
 * (a forward racing the window's end) are dropped, not truncated. */
static void window_finish(fmlp_profiler *p)
{
    size_t w = 0;
    for (size_t i = 0; i < p->cur.n; i++)
        if (p->cur.ev[i].t1 >= 0) p->cur.ev[w++] = p->cur.ev[i];
    p->cur.n = w;
    if (!pe_resolve_external_ids(&p->cur) || !pe_give_work_to_kernels(&p->cur)) p->cur.oom = true;
    p->cur.base_ns = epoch_offset_ns();
    p->cur.have_device = p->ctx->be->device_props && p->ctx->be->device_props(p->ctx, &p->cur.device);
    pe_set old = p->done;
    p->done = p->cur;
    p->have_done = true;
    pe_set_reset(&old);
    pe_set_init(&p->cur);
    p->cur.ev = old.ev;
    p->cur.cap = old.cap;
    p->step_open = false;
    p->gen++;
}

static void step_open(fmlp_profiler *p)
{
    if (!prof_has_schedule(&p->opt) || p->action == PA_NONE) return;
    char name[48];
    snprintf(name, sizeof name, "ProfilerStep#%d", p->step_num);
    pe_event *e = pe_add(&p->cur, PE_STEP, name, p->cur.pid, fmlp_thread_id());
    if (!e) return;
    e->t0 = fmlp_now_ns();
    e->t1 = -1;
    e->ext_id = atomic_fetch_add(&p->next_id, 1);
    p->step_open = true;
    p->step_idx = p->cur.n - 1;
}

static void step_close(fmlp_profiler *p)
{
    if (p->step_open && p->step_idx < p->cur.n) p->cur.ev[p->step_idx].t1 = fmlp_now_ns();
    p->step_open = false;
}

static void fetch_ceilings(fmlp_profiler *p)
{
    fmlp_ceilings c;
    if (fmlp_ceilings_get(p->ctx, false, &c) != FMLP_OK || !(c.measured || c.gpu_from_device)) {
        fmlp_clear_error();
        return;
    }
    pe_ceilings *pc = &p->done.ceil;
    pc->have = true;
    pc->gemm_gflops_f32 = c.gemm_gflops_f32;
    pc->gemm_gflops_bf16 = c.gemm_gflops_bf16;
    pc->mem_gbps = c.mem_gbps;
    pc->gpu_gemm_tflops_bf16 = c.gpu_gemm_tflops_bf16;
    pc->gpu_mem_gbps = c.gpu_mem_gbps;
    pc->gpu_launch_us = c.gpu_launch_us;
    pc->gpu_from_device = c.gpu_from_device;
}

/* Whether moving from `prev` to `next` (or stopping) ends the window being
 * gathered, by saving it or by dropping it. */
static bool window_ends(prof_action prev, prof_action next, bool exiting)
{
    if (prev == PA_NONE) return false;
    return exiting || prev == PA_RECORD_AND_SAVE || (prev == PA_WARMUP && next != PA_WARMUP) ||
           (prev == PA_RECORD && !recording(next));
}

/* A backend that collects device activity (CUPTI) is switched on for each
 * window, warmup included as Kineto does, and hands its records over before
 * the window ends; called without the lock, as handing over records takes
 * it. */
static void device_start(fmlp_profiler *p)
{
    const fmlp_backend *be = p->ctx->be;
    bool wanted = !p->opt.activities || (p->opt.activities & FMLP_ACTIVITY_CUDA);
    if (p->collecting || p->action == PA_NONE || !wanted || !be->prof_start || !be->prof_stop) return;
    if (be->prof_start(p->ctx) == FMLP_OK)
        p->collecting = true;
    else
        fmlp_clear_error();
}

static void device_stop(fmlp_profiler *p)
{
    if (!p->collecting) return;
    p->collecting = false;
    if (p->ctx->be->prof_stop(p->ctx, p) != FMLP_OK) fmlp_clear_error();
}

/* Warmup ends and recording begins: the device records gathered so far go,
 * collection stays on (Kineto's order); a backend that cannot drop them
 * stops and starts again. */
static void device_rewarm(fmlp_profiler *p)
{
    const fmlp_backend *be = p->ctx->be;
    if (!p->collecting) return;
    if (!be->prof_discard || be->prof_discard(p->ctx) != FMLP_OK) {
        fmlp_clear_error();
        device_stop(p);
    }
}

/* Moves from p->action to `next` (PA_NONE with `exiting` for stop) the way
 * torch's action map does; returns whether a trace became ready. */
static bool transition(fmlp_profiler *p, prof_action next, bool exiting)
{
    prof_action prev = p->action;
    bool ready = false;
    if (prev == PA_RECORD_AND_SAVE || (prev == PA_RECORD && exiting)) {
        window_finish(p);
        ready = true;
    }
    /* A fresh window starts whenever recording (or warmup) begins anew;
     * leaving warmup without recording discards what it gathered. */
    bool fresh;
    if (exiting)
        fresh = prev == PA_WARMUP;
    else
        fresh = (prev == PA_NONE && next != PA_NONE) || (prev == PA_WARMUP && next != PA_WARMUP) ||
                (prev == PA_RECORD_AND_SAVE && next != PA_NONE) || (prev == PA_RECORD && !recording(next));
    if (fresh) window_clear(p);
    p->action = exiting ? PA_NONE : next;
    prof_attach(p, p->action != PA_NONE);
    return ready;
}

fmlp_status fmlp_profiler_start(fmlp_profiler *p)
{
    if (!p) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_start: profiler is NULL");
    if (p->started) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_start: already started; call fmlp_profiler_stop first");
    fmlp_profiler *recording = __atomic_load_n(&p->ctx->prof, __ATOMIC_ACQUIRE);
    if (recording && recording != p)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "fmlp_profiler_start: another profiler is recording on this context; stop it first");
    pthread_mutex_lock(&p->lock);
    p->started = true;
    p->step_num = 0;
    p->action = PA_NONE;
    transition(p, prof_schedule_action(&p->opt, 0), false);
    pthread_mutex_unlock(&p->lock);
    device_start(p);
    pthread_mutex_lock(&p->lock);
    step_open(p);
    pthread_mutex_unlock(&p->lock);
    return FMLP_OK;
}

static void trace_ready(fmlp_profiler *p)
{
    fetch_ceilings(p);
    if (p->opt.on_trace_ready) p->opt.on_trace_ready(p, p->opt.user);
}

fmlp_status fmlp_profiler_step(fmlp_profiler *p)
{
    if (!p) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_step: profiler is NULL");
    if (!p->started) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_step: profiler not started; call fmlp_profiler_start first");
    if (p->step_num == INT_MAX)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_step: %d steps is the most a profiler counts; stop "
                         "it and start it again", INT_MAX);
    /* Switching device collection off and on again costs milliseconds
     * (and the first calls after it more): it happens between the steps,
     * outside both ProfilerStep spans, and never between warmup and the
     * steps recorded. */
    prof_action next = prof_schedule_action(&p->opt, p->step_num + 1);
    pthread_mutex_lock(&p->lock);
    step_close(p);
    pthread_mutex_unlock(&p->lock);
    if (p->action == PA_WARMUP && recording(next))
        device_rewarm(p);
    else if (window_ends(p->action, next, false))
        device_stop(p);
    pthread_mutex_lock(&p->lock);
    p->step_num++;
    bool ready = transition(p, next, false);
    pthread_mutex_unlock(&p->lock);
    /* torch's order: the saved window is handed over, then the next one
     * starts and its step opens. */
    if (ready) trace_ready(p);
    device_start(p);
    pthread_mutex_lock(&p->lock);
    step_open(p);
    pthread_mutex_unlock(&p->lock);
    return FMLP_OK;
}

fmlp_status fmlp_profiler_stop(fmlp_profiler *p)
{
    if (!p) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_stop: profiler is NULL");
    if (!p->started) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_profiler_stop: profiler not started; call fmlp_profiler_start first");
    pthread_mutex_lock(&p->lock);
    step_close(p);
    pthread_mutex_unlock(&p->lock);
    device_stop(p);
    pthread_mutex_lock(&p->lock);
    bool ready = transition(p, PA_NONE, true);
    if (!ready) window_clear(p);
    p->started = false;
    pthread_mutex_unlock(&p->lock);
    if (ready) trace_ready(p);
    return FMLP_OK;
}
