/* Why: `fmlp mlp --tp N` runs the same command over N GPUs (cli_tp.c); it
 * shares the command's options, its input and output files and its
 * closing comparison of the modes with the one-device run (cli_run.c). */
#ifndef FMLP_CLI_RUN_H
#define FMLP_CLI_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "cli_io.h"
#include "cli_model.h"
#include "cli_profile.h"
#include "fmlp.h"

/* Everything `mlp` and `linear` take from the command line. */
typedef struct {
    const char *cmd;
    bool linear;
    cli_model_opts model;
    cli_prof_opts prof;
    fmlp_mode modes[4];
    int n_modes;
    fmlp_dtype dtype;
    const char *input, *output;
    int x_rank;         /* x as the user sees it: (batch, seq, dim), (rows, dim) or (dim) */
    int64_t x_shape[3];
    bool explain;
    int iters;
    double budget;
    int tp;             /* --tp N: ranks, one GPU each (0: no tensor parallelism) */
} cli_run_opts;

typedef struct {
    fmlp_mode mode;
    double seconds;
    double flops_per_s;
} cli_mode_result;

/* The table of the modes' times and their speedup over eager. */
void cli_run_print_summary(const cli_mode_result *r, int n);
/* Reads x from --input into the host tensor `x` (its shape was checked
 * when the options were read); prints its own errors. */
fmlp_status cli_run_load_input(const char *cmd, const char *path, const fmlp_tensor *x);
/* --output: y from the device (timed) unless forwards wrote it to the
 * host, written in x's shape; prints its own errors, returns the exit
 * status. */
int cli_run_save_output(const cli_run_opts *r, cli_io *io, fmlp_mode last);

/* The most ranks --tp takes: the GPUs one process drives (fmlp_tp_init_all). */
#define CLI_TP_MAX_RANKS 64

/* cli_tp.c, `--tp N`. Whether the flags fit tensor parallelism (prints the
 * usage error when not). */
bool cli_tp_check_flags(const cli_run_opts *r);
/* Whether this build and machine can run it: NCCL built in, N GPUs
 * visible (prints what is missing and how to get it when not). */
bool cli_tp_check_machine(const cli_run_opts *r);
/* The run: `full` (a host MLP) sharded over N GPUs, x from --input or
 * drawn at random on every rank, then for each mode every rank's plan
 * and, unless --explain, the timed forward over all ranks, a profile per
 * rank, the comparison of the modes and --output from rank 0. Returns the
 * exit status. */
int cli_tp_run(const cli_run_opts *r, const fmlp_mlp *full, const char *shape);

#endif
