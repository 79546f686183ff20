/* Why: `fmlp info` says what this build can run here, and with
 * --ceilings measures (once, then cached) the peaks the profiler's verdicts
 * compare against. */
#include <stdio.h>

#include "cli_args.h"
#include "cli_commands.h"
#include "fmlp.h"

enum { I_CEILINGS = CLI_OPT_COMMAND, I_REMEASURE };

static const struct option info_options[] = {
    {"help", no_argument, NULL, 'h'},
    {"ceilings", no_argument, NULL, I_CEILINGS},
    {"remeasure", no_argument, NULL, I_REMEASURE},
    {0},
};

int cli_info_main(int argc, char **argv)
{
    bool ceilings = false, remeasure = false;
    cli_options l = {0};
    cli_options_add(&l, info_options);
    cli_parser p;
    cli_parser_init(&p, argc, argv, &l, "h");
    cli_arg a;
    while (cli_next(&p, &a)) {
        if (a.val == 'h') {
            printf("usage: fmlp info [--ceilings [--remeasure]]\n"
                   "Prints the CPU, its features, the code paths available, threads and backends.\n"
                   "  --ceilings   also print this machine's GEMM peak and memory bandwidth (measured once, then cached)\n"
                   "  --remeasure  measure the ceilings again\n");
            return 0;
        }
        if (a.val == I_CEILINGS) {
            ceilings = true;
        } else if (a.val == I_REMEASURE) {
            ceilings = remeasure = true;
        } else {
            cli_error("info", "unknown argument \"%s\"", a.word);
            fprintf(stderr, "usage: fmlp info [--ceilings [--remeasure]]\n");
            return CLI_USAGE_ERROR;
        }
    }
    fmlp_print_info(stdout);
    if (!ceilings) return 0;
    fmlp_ctx *ctx;
    if (fmlp_ctx_create(NULL, &ctx) != FMLP_OK) {
        fprintf(stderr, "fmlp info: %s\n", fmlp_last_error());
        return 1;
    }
    fmlp_ceilings c;
    fprintf(stderr, "measuring ceilings (a few seconds)...\n");
    fmlp_status s = remeasure ? fmlp_ceilings_measure(ctx, &c) : fmlp_ceilings_get(ctx, true, &c);
    fmlp_ctx_destroy(ctx);
    if (s != FMLP_OK) {
        fprintf(stderr, "fmlp info: %s\n", fmlp_last_error());
        return 1;
    }
    char f32[32], b[32], m[32];
    printf("ceilings: CPU GEMM f32 %s, bf16 %s, memory read %s\n", fmlp_si_format(c.gemm_gflops_f32 * 1e9, "FLOP/s", f32, sizeof f32),
           fmlp_si_format(c.gemm_gflops_bf16 * 1e9, "FLOP/s", b, sizeof b), fmlp_si_format(c.mem_gbps * 1e9, "B/s", m, sizeof m));
    if (c.gpu_gemm_tflops_bf16 > 0)
        printf("ceilings: GPU GEMM bf16 %s, memory %s, launch %.1f us\n",
               fmlp_si_format(c.gpu_gemm_tflops_bf16 * 1e12, "FLOP/s", f32, sizeof f32),
               fmlp_si_format(c.gpu_mem_gbps * 1e9, "B/s", m, sizeof m), c.gpu_launch_us);
    return 0;
}
