/* Why: `fmlp info` and bug reports need one honest description of what
 * this build runs on: the version, each backend's own report (the CPU's:
 * features, code paths and why any is missing, threads) and the backends
 * built in. */
#include <stdio.h>

#include "core/backend.h"
#include "core/cuda_entry.h"
#include "fmlp.h"

void fmlp_print_info(FILE *f)
{
    fprintf(f, "fmlp %s\n", FMLP_VERSION);
    fmlp_cpu_backend.print_info(f);
    fprintf(f, "backends: cpu%s\n", fmlp_cuda_backend_get() ? ", cuda" : "");
    fmlp_cuda_print_info(f);
}
