/* Why: fused mode runs fmlp's own GEMMs, because no library GEMM applies a
 * GLU in its epilogue: gate and up come out of one pass over x and only
 * h = act(gate) * up is written. The same kernels also serve a Linear with
 * an activation epilogue (fused Linear-act stacks). Three families:
 *  - tiles (64x64, 128x128): mma.sync m16n8k16 on bf16/f16, a 4-stage
 *    cp.async pipeline, ldmatrix from padded (conflict-free) shared rows;
 *  - gemv (rows <= 64): each warp streams 16 weight rows with 16-byte loads
 *    straight into mma fragments, K split across the block's warps (a plain
 *    GEMM of one row and long K runs gemv_row.cu's row-streaming kernel);
 *  - simt: f32 (TF32 stays off) and any shape or alignment the others reject.
 * The GLU weight packing interleaves gate and up in blocks of 8 rows, so a
 * thread's accumulators hold gate and up of the same output element and the
 * epilogue needs no data exchange. */
#include "cuda/device_util.cuh"
#include "cuda/gemv_row.h"
#include "cuda/kernel_entry.cuh"
#include "cuda/kernels.h"
#include "cuda/mma_sync.cuh"
#include "cuda/pdl.cuh"
#include "cuda/smem_opt_in.cuh"

namespace {

/* ------------------------------------------------------------ PTX helpers */

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

/* The tile's outputs: bias, activation (a constant, see gemv_store_act),
 * GLU pairing of the interleaved gate and up columns. */
template <typename T, bool GLU, int BM, int BN, int WARPS_M, int WARPS_N, int ACT>
__device__ __forceinline__ void tile_store_act(const fmlp_cu_gemm_args &p,
                                               const float (&acc)[BM / WARPS_M / 16][BN / WARPS_N / 8][4], int64_t m0,
                                               int64_t n0, int wm, int wn, int lane)
{
    constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;
    constexpr int MT = WTM / 16, NT = WTN / 8;
    const int64_t m = p.m;
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
                    fmlp_store2<T>(orow + hc, fmlp_act_apply(ACT, g0) * u0, fmlp_act_apply(ACT, g1) * u1,
                                   hc + 1 < p.n, paired);
                }
            } else {
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    const int64_t col = n0 + wn * WTN + nt * 8 + 2 * tq;
                    if (col >= p.n) continue;
                    const float v0 = acc[mt][nt][half * 2] + load_bias(bias, col);
                    const float v1 = col + 1 < p.n ? acc[mt][nt][half * 2 + 1] + load_bias(bias, col + 1) : 0.0f;
                    fmlp_store2<T>(orow + col, fmlp_act_apply(ACT, v0), fmlp_act_apply(ACT, v1), col + 1 < p.n,
                                   paired);
                }
            }
        }
    }
}

#define FMLP_TILE_STORE_CASE(e, ...)                                                        \
    case e: tile_store_act<T, GLU, BM, BN, WARPS_M, WARPS_N, e>(p, acc, m0, n0, wm, wn, lane); \
        return;

template <typename T, bool GLU, int BM, int BN, int WARPS_M, int WARPS_N>
__device__ __forceinline__ void tile_store(const fmlp_cu_gemm_args &p,
                                           const float (&acc)[BM / WARPS_M / 16][BN / WARPS_N / 8][4], int64_t m0,
                                           int64_t n0, int wm, int wn, int lane)
{
    switch (p.act) { FMLP_ACT_TABLE(FMLP_TILE_STORE_CASE) }
}

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

    tile_store<T, GLU, BM, BN, WARPS_M, WARPS_N>(p, acc, m0, n0, wm, wn, lane);
}

/* ------------------------------------------------------------- small rows */

constexpr int GEMV_WARPS = 4;

/* Warp 0's outputs after the split-K sum: per 8 x rows nt, rows g and g + 8
 * of the block's 16 weight rows, x rows 2 tq and 2 tq + 1. The activation
 * is a constant here, as in the TMA tiles' epilogue, where a switch per
 * element cost a fifth of their speed. */
