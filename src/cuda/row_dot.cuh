/* Why: the kernels that stream whole weight-row segments at one row
 * (gemv_row.cu, mlp_stream.cu) multiply 16-byte words of weights with x in
 * f32 FMAs, in the same order, so both give the same sums; mlp_slice.cu
 * widens its words with the same pair conversion. */
#ifndef FMLP_CUDA_ROW_DOT_CUH
#define FMLP_CUDA_ROW_DOT_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

template <typename T> __device__ __forceinline__ float2 fmlp_pair_f32(uint32_t v);
/* A bf16 is the high half of its f32: one shift or mask each, where
 * __bfloat1622float2 spends a byte permute and a multiply (the one-row
 * slice ran ~0.1 us slower with it on the H100). */
template <> __device__ __forceinline__ float2 fmlp_pair_f32<__nv_bfloat16>(uint32_t v)
{
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xffff0000u));
}
template <> __device__ __forceinline__ float2 fmlp_pair_f32<__half>(uint32_t v)
{
    return __half22float2(*reinterpret_cast<const __half2 *>(&v));
}

/* s + the dot product of 8 weights and 8 x values, in element order. */
template <typename T> __device__ __forceinline__ float fmlp_dot8(uint4 w, uint4 x, float s)
{
    const uint32_t ws[4] = {w.x, w.y, w.z, w.w}, xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
    for (int q = 0; q < 4; q++) {
        const float2 a = fmlp_pair_f32<T>(ws[q]), b = fmlp_pair_f32<T>(xs[q]);
        s = fmaf(a.x, b.x, s);
        s = fmaf(a.y, b.y, s);
    }
    return s;
}

#endif
