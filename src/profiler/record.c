/* Why: the hot path. The executor and backends call these hooks from any
 * thread while a profiler records; each call takes the profiler's lock only
 * long enough to append one event, and the open-span stack (which op a
 * kernel belongs to, which span an end closes) is per thread, so concurrent
 * forwards never see each other's nesting. */
#include <stdlib.h>

#include "core/clock.h"
#include "core/internal.h"
#include "profiler/hook.h"
#include "profiler/prof.h"

#define MAX_OPEN 64

typedef struct {
    struct fmlp_profiler *p; /* NULL: a range pushed while nothing recorded */
    uint64_t serial;         /* p's, as p's address may be a later profiler's */
    uint64_t gen;
    int64_t id;
    size_t idx;
    bool range;
} open_span;

static _Thread_local open_span tl_open[MAX_OPEN];
static _Thread_local int tl_depth;
/* Pushes beyond MAX_OPEN are counted, not stored, so pops stay balanced. */
static _Thread_local int tl_overflow;

static void push_open(open_span s)
{
    if (tl_depth < MAX_OPEN)
        tl_open[tl_depth++] = s;
    else
        tl_overflow++;
}

static int64_t open_span_begin(struct fmlp_profiler *p, pe_kind kind, const char *name, const char *shapes,
                               int64_t flops, int64_t bytes, bool range)
{
    int64_t t0 = fmlp_now_ns();
    int64_t id = atomic_fetch_add(&p->next_id, 1);
    open_span s = {p, p->serial, 0, id, 0, range};
    pthread_mutex_lock(&p->lock);
    pe_event *e = pe_add(&p->cur, kind, name, p->cur.pid, fmlp_thread_id());
    if (e) {
        e->t0 = t0;
        e->t1 = -1;
        e->ext_id = id;
        pe_more m = pe_more_none();
        m.flops = flops;
        m.bytes = bytes;
        if (shapes && p->opt.record_shapes) m.shapes = pe_intern(&p->cur, shapes);
        pe_set_more(&p->cur, e, &m);
        s.idx = p->cur.n - 1;
    }
    s.gen = e ? p->gen : (uint64_t)-1;
    pthread_mutex_unlock(&p->lock);
    push_open(s);
    return id;
}

static void open_span_end(const open_span *s)
{
    int64_t t1 = fmlp_now_ns();
    struct fmlp_profiler *p = s->p;
    pthread_mutex_lock(&p->lock);
    if (s->gen == p->gen && s->idx < p->cur.n && p->cur.ev[s->idx].ext_id == s->id) p->cur.ev[s->idx].t1 = t1;
    pthread_mutex_unlock(&p->lock);
}

int64_t fmlp_prof_op_begin(struct fmlp_profiler *p, const char *name, const char *shapes, int64_t flops,
                           int64_t bytes)
{
    if (!p) return 0;
    return open_span_begin(p, PE_CPU_OP, name, shapes, flops, bytes, false);
}

void fmlp_prof_op_end(struct fmlp_profiler *p, int64_t external_id)
{
    if (!p) return;
    if (tl_overflow) {
        tl_overflow--;
        return;
    }
    for (int i = tl_depth - 1; i >= 0; i--) {
        if (tl_open[i].p == p && tl_open[i].id == external_id && !tl_open[i].range) {
            open_span s = tl_open[i];
            tl_depth = i;
            open_span_end(&s);
            return;
        }
    }
}

int64_t fmlp_prof_correlation(struct fmlp_profiler *p)
{
    if (!p) return 0;
    return atomic_fetch_add(&p->next_corr, 1);
}

static int64_t innermost_id(const struct fmlp_profiler *p)
{
    for (int i = tl_depth - 1; i >= 0; i--)
        if (tl_open[i].p == p) return tl_open[i].id;
    return 0;
}

int64_t fmlp_prof_current_op(struct fmlp_profiler *p)
{
    return p ? innermost_id(p) : 0;
}

/* Appends one record; called with the lock held. `name` is r->name
 * already interned. */
