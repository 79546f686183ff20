/* Why: a kernel needing more than 48 KB of dynamic shared memory must be
 * opted in with cudaFuncSetAttribute, which takes the runtime's locks and
 * costs host time on every call; a forward of a few rows is short enough
 * for that to show. The attribute stays set for the function on its
 * device, so each (kernel, device) is opted in once, to the most bytes any
 * launch asked for. */
#ifndef FMLP_CUDA_SMEM_OPT_IN_CUH
#define FMLP_CUDA_SMEM_OPT_IN_CUH

#include <cuda_runtime.h>

#include <mutex>

inline cudaError_t fmlp_smem_opt_in(const void *fn, size_t bytes)
{
    struct opted {
        const void *fn;
        int device;
        size_t bytes;
    };
    static std::mutex lock;
    static opted seen[128];
    static int n_seen;
    int device = -1;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess) return e;
    std::lock_guard<std::mutex> hold(lock);
    opted *o = nullptr;
    for (int i = 0; i < n_seen && !o; i++)
        if (seen[i].fn == fn && seen[i].device == device) o = &seen[i];
    if (o && o->bytes >= bytes) return cudaSuccess;
    e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e != cudaSuccess) return e;
    if (!o && n_seen < (int)(sizeof seen / sizeof seen[0])) o = &seen[n_seen++];
    if (o) *o = {fn, device, bytes};
    return cudaSuccess;
}

#endif