template <typename T, bool GLU, int NT, int ACT>
__device__ __forceinline__ void gemv_store_act(const fmlp_cu_gemm_args &p, const float (&acc)[NT][4], int64_t r0,
                                               int64_t r1, int g, int tq)
{
    T *out = static_cast<T *>(p.out);
    const T *bias = static_cast<const T *>(p.b);
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int64_t xr = nt * 8 + 2 * tq + j;
            if (xr >= p.m) continue;
            if (GLU) {
                const int64_t hc = (int64_t)blockIdx.x * 8 + g;
                if (hc >= p.n) continue;
                const float gv = acc[nt][j] + load_bias(bias, r0);
                const float uv = acc[nt][2 + j] + load_bias(bias, r1);
                out[xr * p.ldo + hc] = fmlp_from_f32<T>(fmlp_act_apply(ACT, gv) * uv);
            } else {
                if (r0 < p.n)
                    out[xr * p.ldo + r0] = fmlp_from_f32<T>(fmlp_act_apply(ACT, acc[nt][j] + load_bias(bias, r0)));
                if (r1 < p.n)
                    out[xr * p.ldo + r1] = fmlp_from_f32<T>(fmlp_act_apply(ACT, acc[nt][2 + j] + load_bias(bias, r1)));
            }
        }
    }
}

#define FMLP_GEMV_STORE_CASE(e, ...)                           \
    case e: gemv_store_act<T, GLU, NT, e>(p, acc, r0, r1, g, tq); \
        return;

template <typename T, bool GLU, int NT>
__device__ __forceinline__ void gemv_store(const fmlp_cu_gemm_args &p, const float (&acc)[NT][4], int64_t r0,
                                           int64_t r1, int g, int tq)
{
    switch (p.act) { FMLP_ACT_TABLE(FMLP_GEMV_STORE_CASE) }
}

/* A cluster of blocks along grid.y splits K between them (cc 9.x); rank 0
 * adds the others' sums from their shared memory, in rank order, so every
 * run gives the same bits. */
__device__ __forceinline__ void cluster_sync_all()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ float cluster_load(const float *local, unsigned rank)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t remote;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
                 : "=r"(remote)
                 : "r"((uint32_t)__cvta_generic_to_shared(local)), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
    return v;
#else
    (void)rank;
    return *local;
#endif
}

/* One batch of a warp's chunks: U chunks from c0, GEMV_WARPS apart. The
 * weights are loaded first; a PDL launch's first batch (WAIT) then waits
 * for the kernel before, and x is read only after. Every other batch is
 * plain loads and mma, with no wait or branch among them to keep the x
 * loads from being issued together. */
template <typename T, int NT, int U, bool PDL, bool WAIT>
__device__ __forceinline__ void gemv_batch(const fmlp_cu_gemm_args &p, int64_t c0, int64_t cend, int64_t r0,
                                           int64_t r1, int g, int tq, float (&acc)[NT][4])
{
    const T *x = static_cast<const T *>(p.x);
    const T *w = static_cast<const T *>(p.w);
    const int64_t k = p.k;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    uint4 wa[U], wb[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int64_t c = c0 + (int64_t)u * GEMV_WARPS, kk = c * 32 + tq * 8;
        const bool in = c < cend && kk < k;
        wa[u] = in && r0 < p.nw ? __ldg(reinterpret_cast<const uint4 *>(w + r0 * k + kk)) : zero;
        wb[u] = in && r1 < p.nw ? __ldg(reinterpret_cast<const uint4 *>(w + r1 * k + kk)) : zero;
    }
    if (WAIT) pdl_wait();
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int64_t c = c0 + (int64_t)u * GEMV_WARPS, kk = c * 32 + tq * 8;
        const bool in = c < cend && kk < k;
        const uint32_t a0[4] = {wa[u].x, wb[u].x, wa[u].y, wb[u].y};
        const uint32_t a1[4] = {wa[u].z, wb[u].z, wa[u].w, wb[u].w};
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const int64_t xr = nt * 8 + g;
            const T *xp = x + xr * p.ldx + kk;
            const uint4 xv = !(in && xr < p.m) ? zero
                             : PDL             ? ld_after_wait(xp)
                                               : __ldg(reinterpret_cast<const uint4 *>(xp));
            mma16816<T>(acc[nt], a0, xv.x, xv.y);
            mma16816<T>(acc[nt], a1, xv.z, xv.w);
        }
    }
}

/* One block owns 16 weight rows; its warps split its share of K (all of K,
 * or 1/gridDim.y of it in a split-K cluster) in 32-element chunks.
 * A lane loads 8 consecutive k of weight rows g and g+8 and of x row g: the
 * mma's k order is a permutation of the chunk, the same for A and B, so the
 * sum is unchanged and every load is 16 bytes. The PDL variant is a kernel
 * of its own (suffix _pdl): a wait and a choice of load inside the
 * streaming loop cost the Llama-3-8B gate/up gemv a quarter of its speed
 * at 1 row and half at 16 (bench/results/h200_one_kernel_2026-12-01.md). */
