/* Why: see cli_trace_ranks.c: `fmlp trace summarize` over a folder holding
 * one trace per rank of a tensor-parallel run. */
#ifndef FMLP_CLI_TRACE_RANKS_H
#define FMLP_CLI_TRACE_RANKS_H

#include "fmlp.h"

/* Prints the per-rank and all-rank communication summary of the traces in
 * `dir`. Returns 0, or 1 after a message. */
int cli_trace_summarize_ranks(const char *dir);

#endif
