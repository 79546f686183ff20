/* Why: fused mode runs fmlp's own GEMMs, because no library GEMM applies a
 * GLU in its epilogue: gate and up come out of one pass over x and only
 * h = act(gate) * up is written. The same kernels also serve a Linear with
 * an activation epilogue (fused Linear-act stacks). This file holds the
 * tiles and the fallback, and picks among every family:
 *  - tiles (64x64, 128x128): mma.sync m16n8k16 on bf16/f16, a 4-stage
 *    cp.async pipeline, ldmatrix from padded (conflict-free) shared rows;
 *  - simt: f32 (TF32 stays off) and any shape or alignment the others reject;
 *  - stream (rows <= 64, gemm_stream.cu) and wgmma (Hopper, gemm_tma.cu).
 * The GLU weight packing interleaves gate and up in blocks of 8 rows, so a
 * thread's accumulators hold gate and up of the same output element and the
 * epilogue needs no data exchange. */
#include "cuda/device_util.cuh"
#include "cuda/kernels.h"
#include "cuda/mma_sync.cuh"

namespace {

/* ------------------------------------------------------------ PTX helpers */

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, int src_bytes)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void *smem)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

template <typename T> __device__ __forceinline__ float load_bias(const T *b, int64_t i)
{
    return b ? fmlp_to_f32(b[i]) : 0.0f;
}

/* --------------------------------------------------------- tiled mma GEMM */

constexpr int TILE_BK = 32;
constexpr int TILE_BKP = 40; /* padded row: 80 bytes, so 8 ldmatrix rows hit 8 distinct bank groups */
constexpr int TILE_STAGES = 4;

template <int BM, int BN> constexpr int tile_smem_bytes() { return TILE_STAGES * (BM + BN) * TILE_BKP * 2; }

