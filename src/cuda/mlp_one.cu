/* Why: at a few rows the fused forward is two dependent launches that each
 * stream their weights, and the GPU idles across the launch boundary and
 * the first kernel's tail. This kernel runs a whole gated MLP in one
 * cooperative launch, one block per SM: every warp issues the loads of its
 * gate/up weights and of its first down weights at entry, so all SMs stream
 * from the start; h goes to the workspace (it stays in L2), one grid-wide
 * barrier separates the two GEMMs, and the down projection is split over K
 * into pieces whose partial sums the last team of each output group adds in
 * piece order (the same bits on every run, no atomics on the data).
 *
 * Work is done by teams of 4 warps that own 16 weight rows (one mma.sync
 * A tile; 8 hidden columns of the interleaved gate/up packing) and split
 * their K chunks (32 elements) between them, as gemm.cu's gemv does.
 *
 * Where the down projection has at most one group of 16 outputs per SM and
 * a group's weights fit in shared memory (the tutorial's 768 outputs: 48
 * groups of 96 KB), those SMs copy their group into shared memory at entry
 * (cp.async, laid out as the mma fragments) and take less of the gate/up
 * work; after the barrier they only read h and sum over their 16 warps, so
 * no partial sums cross SMs (the "_smem" kernels). */
#include <cooperative_groups.h>

#include "cuda/device_util.cuh"
#include "cuda/kernel_entry.cuh"
#include "cuda/kernels.h"
#include "cuda/mlp_grid.cuh"
#include "cuda/mma_sync.cuh"

namespace cg = cooperative_groups;

namespace {

constexpr int ONE_WARPS = 16, ONE_TEAM = 4, ONE_TEAMS = ONE_WARPS / ONE_TEAM;
/* K chunks each warp has in flight: the tutorial's gate/up share (768 / 32 /
 * 4 warps) and its down share (3072 / 32 / 11 pieces / 4 warps) in one go. */
constexpr int ONE_UA = 6, ONE_UB = 3;

__device__ __forceinline__ void cp_async_wait_all()
{
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
}

/* Shared memory a resident down group may take (its K chunks x 1 KB). */
constexpr int ONE_RES_BYTES = 160 * 1024;

__device__ __forceinline__ void team_sync(int team)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(1 + team), "n"(ONE_TEAM * 32) : "memory");
}

/* The K chunks [cb, ce) of one task, split between a team's warps. */
struct span {
    int64_t cb, ce;
};

/* One weight matrix as the kernel streams it: rows of k elements, 16 rows
 * per group, x rows read from `x` (row stride ldx). mma_w's COHERENT: x was
 * written by this launch (h), so it is read through L2, never the
 * non-coherent cache. */
template <typename T> struct operand {
    const T *w;
    int64_t nw, k;
    const T *x;
    int64_t ldx;
};

template <typename T, int U>
__device__ __forceinline__ void load_w(const operand<T> &o, int64_t group, int64_t c0, int64_t ce, int tq, int g,
                                       uint4 (&wa)[U], uint4 (&wb)[U])
{
    const int64_t r0 = group * 16 + g, r1 = r0 + 8;
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int64_t c = c0 + (int64_t)u * ONE_TEAM, kk = c * 32 + tq * 8;
        const bool in = c < ce && kk < o.k;
        wa[u] = in && r0 < o.nw ? __ldg(reinterpret_cast<const uint4 *>(o.w + r0 * o.k + kk)) : zero;
        wb[u] = in && r1 < o.nw ? __ldg(reinterpret_cast<const uint4 *>(o.w + r1 * o.k + kk)) : zero;
    }
}

template <typename T, int NT, int U, bool COHERENT>
__device__ __forceinline__ void mma_w(const operand<T> &o, int64_t m, int64_t c0, int64_t ce, int tq, int g,
                                      const uint4 (&wa)[U], const uint4 (&wb)[U], float (&acc)[NT][4])
{
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int64_t c = c0 + (int64_t)u * ONE_TEAM, kk = c * 32 + tq * 8;
        const bool in = c < ce && kk < o.k;
        const uint32_t a0[4] = {wa[u].x, wb[u].x, wa[u].y, wb[u].y};
        const uint32_t a1[4] = {wa[u].z, wb[u].z, wa[u].w, wb[u].w};
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const int64_t xr = nt * 8 + g;
            const uint4 *xp = reinterpret_cast<const uint4 *>(o.x + xr * o.ldx + kk);
            const uint4 xv = !(in && xr < m) ? zero : COHERENT ? __ldcg(xp) : __ldg(xp);
            mma16816<T>(acc[nt], a0, xv.x, xv.y);
            mma16816<T>(acc[nt], a1, xv.z, xv.w);
        }
    }
}

