/* Why: `fmlp info` and bug reports need one honest description of what
 * this build runs on: CPU features, code paths and why any is missing,
 * threads, backends. */
#include <stdio.h>

#include "core/cuda_entry.h"
#include "cpu/features.h"
#include "fmlp.h"

void fmlp_print_info(FILE *f)
{
    const cpu_features *c = cpu_features_get();
    fprintf(f, "fmlp %s\n", FMLP_VERSION);
    fprintf(f, "CPU: %s, %d logical cores\n", c->brand, c->cores);
    fprintf(f, "features: avx2=%s fma=%s avx512f=%s avx512bw=%s avx512vl=%s avx512dq=%s avx512_bf16=%s amx_tile=%s amx_bf16=%s amx_granted=%s\n",
            c->avx2 ? "yes" : "no", c->fma ? "yes" : "no", c->avx512f ? "yes" : "no", c->avx512bw ? "yes" : "no",
            c->avx512vl ? "yes" : "no", c->avx512dq ? "yes" : "no", c->avx512bf16 ? "yes" : "no",
            c->amx_tile ? "yes" : "no", c->amx_bf16 ? "yes" : "no", c->amx_granted ? "yes" : "no");
    fprintf(f, "CPU code paths (force one with --cpu-path or FMLP_CPU_PATH):\n");
    for (int p = 0; p < CPU_PATH_COUNT; p++) {
        const char *why;
        bool ok = cpu_path_available((cpu_path)p, &why);
        fprintf(f, "  %-11s %s%s%s\n", cpu_path_name((cpu_path)p), ok ? "available" : "unavailable: ", ok ? "" : why,
                (cpu_path)p == cpu_path_best() ? " (default)" : "");
    }
    fprintf(f, "default threads: %d (one per core; --threads N)\n", c->cores);
    fprintf(f, "backends: cpu%s\n", fmlp_cuda_backend_get() ? ", cuda" : "");
    fmlp_cuda_print_info(f);
}
