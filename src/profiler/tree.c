/* Why: see tree.h. Nesting is by time containment on each CPU lane, the
 * rule torch's EventList uses, so it works the same for events we recorded
 * and for traces we only read. The CPU calls are sorted once (by lane, then
 * start, longer first), nested with one stack per lane, and device time is
 * charged upwards in one pass over that order backwards (children come
 * after their parent in it), so the cost is the sort and linear passes. */
#include "profiler/tree.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/idx_sort.h"
#include "profiler/idmap.h"

static int kind_rank(pe_kind k)
{
    switch (k) {
    case PE_STEP: return 0;
    case PE_USER: return 1;
    case PE_CPU_OP: return 2;
    case PE_RUNTIME: return 3;
    default: return 4;
    }
}

static bool is_op(const pe_event *e) { return e->kind == PE_CPU_OP || e->kind == PE_USER || e->kind == PE_STEP; }

static bool is_cpu_kernel(const pe_event *e) { return e->kind == PE_KERNEL && e->device < 0; }

pe_call_view pe_call_get(const pe_calls *cs, size_t i)
{
    const pe_event *e = pe_call_event(cs, i);
    const pe_region *r = pe_call_region(cs, i);
    const pe_more *m = pe_more_of(cs->s, e);
    const pe_lane *l = &cs->s->lanes.v[r ? r->lane : e->lane];
    pe_call_view v = {e, e->name, (pe_kind)e->kind, pe_is_device(e), e->t0, e->t1, l->pid, l->tid,
                      m->flops, m->bytes, 1, NULL};
    if (r) {
        v.t0 = r->t0;
        v.t1 = r->t1;
        v.flops = r->flops;
        v.bytes = r->bytes;
        v.lanes = (int)r->lanes;
        v.rec = &cs->rec[r->rec0];
    }
    return v;
}

/* ------------------------------------------------------------- building */

/* Which runtime call started a device activity is its correlation, unique
 * per call in Kineto's scheme. Traces fmlp wrote before it followed that
 * scheme gave every call of one op the op's correlation (cuBLASLt's
 * cudaMemsetAsync and cuLaunchKernelEx alike), so a call that shares its
 * correlation with an earlier one is also keyed by what it starts, and an
 * activity looks for its own kind of call first. */
enum { START_LAUNCH, START_MEMSET, START_MEMCPY };

static int runtime_starts(const char *name)
{
    return strstr(name, "emset") ? START_MEMSET : strstr(name, "emcpy") ? START_MEMCPY : START_LAUNCH;
}

static int64_t start_key(int64_t corr, int starts)
{
    return (int64_t)((uint64_t)corr * 4u + (uint64_t)starts);
}

typedef struct {
    pe_idmap by_corr, by_ext; /* first CPU kernel or runtime call per correlation id; first op per External id */
    pe_idmap by_start;        /* first runtime call per (correlation, what it starts), where that is not by_corr's */
    uint32_t *absorbed;       /* (call, event) pairs: lane records merged into an earlier call */
    size_t n_absorbed;
} joins;

static void joins_free(joins *j)
{
    pe_idmap_free(&j->by_corr);
    pe_idmap_free(&j->by_ext);
    pe_idmap_free(&j->by_start);
    free(j->absorbed);
}

static bool span_ok(const pe_event *e) { return pe_is_span(e) && e->t1 >= e->t0; }

