/* Why: Self vs total, and which op launched which kernel, are the same
 * questions for the table, the analyses and the trace diff. This turns an
 * event set into "calls": one per op span, one per kernel launch (a CPU
 * region's per-thread records merged into one call on the launching
 * thread), each with its parent and its self/total CPU and device time.
 * Building them is one sort and linear passes, and a call is 40 bytes:
 * what its event already says is read from the event (pe_call_get). */
#ifndef FMLP_PROFILER_TREE_H
#define FMLP_PROFILER_TREE_H

#include "profiler/events.h"

typedef struct {
    uint32_t ev;     /* its (first) event */
    int32_t parent;  /* the enclosing call on its lane; -1 at the top and for device calls */
    union {
        int32_t owner;  /* device calls: the op they are charged to, -1 if none */
        int32_t region; /* others: index into pe_calls.reg, -1 if none */
    };
    int32_t launcher; /* what started it: a GPU kernel's runtime call, else the parent */
    int64_t self_cpu, self_dev, dev_total; /* ns */
} pe_call;

/* A call whose span is not just its event's: a CPU region's per-thread
 * records merged into one, or a CPU kernel nesting on the thread of the op
 * that launched it. */
typedef struct {
    uint32_t lane;  /* the lane it nests on */
    uint32_t lanes; /* its lane records: pe_calls.rec[rec0 .. rec0 + lanes) */
    size_t rec0;
    int64_t t0, t1, flops, bytes;
} pe_region;

typedef struct {
    const pe_set *s;
    pe_call *c;
    size_t n;
    pe_region *reg;
    size_t n_reg;
    uint32_t *rec;   /* event indices of the regions' lane records */
    uint32_t *order; /* the CPU calls by lane, then start: a parent before its children */
    size_t n_order;
    bool has_device;  /* any device time */
    bool has_kernels; /* any kernel, memcpy or memset */
} pe_calls;

/* What a call is, read from its event (and region). */
typedef struct {
    const pe_event *e;
    const char *name;
    pe_kind kind;
    bool device;      /* device time (GPU kernel, memcpy, memset) */
    int64_t t0, t1;   /* merged over lanes for a CPU kernel */
    int64_t pid, tid; /* the lane it nests on */
    int64_t flops, bytes;
    int lanes;           /* lane records */
    const uint32_t *rec; /* their event indices; NULL: the one record is e */
} pe_call_view;

/* false when out of memory. */
bool pe_calls_build(const pe_set *s, pe_calls *out);
void pe_calls_free(pe_calls *c);
pe_call_view pe_call_get(const pe_calls *cs, size_t i);

static inline const pe_event *pe_call_event(const pe_calls *cs, size_t i) { return &cs->s->ev[cs->c[i].ev]; }
static inline const pe_region *pe_call_region(const pe_calls *cs, size_t i)
{
    if (!cs->n_reg) return NULL; /* torch's traces: every call is its event */
    return !pe_is_device(pe_call_event(cs, i)) && cs->c[i].region >= 0 ? &cs->reg[cs->c[i].region] : NULL;
}
static inline int64_t pe_call_t0(const pe_calls *cs, size_t i)
{
    const pe_region *r = pe_call_region(cs, i);
    return r ? r->t0 : pe_call_event(cs, i)->t0;
}
static inline int64_t pe_call_t1(const pe_calls *cs, size_t i)
{
    const pe_region *r = pe_call_region(cs, i);
    return r ? r->t1 : pe_call_event(cs, i)->t1;
}

/* The work units the analyses count: kernels when the trace has any, else
 * (a CPU-only torch.profiler trace) the innermost ops that do arithmetic,
 * ignoring the view and allocation ops inside them. Fills malloc'd arrays:
 * work[i], and below[i] = work units at or under call i. false on OOM. */
bool pe_calls_work(const pe_calls *cs, bool **work, int **below);

/* Records a backend hands over after the fact (CUPTI's, at window end) do
 * not know their op: a launch call gets the External id of the op around it
 * on its thread, and the GPU work it launched gets the same, as Kineto
 * writes them. false when out of memory. */
bool pe_resolve_external_ids(pe_set *s);

/* GPU kernel records know nothing of FLOPs; the op that launched exactly
 * one kernel hands it its FLOPs and bytes, so kernels get achieved rates.
 * Run after External ids are known. false when out of memory. */
bool pe_give_work_to_kernels(pe_set *s);

/* Table key: "ProfilerStep#N" groups as "ProfilerStep*", as torch shows it. */
const char *pe_call_key(const char *name);

#endif
