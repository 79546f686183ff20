/* Why: the profiler object is shared by the files that record (record.c),
 * step the schedule (schedule.c) and report (table.c, trace_write.c,
 * analysis.c); its layout and their internal entry points live here. */
#ifndef FMLP_PROFILER_PROF_H
#define FMLP_PROFILER_PROF_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "fmlp.h"
#include "profiler/events.h"

/* torch.profiler.ProfilerAction. */
typedef enum { PA_NONE, PA_WARMUP, PA_RECORD, PA_RECORD_AND_SAVE } prof_action;

/* The action for absolute step `step`, exactly as torch.profiler.schedule
 * computes it. An all-zero schedule records every step (PA_RECORD). */
prof_action prof_schedule_action(const fmlp_profiler_options *o, int step);
/* FMLP_OK, or a failure naming the bad field. */
fmlp_status prof_schedule_check(const fmlp_profiler_options *o);
bool prof_has_schedule(const fmlp_profiler_options *o);

struct fmlp_profiler {
    fmlp_ctx *ctx;
    uint64_t serial; /* unique per profiler made: a range opened under another is never closed in this one */
    fmlp_profiler_options opt;
    char dist_backend[32]; /* the copy opt.dist_backend points to */
    pthread_mutex_t lock; /* guards cur, gen and the step span */
    pe_set cur;           /* the window being recorded */
    pe_set done;          /* the last completed window */
    bool have_done;
    bool started;
    int step_num;
    prof_action action;
    uint64_t gen; /* bumped whenever cur is cleared or handed over */
    bool step_open;
    size_t step_idx;
    bool collecting; /* the backend's device activity collection is on */
    atomic_llong next_id, next_corr;
};

/* Sets (on) or clears ctx->prof to p: whether forwards record into it. */
void prof_attach(fmlp_profiler *p, bool on);
/* Clears ctx->prof if it is p, then waits until no forward holds p
 * (fmlp_prof_hold_take); after it p may be freed. */
void prof_detach_and_wait(fmlp_profiler *p);

/* Table of an event set; `with_flops` adds the FLOPs, FLOP/s and Bytes/s
 * columns when any row has FLOPs. Returns a malloc'd string or NULL (OOM). */
char *prof_table(const pe_set *s, const fmlp_table_options *opt, bool with_flops, fmlp_status *st);

/* Kineto-convention JSON of an event set (with fmlpAnalysis); malloc'd,
 * NULL when memory ran out anywhere in it (never a partial trace). */
char *prof_trace_json(const pe_set *s, const fmlp_profiler_options *opt, size_t *len);
/* Writes `len` bytes to `path`, gzip-compressed when it ends in ".gz",
 * whole or not at all (core/file_out.h). */
fmlp_status prof_write_file(const char *path, const char *data, size_t len);

#endif
