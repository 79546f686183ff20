/* Why: see tree.h. Nesting is by time containment on each CPU lane, the
 * rule torch's EventList uses, so it works the same for events we recorded
 * and for traces we only read. */
#include "profiler/tree.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

typedef struct {
    int64_t *key;
    int *val;
    size_t cap;
} idmap;

static bool idmap_init(idmap *m, size_t n)
{
    m->cap = 16;
    while (m->cap < n * 2 + 2) m->cap *= 2;
    m->key = fmlp_malloc(m->cap * sizeof *m->key);
    m->val = fmlp_malloc(m->cap * sizeof *m->val);
    if (!m->key || !m->val) return false;
    for (size_t i = 0; i < m->cap; i++) m->val[i] = -1;
    return true;
}

static void idmap_free(idmap *m)
{
    free(m->key);
    free(m->val);
}

static size_t idmap_slot(const idmap *m, int64_t k)
{
    size_t j = (size_t)((uint64_t)k * 0x9e3779b97f4a7c15ull >> 7) & (m->cap - 1);
    while (m->val[j] >= 0 && m->key[j] != k) j = (j + 1) & (m->cap - 1);
    return j;
}

static int idmap_get(const idmap *m, int64_t k)
{
    return m->val[idmap_slot(m, k)];
}

/* Keeps the first value put for a key. */
static void idmap_put(idmap *m, int64_t k, int v)
{
    size_t j = idmap_slot(m, k);
    if (m->val[j] >= 0) return;
    m->key[j] = k;
    m->val[j] = v;
}

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

static const pe_call *sort_base;

static int by_lane_time(const void *a, const void *b)
{
    const pe_call *x = &sort_base[*(const int *)a], *y = &sort_base[*(const int *)b];
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1) return x->t1 > y->t1 ? -1 : 1;
    int rx = kind_rank(x->kind), ry = kind_rank(y->kind);
    if (rx != ry) return rx < ry ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

/* Which runtime call started a device activity is its correlation, unique
 * per call in Kineto's scheme. Traces fmlp wrote before it followed that
 * scheme gave every call of one op the op's correlation (cuBLASLt's
 * cudaMemsetAsync and cuLaunchKernelEx alike), so calls are also keyed by
 * what they start, and an activity looks for its own kind of call first. */
enum { START_LAUNCH, START_MEMSET, START_MEMCPY };

static int runtime_starts(const char *name)
{
    return strstr(name, "emset") ? START_MEMSET : strstr(name, "emcpy") ? START_MEMCPY : START_LAUNCH;
}

static int64_t start_key(int64_t corr, int starts)
{
    return (int64_t)((uint64_t)corr * 4u + (uint64_t)starts);
}

/* `stack` has room for m + 1 entries. */
static void nest_cpu(pe_calls *cs, int *order, size_t m, int *stack)
{
    sort_base = cs->c;
    qsort(order, m, sizeof *order, by_lane_time);
    size_t depth = 0;
    for (size_t k = 0; k < m; k++) {
        pe_call *c = &cs->c[order[k]];
        if (depth) {
            const pe_call *prev = &cs->c[order[k - 1]];
            if (prev->pid != c->pid || prev->tid != c->tid) depth = 0;
        }
        while (depth) {
            const pe_call *top = &cs->c[stack[depth - 1]];
            if (top->t0 <= c->t0 && c->t1 <= top->t1) break;
            depth--;
        }
        c->parent = depth ? stack[depth - 1] : -1;
        stack[depth++] = order[k];
    }
}

