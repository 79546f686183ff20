/* Why: median-of-repeats timing for the CLI (see cli_timing.h). */
#include "cli_timing.h"

#include <stdio.h>
#include <stdlib.h>

#include "cli_model.h"


fmlp_status cli_forward(void *arg)
{
    cli_forward_arg *a = arg;
    return fmlp_mlp_forward(a->mlp, a->mode, &a->x, &a->y);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

fmlp_status cli_time(cli_forward_fn fn, void *arg, int warmup, int iters, double budget_s, cli_timing *out)
{
    for (int i = 0; i < warmup; i++) {
        fmlp_status s = fn(arg);
        if (s != FMLP_OK) return s;
    }
    static _Thread_local double samples[CLI_MAX_ITERS];
    if (iters > CLI_MAX_ITERS) iters = CLI_MAX_ITERS;
    int n = 0, min_iters = iters > 0 ? iters : 3, max_iters = iters > 0 ? iters : CLI_MAX_ITERS;
    double start = cli_now();
    while (n < max_iters && (n < min_iters || cli_now() - start < budget_s)) {
        double t0 = cli_now();
        fmlp_status s = fn(arg);
        if (s != FMLP_OK) return s;
        samples[n++] = cli_now() - t0;
    }
    qsort(samples, (size_t)n, sizeof *samples, cmp_double);
    out->iters = n;
    out->min_s = samples[0];
    out->median_s = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    return FMLP_OK;
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
