/* Why: the CLI and `fmlp bench` report the median time of repeated
 * forwards, repeating until a time budget is spent so small shapes get many
 * samples and large ones finish. */
#ifndef FMLP_CLI_TIMING_H
#define FMLP_CLI_TIMING_H

#include "fmlp.h"

/* The most timed forwards one measurement keeps (--iters is capped here). */
#define CLI_MAX_ITERS 1000

typedef fmlp_status (*cli_forward_fn)(void *arg);

/* One forward of an MLP in a mode: the argument cli_forward takes. */
typedef struct {
    fmlp_mlp *mlp;
    fmlp_mode mode;
    fmlp_tensor x, y;
} cli_forward_arg;
fmlp_status cli_forward(void *arg);

typedef struct {
    double median_s, min_s;
    int iters;
} cli_timing;

/* Runs fn `warmup` times untimed, then at least min_iters and until
 * budget_s has passed (at most max_iters); fills the median. iters > 0
 * fixes the count. */
fmlp_status cli_time(cli_forward_fn fn, void *arg, int warmup, int iters, double budget_s, cli_timing *out);

/* Formats seconds as "123.4 us" / "12.34 ms" / "1.234 s". */
void cli_fmt_time(double s, char *buf, int len);

#endif
