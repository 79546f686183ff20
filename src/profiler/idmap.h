/* Why: joining events by External id and correlation id, and grouping
 * calls by name, are lookups of integer keys done millions of times per
 * trace. Ids in real traces are dense (Kineto and fmlp count them up from
 * 1), so a map over a known range is a plain array; sparse or unknown keys
 * get an open-addressing hash. The first value put for a key is kept. */
#ifndef FMLP_PROFILER_IDMAP_H
#define FMLP_PROFILER_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int32_t *val;
    int64_t *key; /* hash mode only */
    size_t cap, n;
    int64_t lo; /* dense mode: val[k - lo] */
    bool dense;
} pe_idmap;

/* A map for `count` keys, all in [lo, hi] (count 0: any keys, any number;
 * it grows). false when out of memory. */
bool pe_idmap_init(pe_idmap *m, int64_t lo, int64_t hi, size_t count);
void pe_idmap_free(pe_idmap *m);
/* The value of k, or -1. */
int32_t pe_idmap_get(const pe_idmap *m, int64_t k);
/* Puts k -> v unless k has a value (v >= 0); false when out of memory (or
 * k is outside the range the map was made for). */
bool pe_idmap_put(pe_idmap *m, int64_t k, int32_t v);

#endif
