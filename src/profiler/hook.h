/* Why: the seam between what runs and the profiler. The plan executor and
 * the backends call these around every op and kernel; they are only reached
 * when ctx->prof is non-NULL, so an unprofiled forward pays one branch.
 * Backends hand plain records; the profiler core knows nothing of CUDA. */
#ifndef FMLP_PROFILER_HOOK_H
#define FMLP_PROFILER_HOOK_H

#include <stdint.h>

#include "fmlp.h"

/* The profiler recording on ctx, held: it is not freed until the hold is
 * given back, even if fmlp_profiler_destroy runs meanwhile on another
 * thread (destroy waits for its holders). p is NULL when nothing records
 * (give it back all the same; that is free). Everything that records
 * takes a hold for as long as it uses the profiler, and only the pointer
 * a hold gave it; never read ctx->prof directly. Holds may nest. */
typedef struct {
    struct fmlp_profiler *p;
    int slot;
} fmlp_prof_hold;
fmlp_prof_hold fmlp_prof_hold_take(fmlp_ctx *ctx);
void fmlp_prof_hold_give(fmlp_ctx *ctx, fmlp_prof_hold h);

/* Opens a cpu_op span on the calling thread; returns its External id.
 * `shapes` (may be NULL) is recorded when record_shapes is on, in torch's
 * "[[64, 128, 768], [3072, 768]]" form. */
int64_t fmlp_prof_op_begin(struct fmlp_profiler *p, const char *name, const char *shapes, int64_t flops,
                           int64_t bytes);
void fmlp_prof_op_end(struct fmlp_profiler *p, int64_t external_id);

/* A fresh correlation id for one CPU parallel region (all its lanes share
 * it). GPU work needs none from here: each runtime call and the activity it
 * starts share the correlation CUPTI gives the call. */
int64_t fmlp_prof_correlation(struct fmlp_profiler *p);
/* The External id of the innermost op (or range) open on the calling
 * thread, 0 when none: what a backend tags work with that no executor op
 * hands it (copies). */
int64_t fmlp_prof_current_op(struct fmlp_profiler *p);

/* What a backend ran: one record per lane it ran on (each CPU worker thread
 * of a parallel region; a GPU stream). */
typedef enum {
    FMLP_REC_KERNEL,  /* cat "kernel" */
    FMLP_REC_RUNTIME, /* cat "cuda_runtime": the launch call on the CPU lane */
    FMLP_REC_MEMCPY,  /* cat "gpu_memcpy" */
    FMLP_REC_MEMSET   /* cat "gpu_memset" */
} fmlp_rec_kind;

typedef struct {
    fmlp_rec_kind kind;
    const char *name;       /* copied by the profiler */
    int64_t t0_ns, t1_ns;   /* fmlp_now_ns() clock */
    int device;             /* -1 for a CPU lane */
    int64_t lane;           /* CPU: OS thread id; GPU: stream id */
    /* Kineto's semantics: a runtime call and the GPU activity it started
     * share one correlation, as CUPTI assigns it, and no two calls share
     * one; every lane of a CPU parallel region shares the region's. */
    int64_t correlation;
    /* The op that issued the work (on the call, the activity and the op
     * alike); 0 = the innermost op open on the calling thread (records
     * handed over after the op closed get it from their launch call). */
    int64_t external_id;
    /* A kernel's FLOPs and minimum bytes: the profiler sums them over a
     * correlation's records, so carry them whole on one record (the CPU
     * backend uses the first lane) or split them, never repeat them. */
    int64_t flops, bytes;
    int grid[3], block[3];
    int registers, shared_bytes;
} fmlp_prof_record;

void fmlp_prof_record_add(struct fmlp_profiler *p, const fmlp_prof_record *r);
/* The same for n records at once (a CPU region's lanes): one lock, and one
 * name look-up while consecutive records share a name. */
void fmlp_prof_record_add_n(struct fmlp_profiler *p, const fmlp_prof_record *r, int n);

/* Memory events with running totals (profile_memory). */
void fmlp_prof_memory(struct fmlp_profiler *p, int device, int64_t delta_bytes, int64_t total_bytes);
/* The same with the block's address, which the trace writes as "Addr". */
void fmlp_prof_memory_at(struct fmlp_profiler *p, int device, const void *addr, int64_t delta_bytes,
                         int64_t total_bytes);

#endif
