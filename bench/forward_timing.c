/* Why: the Python package's per-call cost is measured against the C API's
 * own forward on the same shape, in the same way (each call timed alone,
 * best and median of many). bench/python_overhead.py runs this program for
 * the C side; it prints one line of key=value figures.
 *
 * With --copies N the forwards rotate through N MLPs of the same shape
 * (different weights), so that with N copies larger than the last-level
 * cache each forward streams its weights from memory: the small-batch
 * streaming rate, weight bytes over time, is printed beside the times.
 *
 * CMake builds it as build/bench/forward_timing:
 *   forward_timing [--block gated|linear] [--dim N] [--hidden N] [--act NAME]
 *                  [--dtype f32|bf16] [--mode NAME] [--rows N] [--iters N] [--threads N]
 *                  [--copies N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmlp.h"

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

#define MAX_COPIES 64

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int usage(const char *bad)
{
    fprintf(stderr, "forward_timing: bad or missing value for %s\n", bad);
    return 2;
}

int main(int argc, char **argv)
{
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 768, 3072, 0, 0, FMLP_ACT_GELU_TANH, false, FMLP_F32};
    fmlp_mode mode = FMLP_MODE_AUTO;
    long rows = 1, iters = 2000, copies = 1;
    fmlp_ctx_options co = fmlp_ctx_options_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage(a);
        i++;
        if (strcmp(a, "--block") == 0) {
            if (strcmp(v, "gated") == 0) {
                d.block = FMLP_BLOCK_GATED;
            } else if (strcmp(v, "linear") == 0) {
                d.block = FMLP_BLOCK_STACK;
                d.layers = 1;
                d.act = FMLP_ACT_NONE;
            } else {
                return usage(a);
            }
        } else if (strcmp(a, "--dim") == 0) {
            d.dim = atol(v);
        } else if (strcmp(a, "--hidden") == 0) {
            d.hidden = atol(v);
        } else if (strcmp(a, "--act") == 0) {
            if (!fmlp_act_parse(v, &d.act)) return usage(a);
        } else if (strcmp(a, "--dtype") == 0) {
            if (!fmlp_dtype_parse(v, &d.dtype)) return usage(a);
        } else if (strcmp(a, "--mode") == 0) {
            if (!fmlp_mode_parse(v, &mode)) return usage(a);
        } else if (strcmp(a, "--rows") == 0) {
            rows = atol(v);
        } else if (strcmp(a, "--iters") == 0) {
            iters = atol(v);
        } else if (strcmp(a, "--threads") == 0) {
            co.threads = atoi(v);
        } else if (strcmp(a, "--copies") == 0) {
            copies = atol(v);
        } else {
            return usage(a);
        }
    }
    if (d.block == FMLP_BLOCK_STACK) d.out_dim = d.hidden;
    if (rows < 1 || iters < 1) return usage("--rows/--iters");
    if (copies < 1 || copies > MAX_COPIES) return usage("--copies (1..64)");
    fmlp_ctx *ctx = NULL;
    fmlp_mlp *ms[MAX_COPIES] = {NULL};
    fmlp_tensor x, y;
    fmlp_status s = fmlp_ctx_create(&co, &ctx);
    for (long c = 0; c < copies && s == FMLP_OK; c++) s = fmlp_mlp_create(ctx, &d, 1 + (uint64_t)c, &ms[c]);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, d.dtype, rows, d.dim, &x);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, d.dtype, rows, fmlp_mlp_out_dim(ms[0]), &y);
    if (s != FMLP_OK) {
        fprintf(stderr, "forward_timing: %s\n", fmlp_last_error());
        return 1;
    }
    float *xf = malloc((size_t)(rows * d.dim) * sizeof *xf);
    for (long i = 0; i < rows * d.dim; i++) xf[i] = (float)((i * 7919 % 2001) - 1000) / 1000.0f;
    fmlp_convert_buffer(d.dtype, x.data, FMLP_F32, xf, rows * d.dim);
    free(xf);
    double *t = malloc((size_t)iters * sizeof *t);
    /* every copy's weights exist and are packed before timing */
    for (long i = 0; i < copies; i++)
        if (fmlp_mlp_forward(ms[i], mode, &x, &y) != FMLP_OK) {
            fprintf(stderr, "forward_timing: %s\n", fmlp_last_error());
            return 1;
        }
    for (long i = 0; i < iters + 10; i++) {
        double t0 = now_us();
        if (fmlp_mlp_forward(ms[i % copies], mode, &x, &y) != FMLP_OK) {
            fprintf(stderr, "forward_timing: %s\n", fmlp_last_error());
            return 1;
        }
        if (i >= 10) t[i - 10] = now_us() - t0;
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    fmlp_plan_info plan;
    double wbytes = 0;
    if (fmlp_mlp_plan(ms[0], mode, rows, &plan) == FMLP_OK)
        for (int k = 0; k < plan.n_kernels; k++)
            if (plan.kernels[k].k) wbytes += (double)plan.kernels[k].n * (double)plan.kernels[k].k *
                                              (strcmp(plan.kernels[k].op, "linear+glu") == 0 ? 2 : 1);
    wbytes *= (double)fmlp_dtype_size(d.dtype);
    printf("best_us=%.3f median_us=%.3f iters=%ld threads=%d dtype=%s mode=%s copies=%ld weight_mb=%.2f "
           "weights_gbps_median=%.2f weights_gbps_best=%.2f\n",
           t[0], t[iters / 2], iters, fmlp_ctx_threads(ctx), fmlp_dtype_name(d.dtype), fmlp_mode_name(mode), copies,
           wbytes / 1e6, wbytes / t[iters / 2] / 1e3, wbytes / t[0] / 1e3);
    free(t);
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    for (long c = 0; c < copies; c++) fmlp_mlp_destroy(ms[c]);
    fmlp_ctx_destroy(ctx);
    return 0;
}
