/* Why: on Hopper the mma.sync tiles reach a fraction of the tensor cores'
 * rate; wgmma (sm_90a) reads both operands from shared memory and runs
 * asynchronously per warpgroup, which is what large-row fused GEMMs need to
 * keep up with cuBLASLt. Two consumer warpgroups each own 64 rows of a
 * 128x128 tile; all 256 threads stage 64-wide K slices with cp.async into
 * the 128-byte-swizzled layout the wgmma descriptors describe, three stages
 * deep. The accumulator layout per 8 columns matches mma.sync's, so the GLU
 * epilogue pairs gate and up in registers exactly as the other tiles do.
 * Built only into the sm_90a image; fmlp_cu_gemm_pick offers it only on
 * compute capability 9.x. */
#include "cuda/device_util.cuh"
#include "cuda/kernels.h"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FMLP_HAVE_WGMMA 1
#endif

namespace {

constexpr int WG_BM = 128, WG_BN = 128, WG_BK = 64, WG_STAGES = 3;
constexpr int WG_TILE_A = WG_BM * WG_BK * 2, WG_TILE_B = WG_BN * WG_BK * 2;
constexpr int WG_SMEM = WG_STAGES * (WG_TILE_A + WG_TILE_B) + 1024;

#ifdef FMLP_HAVE_WGMMA

__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}

/* K-major operand, 128-byte rows, 128-byte swizzle, 8-row groups 1024 B apart. */
__device__ __forceinline__ uint64_t wg_desc(uint32_t addr)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}

template <typename T> __device__ __forceinline__ void wgmma_n128(float (&d)[64], uint64_t da, uint64_t db);

template <> __device__ __forceinline__ void wgmma_n128<__nv_bfloat16>(float (&d)[64], uint64_t da, uint64_t db)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, 1, 1, 1, 0, 0;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db));
}

template <> __device__ __forceinline__ void wgmma_n128<__half>(float (&d)[64], uint64_t da, uint64_t db)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, 1, 1, 1, 0, 0;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db));
}

template <typename T> __device__ __forceinline__ float wg_bias(const T *b, int64_t i) { return b ? fmlp_to_f32(b[i]) : 0.0f; }

template <typename T, bool GLU> __device__ __forceinline__ void wg_body(const fmlp_cu_gemm_args &p)
{
    extern __shared__ unsigned char wg_raw[];
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(wg_raw);
    const uint32_t smem = (raw + 1023u) & ~1023u;
    const T *x = static_cast<const T *>(p.x);
    const T *w = static_cast<const T *>(p.w);
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, wq = (tid >> 5) & 3;
    const int64_t m0 = (int64_t)blockIdx.y * WG_BM, n0 = (int64_t)blockIdx.x * WG_BN;
    const int64_t m = p.m, nw = p.nw, k = p.k, ldx = p.ldx;
    const int KT = (int)((k + WG_BK - 1) / WG_BK);

    auto load_stage = [&](int stage, int kt) {
        const int64_t k0 = (int64_t)kt * WG_BK;
        const uint32_t sa = smem + stage * (WG_TILE_A + WG_TILE_B), sb = sa + WG_TILE_A;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int c = tid + 256 * i, r = c >> 3, ch = c & 7;
            const int64_t gk = k0 + ch * 8;
            const uint32_t off = (uint32_t)(r * 128 + ((ch ^ (r & 7)) << 4));
            const bool oka = m0 + r < m && gk < k;
            cp_async16(sa + off, oka ? x + (m0 + r) * ldx + gk : x, oka ? 16 : 0);
            const bool okb = n0 + r < nw && gk < k;
            cp_async16(sb + off, okb ? w + (n0 + r) * k + gk : w, okb ? 16 : 0);
        }
    };

    float d[64];
#pragma unroll
    for (int i = 0; i < 64; i++) d[i] = 0.0f;

