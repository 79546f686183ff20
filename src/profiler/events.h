/* Why: one event model for everything the profiler shows. A recording
 * profiler appends to it, a trace file (fmlp's or torch.profiler's) is read
 * into it, and the table, trace writer, analyses and SVG renderer all work
 * from it, so `fmlp trace summarize` prints exactly what a live run prints.
 * A read trace holds millions of events, so an event is 48 bytes: its lane
 * (pid, tid) and what only some events carry (FLOPs, launch shape, memory
 * numbers) are stored once per distinct value in the set and referred to
 * by index. */
#ifndef FMLP_PROFILER_EVENTS_H
#define FMLP_PROFILER_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* CPU: process and OS thread; device: device and stream. */
typedef struct {
    int64_t pid, tid;
} pe_lane;

/* What only some events carry. Values repeat (the same launch shape and
 * FLOPs every step), so each distinct one is stored once; build one from
 * pe_more_of() or zeroes, never with bytes left unset. */
typedef struct {
    int64_t flops, bytes;
    const char *shapes; /* interned, or NULL */
    union {
        struct { /* kernels */
            int32_t grid[3], block[3];
            int32_t regs, smem;
        };
        struct { /* PE_MEMORY */
            int64_t mem_addr, mem_bytes, mem_total;
        };
    };
} pe_more;

/* Sums of durations and counts saturate rather than overflow on damaged
 * traces. */
static inline int64_t pe_add_sat(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

static inline pe_more pe_more_none(void)
{
    pe_more m;
    memset(&m, 0, sizeof m);
    return m;
}

/* Devices are numbered 0..PE_MAX_DEVICE (-1: CPU). */
#define PE_MAX_DEVICE 127
static inline int pe_device_of(int64_t d) { return d < 0 ? -1 : d > PE_MAX_DEVICE ? PE_MAX_DEVICE : (int)d; }
#define PE_MAX_LANES ((size_t)1 << 24)
#define PE_MAX_MORE (((size_t)1 << 28) - 1)

typedef struct {
    const char *name;   /* interned in the set */
    int64_t t0, t1;     /* ns on the trace clock; t1 < 0 while still open */
    int64_t ext_id;     /* ops/ranges: their own External id; others: the launching op's */
    int64_t corr;       /* correlation id, 0 when none */
    uint32_t lane : 24; /* index into the set's lanes */
    signed int device : 8; /* -1 for CPU lanes */
    uint32_t more : 28; /* 0, or 1 + index into the set's pe_more values */
    uint32_t kind : 4;  /* pe_kind */
} pe_event;

typedef struct {
    char **slot;
    size_t cap, n;
    size_t bytes; /* stored, terminators included */
    /* Callers hand the same name buffer again and again: remembered by
     * address (and checked by content) to skip hashing on the hot path. */
    struct {
        const char *src, *interned;
    } recent[64];
} pe_strings;

/* Values stored once each, found again through an open-addressing index
 * (slot = 1 + position in v, 0 empty). */
typedef struct {
    pe_lane *v;
    size_t n, cap;
    uint32_t *slot;
    size_t slots;
    uint32_t last; /* 1 + the lane asked for last, 0 none */
} pe_lanes;

typedef struct {
    pe_more *v;
    size_t n, cap;
    uint32_t *slot;
    size_t slots;
} pe_mores;

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
    pe_lanes lanes;
    pe_mores more;
    int64_t pid;          /* the CPU process of the run */
    int64_t main_tid;     /* the thread that called start/step */
    int64_t base_ns;      /* add to t (ns) for Unix-epoch ns */
    const char *origin;   /* "fmlp" or "torch.profiler" (interned) */
    bool oom;             /* an append failed: the set is incomplete */
    int dist_rank, dist_world;  /* distributedInfo; world 0: none */
    const char *dist_backend;   /* interned, or NULL */
    bool have_device;        /* the backend described its device: */
    fmlp_device_props device; /* Kineto's deviceProperties entry */
    pe_ceilings ceil;
} pe_set;

void pe_set_init(pe_set *s);
void pe_set_free(pe_set *s);
/* Empties the set but keeps its event storage, so the next window writes
 * into memory already touched. */
void pe_set_reset(pe_set *s);
/* Bytes the set holds (events, strings, lanes, values). */
size_t pe_set_bytes(const pe_set *s);

/* Appends a zeroed event of `kind` named `name` (NULL: the caller sets an
 * interned name itself) on lane (pid, tid); NULL when out of memory. */
pe_event *pe_add(pe_set *s, pe_kind kind, const char *name, int64_t pid, int64_t tid);
/* Moves e to lane (pid, tid); false when out of memory. */
bool pe_set_lane(pe_set *s, pe_event *e, int64_t pid, int64_t tid);
/* One stored copy per distinct string; NULL for NULL or out of memory.
 * pe_intern_n takes the first len bytes (up to a NUL). */
const char *pe_intern(pe_set *s, const char *str);
const char *pe_intern_n(pe_set *s, const char *str, size_t len);

static inline const pe_lane *pe_lane_of(const pe_set *s, const pe_event *e) { return &s->lanes.v[e->lane]; }
/* The event's values; all zero when it has none. */
const pe_more *pe_more_of(const pe_set *s, const pe_event *e);
/* Gives e these values (stored once per distinct value); false when out of
 * memory. */
bool pe_set_more(pe_set *s, pe_event *e, const pe_more *m);

static inline bool pe_is_device(const pe_event *e)
{
    return e->device >= 0 && (e->kind == PE_KERNEL || e->kind == PE_MEMCPY || e->kind == PE_MEMSET);
}
/* Everything but memory instants. */
static inline bool pe_is_span(const pe_event *e) { return e->kind != PE_MEMORY; }
const char *pe_kind_cat(pe_kind k); /* Kineto's cat for the kind */

#endif
