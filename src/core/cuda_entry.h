/* Why: what the rest of the library may ask of the CUDA backend without
 * seeing CUDA: src/cuda implements these when built, no_cuda.c otherwise. */
#ifndef FMLP_CORE_CUDA_ENTRY_H
#define FMLP_CORE_CUDA_ENTRY_H

#include <stdio.h>

#include "core/backend.h"

void fmlp_cuda_print_info(FILE *f);

#endif
