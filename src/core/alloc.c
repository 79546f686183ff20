/* Why: see alloc.h. A per-thread countdown, so tests running at once (and
 * the library's other threads) are not disturbed. */
#include "core/alloc.h"

#include <stdbool.h>
#include <stdlib.h>

static _Thread_local long tl_left = -1, tl_made;

static bool allowed(void)
{
    tl_made++;
    if (tl_left < 0) return true;
    if (tl_left == 0) return false;
    tl_left--;
    return true;
}

void *fmlp_malloc(size_t n) { return allowed() ? malloc(n) : NULL; }

void *fmlp_calloc(size_t n, size_t size) { return allowed() ? calloc(n, size) : NULL; }

void *fmlp_realloc(void *p, size_t n) { return allowed() ? realloc(p, n) : NULL; }

long fmlp_alloc_fail_after(long n)
{
    long made = tl_made;
    tl_made = 0;
    tl_left = n;
    return made;
}