template <typename T, bool GLU, int NT, bool PDL>
__device__ __forceinline__ void gemv_body(const fmlp_cu_gemm_args &p)
{
    constexpr int U = NT >= 8 ? 2 : (NT >= 4 ? 4 : 8);
    __shared__ float red[GEMV_WARPS - 1][NT * 4][32];
    __shared__ float part[NT * 4][32];
    if (PDL) pdl_launch_dependents();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, tq = lane & 3;
    const int64_t r0 = (int64_t)blockIdx.x * 16 + g, r1 = r0 + 8;
    const int64_t nchunks = (p.k + 31) / 32;
    const int64_t per = (nchunks + gridDim.y - 1) / gridDim.y;
    const int64_t cbeg = (int64_t)blockIdx.y * per;
    const int64_t cend = cbeg + per < nchunks ? cbeg + per : nchunks;

    float acc[NT][4];
#pragma unroll
    for (int i = 0; i < NT; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) acc[i][e] = 0.0f;

    /* Keeping more in flight with a ring refilled per chunk needed twice
     * the registers and was slower at the tutorial's shape
     * (bench/results/h200_small_rows_2026-12-01.md). */
    constexpr int64_t step = (int64_t)GEMV_WARPS * U;
    int64_t c0 = cbeg + warp;
    if (PDL) {
        gemv_batch<T, NT, U, true, true>(p, c0, cend, r0, r1, g, tq, acc);
        c0 += step;
    }
    for (; c0 < cend; c0 += step) gemv_batch<T, NT, U, PDL, false>(p, c0, cend, r0, r1, g, tq, acc);

    if (warp > 0) {
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) red[warp - 1][nt * 4 + e][lane] = acc[nt][e];
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int i = 0; i < GEMV_WARPS - 1; i++)
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[nt][e] += red[i][nt * 4 + e][lane];
    }
    if (gridDim.y > 1) {
        if (warp == 0)
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) part[nt * 4 + e][lane] = acc[nt][e];
        cluster_sync_all();
        if (blockIdx.y == 0 && warp == 0)
            for (unsigned r = 1; r < gridDim.y; r++)
#pragma unroll
                for (int nt = 0; nt < NT; nt++)
