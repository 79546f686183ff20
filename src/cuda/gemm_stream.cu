/* Why: the GEMMs of 1..64-row forwards, at the speed memory delivers their
 * weights (stream.cuh says how the work is cut). One extern "C" kernel per
 * dtype, epilogue (GLU or plain) and x-row bucket (8, 16, 32, 64), so
 * CUPTI shows names like fmlp_gemm_glu_bf16_stream16. The grid is one
 * block per task, as many tasks as the SMs hold resident blocks; on cc 9.x
 * they launch as programmatic dependents of the previous kernel, prefetch
 * their weights, let their own dependents launch, and only then wait. */
#include <stdio.h>

#include "cuda/stream.cuh"

using fmlp_stream::job;

namespace {

template <typename T, bool GLU, int NT> __device__ __forceinline__ void stream_gemm_body(const job &j)
{
    __shared__ fmlp_stream::block_smem<NT> sm;
    fmlp_stream::ring<NT> r;
    const int64_t t = blockIdx.x;
    fmlp_stream::task_begin<T, NT>(j, t, r);
    fmlp_stream::pdl_launch_dependents();
    fmlp_stream::pdl_wait();
    fmlp_stream::task_stream<T, NT, false>(j, r);
    fmlp_stream::task_finish<T, GLU, NT>(j, t, r, sm);
}

} // namespace

#define FMLP_STREAM_K(NAME, T, GLU, NT)                                                                          \
    extern "C" __global__ void __launch_bounds__(fmlp_stream::THREADS, 2) NAME(const job j)                      \
    {                                                                                                            \
        stream_gemm_body<T, GLU, NT>(j);                                                                         \
    }
#define FMLP_STREAM_FAMILY(PREFIX, T, GLU)                                                                       \
    FMLP_STREAM_K(PREFIX##_stream8, T, GLU, 1)                                                                   \
    FMLP_STREAM_K(PREFIX##_stream16, T, GLU, 2)                                                                  \
    FMLP_STREAM_K(PREFIX##_stream32, T, GLU, 4)                                                                  \
    FMLP_STREAM_K(PREFIX##_stream64, T, GLU, 8)

FMLP_STREAM_FAMILY(fmlp_gemm_bf16, __nv_bfloat16, false)
FMLP_STREAM_FAMILY(fmlp_gemm_glu_bf16, __nv_bfloat16, true)
FMLP_STREAM_FAMILY(fmlp_gemm_f16, __half, false)
FMLP_STREAM_FAMILY(fmlp_gemm_glu_f16, __half, true)

namespace {

#define FMLP_SE(NAME) {(const void *)NAME, #NAME}
#define FMLP_SE_ROW(PREFIX)                                                                                      \
    {FMLP_SE(PREFIX##_stream8), FMLP_SE(PREFIX##_stream16), FMLP_SE(PREFIX##_stream32), FMLP_SE(PREFIX##_stream64)}

/* [f16][glu][x-row bucket] */
const fmlp_stream::kernel_entry stream_table[2][2][4] = {
    {FMLP_SE_ROW(fmlp_gemm_bf16), FMLP_SE_ROW(fmlp_gemm_glu_bf16)},
    {FMLP_SE_ROW(fmlp_gemm_f16), FMLP_SE_ROW(fmlp_gemm_glu_f16)},
};
int stream_occupancy[2][2][4];

const fmlp_stream::kernel_entry &entry(const fmlp_cu_gemm_args *a)
{
    return stream_table[a->dtype == FMLP_F16 ? 1 : 0][a->glu ? 1 : 0][fmlp_stream::bucket(a->m)];
}

/* The split for the resident blocks (2 per SM assumed if the query fails). */
job plan_for(const fmlp_cu_gemm_args *a)
{
    const int sms = a->sm_count > 0 ? a->sm_count : 132;
    const int occ = fmlp_stream::occupancy(
        &stream_occupancy[a->dtype == FMLP_F16 ? 1 : 0][a->glu ? 1 : 0][fmlp_stream::bucket(a->m)], entry(a).fn);
    return fmlp_stream::plan(*a, (int64_t)(occ ? occ : 2) * sms, 0);
}

} // namespace

extern "C" bool fmlp_cu_gemm_stream_fits(const fmlp_cu_gemm_args *a)
{
    if (a->dtype != FMLP_BF16 && a->dtype != FMLP_F16) return false;
    if (a->m < 1 || a->m > fmlp_stream::MAX_ROWS || a->k % 8) return false;
    return !a->x || (((uintptr_t)a->x & 15) == 0 && a->ldx % 8 == 0);
}

extern "C" const char *fmlp_cu_gemm_stream_name(const fmlp_cu_gemm_args *a) { return entry(a).name; }

extern "C" void fmlp_cu_gemm_stream_describe(const fmlp_cu_gemm_args *a, char *buf, size_t len)
{
    const job j = plan_for(a);
    snprintf(buf, len, "rw=%d kw=%d splits=%d blocks=%lld chunks/warp=%d", j.rw, j.kw, j.splits, (long long)j.tasks,
             j.cpw);
}

extern "C" cudaError_t fmlp_cu_gemm_stream(cudaStream_t s, const fmlp_cu_gemm_args *a)
{
    if (!fmlp_cu_gemm_stream_fits(a)) return cudaErrorInvalidValue;
    job j = plan_for(a);
    if (j.tasks > 0x7fffffff) return cudaErrorInvalidConfiguration;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)j.tasks);
    cfg.blockDim = dim3(fmlp_stream::THREADS);
    cfg.stream = s;
    cudaLaunchAttribute attr[1];
    if (a->pdl) {
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
    }
    void *args[] = {&j};
    return cudaLaunchKernelExC(&cfg, entry(a).fn, args);
}
