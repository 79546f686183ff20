/* Why: issue 11's small-row bars are a few microseconds, so the floor they
 * are held to must be measured the way the forward is timed: one CUDA graph
 * replay per forward, back to back, L2-warm and L2-cold. limits.cu times its
 * read with plain launches, which on the H200's host cost 3.4-4.8 us each
 * and so can hide the GPU's own time at 14 MB. This probe times, as graphs
 * of one kernel and of 30:
 *   - the launch floors: an empty kernel, an empty cooperative grid of one
 *     512-thread block per SM (the one-kernel MLP's launch), the same with
 *     one grid-wide barrier (its phase boundary);
 *   - reading every byte of the weights in several shapes of load (plain
 *     grid-stride loads, every load of a block's slice issued at entry, bulk
 *     copies into shared memory), every word summed into per-block sums that
 *     are checked against the host's, so no load can be dropped.
 * Usage: read_floor [BYTES] (default: the tutorial MLP's 14155776 bytes of
 * bf16 weights); cold reads rotate copies of at least 512 MB in all.
 *   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Isrc -o read_floor bench/cuda/read_floor.cu */
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda/mlp_grid.cuh"
#include "cuda_check.cuh"
#include "graph_replays.cuh"
#include "word_sums.cuh"

namespace cg = cooperative_groups;

__global__ void empty_kernel() {}

/* The cooperative kernels take the one-kernel MLP's argument block, so
 * they launch through its launcher (mlp_grid.cuh) exactly as it does. */
__global__ void __launch_bounds__(512, 1) empty_grid(const fmlp_cu_mlp_args) {}

__global__ void __launch_bounds__(512, 1) grid_barrier(const fmlp_cu_mlp_args) { cg::this_grid().sync(); }

/* The same barrier by hand with one release add and acquire polling in
 * place of cooperative_groups' two full fences: block 0 adds 2^31 - (n - 1),
 * the others 1, so the top bit flips when the last block arrives whatever
 * the counter held before. */
__device__ unsigned flip_counter;
__global__ void __launch_bounds__(512, 1) flip_barrier(const fmlp_cu_mlp_args)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned add = blockIdx.x ? 1u : 0x80000000u - (gridDim.x - 1);
        unsigned old, now;
        asm volatile("atom.add.release.gpu.u32 %0, [%1], %2;\n" : "=r"(old) : "l"(&flip_counter), "r"(add) : "memory");
        do asm volatile("ld.acquire.gpu.u32 %0, [%1];\n" : "=r"(now) : "l"(&flip_counter) : "memory");
        while (((old ^ now) & 0x80000000u) == 0);
    }
    __syncthreads();
}

/* Block b reads its contiguous slice; each thread issues U loads (its
 * words THREADS apart) before adding any, so a slice of up to
 * U * THREADS * 16 bytes is in flight at once. */
template <int THREADS, int U>
__global__ void __launch_bounds__(THREADS) at_entry(const uint4 *__restrict__ w, size_t n16, uint32_t *sums)
{
    const size_t b0 = n16 * blockIdx.x / gridDim.x, b1 = n16 * (blockIdx.x + 1) / gridDim.x;
    uint32_t acc = 0;
    for (size_t base = b0 + threadIdx.x; base < b1; base += (size_t)U * THREADS) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const size_t i = base + (size_t)u * THREADS;
            v[u] = i < b1 ? __ldcs(w + i) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < U; u++) acc += words(v[u]);
    }
    block_sum<THREADS>(acc, sums);
}

/* mlp_one.cu's load shape: the bytes as rows of 768 bf16 in groups of 16,
 * a group to a team of 4 warps in the kernel's order, each lane loading
 * 16 bytes of rows g and g + 8 from each of its 6 chunks of 32 elements
 * (8 rows x 64 bytes per warp instruction), all 12 at once. */
__global__ void __launch_bounds__(512, 1) team_rows(const uint4 *__restrict__ w, size_t n16, uint32_t *sums)
{
    constexpr int ROW16 = 96; /* 768 bf16 */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, team = warp / 4, wit = warp % 4;
    const int g = lane >> 2, tq = lane & 3;
    const size_t groups = n16 / (16 * ROW16), teams = (size_t)gridDim.x * 4;
    uint32_t acc = 0;
    for (size_t ga = (size_t)team * gridDim.x + blockIdx.x; ga < groups; ga += teams) {
        uint4 wa[6], wb[6];
#pragma unroll
        for (int u = 0; u < 6; u++) {
            const size_t k16 = (size_t)(wit + 4 * u) * 4 + tq;
            wa[u] = __ldg(w + (ga * 16 + g) * ROW16 + k16);
            wb[u] = __ldg(w + (ga * 16 + g + 8) * ROW16 + k16);
        }
#pragma unroll
        for (int u = 0; u < 6; u++) acc += words(wa[u]) + words(wb[u]);
    }
    for (size_t i = groups * 16 * ROW16 + (size_t)blockIdx.x * 512 + threadIdx.x; i < n16; i += (size_t)gridDim.x * 512)
        acc += words(w[i]);
    block_sum<512>(acc, sums);
}

