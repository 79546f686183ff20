/* Why: the read probes (limits.cu, read_floor.cu) prove that every byte was
 * read by summing every 4-byte word into per-block sums the host checks,
 * over buffers that hold no zeros and no two equal copies. The fill and
 * the sums are written once here. */
#ifndef FMLP_BENCH_CUDA_WORD_SUMS_CUH
#define FMLP_BENCH_CUDA_WORD_SUMS_CUH

#include <stdint.h>

/* w[i] = a hash of i: not zeros, and no two copies alike. */
static __global__ void fill_words(uint32_t *w, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = ((uint32_t)i + 1) * 0x9e3779b1u ^ (uint32_t)(i >> 32);
        h ^= h >> 16;
        h *= 0x85ebca6bu;
        h ^= h >> 13;
        w[i] = h;
    }
}

static __device__ __forceinline__ uint32_t words(uint4 v) { return v.x + v.y + v.z + v.w; }

/* The block's wrapping sum of its threads' sums, written to sums[block]. */
template <int THREADS> static __device__ __forceinline__ void block_sum(uint32_t acc, uint32_t *sums)
{
    for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    __shared__ uint32_t warp_sum[THREADS / 32];
    if (threadIdx.x % 32 == 0) warp_sum[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        uint32_t s = 0;
        for (int k = 0; k < THREADS / 32; k++) s += warp_sum[k];
        sums[blockIdx.x] = s;
    }
}

/* w: n16 16-byte vectors, then n_tail (< 8) bf16-sized halves, read by
 * blocks of READ_SUM_THREADS on a grid-stride loop. Four independent loads
 * per thread and step keep enough bytes in flight to stream; sums[b] is
 * block b's wrapping sum of its words and halves. */
constexpr int READ_SUM_THREADS = 256;
static __global__ void __launch_bounds__(READ_SUM_THREADS)
    read_sum(const uint4 *__restrict__ w, size_t n16, int n_tail, uint32_t *__restrict__ sums)
{
    const size_t stride = (size_t)gridDim.x * READ_SUM_THREADS;
    size_t i = (size_t)blockIdx.x * READ_SUM_THREADS + threadIdx.x;
    uint32_t acc = 0;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        const uint4 a = w[i], b = w[i + stride], c = w[i + 2 * stride], d = w[i + 3 * stride];
        acc += words(a) + words(b) + words(c) + words(d);
    }
    for (; i < n16; i += stride) acc += words(w[i]);
    if (blockIdx.x == 0 && threadIdx.x < n_tail) acc += ((const uint16_t *)(w + n16))[threadIdx.x];
    block_sum<READ_SUM_THREADS>(acc, sums);
}

#endif
