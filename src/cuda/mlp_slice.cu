/* Why: at one row a small gated MLP's forward is a read of its weights
 * plus whatever the dependency between its two GEMMs costs. The other
 * one-kernel forms pass h between SMs through L2 behind a grid-wide
 * barrier; this one cuts the MLP by hidden column instead: block b owns a
 * share of the hidden columns, computes their h from its own gate and up
 * rows and multiplies them straight into the down projection's rows for
 * those columns (a copy of the down weights stored transposed at upload,
 * hidden-major, so a block's rows are contiguous). h never leaves the SM;
 * what crosses SMs is each block's partial output row, stored, then one
 * grid-wide barrier, then block b adds all blocks' partials of its few
 * outputs in block order (the same bits every run).
 *
 * Every weight load of a block is issued at entry (at most 32 hidden
 * columns a block, dim and out at most 1024). The default at one row where
 * it fits (FMLP_CUDA_SLICE=0: off): 0.7 us under the `_smem` kernel
 * L2-warm on the H100 as fused + graph
 * (bench/results/h100_slice_default_2026-12-06.md). */
#include <cooperative_groups.h>

#include "cuda/device_util.cuh"
#include "cuda/kernel_entry.cuh"
#include "cuda/kernels.h"
#include "cuda/mlp_grid.cuh"
#include "cuda/row_dot.cuh"

namespace cg = cooperative_groups;

namespace {

constexpr int SL_THREADS = 512, SL_WARPS = SL_THREADS / 32;
/* blocks a lane's partials cover when the owner adds them (SMs <= 160) */
constexpr int SL_SPREAD = 5;
constexpr int SL_MAX_BLOCKS = 32 * SL_SPREAD;
constexpr int SL_MAX_COLS = 32, SL_MAX_OUT = 1024;

/* 8 weights or x values as f32, in element order. */
template <typename T> __device__ __forceinline__ void to_f32x8(uint4 w, float (&f)[8])
{
    const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 v = fmlp_pair_f32<T>(u[i]);
        f[2 * i] = v.x;
        f[2 * i + 1] = v.y;
    }
}

/* What the kernel needs, worked out on the host: every division and
 * 64-bit product a block would otherwise do before its first load (a
 * block's warps issue their loads only after their address arithmetic,
 * and 16 warps share 4 schedulers, so each instruction there delays the
 * stream; with the shares computed in the kernel the first load came
 * after ~270 instructions, ~1 us later at one row). */
struct slice_params {
    const void *x, *wgu, *wdt, *bgu, *bd;
    void *y;
    float *part;           /* [blocks][out] */
    int dim, out;          /* multiples of 8 */
    int jbase, jrem;       /* block b owns jbase + (b < jrem) hidden columns */
    int obase, orem;       /* and adds up obase + (b < orem) outputs after the barrier */
    int rg_n;              /* thread groups splitting the down rows: SL_THREADS / (out / 8) */
    float inv_ncol;        /* 1 / (out / 8), for tid / ncol without a division */
    int act;
};

/* WPL: 16-byte words of x a lane holds (dim <= 256 WPL); JMAX: the most
 * hidden columns a block owns. */
