/* Why: at 2..16 rows a large gated MLP's forward is still a stream of its
 * weights (the Llama-3-8B MLP: 352 MB, 80 us at the H200's plain read
 * speed), but f32 FMAs for 16 rows would cost more issue slots than the
 * stream leaves. This form keeps the one-row kernel's grid (mlp_stream.cu:
 * one cooperative block per SM owning a share of the hidden columns, then
 * of the outputs, the down phase's first loads issued before the grid-wide
 * barrier) and multiplies on the tensor cores:
 *
 * - A warp takes tiles of 8 weight rows over its segment of K and copies
 *   each row's segment with adjacent lanes (cp.async, 256 bytes a row,
 *   zeros past the matrix) into its own ring of shared memory, several
 *   tiles in flight. In m16n8k16 mma.sync steps the tile is the B operand
 *   and x's rows (up to 16, zeros past m) the A operand, held in
 *   registers for a pass of K; a lane's 16-byte word of a 32-wide chunk
 *   holds the K positions of two steps, K permuted inside the chunk and
 *   x's words permuted alike. Longer K takes several passes, each block
 *   starting at its own, so the blocks do not all read one pass of h.
 * - The warps' sums of a group of tiles go to shared memory and, after one
 *   barrier, every thread adds up one entry in warp order (then pass
 *   order): the same bits every run. The copies do not wait at the
 *   barrier: each warp's ring already holds the next tiles in flight.
 * - The gate/up packing (blocks of 8 gate rows, then 8 up rows) puts a
 *   column's gate and up rows in the same tile, so the GLU is applied as
 *   the tile is added up; h goes to global memory (L2) for the down phase.
 * Copy sources are 32-bit word offsets, so the copy issue spends few
 * instructions on addresses (5120 -> 13824 at 16 rows: 115.2 -> 108.2 us).
 * Measured: bench/results/h200_row_stream_rows_2026-12-02.md,
 * bench/results/h200_row_stream_w32_2026-12-04.md. */
#include <cooperative_groups.h>

#include "cuda/device_util.cuh"
#include "cuda/kernel_entry.cuh"
#include "cuda/mlp_grid.cuh"
#include "cuda/mlp_stream_mma.h"
#include "cuda/mma_sync.cuh"
#include "cuda/stream_copy.cuh"

namespace cg = cooperative_groups;

