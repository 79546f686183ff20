/* Why: on Hopper the mma.sync tiles reach a fraction of the tensor cores'
 * rate; wgmma (sm_90a) reads both operands from shared memory and runs
 * asynchronously per warpgroup, which is what fused GEMMs need to keep up
 * with cuBLASLt. Each consumer warpgroup owns 64 rows of the tile; all
 * threads stage 64-wide K slices with cp.async into the 128-byte-swizzled
 * layout the wgmma descriptors describe, several stages deep. The accumulator layout per 8 columns matches mma.sync's, so the GLU
 * epilogue pairs gate and up in registers exactly as the other tiles do.
 * Built only into the sm_90a image; fmlp_cu_gemm_pick offers it only on
 * compute capability 9.x. */
#include "cuda/device_util.cuh"
#include "cuda/kernels.h"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FMLP_HAVE_WGMMA 1
#endif

namespace {

/* Tile shapes: WGS consumer warpgroups of 64 rows (BM = 64 * WGS), NB
 * 128-column halves (BN = 128 * NB), KSUB 64-wide K slices per stage, S
 * stages. PIPE keeps one wgmma group in flight while the next is issued
 * (loads then run S - 2 stages ahead instead of S - 1). */
template <int WGS, int NB, int KSUB, int S, bool PIPE> struct wg_cfg {
    enum {
        BM = 64 * WGS,
        BN = 128 * NB,
        THREADS = 128 * WGS,
        A_SUB = BM * 128,
        B_SUB = BN * 128,
        STAGE = (A_SUB + B_SUB) * KSUB,
        SMEM = S * STAGE + 1024,
        AHEAD = PIPE ? S - 2 : S - 1,
        MIN_BLOCKS = 2 * SMEM <= 227 * 1024 ? 2 : 1
    };
};

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

template <typename T, bool GLU, int WGS, int NB, int KSUB, int S, bool PIPE>
__device__ __forceinline__ void wg_body(const fmlp_cu_gemm_args &p)
{
    using C = wg_cfg<WGS, NB, KSUB, S, PIPE>;
    extern __shared__ unsigned char wg_raw[];
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(wg_raw);
    const uint32_t smem = (raw + 1023u) & ~1023u;
    const T *x = static_cast<const T *>(p.x);
    const T *w = static_cast<const T *>(p.w);
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, wq = (tid >> 5) & 3;
    const int64_t m0 = (int64_t)blockIdx.y * C::BM, n0 = (int64_t)blockIdx.x * C::BN;
    const int64_t m = p.m, nw = p.nw, k = p.k, ldx = p.ldx;
    const int KT = (int)((k + 64 * KSUB - 1) / (64 * KSUB));

    auto load_stage = [&](int stage, int kt) {
        const uint32_t base = smem + stage * C::STAGE;
#pragma unroll
        for (int j = 0; j < KSUB; j++) {
            const int64_t k0 = ((int64_t)kt * KSUB + j) * 64;
            const uint32_t sa = base + j * C::A_SUB, sb = base + KSUB * C::A_SUB + j * C::B_SUB;
            if constexpr (C::BM == C::BN) {
                /* one pass issues both operands: more copies in flight per thread */
#pragma unroll
                for (int c = tid; c < C::BM * 8; c += C::THREADS) {
                    const int r = c >> 3, ch = c & 7;
                    const int64_t gk = k0 + ch * 8;
                    const uint32_t off = (uint32_t)(r * 128 + ((ch ^ (r & 7)) << 4));
                    const bool oka = m0 + r < m && gk < k, okb = n0 + r < nw && gk < k;
                    cp_async16(sa + off, oka ? x + (m0 + r) * ldx + gk : x, oka ? 16 : 0);
                    cp_async16(sb + off, okb ? w + (n0 + r) * k + gk : w, okb ? 16 : 0);
                }
            } else {
#pragma unroll
                for (int c = tid; c < C::BM * 8; c += C::THREADS) {
                    const int r = c >> 3, ch = c & 7;
                    const int64_t gk = k0 + ch * 8;
                    const bool ok = m0 + r < m && gk < k;
                    cp_async16(sa + (uint32_t)(r * 128 + ((ch ^ (r & 7)) << 4)), ok ? x + (m0 + r) * ldx + gk : x, ok ? 16 : 0);
                }
#pragma unroll
                for (int c = tid; c < C::BN * 8; c += C::THREADS) {
                    const int r = c >> 3, ch = c & 7;
                    const int64_t gk = k0 + ch * 8;
                    const bool ok = n0 + r < nw && gk < k;
                    cp_async16(sb + (uint32_t)(r * 128 + ((ch ^ (r & 7)) << 4)), ok ? w + (n0 + r) * k + gk : w, ok ? 16 : 0);
                }
            }
        }
    };

    float d[NB][64];
#pragma unroll
    for (int h = 0; h < NB; h++)
#pragma unroll
        for (int i = 0; i < 64; i++) d[h][i] = 0.0f;

#pragma unroll
    for (int s = 0; s < C::AHEAD; s++) {
        if (s < KT) load_stage(s, s);
        asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int kt = 0; kt < KT; kt++) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(C::AHEAD - 1));
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        const int nk = kt + C::AHEAD;
        if (nk < KT) load_stage(nk % S, nk);
        asm volatile("cp.async.commit_group;\n" ::);

