/* Why: the context ties a device to its backend and owns what forwards on
 * it share: the backend state (thread pool, streams) and a cache of
 * workspace buffers so steady-state forwards allocate nothing, and the
 * machine's ceilings once src/machine/ has read them. MLPs and profilers
 * hold references to it, so it outlives them whatever order they are
 * destroyed in. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/internal.h"
#include "profiler/hook.h"

fmlp_ctx_options fmlp_ctx_options_default(void)
{
    fmlp_ctx_options o;
    memset(&o, 0, sizeof o);
    o.device = FMLP_DEVICE_CPU;
    return o;
}

fmlp_status fmlp_ctx_create(const fmlp_ctx_options *opt, fmlp_ctx **out)
{
    if (!out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_ctx_create: out is NULL; pass the address of an fmlp_ctx *");
    *out = NULL;
    fmlp_ctx_options o = opt ? *opt : fmlp_ctx_options_default();
    if (o.threads < 0 || o.threads > 1024)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "threads = %d is out of range; use 0 (one per core) or 1..1024", o.threads);
    const fmlp_backend *be;
    fmlp_status s = fmlp_backend_find(o.device, &be);
    if (s != FMLP_OK) return s;
    fmlp_ctx *ctx = fmlp_calloc(1, sizeof *ctx);
    if (!ctx) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory creating a context");
    ctx->device = o.device;
    ctx->device_index = o.device_index;
    ctx->be = be;
    ctx->refs = 1;
    pthread_mutex_init(&ctx->ws_lock, NULL);
    pthread_mutex_init(&ctx->machine_lock, NULL);
    pthread_mutex_init(&ctx->prof_sync, NULL);
    pthread_mutex_init(&ctx->auto_lock, NULL);
    const char *measure = getenv("FMLP_AUTO_MEASURE");
    ctx->auto_measure = measure && *measure ? measure[0] == '1' : be->auto_measured;
    s = be->init(ctx, &o);
    if (s != FMLP_OK) {
        pthread_mutex_destroy(&ctx->ws_lock);
        pthread_mutex_destroy(&ctx->machine_lock);
        pthread_mutex_destroy(&ctx->prof_sync);
        pthread_mutex_destroy(&ctx->auto_lock);
        free(ctx);
        return s;
    }
    *out = ctx;
    return FMLP_OK;
}

static void ws_release(fmlp_ctx *ctx, void *p)
{
    if (ctx->be->free)
        ctx->be->free(ctx, p);
    else
        free(p);
}

static void ctx_free(fmlp_ctx *ctx)
{
    for (fmlp_ws_block *b = ctx->ws_free; b;) {
        fmlp_ws_block *next = b->next;
        ws_release(ctx, b->data);
        free(b);
        b = next;
    }
    ctx->be->fini(ctx);
    pthread_mutex_destroy(&ctx->ws_lock);
    pthread_mutex_destroy(&ctx->machine_lock);
    pthread_mutex_destroy(&ctx->prof_sync);
    pthread_mutex_destroy(&ctx->auto_lock);
    free(ctx);
}

void fmlp_ctx_ref(fmlp_ctx *ctx) { __atomic_add_fetch(&ctx->refs, 1, __ATOMIC_RELAXED); }

void fmlp_ctx_unref(fmlp_ctx *ctx)
{
    if (ctx && __atomic_sub_fetch(&ctx->refs, 1, __ATOMIC_ACQ_REL) == 0) ctx_free(ctx);
}

void fmlp_ctx_destroy(fmlp_ctx *ctx) { fmlp_ctx_unref(ctx); }

fmlp_device fmlp_ctx_device(const fmlp_ctx *ctx) { return ctx ? ctx->device : FMLP_DEVICE_CPU; }

void *fmlp_host_alloc(size_t bytes)
{
    if (bytes > SIZE_MAX - 63) return NULL;
    return fmlp_aligned_alloc(64, (bytes + 63) & ~(size_t)63);
}

/* Workspace taken and given back shows in the profiler as allocations and
 * frees with the running total, as PyTorch's caching allocator reports
 * tensor blocks. */