/* Adds the team's four warps' sums into warp 0 of the team. */
template <int NT>
__device__ __forceinline__ void team_reduce(float (*red)[NT * 4][32], int team, int wit, int lane, float (&acc)[NT][4])
{
    if (wit > 0)
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) red[wit - 1][nt * 4 + e][lane] = acc[nt][e];
    team_sync(team);
    if (wit == 0)
#pragma unroll
        for (int i = 0; i < ONE_TEAM - 1; i++)
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[nt][e] += red[i][nt * 4 + e][lane];
    team_sync(team); /* red is free for the team's next task */
}

template <int NT> __device__ __forceinline__ void zero_acc(float (&acc)[NT][4])
{
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) acc[nt][e] = 0.0f;
}

template <typename T> __device__ __forceinline__ float bias_at(const T *b, int64_t i)
{
    return b ? fmlp_to_f32(b[i]) : 0.0f;
}

/* A down group's outputs, bias added, from warp lane (g, tq)'s sums: rows
 * g and g + 8 of the group's 16, x rows 2 tq and 2 tq + 1 of each 8. The
 * caller passes m, bd and y as it holds them across its tasks. */
template <typename T, int NT>
__device__ __forceinline__ void store_down(const fmlp_cu_mlp_args &p, int64_t m, const T *bd, T *y,
                                           const float (&acc)[NT][4], int64_t group, int g, int tq)
{
    const int64_t r0 = group * 16 + g, r1 = r0 + 8;
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int64_t xr = nt * 8 + 2 * tq + j;
            if (xr >= m) continue;
            if (r0 < p.out) y[xr * p.ldy + r0] = fmlp_from_f32<T>(acc[nt][j] + bias_at(bd, r0));
            if (r1 < p.out) y[xr * p.ldy + r1] = fmlp_from_f32<T>(acc[nt][2 + j] + bias_at(bd, r1));
        }
}

/* The mma fragments of chunk c in a resident group: weight rows g and g+8
 * of lane (g, tq), 512 contiguous bytes each, so a warp's reads never
 * conflict. */
__device__ __forceinline__ int64_t res_frag(int64_t c, int half, int lane) { return (c * 2 + half) * 32 + lane; }

/* A resident down group: copies its weights into shared memory (all
 * threads, at entry), and after the barrier runs its 16 warps over K. */
template <typename T> __device__ __forceinline__ void res_load(const fmlp_cu_mlp_args &p, uint4 *res, int64_t group)
{
    const T *wd = static_cast<const T *>(p.wd);
    const int64_t chunks = (p.hidden + 31) / 32, frags = chunks * 64;
    for (int64_t i = threadIdx.x; i < frags; i += blockDim.x) {
        const int lane = (int)(i & 31), half = (int)((i >> 5) & 1);
        const int64_t c = i >> 6, row = group * 16 + (lane >> 2) + 8 * half, kk = c * 32 + (lane & 3) * 8;
        const bool in = row < p.out && kk < p.hidden;
        cp_async16(res + res_frag(c, half, lane), in ? wd + row * p.hidden + kk : wd, in ? 16 : 0);
    }
}

template <typename T, int NT>
__device__ __forceinline__ void res_down(const fmlp_cu_mlp_args &p, const uint4 *res, int64_t group,
                                         float (*red)[ONE_TEAM - 1][NT * 4][32], float (*red2)[NT * 4][32])
{
    constexpr int U = 6;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int team = warp / ONE_TEAM, wit = warp % ONE_TEAM;
    const int g = lane >> 2, tq = lane & 3;
    const T *h = static_cast<const T *>(p.h);
    const int64_t chunks = (p.hidden + 31) / 32;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    cp_async_wait_all();
    __syncthreads();
    float acc[NT][4];
    zero_acc<NT>(acc);
    for (int64_t c0 = warp; c0 < chunks; c0 += (int64_t)ONE_WARPS * U) {
        uint4 xv[U][NT];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t c = c0 + (int64_t)u * ONE_WARPS, kk = c * 32 + tq * 8;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                const int64_t xr = nt * 8 + g;
                xv[u][nt] = c < chunks && kk < p.hidden && xr < p.m
                                ? __ldcg(reinterpret_cast<const uint4 *>(h + xr * p.hidden + kk))
                                : zero;
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t c = c0 + (int64_t)u * ONE_WARPS;
            if (c >= chunks) break;
            const uint4 wa = res[res_frag(c, 0, lane)];
            const uint4 wb = res[res_frag(c, 1, lane)];
            const uint32_t a0[4] = {wa.x, wb.x, wa.y, wb.y};
            const uint32_t a1[4] = {wa.z, wb.z, wa.w, wb.w};
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                mma16816<T>(acc[nt], a0, xv[u][nt].x, xv[u][nt].y);
                mma16816<T>(acc[nt], a1, xv[u][nt].z, xv[u][nt].w);
            }
        }
    }
    team_reduce<NT>(red[team], team, wit, lane, acc);
    if (wit == 0 && team > 0)
