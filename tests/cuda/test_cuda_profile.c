/* Why: the GPU side of the profiler must read like torch.profiler's: per
 * forward, the tutorial's kernel counts on the device lane (GeGLU eager 5,
 * compiled 4, fused 2), each kernel with its own correlation id, a launch
 * record on the CPU lane with the same id (the ac2g flow pair) that starts
 * before the kernel does, and timestamps on the profiler's clock. The trace
 * is written and read back, so this checks what users open. */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_test.h"
#include "core/clock.h"
#include "profiler/events.h"
#include "profiler/trace_read.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void check_mode(fmlp_ctx *ctx, fmlp_mlp *m, fmlp_mode mode, int want, const fmlp_tensor *x, fmlp_tensor *y)
{
    const int steps = 3;
    fmlp_profiler_options o = fmlp_profiler_options_default();
    o.activities = FMLP_ACTIVITY_CPU | FMLP_ACTIVITY_CUDA;
    fmlp_profiler *p;
    if (!tu_check(fmlp_profiler_create(ctx, &o, &p) == FMLP_OK, "profiler: %s", fmlp_last_error())) return;
    fmlp_mlp_forward(m, mode, x, y); /* warm: plans, cuBLASLt heuristics, workspace */
    fmlp_ctx_synchronize(ctx);
    const int64_t t_begin = fmlp_now_ns();
    /* the profiler turns CUPTI collection on and off through the backend table */
    fmlp_status s = fmlp_profiler_start(p);
    for (int i = 0; i < steps && s == FMLP_OK; i++) s = fmlp_mlp_forward(m, mode, x, y);
    if (s == FMLP_OK) s = fmlp_profiler_stop(p);
    tu_check(s == FMLP_OK, "%s: profiled forwards: %s", fmlp_mode_name(mode), fmlp_last_error());
    const int64_t t_end = fmlp_now_ns();

    char path[512];
    snprintf(path, sizeof path, "%s/cuda_%s.json", tu_tmpdir(), fmlp_mode_name(mode));
    s = fmlp_profiler_export_trace(p, path);
    pe_set set;
    pe_set_init(&set);
    if (tu_check(s == FMLP_OK && pe_read_trace(path, &set) == FMLP_OK, "%s: trace written and read back: %s",
                 fmlp_mode_name(mode), fmlp_last_error())) {
        int64_t *corr = malloc(sizeof(int64_t) * (set.n + 1));
        int n_k = 0, unpaired = 0, early = 0, off_clock = 0;
        const int64_t base = set.base_ns;
        for (size_t i = 0; i < set.n; i++) {
            const pe_event *k = &set.ev[i];
            if (k->kind != PE_KERNEL || k->device < 0) continue;
            corr[n_k++] = k->corr;
            const pe_event *launch = NULL;
            for (size_t j = 0; j < set.n && !launch; j++)
                if (set.ev[j].kind == PE_RUNTIME && set.ev[j].corr == k->corr) launch = &set.ev[j];
            if (!launch)
                unpaired++;
            else if (launch->t0 > k->t0)
                early++;
            /* the trace may store Unix-epoch time (base_ns added) */
            const bool mono = k->t0 >= t_begin && k->t1 <= t_end;
            const bool epoch = k->t0 >= t_begin + base && k->t1 <= t_end + base;
            if (!mono && !epoch) off_clock++;
        }
        qsort(corr, (size_t)n_k, sizeof *corr, cmp_i64);
        int distinct = n_k > 0;
        for (int i = 1; i < n_k; i++) distinct += corr[i] != corr[i - 1];
        tu_check(n_k == want * steps && distinct == n_k,
                 "%-8s %d kernels over %d forwards (want %d each), %d distinct correlation ids", fmlp_mode_name(mode), n_k,
                 steps, want, distinct);
        tu_check(off_clock == 0, "%-8s kernel times fall inside the profiled interval on fmlp's clock (%d outside)",
                 fmlp_mode_name(mode), off_clock);
        tu_check(unpaired == 0 && early == 0, "%-8s every kernel has its launch on the CPU lane (%d unpaired), launched before it ran (%d not)",
                 fmlp_mode_name(mode), unpaired, early);
        for (size_t i = 0; i < set.n; i++)
            if (set.ev[i].kind == PE_KERNEL && set.ev[i].device >= 0 && n_k-- == want * steps)
                printf("  first kernel: %s (grid %d,%d,%d block %d regs %d smem %d)\n", set.ev[i].name, set.ev[i].grid[0],
                       set.ev[i].grid[1], set.ev[i].grid[2], set.ev[i].block[0], set.ev[i].regs, set.ev[i].smem);
        free(corr);
    }
    pe_set_free(&set);
    fmlp_profiler_destroy(p);
}

int main(void)
{
    tu_seed();
    fmlp_ctx *ctx = ct_ctx();
    if (!ctx) return tu_finish();
    const fmlp_dtype dt = FMLP_BF16;
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 768, 3072, 0, 0, FMLP_ACT_GELU_TANH, true, dt};
    fmlp_mlp *m;
    if (!tu_check(fmlp_mlp_create(ctx, &d, 1, &m) == FMLP_OK, "create: %s", fmlp_last_error())) return tu_finish();
    const int64_t rows = 512;
    fmlp_tensor x, y;
    fmlp_tensor_alloc(ctx, dt, rows, 768, &x);
    fmlp_tensor_alloc(ctx, dt, rows, 768, &y);
    uint16_t *hx = malloc(sizeof(uint16_t) * rows * 768);
    tu_fill(dt, hx, rows * 768, -1, 1, NULL);
    ctx->be->copy(ctx, x.data, FMLP_DEVICE_CUDA, hx, FMLP_DEVICE_CPU, sizeof(uint16_t) * rows * 768);
    check_mode(ctx, m, FMLP_MODE_EAGER, 5, &x, &y);
    check_mode(ctx, m, FMLP_MODE_COMPILED, 4, &x, &y);
    check_mode(ctx, m, FMLP_MODE_FUSED, 2, &x, &y);
    check_mode(ctx, m, FMLP_MODE_EAGER, 5, &x, &y); /* collection restarts after a stop */
    free(hx);
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    fmlp_mlp_destroy(m);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
