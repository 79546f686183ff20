/* Why: at one row a gated MLP's forward is a stream of its weights, and the
 * Llama-3-8B MLP's 352 MB take 80 us at the H200's plain read speed. Two
 * kernels lose time at their boundary and in cuBLASLt's split-K tail, and
 * the mma-fragment loads of the one-kernel MLP (mlp_one.cu) read a one-row
 * stream slowly (bench/results/h200_row_gemv_2026-12-02.md). So this form of
 * the one kernel streams whole row segments, as the row gemv does, through
 * both GEMMs in one cooperative launch of one block per SM:
 *
 * - A block owns a contiguous share of the hidden columns (their gate and
 *   up rows), then of the down projection's outputs, so every SM streams
 *   the same bytes in each phase.
 * - A group of warps shares a row; each lane holds 16-byte words at fixed
 *   positions of it, so its x words for those positions stay in registers
 *   for the whole phase. Each thread streams its words of the next batches
 *   of rows into its own slots of a shared-memory ring (cp.async), so
 *   several batches are in flight and no thread waits for another. Per-row
 *   sums go to shared memory and are added in warp order once the block's
 *   rows are done: the same bits every run, and no barrier in the stream.
 * - Before the grid-wide barrier between the phases each block starts the
 *   loads of its first down rows, so HBM stays busy while the slowest SM
 *   finishes gate/up.
 * Measured: bench/results/h200_row_stream_2026-12-02.md. */
#include <cooperative_groups.h>

#include "cuda/device_util.cuh"
#include "cuda/kernel_entry.cuh"
#include "cuda/kernels.h"
#include "cuda/mlp_grid.cuh"
#include "cuda/mlp_stream_mma.h"
#include "cuda/row_dot.cuh"
#include "cuda/stream_copy.cuh"

namespace cg = cooperative_groups;

namespace {

constexpr int RS_WARPS = 16, RS_THREADS = RS_WARPS * 32;
/* 16-byte weight words per thread in one batch of rows, and the batches in
 * flight (cp.async into shared memory). Measured on the H200 (Llama-3-8B,
 * tutorial and 2048 -> 11008 MLPs, one row): 4 x 4 as fast as 8 x 3,
 * 8 x 2 and 4 x 6, and all of them as fast as loads into registers two
 * batches of 8 words deep; registers two batches of 4 deep took 93.1 us
 * against 87.1 for the Llama-3-8B MLP
 * (bench/results/h200_row_stream_2026-12-02.md). */
constexpr int RS_LOADS = 4;
constexpr int RS_STAGES = 4;
/* 16-byte words of a row per lane: K up to 16384 (8 words spilled registers) */
constexpr int RS_WORDS = 4;
constexpr int RS_BATCH_ROWS = RS_LOADS > RS_WORDS ? RS_LOADS / RS_WORDS : 1;

/* How a block streams a matrix of k columns: w warps share a row, each lane
 * holding c 16-byte words of it (w the fewest that keep c <= RS_WORDS,
 * else 16); the block's g = 16 / w groups of warps take the rows in turn. */
struct layout {
    int w, g, c;
};

__host__ __device__ inline layout layout_for(int64_t k)
{
    const int64_t kv = k / 8;
    int w = 1;
    while (w < RS_WARPS && (kv + 32 * w - 1) / (32 * w) > RS_WORDS) w *= 2;
    return {w, RS_WARPS / w, (int)((kv + 32 * w - 1) / (32 * w))};
}

/* One thread's place in the stream of a matrix: its group and warp within
 * the group, its first word, the stride between its words, which of its
 * RS_WORDS words exist (bit i), and the block's row count. */
struct place {
    layout l;
    int g, wg, lane, j0, step;
    unsigned words;
    int kv, rows;
};

__device__ __forceinline__ place place_for(int64_t k, int64_t rows)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const layout l = layout_for(k);
    const int wg = warp % l.w, j0 = wg * 32 + lane, step = 32 * l.w, kv = (int)(k / 8);
    unsigned words = 0;
    for (int i = 0; i < l.c; i++)
        if (j0 + i * step < kv) words |= 1u << i;
    return {l, warp / l.w, wg, lane, j0, step, words, kv, (int)rows};
}

/* The x (or h) words matching the thread's weight words; zero past the row. */
template <bool COHERENT> __device__ __forceinline__ void load_x(uint4 (&xr)[RS_WORDS], const uint4 *x, const place &pl)
{
#pragma unroll
    for (int i = 0; i < RS_WORDS; i++) {
        const int j = pl.j0 + i * pl.step;
        xr[i] = !(pl.words >> i & 1) ? make_uint4(0, 0, 0, 0) : COHERENT ? __ldcg(x + j) : __ldg(x + j);
    }
}

