/* Why: every host allocation of the library goes through these five calls,
 * so that one test hook can make any of them fail: the Nth allocation (the
 * allocation-failure tests walk N over a whole create-to-destroy run) or any
 * allocation above a size (fuzzers, which must never run the machine out of
 * memory). The hook is always compiled in and inert until a test arms it.
 * Memory from these is plain malloc memory: free it with free(). Device
 * memory (src/cuda/) and what open_memstream grows are not counted. */
#ifndef FMLP_CORE_ALLOC_H
#define FMLP_CORE_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *fmlp_malloc(size_t bytes);
void *fmlp_calloc(size_t n, size_t size);
void *fmlp_realloc(void *p, size_t bytes);
/* `align` a power of two; any size, 0 included. */
void *fmlp_aligned_alloc(size_t align, size_t bytes);
char *fmlp_strdup(const char *s);

/* Test hooks. Arming resets the count of allocations. From then on the
 * fail_nth-th allocation fails (0: none) and so does every allocation of
 * more than max_bytes (0: no limit); the others succeed. */
void fmlp_alloc_test_arm(int64_t fail_nth, size_t max_bytes);
void fmlp_alloc_test_disarm(void);
/* Allocations since arming; whether the fail_nth-th one was reached. */
int64_t fmlp_alloc_test_count(void);
bool fmlp_alloc_test_fired(void);

#endif
