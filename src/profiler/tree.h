/* Why: Self vs total, and which op launched which kernel, are the same
 * questions for the table, the analyses and the trace diff. This turns an
 * event set into "calls": one per op span, one per kernel launch (a CPU
 * region's per-thread records merged into one call on the launching
 * thread), each with its parent and its self/total CPU and device time. */
#ifndef FMLP_PROFILER_TREE_H
#define FMLP_PROFILER_TREE_H

#include "profiler/events.h"

typedef struct {
    const pe_event *e; /* the (first) event of the call */
    const char *name;
    pe_kind kind;
    bool device;      /* device time (GPU kernel, memcpy, memset) */
    int64_t t0, t1;   /* merged over lanes for a CPU kernel */
    int64_t pid, tid; /* the lane it nests on */
    int parent;       /* index of the enclosing call, -1 at the top */
    int owner;        /* device calls: the op they are charged to, -1 if none */
    int launcher;     /* what started it: a GPU kernel's runtime call, else the parent */
    int lanes;        /* CPU kernels: how many thread lanes ran it */
    size_t lane0;     /* its lane records: lane_ev[lane0 .. lane0 + lanes) */
    int64_t self_cpu, cpu_total, self_dev, dev_total; /* ns */
    int64_t flops, bytes;
} pe_call;

typedef struct {
    pe_call *c;
    size_t n;
    size_t *lane_ev; /* event indices of every call's lane records, by call */
    bool has_device; /* any device time */
    bool has_kernels; /* any kernel, memcpy or memset */
} pe_calls;

/* false when out of memory. */
bool pe_calls_build(const pe_set *s, pe_calls *out);
void pe_calls_free(pe_calls *c);

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
const char *pe_call_key(const pe_call *c);

#endif
