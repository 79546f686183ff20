/* Why: the CLI and `fmlp bench` report the median time of repeated
 * forwards, repeating until a time budget is spent so small shapes get many
 * samples and large ones finish. On a GPU a forward only queues work, so a
 * sample is a batch of forwards between two device synchronizations (as
 * bench/cuda/bench_cuda.c and PyTorch's own timing scripts measure), on
 * tensors that already live on the device. */
#ifndef FMLP_CLI_TIMING_H
#define FMLP_CLI_TIMING_H

#include <stdbool.h>

#include "fmlp.h"

/* The most samples one measurement keeps (--iters is capped here). */
#define CLI_MAX_ITERS 1000

/* One forward of an MLP in a mode, on the context's device: the argument
 * cli_forward takes. */
typedef struct {
    fmlp_ctx *ctx;
    fmlp_mlp *mlp;
    fmlp_mode mode;
    fmlp_tensor x, y;
} cli_forward_arg;
/* One forward, queued (on a GPU it may still run when this returns). */
fmlp_status cli_forward(void *arg);
/* One forward, finished: what a profiled step runs, so each ProfilerStep
 * holds its own GPU work. */
fmlp_status cli_forward_synced(void *arg);

typedef struct {
    double median_s, min_s; /* per forward */
    int iters;              /* samples */
    int batch;              /* forwards per sample (1 on the CPU) */
} cli_timing;

/* Runs `warmup` forwards untimed, then samples until budget_s has passed
 * (at least 3, at most CLI_MAX_ITERS); fills the median and minimum per
 * forward. iters > 0 fixes the number of timed forwards instead. */
fmlp_status cli_time(cli_forward_arg *a, int warmup, int iters, double budget_s, cli_timing *out);

/* What cli_time_of times: any forward (a tensor-parallel one over several
 * GPUs), and the wait for the forwards it queued. */
typedef struct {
    fmlp_status (*forward)(void *arg);
    fmlp_status (*wait)(void *arg);
    void *arg;
    bool queued; /* forwards return before the device is done: sample batches of them */
} cli_timed;
/* cli_time for a cli_timed. */
fmlp_status cli_time_of(const cli_timed *t, int warmup, int iters, double budget_s, cli_timing *out);

/* "median of 12" or, batched, "median of 12 x 10 forwards between device synchronizations". */
void cli_fmt_samples(const cli_timing *t, char *buf, int len);
/* Formats seconds as "123.4 us" / "12.34 ms" / "1.234 s". */
void cli_fmt_time(double s, char *buf, int len);

#endif