/* Each thread copies its own weight words into its own slots of a ring in
 * shared memory (stream_copy.cuh, RS_STAGES batches deep); in a stage,
 * consecutive threads' words are adjacent, so a warp reads 512 contiguous
 * bytes. */
__device__ __forceinline__ uint4 *slot(uint4 *ring, int it, int q, int i)
{
    return ring + ((it % RS_STAGES) * RS_BATCH_ROWS * RS_WORDS + q * RS_WORDS + i) * RS_THREADS + threadIdx.x;
}

/* Starts batch `it` of the group's rows (rows g + groups * (it * RS_BATCH_ROWS + q) of
 * the block's; `row` maps them to the matrix's), one commit group. */
template <class Row> __device__ __forceinline__ void issue_batch(uint4 *ring, const uint4 *w, const place &pl, int it, const Row &row)
{
#pragma unroll
    for (int q = 0; q < RS_BATCH_ROWS; q++) {
        const int r = pl.g + pl.l.g * (it * RS_BATCH_ROWS + q);
        if (r >= pl.rows) break;
        const uint4 *wr = w + row(r) * pl.kv + pl.j0;
#pragma unroll
        for (int i = 0; i < RS_WORDS; i++)
            if (pl.words >> i & 1) fmlp_own_copy16(slot(ring, it, q, i), wr + i * pl.step);
    }
    fmlp_own_commit();
}

/* Each row's warp sum into part[row * w + warp in group]. */
template <typename T>
__device__ __forceinline__ void dot_batch(uint4 *ring, const uint4 (&xr)[RS_WORDS], const place &pl, int it, float *part)
{
#pragma unroll
    for (int q = 0; q < RS_BATCH_ROWS; q++) {
        const int r = pl.g + pl.l.g * (it * RS_BATCH_ROWS + q);
        if (r >= pl.rows) return;
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < RS_WORDS; i++)
            if (pl.words >> i & 1) s = fmlp_dot8<T>(*slot(ring, it, q, i), xr[i], s);
        for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (pl.lane == 0) part[r * pl.l.w + pl.wg] = s;
    }
}

template <class Row> __device__ __forceinline__ void start_rows(uint4 *ring, const uint4 *w, const place &pl, const Row &row)
{
    for (int it = 0; it < RS_STAGES - 1; it++) issue_batch(ring, w, pl, it, row);
}

/* Streams the group's rows, the first RS_STAGES - 1 batches started. */
template <typename T, class Row>
__device__ __forceinline__ void stream_rows(uint4 *ring, const uint4 *w, const uint4 (&xr)[RS_WORDS], const place &pl,
                                            const Row &row, float *part)
{
    for (int it = 0; pl.g + pl.l.g * it * RS_BATCH_ROWS < pl.rows; it++) {
        issue_batch(ring, w, pl, it + RS_STAGES - 1, row);
        fmlp_own_wait<RS_STAGES - 1>();
        dot_batch<T>(ring, xr, pl, it, part);
    }
    fmlp_own_wait<0>();
}

/* Row r's warp sums, added in warp order. */
__device__ __forceinline__ float row_sum(const float *part, int64_t r, int w)
{
    float s = 0.0f;
    for (int j = 0; j < w; j++) s += part[r * w + j];
    return s;
}

