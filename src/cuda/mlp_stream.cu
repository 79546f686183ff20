/* Why: at a few rows even two back-to-back kernels cost a launch and a
 * drain more than one, so a gated MLP runs as one persistent kernel: its
 * resident blocks stream the gate/up weights and write h = act(gate) * up
 * to the workspace (it stays in L2), fill their rings with the down
 * weights, meet at a grid-wide barrier (the launch is cooperative, so all
 * blocks are resident), then read h and stream the rest of the down
 * projection. Both phases are streaming GEMMs (stream.cuh), each split for
 * the grid. The barrier word and split counters live in the context's
 * scratch, which every launch leaves as it found it. */
#include <stdio.h>

#include "cuda/stream.cuh"

using fmlp_stream::job;

namespace {

template <typename T, int NT>
__device__ __forceinline__ void stream_mlp_body(const job &ja, const job &jb, unsigned *bar)
{
    __shared__ fmlp_stream::block_smem<NT> sm;
    fmlp_stream::ring<NT> r;
    for (int64_t t = blockIdx.x; t < ja.tasks; t += gridDim.x) {
        fmlp_stream::task_begin<T, NT>(ja, t, r);
        fmlp_stream::task_stream<T, NT, false>(ja, r);
        fmlp_stream::task_finish<T, true, NT>(ja, t, r, sm);
    }
    const int64_t t0 = blockIdx.x;
    if (t0 < jb.tasks) fmlp_stream::task_begin<T, NT>(jb, t0, r);
    fmlp_stream::grid_barrier(bar);
    for (int64_t t = t0; t < jb.tasks; t += gridDim.x) {
        if (t != t0) fmlp_stream::task_begin<T, NT>(jb, t, r);
        fmlp_stream::task_stream<T, NT, true>(jb, r);
        fmlp_stream::task_finish<T, false, NT>(jb, t, r, sm);
    }
}

} // namespace

#define FMLP_MLP_K(NAME, T, NT)                                                                                   \
    extern "C" __global__ void __launch_bounds__(fmlp_stream::THREADS, 2)                                       \
        NAME(const job ja, const job jb, unsigned *bar)                                                          \
    {                                                                                                            \
        stream_mlp_body<T, NT>(ja, jb, bar);                                                                     \
    }
#define FMLP_MLP_FAMILY(PREFIX, T)                                                                               \
    FMLP_MLP_K(PREFIX##_stream8, T, 1)                                                                           \
    FMLP_MLP_K(PREFIX##_stream16, T, 2)                                                                          \
    FMLP_MLP_K(PREFIX##_stream32, T, 4)                                                                          \
    FMLP_MLP_K(PREFIX##_stream64, T, 8)

FMLP_MLP_FAMILY(fmlp_mlp_gated_bf16, __nv_bfloat16)
FMLP_MLP_FAMILY(fmlp_mlp_gated_f16, __half)

namespace {

#define FMLP_ME(NAME) {(const void *)NAME, #NAME}
#define FMLP_ME_ROW(PREFIX)                                                                                      \
    {FMLP_ME(PREFIX##_stream8), FMLP_ME(PREFIX##_stream16), FMLP_ME(PREFIX##_stream32), FMLP_ME(PREFIX##_stream64)}

const fmlp_stream::kernel_entry mlp_table[2][4] = {FMLP_ME_ROW(fmlp_mlp_gated_bf16), FMLP_ME_ROW(fmlp_mlp_gated_f16)};
int mlp_occupancy[2][4];

const fmlp_stream::kernel_entry &entry(const fmlp_cu_gemm_args *a)
{
    return mlp_table[a->dtype == FMLP_F16 ? 1 : 0][fmlp_stream::bucket(a->m)];
}

/* Blocks the whole device holds at once: the cooperative grid (0: unknown). */
int64_t resident_blocks(const fmlp_cu_gemm_args *a)
{
    const int occ = fmlp_stream::occupancy(&mlp_occupancy[a->dtype == FMLP_F16 ? 1 : 0][fmlp_stream::bucket(a->m)],
                                           entry(a).fn);
    return (int64_t)occ * (a->sm_count > 0 ? a->sm_count : 132);
}

bool aligned(const void *p, int64_t ld) { return !p || (((uintptr_t)p & 15) == 0 && ld % 8 == 0); }

} // namespace

extern "C" bool fmlp_cu_mlp_fits(const fmlp_cu_gemm_args *glu, const fmlp_cu_gemm_args *down)
{
    if (glu->dtype != FMLP_BF16 && glu->dtype != FMLP_F16) return false;
    if (down->dtype != glu->dtype || !glu->glu || down->glu || !glu->scratch || down->scratch != glu->scratch)
        return false;
    if (glu->m < 1 || glu->m > fmlp_stream::MAX_ROWS || down->m != glu->m) return false;
    if (glu->k % 8 || down->k % 8 || down->k != glu->n || glu->ldo != down->ldx || glu->out != down->x) return false;
    return aligned(glu->x, glu->ldx) && aligned(down->x, down->ldx);
}

extern "C" const char *fmlp_cu_mlp_name(const fmlp_cu_gemm_args *glu) { return entry(glu).name; }

extern "C" cudaError_t fmlp_cu_mlp(cudaStream_t s, const fmlp_cu_gemm_args *glu, const fmlp_cu_gemm_args *down)
{
    if (!fmlp_cu_mlp_fits(glu, down) || !glu->x || !down->x) return cudaErrorInvalidValue;
    const int64_t grid = resident_blocks(glu);
    if (grid < 1) return cudaErrorInvalidConfiguration;
    job ja = fmlp_stream::plan(*glu, grid, 0), jb = fmlp_stream::plan(*down, grid, 1);
    const int64_t need = ja.tasks > jb.tasks ? ja.tasks : jb.tasks;
    unsigned *bar = reinterpret_cast<unsigned *>(static_cast<char *>(glu->scratch) + fmlp_stream::BARRIER_OFF);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)(need < grid ? need : grid));
    cfg.blockDim = dim3(fmlp_stream::THREADS);
    cfg.stream = s;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    void *args[] = {&ja, &jb, &bar};
    return cudaLaunchKernelExC(&cfg, entry(glu).fn, args);
}

extern "C" void fmlp_cu_mlp_describe(const fmlp_cu_gemm_args *glu, const fmlp_cu_gemm_args *down, char *buf,
                                     size_t len)
{
    const int64_t grid = resident_blocks(glu);
    const job ja = fmlp_stream::plan(*glu, grid, 0), jb = fmlp_stream::plan(*down, grid, 1);
    snprintf(buf, len, "grid=%lld glu: rw=%d splits=%d tasks=%lld; down: rw=%d splits=%d tasks=%lld",
             (long long)grid, ja.rw, ja.splits, (long long)ja.tasks, jb.rw, jb.splits, (long long)jb.tasks);
}
