/* Why: storage for the event model in events.h: a growable event array and
 * a string table, so names handed in by backends (which may reuse their
 * buffers) are copied once per distinct name, not once per event. */
#include "profiler/events.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

void pe_set_init(pe_set *s)
{
    memset(s, 0, sizeof *s);
}

void pe_set_free(pe_set *s)
{
    for (size_t i = 0; i < s->strings.cap; i++) free(s->strings.slot[i]);
    free(s->strings.slot);
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

static uint64_t hash_str(const char *str)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *c = (const unsigned char *)str; *c; c++) h = (h ^ *c) * 1099511628211ull;
    return h;
}

static bool strings_grow(pe_strings *t)
{
    size_t cap = t->cap ? t->cap * 2 : 256;
    char **slot = fmlp_calloc(cap, sizeof *slot);
    if (!slot) return false;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slot[i]) continue;
        size_t j = hash_str(t->slot[i]) & (cap - 1);
        while (slot[j]) j = (j + 1) & (cap - 1);
        slot[j] = t->slot[i];
    }
    free(t->slot);
    t->slot = slot;
    t->cap = cap;
    return true;
}

const char *pe_intern(pe_set *s, const char *str)
{
    if (!str) return NULL;
    pe_strings *t = &s->strings;
    size_t r = ((uintptr_t)str >> 4) & 63;
    if (t->recent[r].src == str && strcmp(t->recent[r].interned, str) == 0) return t->recent[r].interned;
    if ((t->n + 1) * 2 > t->cap && !strings_grow(t)) {
        s->oom = true;
        return NULL;
    }
    size_t j = hash_str(str) & (t->cap - 1);
    while (t->slot[j] && strcmp(t->slot[j], str) != 0) j = (j + 1) & (t->cap - 1);
    if (!t->slot[j]) {
        t->slot[j] = fmlp_strdup(str);
        if (!t->slot[j]) {
            s->oom = true;
            return NULL;
        }
        t->n++;
    }
    t->recent[r].src = str;
    t->recent[r].interned = t->slot[j];
    return t->slot[j];
}

pe_event *pe_add(pe_set *s, pe_kind kind, const char *name)
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
    if (!nm) return NULL;
    pe_event *e = &s->ev[s->n++];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->name = nm;
    e->device = -1;
    return e;
}

bool pe_is_device(const pe_event *e)
{
    return e->device >= 0 && (e->kind == PE_KERNEL || e->kind == PE_MEMCPY || e->kind == PE_MEMSET);
}

bool pe_is_span(const pe_event *e)
{
    return e->kind != PE_MEMORY;
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
