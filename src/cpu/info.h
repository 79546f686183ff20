/* Why: `fmlp info` asks each backend for its part; this is the CPU's. */
#ifndef FMLP_CPU_INFO_H
#define FMLP_CPU_INFO_H

#include <stdio.h>

/* CPU brand, features, code paths (and why any cannot run), default threads. */
void cpu_print_info(FILE *f);

#endif
