/* Why: the three forms of the one-kernel MLP (mlp_one.cu, mlp_stream.cu,
 * mlp_stream_mma.cu) run on the same grid: one cooperative block per SM,
 * with dynamic shared memory up to the opt-in limit; and the two row
 * streams take the same kinds of shape. Those pieces are written once. */
#ifndef FMLP_CUDA_MLP_GRID_CUH
#define FMLP_CUDA_MLP_GRID_CUH

#include <stdint.h>

#include "cuda/kernels.h"
#include "cuda/smem_opt_in.cuh"
#include "fmlp.h"

/* dynamic shared memory a block may opt into on cc 9.x */
constexpr size_t FMLP_GRID_MAX_SMEM = 227 * 1024;

/* One block per multiprocessor (132 when the device is not known). */
inline int64_t fmlp_grid_blocks(const fmlp_cu_mlp_args *a) { return a->sm_count > 0 ? a->sm_count : 132; }

/* What both row streams need: bf16/f16, cc 9.x, dim and hidden multiples
 * of 8, an output, x rows 16-byte aligned (or x not known yet). */
inline bool fmlp_grid_stream_shape(const fmlp_cu_mlp_args *a)
{
    if (a->dtype != FMLP_BF16 && a->dtype != FMLP_F16) return false;
    if (a->cc_major < 9 || a->dim % 8 || a->hidden % 8 || a->out < 1) return false;
    return !a->x || !((uintptr_t)a->x & 15);
}

/* Launches fn(*params) cooperatively on blocks blocks of threads threads,
 * with smem bytes of dynamic shared memory (opted into first when there
 * are any); params is whatever one struct the kernel takes. */
template <typename P>
inline cudaError_t fmlp_grid_launch_on(cudaStream_t s, const void *fn, const P *params, int64_t blocks, int threads,
                                       size_t smem)
{
    if (smem) {
        const cudaError_t e = fmlp_smem_opt_in(fn, smem);
        if (e != cudaSuccess) return e;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)blocks);
    cfg.blockDim = dim3((unsigned)threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    void *args[] = {(void *)params};
    return cudaLaunchKernelExC(&cfg, fn, args);
}

/* fn(*p) on one block per multiprocessor. */
inline cudaError_t fmlp_grid_launch(cudaStream_t s, const void *fn, const fmlp_cu_mlp_args *p, int threads, size_t smem)
{
    return fmlp_grid_launch_on(s, fn, p, fmlp_grid_blocks(p), threads, smem);
}

#endif