/* Maps sized from the id ranges the set holds. */
static bool joins_init(const pe_set *s, joins *j)
{
    memset(j, 0, sizeof *j);
    int64_t clo = INT64_MAX, chi = INT64_MIN, elo = INT64_MAX, ehi = INT64_MIN;
    size_t nc = 0, ne = 0, nk = 0;
    for (size_t i = 0; i < s->n; i++) {
        const pe_event *e = &s->ev[i];
        if (!span_ok(e)) continue;
        if (e->corr && (e->kind == PE_RUNTIME || is_cpu_kernel(e))) {
            nc++;
            nk += is_cpu_kernel(e);
            if (e->corr < clo) clo = e->corr;
            if (e->corr > chi) chi = e->corr;
        }
        if (e->ext_id && is_op(e)) {
            ne++;
            if (e->ext_id < elo) elo = e->ext_id;
            if (e->ext_id > ehi) ehi = e->ext_id;
        }
    }
    j->absorbed = fmlp_malloc((2 * nk + 1) * sizeof *j->absorbed);
    bool ok = j->absorbed && pe_idmap_init(&j->by_corr, clo, chi, nc) && pe_idmap_init(&j->by_ext, elo, ehi, ne) &&
              pe_idmap_init(&j->by_start, 0, 0, 0);
    if (!ok) joins_free(j);
    return ok;
}

/* The region of call i, made on first use from its own event. */
static pe_region *region_of(pe_calls *cs, size_t i, size_t *cap)
{
    pe_call *c = &cs->c[i];
    if (c->region >= 0) return &cs->reg[c->region];
    if (cs->n_reg == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        pe_region *nr = fmlp_realloc(cs->reg, nc * sizeof *nr);
        if (!nr) return NULL;
        cs->reg = nr;
        *cap = nc;
    }
    const pe_event *e = &cs->s->ev[c->ev];
    const pe_more *m = pe_more_of(cs->s, e);
    c->region = (int32_t)cs->n_reg;
    cs->reg[cs->n_reg] = (pe_region){e->lane, 1, 0, e->t0, e->t1, m->flops, m->bytes};
    return &cs->reg[cs->n_reg++];
}

/* Runtime call n (event e) in the joins. by_start gets it only when its
 * correlation is taken and a lookup by what it starts would not already
 * find the first such call through by_corr, so Kineto's traces (one
 * correlation per call) leave by_start empty. */
static bool join_runtime(joins *j, const pe_calls *cs, const pe_event *e, int32_t n)
{
    int32_t first = pe_idmap_get(&j->by_corr, e->corr);
    if (first < 0) return pe_idmap_put(&j->by_corr, e->corr, n);
    const pe_event *f = pe_call_event(cs, (size_t)first);
    int starts = runtime_starts(e->name);
    if (f->kind == PE_RUNTIME && runtime_starts(f->name) == starts) return true;
    return pe_idmap_put(&j->by_start, start_key(e->corr, starts), n);
}

/* One call per span in event order; a CPU kernel's later lane records
 * (same correlation id) merge into the first. */
static bool make_calls(const pe_set *s, pe_calls *out, joins *j, size_t *reg_cap)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        const pe_event *e = &s->ev[i];
        if (!span_ok(e)) continue;
        if (is_cpu_kernel(e) && e->corr) {
            int32_t into = pe_idmap_get(&j->by_corr, e->corr);
            if (into >= 0) {
                pe_region *r = region_of(out, (size_t)into, reg_cap);
                if (!r) return false;
                const pe_more *m = pe_more_of(s, e);
                if (e->t0 < r->t0) r->t0 = e->t0;
                if (e->t1 > r->t1) r->t1 = e->t1;
                r->flops = pe_add_sat(r->flops, m->flops);
                r->bytes = pe_add_sat(r->bytes, m->bytes);
                r->lanes++;
                j->absorbed[2 * j->n_absorbed] = (uint32_t)into;
                j->absorbed[2 * j->n_absorbed + 1] = (uint32_t)i;
                j->n_absorbed++;
                continue;
            }
            if (!pe_idmap_put(&j->by_corr, e->corr, (int32_t)n)) return false;
        }
        out->c[n] = (pe_call){.ev = (uint32_t)i, .parent = -1, .region = -1, .launcher = -1};
        if (is_op(e) && e->ext_id && !pe_idmap_put(&j->by_ext, e->ext_id, (int32_t)n)) return false;
        if (e->kind == PE_RUNTIME && e->corr && !join_runtime(j, out, e, (int32_t)n)) return false;
        out->has_device |= pe_is_device(e);
        out->has_kernels |= e->kind == PE_KERNEL || e->kind == PE_MEMCPY || e->kind == PE_MEMSET;
        n++;
    }
    out->n = n;
    return true;
}

