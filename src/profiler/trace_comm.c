/* Why: in a tensor-parallel step the question is how much of the
 * all-reduce the computation hid. A trace answers it from its GPU kernels
 * alone: the collectives (NCCL's kernels, whose names start with "nccl")
 * against everything else, each as the union of its intervals over all
 * device lanes, and the time both unions cover at once. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "profiler/trace_handle.h"

typedef struct {
    int64_t t0, t1;
} span;

static int by_start(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* Sorts and merges v in place; returns the merged count. */
static size_t merge(span *v, size_t n)
{
    if (!n) return 0;
    qsort(v, n, sizeof *v, by_start);
    size_t m = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i].t0 <= v[m].t1) {
            if (v[i].t1 > v[m].t1) v[m].t1 = v[i].t1;
        } else {
            v[++m] = v[i];
        }
    }
    return m + 1;
}

static int64_t covered(const span *v, size_t n)
{
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) sum = pe_add_sat(sum, v[i].t1 - v[i].t0);
    return sum;
}

/* The time two merged lists cover at once. */
static int64_t both(const span *a, size_t na, const span *b, size_t nb)
{
    int64_t sum = 0;
    for (size_t i = 0, j = 0; i < na && j < nb;) {
        const int64_t lo = a[i].t0 > b[j].t0 ? a[i].t0 : b[j].t0, hi = a[i].t1 < b[j].t1 ? a[i].t1 : b[j].t1;
        if (hi > lo) sum = pe_add_sat(sum, hi - lo);
        if (a[i].t1 < b[j].t1)
            i++;
        else
            j++;
    }
    return sum;
}

static bool is_collective(const char *name) { return name && strncmp(name, "nccl", 4) == 0; }

fmlp_status fmlp_trace_comm_info(fmlp_trace *t, int i, fmlp_trace_comm *out)
{
    if (!t || !out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_comm_info: trace and out must not be NULL");
    memset(out, 0, sizeof *out);
    if (i < -1 || i >= t->n_steps)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "fmlp_trace_comm_info: step %d is out of range; %s has %d steps (0..%d, or -1 for all)", i,
                         t->path, t->n_steps, t->n_steps - 1);
    int64_t w0 = INT64_MIN, w1 = INT64_MAX;
    if (i >= 0) {
        const pe_analysis *a = trace_analysis(t, "fmlp_trace_comm_info");
        if (!a) return FMLP_ERR_INVALID_ARGUMENT;
        w0 = a->steps[i].t0;
        w1 = a->steps[i].t1;
    }
    size_t n = 0;
    for (size_t k = 0; k < t->s.n; k++) n += t->s.ev[k].kind == PE_KERNEL && pe_is_device(&t->s.ev[k]);
    span *comm = fmlp_malloc((n ? n : 1) * sizeof *comm), *work = fmlp_malloc((n ? n : 1) * sizeof *work);
    if (!comm || !work) {
        free(comm);
        free(work);
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory splitting the kernels of %s", t->path);
    }
    size_t nc = 0, nw = 0;
    for (size_t k = 0; k < t->s.n; k++) {
        const pe_event *e = &t->s.ev[k];
        if (e->kind != PE_KERNEL || !pe_is_device(e) || e->t1 < e->t0) continue;
        const int64_t lo = e->t0 > w0 ? e->t0 : w0, hi = e->t1 < w1 ? e->t1 : w1;
        if (hi <= lo) continue;
        if (is_collective(e->name)) {
            comm[nc++] = (span){lo, hi};
            out->comm_kernels++;
        } else {
            work[nw++] = (span){lo, hi};
            out->compute_kernels++;
        }
    }
    nc = merge(comm, nc);
    nw = merge(work, nw);
    out->comm_us = (double)covered(comm, nc) / 1e3;
    out->compute_us = (double)covered(work, nw) / 1e3;
    out->overlap_us = (double)both(comm, nc, work, nw) / 1e3;
    free(comm);
    free(work);
    return FMLP_OK;
}
