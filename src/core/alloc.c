/* Why: see alloc.h. One relaxed load per allocation while nothing is armed. */
#include "core/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int g_armed;
static int64_t g_count, g_fail_nth;
static size_t g_max_bytes;
static int g_fired;

void fmlp_alloc_test_arm(int64_t fail_nth, size_t max_bytes)
{
    __atomic_store_n(&g_count, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_fired, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_fail_nth, fail_nth, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_max_bytes, max_bytes, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_armed, 1, __ATOMIC_SEQ_CST);
}

void fmlp_alloc_test_disarm(void) { __atomic_store_n(&g_armed, 0, __ATOMIC_SEQ_CST); }

int64_t fmlp_alloc_test_count(void) { return __atomic_load_n(&g_count, __ATOMIC_SEQ_CST); }

bool fmlp_alloc_test_fired(void) { return __atomic_load_n(&g_fired, __ATOMIC_SEQ_CST) != 0; }

/* Whether this allocation of `bytes` is to fail. */
static bool refused(size_t bytes)
{
    if (!__atomic_load_n(&g_armed, __ATOMIC_RELAXED)) return false;
    int64_t n = __atomic_add_fetch(&g_count, 1, __ATOMIC_SEQ_CST);
    size_t max = __atomic_load_n(&g_max_bytes, __ATOMIC_RELAXED);
    bool refuse = n == __atomic_load_n(&g_fail_nth, __ATOMIC_RELAXED);
    if (refuse) __atomic_store_n(&g_fired, 1, __ATOMIC_SEQ_CST);
    refuse = refuse || (max && bytes > max);
    if (refuse) errno = ENOMEM; /* as malloc sets it */
    return refuse;
}

void *fmlp_malloc(size_t bytes) { return refused(bytes) ? NULL : malloc(bytes); }

void *fmlp_calloc(size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) return NULL;
    return refused(bytes) ? NULL : calloc(n, size);
}

void *fmlp_realloc(void *p, size_t bytes) { return refused(bytes) ? NULL : realloc(p, bytes); }

void *fmlp_aligned_alloc(size_t align, size_t bytes)
{
    if (refused(bytes)) return NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    void *p = NULL;
    return posix_memalign(&p, align, bytes ? bytes : align) == 0 ? p : NULL;
}

char *fmlp_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = fmlp_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
