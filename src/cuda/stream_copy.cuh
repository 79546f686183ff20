/* Why: the row-streaming kernels (mlp_stream.cu, mlp_stream_mma.cu) give
 * each thread a private ring of 16-byte slots in shared memory that only
 * it fills and reads, so they need no barrier in the stream. Their copy
 * carries a memory clobber (mma_sync.cuh's does not): a thread refills a
 * slot right after its own reads of it, which the compiler must not move
 * past the copy. */
#ifndef FMLP_CUDA_STREAM_COPY_CUH
#define FMLP_CUDA_STREAM_COPY_CUH

#include <stdint.h>

__device__ __forceinline__ void fmlp_own_copy16(uint4 *dst, const uint4 *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src)
                 : "memory");
}
__device__ __forceinline__ void fmlp_own_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
/* Waits until at most N of the thread's commit groups are in flight. */
template <int N> __device__ __forceinline__ void fmlp_own_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

#endif
