/* Why: `fmlp mlp`, `fmlp linear` and `fmlp bench` describe a model the same
 * way (shape, activation, dtype, weights, device, threads); one parser and
 * one builder serve all three. */
#ifndef FMLP_CLI_MODEL_H
#define FMLP_CLI_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli_args.h"
#include "fmlp.h"

typedef struct {
    const char *cmd;
    int64_t batch, seq;
    fmlp_mlp_desc desc;
    const char *weights, *prefix;
    int threads;
    uint64_t seed;
    fmlp_device device;
    const char *cpu_path;
    bool graph;
    bool host_io; /* --host-io: forwards on pinned host tensors, copies timed in */
} cli_model_opts;

/* Defaults of `fmlp mlp`: the tutorial's GeGLU MLP, 64 × 128 tokens. */
void cli_model_defaults_mlp(cli_model_opts *o, const char *cmd);
/* Defaults of `fmlp linear`: nn.Linear(32, 64) on 1024 rows, f32. */
void cli_model_defaults_linear(cli_model_opts *o, const char *cmd);

/* Adds the model flags to a subcommand's options; `linear` names the input
 * width --in-dim and leaves out the hidden layers' flags. */
void cli_model_options(cli_options *l, bool linear);
/* Takes `a` if it is a model flag: 1 taken, 0 not ours, -1 bad value
 * (message printed). */
int cli_model_take(cli_model_opts *o, const cli_arg *a);
void cli_model_usage(FILE *f, bool linear);

/* Whether the model flags fit together (prints the usage error when not). */
bool cli_model_check(const cli_model_opts *o);
/* Creates the context and MLP in `dtype`; with --weights, shapes come from
 * the file. Prints the error and returns non-OK on failure. */
fmlp_status cli_model_build(const cli_model_opts *o, fmlp_dtype dtype, fmlp_ctx **ctx, fmlp_mlp **mlp);

/* "64x128x768" or "1024x32" for file names. */
void cli_model_shape_name(const cli_model_opts *o, char *buf, size_t len);

/* Fills a dense host tensor with uniform(-1, 1) values, never 0. */
fmlp_status cli_fill_random(const fmlp_tensor *t, uint64_t seed);

/* Seconds of a monotonic clock. */
double cli_now(void);

#endif