namespace {

constexpr int MS_WARPS = 16, MS_THREADS = MS_WARPS * 32;
/* A warp's segment of a row: chunks of 32 K, read by 4 lanes each (x's
 * 16 rows take 8 registers a chunk). Its ring holds MS_STAGES tiles of 8
 * segments (MS_STAGES - 1 in flight: 96 KB per SM), and the sums of
 * MS_GROUP tiles are added up per barrier. Measured on the H200 (Llama-3-8B
 * MLP, 2 / 16 rows, bench/results/h200_row_stream_rows_2026-12-02.md):
 * 87.6 / 96.7 us, against 91.7 / 100.0 adding up every tile, 88.5 / 101.8
 * every four; 512-byte segments (8 chunks) 89.2 / 104.0, 128-byte 122.9 /
 * 129.3. */
constexpr int MS_CHUNKS = 4;
constexpr int MS_STAGES = 4;
constexpr int MS_GROUP = 2;
constexpr int MS_ROW_WORDS = 4 * MS_CHUNKS;                 /* a segment: 16-byte words */
constexpr int MS_STAGE_WORDS = MS_WARPS * 8 * MS_ROW_WORDS; /* a block's tile: 8 rows a warp */
/* A tile's sums: 8 weight rows x 16 x rows. The four lanes holding one x
 * row store to the same bank (ncu: 74% of these stores' wavefronts are
 * conflicts). Rows padded to 20 floats made the Llama-3-8B MLP 1.2-1.7%
 * faster at 8-16 rows, but the carried sums grew with them and shapes
 * such as 4 rows of hidden 65536 no longer fit
 * (bench/results/h200_rowstream_pad_2026-12-04.md). */
constexpr int MS_TILE = 8 * 16;
/* 1: block b starts at pass b % passes and walks them round; 0: every
 * block from pass 0. From pass 0, all 132 blocks ask the same L2 lines
 * for the same pass of h at once (the Llama-3-8B MLP at 16 rows: 97.5 us,
 * 88.7 loading h for two rows only); rotated, 92.9 (8 rows: 92.9 -> 88.1;
 * bench/results/h200_pass_rotation_2026-12-04.md). */
constexpr int MS_ROTATE = 1;

/* A block's stream of one matrix: its rows, in tiles of 8; K as kv words,
 * cut into passes of 16 warps x MS_CHUNKS chunks, walked from pass `first`
 * on (block b's: b % passes). */
struct plan {
    int rows, tiles, kv, passes, first;
};

__host__ __device__ inline plan plan_for(int64_t k, int64_t rows, int64_t b = 0)
{
    const int kv = (int)(k / 8), passes = (kv + MS_WARPS * MS_ROW_WORDS - 1) / (MS_WARPS * MS_ROW_WORDS);
    return {(int)rows, (int)((rows + 7) / 8), kv, passes, MS_ROTATE ? (int)(b % passes) : 0};
}

/* The first word of this warp's segment of a row in the block's p-th pass. */
__device__ __forceinline__ int segment(const plan &pl, int p)
{
    const int q = p + pl.first;
    return ((q < pl.passes ? q : q - pl.passes) * MS_WARPS + (int)(threadIdx.x >> 5)) * MS_ROW_WORDS;
}

/* Word w of row r of a warp's tile in its ring; odd rows swap halves of
 * 128 bytes, so the eight lanes of a 16-byte read phase (two rows, four
 * words each) hit distinct banks. */
__device__ __forceinline__ uint4 *ring_word(uint4 *ring, int stage, int r, int w)
{
    return ring + stage * MS_STAGE_WORDS + ((int)(threadIdx.x >> 5) * 8 + r) * MS_ROW_WORDS + (w ^ ((r & 1) << 2));
}

/* Where a warp's copies stand in the sequence of (pass, tile), and the
 * number of the next tile to copy. */
struct cursor {
    int p, tile, q;
};

/* Copies the warp's segments of the cursor's tile into its ring, a row's
 * words from adjacent lanes (zeros past the matrix), as one commit group. */
template <class Row>
__device__ __forceinline__ void issue(uint4 *ring, const uint4 *w, const plan &pl, cursor &c, const Row &row)
{
    constexpr int SEG = MS_ROW_WORDS, PER = 32 / SEG; /* lanes a row, rows a copy */
    const int lane = threadIdx.x & 31, word = lane % SEG, first = lane / SEG;
    if (c.p < pl.passes && first < PER) {
        const int kw = segment(pl, c.p) + word;
        uint4 *dst = ring + (c.q % MS_STAGES) * MS_STAGE_WORDS + (int)(threadIdx.x >> 5) * 8 * MS_ROW_WORDS;
#pragma unroll
        for (int i = 0; i < 8 / PER; i++) {
            const int r = i * PER + first, gr = 8 * c.tile + r;
            const bool in = gr < pl.rows && kw < pl.kv;
            const uint32_t at = row(gr) * (uint32_t)pl.kv + (uint32_t)kw;
            cp_async16(dst + r * MS_ROW_WORDS + (word ^ ((r & 1) << 2)), in ? w + at : w, in ? 16 : 0);
        }
    }
    if (c.p < pl.passes && ++c.tile == pl.tiles) {
        c.tile = 0;
        c.p++;
    }
    fmlp_own_commit();
    c.q++;
}

/* The A fragments of pass p: x rows g and g + 8, a step's K pair of each
 * in adjacent registers. */
template <bool COHERENT>
__device__ __forceinline__ void load_a(uint32_t (&a)[MS_CHUNKS][2][4], const plan &pl, int p, const uint4 *x,
                                       int64_t ldxw, int m)
{
    const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int j = 0; j < MS_CHUNKS; j++) {
        const int kw = segment(pl, p) + 4 * j + t;
        const bool in = kw < pl.kv;
        const uint4 xa = !in || g >= m ? zero : COHERENT ? __ldcg(x + g * ldxw + kw) : __ldg(x + g * ldxw + kw);
        const uint4 xb = !in || g + 8 >= m ? zero : COHERENT ? __ldcg(x + (g + 8) * ldxw + kw) : __ldg(x + (g + 8) * ldxw + kw);
        a[j][0][0] = xa.x, a[j][0][1] = xb.x, a[j][0][2] = xa.y, a[j][0][3] = xb.y;
        a[j][1][0] = xa.z, a[j][1][1] = xb.z, a[j][1][2] = xa.w, a[j][1][3] = xb.w;
    }
}