        const uint32_t base = smem + (kt % S) * C::STAGE;
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int j = 0; j < KSUB; j++) {
            const uint32_t sa = base + j * C::A_SUB + wg * 64 * 128;
            const uint32_t sb = base + KSUB * C::A_SUB + j * C::B_SUB;
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
#pragma unroll
                for (int h = 0; h < NB; h++)
                    wgmma_n128<T>(d[h], wg_desc(sa + kk * 32), wg_desc(sb + h * 128 * 128 + kk * 32));
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        if (PIPE)
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        else
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    asm volatile("cp.async.wait_group 0;\n" ::);

    T *out = static_cast<T *>(p.out);
    const T *bias = static_cast<const T *>(p.b);
    const bool paired = ((uintptr_t)out & 3) == 0 && (p.ldo & 1) == 0;
    const int g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int h = 0; h < NB; h++) {
        const int64_t nb = n0 + h * 128;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            const int64_t row = m0 + wg * 64 + wq * 16 + g + half * 8;
            if (row >= m) continue;
            T *orow = out + row * p.ldo;
            if (GLU) {
#pragma unroll
                for (int t = 0; t < 8; t++) {
                    const int64_t pc = nb + t * 16 + 2 * tq, hc = nb / 2 + t * 8 + 2 * tq;
                    if (hc >= p.n) continue;
                    const float g0 = d[h][8 * t + half * 2] + wg_bias(bias, pc);
                    const float g1 = d[h][8 * t + half * 2 + 1] + wg_bias(bias, pc + 1);
                    const float u0 = d[h][8 * t + 4 + half * 2] + wg_bias(bias, pc + 8);
                    const float u1 = d[h][8 * t + 4 + half * 2 + 1] + wg_bias(bias, pc + 9);
                    fmlp_store2<T>(orow + hc, fmlp_act_apply(p.act, g0) * u0, fmlp_act_apply(p.act, g1) * u1,
                                   hc + 1 < p.n, paired);
                }
            } else {
#pragma unroll
                for (int j = 0; j < 16; j++) {
                    const int64_t col = nb + j * 8 + 2 * tq;
                    if (col >= p.n) continue;
                    const float v0 = d[h][4 * j + half * 2] + wg_bias(bias, col);
                    const float v1 = col + 1 < p.n ? d[h][4 * j + half * 2 + 1] + wg_bias(bias, col + 1) : 0.0f;
                    fmlp_store2<T>(orow + col, fmlp_act_apply(p.act, v0), fmlp_act_apply(p.act, v1), col + 1 < p.n,
                                   paired);
                }
            }
        }
    }
}

#endif

} // namespace

#ifdef FMLP_HAVE_WGMMA
#define FMLP_WG_BODY(T, GLU, ...) wg_body<T, GLU, __VA_ARGS__>(p);
#else
#define FMLP_WG_BODY(T, GLU, ...) (void)p;
#endif
#define FMLP_WG_K(NAME, T, GLU, WGS, NB, KSUB, S, PIPE)                                                   \
    extern "C" __global__ void __launch_bounds__(128 * WGS, (wg_cfg<WGS, NB, KSUB, S, PIPE>::MIN_BLOCKS)) \
        NAME(const fmlp_cu_gemm_args p)                                                                 \
    {                                                                                                   \
        FMLP_WG_BODY(T, GLU, WGS, NB, KSUB, S, PIPE)                                                    \
    }
