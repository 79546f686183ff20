/* Why: the public fmlp_trace handle is an event set read from a file plus
 * its analysis, made once at first use; the files behind the trace calls
 * (trace_file.c, trace_report.c, trace_diff.c) share its layout here. */
#ifndef FMLP_PROFILER_TRACE_HANDLE_H
#define FMLP_PROFILER_TRACE_HANDLE_H

#include <pthread.h>

#include "fmlp.h"
#include "profiler/analysis.h"
#include "profiler/events.h"

struct fmlp_trace {
    pe_set s;
    char *path;  /* as opened, for messages and output */
    int n_steps; /* ProfilerStep#N spans */
    pthread_mutex_t lock; /* guards the analysis below */
    bool analysed, analysable;
    pe_analysis a;
};

/* The trace's analysis, or NULL after fmlp_fail (naming `what`) when the
 * trace holds no spans or memory ran out. */
const pe_analysis *trace_analysis(fmlp_trace *t, const char *what);

#endif