/* Streams the block's tiles, the first MS_STAGES - 1 already copying;
 * after each group of up to MS_GROUP tiles, `add(sums, pass, tile, count)`
 * runs on every thread once the warps' sums of the group's `count` tiles
 * from `tile` on (sums[(tile in group * MS_WARPS + warp) * MS_TILE +
 * weight row * 16 + x row]) are in shared memory. In the mma, x is the
 * 16-row A operand and the tile's 8 weight rows the B operand; a lane's
 * word of a chunk holds the K positions of both of its steps.
 * `a` holds the first pass's fragments on entry. */
template <typename T, bool COHERENT, class Row, class Add>
__device__ __forceinline__ void stream(uint4 *ring, const uint4 *w, const plan &pl, const Row &row, cursor &c,
                                       const uint4 *x, int64_t ldxw, int m, float *part, const Add &add,
                                       uint32_t (&a)[MS_CHUNKS][2][4])
{
    const int warp = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    int next = 0, buf = 0;
    for (int p = 0; p < pl.passes; p++) {
        if (p > 0) load_a<COHERENT>(a, pl, p, x, ldxw, m);
        for (int first = 0; first < pl.tiles; first += MS_GROUP) {
            /* two accumulators a tile, so consecutive mma steps do not wait on each other */
            float acc[MS_GROUP][2][4] = {};
#pragma unroll
            for (int gi = 0; gi < MS_GROUP; gi++) {
                if (first + gi >= pl.tiles) break;
                fmlp_own_wait<MS_STAGES - 2>();
                __syncwarp();
                issue(ring, w, pl, c, row);
#pragma unroll
                for (int j = 0; j < MS_CHUNKS; j++) {
                    const uint4 b = *ring_word(ring, next % MS_STAGES, g, 4 * j + t);
                    mma16816<T>(acc[gi][0], a[j][0], b.x, b.y);
                    mma16816<T>(acc[gi][1], a[j][1], b.z, b.w);
                }
                next++;
            }
            float *sums = part + buf * MS_GROUP * MS_WARPS * MS_TILE;
#pragma unroll
            for (int gi = 0; gi < MS_GROUP; gi++) {
                float *mine = sums + (gi * MS_WARPS + warp) * MS_TILE;
                mine[2 * t * 16 + g] = acc[gi][0][0] + acc[gi][1][0];
                mine[(2 * t + 1) * 16 + g] = acc[gi][0][1] + acc[gi][1][1];
                mine[2 * t * 16 + g + 8] = acc[gi][0][2] + acc[gi][1][2];
                mine[(2 * t + 1) * 16 + g + 8] = acc[gi][0][3] + acc[gi][1][3];
            }
            __syncthreads();
            add(sums, p, first, pl.tiles - first < MS_GROUP ? pl.tiles - first : MS_GROUP);
            buf ^= 1;
        }
    }
    fmlp_own_wait<0>();
    __syncwarp();
}

/* A phase: starts its first tiles, runs `before` (the grid barrier, for
 * the down phase), then streams. The gate/up phase's x is there from the
 * start, so its loads go out ahead of the weights' (L2-cold at 16 rows:
 * the Llama-3-8B MLP 120.7-120.8 us against 121.2-121.4 with them after,
 * 5120 -> 13824 148.1-148.3 against 148.7-148.9; H100,
 * bench/results/h100_dyn_tiles_2026-12-07.md); the down phase's h (the
 * COHERENT loads) is there only after the barrier. */
