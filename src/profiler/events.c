/* Why: storage for the event model in events.h: a growable event array and
 * three tables of values stored once (strings, lanes, per-event extras), so
 * names handed in by backends (which may reuse their buffers) are copied
 * once per distinct name, and a read trace's millions of events stay small. */
#include "profiler/events.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

_Static_assert(sizeof(pe_event) == 48, "pe_event is meant to stay 48 bytes: traces hold millions");

void pe_set_init(pe_set *s)
{
    memset(s, 0, sizeof *s);
}

void pe_set_free(pe_set *s)
{
    for (size_t i = 0; i < s->strings.cap; i++) free(s->strings.slot[i]);
    free(s->strings.slot);
    free(s->lanes.v);
    free(s->lanes.slot);
    free(s->more.v);
    free(s->more.slot);
    free(s->ev);
    pe_set_init(s);
}

void pe_set_reset(pe_set *s)
{
    pe_event *ev = s->ev;
    size_t cap = s->cap;
    s->ev = NULL;
    pe_set_free(s);
    s->ev = ev;
    s->cap = cap;
}

size_t pe_set_bytes(const pe_set *s)
{
    return s->cap * sizeof(pe_event) + s->strings.bytes + s->strings.cap * (sizeof(char *) + 16) +
           s->lanes.cap * sizeof(pe_lane) + s->lanes.slots * sizeof(uint32_t) + s->more.cap * sizeof(pe_more) +
           s->more.slots * sizeof(uint32_t);
}

/* Eight bytes at a time: names run to hundreds of bytes. */
static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (; n >= 8; c += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, c, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    uint64_t w = 0;
    memcpy(&w, c, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 32);
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* ---------------------------------------------------------------- strings */

static bool strings_grow(pe_strings *t)
{
    size_t cap = t->cap ? t->cap * 2 : 256;
    char **slot = fmlp_calloc(cap, sizeof *slot);
    if (!slot) return false;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slot[i]) continue;
        size_t j = hash_bytes(t->slot[i], strlen(t->slot[i])) & (cap - 1);
        while (slot[j]) j = (j + 1) & (cap - 1);
        slot[j] = t->slot[i];
    }
    free(t->slot);
    t->slot = slot;
    t->cap = cap;
    return true;
}

/* The slot holding `str` (len bytes, no NUL among them), or the empty one
 * where it belongs. */
static size_t string_slot(const pe_strings *t, const char *str, size_t len, uint64_t h)
{
    size_t j = h & (t->cap - 1);
    while (t->slot[j] && (strncmp(t->slot[j], str, len) != 0 || t->slot[j][len] != 0)) j = (j + 1) & (t->cap - 1);
    return j;
}

static const char *intern(pe_set *s, const char *str, size_t len)
{
    pe_strings *t = &s->strings;
    if ((t->n + 1) * 2 > t->cap && !strings_grow(t)) {
        s->oom = true;
        return NULL;
    }
    size_t j = string_slot(t, str, len, hash_bytes(str, len));
    if (!t->slot[j]) {
        char *copy = fmlp_malloc(len + 1);
        if (!copy) {
            s->oom = true;
            return NULL;
        }
        memcpy(copy, str, len);
        copy[len] = 0;
        t->slot[j] = copy;
        t->n++;
        t->bytes += len + 1;
    }
    return t->slot[j];
}

const char *pe_intern(pe_set *s, const char *str)
{
    if (!str) return NULL;
    pe_strings *t = &s->strings;
    size_t r = ((uintptr_t)str >> 4) & 63;
    if (t->recent[r].src == str && strcmp(t->recent[r].interned, str) == 0) return t->recent[r].interned;
    const char *in = intern(s, str, strlen(str));
    if (in) {
        t->recent[r].src = str;
        t->recent[r].interned = in;
    }
    return in;
}

const char *pe_intern_n(pe_set *s, const char *str, size_t len)
{
    if (!str) return NULL;
    const char *nul = memchr(str, 0, len);
    return intern(s, str, nul ? (size_t)(nul - str) : len);
}

/* ------------------------------------------------- lanes and extra values */

/* Doubles an index of `slots` entries over `n` values; `hash(v, i)`. */
static bool index_grow(uint32_t **slot, size_t *slots, size_t n, uint64_t (*hash)(const void *, size_t), const void *v)
{
    size_t cap = *slots ? *slots * 2 : 64;
    uint32_t *ns = fmlp_calloc(cap, sizeof *ns);
    if (!ns) return false;
    for (size_t i = 0; i < n; i++) {
        size_t j = hash(v, i) & (cap - 1);
        while (ns[j]) j = (j + 1) & (cap - 1);
        ns[j] = (uint32_t)(i + 1);
    }
    free(*slot);
    *slot = ns;
    *slots = cap;
    return true;
}

