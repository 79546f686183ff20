/* Why: the entry points of the CLI's subcommands, dispatched by main.c.
 * Each returns the process exit status: 0 ok, 1 failure, 2 usage error. */
#ifndef FMLP_CLI_COMMANDS_H
#define FMLP_CLI_COMMANDS_H

#include <stdbool.h>

int cli_run_main(int argc, char **argv, bool linear);
int cli_bench_main(int argc, char **argv);
int cli_info_main(int argc, char **argv);

#endif