#pragma unroll
        for (int e = 0; e < NT * 4; e++) red2[team - 1][e][lane] = acc[e / 4][e % 4];
    __syncthreads();
    if (warp != 0) return;
#pragma unroll
    for (int t = 0; t < ONE_TEAMS - 1; t++)
#pragma unroll
        for (int e = 0; e < NT * 4; e++) acc[e / 4][e % 4] += red2[t][e][lane];
    store_down<T, NT>(p, p.m, static_cast<const T *>(p.bd), static_cast<T *>(p.y), acc, group, g, tq);
}

template <typename T, int NT, bool RES> __device__ __forceinline__ void one_body(const fmlp_cu_mlp_args &p)
{
    __shared__ float red[ONE_TEAMS][ONE_TEAM - 1][NT * 4][32];
    __shared__ float red2[RES ? ONE_TEAMS - 1 : 1][NT * 4][32];
    extern __shared__ uint4 res[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int team = warp / ONE_TEAM, wit = warp % ONE_TEAM;
    const int g = lane >> 2, tq = lane & 3;
    const int64_t nblk = gridDim.x, teams = nblk * ONE_TEAMS;
    const int64_t m = p.m;

    const operand<T> A = {static_cast<const T *>(p.wgu), p.nwgu, p.dim, static_cast<const T *>(p.x), p.ldx};
    const operand<T> B = {static_cast<const T *>(p.wd), p.out, p.hidden, static_cast<const T *>(p.h), p.hidden};
    const int64_t groups_a = (p.nwgu + 15) / 16, chunks_a = (p.dim + 31) / 32;
    const int64_t groups_b = (p.out + 15) / 16, chunks_b = (p.hidden + 31) / 32;
    const int64_t pieces = p.pieces, tasks_b = groups_b * pieces;
    /* Resident: blocks below groups_b hold a down group each and take the
     * gate/up tasks only after every other block's teams have one. */
    const bool down_block = RES && blockIdx.x < groups_b;
    const int64_t n_up = RES ? nblk - groups_b : nblk;
    const int64_t my_team = !RES          ? (int64_t)team * nblk + blockIdx.x
                            : !down_block ? (int64_t)team * n_up + (blockIdx.x - groups_b)
                                          : n_up * ONE_TEAMS + (int64_t)team * groups_b + blockIdx.x;

    /* The first down task's first weights, in flight while the gate/up work runs. */
    uint4 pa[ONE_UB], pb[ONE_UB];
    span s0 = {0, 0};
    int64_t group0 = 0;
    if (RES) {
        if (down_block) res_load<T>(p, res, blockIdx.x);
    } else if (my_team < tasks_b) {
        group0 = my_team / pieces;
        const int64_t piece = my_team % pieces;
        s0 = {piece * chunks_b / pieces, (piece + 1) * chunks_b / pieces};
    }
    if (!RES) load_w<T, ONE_UB>(B, group0, s0.cb + wit, s0.ce, tq, g, pa, pb);

    /* gate/up: one task per group of 8 hidden columns, all of K */
    const T *bgu = static_cast<const T *>(p.bgu);
    T *h = static_cast<T *>(p.h);
    for (int64_t ga = my_team; ga < groups_a; ga += teams) {
        float acc[NT][4];
        zero_acc<NT>(acc);
        for (int64_t c0 = wit; c0 < chunks_a; c0 += (int64_t)ONE_TEAM * ONE_UA) {
            uint4 wa[ONE_UA], wb[ONE_UA];
            load_w<T, ONE_UA>(A, ga, c0, chunks_a, tq, g, wa, wb);
            mma_w<T, NT, ONE_UA, false>(A, m, c0, chunks_a, tq, g, wa, wb, acc);
        }
        team_reduce<NT>(red[team], team, wit, lane, acc);
        if (wit == 0) {
            const int64_t hc = ga * 8 + g;
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    const int64_t xr = nt * 8 + 2 * tq + j;
                    if (xr >= m || hc >= p.hidden) continue;
                    const float gv = acc[nt][j] + bias_at(bgu, ga * 16 + g);
                    const float uv = acc[nt][2 + j] + bias_at(bgu, ga * 16 + g + 8);
                    h[xr * p.hidden + hc] = fmlp_from_f32<T>(fmlp_act_apply(p.act, gv) * uv);
                }
        }
    }
    if (!RES && blockIdx.x == 0)
        for (int64_t i = threadIdx.x; i < groups_b; i += blockDim.x) p.count[i] = 0;
    cg::this_grid().sync();
    if (RES) {
        if (down_block) res_down<T, NT>(p, res, blockIdx.x, red, red2);
        return;
    }

    /* down: groups of 16 output columns, K split into `pieces` */
    const T *bd = static_cast<const T *>(p.bd);
    T *y = static_cast<T *>(p.y);
    bool preloaded = true;
    for (int64_t tb = my_team; tb < tasks_b; tb += teams) {
        const int64_t group = tb / pieces, piece = tb % pieces;
        const span s = {piece * chunks_b / pieces, (piece + 1) * chunks_b / pieces};
        float acc[NT][4];
        zero_acc<NT>(acc);
        for (int64_t c0 = s.cb + wit; c0 < s.ce; c0 += (int64_t)ONE_TEAM * ONE_UB) {
            if (!preloaded) load_w<T, ONE_UB>(B, group, c0, s.ce, tq, g, pa, pb);
            preloaded = false;
            mma_w<T, NT, ONE_UB, true>(B, m, c0, s.ce, tq, g, pa, pb, acc);
        }
        preloaded = false;
        team_reduce<NT>(red[team], team, wit, lane, acc);
        if (wit != 0) continue;
        if (pieces > 1) {
            float *mine = p.part + tb * (NT * 4 * 32);
#pragma unroll
            for (int e = 0; e < NT * 4; e++) mine[e * 32 + lane] = acc[e / 4][e % 4];
            __threadfence();
            unsigned seen = 0;
            if (lane == 0) seen = atomicAdd(&p.count[group], 1u);
            seen = __shfl_sync(0xffffffffu, seen, 0);
            if (seen != (unsigned)pieces - 1) continue;
            __threadfence();
            zero_acc<NT>(acc);
            for (int64_t q = 0; q < pieces; q++) {
                const float *part = p.part + (group * pieces + q) * (NT * 4 * 32);
#pragma unroll
                for (int e = 0; e < NT * 4; e++) acc[e / 4][e % 4] += __ldcg(part + e * 32 + lane);
            }
        }
        store_down<T, NT>(p, m, bd, y, acc, group, g, tq);
    }
}

} // namespace

