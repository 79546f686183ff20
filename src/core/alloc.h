/* Why: the code that reads untrusted traces must free what it holds on
 * every allocation failure, and those paths only run when memory runs
 * out. Its allocations go through these wrappers, which a test can make
 * fail on purpose (the Nth one from now, on its own thread), to walk every
 * failure path under ASan's leak check. */
#ifndef FMLP_CORE_ALLOC_H
#define FMLP_CORE_ALLOC_H

#include <stddef.h>

void *fmlp_malloc(size_t n);
void *fmlp_calloc(size_t n, size_t size);
void *fmlp_realloc(void *p, size_t n);

/* Tests: on this thread, the next `n` allocations succeed and every one
 * after fails; n < 0 ends that. Returns how many were made since the
 * previous call. */
long fmlp_alloc_fail_after(long n);

#endif