template <typename T, bool GLU, int BM, int BN, int WARPS_M, int WARPS_N>
__device__ __forceinline__ void tile_body(const fmlp_cu_gemm_args &p)
{
    constexpr int THREADS = WARPS_M * WARPS_N * 32;
    constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;
    constexpr int MT = WTM / 16, NT = WTN / 8;
    static_assert(NT % 2 == 0 && WTN % 16 == 0, "warp tile must hold gate/up pairs");
    extern __shared__ __align__(16) unsigned char tile_smem[];
    T *As = reinterpret_cast<T *>(tile_smem);
    T *Bs = As + TILE_STAGES * BM * TILE_BKP;

    const T *x = static_cast<const T *>(p.x);
    const T *w = static_cast<const T *>(p.w);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int64_t m0 = (int64_t)blockIdx.y * BM, n0 = (int64_t)blockIdx.x * BN;
    const int64_t m = p.m, nw = p.nw, k = p.k, ldx = p.ldx;
    const int KT = (int)((k + TILE_BK - 1) / TILE_BK);

    auto load_stage = [&](int stage, int kt) {
        const int64_t k0 = (int64_t)kt * TILE_BK;
        T *as = As + stage * BM * TILE_BKP;
        T *bs = Bs + stage * BN * TILE_BKP;
#pragma unroll
        for (int c = tid; c < BM * 4; c += THREADS) {
            const int r = c >> 2, ch = c & 3;
            const int64_t gr = m0 + r, gk = k0 + ch * 8;
            const bool ok = gr < m && gk < k;
            cp_async16(as + r * TILE_BKP + ch * 8, ok ? x + gr * ldx + gk : x, ok ? 16 : 0);
        }
#pragma unroll
        for (int c = tid; c < BN * 4; c += THREADS) {
            const int r = c >> 2, ch = c & 3;
            const int64_t gr = n0 + r, gk = k0 + ch * 8;
            const bool ok = gr < nw && gk < k;
            cp_async16(bs + r * TILE_BKP + ch * 8, ok ? w + gr * k + gk : w, ok ? 16 : 0);
        }
    };

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < TILE_STAGES - 1; s++) {
        if (s < KT) load_stage(s, s);
        cp_async_commit();
    }

    for (int kt = 0; kt < KT; kt++) {
        cp_async_wait<TILE_STAGES - 2>();
        __syncthreads();
        const int nk = kt + TILE_STAGES - 1;
        if (nk < KT) load_stage(nk % TILE_STAGES, nk);
        cp_async_commit();

        const T *as = As + (kt % TILE_STAGES) * BM * TILE_BKP;
        const T *bs = Bs + (kt % TILE_STAGES) * BN * TILE_BKP;
#pragma unroll
        for (int kk = 0; kk < TILE_BK / 16; kk++) {
            uint32_t af[MT][4], bf[NT][2];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
                ldmatrix_x4(af[mt], as + (wm * WTM + mt * 16 + (lane & 15)) * TILE_BKP + kk * 16 + (lane >> 4) * 8);
#pragma unroll
            for (int np = 0; np < NT / 2; np++) {
                uint32_t r[4];
                ldmatrix_x4(r, bs + (wn * WTN + np * 16 + (lane >> 4) * 8 + (lane & 7)) * TILE_BKP + kk * 16 +
                                   ((lane >> 3) & 1) * 8);
                bf[2 * np][0] = r[0];
                bf[2 * np][1] = r[1];
                bf[2 * np + 1][0] = r[2];
                bf[2 * np + 1][1] = r[3];
            }
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nt = 0; nt < NT; nt++) mma16816<T>(acc[mt][nt], af[mt], bf[nt][0], bf[nt][1]);
        }
    }
    cp_async_wait<0>();

    T *out = static_cast<T *>(p.out);
    const T *bias = static_cast<const T *>(p.b);
    const bool paired = ((uintptr_t)out & 3) == 0 && (p.ldo & 1) == 0;
    const int g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int half = 0; half < 2; half++) {
            const int64_t row = m0 + wm * WTM + mt * 16 + g + half * 8;
            if (row >= m) continue;
            T *orow = out + row * p.ldo;
            if (GLU) {
#pragma unroll
                for (int t = 0; t < NT / 2; t++) {
                    const int64_t pc = n0 + wn * WTN + t * 16 + 2 * tq;
                    const int64_t hc = (n0 + wn * WTN + t * 16) / 2 + 2 * tq;
                    if (hc >= p.n) continue;
                    const float g0 = acc[mt][2 * t][half * 2] + load_bias(bias, pc);
                    const float g1 = acc[mt][2 * t][half * 2 + 1] + load_bias(bias, pc + 1);
                    const float u0 = acc[mt][2 * t + 1][half * 2] + load_bias(bias, pc + 8);
                    const float u1 = acc[mt][2 * t + 1][half * 2 + 1] + load_bias(bias, pc + 9);
                    fmlp_store2<T>(orow + hc, fmlp_act_apply(p.act, g0) * u0, fmlp_act_apply(p.act, g1) * u1,
                                   hc + 1 < p.n, paired);
                }
            } else {
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    const int64_t col = n0 + wn * WTN + nt * 8 + 2 * tq;
                    if (col >= p.n) continue;
                    const float v0 = acc[mt][nt][half * 2] + load_bias(bias, col);
                    const float v1 = col + 1 < p.n ? acc[mt][nt][half * 2 + 1] + load_bias(bias, col + 1) : 0.0f;
                    fmlp_store2<T>(orow + col, fmlp_act_apply(p.act, v0), fmlp_act_apply(p.act, v1), col + 1 < p.n,
                                   paired);
                }
            }
        }
    }
}

/* ------------------------------------------------------------------ simt */

constexpr int SIMT_T = 64, SIMT_BK = 16;

/* 64x64 tile, 256 threads, 4x4 outputs each, f32 accumulation, every load
 * bounds-checked. With GLU a thread's four columns are two gate/up pairs. */
