/* Why: a build without nvcc still links and answers "no CUDA" politely. */
#include <stdio.h>

#include "core/backend.h"
#include "core/cuda_entry.h"

const fmlp_backend *fmlp_cuda_backend_get(void) { return NULL; }
int fmlp_cuda_device_count(void) { return 0; }
void fmlp_cuda_print_info(FILE *f) { fprintf(f, "CUDA backend: not built (no nvcc at configure time)\n"); }
