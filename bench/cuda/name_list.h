/* Why: the GPU benchmark (bench_cuda.c, --variants) and the row-stream
 * probe (row_stream/probe.cu, PROBE_ONLY) both pick what they time from a
 * comma-separated list of names; one matcher, included by both. */
#ifndef FMLP_BENCH_NAME_LIST_H
#define FMLP_BENCH_NAME_LIST_H

#include <stdbool.h>
#include <string.h>

/* Whether `name` is one of the comma-separated names in `list`. */
static inline bool bench_listed(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == 0)) return true;
    return false;
}

#endif