#pragma unroll
                    for (int e = 0; e < 4; e++) acc[nt][e] += cluster_load(&part[nt * 4 + e][lane], r);
        /* the other blocks' shared memory must outlive rank 0's reads */
        cluster_sync_all();
    }
    if (warp > 0 || blockIdx.y > 0) return;
    gemv_store<T, GLU, NT>(p, acc, r0, r1, g, tq);
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
#define FMLP_GEMV_K(NAME, T, GLU, NT)                                                                          \
    extern "C" __global__ void __launch_bounds__(GEMV_WARPS * 32) NAME(const fmlp_cu_gemm_args p)              \
    {                                                                                                          \
        gemv_body<T, GLU, NT, false>(p);                                                                       \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(GEMV_WARPS * 32) NAME##_pdl(const fmlp_cu_gemm_args p)        \
    {                                                                                                          \
        gemv_body<T, GLU, NT, true>(p);                                                                        \
    }
#define FMLP_SIMT_K(NAME, T, GLU)                                                                              \
    extern "C" __global__ void __launch_bounds__(256) NAME(const fmlp_cu_gemm_args p) { simt_body<T, GLU>(p); }

#define FMLP_GEMM_FAMILY(DT, T, GLU, PREFIX)                                    \
    FMLP_TILE_K(PREFIX##_##DT##_64x64, T, GLU, 64, 64, 2, 2)                    \
    FMLP_TILE_K(PREFIX##_##DT##_128x128, T, GLU, 128, 128, 2, 4)                \
    FMLP_GEMV_K(PREFIX##_##DT##_gemv8, T, GLU, 1)                               \
    FMLP_GEMV_K(PREFIX##_##DT##_gemv16, T, GLU, 2)                              \
    FMLP_GEMV_K(PREFIX##_##DT##_gemv32, T, GLU, 4)                              \
    FMLP_GEMV_K(PREFIX##_##DT##_gemv64, T, GLU, 8)                              \
    FMLP_SIMT_K(PREFIX##_##DT##_simt, T, GLU)

FMLP_GEMM_FAMILY(bf16, __nv_bfloat16, true, fmlp_gemm_glu)
FMLP_GEMM_FAMILY(bf16, __nv_bfloat16, false, fmlp_gemm)
FMLP_GEMM_FAMILY(f16, __half, true, fmlp_gemm_glu)
FMLP_GEMM_FAMILY(f16, __half, false, fmlp_gemm)
FMLP_SIMT_K(fmlp_gemm_glu_f32_simt, float, true)
FMLP_SIMT_K(fmlp_gemm_f32_simt, float, false)

namespace {

#define FMLP_GE(NAME) FMLP_KERNEL_ENTRY(NAME)
#define FMLP_GE_ROW(PREFIX, DT)                                                                                 \
    {FMLP_GE(PREFIX##_##DT##_simt), FMLP_GE(PREFIX##_##DT##_gemv8), FMLP_GE(PREFIX##_##DT##_gemv16),           \
     FMLP_GE(PREFIX##_##DT##_gemv32), FMLP_GE(PREFIX##_##DT##_gemv64), FMLP_GE(PREFIX##_##DT##_64x64),         \
     FMLP_GE(PREFIX##_##DT##_128x128)}

/* [dtype bf16/f16][glu][simt, gemv8..gemv64, 64x64, 128x128] */
const fmlp_kernel_entry gemm_table[2][2][7] = {
    {FMLP_GE_ROW(fmlp_gemm, bf16), FMLP_GE_ROW(fmlp_gemm_glu, bf16)},
    {FMLP_GE_ROW(fmlp_gemm, f16), FMLP_GE_ROW(fmlp_gemm_glu, f16)},
};
const fmlp_kernel_entry simt_f32[2] = {FMLP_GE(fmlp_gemm_f32_simt), FMLP_GE(fmlp_gemm_glu_f32_simt)};

#define FMLP_GEMV_PDL_ROW(PREFIX, DT)                                                                        \
    {(const void *)PREFIX##_##DT##_gemv8_pdl, (const void *)PREFIX##_##DT##_gemv16_pdl,                      \
     (const void *)PREFIX##_##DT##_gemv32_pdl, (const void *)PREFIX##_##DT##_gemv64_pdl}
/* The PDL gemvs, [dtype bf16/f16][glu][gemv8..gemv64]. The plan names the
 * plain kernel: PDL is off while a profiler records. */
const void *const gemv_pdl_table[2][2][4] = {
    {FMLP_GEMV_PDL_ROW(fmlp_gemm, bf16), FMLP_GEMV_PDL_ROW(fmlp_gemm_glu, bf16)},
    {FMLP_GEMV_PDL_ROW(fmlp_gemm, f16), FMLP_GEMV_PDL_ROW(fmlp_gemm_glu, f16)},
};

int gemv_slot(int64_t m) { return m <= 8 ? 1 : m <= 16 ? 2 : m <= 32 ? 3 : 4; }

/* K is split over a cluster only where the weight rows alone give fewer
 * than two blocks per SM (the 768-wide down projection: 48 blocks), and
 * only so far that each warp keeps two chunks to stream. */
int gemv_split(const fmlp_cu_gemm_args *a)
{
    if (a->cc_major < 9) return 1;
    if (a->split > 0) return a->split > 8 ? 8 : a->split;
    const int64_t blocks = (a->nw + 15) / 16, target = 2 * (int64_t)(a->sm_count > 0 ? a->sm_count : 132);
    const int64_t most = ((a->k + 31) / 32) / (2 * GEMV_WARPS);
    int64_t s = (target + blocks - 1) / blocks;
    if (s > most) s = most;
    if (s > 8) s = 8;
    return s < 1 ? 1 : (int)s;
}

cudaError_t gemv_launch(cudaStream_t s, const fmlp_cu_gemm_args *a, const void *fn)
{
    const unsigned split = (unsigned)gemv_split(a);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)((a->nw + 15) / 16), split);
    cfg.blockDim = dim3(GEMV_WARPS * 32);
    cfg.stream = s;
    cudaLaunchAttribute attr[2];
    unsigned n = 0;
    if (split > 1) {
        attr[n].id = cudaLaunchAttributeClusterDimension;
        attr[n].val.clusterDim.x = 1;
        attr[n].val.clusterDim.y = split;
        attr[n].val.clusterDim.z = 1;
        n++;
    }
    if (a->pdl && a->cc_major >= 9) {
        attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[n].val.programmaticStreamSerializationAllowed = 1;
        n++;
    }
    cfg.attrs = attr;
    cfg.numAttrs = n;
    void *args[] = {(void *)a};
    return cudaLaunchKernelExC(&cfg, fn, args);
}

const fmlp_kernel_entry &entry_for(const fmlp_cu_gemm_args *a, fmlp_cu_gemm_variant v)
{
    if (a->dtype == FMLP_F32) return simt_f32[a->glu ? 1 : 0];
    const fmlp_kernel_entry *row = gemm_table[a->dtype == FMLP_F16 ? 1 : 0][a->glu ? 1 : 0];
    switch (v) {
    case FMLP_CU_GEMM_GEMV: return row[gemv_slot(a->m)];
    case FMLP_CU_GEMM_TILE64: return row[5];
    case FMLP_CU_GEMM_TILE128: return row[6];
    default: return row[0];
    }
}

} // namespace

extern "C" fmlp_cu_gemm_variant fmlp_cu_gemm_pick(const fmlp_cu_gemm_args *a, int sm_count, int cc_major)
{
    if (a->dtype == FMLP_F32 || a->k % 8) return FMLP_CU_GEMM_SIMT;
    if (a->x && (((uintptr_t)a->x & 15) || a->ldx % 8)) return FMLP_CU_GEMM_SIMT;
    /* On Hopper the TMA-fed tiles overtake the gemv above 32 rows (measured). */
    const bool hopper = cc_major == 9 && fmlp_cu_gemm_wgmma_ready();
    /* A plain GEMM at one row streams faster as whole row segments per warp
     * (gemv_row.cu). A GLU GEMM stays on the mma gemv: standalone the row
     * kernel was faster (Llama-3-8B gate/up: 64 against 71 us), but in the
     * forward the mma gemv's PDL launch overlaps the tail of cuBLASLt's down
     * GEMM before it, and the forward was faster that way (92.3 against
     * 93.6 us; bench/results/h200_row_gemv_2026-12-02.md). */
    if (cc_major >= 9 && !a->glu && fmlp_cu_gemv_row_applies(a)) return FMLP_CU_GEMM_GEMV_ROW;
    if (a->m <= (hopper ? 32 : 64)) return FMLP_CU_GEMM_GEMV;
    if (hopper) return FMLP_CU_GEMM_WGMMA;
    const int64_t big = ((a->m + 127) / 128) * ((a->nw + 127) / 128);
    return big >= 2 * (int64_t)sm_count ? FMLP_CU_GEMM_TILE128 : FMLP_CU_GEMM_TILE64;
}

extern "C" const char *fmlp_cu_gemm_name(const fmlp_cu_gemm_args *a, fmlp_cu_gemm_variant v)
{
    if (v == FMLP_CU_GEMM_WGMMA && a->dtype != FMLP_F32) return fmlp_cu_gemm_wgmma_name(a);
    if (v == FMLP_CU_GEMM_GEMV_ROW) {
        if (fmlp_cu_gemv_row_applies(a)) return fmlp_cu_gemv_row_name(a);
        v = FMLP_CU_GEMM_GEMV;
    }
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
    if (v == FMLP_CU_GEMM_GEMV_ROW) {
        if (fmlp_cu_gemv_row_applies(a)) return fmlp_cu_gemv_row(s, a);
        v = FMLP_CU_GEMM_GEMV;
    }
    const fmlp_kernel_entry &e = entry_for(a, v);
    void *args[] = {(void *)a};
    switch (v) {
    case FMLP_CU_GEMM_GEMV: {
        const bool pdl = a->pdl && a->cc_major >= 9;
        return gemv_launch(s, a, pdl ? gemv_pdl_table[a->dtype == FMLP_F16 ? 1 : 0][a->glu ? 1 : 0][gemv_slot(a->m) - 1] : e.fn);
    }
    case FMLP_CU_GEMM_TILE64: {
        constexpr int smem = tile_smem_bytes<64, 64>();
        return cudaLaunchKernel(e.fn, dim3((unsigned)((a->nw + 63) / 64), (unsigned)((a->m + 63) / 64)), dim3(128),
                                args, smem, s);
    }
    case FMLP_CU_GEMM_TILE128: {
        constexpr int smem = tile_smem_bytes<128, 128>();
        cudaError_t err = fmlp_smem_opt_in(e.fn, smem);
        if (err != cudaSuccess) return err;
        return cudaLaunchKernel(e.fn, dim3((unsigned)((a->nw + 127) / 128), (unsigned)((a->m + 127) / 128)),
                                dim3(256), args, smem, s);
    }
    default:
        return cudaLaunchKernel(e.fn, dim3((unsigned)((a->nw + SIMT_T - 1) / SIMT_T), (unsigned)((a->m + SIMT_T - 1) / SIMT_T)),
                                dim3(256), args, 0, s);
    }
}