static void ws_account(fmlp_ctx *ctx, const fmlp_ws_block *b, int64_t delta)
{
    pthread_mutex_lock(&ctx->ws_lock);
    ctx->ws_live += delta;
    int64_t live = ctx->ws_live;
    pthread_mutex_unlock(&ctx->ws_lock);
    fmlp_prof_hold h = fmlp_prof_hold_take(ctx);
    if (h.p) fmlp_prof_memory_at(h.p, ctx->device == FMLP_DEVICE_CPU ? -1 : ctx->device_index, b->data, delta, live);
    fmlp_prof_hold_give(ctx, h);
}

static fmlp_ws_block *ws_reuse(fmlp_ctx *ctx, size_t bytes)
{
    pthread_mutex_lock(&ctx->ws_lock);
    fmlp_ws_block **best = NULL;
    for (fmlp_ws_block **pp = &ctx->ws_free; *pp; pp = &(*pp)->next)
        if ((*pp)->bytes >= bytes && (!best || (*pp)->bytes < (*best)->bytes)) best = pp;
    fmlp_ws_block *b = NULL;
    if (best) {
        b = *best;
        *best = b->next;
        b->next = NULL;
    }
    pthread_mutex_unlock(&ctx->ws_lock);
    return b;
}

fmlp_status fmlp_ws_take(fmlp_ctx *ctx, size_t bytes, fmlp_ws_block **out)
{
    fmlp_ws_block *b = ws_reuse(ctx, bytes);
    if (!b) {
        b = fmlp_calloc(1, sizeof *b);
        if (!b) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory for workspace bookkeeping");
        fmlp_status s = FMLP_OK;
        if (ctx->be->alloc) {
            s = ctx->be->alloc(ctx, bytes, &b->data);
        } else {
            b->data = fmlp_host_alloc(bytes);
            if (!b->data)
                s = fmlp_fail(FMLP_ERR_OUT_OF_MEMORY,
                              "out of memory: the forward needs %zu bytes of workspace; use fewer rows per call", bytes);
        }
        if (s != FMLP_OK) {
            free(b);
            return s;
        }
        b->bytes = bytes;
    }
    ws_account(ctx, b, (int64_t)b->bytes);
    *out = b;
    return FMLP_OK;
}

void fmlp_ws_give(fmlp_ctx *ctx, fmlp_ws_block *b)
{
    if (!b) return;
    ws_account(ctx, b, -(int64_t)b->bytes);
    pthread_mutex_lock(&ctx->ws_lock);
    b->next = ctx->ws_free;
    ctx->ws_free = b;
    pthread_mutex_unlock(&ctx->ws_lock);
}

fmlp_status fmlp_ctx_synchronize(fmlp_ctx *ctx)
{
    if (!ctx) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_ctx_synchronize: ctx is NULL");
    return ctx->be->synchronize ? ctx->be->synchronize(ctx) : FMLP_OK;
}

fmlp_status fmlp_ctx_set_stream(fmlp_ctx *ctx, void *stream)
{
    if (!ctx) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_ctx_set_stream: ctx is NULL");
    if (ctx->be->set_stream) return ctx->be->set_stream(ctx, stream);
    if (!stream) return FMLP_OK;
    return fmlp_fail(FMLP_ERR_UNSUPPORTED, "fmlp_ctx_set_stream: a %s context has no streams; pass NULL, or set the "
                     "stream on a CUDA context", ctx->be->name);
}

fmlp_status fmlp_ctx_get_stream(fmlp_ctx *ctx, void **stream)
{
    if (!ctx || !stream) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_ctx_get_stream: ctx and stream must not be NULL");
    *stream = ctx->be->get_stream ? ctx->be->get_stream(ctx) : NULL;
    return FMLP_OK;
}