template <typename T> __device__ __forceinline__ void stream_body(const fmlp_cu_mlp_args &p)
{
    extern __shared__ uint4 ring[];
    float *part = reinterpret_cast<float *>(ring + RS_STAGES * RS_BATCH_ROWS * RS_WORDS * RS_THREADS);
    const int64_t nb = gridDim.x, b = blockIdx.x;
    const uint4 *wgu = static_cast<const uint4 *>(p.wgu), *wd = static_cast<const uint4 *>(p.wd);

    /* gate/up: the block's hidden columns [c0, c1), local row 2t the gate
     * and 2t + 1 the up row of column c0 + t (packed in blocks of 8) */
    const int64_t c0 = b * p.hidden / nb, c1 = (b + 1) * p.hidden / nb;
    const place p1 = place_for(p.dim, 2 * (c1 - c0));
    const auto gu_row = [c0](int r) {
        const int64_t o = c0 + r / 2;
        return (o / 8) * 16 + o % 8 + (r & 1) * 8;
    };
    uint4 xr[RS_WORDS];
    start_rows(ring, wgu, p1, gu_row);
    load_x<false>(xr, static_cast<const uint4 *>(p.x), p1);
    stream_rows<T>(ring, wgu, xr, p1, gu_row, part);
    __syncthreads();
    T *h = static_cast<T *>(p.h);
    const T *bgu = static_cast<const T *>(p.bgu);
    for (int64_t t = threadIdx.x; t < c1 - c0; t += RS_THREADS) {
        float g = row_sum(part, 2 * t, p1.l.w), u = row_sum(part, 2 * t + 1, p1.l.w);
        const int64_t o = c0 + t, pg = (o / 8) * 16 + o % 8;
        if (bgu) {
            g += fmlp_to_f32(bgu[pg]);
            u += fmlp_to_f32(bgu[pg + 8]);
        }
        h[o] = fmlp_from_f32<T>(fmlp_act_apply(p.act, g) * u);
    }

    /* down: the block's outputs [r0, r1); its first batches load during the barrier */
    const int64_t r0 = b * p.out / nb, r1 = (b + 1) * p.out / nb;
    const place p2 = place_for(p.hidden, r1 - r0);
    const auto d_row = [r0](int r) { return r0 + r; };
    start_rows(ring, wd, p2, d_row);
    cg::this_grid().sync();
    load_x<true>(xr, static_cast<const uint4 *>(p.h), p2);
    stream_rows<T>(ring, wd, xr, p2, d_row, part);
    __syncthreads();
    T *y = static_cast<T *>(p.y);
    const T *bd = static_cast<const T *>(p.bd);
    for (int64_t t = threadIdx.x; t < r1 - r0; t += RS_THREADS) {
        float acc = row_sum(part, t, p2.l.w);
        if (bd) acc += fmlp_to_f32(bd[r0 + t]);
        y[r0 + t] = fmlp_from_f32<T>(acc);
    }
}

} // namespace

#define FMLP_STREAM_K(NAME, T)                                                                                 \
    extern "C" __global__ void __launch_bounds__(RS_THREADS, 1) NAME(const fmlp_cu_mlp_args p) { stream_body<T>(p); }
FMLP_STREAM_K(fmlp_mlp_glu_bf16_onekernel1_rowstream, __nv_bfloat16)
FMLP_STREAM_K(fmlp_mlp_glu_f16_onekernel1_rowstream, __half)

namespace {

/* [bf16, f16] */
const fmlp_kernel_entry stream_table[2] = {FMLP_KERNEL_ENTRY(fmlp_mlp_glu_bf16_onekernel1_rowstream),
                                           FMLP_KERNEL_ENTRY(fmlp_mlp_glu_f16_onekernel1_rowstream)};

/* The ring, then the per-row sums of the larger phase. */
size_t stream_smem(const fmlp_cu_mlp_args *a)
{
    const int64_t nb = fmlp_grid_blocks(a);
    const int64_t gu = 2 * ((a->hidden + nb - 1) / nb) * layout_for(a->dim).w;
    const int64_t dn = (a->out + nb - 1) / nb * layout_for(a->hidden).w;
    return (size_t)(RS_STAGES * RS_BATCH_ROWS * RS_WORDS * RS_THREADS) * 16 + (size_t)(gu > dn ? gu : dn) * sizeof(float);
}

const fmlp_kernel_entry &stream_for(const fmlp_cu_mlp_args *a)
{
    return stream_table[a->dtype == FMLP_F16 ? 1 : 0];
}

} // namespace

extern "C" bool fmlp_cu_mlp_stream_fits(const fmlp_cu_mlp_args *a)
{
    if (a->m > 1) return fmlp_cu_mlp_stream_rows_fits(a);
    if (!fmlp_grid_stream_shape(a) || a->m != 1) return false;
    if (layout_for(a->dim).c > RS_WORDS || layout_for(a->hidden).c > RS_WORDS) return false;
    return stream_smem(a) <= FMLP_GRID_MAX_SMEM;
}

extern "C" const char *fmlp_cu_mlp_stream_name(const fmlp_cu_mlp_args *a)
{
    return a->m > 1 ? fmlp_cu_mlp_stream_rows_name(a) : stream_for(a).name;
}

extern "C" cudaError_t fmlp_cu_mlp_stream(cudaStream_t s, const fmlp_cu_mlp_args *a)
{
    if (a->m > 1) return fmlp_cu_mlp_stream_rows(s, a);
    return fmlp_grid_launch(s, stream_for(a).fn, a, RS_THREADS, stream_smem(a));
}
