/* Why: forwards on any thread record into the context's profiler while
 * the thread that owns it may stop or destroy it. A forward announces
 * itself (a holder count in one of two slots) before it reads ctx->prof;
 * a profiler being destroyed first unhooks itself from ctx->prof, then
 * waits until every holder that could have read it is gone: it moves new
 * holders to the other slot and waits for the old slot to drain, twice,
 * so holders that announced themselves late are covered as well (the
 * scheme of sleepable RCU). A forward that records nothing pays one
 * atomic load. */
#include <time.h>

#include "core/internal.h"
#include "profiler/hook.h"
#include "profiler/prof.h"

fmlp_prof_hold fmlp_prof_hold_take(fmlp_ctx *ctx)
{
    fmlp_prof_hold h = {NULL, 0};
    if (!ctx || !__atomic_load_n(&ctx->prof, __ATOMIC_ACQUIRE)) return h;
    h.slot = (int)(__atomic_load_n(&ctx->prof_epoch, __ATOMIC_SEQ_CST) & 1);
    __atomic_add_fetch(&ctx->prof_holders[h.slot], 1, __ATOMIC_SEQ_CST);
    h.p = __atomic_load_n(&ctx->prof, __ATOMIC_SEQ_CST);
    if (!h.p) __atomic_sub_fetch(&ctx->prof_holders[h.slot], 1, __ATOMIC_SEQ_CST);
    return h;
}

void fmlp_prof_hold_give(fmlp_ctx *ctx, fmlp_prof_hold h)
{
    if (h.p) __atomic_sub_fetch(&ctx->prof_holders[h.slot], 1, __ATOMIC_SEQ_CST);
}

void prof_attach(fmlp_profiler *p, bool on)
{
    __atomic_store_n(&p->ctx->prof, on ? p : NULL, __ATOMIC_SEQ_CST);
}

static void wait_slot(fmlp_ctx *ctx, int slot)
{
    const struct timespec pause = {0, 20000};
    while (__atomic_load_n(&ctx->prof_holders[slot], __ATOMIC_SEQ_CST)) nanosleep(&pause, NULL);
}

void prof_detach_and_wait(fmlp_profiler *p)
{
    fmlp_ctx *ctx = p->ctx;
    fmlp_profiler *expected = p;
    __atomic_compare_exchange_n(&ctx->prof, &expected, NULL, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&ctx->prof_sync);
    for (int round = 0; round < 2; round++) {
        unsigned old = __atomic_fetch_add(&ctx->prof_epoch, 1, __ATOMIC_SEQ_CST);
        wait_slot(ctx, (int)(old & 1));
    }
    pthread_mutex_unlock(&ctx->prof_sync);
}
