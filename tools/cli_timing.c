/* Why: median-of-repeats timing for the CLI (see cli_timing.h). */
#include "cli_timing.h"

#include <stdio.h>
#include <stdlib.h>

#include "cli_model.h"

/* A GPU sample lasts at least this long, so one synchronization's cost
 * (some microseconds) stays out of the per-forward time. */
#define GPU_SAMPLE_S 2e-3
#define MAX_BATCH 200

fmlp_status cli_forward(void *arg)
{
    cli_forward_arg *a = arg;
    return fmlp_mlp_forward(a->mlp, a->mode, &a->x, &a->y);
}

fmlp_status cli_forward_synced(void *arg)
{
    cli_forward_arg *a = arg;
    fmlp_status s = cli_forward(a);
    return s == FMLP_OK ? fmlp_ctx_synchronize(a->ctx) : s;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Seconds per forward of `batch` forwards and a synchronization. */
static fmlp_status sample(const cli_timed *t, int batch, double *s_per)
{
    double t0 = cli_now();
    fmlp_status s = FMLP_OK;
    for (int i = 0; i < batch && s == FMLP_OK; i++) s = t->forward(t->arg);
    if (s == FMLP_OK) s = t->wait(t->arg);
    *s_per = (cli_now() - t0) / batch;
    return s;
}

fmlp_status cli_time_of(const cli_timed *t, int warmup, int iters, double budget_s, cli_timing *out)
{
    for (int i = 0; i < warmup; i++) {
        fmlp_status s = t->forward(t->arg);
        if (s == FMLP_OK) s = t->wait(t->arg);
        if (s != FMLP_OK) return s;
    }
    int batch = 1;
    if (t->queued) {
        double one;
        fmlp_status s = sample(t, 1, &one);
        if (s != FMLP_OK) return s;
        batch = one > 0 ? (int)(GPU_SAMPLE_S / one) + 1 : MAX_BATCH;
        if (batch > MAX_BATCH) batch = MAX_BATCH;
        if (iters > 0 && batch > iters) batch = iters;
    }
    static _Thread_local double samples[CLI_MAX_ITERS];
    int want = iters > 0 ? (iters + batch - 1) / batch : 0;
    if (want > CLI_MAX_ITERS) want = CLI_MAX_ITERS;
    int n = 0, min_n = want > 0 ? want : 3, max_n = want > 0 ? want : CLI_MAX_ITERS;
    double start = cli_now();
    while (n < max_n && (n < min_n || cli_now() - start < budget_s)) {
        fmlp_status s = sample(t, batch, &samples[n]);
        if (s != FMLP_OK) return s;
        n++;
    }
    qsort(samples, (size_t)n, sizeof *samples, cmp_double);
    out->iters = n;
    out->batch = batch;
    out->min_s = samples[0];
    out->median_s = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    return FMLP_OK;
}

static fmlp_status wait_ctx(void *arg) { return fmlp_ctx_synchronize(((cli_forward_arg *)arg)->ctx); }

fmlp_status cli_time(cli_forward_arg *a, int warmup, int iters, double budget_s, cli_timing *out)
{
    const cli_timed t = {cli_forward, wait_ctx, a, fmlp_ctx_device(a->ctx) != FMLP_DEVICE_CPU};
    return cli_time_of(&t, warmup, iters, budget_s, out);
}

void cli_fmt_samples(const cli_timing *t, char *buf, int len)
{
    if (t->batch > 1)
        snprintf(buf, (size_t)len, "median of %d x %d forwards between device synchronizations", t->iters, t->batch);
    else
        snprintf(buf, (size_t)len, "median of %d", t->iters);
}

void cli_fmt_time(double s, char *buf, int len)
{
    if (s < 1e-3)
        snprintf(buf, (size_t)len, "%.1f us", s * 1e6);
    else if (s < 1.0)
        snprintf(buf, (size_t)len, "%.2f ms", s * 1e3);
    else
        snprintf(buf, (size_t)len, "%.3f s", s);
}
