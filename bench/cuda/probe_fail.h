/* Why: the GEMM probes (gemm_one.cu, row_split.cu) stop at the first failed
 * CUDA or cuBLASLt call and say which, returning 1 from the function that
 * made it rather than exiting, so the caller's message follows. One
 * definition for them; define PROBE_NAME (the program's name) first. */
#ifndef FMLP_BENCH_CUDA_PROBE_FAIL_H
#define FMLP_BENCH_CUDA_PROBE_FAIL_H

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdio.h>

static inline int probe_fail(const char *what, const char *detail)
{
    fprintf(stderr, "%s: %s: %s\n", PROBE_NAME, what, detail);
    return 1;
}
#define CK(x)                                                                        \
    do {                                                                             \
        cudaError_t e_ = (x);                                                        \
        if (e_ != cudaSuccess) return probe_fail(#x, cudaGetErrorString(e_));        \
    } while (0)
#define CKLT(x)                                                                      \
    do {                                                                             \
        if ((x) != CUBLAS_STATUS_SUCCESS) return probe_fail(#x, "cuBLASLt failed");  \
    } while (0)

#endif
