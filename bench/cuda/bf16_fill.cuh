/* Why: the GEMM probes time on random data (never zeros), drawn the same
 * way so their figures compare. One definition for them. */
#ifndef FMLP_BENCH_CUDA_BF16_FILL_CUH
#define FMLP_BENCH_CUDA_BF16_FILL_CUH

#include <cuda_bf16.h>
#include <stdint.h>

/* p[i] uniform in [-a, a), a hash of i and seed. */
__global__ void bench_fill_bf16(__nv_bfloat16 *p, int64_t n, float a, uint32_t seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed * 40503u;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        p[i] = __float2bfloat16_rn(a * ((float)(h & 0xFFFFFF) / 8388608.0f - 1.0f));
    }
}

#endif
