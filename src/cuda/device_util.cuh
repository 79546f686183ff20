/* Why: the pointwise kernels and every GEMM epilogue must compute the same
 * activations and convert dtypes the same way (round to nearest even, as
 * PyTorch does), so those few device functions live here once. */
#ifndef FMLP_CUDA_DEVICE_UTIL_CUH
#define FMLP_CUDA_DEVICE_UTIL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "fmlp.h"

__device__ __forceinline__ float fmlp_to_f32(float v) { return v; }
__device__ __forceinline__ float fmlp_to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float fmlp_to_f32(__half v) { return __half2float(v); }

template <typename T> __device__ __forceinline__ T fmlp_from_f32(float v);
template <> __device__ __forceinline__ float fmlp_from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 fmlp_from_f32<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ __half fmlp_from_f32<__half>(float v) { return __float2half_rn(v); }

/* Accurate forms (tanhf, erff, expf), not the approximate intrinsics: the
 * f32 path is held to 1e-5 against the double reference. */
__device__ __forceinline__ float fmlp_act_apply(int act, float x)
{
    switch (act) {
    case FMLP_ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case FMLP_ACT_GELU_TANH: {
        const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
        return 0.5f * x * (1.0f + tanhf(u));
    }
    case FMLP_ACT_SILU: return x / (1.0f + expf(-x));
    case FMLP_ACT_RELU: return x < 0.0f ? 0.0f : x;       /* NaN fails the test and stays NaN */
    case FMLP_ACT_RELU2: return x < 0.0f ? 0.0f : x * x;
    default: return x;
    }
}

/* The same activations in fewer instructions, for the half-precision GEMM
 * epilogues whose cost would otherwise rival a tile's matrix work at short
 * K: GELU-tanh as x / (1 + exp(-2u)) and SiLU as x / (1 + exp(-x)) with
 * the fast exponential and division (relative error about 1e-6). HW_TANH
 * takes GELU-tanh as 0.5 x (1 + tanh u) through the hardware tanh
 * (tanh.approx.f32, relative error about 2^-11, under a bf16 output's
 * rounding and at an f16 one's): one MUFU operation instead of two. On the
 * H200 it made the TMA-stored GLU GEMM (K = 768) 2-4% faster, and the
 * register-stored one at K = 4096 3-8% slower at 4096 and 8192 rows, in
 * the same process (bench/results/h200_gemm_2026-12-02.md), so only the
 * former takes it. NaN and Inf propagate as in the accurate forms. */
template <bool HW_TANH = false> __device__ __forceinline__ float fmlp_act_fast(int act, float x)
{
    switch (act) {
    case FMLP_ACT_GELU_TANH: {
        if (HW_TANH) {
            const float u = x * fmaf(x * x, 0.79788456080286536f * 0.044715f, 0.79788456080286536f);
            float t;
            asm("tanh.approx.f32 %0, %1;\n" : "=f"(t) : "f"(u));
            const float hx = 0.5f * x;
            return fmaf(hx, t, hx);
        }
        const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
        return __fdividef(x, 1.0f + __expf(-2.0f * u));
    }
    case FMLP_ACT_SILU: return __fdividef(x, 1.0f + __expf(-x));
    default: return fmlp_act_apply(act, x);
    }
}

/* Stores two adjacent outputs, as one 32-bit store when aligned. */
template <typename T> __device__ __forceinline__ void fmlp_store2(T *p, float v0, float v1, bool both, bool paired)
{
    if (both && paired && sizeof(T) == 2) {
        T pair[2] = {fmlp_from_f32<T>(v0), fmlp_from_f32<T>(v1)};
        *reinterpret_cast<uint32_t *>(p) = *reinterpret_cast<const uint32_t *>(pair);
        return;
    }
    p[0] = fmlp_from_f32<T>(v0);
    if (both) p[1] = fmlp_from_f32<T>(v1);
}

#endif
