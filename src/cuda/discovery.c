/* Why: finding the GPU and describing it. A missing GPU or driver is a
 * status, never a crash; a context's device state (streams, cuBLASLt) is
 * built here and torn down in reverse; `fmlp info` and the trace's
 * deviceProperties read the device from here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "cuda/cuda_internal.h"

int fmlp_cu_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}


void fmlp_cu_fini(fmlp_ctx *ctx)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    if (!st) return;
    cudaSetDevice(st->device);
    if (st->stream) cudaStreamSynchronize(st->stream);
    fmlp_cu_graph_clear(st);
    fmlp_cu_lt_fini(st);
    fmlp_cu_memory_release(st);
    if (st->capture_stream) cudaStreamDestroy(st->capture_stream);
    if (st->stream) cudaStreamDestroy(st->stream);
    pthread_mutex_destroy(&st->graph_lock);
    pthread_mutex_destroy(&st->lock);
    free(st);
    ctx->be_state = NULL;
}

fmlp_status fmlp_cu_init(fmlp_ctx *ctx, const fmlp_ctx_options *opt)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        (void)cudaGetLastError();
        return fmlp_fail(FMLP_ERR_NO_DEVICE, "no CUDA device (%s); use --device cpu, or run on a machine with an NVIDIA GPU and driver",
                         e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports 0 devices");
    }
    if (opt->device_index < 0 || opt->device_index >= n)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "CUDA device %d does not exist; this machine has %d (0..%d)",
                         opt->device_index, n, n - 1);
    fmlp_cu_state *st = fmlp_calloc(1, sizeof *st);
    if (!st) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of host memory creating the CUDA backend");
    st->device = opt->device_index;
    fmlp_cu_stream_init(st);
    pthread_mutex_init(&st->lock, NULL);
    pthread_mutex_init(&st->graph_lock, NULL);
    ctx->be_state = st;
    const char *own = getenv("FMLP_CUDA_OWN_GEMM");
    st->force_own = own && own[0] == '1';
    st->force_lt = own && own[0] == '0';
    const char *pdl = getenv("FMLP_CUDA_PDL");
    st->pdl = !(pdl && pdl[0] == '0');
    st->pdl_all = pdl && pdl[0] == '1';
    const char *row = getenv("FMLP_CUDA_ROW_GEMV");
    st->row_gemv = !(row && row[0] == '0');
    const char *rs = getenv("FMLP_CUDA_ROW_STREAM");
    st->row_stream = !rs || !rs[0] ? FMLP_CU_ROW_STREAM_DEFAULT
                     : rs[0] == '0' ? FMLP_CU_ROW_STREAM_OFF
                                    : FMLP_CU_ROW_STREAM_WHEREVER;
    const char *sl = getenv("FMLP_CUDA_SLICE");
    st->slice = !(sl && sl[0] == '0');
    const char *tune = getenv("FMLP_CUDA_LT_TUNE");
    st->lt_tune = !(tune && tune[0] == '0');
    const char *one = getenv("FMLP_CUDA_ONE_KERNEL");
    st->one_kernel = !one || !one[0] ? FMLP_CU_ONE_RESIDENT : one[0] == '0' ? FMLP_CU_ONE_OFF : FMLP_CU_ONE_WHEREVER;
    fmlp_status s = FMLP_OK;
    int l2 = 0;
    if ((e = cudaSetDevice(st->device)) != cudaSuccess)
        s = fmlp_cu_fail(e, "cudaSetDevice");
    else if ((e = cudaDeviceGetAttribute(&st->sm_count, cudaDevAttrMultiProcessorCount, st->device)) != cudaSuccess)
        s = fmlp_cu_fail(e, "cudaDeviceGetAttribute");
    else if ((e = cudaDeviceGetAttribute(&st->cc_major, cudaDevAttrComputeCapabilityMajor, st->device)) != cudaSuccess)
        s = fmlp_cu_fail(e, "cudaDeviceGetAttribute");
    else if ((e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, st->device)) != cudaSuccess)
        s = fmlp_cu_fail(e, "cudaDeviceGetAttribute");
    else if ((e = cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking)) != cudaSuccess)
        s = fmlp_cu_fail(e, "cudaStreamCreate");
    else if ((e = cudaStreamCreateWithFlags(&st->capture_stream, cudaStreamNonBlocking)) != cudaSuccess)
        s = fmlp_cu_fail(e, "cudaStreamCreate");
    else
        s = fmlp_cu_lt_init(st);
    st->l2_bytes = l2;
    if (s != FMLP_OK) fmlp_cu_fini(ctx);
    return s;
}

bool fmlp_cu_device_props(fmlp_ctx *ctx, fmlp_device_props *out)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, st->device) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    memset(out, 0, sizeof *out);
    out->id = st->device;
    snprintf(out->name, sizeof out->name, "%s", p.name);
    out->total_global_mem = p.totalGlobalMem;
    out->compute_major = p.major;
    out->compute_minor = p.minor;
    out->max_threads_per_block = p.maxThreadsPerBlock;
    out->max_threads_per_mp = p.maxThreadsPerMultiProcessor;
    out->regs_per_block = p.regsPerBlock;
    out->regs_per_mp = p.regsPerMultiprocessor;
    out->warp_size = p.warpSize;
    out->shared_mem_per_block = p.sharedMemPerBlock;
    out->shared_mem_per_mp = p.sharedMemPerMultiprocessor;
    out->shared_mem_per_block_optin = p.sharedMemPerBlockOptin;
    out->num_sms = p.multiProcessorCount;
    /* CUDA 13 dropped the clocks from cudaDeviceProp; the attributes remain. */
    if (cudaDeviceGetAttribute(&out->clock_khz, cudaDevAttrClockRate, st->device) != cudaSuccess) out->clock_khz = 0;
    if (cudaDeviceGetAttribute(&out->mem_clock_khz, cudaDevAttrMemoryClockRate, st->device) != cudaSuccess)
        out->mem_clock_khz = 0;
    if (cudaDeviceGetAttribute(&out->mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, st->device) != cudaSuccess)
        out->mem_bus_bits = 0;
    (void)cudaGetLastError();
    return true;
}

void fmlp_cu_print_info(FILE *f)
{
    int n = 0, drv = 0, rt = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    (void)cudaGetLastError();
    fprintf(f, "CUDA backend: built (runtime %d.%d, cuBLASLt %zu); driver %d.%d\n", rt / 1000, rt % 1000 / 10,
            cublasLtGetVersion(), drv / 1000, drv % 1000 / 10);
    if (e != cudaSuccess || n == 0) {
        fprintf(f, "  no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return;
    }
    for (int d = 0; d < n; d++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        int clk = 0, mclk = 0, bus = 0;
        cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, d);
        cudaDeviceGetAttribute(&mclk, cudaDevAttrMemoryClockRate, d);
        cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, d);
        (void)cudaGetLastError();
        fprintf(f, "  cuda:%d  %s  sm_%d%d  %d SMs @ %d MHz  %.1f GiB @ %.0f GB/s peak  L2 %d MiB  smem/block %zu KiB\n", d,
                p.name, p.major, p.minor, p.multiProcessorCount, clk / 1000, (double)p.totalGlobalMem / (1u << 30),
                2.0 * mclk * 1e3 * (bus / 8) / 1e9, p.l2CacheSize >> 20, p.sharedMemPerBlockOptin >> 10);
    }
}