bool pe_calls_build(const pe_set *s, pe_calls *out)
{
    memset(out, 0, sizeof *out);
    pe_call *c = fmlp_calloc(s->n + 1, sizeof *c);
    idmap by_corr = {0}, by_ext = {0}, by_start = {0};
    bool ok = c && idmap_init(&by_corr, s->n) && idmap_init(&by_ext, s->n) && idmap_init(&by_start, s->n);
    if (!ok) {
        free(c);
        idmap_free(&by_corr);
        idmap_free(&by_ext);
        idmap_free(&by_start);
        return false;
    }
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        const pe_event *e = &s->ev[i];
        if (!pe_is_span(e) || e->t1 < e->t0) continue;
        bool cpu_kernel = e->kind == PE_KERNEL && e->device < 0;
        if (cpu_kernel && e->corr) {
            int j = idmap_get(&by_corr, e->corr);
            if (j >= 0) {
                pe_call *m = &c[j];
                if (e->t0 < m->t0) m->t0 = e->t0;
                if (e->t1 > m->t1) m->t1 = e->t1;
                m->flops += e->flops;
                m->bytes += e->bytes;
                m->lanes++;
                continue;
            }
            idmap_put(&by_corr, e->corr, (int)n);
        }
        pe_call *k = &c[n];
        k->e = e;
        k->name = e->name;
        k->kind = e->kind;
        k->device = pe_is_device(e);
        k->t0 = e->t0;
        k->t1 = e->t1;
        k->pid = e->pid;
        k->tid = e->tid;
        k->parent = k->owner = k->launcher = -1;
        k->lanes = 1;
        k->flops = e->flops;
        k->bytes = e->bytes;
        if ((e->kind == PE_CPU_OP || e->kind == PE_USER || e->kind == PE_STEP) && e->ext_id)
            idmap_put(&by_ext, e->ext_id, (int)n);
        if (e->kind == PE_RUNTIME && e->corr) {
            idmap_put(&by_corr, e->corr, (int)n);
            idmap_put(&by_start, start_key(e->corr, runtime_starts(e->name)), (int)n);
        }
        out->has_device |= k->device;
        out->has_kernels |= e->kind == PE_KERNEL || e->kind == PE_MEMCPY || e->kind == PE_MEMSET;
        n++;
    }
    out->c = c;
    out->n = n;

    /* Each call's lane records, grouped, so writers need no search. */
    size_t *fill = fmlp_calloc(n + 1, sizeof *fill);
    out->lane_ev = fmlp_malloc((s->n + 1) * sizeof *out->lane_ev);
    if (!fill || !out->lane_ev) {
        free(fill);
        idmap_free(&by_corr);
        idmap_free(&by_ext);
        idmap_free(&by_start);
        pe_calls_free(out);
        return false;
    }
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        c[i].lane0 = at;
        at += (size_t)c[i].lanes;
    }
    for (size_t i = 0, j = 0; i < s->n; i++) {
        const pe_event *e = &s->ev[i];
        if (!pe_is_span(e) || e->t1 < e->t0) continue;
        int k = -1;
        if (e->kind == PE_KERNEL && e->device < 0 && e->corr) k = idmap_get(&by_corr, e->corr);
        if (k < 0) {
            while (j < n && c[j].e != e) j++;
            if (j == n) continue;
            k = (int)j;
        }
        if (fill[k] < (size_t)c[k].lanes) out->lane_ev[c[k].lane0 + fill[k]++] = i;
    }
    free(fill);

    /* A CPU kernel nests on the thread of the op that launched it. */
    for (size_t i = 0; i < n; i++) {
        pe_call *k = &c[i];
        if (k->kind != PE_KERNEL || k->device || !k->e->ext_id) continue;
        int op = idmap_get(&by_ext, k->e->ext_id);
        if (op >= 0) {
            k->pid = c[op].pid;
            k->tid = c[op].tid;
        }
    }

    int *order = fmlp_malloc((n + 1) * sizeof *order), *stack = fmlp_malloc((n + 1) * sizeof *stack);
    size_t m = 0;
    if (!order || !stack) {
        free(order);
        free(stack);
        idmap_free(&by_corr);
        idmap_free(&by_ext);
        idmap_free(&by_start);
        pe_calls_free(out);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        if (!c[i].device) order[m++] = (int)i;
    nest_cpu(out, order, m, stack);
    free(order);
    free(stack);

    for (size_t i = 0; i < n; i++) {
        pe_call *k = &c[i];
        if (k->device) continue;
        k->launcher = k->parent;
        k->cpu_total = k->t1 - k->t0;
        k->self_cpu += k->cpu_total;
        if (k->parent >= 0) c[k->parent].self_cpu -= k->cpu_total;
    }
    for (size_t i = 0; i < n; i++)
        if (c[i].self_cpu < 0) c[i].self_cpu = 0;

    /* Device time is charged to the op that launched it (its External id,
     * else the op around its runtime call) and to every op above that. */
    for (size_t i = 0; i < n; i++) {
        pe_call *k = &c[i];
        if (!k->device) continue;
        int64_t d = k->t1 - k->t0;
        k->self_dev = k->dev_total = d;
        int rt = -1;
        if (k->e->corr) {
            const int starts = k->kind == PE_MEMSET ? START_MEMSET : k->kind == PE_MEMCPY ? START_MEMCPY : START_LAUNCH;
            rt = idmap_get(&by_start, start_key(k->e->corr, starts));
            if (rt < 0) rt = idmap_get(&by_corr, k->e->corr);
        }
        int owner = k->e->ext_id ? idmap_get(&by_ext, k->e->ext_id) : -1;
        if (owner < 0 && rt >= 0 && !c[rt].device) owner = c[rt].kind == PE_RUNTIME ? c[rt].parent : rt;
        k->owner = owner;
        if (rt >= 0 && c[rt].kind == PE_RUNTIME) k->launcher = rt;
        if (owner < 0) continue;
        c[owner].self_dev += d;
        for (int a = owner; a >= 0; a = c[a].parent) c[a].dev_total += d;
    }
    idmap_free(&by_corr);
    idmap_free(&by_ext);
    idmap_free(&by_start);
    return true;
}