template <typename T, bool COHERENT, class Row, class Add, class Before>
__device__ __forceinline__ void phase(uint4 *ring, const uint4 *w, const plan &pl, const Row &row, const uint4 *x,
                                      int64_t ldxw, int m, float *part, const Add &add, const Before &before)
{
    cursor c = {pl.tiles ? 0 : pl.passes, 0, 0};
    uint32_t a[MS_CHUNKS][2][4];
    if (!COHERENT) load_a<COHERENT>(a, pl, 0, x, ldxw, m);
    for (int i = 0; i < MS_STAGES - 1; i++) issue(ring, w, pl, c, row);
    before();
    if (COHERENT) load_a<COHERENT>(a, pl, 0, x, ldxw, m);
    stream<T, COHERENT>(ring, w, pl, row, c, x, ldxw, m, part, add, a);
}

/* The warps' sums of one entry of a tile, in warp order. */
__device__ __forceinline__ float warp_sum(const float *sums, int e)
{
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < MS_WARPS; w++) s += sums[w * MS_TILE + e];
    return s;
}

/* With several passes, a tile's sums so far wait in carry[tile * MS_TILE + e]. */
__device__ __forceinline__ bool carry_on(float &s, float *carry, int idx, int p, int passes)
{
    if (p) s += carry[idx];
    if (p + 1 < passes) {
        carry[idx] = s;
        return true;
    }
    return false;
}

template <typename T> __device__ __forceinline__ void rows_body(const fmlp_cu_mlp_args &a)
{
    extern __shared__ uint4 ring[];
    float *part = reinterpret_cast<float *>(ring + MS_STAGES * MS_STAGE_WORDS);
    float *carry = part + 2 * MS_GROUP * MS_WARPS * MS_TILE;
    const int64_t nb = gridDim.x, b = blockIdx.x;
    const int m = (int)a.m, i = threadIdx.x;

    /* gate/up: the block's hidden columns [c0, c1); local row 2t is the gate
     * and 2t + 1 the up row of column c0 + t */
    const int64_t c0 = b * a.hidden / nb, c1 = (b + 1) * a.hidden / nb;
    const plan p1 = plan_for(a.dim, 2 * (c1 - c0), b);
    const auto gu_row = [c0](int r) {
        const uint32_t o = (uint32_t)c0 + (unsigned)r / 2;
        return (o >> 3) * 16 + (o & 7) + (r & 1) * 8;
    };
    T *h = static_cast<T *>(a.h);
    const T *bgu = static_cast<const T *>(a.bgu);
    const auto glu = [&](const float *sums, int p, int first, int count) {
        if (i >= 64 * count) return;
        const int tile = first + i / 64, col = i % 64 / 16, n = i % 16, e = 2 * col * 16 + n;
        sums += i / 64 * MS_WARPS * MS_TILE;
        float gs = warp_sum(sums, e), us = warp_sum(sums, e + 16);
        const bool more = carry_on(gs, carry, tile * MS_TILE + e, p, p1.passes);
        if (carry_on(us, carry, tile * MS_TILE + e + 16, p, p1.passes) || more) return;
        const int64_t o = c0 + 4 * (int64_t)tile + col;
        if (n >= m || o >= c1) return;
        if (bgu) {
            const int64_t pg = (o / 8) * 16 + o % 8;
            gs += fmlp_to_f32(bgu[pg]);
            us += fmlp_to_f32(bgu[pg + 8]);
        }
        h[n * a.hidden + o] = fmlp_from_f32<T>(fmlp_act_apply(a.act, gs) * us);
    };
    const uint4 *wgu = static_cast<const uint4 *>(a.wgu), *wd = static_cast<const uint4 *>(a.wd);
    phase<T, false>(ring, wgu, p1, gu_row, static_cast<const uint4 *>(a.x), a.ldx / 8, m, part, glu, [] {});

    /* down: the block's outputs [r0, r1) */
    const int64_t r0 = b * a.out / nb, r1 = (b + 1) * a.out / nb;
    const plan p2 = plan_for(a.hidden, r1 - r0, b);
    const auto d_row = [r0](int r) { return (uint32_t)(r0 + r); };
    T *y = static_cast<T *>(a.y);
    const T *bd = static_cast<const T *>(a.bd);
    const auto down = [&](const float *sums, int p, int first, int count) {
        if (i >= MS_TILE * count) return;
        const int tile = first + i / MS_TILE, e = i % MS_TILE;
        float s = warp_sum(sums + i / MS_TILE * MS_WARPS * MS_TILE, e);
        if (carry_on(s, carry, tile * MS_TILE + e, p, p2.passes)) return;
        const int n = e % 16;
        const int64_t o = r0 + 8 * tile + e / 16;
        if (n >= m || o >= r1) return;
        if (bd) s += fmlp_to_f32(bd[o]);
        y[n * a.ldy + o] = fmlp_from_f32<T>(s);
    };
    phase<T, true>(ring, wd, p2, d_row, static_cast<const uint4 *>(a.h), a.hidden / 8, m, part, down,
                   [] { cg::this_grid().sync(); });
}

} // namespace