/* One thread copies the block's slice into shared memory with 1-D bulk
 * copies of up to 16 KB (all in flight at once, one mbarrier counting the
 * bytes), then every thread adds its words. Slices are at most the block's
 * shared memory (the tutorial's 107 KB a block); larger ones go round by
 * round. */
constexpr int BULK_THREADS = 512;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
constexpr int BULK_PIECE = 16384;
#endif
__global__ void __launch_bounds__(BULK_THREADS, 1) bulk(const uint4 *__restrict__ w, size_t n16, uint32_t *sums,
                                                        int round16)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ uint4 buf[];
    __shared__ uint64_t bar;
    const size_t b0 = n16 * blockIdx.x / gridDim.x, b1 = n16 * (blockIdx.x + 1) / gridDim.x;
    const uint32_t bar_a = (uint32_t)__cvta_generic_to_shared(&bar), buf_a = (uint32_t)__cvta_generic_to_shared(buf);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar_a));
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    uint32_t acc = 0, phase = 0;
    for (size_t r0 = b0; r0 < b1; r0 += (size_t)round16) {
        const size_t n = b1 - r0 < (size_t)round16 ? b1 - r0 : (size_t)round16;
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar_a), "r"((uint32_t)(n * 16))
                         : "memory");
            for (size_t o = 0; o < n * 16; o += BULK_PIECE) {
                const uint32_t len = (uint32_t)(n * 16 - o < (size_t)BULK_PIECE ? n * 16 - o : (size_t)BULK_PIECE);
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                                 buf_a + (uint32_t)o),
                             "l"((const char *)(w + r0) + o), "r"(len), "r"(bar_a)
                             : "memory");
            }
        }
        asm volatile("{\n.reg .pred p;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra WAIT;\n}\n" ::"r"(
                         bar_a),
                     "r"(phase)
                     : "memory");
        phase ^= 1;
        for (size_t i = threadIdx.x; i < n; i += BULK_THREADS) acc += words(buf[i]);
        __syncthreads(); /* buf is free for the next round */
    }
    block_sum<BULK_THREADS>(acc, sums);
#else
    (void)w, (void)n16, (void)sums, (void)round16;
    __trap(); /* main() runs it on cc 9.x only */
#endif
}

struct reader {
    const char *name;
    int blocks_per_sm; /* 0: limits.cu's full wave of 256-thread blocks */
    size_t smem;
    void (*launch)(cudaStream_t, const uint4 *, size_t, uint32_t *, int blocks, size_t smem);
};

static void go_stride4(cudaStream_t s, const uint4 *w, size_t n16, uint32_t *sums, int blocks, size_t)
{
    read_sum<<<blocks, READ_SUM_THREADS, 0, s>>>(w, n16, 0, sums);
}
template <int T, int U> static void go_entry(cudaStream_t s, const uint4 *w, size_t n16, uint32_t *sums, int blocks, size_t)
{
    at_entry<T, U><<<blocks, T, 0, s>>>(w, n16, sums);
}
static void go_team_rows(cudaStream_t s, const uint4 *w, size_t n16, uint32_t *sums, int blocks, size_t)
{
    team_rows<<<blocks, 512, 0, s>>>(w, n16, sums);
}
static void go_bulk(cudaStream_t s, const uint4 *w, size_t n16, uint32_t *sums, int blocks, size_t smem)
{
    bulk<<<blocks, BULK_THREADS, smem, s>>>(w, n16, sums, (int)(smem / 16));
}

