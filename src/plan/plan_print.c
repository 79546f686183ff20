/* Why: `--explain` and every CLI run print the plan before running it, so
 * the reader makes a guess (how many kernels, which is heaviest) before the
 * profiler shows what happened. */
#include <stdio.h>

#include "fmlp.h"

void fmlp_plan_print(const fmlp_plan_info *p, FILE *f)
{
    if (!p || !f) return;
    fprintf(f, "plan: %s", fmlp_mode_name(p->mode));
    if (p->mode != p->resolved) fprintf(f, " -> %s", fmlp_mode_name(p->resolved));
    fprintf(f, " (%s, %s, %lld rows%s): %d kernel%s\n", fmlp_dtype_name(p->dtype), fmlp_device_name(p->device),
            (long long)p->rows, p->graph ? ", CUDA graph" : "", p->n_kernels, p->n_kernels == 1 ? "" : "s");
    if (p->why[0]) fprintf(f, "  why: %s\n", p->why);
    fprintf(f, "  %2s  %-40s %-12s %-22s %12s %12s\n", "#", "kernel", "op", "m x n x k", "work", "min bytes");
    char fl[32], by[32];
    for (int i = 0; i < p->n_kernels; i++) {
        const fmlp_kernel_info *k = &p->kernels[i];
        char shape[48];
        if (k->k)
            snprintf(shape, sizeof shape, "%lld x %lld x %lld", (long long)k->m, (long long)k->n, (long long)k->k);
        else
            snprintf(shape, sizeof shape, "%lld x %lld", (long long)k->m, (long long)k->n);
        fprintf(f, "  %2d  %-40s %-12s %-22s %12s %12s\n", i + 1, k->name, k->op, shape,
                fmlp_si_format((double)k->flops, "FLOP", fl, sizeof fl), fmlp_si_format((double)k->bytes, "B", by, sizeof by));
    }
    fprintf(f, "  total: %s, %s moved at least\n", fmlp_si_format((double)p->flops, "FLOP", fl, sizeof fl),
            fmlp_si_format((double)p->bytes, "B", by, sizeof by));
}

void fmlp_tp_plan_print(const fmlp_tp_plan_info *p, FILE *f)
{
    if (!p || !f) return;
    fprintf(f, "rank %d of %d: %lld hidden features\n", p->rank, p->world, (long long)p->hidden);
    fmlp_plan_print(&p->plan, f);
    char by[32];
    fmlp_si_format((double)p->reduce_bytes, "B", by, sizeof by);
    if (p->chunks == 1)
        fprintf(f, "  then all-reduce y (%s, NCCL, sum over %d ranks) on the forward's stream (%s)\n", by, p->world,
                p->why);
    else if (p->overlapped)
        fprintf(f, "  down in %d row chunks of up to %lld rows, all-reduce of each (%s in all, NCCL, sum over %d ranks) "
                   "overlapped on stream 2 (%s)\n",
                p->chunks, (long long)p->chunk_rows, by, p->world, p->why);
    else
        fprintf(f, "  then all-reduce y (%s, NCCL, sum over %d ranks) in %d row chunks of up to %lld rows on stream 2 "
                   "(%s)\n",
                by, p->world, p->chunks, (long long)p->chunk_rows, p->why);
}