void pe_calls_free(pe_calls *c)
{
    free(c->c);
    free(c->lane_ev);
    memset(c, 0, sizeof *c);
}

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
    /* An op with an arithmetic op under it is a wrapper, not the work. */
    for (size_t i = 0; i < cs->n && !cs->has_kernels; i++) {
        const pe_call *c = &cs->c[i];
        if (c->kind != PE_CPU_OP || zero_work_op(c->name)) continue;
        for (int a = c->parent; a >= 0 && !busy_below[a]; a = cs->c[a].parent) busy_below[a] = true;
    }
    for (size_t i = 0; i < cs->n; i++) {
        const pe_call *c = &cs->c[i];
        w[i] = cs->has_kernels ? is_kernelish(c->kind)
                               : c->kind == PE_CPU_OP && !zero_work_op(c->name) && !busy_below[i];
        if (!w[i]) continue;
        b[i]++;
        int up = c->device ? c->owner : c->parent;
        for (int a = up; a >= 0; a = cs->c[a].parent) b[a]++;
    }
    free(busy_below);
    *work = w;
    *below = b;
    return true;
}

bool pe_resolve_external_ids(pe_set *s)
{
    bool missing = false;
    for (size_t i = 0; i < s->n && !missing; i++)
        missing = !s->ev[i].ext_id && (s->ev[i].kind == PE_RUNTIME || pe_is_device(&s->ev[i]));
    if (!missing) return true;
    pe_calls cs;
    if (!pe_calls_build(s, &cs)) return false;
    for (size_t i = 0; i < cs.n; i++) {
        const pe_call *c = &cs.c[i];
        if (c->kind != PE_RUNTIME || c->e->ext_id) continue;
        int a = c->parent;
        while (a >= 0 && cs.c[a].kind != PE_CPU_OP && cs.c[a].kind != PE_USER) a = cs.c[a].parent;
        if (a >= 0) s->ev[c->e - s->ev].ext_id = cs.c[a].e->ext_id;
    }
    for (size_t i = 0; i < cs.n; i++) {
        const pe_call *c = &cs.c[i];
        if (c->device && !c->e->ext_id && c->launcher >= 0) s->ev[c->e - s->ev].ext_id = cs.c[c->launcher].e->ext_id;
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
    ext_idx *k = fmlp_malloc((s->n + 1) * sizeof *k);
    if (!k) return false;
    size_t nk = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->ev[i].kind == PE_KERNEL && s->ev[i].device >= 0 && s->ev[i].ext_id && !s->ev[i].flops)
            k[nk++] = (ext_idx){s->ev[i].ext_id, i};
    qsort(k, nk, sizeof *k, by_ext);
    for (size_t i = 0; i < s->n && nk; i++) {
        const pe_event *op = &s->ev[i];
        if (op->kind != PE_CPU_OP || op->flops <= 0 || !op->ext_id) continue;
        ext_idx key = {op->ext_id, 0};
        ext_idx *hit = bsearch(&key, k, nk, sizeof *k, by_ext);
        if (!hit) continue;
        bool alone = (hit == k || hit[-1].ext != op->ext_id) && (hit + 1 == k + nk || hit[1].ext != op->ext_id);
        if (!alone) continue;
        s->ev[hit->idx].flops = op->flops;
        s->ev[hit->idx].bytes = op->bytes;
    }
    free(k);
    return true;
}

const char *pe_call_key(const pe_call *c)
{
    return strncmp(c->name, "ProfilerStep#", 13) == 0 ? "ProfilerStep*" : c->name;
}
