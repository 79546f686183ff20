/* Why: see idmap.h. A dense map is chosen when the key range is at most a
 * few times the key count, so it never costs more than a hash would. */
#include "profiler/idmap.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

static size_t hash_slot(int64_t k, size_t cap)
{
    uint64_t h = (uint64_t)k * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static bool alloc_hash(pe_idmap *m, size_t cap)
{
    m->key = fmlp_malloc(cap * sizeof *m->key);
    m->val = fmlp_malloc(cap * sizeof *m->val);
    if (!m->key || !m->val) {
        free(m->key);
        free(m->val);
        m->key = NULL;
        m->val = NULL;
        return false;
    }
    memset(m->val, 0xff, cap * sizeof *m->val);
    m->cap = cap;
    return true;
}

bool pe_idmap_init(pe_idmap *m, int64_t lo, int64_t hi, size_t count)
{
    memset(m, 0, sizeof *m);
    if (count && hi >= lo && (uint64_t)hi - (uint64_t)lo < 4 * (uint64_t)count + 1024) {
        m->dense = true;
        m->lo = lo;
        m->cap = (size_t)((uint64_t)hi - (uint64_t)lo + 1);
        m->val = fmlp_malloc(m->cap * sizeof *m->val);
        if (!m->val) return false;
        memset(m->val, 0xff, m->cap * sizeof *m->val);
        return true;
    }
    size_t cap = 64;
    while (cap < count * 2 + 2) cap *= 2;
    return alloc_hash(m, cap);
}

void pe_idmap_free(pe_idmap *m)
{
    free(m->val);
    free(m->key);
    memset(m, 0, sizeof *m);
}

static size_t find(const pe_idmap *m, int64_t k)
{
    size_t j = hash_slot(k, m->cap);
    while (m->val[j] >= 0 && m->key[j] != k) j = (j + 1) & (m->cap - 1);
    return j;
}

int32_t pe_idmap_get(const pe_idmap *m, int64_t k)
{
    if (m->dense) {
        uint64_t i = (uint64_t)k - (uint64_t)m->lo;
        return k >= m->lo && i < m->cap ? m->val[i] : -1;
    }
    return m->cap ? m->val[find(m, k)] : -1;
}

static bool grow(pe_idmap *m)
{
    pe_idmap old = *m;
    if (!alloc_hash(m, old.cap * 2)) {
        *m = old;
        return false;
    }
    for (size_t i = 0; i < old.cap; i++)
        if (old.val[i] >= 0) {
            size_t j = find(m, old.key[i]);
            m->key[j] = old.key[i];
            m->val[j] = old.val[i];
        }
    free(old.key);
    free(old.val);
    return true;
}

bool pe_idmap_put(pe_idmap *m, int64_t k, int32_t v)
{
    if (m->dense) {
        uint64_t i = (uint64_t)k - (uint64_t)m->lo;
        if (k < m->lo || i >= m->cap) return false;
        if (m->val[i] < 0) m->val[i] = v;
        return true;
    }
    if ((m->n + 1) * 2 > m->cap && !grow(m)) return false;
    size_t j = find(m, k);
    if (m->val[j] >= 0) return true;
    m->key[j] = k;
    m->val[j] = v;
    m->n++;
    return true;
}
