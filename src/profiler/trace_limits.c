/* Why: see trace_limits.h. The defaults: 4 GiB of JSON and 20M events
 * (twice the largest traces seen), 64 KiB per string (kernel names run to a
 * few KB), depth 64 (Kineto nests 5 deep), 256 MiB of distinct strings and
 * 2 GiB held in all. */
#include "profiler/trace_limits.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"

static const struct {
    const char *env;
    uint64_t def;
    uint64_t max; /* beyond this the number means nothing to the reader */
} k_limits[PE_LIMIT_COUNT] = {
    [PE_LIMIT_BYTES] = {"FMLP_TRACE_MAX_BYTES", (uint64_t)4 << 30, UINT64_MAX},
    [PE_LIMIT_EVENTS] = {"FMLP_TRACE_MAX_EVENTS", 20000000, (uint64_t)1 << 31},
    [PE_LIMIT_STRING] = {"FMLP_TRACE_MAX_STRING", 65536, (uint64_t)1 << 30},
    [PE_LIMIT_DEPTH] = {"FMLP_TRACE_MAX_DEPTH", 64, 100000},
    [PE_LIMIT_NAMES] = {"FMLP_TRACE_MAX_NAMES", (uint64_t)256 << 20, UINT64_MAX},
    [PE_LIMIT_MEMORY] = {"FMLP_TRACE_MAX_MEMORY", (uint64_t)2 << 30, UINT64_MAX},
};

const char *pe_limit_env(pe_limit l) { return k_limits[l].env; }

fmlp_status pe_trace_limits_get(pe_trace_limits *out)
{
    for (int l = 0; l < PE_LIMIT_COUNT; l++) {
        const char *v = getenv(k_limits[l].env);
        out->v[l] = k_limits[l].def;
        if (!v || !*v) continue;
        char *end = NULL;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (errno || *end || n == 0 || v[0] == '-' || n > k_limits[l].max)
            return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s=\"%.40s\" is not a limit; give a whole number from 1 to %llu (default %llu)",
                             k_limits[l].env, v, (unsigned long long)k_limits[l].max, (unsigned long long)k_limits[l].def);
        out->v[l] = n;
    }
    return FMLP_OK;
}

fmlp_status pe_limit_fail(const pe_trace_limits *lim, pe_limit l, const char *what, const char *problem)
{
    return fmlp_fail(FMLP_ERR_UNSUPPORTED, "%s: %s; the limit is %s (now %llu, default %llu): set it higher to read this file",
                     what, problem, k_limits[l].env, (unsigned long long)lim->v[l], (unsigned long long)k_limits[l].def);
}