static bool grow_array(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap) return true;
    size_t c = *cap ? *cap * 2 : 64;
    void *nv = fmlp_realloc(*v, c * size);
    if (!nv) return false;
    *v = nv;
    *cap = c;
    return true;
}

static uint64_t lane_hash(int64_t pid, int64_t tid) { return mix((uint64_t)pid * 0x9e3779b97f4a7c15ull ^ (uint64_t)tid); }

static uint64_t lane_hash_at(const void *v, size_t i)
{
    const pe_lane *l = &((const pe_lane *)v)[i];
    return lane_hash(l->pid, l->tid);
}

/* Index of lane (pid, tid), added if new; -1 when out of memory or full. */
static int64_t lane_id(pe_set *s, int64_t pid, int64_t tid)
{
    pe_lanes *L = &s->lanes;
    if (L->last && L->v[L->last - 1].pid == pid && L->v[L->last - 1].tid == tid) return L->last - 1;
    if ((L->n + 1) * 2 > L->slots && !index_grow(&L->slot, &L->slots, L->n, lane_hash_at, L->v)) return -1;
    size_t j = lane_hash(pid, tid) & (L->slots - 1);
    for (; L->slot[j]; j = (j + 1) & (L->slots - 1)) {
        const pe_lane *l = &L->v[L->slot[j] - 1];
        if (l->pid == pid && l->tid == tid) {
            L->last = L->slot[j];
            return L->slot[j] - 1;
        }
    }
    if (L->n >= PE_MAX_LANES || !grow_array((void **)&L->v, &L->cap, L->n, sizeof *L->v)) return -1;
    L->v[L->n] = (pe_lane){pid, tid};
    L->slot[j] = (uint32_t)(++L->n);
    L->last = L->slot[j];
    return (int64_t)L->n - 1;
}

bool pe_set_lane(pe_set *s, pe_event *e, int64_t pid, int64_t tid)
{
    int64_t id = lane_id(s, pid, tid);
    if (id < 0) {
        s->oom = true;
        return false;
    }
    e->lane = (uint32_t)id;
    return true;
}

static const pe_more k_no_more;

const pe_more *pe_more_of(const pe_set *s, const pe_event *e)
{
    return e->more ? &s->more.v[e->more - 1] : &k_no_more;
}

static uint64_t more_hash_at(const void *v, size_t i) { return hash_bytes(&((const pe_more *)v)[i], sizeof(pe_more)); }

bool pe_set_more(pe_set *s, pe_event *e, const pe_more *m)
{
    if (memcmp(m, &k_no_more, sizeof *m) == 0) {
        e->more = 0;
        return true;
    }
    pe_mores *M = &s->more;
    if ((M->n + 1) * 2 > M->slots && !index_grow(&M->slot, &M->slots, M->n, more_hash_at, M->v)) goto oom;
    size_t j = hash_bytes(m, sizeof *m) & (M->slots - 1);
    for (; M->slot[j]; j = (j + 1) & (M->slots - 1))
        if (memcmp(&M->v[M->slot[j] - 1], m, sizeof *m) == 0) {
            e->more = M->slot[j];
            return true;
        }
    if (M->n >= PE_MAX_MORE || !grow_array((void **)&M->v, &M->cap, M->n, sizeof *M->v)) goto oom;
    M->v[M->n] = *m;
    M->slot[j] = (uint32_t)(++M->n);
    e->more = M->slot[j];
    return true;
oom:
    s->oom = true;
    return false;
}

/* ------------------------------------------------------------------ events */

pe_event *pe_add(pe_set *s, pe_kind kind, const char *name, int64_t pid, int64_t tid)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        pe_event *ev = fmlp_realloc(s->ev, cap * sizeof *ev);
        if (!ev) {
            s->oom = true;
            return NULL;
        }
        s->ev = ev;
        s->cap = cap;
    }
    const char *nm = name ? pe_intern(s, name) : "";
    int64_t lane = lane_id(s, pid, tid);
    if (!nm || lane < 0) {
        s->oom = true;
        return NULL;
    }
    pe_event *e = &s->ev[s->n++];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->name = nm;
    e->device = -1;
    e->lane = (uint32_t)lane;
    return e;
}

const char *pe_kind_cat(pe_kind k)
{
    switch (k) {
    case PE_CPU_OP: return "cpu_op";
    case PE_USER:
    case PE_STEP: return "user_annotation";
    case PE_KERNEL: return "kernel";
    case PE_RUNTIME: return "cuda_runtime";
    case PE_MEMCPY: return "gpu_memcpy";
    case PE_MEMSET: return "gpu_memset";
    case PE_MEMORY: return "cpu_instant_event";
    }
    return "cpu_op";
}