#define FMLP_STREAM_ROWS_K(NAME, T)                                                                            \
    extern "C" __global__ void __launch_bounds__(MS_THREADS, 1) NAME(const fmlp_cu_mlp_args p) { rows_body<T>(p); }
FMLP_STREAM_ROWS_K(fmlp_mlp_glu_bf16_onekernel16_rowstream, __nv_bfloat16)
FMLP_STREAM_ROWS_K(fmlp_mlp_glu_f16_onekernel16_rowstream, __half)

namespace {

/* [bf16, f16] */
const fmlp_kernel_entry rows_table[2] = {FMLP_KERNEL_ENTRY(fmlp_mlp_glu_bf16_onekernel16_rowstream),
                                         FMLP_KERNEL_ENTRY(fmlp_mlp_glu_f16_onekernel16_rowstream)};

const fmlp_kernel_entry &rows_for(const fmlp_cu_mlp_args *a) { return rows_table[a->dtype == FMLP_F16 ? 1 : 0]; }

/* Tiles whose sums wait between passes: none when one pass covers K. */
int64_t carried_tiles(const plan &pl) { return pl.passes > 1 ? pl.tiles : 0; }

/* The ring, the warps' sums of two tiles, and the carried sums of the
 * phase that needs more of them. */
size_t rows_smem(const fmlp_cu_mlp_args *a)
{
    const int64_t nb = fmlp_grid_blocks(a);
    const int64_t gu = carried_tiles(plan_for(a->dim, 2 * ((a->hidden + nb - 1) / nb)));
    const int64_t dn = carried_tiles(plan_for(a->hidden, (a->out + nb - 1) / nb));
    return (size_t)MS_STAGES * MS_STAGE_WORDS * 16 +
           (size_t)(2 * MS_GROUP * MS_WARPS + (gu > dn ? gu : dn)) * MS_TILE * sizeof(float);
}

} // namespace

extern "C" bool fmlp_cu_mlp_stream_rows_fits(const fmlp_cu_mlp_args *a)
{
    if (!fmlp_grid_stream_shape(a) || a->m < 2 || a->m > 16 || (a->x && a->ldx % 8)) return false;
    /* copy sources are 32-bit word offsets into a matrix */
    if (a->dim < 8 || a->hidden < 8 || a->hidden > UINT32_MAX / 2 / (a->dim / 8) || a->out > UINT32_MAX / (a->hidden / 8))
        return false;
    return rows_smem(a) <= FMLP_GRID_MAX_SMEM;
}

extern "C" const char *fmlp_cu_mlp_stream_rows_name(const fmlp_cu_mlp_args *a) { return rows_for(a).name; }

extern "C" cudaError_t fmlp_cu_mlp_stream_rows(cudaStream_t s, const fmlp_cu_mlp_args *a)
{
    return fmlp_grid_launch(s, rows_for(a).fn, a, MS_THREADS, rows_smem(a));
}