template <typename T, bool GLU> __device__ __forceinline__ void simt_body(const fmlp_cu_gemm_args &p)
{
    __shared__ float As[SIMT_BK][SIMT_T + 1];
    __shared__ float Bs[SIMT_BK][SIMT_T + 1];
    const T *x = static_cast<const T *>(p.x);
    const T *w = static_cast<const T *>(p.w);
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int64_t m0 = (int64_t)blockIdx.y * SIMT_T, n0 = (int64_t)blockIdx.x * SIMT_T;
    int cols[4];
#pragma unroll
    for (int j = 0; j < 4; j++)
        cols[j] = GLU ? (tx >> 2) * 16 + (j >> 1) * 8 + (tx & 3) * 2 + (j & 1) : tx + 16 * j;

    float acc[4][4] = {};
    for (int64_t k0 = 0; k0 < p.k; k0 += SIMT_BK) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int e = tid + 256 * i, r = e / SIMT_BK, kk = e % SIMT_BK;
            const int64_t gk = k0 + kk;
            As[kk][r] = m0 + r < p.m && gk < p.k ? fmlp_to_f32(x[(m0 + r) * p.ldx + gk]) : 0.0f;
            Bs[kk][r] = n0 + r < p.nw && gk < p.k ? fmlp_to_f32(w[(n0 + r) * p.k + gk]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < SIMT_BK; kk++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = As[kk][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; j++) b[j] = Bs[kk][cols[j]];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

    T *out = static_cast<T *>(p.out);
    const T *bias = static_cast<const T *>(p.b);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int64_t row = m0 + ty + 16 * i;
        if (row >= p.m) continue;
        if (GLU) {
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const int64_t pc = n0 + cols[j];
                const int64_t hc = n0 / 2 + (tx >> 2) * 8 + (tx & 3) * 2 + j;
                if (hc >= p.n) continue;
                const float gv = acc[i][j] + load_bias(bias, pc);
                const float uv = acc[i][j + 2] + load_bias(bias, pc + 8);
                out[row * p.ldo + hc] = fmlp_from_f32<T>(fmlp_act_apply(p.act, gv) * uv);
            }
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int64_t col = n0 + cols[j];
                if (col < p.n)
                    out[row * p.ldo + col] = fmlp_from_f32<T>(fmlp_act_apply(p.act, acc[i][j] + load_bias(bias, col)));
            }
        }
    }
}

} // namespace

/* Every variant as a named extern "C" kernel (CUPTI shows these names). */
#define FMLP_TILE_K(NAME, T, GLU, BM, BN, WM, WN)                                                              \
    extern "C" __global__ void __launch_bounds__(WM * WN * 32) NAME(const fmlp_cu_gemm_args p)                 \
    {                                                                                                          \
        tile_body<T, GLU, BM, BN, WM, WN>(p);                                                                  \
    }
#define FMLP_SIMT_K(NAME, T, GLU)                                                                              \
    extern "C" __global__ void __launch_bounds__(256) NAME(const fmlp_cu_gemm_args p) { simt_body<T, GLU>(p); }

