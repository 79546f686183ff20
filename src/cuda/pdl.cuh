/* Why: every kernel that may start under programmatic dependent launch
 * (cc 9.x) signals its dependents, waits for the kernel before and reads
 * that kernel's output the same way; written once here. Without the launch
 * attribute the two instructions do nothing. */
#ifndef FMLP_CUDA_PDL_CUH
#define FMLP_CUDA_PDL_CUH

#include <stdint.h>

__device__ __forceinline__ void pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_launch_dependents()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* The kernel before's output, read after pdl_wait: an ordinary load
 * (cached in L1, where the blocks of an SM share it) written as volatile
 * asm, so the compiler keeps it after the wait. Through __ldg, which tells
 * the compiler the data never changes while the kernel runs, some loads
 * were hoisted above the wait and read x while the kernel before was still
 * writing it (test_cuda_pdl); read through L2 only (ld.global.cg) the 16-
 * and 32-row gemvs were 10-20% slower. Launched without PDL, nothing
 * writes x while a kernel runs and it keeps __ldg. */
__device__ __forceinline__ uint4 ld_after_wait(const void *p)
{
    uint4 v;
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

#endif