static void append_record(struct fmlp_profiler *p, const fmlp_prof_record *r, const char *name, int64_t ext)
{
    static const pe_kind kinds[] = {PE_KERNEL, PE_RUNTIME, PE_MEMCPY, PE_MEMSET};
    pe_kind kind = (unsigned)r->kind < 4 ? kinds[r->kind] : PE_KERNEL;
    int device = pe_device_of(r->device);
    pe_event *e = pe_add(&p->cur, kind, NULL, device < 0 ? p->cur.pid : device, r->lane);
    if (!e) return;
    e->name = name;
    e->t0 = r->t0_ns;
    e->t1 = r->t1_ns;
    e->device = device;
    e->ext_id = r->external_id ? r->external_id : ext;
    e->corr = r->correlation;
    pe_more m = pe_more_none();
    m.flops = r->flops;
    m.bytes = r->bytes;
    for (int i = 0; i < 3; i++) {
        m.grid[i] = r->grid[i];
        m.block[i] = r->block[i];
    }
    m.regs = r->registers;
    m.smem = r->shared_bytes;
    pe_set_more(&p->cur, e, &m);
}

void fmlp_prof_record_add_n(struct fmlp_profiler *p, const fmlp_prof_record *r, int n)
{
    if (!p || !r || n <= 0) return;
    int64_t ext = innermost_id(p);
    pthread_mutex_lock(&p->lock);
    const char *last_src = NULL, *name = NULL;
    for (int i = 0; i < n; i++) {
        const char *src = r[i].name ? r[i].name : "";
        if (src != last_src) {
            name = pe_intern(&p->cur, src);
            last_src = src;
        }
        if (name) append_record(p, &r[i], name, ext);
    }
    pthread_mutex_unlock(&p->lock);
}

void fmlp_prof_record_add(struct fmlp_profiler *p, const fmlp_prof_record *r)
{
    fmlp_prof_record_add_n(p, r, 1);
}

void fmlp_prof_memory_at(struct fmlp_profiler *p, int device, const void *addr, int64_t delta_bytes,
                         int64_t total_bytes)
{
    if (!p || !p->opt.profile_memory) return;
    int64_t t = fmlp_now_ns();
    pthread_mutex_lock(&p->lock);
    pe_event *e = pe_add(&p->cur, PE_MEMORY, "[memory]", p->cur.pid, fmlp_thread_id());
    if (e) {
        e->t0 = e->t1 = t;
        e->device = pe_device_of(device);
        pe_more m = pe_more_none();
        m.mem_addr = (int64_t)(intptr_t)addr;
        m.mem_bytes = delta_bytes;
        m.mem_total = total_bytes;
        pe_set_more(&p->cur, e, &m);
        e->ext_id = innermost_id(p);
    }
    pthread_mutex_unlock(&p->lock);
}

void fmlp_prof_memory(struct fmlp_profiler *p, int device, int64_t delta_bytes, int64_t total_bytes)
{
    fmlp_prof_memory_at(p, device, NULL, delta_bytes, total_bytes);
}

void fmlp_range_push(fmlp_ctx *ctx, const char *name)
{
    if (!ctx) return;
    fmlp_prof_hold h = fmlp_prof_hold_take(ctx);
    if (h.p)
        open_span_begin(h.p, PE_USER, name ? name : "(unnamed range)", NULL, 0, 0, true);
    else
        push_open((open_span){NULL, 0, 0, 0, 0, true});
    fmlp_prof_hold_give(ctx, h);
}

void fmlp_range_pop(fmlp_ctx *ctx)
{
    if (!ctx) return;
    if (tl_overflow) {
        tl_overflow--;
        return;
    }
    for (int i = tl_depth - 1; i >= 0; i--) {
        if (!tl_open[i].range) continue;
        open_span s = tl_open[i];
        tl_depth = i;
        /* Only a profiler still recording on this context may be touched:
         * the one that opened the range may have been destroyed since. */
        fmlp_prof_hold h = fmlp_prof_hold_take(ctx);
        if (s.p && s.p == h.p && s.serial == h.p->serial) open_span_end(&s);
        fmlp_prof_hold_give(ctx, h);
        return;
    }
}