#define FMLP_GEMM_FAMILY(DT, T, GLU, PREFIX)                                    \
    FMLP_TILE_K(PREFIX##_##DT##_64x64, T, GLU, 64, 64, 2, 2)                    \
    FMLP_TILE_K(PREFIX##_##DT##_128x128, T, GLU, 128, 128, 2, 4)                \
    FMLP_SIMT_K(PREFIX##_##DT##_simt, T, GLU)

FMLP_GEMM_FAMILY(bf16, __nv_bfloat16, true, fmlp_gemm_glu)
FMLP_GEMM_FAMILY(bf16, __nv_bfloat16, false, fmlp_gemm)
FMLP_GEMM_FAMILY(f16, __half, true, fmlp_gemm_glu)
FMLP_GEMM_FAMILY(f16, __half, false, fmlp_gemm)
FMLP_SIMT_K(fmlp_gemm_glu_f32_simt, float, true)
FMLP_SIMT_K(fmlp_gemm_f32_simt, float, false)

namespace {

struct gemm_entry {
    const void *fn;
    const char *name;
};
#define FMLP_GE(NAME) {(const void *)NAME, #NAME}
#define FMLP_GE_ROW(PREFIX, DT)                                                                                 \
    {FMLP_GE(PREFIX##_##DT##_simt), FMLP_GE(PREFIX##_##DT##_64x64), FMLP_GE(PREFIX##_##DT##_128x128)}

/* [dtype bf16/f16][glu][simt, 64x64, 128x128] */
const gemm_entry gemm_table[2][2][3] = {
    {FMLP_GE_ROW(fmlp_gemm, bf16), FMLP_GE_ROW(fmlp_gemm_glu, bf16)},
    {FMLP_GE_ROW(fmlp_gemm, f16), FMLP_GE_ROW(fmlp_gemm_glu, f16)},
};
const gemm_entry simt_f32[2] = {FMLP_GE(fmlp_gemm_f32_simt), FMLP_GE(fmlp_gemm_glu_f32_simt)};

const gemm_entry &entry_for(const fmlp_cu_gemm_args *a, fmlp_cu_gemm_variant v)
{
    if (a->dtype == FMLP_F32) return simt_f32[a->glu ? 1 : 0];
    const gemm_entry *row = gemm_table[a->dtype == FMLP_F16 ? 1 : 0][a->glu ? 1 : 0];
    switch (v) {
    case FMLP_CU_GEMM_TILE64: return row[1];
    case FMLP_CU_GEMM_TILE128: return row[2];
    default: return row[0];
    }
}

} // namespace

extern "C" fmlp_cu_gemm_variant fmlp_cu_gemm_pick(const fmlp_cu_gemm_args *a, int sm_count, int cc_major)
{
    if (a->dtype == FMLP_F32 || a->k % 8) return FMLP_CU_GEMM_SIMT;
    if (a->x && (((uintptr_t)a->x & 15) || a->ldx % 8)) return FMLP_CU_GEMM_SIMT;
    /* Up to 64 rows a GEMM is its weight stream; tiles would leave SMs idle. */
    if (fmlp_cu_gemm_stream_fits(a)) return FMLP_CU_GEMM_STREAM;
    const bool hopper = cc_major == 9 && fmlp_cu_gemm_wgmma_ready();
    if (hopper) return FMLP_CU_GEMM_WGMMA;
    const int64_t big = ((a->m + 127) / 128) * ((a->nw + 127) / 128);
    return big >= 2 * (int64_t)sm_count ? FMLP_CU_GEMM_TILE128 : FMLP_CU_GEMM_TILE64;
}

extern "C" const char *fmlp_cu_gemm_name(const fmlp_cu_gemm_args *a, fmlp_cu_gemm_variant v)
{
    if (v == FMLP_CU_GEMM_WGMMA && a->dtype != FMLP_F32) return fmlp_cu_gemm_wgmma_name(a);
    if (v == FMLP_CU_GEMM_STREAM && a->dtype != FMLP_F32) return fmlp_cu_gemm_stream_name(a);
    return entry_for(a, v).name;
}

/* Every tiled grid puts row tiles on grid.y (at most 65535, tiles of 64 rows
 * or more): taller inputs run as slices of this many rows. */
constexpr int64_t ROWS_PER_LAUNCH = 65535LL * 64;

extern "C" cudaError_t fmlp_cu_gemm(cudaStream_t s, const fmlp_cu_gemm_args *a, fmlp_cu_gemm_variant v)
{
    if (a->m <= 0 || a->n <= 0) return cudaSuccess;
    if (a->m > ROWS_PER_LAUNCH) {
        const int64_t es = a->dtype == FMLP_F32 ? 4 : 2;
        for (int64_t r = 0; r < a->m; r += ROWS_PER_LAUNCH) {
            fmlp_cu_gemm_args part = *a;
            part.m = a->m - r < ROWS_PER_LAUNCH ? a->m - r : ROWS_PER_LAUNCH;
            part.x = static_cast<const char *>(a->x) + r * a->ldx * es;
            part.out = static_cast<char *>(a->out) + r * a->ldo * es;
            const cudaError_t e = fmlp_cu_gemm(s, &part, v);
            if (e != cudaSuccess) return e;
        }
        return cudaSuccess;
    }
    if (a->dtype == FMLP_F32) v = FMLP_CU_GEMM_SIMT;
    if (v == FMLP_CU_GEMM_WGMMA) return fmlp_cu_gemm_wgmma(s, a);
    if (v == FMLP_CU_GEMM_STREAM) return fmlp_cu_gemm_stream(s, a);
    const gemm_entry &e = entry_for(a, v);
    void *args[] = {(void *)a};
    switch (v) {
    case FMLP_CU_GEMM_TILE64: {
        constexpr int smem = tile_smem_bytes<64, 64>();
        return cudaLaunchKernel(e.fn, dim3((unsigned)((a->nw + 63) / 64), (unsigned)((a->m + 63) / 64)), dim3(128),
                                args, smem, s);
    }
    case FMLP_CU_GEMM_TILE128: {
        constexpr int smem = tile_smem_bytes<128, 128>();
        cudaError_t err = cudaFuncSetAttribute(e.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (err != cudaSuccess) return err;
        return cudaLaunchKernel(e.fn, dim3((unsigned)((a->nw + 127) / 128), (unsigned)((a->m + 127) / 128)),
                                dim3(256), args, smem, s);
    }
    default:
        return cudaLaunchKernel(e.fn, dim3((unsigned)((a->nw + SIMT_T - 1) / SIMT_T), (unsigned)((a->m + SIMT_T - 1) / SIMT_T)),
                                dim3(256), args, 0, s);
    }
}
