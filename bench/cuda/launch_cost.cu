/* Why: a forward of a few rows without a CUDA graph costs the calling
 * thread more than the GPU spends on it (bench_cuda's host_us), and most of
 * that is the CUDA runtime and driver, not fmlp. This times, on the host,
 * each runtime call a forward makes (launches of the kinds fmlp uses, the
 * shared-memory opt-in, a tensor-map encode, the capture and device
 * queries), median of many back-to-back calls, so a forward's host time can
 * be read as the sum of its calls plus fmlp's own bookkeeping.
 * CMake builds it as fmlp_launch_cost; alone:
 * nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a bench/cuda/launch_cost.cu -o launch_cost */
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

__global__ void empty_kernel(int) {}

struct big_args {
    CUtensorMap a, b, c;
    char rest[160];
};
__global__ void tma_sized_kernel(const __grid_constant__ big_args p) { (void)p; }

template <class F> static double median_us(F f, int calls = 2000)
{
    std::vector<double> t(calls);
    for (int i = 0; i < 100; i++) f();
    for (int i = 0; i < calls; i++) {
        auto t0 = std::chrono::steady_clock::now();
        f();
        t[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        if (i % 200 == 199) cudaDeviceSynchronize();
    }
    std::sort(t.begin(), t.end());
    return t[calls / 2];
}

int main()
{
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        std::fprintf(stderr, "launch_cost: no CUDA device\n");
        return 1;
    }
    void *buf;
    if (cudaMalloc(&buf, 1 << 24) != cudaSuccess) {
        std::fprintf(stderr, "launch_cost: cannot allocate 16 MiB of device memory\n");
        return 1;
    }
    int v = 0;
    void *args[] = {&v};
    std::printf("%-58s %8s\n", "host call", "us");
    auto row = [](const char *what, double us) { std::printf("%-58s %8.2f\n", what, us); };
    row("cudaLaunchKernel, empty kernel", median_us([&] { cudaLaunchKernel((const void *)empty_kernel, 132, 128, args, 0, s); }));
    big_args ba = {};
    void *bargs[] = {&ba};
    row("cudaLaunchKernel, 544 bytes of parameters (3 tensor maps)",
        median_us([&] { cudaLaunchKernel((const void *)tma_sized_kernel, 132, 128, bargs, 0, s); }));
    auto ex = [&](cudaLaunchAttribute *attr, unsigned n, dim3 grid) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid;
        cfg.blockDim = dim3(128);
        cfg.stream = s;
        cfg.attrs = attr;
        cfg.numAttrs = n;
        cudaLaunchKernelExC(&cfg, (const void *)empty_kernel, args);
    };
    cudaLaunchAttribute a[2];
    a[0].id = cudaLaunchAttributeCooperative;
    a[0].val.cooperative = 1;
    row("cudaLaunchKernelExC, cooperative (the one-kernel MLP)", median_us([&] { ex(a, 1, dim3(132)); }));
    a[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a[0].val.programmaticStreamSerializationAllowed = 1;
    row("cudaLaunchKernelExC, PDL (the gemvs)", median_us([&] { ex(a, 1, dim3(48)); }));
    a[1].id = cudaLaunchAttributeClusterDimension;
    a[1].val.clusterDim.x = 1;
    a[1].val.clusterDim.y = 4;
    a[1].val.clusterDim.z = 1;
    row("cudaLaunchKernelExC, PDL + cluster of 4 (the split gemv)", median_us([&] { ex(a, 2, dim3(48, 4)); }));
    row("cudaFuncSetAttribute, max dynamic shared memory", median_us([&] {
            cudaFuncSetAttribute((const void *)empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 << 10);
        }));
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q);
    auto enc = (decltype(&cuTensorMapEncodeTiled))fn;
    if (enc) {
        CUtensorMap m;
        const cuuint64_t dims[2] = {768, 64}, strides[1] = {768 * 2};
        const cuuint32_t box[2] = {64, 64}, elem[2] = {1, 1};
        row("cuTensorMapEncodeTiled", median_us([&] {
                enc(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, buf, dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                    CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
            }));
    }
    enum cudaStreamCaptureStatus cs;
    row("cudaStreamIsCapturing", median_us([&] { cudaStreamIsCapturing(s, &cs); }));
    int dev;
    row("cudaGetDevice", median_us([&] { cudaGetDevice(&dev); }));
    row("cudaGetLastError", median_us([&] { (void)cudaGetLastError(); }));
    cudaPointerAttributes pa;
    row("cudaPointerGetAttributes (what fmlp remembers per pointer)", median_us([&] { cudaPointerGetAttributes(&pa, buf); }));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
    cudaLaunchKernel((const void *)empty_kernel, 132, 128, args, 0, s);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&ge, g, 0);
    row("cudaGraphLaunch, one kernel", median_us([&] { cudaGraphLaunch(ge, s); }));
    cudaDeviceSynchronize();
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        std::fprintf(stderr, "launch_cost: %s\n", cudaGetErrorString(e));
        return 1;
    }
    return 0;
}