#pragma unroll
    for (int s = 0; s < WG_STAGES - 1; s++) {
        if (s < KT) load_stage(s, s);
        asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int kt = 0; kt < KT; kt++) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(WG_STAGES - 2));
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        const int nk = kt + WG_STAGES - 1;
        if (nk < KT) load_stage(nk % WG_STAGES, nk);
        asm volatile("cp.async.commit_group;\n" ::);

        const uint32_t sa = smem + (kt % WG_STAGES) * (WG_TILE_A + WG_TILE_B) + wg * 64 * 128;
        const uint32_t sb = smem + (kt % WG_STAGES) * (WG_TILE_A + WG_TILE_B) + WG_TILE_A;
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < WG_BK / 16; kk++) wgmma_n128<T>(d, wg_desc(sa + kk * 32), wg_desc(sb + kk * 32));
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    }
    asm volatile("cp.async.wait_group 0;\n" ::);

    T *out = static_cast<T *>(p.out);
    const T *bias = static_cast<const T *>(p.b);
    const bool paired = ((uintptr_t)out & 3) == 0 && (p.ldo & 1) == 0;
    const int g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int half = 0; half < 2; half++) {
        const int64_t row = m0 + wg * 64 + wq * 16 + g + half * 8;
        if (row >= m) continue;
        T *orow = out + row * p.ldo;
        if (GLU) {
#pragma unroll
            for (int t = 0; t < WG_BN / 16; t++) {
                const int64_t pc = n0 + t * 16 + 2 * tq, hc = n0 / 2 + t * 8 + 2 * tq;
                if (hc >= p.n) continue;
                const float g0 = d[8 * t + half * 2] + wg_bias(bias, pc);
                const float g1 = d[8 * t + half * 2 + 1] + wg_bias(bias, pc + 1);
                const float u0 = d[8 * t + 4 + half * 2] + wg_bias(bias, pc + 8);
                const float u1 = d[8 * t + 4 + half * 2 + 1] + wg_bias(bias, pc + 9);
                fmlp_store2<T>(orow + hc, fmlp_act_apply(p.act, g0) * u0, fmlp_act_apply(p.act, g1) * u1, hc + 1 < p.n,
                               paired);
            }
        } else {
#pragma unroll
            for (int j = 0; j < WG_BN / 8; j++) {
                const int64_t col = n0 + j * 8 + 2 * tq;
                if (col >= p.n) continue;
                const float v0 = d[4 * j + half * 2] + wg_bias(bias, col);
                const float v1 = col + 1 < p.n ? d[4 * j + half * 2 + 1] + wg_bias(bias, col + 1) : 0.0f;
                fmlp_store2<T>(orow + col, fmlp_act_apply(p.act, v0), fmlp_act_apply(p.act, v1), col + 1 < p.n, paired);
            }
        }
    }
}

#endif

} // namespace

#ifdef FMLP_HAVE_WGMMA
#define FMLP_WG_BODY(T, GLU) wg_body<T, GLU>(p);
#else
#define FMLP_WG_BODY(T, GLU) (void)p;
#endif
#define FMLP_WG_K(NAME, T, GLU) \
    extern "C" __global__ void __launch_bounds__(256, 2) NAME(const fmlp_cu_gemm_args p) { FMLP_WG_BODY(T, GLU) }

FMLP_WG_K(fmlp_gemm_glu_bf16_wgmma_128x128, __nv_bfloat16, true)
FMLP_WG_K(fmlp_gemm_bf16_wgmma_128x128, __nv_bfloat16, false)
FMLP_WG_K(fmlp_gemm_glu_f16_wgmma_128x128, __half, true)
FMLP_WG_K(fmlp_gemm_f16_wgmma_128x128, __half, false)

extern "C" const char *fmlp_cu_gemm_wgmma_name(const fmlp_cu_gemm_args *a)
{
    static const char *names[2][2] = {{"fmlp_gemm_bf16_wgmma_128x128", "fmlp_gemm_glu_bf16_wgmma_128x128"},
                                      {"fmlp_gemm_f16_wgmma_128x128", "fmlp_gemm_glu_f16_wgmma_128x128"}};
    return names[a->dtype == FMLP_F16 ? 1 : 0][a->glu ? 1 : 0];
}

extern "C" cudaError_t fmlp_cu_gemm_wgmma(cudaStream_t s, const fmlp_cu_gemm_args *a)
{
    static const void *fns[2][2] = {{(const void *)fmlp_gemm_bf16_wgmma_128x128, (const void *)fmlp_gemm_glu_bf16_wgmma_128x128},
                                    {(const void *)fmlp_gemm_f16_wgmma_128x128, (const void *)fmlp_gemm_glu_f16_wgmma_128x128}};
    const void *fn = fns[a->dtype == FMLP_F16 ? 1 : 0][a->glu ? 1 : 0];
    cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM);
    if (e != cudaSuccess) return e;
    void *args[] = {(void *)a};
    return cudaLaunchKernel(fn, dim3((unsigned)((a->nw + WG_BN - 1) / WG_BN), (unsigned)((a->m + WG_BM - 1) / WG_BM)),
                            dim3(256), args, WG_SMEM, s);
}