/* Each region's lane records, its own event first, then the merged ones in
 * event order. */
static bool gather_records(pe_calls *cs, const joins *j)
{
    size_t total = 0;
    for (size_t r = 0; r < cs->n_reg; r++) {
        cs->reg[r].rec0 = total;
        total += cs->reg[r].lanes;
    }
    cs->rec = fmlp_malloc((total + 1) * sizeof *cs->rec);
    if (!cs->rec) return false;
    for (size_t i = 0; i < cs->n; i++) {
        if (pe_is_device(pe_call_event(cs, i)) || cs->c[i].region < 0) continue;
        pe_region *r = &cs->reg[cs->c[i].region];
        cs->rec[r->rec0] = cs->c[i].ev;
        r->lanes = 1;
    }
    for (size_t k = 0; k < j->n_absorbed; k++) {
        pe_region *r = &cs->reg[cs->c[j->absorbed[2 * k]].region];
        cs->rec[r->rec0 + r->lanes++] = j->absorbed[2 * k + 1];
    }
    return true;
}

/* A CPU kernel nests on the thread of the op that launched it. */
static bool move_cpu_kernels(pe_calls *cs, const joins *j, size_t *reg_cap)
{
    for (size_t i = 0; i < cs->n; i++) {
        const pe_event *e = pe_call_event(cs, i);
        if (!is_cpu_kernel(e) || !e->ext_id) continue;
        int32_t op = pe_idmap_get(&j->by_ext, e->ext_id);
        if (op < 0) continue;
        pe_region *r = region_of(cs, i, reg_cap);
        if (!r) return false;
        r->lane = pe_call_event(cs, (size_t)op)->lane;
    }
    return true;
}

typedef struct {
    const pe_calls *cs;
    const uint32_t *lane_rank; /* lanes in (pid, tid) order */
} order_ctx;

static uint32_t call_lane(const pe_calls *cs, size_t i)
{
    const pe_region *r = pe_call_region(cs, i);
    return r ? r->lane : pe_call_event(cs, i)->lane;
}

