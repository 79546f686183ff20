/* Why: `fmlp trace` reads trace files rather than running anything:
 * render one to SVG, summarize one (fmlp's or torch.profiler's) as the
 * table and analyses a live run prints, or diff several side by side. */
#ifndef FMLP_CLI_TRACE_H
#define FMLP_CLI_TRACE_H

/* argv[0] = "trace". Returns 0 on success, 1 on failure, 2 on a usage error. */
int cli_trace_main(int argc, char **argv);

#endif