int main(int argc, char **argv)
{
    const size_t bytes = argc > 1 ? (size_t)atoll(argv[1]) : (size_t)(3 * 768 * 3072) * 2;
    if (bytes < 16 || bytes % 16) {
        fprintf(stderr, "read_floor: %zu bytes: give a positive multiple of 16\n", bytes);
        return 2;
    }
    int sms, smem_max;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const size_t n16 = bytes / 16, pitch = (bytes + 4095) / 4096 * 4096;
    const int C = (int)std::max<size_t>(2, ((size_t)512 << 20) / bytes + 1);
    unsigned char *slab;
    CK(cudaMalloc(&slab, pitch * C));
    fill_words<<<4 * sms, 256>>>((uint32_t *)slab, pitch * C / 4);
    uint32_t *sums;
    CK(cudaMalloc(&sums, 8 * sms * sizeof(uint32_t))); /* the most blocks a reader launches */
    std::vector<unsigned char> host(bytes);
    CK(cudaMemcpy(host.data(), slab, bytes, cudaMemcpyDeviceToHost));
    uint32_t want = 0;
    for (size_t i = 0; i < bytes / 4; i++) {
        uint32_t v;
        memcpy(&v, &host[4 * i], 4);
        want += v;
    }
    const size_t bulk_smem = std::min<size_t>((size_t)smem_max - 1024, (n16 + sms - 1) / sms * 16);
    CK(cudaFuncSetAttribute(bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bulk_smem));
    const reader readers[] = {
        {"stride4 (limits.cu)", 0, 0, go_stride4},
        {"at_entry 512x16", 1, 0, go_entry<512, 16>},
        {"at_entry 1024x8", 1, 0, go_entry<1024, 8>},
        {"at_entry 2x512x8", 2, 0, go_entry<512, 8>},
        {"at_entry 4x256x8", 4, 0, go_entry<256, 8>},
        {"mlp_one shape 512", 1, 0, go_team_rows},
        {"bulk 512", 1, bulk_smem, go_bulk},
    };

    /* us per kernel, warm or cold over the C copies (graph_replays.cuh) */
    graph_timer timer(C);
    cudaStream_t s = timer.s;
    auto time_graphs = [&](int per, bool cold, auto &&launch) { return timer.us(per, cold, launch); };
    fmlp_cu_mlp_args grid = {};
    grid.sm_count = sms;
    auto coop = [&](const void *fn) { return [=, &s](int) { CK(fmlp_grid_launch(s, fn, &grid, 512, 0)); }; };

    printf("read_floor: %s, %d SMs, %.2f MB of weights, %d copies for cold reads\n", prop.name, sms, bytes / 1e6, C);
    printf("%-22s %10s %10s %10s %10s   (us per kernel; graphs of 1 and of 30 kernels)\n", "kernel", "1 warm",
           "1 cold", "30 warm", "30 cold");
    auto row = [&](const char *name, auto &&launch, bool reads) {
        const float w1 = time_graphs(1, false, launch), w30 = time_graphs(30, false, launch);
        const float c1 = reads ? time_graphs(1, true, launch) : w1, c30 = reads ? time_graphs(30, true, launch) : w30;
        printf("%-22s %10.2f %10.2f %10.2f %10.2f", name, w1, c1, w30, c30);
        if (reads) printf("   %.2f / %.2f TB/s (1 warm / 1 cold)", bytes / w1 / 1e6, bytes / c1 / 1e6);
        printf("\n");
        fflush(stdout);
    };
    row("empty kernel", [&](int) { empty_kernel<<<1, 1, 0, s>>>(); }, false);
    row("empty grid (coop)", coop((const void *)empty_grid), false);
    row("grid barrier (coop)", coop((const void *)grid_barrier), false);
    row("flip barrier (coop)", coop((const void *)flip_barrier), false);
    int bad = 0;
    for (const reader &r : readers) {
        if (r.launch == go_bulk && prop.major < 9) continue;
        const int blocks = r.blocks_per_sm ? r.blocks_per_sm * sms
                                           : (int)std::min<size_t>(n16 / READ_SUM_THREADS + 1, (size_t)sms * 8);
        CK(cudaMemset(sums, 0, 8 * sms * sizeof(uint32_t)));
        r.launch(s, (const uint4 *)slab, n16, sums, blocks, r.smem);
        CK(cudaStreamSynchronize(s));
        std::vector<uint32_t> got(blocks);
        CK(cudaMemcpy(got.data(), sums, blocks * sizeof(uint32_t), cudaMemcpyDeviceToHost));
        uint32_t sum = 0;
        for (uint32_t v : got) sum += v;
        if (sum != want) {
            printf("%-22s WRONG: sum 0x%08x, host 0x%08x\n", r.name, sum, want);
            bad++;
            continue;
        }
        row(r.name, [&](int c) { r.launch(s, (const uint4 *)(slab + (size_t)c * pitch), n16, sums, blocks, r.smem); },
            true);
    }
    return bad ? 1 : 0;
}