#define FMLP_ONE_K(NAME, T, NT)                                                                                \
    extern "C" __global__ void __launch_bounds__(ONE_WARPS * 32, 1) NAME(const fmlp_cu_mlp_args p)            \
    {                                                                                                          \
        one_body<T, NT, false>(p);                                                                             \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(ONE_WARPS * 32, 1) NAME##_smem(const fmlp_cu_mlp_args p)     \
    {                                                                                                          \
        one_body<T, NT, true>(p);                                                                              \
    }
FMLP_ONE_K(fmlp_mlp_glu_bf16_onekernel8, __nv_bfloat16, 1)
FMLP_ONE_K(fmlp_mlp_glu_bf16_onekernel16, __nv_bfloat16, 2)
FMLP_ONE_K(fmlp_mlp_glu_f16_onekernel8, __half, 1)
FMLP_ONE_K(fmlp_mlp_glu_f16_onekernel16, __half, 2)

namespace {

/* [bf16, f16][rows <= 8, <= 16][streamed, resident down] */
const fmlp_kernel_entry one_table[2][2][2] = {
    {{FMLP_KERNEL_ENTRY(fmlp_mlp_glu_bf16_onekernel8), FMLP_KERNEL_ENTRY(fmlp_mlp_glu_bf16_onekernel8_smem)},
     {FMLP_KERNEL_ENTRY(fmlp_mlp_glu_bf16_onekernel16), FMLP_KERNEL_ENTRY(fmlp_mlp_glu_bf16_onekernel16_smem)}},
    {{FMLP_KERNEL_ENTRY(fmlp_mlp_glu_f16_onekernel8), FMLP_KERNEL_ENTRY(fmlp_mlp_glu_f16_onekernel8_smem)},
     {FMLP_KERNEL_ENTRY(fmlp_mlp_glu_f16_onekernel16), FMLP_KERNEL_ENTRY(fmlp_mlp_glu_f16_onekernel16_smem)}},
};

/* Bytes of shared memory a resident down group takes, 0 when the shape
 * streams its down projection instead. */
size_t res_bytes(const fmlp_cu_mlp_args *a)
{
    const int64_t groups = (a->out + 15) / 16, bytes = (a->hidden + 31) / 32 * 1024;
    return groups <= fmlp_grid_blocks(a) && bytes <= ONE_RES_BYTES ? (size_t)bytes : 0;
}

const fmlp_kernel_entry &one_for(const fmlp_cu_mlp_args *a)
{
    return one_table[a->dtype == FMLP_F16 ? 1 : 0][a->m <= 8 ? 0 : 1][res_bytes(a) ? 1 : 0];
}

/* Down pieces: as many as fill every team once, each warp keeping at
 * least one chunk. */
int64_t one_pieces(const fmlp_cu_mlp_args *a)
{
    const int64_t teams = fmlp_grid_blocks(a) * ONE_TEAMS, groups = (a->out + 15) / 16;
    const int64_t chunks = (a->hidden + 31) / 32;
    int64_t p = teams / groups;
    if (p > chunks / ONE_TEAM) p = chunks / ONE_TEAM;
    return p < 1 ? 1 : p;
}

/* The streamed down projection's partial sums, when K is in pieces. */
size_t part_bytes(const fmlp_cu_mlp_args *a, int64_t pieces)
{
    const int64_t groups = (a->out + 15) / 16, nt = a->m <= 8 ? 1 : 2;
    return pieces > 1 ? (size_t)(groups * pieces * nt * 4 * 32) * sizeof(float) : 0;
}

} // namespace

extern "C" bool fmlp_cu_mlp_one_fits(const fmlp_cu_mlp_args *a)
{
    if (a->dtype != FMLP_BF16 && a->dtype != FMLP_F16) return false;
    if (a->cc_major < 8 || a->m < 1 || a->m > FMLP_CU_ONE_MAX_ROWS) return false;
    if (a->dim % 8 || a->hidden % 8) return false;
    if (a->x && (((uintptr_t)a->x & 15) || a->ldx % 8)) return false;
    return true;
}

/* The row-streaming forms (mlp_stream.cu, mlp_stream_mma.cu), where the
 * down groups would not stay resident (or wherever asked). */
static bool row_stream(const fmlp_cu_mlp_args *a)
{
    if (a->row_stream == FMLP_CU_ROW_STREAM_OFF || !fmlp_cu_mlp_stream_fits(a)) return false;
    return a->row_stream == FMLP_CU_ROW_STREAM_WHEREVER || !res_bytes(a);
}

/* The hidden-slice form (mlp_slice.cu) at one row, unless the row stream
 * is asked for wherever it fits. */
static bool slice(const fmlp_cu_mlp_args *a)
{
    if (a->row_stream == FMLP_CU_ROW_STREAM_WHEREVER && fmlp_cu_mlp_stream_fits(a)) return false;
    return fmlp_cu_mlp_slice_fits(a);
}

extern "C" bool fmlp_cu_mlp_one_by_default(const fmlp_cu_mlp_args *a)
{
    return slice(a) || res_bytes(a) > 0 || row_stream(a);
}

extern "C" size_t fmlp_cu_mlp_one_scratch(const fmlp_cu_mlp_args *a)
{
    if (slice(a)) return fmlp_cu_mlp_slice_scratch(a);
    if (row_stream(a)) return 0;
    return part_bytes(a, one_pieces(a)) + (size_t)(a->out + 15) / 16 * sizeof(unsigned) + 256;
}

extern "C" const char *fmlp_cu_mlp_one_name(const fmlp_cu_mlp_args *a)
{
    return slice(a) ? fmlp_cu_mlp_slice_name(a) : row_stream(a) ? fmlp_cu_mlp_stream_name(a) : one_for(a).name;
}

extern "C" cudaError_t fmlp_cu_mlp_one(cudaStream_t s, const fmlp_cu_mlp_args *a)
{
    if (slice(a)) return fmlp_cu_mlp_slice(s, a);
    if (row_stream(a)) return fmlp_cu_mlp_stream(s, a);
    fmlp_cu_mlp_args p = *a;
    p.pieces = (int)one_pieces(a);
    /* scratch: the partial sums, then the per-group counters */
    char *base = static_cast<char *>(a->scratch);
    const size_t part = part_bytes(a, p.pieces);
    p.part = reinterpret_cast<float *>(base);
    p.count = reinterpret_cast<unsigned *>(base + ((part + 255) & ~(size_t)255));
    return fmlp_grid_launch(s, one_for(a).fn, &p, ONE_WARPS * 32, res_bytes(a));
}
