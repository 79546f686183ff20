/* Why: the profiler orders millions of events by lane and time, and the
 * orders must be stable (ties keep their first-seen order, as the tables
 * and traces torch prints do). qsort is neither guaranteed stable nor able
 * to pass a context to its comparator, so this is one stable merge sort of
 * index arrays, linear on input that is already sorted or nearly so (the
 * usual case: traces are written mostly in time order). */
#ifndef FMLP_CORE_IDX_SORT_H
#define FMLP_CORE_IDX_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* <0, 0, >0 as element a sorts before, with, after element b. */
typedef int (*idx_cmp)(const void *ctx, uint32_t a, uint32_t b);

/* Sorts v[0..n) stably; false (v unchanged) when out of memory. */
bool idx_sort(uint32_t *v, size_t n, idx_cmp cmp, const void *ctx);

#endif