template <typename T, int WPL, int JMAX> __device__ __forceinline__ void slice_body(const slice_params &p)
{
    constexpr int RPW = 2 * JMAX / SL_WARPS; /* gate/up rows a warp takes */
    constexpr int RPG = JMAX / 4;            /* down rows a thread takes: out <= 1024 gives >= 4 groups */
    __shared__ float dots[2 * JMAX];
    __shared__ float hs[JMAX];
    __shared__ float red[SL_THREADS * 8];

    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, b = blockIdx.x;
    const unsigned kv = (unsigned)p.dim >> 3, ncol = (unsigned)p.out >> 3, out = (unsigned)p.out;
    const unsigned nj = p.jbase + (b < (unsigned)p.jrem), j0 = b * p.jbase + min(b, (unsigned)p.jrem);
    const uint4 zero = make_uint4(0, 0, 0, 0);

    /* every load at entry: x, the gate/up rows r = warp + 16 q of the
     * block's 2 nj (hidden column j0 + r / 2, gate for even r), the down
     * rows rg + rg_n q; offsets in 16-byte words fit 32 bits */
    const uint4 *x4 = static_cast<const uint4 *>(p.x);
    const uint4 *wgu4 = static_cast<const uint4 *>(p.wgu), *wdt4 = static_cast<const uint4 *>(p.wdt);
    uint4 xv[WPL], wg[RPW][WPL], wd[RPG];
#pragma unroll
    for (int t = 0; t < WPL; t++) xv[t] = lane + 32 * t < kv ? __ldg(x4 + lane + 32 * t) : zero;
#pragma unroll
    for (int q = 0; q < RPW; q++) {
        const unsigned r = warp + SL_WARPS * q, j = j0 + (r >> 1);
        const uint4 *src = wgu4 + ((j >> 3) * 16 + (r & 1) * 8 + (j & 7)) * kv;
#pragma unroll
        for (int t = 0; t < WPL; t++) wg[q][t] = r < 2 * nj && lane + 32 * t < kv ? __ldg(src + lane + 32 * t) : zero;
    }
    const unsigned rg = (unsigned)__float2int_rz(((float)tid + 0.5f) * p.inv_ncol), col = tid - rg * ncol;
    const unsigned rg_n = p.rg_n;
#pragma unroll
    for (int q = 0; q < RPG; q++) {
        const unsigned jj = rg + rg_n * q;
        wd[q] = rg < rg_n && jj < nj ? __ldg(wdt4 + (j0 + jj) * ncol + col) : zero;
    }
    const T *bgu = static_cast<const T *>(p.bgu);
    float bg = 0.0f, bu = 0.0f;
    if (tid < nj && bgu) {
        const unsigned j = j0 + tid;
        bg = fmlp_to_f32(bgu[(j >> 3) * 16 + (j & 7)]);
        bu = fmlp_to_f32(bgu[(j >> 3) * 16 + 8 + (j & 7)]);
    }

    /* gate and up: a warp sum per row; h rounded to T as the two-kernel plan stores it */
    float xf[WPL][8];
#pragma unroll
    for (int t = 0; t < WPL; t++) to_f32x8<T>(xv[t], xf[t]);
    float s[RPW];
#pragma unroll
    for (int q = 0; q < RPW; q++) {
        s[q] = 0.0f;
#pragma unroll
        for (int t = 0; t < WPL; t++) {
            float wf[8];
            to_f32x8<T>(wg[q][t], wf);
#pragma unroll
            for (int i = 0; i < 8; i++) s[q] = fmaf(wf[i], xf[t][i], s[q]);
        }
    }
#pragma unroll
    for (int o = 16; o; o >>= 1)
#pragma unroll
        for (int q = 0; q < RPW; q++) s[q] += __shfl_xor_sync(0xffffffffu, s[q], o);
    if (lane == 0)
#pragma unroll
        for (int q = 0; q < RPW; q++) dots[warp + SL_WARPS * q] = s[q];
    __syncthreads();
    if (tid < nj)
        hs[tid] = fmlp_to_f32(fmlp_from_f32<T>(fmlp_act_fast(p.act, dots[2 * tid] + bg) * (dots[2 * tid + 1] + bu)));
    __syncthreads();

    /* down: this thread's 8 outputs over its rows; the block's partial
     * output row, its row groups added in order, straight to the workspace */
    if (rg < rg_n) {
        float acc[8] = {};
#pragma unroll
        for (int q = 0; q < RPG; q++) {
            const unsigned jj = rg + rg_n * q;
            const float h = jj < nj ? hs[jj] : 0.0f;
            float wf[8];
            to_f32x8<T>(wd[q], wf);
#pragma unroll
            for (int i = 0; i < 8; i++) acc[i] = fmaf(h, wf[i], acc[i]);
        }
#pragma unroll
        for (int i = 0; i < 8; i++) red[rg * out + col * 8 + i] = acc[i];
    }
    __syncthreads();
    for (unsigned o = tid; o < out; o += SL_THREADS) {
        float v = 0.0f;
        for (unsigned g = 0; g < rg_n; g++) v += red[g * out + o];
        p.part[b * out + o] = v;
    }

    /* the crossing: one grid barrier; block b owns outputs [o0, o0 + no),
     * a warp an output, a lane the partials of blocks lane + 32 i, added
     * in i order, then across the warp in a fixed tree */
    cg::this_grid().sync();
    const unsigned G = gridDim.x, no = p.obase + (b < (unsigned)p.orem), o0 = b * p.obase + min(b, (unsigned)p.orem);
    const T *bd = static_cast<const T *>(p.bd);
    T *y = static_cast<T *>(p.y);
    for (unsigned o = o0 + warp; o < o0 + no; o += SL_WARPS) {
        float part[SL_SPREAD];
#pragma unroll
        for (int i = 0; i < SL_SPREAD; i++) {
            const unsigned c = lane + 32 * i;
            part[i] = c < G ? __ldcg(p.part + c * out + o) : 0.0f;
        }
        float v = 0.0f;
#pragma unroll
        for (int i = 0; i < SL_SPREAD; i++) v += part[i];
#pragma unroll
        for (int d = 16; d; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
        if (lane == 0) y[o] = fmlp_from_f32<T>(v + (bd ? fmlp_to_f32(bd[o]) : 0.0f));
    }
}

} // namespace

#define FMLP_SLICE_K(NAME, T, WPL, JMAX)                                                                       \
    extern "C" __global__ void __launch_bounds__(SL_THREADS, 1) NAME(const slice_params p)                \
    {                                                                                                          \
        slice_body<T, WPL, JMAX>(p);                                                                           \
    }
