/* Why: one event model for everything the profiler shows. A recording
 * profiler appends to it, a trace file (fmlp's or torch.profiler's) is read
 * into it, and the table, trace writer, analyses and SVG renderer all work
 * from it, so `fmlp trace summarize` prints exactly what a live run prints. */
#ifndef FMLP_PROFILER_EVENTS_H
#define FMLP_PROFILER_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/device_props.h"
#include "fmlp.h"

typedef enum {
    PE_CPU_OP,  /* cat "cpu_op" */
    PE_USER,    /* cat "user_annotation": a user range */
    PE_STEP,    /* ProfilerStep#N (written as user_annotation, like Kineto) */
    PE_KERNEL,  /* cat "kernel"; device -1 for a CPU parallel region's lane */
    PE_RUNTIME, /* cat "cuda_runtime" */
    PE_MEMCPY,  /* cat "gpu_memcpy" */
    PE_MEMSET,  /* cat "gpu_memset" */
    PE_MEMORY   /* ph "i" [memory] instant */
} pe_kind;

typedef struct {
    pe_kind kind;
    const char *name;   /* interned in the set */
    const char *shapes; /* interned, or NULL */
    int64_t t0, t1;     /* ns on the trace clock; t1 < 0 while still open */
    int64_t pid, tid;   /* CPU: process and OS thread; device: device and stream */
    int device;         /* -1 for CPU lanes */
    int64_t ext_id;     /* ops/ranges: their own External id; others: the launching op's */
    int64_t corr;       /* correlation id, 0 when none */
    int64_t flops, bytes;
    union { /* the event is recorded per kernel lane: kept small */
        struct { /* kernels */
            int grid[3], block[3];
            int regs, smem;
        };
        struct { /* PE_MEMORY */
            int64_t mem_addr, mem_bytes, mem_total;
        };
    };
} pe_event;

typedef struct {
    char **slot;
    size_t cap, n;
    /* Callers hand the same name buffer again and again: remembered by
     * address (and checked by content) to skip hashing on the hot path. */
    struct {
        const char *src, *interned;
    } recent[64];
} pe_strings;

/* The limits the verdicts compare against: measured, or (GPU) the
 * device's peaks from its properties. A figure of 0 is unknown. */
typedef struct {
    bool have;
    double gemm_gflops_f32, gemm_gflops_bf16, mem_gbps;
    double gpu_gemm_tflops_bf16, gpu_mem_gbps, gpu_launch_us;
    bool gpu_from_device;
} pe_ceilings;

typedef struct {
    pe_event *ev;
    size_t n, cap;
    pe_strings strings;
    int64_t pid;          /* the CPU process of the run */
    int64_t main_tid;     /* the thread that called start/step */
    int64_t base_ns;      /* add to t (ns) for Unix-epoch ns */
    const char *origin;   /* "fmlp" or "torch.profiler" (interned) */
    bool oom;             /* an append failed: the set is incomplete */
    bool have_device;        /* the backend described its device: */
    fmlp_device_props device; /* Kineto's deviceProperties entry */
    pe_ceilings ceil;
} pe_set;

void pe_set_init(pe_set *s);
void pe_set_free(pe_set *s);
/* Empties the set but keeps its event storage, so the next window writes
 * into memory already touched. */
void pe_set_reset(pe_set *s);
/* Appends a zeroed event of `kind` named `name` (NULL: the caller sets an
 * interned name itself); NULL when out of memory. */
pe_event *pe_add(pe_set *s, pe_kind kind, const char *name);
/* One stored copy per distinct string; NULL for NULL or out of memory. */
const char *pe_intern(pe_set *s, const char *str);

bool pe_is_device(const pe_event *e);
bool pe_is_span(const pe_event *e); /* everything but memory instants */
const char *pe_kind_cat(pe_kind k); /* Kineto's cat for the kind */

#endif
