/* Why: what one trace file may make the reader hold is bounded, so a
 * hostile or broken file (a gzip bomb, a billion-element array, one
 * endless name) is refused quickly instead of exhausting memory. Each
 * bound has a default that admits the largest real traces (2 GB, 10M
 * events) and an environment variable to raise it; a refusal names both. */
#ifndef FMLP_PROFILER_TRACE_LIMITS_H
#define FMLP_PROFILER_TRACE_LIMITS_H

#include <stdint.h>

#include "fmlp.h"

typedef enum {
    PE_LIMIT_BYTES,  /* JSON bytes, after decompression */
    PE_LIMIT_EVENTS, /* elements of traceEvents */
    PE_LIMIT_STRING, /* one name, key or other string the reader keeps */
    PE_LIMIT_DEPTH,  /* nesting of arrays and objects */
    PE_LIMIT_NAMES,  /* all distinct strings kept, in bytes */
    PE_LIMIT_MEMORY, /* everything the reader holds, in bytes */
    PE_LIMIT_COUNT
} pe_limit;

typedef struct {
    uint64_t v[PE_LIMIT_COUNT];
} pe_trace_limits;

/* The limits in force: defaults, or the environment's. Fails naming the
 * variable when one is set to something that is not a positive integer. */
fmlp_status pe_trace_limits_get(pe_trace_limits *out);
/* "FMLP_TRACE_MAX_EVENTS" etc. */
const char *pe_limit_env(pe_limit l);
/* Fails (FMLP_ERR_UNSUPPORTED) for `what` going past limit l:
 * "<what>: <problem>; the limit is FMLP_TRACE_MAX_... (now N, default D);
 * set it higher to read this file". */
fmlp_status pe_limit_fail(const pe_trace_limits *lim, pe_limit l, const char *what, const char *problem);

#endif