#define FMLP_SLICE_DT(DT, T)                                                                                   \
    FMLP_SLICE_K(fmlp_mlp_glu_##DT##_onekernel1_slice256x24, T, 1, 24)                                         \
    FMLP_SLICE_K(fmlp_mlp_glu_##DT##_onekernel1_slice512x24, T, 2, 24)                                         \
    FMLP_SLICE_K(fmlp_mlp_glu_##DT##_onekernel1_slice768x24, T, 3, 24)                                         \
    FMLP_SLICE_K(fmlp_mlp_glu_##DT##_onekernel1_slice1024x24, T, 4, 24)                                        \
    FMLP_SLICE_K(fmlp_mlp_glu_##DT##_onekernel1_slice256x32, T, 1, 32)                                         \
    FMLP_SLICE_K(fmlp_mlp_glu_##DT##_onekernel1_slice512x32, T, 2, 32)                                         \
    FMLP_SLICE_K(fmlp_mlp_glu_##DT##_onekernel1_slice768x32, T, 3, 32)                                         \
    FMLP_SLICE_K(fmlp_mlp_glu_##DT##_onekernel1_slice1024x32, T, 4, 32)
FMLP_SLICE_DT(bf16, __nv_bfloat16)
FMLP_SLICE_DT(f16, __half)

namespace {

#define FMLP_SLICE_ROW(DT)                                                                                     \
    {{FMLP_KERNEL_ENTRY(fmlp_mlp_glu_##DT##_onekernel1_slice256x24),                                           \
      FMLP_KERNEL_ENTRY(fmlp_mlp_glu_##DT##_onekernel1_slice512x24),                                           \
      FMLP_KERNEL_ENTRY(fmlp_mlp_glu_##DT##_onekernel1_slice768x24),                                           \
      FMLP_KERNEL_ENTRY(fmlp_mlp_glu_##DT##_onekernel1_slice1024x24)},                                         \
     {FMLP_KERNEL_ENTRY(fmlp_mlp_glu_##DT##_onekernel1_slice256x32),                                           \
      FMLP_KERNEL_ENTRY(fmlp_mlp_glu_##DT##_onekernel1_slice512x32),                                           \
      FMLP_KERNEL_ENTRY(fmlp_mlp_glu_##DT##_onekernel1_slice768x32),                                           \
      FMLP_KERNEL_ENTRY(fmlp_mlp_glu_##DT##_onekernel1_slice1024x32)}}
/* [bf16, f16][columns a block <= 24, <= 32][dim <= 256, 512, 768, 1024] */
const fmlp_kernel_entry slice_table[2][2][4] = {FMLP_SLICE_ROW(bf16), FMLP_SLICE_ROW(f16)};

const fmlp_kernel_entry &slice_for(const fmlp_cu_mlp_args *a)
{
    const int64_t g = fmlp_grid_blocks(a), cols = (a->hidden + g - 1) / g;
    return slice_table[a->dtype == FMLP_F16 ? 1 : 0][cols <= 24 ? 0 : 1][(a->dim + 255) / 256 - 1];
}

} // namespace

extern "C" bool fmlp_cu_slice_down_fits(int dtype, int cc_major, int sm_count, int64_t out, int64_t hidden)
{
    if (dtype != FMLP_BF16 && dtype != FMLP_F16) return false;
    const int64_t g = sm_count > 0 ? sm_count : 132;
    if (cc_major < 9 || g > SL_MAX_BLOCKS) return false;
    return out >= 8 && out <= SL_MAX_OUT && out % 8 == 0 && hidden >= 8 && hidden % 8 == 0 &&
           (hidden + g - 1) / g <= SL_MAX_COLS;
}

extern "C" bool fmlp_cu_mlp_slice_fits(const fmlp_cu_mlp_args *a)
{
    if (!a->slice || a->m != 1 || !fmlp_grid_stream_shape(a)) return false;
    if (a->dim > SL_MAX_OUT) return false;
    return fmlp_cu_slice_down_fits(a->dtype, a->cc_major, a->sm_count, a->out, a->hidden);
}

extern "C" size_t fmlp_cu_mlp_slice_scratch(const fmlp_cu_mlp_args *a)
{
    return (size_t)(fmlp_grid_blocks(a) * a->out) * sizeof(float);
}

extern "C" const char *fmlp_cu_mlp_slice_name(const fmlp_cu_mlp_args *a) { return slice_for(a).name; }

extern "C" cudaError_t fmlp_cu_mlp_slice(cudaStream_t s, const fmlp_cu_mlp_args *a)
{
    if (!a->wdt) return cudaErrorInvalidValue;
    const int64_t G = fmlp_grid_blocks(a), ncol = a->out / 8;
    slice_params p = {};
    p.x = a->x;
    p.wgu = a->wgu;
    p.wdt = a->wdt;
    p.bgu = a->bgu;
    p.bd = a->bd;
    p.y = a->y;
    p.part = static_cast<float *>(a->scratch);
    p.dim = (int)a->dim;
    p.out = (int)a->out;
    p.jbase = (int)(a->hidden / G);
    p.jrem = (int)(a->hidden % G);
    p.obase = (int)(a->out / G);
    p.orem = (int)(a->out % G);
    p.rg_n = (int)(SL_THREADS / ncol);
    p.inv_ncol = 1.0f / (float)ncol;
    p.act = a->act;
    return fmlp_grid_launch_on(s, slice_for(a).fn, &p, G, SL_THREADS, 0);
}
