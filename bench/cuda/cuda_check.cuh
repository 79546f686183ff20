/* Why: the standalone probes stop at the first failed CUDA call, naming
 * the call and the line; one definition for all of them. */
#ifndef FMLP_BENCH_CUDA_CUDA_CHECK_CUH
#define FMLP_BENCH_CUDA_CUDA_CHECK_CUH

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                                   \
    do {                                                                                                        \
        cudaError_t e_ = (x);                                                                                   \
        if (e_ != cudaSuccess) {                                                                                \
            fprintf(stderr, "CUDA error %s: %s line %d\n", #x, cudaGetErrorString(e_), __LINE__);               \
            exit(1);                                                                                            \
        }                                                                                                       \
    } while (0)

#endif
