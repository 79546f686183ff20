/* Why: a build without nvcc still links; the registry then finds no CUDA
 * backend and says how to get one. */
#include "core/backend.h"

const fmlp_backend *fmlp_cuda_backend_get(void) { return NULL; }