static int by_lane_id(const void *ctx, uint32_t a, uint32_t b)
{
    const pe_lane *l = ctx, *x = &l[a], *y = &l[b];
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Within a lane: by start, the longer first, then outer kinds first. */
static int by_start(const void *ctx, uint32_t a, uint32_t b)
{
    const pe_calls *cs = ctx;
    int64_t a0 = pe_call_t0(cs, a), b0 = pe_call_t0(cs, b);
    if (a0 != b0) return a0 < b0 ? -1 : 1;
    int64_t a1 = pe_call_t1(cs, a), b1 = pe_call_t1(cs, b);
    if (a1 != b1) return a1 > b1 ? -1 : 1;
    int ra = kind_rank((pe_kind)pe_call_event(cs, a)->kind), rb = kind_rank((pe_kind)pe_call_event(cs, b)->kind);
    if (ra != rb) return ra < rb ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* cs->order: the CPU calls grouped by lane in (pid, tid) order (a counting
 * sort), each lane sorted by start. */
static bool order_cpu_calls(pe_calls *cs)
{
    const pe_lanes *L = &cs->s->lanes;
    uint32_t *by_id = fmlp_malloc((L->n + 1) * sizeof *by_id), *rank = fmlp_malloc((L->n + 1) * sizeof *rank);
    size_t *start = fmlp_calloc(L->n + 2, sizeof *start);
    cs->order = fmlp_malloc((cs->n + 1) * sizeof *cs->order);
    bool ok = by_id && rank && start && cs->order;
    if (ok) {
        for (size_t i = 0; i < L->n; i++) by_id[i] = (uint32_t)i;
        ok = idx_sort(by_id, L->n, by_lane_id, L->v);
    }
    if (ok) {
        for (size_t i = 0; i < L->n; i++) rank[by_id[i]] = (uint32_t)i;
        for (size_t i = 0; i < cs->n; i++)
            if (!pe_is_device(pe_call_event(cs, i))) start[rank[call_lane(cs, i)] + 1]++;
        for (size_t r = 0; r < L->n; r++) start[r + 1] += start[r];
        cs->n_order = start[L->n];
        for (size_t i = 0; i < cs->n; i++)
            if (!pe_is_device(pe_call_event(cs, i))) cs->order[start[rank[call_lane(cs, i)]]++] = (uint32_t)i;
        /* start[r] is now the end of lane r's run. */
        for (size_t r = 0, a = 0; r < L->n && ok; a = start[r++]) ok = idx_sort(cs->order + a, start[r] - a, by_start, cs);
    }
    free(by_id);
    free(rank);
    free(start);
    return ok;
}

static bool nest_cpu(pe_calls *cs)
{
    int32_t *stack = fmlp_malloc((cs->n_order + 1) * sizeof *stack);
    if (!stack) return false;
    size_t depth = 0;
    uint32_t lane = UINT32_MAX;
    for (size_t k = 0; k < cs->n_order; k++) {
        size_t i = cs->order[k];
        uint32_t l = call_lane(cs, i);
        if (l != lane) depth = 0;
        lane = l;
        int64_t t0 = pe_call_t0(cs, i), t1 = pe_call_t1(cs, i);
        while (depth) {
            size_t top = (size_t)stack[depth - 1];
            if (pe_call_t0(cs, top) <= t0 && t1 <= pe_call_t1(cs, top)) break;
            depth--;
        }
        cs->c[i].parent = depth ? stack[depth - 1] : -1;
        stack[depth++] = (int32_t)i;
    }
    free(stack);
    return true;
}

static void cpu_times(pe_calls *cs)
{
    for (size_t k = 0; k < cs->n_order; k++) {
        pe_call *c = &cs->c[cs->order[k]];
        int64_t total = pe_call_t1(cs, cs->order[k]) - pe_call_t0(cs, cs->order[k]);
        c->launcher = c->parent;
        c->self_cpu = pe_add_sat(c->self_cpu, total);
        if (c->parent >= 0) cs->c[c->parent].self_cpu = pe_add_sat(cs->c[c->parent].self_cpu, -total);
    }
    for (size_t k = 0; k < cs->n_order; k++)
        if (cs->c[cs->order[k]].self_cpu < 0) cs->c[cs->order[k]].self_cpu = 0;
}

/* Device time is charged to the op that launched it (its External id, else
 * the op around its runtime call) and to every op above that. */
static void device_times(pe_calls *cs, const joins *j)
{
    for (size_t i = 0; i < cs->n; i++) {
        const pe_event *e = pe_call_event(cs, i);
        if (!pe_is_device(e)) continue;
        pe_call *k = &cs->c[i];
        int64_t d = e->t1 - e->t0;
        k->self_dev = k->dev_total = d;
        int32_t owner = e->ext_id ? pe_idmap_get(&j->by_ext, e->ext_id) : -1;
        int32_t rt = -1;
        if (e->corr) {
            int starts = e->kind == PE_MEMSET ? START_MEMSET : e->kind == PE_MEMCPY ? START_MEMCPY : START_LAUNCH;
            rt = pe_idmap_get(&j->by_start, start_key(e->corr, starts));
            if (rt < 0) rt = pe_idmap_get(&j->by_corr, e->corr);
        }
        if (owner < 0 && rt >= 0 && !pe_is_device(pe_call_event(cs, (size_t)rt)))
            owner = pe_call_event(cs, (size_t)rt)->kind == PE_RUNTIME ? cs->c[rt].parent : rt;
        k->owner = owner;
        if (rt >= 0 && pe_call_event(cs, (size_t)rt)->kind == PE_RUNTIME) k->launcher = rt;
        if (owner < 0) continue;
        cs->c[owner].self_dev = pe_add_sat(cs->c[owner].self_dev, d);
        cs->c[owner].dev_total = pe_add_sat(cs->c[owner].dev_total, d);
    }
    for (size_t k = cs->n_order; k-- > 0;) {
        const pe_call *c = &cs->c[cs->order[k]];
        if (c->parent >= 0) cs->c[c->parent].dev_total = pe_add_sat(cs->c[c->parent].dev_total, c->dev_total);
    }
}

bool pe_calls_build(const pe_set *s, pe_calls *out)
{
    memset(out, 0, sizeof *out);
    out->s = s;
    joins j;
    size_t reg_cap = 0;
    out->c = fmlp_malloc((s->n + 1) * sizeof *out->c);
    if (!out->c || !joins_init(s, &j)) {
        pe_calls_free(out);
        return false;
    }
    bool ok = make_calls(s, out, &j, &reg_cap) && move_cpu_kernels(out, &j, &reg_cap) && gather_records(out, &j) &&
              order_cpu_calls(out) && nest_cpu(out);
    if (ok) {
        cpu_times(out);
        device_times(out, &j);
    }
    joins_free(&j);
    if (!ok) pe_calls_free(out);
    return ok;
}

void pe_calls_free(pe_calls *c)
{
    free(c->c);
    free(c->reg);
    free(c->rec);
    free(c->order);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------ work units */

/* Leaf ops of a CPU-only torch trace that only allocate or re-view memory. */
static bool zero_work_op(const char *name)
{
    static const char *const names[] = {
        "aten::empty", "aten::empty_strided", "aten::zeros", "aten::zero_", "aten::as_strided",
        "aten::resolve_conj", "aten::resolve_neg", "aten::_reshape_alias", "aten::_unsafe_view", "aten::view",
        "aten::reshape", "aten::t", "aten::transpose", "aten::expand", "aten::detach", "aten::detach_",
        "detach", "detach_", "aten::unsqueeze", "aten::squeeze", "aten::permute", "aten::slice", "aten::select",
        "aten::alias", "aten::lift_fresh", "aten::contiguous", "aten::set_", "aten::empty_like",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(name, names[i]) == 0) return true;
    return false;
}

static bool is_kernelish(pe_kind k)
{
    return k == PE_KERNEL || k == PE_MEMCPY || k == PE_MEMSET;
}

bool pe_calls_work(const pe_calls *cs, bool **work, int **below)
{
    bool *w = fmlp_calloc(cs->n + 1, sizeof *w);
    bool *busy_below = fmlp_calloc(cs->n + 1, sizeof *busy_below);
    int *b = fmlp_calloc(cs->n + 1, sizeof *b);
    if (!w || !busy_below || !b) {
        free(w);
        free(busy_below);
        free(b);
        return false;
    }
    /* An op with an arithmetic op under it is a wrapper, not the work; the
     * climb stops where an earlier one passed. */
    for (size_t i = 0; i < cs->n && !cs->has_kernels; i++) {
        const pe_event *e = pe_call_event(cs, i);
        if (e->kind != PE_CPU_OP || zero_work_op(e->name)) continue;
        for (int a = cs->c[i].parent; a >= 0 && !busy_below[a]; a = cs->c[a].parent) busy_below[a] = true;
    }
    for (size_t i = 0; i < cs->n; i++) {
        const pe_event *e = pe_call_event(cs, i);
        w[i] = cs->has_kernels ? is_kernelish((pe_kind)e->kind)
                               : e->kind == PE_CPU_OP && !zero_work_op(e->name) && !busy_below[i];
        b[i] = w[i];
        /* A device unit counts under the op it is charged to. */
        if (w[i] && pe_is_device(e) && cs->c[i].owner >= 0) b[cs->c[i].owner]++;
    }
    for (size_t k = cs->n_order; k-- > 0;) {
        const pe_call *c = &cs->c[cs->order[k]];
        if (c->parent >= 0) b[c->parent] += b[cs->order[k]];
    }
    free(busy_below);
    *work = w;
    *below = b;
    return true;
}

/* ------------------------------------------------------ filling in events */

bool pe_resolve_external_ids(pe_set *s)
{
    bool missing = false;
    for (size_t i = 0; i < s->n && !missing; i++)
        missing = !s->ev[i].ext_id && (s->ev[i].kind == PE_RUNTIME || pe_is_device(&s->ev[i]));
    if (!missing) return true;
    pe_calls cs;
    if (!pe_calls_build(s, &cs)) return false;
    for (size_t i = 0; i < cs.n; i++) {
        const pe_event *e = pe_call_event(&cs, i);
        if (e->kind != PE_RUNTIME || e->ext_id) continue;
        int a = cs.c[i].parent;
        while (a >= 0 && pe_call_event(&cs, (size_t)a)->kind != PE_CPU_OP && pe_call_event(&cs, (size_t)a)->kind != PE_USER)
            a = cs.c[a].parent;
        if (a >= 0) s->ev[cs.c[i].ev].ext_id = pe_call_event(&cs, (size_t)a)->ext_id;
    }
    for (size_t i = 0; i < cs.n; i++) {
        const pe_event *e = pe_call_event(&cs, i);
        if (pe_is_device(e) && !e->ext_id && cs.c[i].launcher >= 0)
            s->ev[cs.c[i].ev].ext_id = pe_call_event(&cs, (size_t)cs.c[i].launcher)->ext_id;
    }
    pe_calls_free(&cs);
    return true;
}

typedef struct {
    int64_t ext;
    size_t idx;
} ext_idx;

static int by_ext(const void *a, const void *b)
{
    const ext_idx *x = a, *y = b;
    return x->ext < y->ext ? -1 : x->ext > y->ext;
}

bool pe_give_work_to_kernels(pe_set *s)
{
    size_t nk = 0;
    for (size_t i = 0; i < s->n; i++) {
        const pe_event *e = &s->ev[i];
        nk += e->kind == PE_KERNEL && e->device >= 0 && e->ext_id && !pe_more_of(s, e)->flops;
    }
    if (!nk) return true;
    ext_idx *k = fmlp_malloc(nk * sizeof *k);
    if (!k) return false;
    nk = 0;
    for (size_t i = 0; i < s->n; i++) {
        const pe_event *e = &s->ev[i];
        if (e->kind == PE_KERNEL && e->device >= 0 && e->ext_id && !pe_more_of(s, e)->flops)
            k[nk++] = (ext_idx){e->ext_id, i};
    }
    qsort(k, nk, sizeof *k, by_ext);
    bool ok = true;
    for (size_t i = 0; i < s->n && ok; i++) {
        const pe_event *op = &s->ev[i];
        const pe_more *work = pe_more_of(s, op);
        if (op->kind != PE_CPU_OP || work->flops <= 0 || !op->ext_id) continue;
        ext_idx key = {op->ext_id, 0};
        ext_idx *hit = bsearch(&key, k, nk, sizeof *k, by_ext);
        if (!hit) continue;
        bool alone = (hit == k || hit[-1].ext != op->ext_id) && (hit + 1 == k + nk || hit[1].ext != op->ext_id);
        if (!alone) continue;
        pe_event *kernel = &s->ev[hit->idx];
        pe_more m = *pe_more_of(s, kernel);
        m.flops = work->flops;
        m.bytes = work->bytes;
        ok = pe_set_more(s, kernel, &m);
    }
    free(k);
    return ok;
}

const char *pe_call_key(const char *name)
{
    return strncmp(name, "ProfilerStep#", 13) == 0 ? "ProfilerStep*" : name;
}