/* Measured on the H200 (docs/cuda.md): 128x128 with 3 stages and two blocks
 * per SM beat 4-stage pipelined 128x128, 128x256 and 128-wide-K shapes at
 * 1024..32768 rows; 64x128 with 128-wide K stages serves 65..511 rows. */
#define FMLP_WG_CFG_BIG 2, 1, 1, 3, false
#define FMLP_WG_CFG_SMALL 1, 1, 2, 4, true
#define FMLP_WG_KX(...) FMLP_WG_K(__VA_ARGS__)
#define FMLP_WG_KC(NAME, T, GLU, CFG) FMLP_WG_KX(NAME, T, GLU, CFG)
#define FMLP_WG_FAMILY(DT, T)                                                   \
    FMLP_WG_KC(fmlp_gemm_glu_##DT##_wgmma_128x128, T, true, FMLP_WG_CFG_BIG)    \
    FMLP_WG_KC(fmlp_gemm_##DT##_wgmma_128x128, T, false, FMLP_WG_CFG_BIG)       \
    FMLP_WG_KC(fmlp_gemm_glu_##DT##_wgmma_64x128, T, true, FMLP_WG_CFG_SMALL)   \
    FMLP_WG_KC(fmlp_gemm_##DT##_wgmma_64x128, T, false, FMLP_WG_CFG_SMALL)

FMLP_WG_FAMILY(bf16, __nv_bfloat16)
FMLP_WG_FAMILY(f16, __half)

namespace {

struct wg_entry {
    const void *fn;
    const char *name;
    int bm, bn, smem;
};
template <int WGS, int NB, int KSUB, int S, bool PIPE> constexpr int wg_smem() { return wg_cfg<WGS, NB, KSUB, S, PIPE>::SMEM; }
#define FMLP_WE(NAME, WGS, NB, KSUB, S, PIPE) {(const void *)NAME, #NAME, 64 * WGS, 128 * NB, wg_smem<WGS, NB, KSUB, S, PIPE>()}
#define FMLP_WE2(NAME, CFG) FMLP_WE_(NAME, CFG)
#define FMLP_WE_(NAME, ...) FMLP_WE(NAME, __VA_ARGS__)

/* [small][dtype bf16/f16][glu] */
const wg_entry wg_table[2][2][2] = {
    {{FMLP_WE2(fmlp_gemm_bf16_wgmma_128x128, FMLP_WG_CFG_BIG), FMLP_WE2(fmlp_gemm_glu_bf16_wgmma_128x128, FMLP_WG_CFG_BIG)},
     {FMLP_WE2(fmlp_gemm_f16_wgmma_128x128, FMLP_WG_CFG_BIG), FMLP_WE2(fmlp_gemm_glu_f16_wgmma_128x128, FMLP_WG_CFG_BIG)}},
    {{FMLP_WE2(fmlp_gemm_bf16_wgmma_64x128, FMLP_WG_CFG_SMALL), FMLP_WE2(fmlp_gemm_glu_bf16_wgmma_64x128, FMLP_WG_CFG_SMALL)},
     {FMLP_WE2(fmlp_gemm_f16_wgmma_64x128, FMLP_WG_CFG_SMALL), FMLP_WE2(fmlp_gemm_glu_f16_wgmma_64x128, FMLP_WG_CFG_SMALL)}},
};
const wg_entry &wg_pick(const fmlp_cu_gemm_args *a)
{
    return wg_table[a->m < 512 ? 1 : 0][a->dtype == FMLP_F16 ? 1 : 0][a->glu ? 1 : 0];
}

cudaError_t wg_launch(cudaStream_t s, const fmlp_cu_gemm_args *a, const wg_entry &e)
{
    cudaError_t err = cudaFuncSetAttribute(e.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, e.smem);
    if (err != cudaSuccess) return err;
    void *args[] = {(void *)a};
    return cudaLaunchKernel(e.fn, dim3((unsigned)((a->nw + e.bn - 1) / e.bn), (unsigned)((a->m + e.bm - 1) / e.bm)),
                            dim3(e.bm * 2), args, e.smem, s);
}

} // namespace

extern "C" const char *fmlp_cu_gemm_wgmma_name(const fmlp_cu_gemm_args *a) { return wg_pick(a).name; }

extern "C" cudaError_t fmlp_cu_gemm_wgmma(cudaStream_t s, const fmlp_cu_gemm_args *a) { return wg_launch(s, a, wg_pick(a)); }
