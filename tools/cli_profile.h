/* Why: `fmlp linear` and `fmlp mlp` profile by default, as the tutorial's
 * scripts do; the profiling flags, the schedule and the files written per
 * mode live here so the commands themselves stay about the model. */
#ifndef FMLP_CLI_PROFILE_H
#define FMLP_CLI_PROFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "cli_args.h"
#include "fmlp.h"

typedef struct {
    bool enabled;            /* --no-profile turns off */
    int wait, warmup, active, repeat; /* --wait/--warmup/--active/--repeat */
    bool cold;               /* --cold: no warm-up, first-call costs shown */
    const char *trace_dir;   /* --trace-dir DIR; NULL = no files */
    const char *sort_by;     /* --sort-by */
    int row_limit;           /* --row-limit */
    bool record_shapes, profile_memory; /* --record-shapes, --profile-memory */
} cli_prof_opts;

void cli_prof_defaults(cli_prof_opts *o);
/* Adds the profiling flags to a subcommand's options. */
void cli_prof_options(cli_options *l);
/* Takes `a` if it is a profiling flag: 1 taken, 0 not a profiling flag, -1
 * on a bad value (message already printed to stderr). */
int cli_prof_take(cli_prof_opts *o, const cli_arg *a);
void cli_prof_usage(FILE *f);
/* Whether the schedule's steps (cycle x --repeat) fit the profiler's step
 * count; prints "fmlp CMD: ..." when they do not. */
bool cli_prof_check(const cli_prof_opts *o, const char *cmd);

/* Makes --trace-dir (one level) unless it is a directory already; prints
 * "fmlp CMD: cannot create --trace-dir DIR: reason" when it cannot. */
bool cli_prof_make_dir(const cli_prof_opts *o, const char *cmd);

/* Profiles `forward(arg)` for one mode under the options' schedule and prints
 * the table (and analyses) to `out`; with a trace dir, writes
 * DIR/<run_name>.json and DIR/<run_name>.txt. run_name is
 * "<shape>_<dtype>_<cold|warm>_<mode>". Returns the exit status: 1 after
 * printing "fmlp CMD: ..." saying whether a forward, the profiler or
 * writing its files failed. */
int cli_prof_run(fmlp_ctx *ctx, const cli_prof_opts *o, const char *cmd, const char *run_name,
                 fmlp_status (*forward)(void *arg), void *arg, FILE *out);
/* The same for the `world` ranks of a tensor-parallel run, ctxs[r] rank
 * r's context: one profiler per rank (its rank and world size in the
 * trace's distributedInfo), stepped together after each forward, a table
 * per rank, and with a trace dir DIR/<run_name>/rank<R>.json and .txt.
 * World 0 is cli_prof_run's one context. */
int cli_prof_run_ranks(fmlp_ctx *const *ctxs, int world, const cli_prof_opts *o, const char *cmd, const char *run_name,
                       fmlp_status (*forward)(void *arg), void *arg, FILE *out);

#endif
