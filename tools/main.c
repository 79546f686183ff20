/* Why: the `fmlp` command: one binary whose subcommands mirror the
 * tutorial's scripts (linear, mlp), sweep them (bench), describe the machine
 * (info) and read traces (trace). */
#include <stdio.h>
#include <string.h>

#include "cli_args.h"
#include "cli_commands.h"
#include "cli_trace.h"
#include "fmlp.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: fmlp <command> [options]   (fmlp <command> --help for its options)\n\n"
               "commands:\n"
               "  mlp      run an MLP block (default: the tutorial's GeGLU, 64x128 tokens, bf16) in each mode,\n"
               "           print the plans, time, profile, and compare the modes\n"
               "  linear   run y = x @ W.T + b and profile it\n"
               "  bench    sweep rows x dtypes x modes; table, CSV or JSON\n"
               "  info     CPU features, code paths, threads, backends; --ceilings for measured peaks\n"
               "  trace    render | summarize | diff traces (fmlp's or torch.profiler's)\n"
               "  version  print the version\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE_ERROR;
    }
    const char *c = argv[1];
    if (cli_is_help(c) || strcmp(c, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(c, "mlp") == 0) return cli_run_main(argc - 1, argv + 1, false);
    if (strcmp(c, "linear") == 0) return cli_run_main(argc - 1, argv + 1, true);
    if (strcmp(c, "bench") == 0) return cli_bench_main(argc - 1, argv + 1);
    if (strcmp(c, "info") == 0) return cli_info_main(argc - 1, argv + 1);
    if (strcmp(c, "trace") == 0) return cli_trace_main(argc - 1, argv + 1);
    if (strcmp(c, "version") == 0 || strcmp(c, "--version") == 0) {
        printf("fmlp %s\n", FMLP_VERSION);
        return 0;
    }
    fprintf(stderr, "fmlp: unknown command \"%s\"\n", c);
    usage(stderr);
    return CLI_USAGE_ERROR;
}
