/* Why: Hopper's tensor cores reach their rate only when the operands arrive
 * through the bulk tensor copy engine (TMA) and wgmma reads them straight
 * from shared memory, with no thread spending issue slots on loads. Here a
 * producer warp keeps a ring of S shared-memory stages filled with x and
 * weight tiles (128-byte swizzle, each stage's arrival counted in bytes on
 * its "full" mbarrier), and one or two consumer warpgroups run wgmma on each
 * stage and hand it back through its "empty" mbarrier, one wgmma batch kept
 * in flight. Two blocks share an SM, so one block's pipeline fill and
 * epilogue hide behind the other's matrix work: with K = 768 a tile's
 * mainloop is short and those fixed costs would otherwise dominate. Rows,
 * columns and K past the tensor's end arrive as zeros, so any shape with
 * 16-byte-aligned rows runs without a residue path.
 * The accumulator layout per 8 columns matches mma.sync's, so the GLU
 * epilogue pairs the interleaved gate and up rows in registers exactly as
 * fmlp's other tiles do. A second, persistent family (tmp_body: one block
 * per SM walking its tiles, a producer warpgroup, setmaxnreg, ping-pong or
 * shared 128x256 tiles) is what tma_pick takes for large GEMMs; launched
 * as programmatic dependents (fmlp_cu_gemm_args.pdl), its blocks start as
 * the kernel before leaves the SMs and its producer waits for that kernel
 * before the first load. Built only
 * into the sm_90a image; fmlp_cu_gemm_pick offers it only on compute
 * capability 9.x. */
#include <cuda.h>

#include "cuda/device_util.cuh"
#include "cuda/kernels.h"
#include "cuda/pdl.cuh"
#include "cuda/smem_opt_in.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FMLP_HAVE_WGMMA 1
#include "cuda/wgmma_ops.cuh"
#endif

namespace {

/* WGS consumer warpgroups of 64 rows each (BM = 64 * WGS), BN weight rows
 * per tile, S stages of 64-wide K slices. The producer is one more warp,
 * after the consumers (a warpgroup must start at a warp index divisible by
 * 4). Where shared memory and registers allow two blocks per SM, one
 * block's prologue and epilogue overlap the other's matrix work. */
template <int WGS, int BN, int S> struct tma_cfg {
    static constexpr int BM = 64 * WGS;
    static constexpr int THREADS = 128 * WGS + 32;
    static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
    static constexpr int SMEM = S * STAGE + 2 * S * 8 + 1024;
    /* an SM's 228 KB hold two blocks' shared memory and the 1 KB the
     * hardware reserves for each (64x48 with 8 stages: one block) */
    static constexpr int MIN_BLOCKS = 2 * (SMEM + 1024) <= 228 * 1024 && WGS * BN <= 256 ? 2 : 1;
};

#ifdef FMLP_HAVE_WGMMA

__device__ __forceinline__ void mbar_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint32_t bar, int bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
/* The retry loop is the PTX's own: no predicate crosses into C and back. */
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    asm volatile("{\n .reg .pred p;\n wait_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra wait_%=;\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}
/* A box of the 2-D tensor at (c0 along K, c1 along rows) into shared memory. */
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1)
                 : "memory");
}

/* A box of shared memory at `src` to the 2-D tensor at (c0 along columns,
 * c1 along rows); the tensor's bounds clip it. */
__device__ __forceinline__ void tma_store(const CUtensorMap *map, uint32_t src, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"((uint64_t)map),
                 "r"(src), "r"(c0), "r"(c1)
                 : "memory");
}
/* wgmma operand descriptors: K-major, 128-byte rows, 128-byte swizzle,
 * 8-row groups 1024 B apart. The high word is the same for every operand;
 * the low word is the address / 16 (14 bits, shared memory is < 256 KB)
 * and the leading byte offset, so the operand `bytes` further on is the low
 * word + bytes / 16: one add per wgmma, no carry into the high word. */
__device__ __forceinline__ uint32_t wg_lo(uint32_t addr) { return ((addr & 0x3FFFF) >> 4) | (1u << 16); }
__device__ __forceinline__ uint64_t wg_desc_lo(uint32_t lo)
{
    uint64_t d;
    asm("mov.b64 %0, {%1, %2};\n" : "=l"(d) : "r"(lo), "r"((1024u >> 4) | (1u << 30)));
    return d;
}

/* The warpgroup index, as a value the compiler knows is the same across the
 * warp: what derives from it (stages, descriptors) then stays in uniform
 * registers, where wgmma takes its descriptors, instead of moving there
 * before every wgmma. */
__device__ __forceinline__ int warpgroup() { return __shfl_sync(0xffffffffu, (int)(threadIdx.x >> 7), 0); }

/* The stage ring: S stages of `STAGE` bytes at the start of dynamic shared
 * memory (aligned to 1024 bytes for the 128-byte swizzle), then EXTRA bytes
 * (the persistent tiles' output staging), then S "full" mbarriers (one
 * arrival: the producer's, plus the bytes) and S "empty" ones (`consumers`
 * arrivals). Thread 0 initializes them; every thread returns the ring's
 * address once they are visible. */
template <int S, int STAGE, int EXTRA = 0> __device__ __forceinline__ uint32_t ring_init(int consumers)
{
    extern __shared__ unsigned char tma_raw[];
    const uint32_t smem = ((uint32_t)__cvta_generic_to_shared(tma_raw) + 1023u) & ~1023u;
    const uint32_t full = smem + S * STAGE + EXTRA, empty = full + S * 8;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; s++) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, consumers);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    return smem;
}

template <typename T> __device__ __forceinline__ float bias_at(const T *__restrict__ b, int64_t i)
{
    return b ? fmlp_to_f32(__ldg(b + i)) : 0.0f;
}

/* Bias, activation (fast forms), GLU pairing; rows and columns past the
 * output's end are skipped. Each thread holds, per 8 columns j, rows g and
 * g + 8 of its warp's 16, columns 2 tq and 2 tq + 1. The activation is a
 * constant here: a switch per element costs the GLU tiles a fifth of their
 * speed (measured on the H200 when a sixth activation joined the switch). */
template <typename T, bool GLU, int BN, int ACT>
__device__ __forceinline__ void tma_epilogue_act(const fmlp_cu_gemm_args &p, const float (&d)[BN / 2], int64_t m0,
                                                 int64_t n0)
{
    T *out = static_cast<T *>(p.out);
    const T *__restrict__ bias = static_cast<const T *>(p.b);
    const bool paired = ((uintptr_t)out & 3) == 0 && (p.ldo & 1) == 0;
    const int t = threadIdx.x & 127, lane = t & 31, g = lane >> 2, tq = lane & 3;
    const int64_t r0 = m0 + (t >> 5) * 16 + g;
    if (GLU) {
#pragma unroll
        for (int j = 0; j < BN / 16; j++) {
            const int64_t pc = n0 + j * 16 + 2 * tq, hc = n0 / 2 + j * 8 + 2 * tq;
            if (hc >= p.n) continue;
            const float bg0 = bias_at(bias, pc), bg1 = bias_at(bias, pc + 1);
            const float bu0 = bias_at(bias, pc + 8), bu1 = bias_at(bias, pc + 9);
#pragma unroll
            for (int half = 0; half < 2; half++) {
                if (r0 + half * 8 >= p.m) continue;
                const float *e = d + 8 * j + half * 2;
                fmlp_store2<T>(out + (r0 + half * 8) * p.ldo + hc, fmlp_act_fast(ACT, e[0] + bg0) * (e[4] + bu0),
                               fmlp_act_fast(ACT, e[1] + bg1) * (e[5] + bu1), hc + 1 < p.n, paired);
            }
        }
    } else {
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
            const int64_t col = n0 + j * 8 + 2 * tq;
            if (col >= p.n) continue;
            const bool both = col + 1 < p.n;
            const float b0 = bias_at(bias, col), b1 = both ? bias_at(bias, col + 1) : 0.0f;
#pragma unroll
            for (int half = 0; half < 2; half++) {
                if (r0 + half * 8 >= p.m) continue;
                const float *e = d + 4 * j + half * 2;
                fmlp_store2<T>(out + (r0 + half * 8) * p.ldo + col, fmlp_act_fast(ACT, e[0] + b0),
                               fmlp_act_fast(ACT, e[1] + b1), both, paired);
            }
        }
    }
}

#define FMLP_TMA_EPILOGUE_CASE(e, ...)                     \
    case e: tma_epilogue_act<T, GLU, BN, e>(p, d, m0, n0); \
        return;

template <typename T, bool GLU, int BN>
__device__ __forceinline__ void tma_epilogue(const fmlp_cu_gemm_args &p, const float (&d)[BN / 2], int64_t m0, int64_t n0)
{
    switch (p.act) { FMLP_ACT_TABLE(FMLP_TMA_EPILOGUE_CASE) }
}

/* One output tile per block; the grid is 1-D over tiles, N fastest, so the
 * blocks running at once share a few row blocks of x and sweep the
 * weights, which stay in L2 (and rows need not fit grid.y). A persistent
 * grid looping over this body's tiles was measured no faster
 * (h200_kernels.txt); tmp_body's persistent tiles, with a producer that
 * runs ahead across tiles and warpgroups taking turns, are. */
template <typename T, bool GLU, int WGS, int BN, int S>
__device__ __forceinline__ void tma_body(const CUtensorMap *tx, const CUtensorMap *tw, const fmlp_cu_gemm_args &p)
{
    using C = tma_cfg<WGS, BN, S>;
    const int wg = warpgroup();
    const int KT = (int)((p.k + 63) / 64);
    /* tma_launch keeps tiles and rows under 2^31 */
    const int nt = (int)((p.nw + BN - 1) / BN);
    const int m0 = (int)blockIdx.x / nt * C::BM, n0 = (int)blockIdx.x % nt * BN;
    const uint32_t smem = ring_init<S, C::STAGE>(WGS);
    const uint32_t full = smem + S * C::STAGE, empty = full + S * 8;

    if (wg == WGS) {
        if (threadIdx.x == 128 * WGS) {
            for (int kt = 0; kt < KT; kt++) {
                const int s = kt % S;
                if (kt >= S) mbar_wait(empty + 8 * s, (uint32_t)(kt / S - 1) & 1u);
                mbar_expect(full + 8 * s, C::STAGE);
                tma_load(smem + s * C::STAGE, tx, full + 8 * s, kt * 64, m0);
                tma_load(smem + s * C::STAGE + C::A_BYTES, tw, full + 8 * s, kt * 64, n0);
            }
        }
    } else {
        float d[BN / 2];
        for (int kt = 0; kt < KT; kt++) {
            const int s = kt % S;
            mbar_wait(full + 8 * s, (uint32_t)(kt / S) & 1u);
            const uint32_t a = wg_lo(smem + s * C::STAGE + wg * 64 * 128), b = wg_lo(smem + s * C::STAGE + C::A_BYTES);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int kk = 0; kk < 4; kk++) wgmma_tile<T, BN>(d, wg_desc_lo(a + kk * 2), wg_desc_lo(b + kk * 2), kt > 0 || kk > 0);
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            if (kt > 0 && (threadIdx.x & 127) == 0) mbar_arrive(empty + 8 * ((kt - 1) % S));
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        tma_epilogue<T, GLU, BN>(p, d, (int64_t)m0 + wg * 64, n0);
    }
}

#endif

/* The persistent family: one block per SM walks its tiles (tile_at's
 * grouped order) while a producer warpgroup, shrunk to 40 registers by
 * setmaxnreg (24 for 128x160 and 128x192), keeps the stage ring full across tile
 * boundaries, so the next tile's first stages load during this tile's
 * epilogue. The two consumer warpgroups, grown to 232 registers (240),
 * hold 128 accumulators each (160, 192) and either share a tile (WPT = 2: a 128 x BN tile, 64 rows each, the
 * weight stage read by both) or take turns on tiles of their own (WPT = 1,
 * "ping-pong": each runs MW m64 slices of a 64 MW x BN tile, and one's
 * epilogue overlaps the other's matrix work). Ping-pong teams consume the
 * ring in tile order; a named barrier per team makes a team wait for its
 * turn before its first full-barrier wait, so no wait is issued more than
 * one phase ahead of its mbarrier (a parity wait cannot tell phases two
 * apart).
 * TS: a ping-pong team stages its output tile in shared memory and writes
 * it with TMA stores, whole lines instead of the accumulators'
 * half-sector pair stores. With short K (768: 12 k steps a tile) what a
 * tile costs besides its matrix work sets the pace; the 128x192 form
 * (which takes its bias from L1) also moves a sixth fewer operand bytes
 * per FLOP than 128x128 and leads at long K too. TS 2 stages one box a
 * round even where the whole tile would fit beside four stages, for a
 * fifth: the 128x192 GLU tile read 1.02-1.03x cuBLASLt with it at 4096
 * rows of 4096 -> 14336 against 1.00-1.01x, and 0.91-0.96x against
 * 1.01-1.02x at 2048-8192 rows of 768 -> 3072, where its epilogue runs
 * more often (H100, bench/results/h100_glu_stages_2026-12-07.md). */
/* Stages of `stage` bytes that fit in an SM's shared memory beside
 * `extra` bytes of output staging (and the 1 KB the hardware reserves). */
constexpr int stages_beside(int stage, int extra) { return (227 * 1024 - 1024 - extra) / (stage + 16); }

template <int WPT, int MW, int BN, int SR, int TS, bool GLU> struct tmp_cfg {
    static_assert(!TS || WPT == 1, "TMA-stored output tiles are a ping-pong team's");
    static constexpr int BM = 64 * MW * WPT;
    static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
    /* per team: boxes of BM rows x OBC output columns, 64 (128-byte
     * swizzle) where they divide the tile's output columns, else 32
     * (64-byte swizzle: the 96 of a 192-wide GLU tile) */
    static constexpr int OUT = GLU ? BN / 2 : BN, OBC = OUT % 64 == 0 ? 64 : 32;
    static_assert(!TS || OUT % OBC == 0, "staged output tiles are whole boxes");
    static constexpr int BOX = BM * OBC * 2, BOXES = OUT / OBC;
    /* A tile's boxes staged at once, or one box a round (TS 2, or where
     * staging all of them would leave fewer than four stages): the plain
     * 128x192 with three stages read 0.77-0.80x cuBLASLt on 3072 -> 768 at
     * 8192-32768 rows, in rounds with four 0.96-0.97x (H100,
     * bench/results/h100_pdl_rounds_2026-12-06.md) */
    static constexpr int RND = TS == 2 || (TS && stages_beside(STAGE, 2 / WPT * BOXES * BOX) < 4) ? BOXES : 1, BPR = BOXES / RND;
    static constexpr int STG = TS ? BPR * BOX : 0, EXTRA = 2 / WPT * STG;
    /* SR stages, or as many as fit beside the staging area */
    static constexpr int S_FIT = stages_beside(STAGE, EXTRA), S = SR < S_FIT ? SR : S_FIT;
    static constexpr int SMEM = S * STAGE + EXTRA + 2 * S * 8 + 1024;
};

#ifdef FMLP_HAVE_WGMMA

/* Tile t of an mt x nt grid in groups of GM row blocks, rows fastest in a
 * group: the tiles in flight at once share GM row blocks of x and a few
 * column blocks of the weights, so both stay in L2 even when the weights
 * are far larger than it. */
__device__ __forceinline__ void tile_at(int t, int mt, int nt, int &mb, int &nb)
{
    constexpr int GM = 16;
    const int per = GM * nt, g = t / per, first = g * GM;
    const int gm = mt - first < GM ? mt - first : GM, r = t - g * per;
    mb = first + r % gm;
    nb = r / gm;
}

template <typename T> __device__ __forceinline__ float bits_f32(uint32_t h);
template <> __device__ __forceinline__ float bits_f32<__nv_bfloat16>(uint32_t h) { return __uint_as_float(h << 16); }
template <> __device__ __forceinline__ float bits_f32<__half>(uint32_t h)
{
    return __half2float(__ushort_as_half((unsigned short)h));
}

/* The bias of this thread's columns of a tile, as pairs of raw 16-bit
 * values, loaded when the tile starts so that the loads' latency passes
 * under the main loop: the epilogue then waits on no memory. (Loaded in
 * the epilogue, one dependent round trip per 16 columns cost about 8 us
 * per 128x256 tile on the H200, as much as the tile's matrix work at
 * K = 768.) GLU: word 2j gate, 2j + 1 up of columns n0 + 16j + 2tq (+1);
 * plain: word j of columns n0 + 8j + 2tq (+1). Zeros past the end. */
template <bool GLU> __device__ __forceinline__ uint32_t bias_word(const fmlp_cu_gemm_args &p, int i, int64_t n0)
{
    const unsigned short *__restrict__ b = static_cast<const unsigned short *>(p.b);
    const int64_t lim = GLU ? p.nw : p.n;
    const int tq = threadIdx.x & 3;
    const int64_t c = GLU ? n0 + (i >> 1) * 16 + (i & 1) * 8 + 2 * tq : n0 + i * 8 + 2 * tq;
    const uint32_t lo = b && c < lim ? __ldg(b + c) : 0u, hi = b && c + 1 < lim ? __ldg(b + c + 1) : 0u;
    return lo | hi << 16;
}

template <typename T, bool GLU, int BN>
__device__ __forceinline__ void tmp_bias(const fmlp_cu_gemm_args &p, uint32_t (&bw)[BN / 8], int64_t n0)
{
#pragma unroll
    for (int i = 0; i < BN / 8; i++) bw[i] = bias_word<GLU>(p, i, n0);
}

/* tma_epilogue_act with the bias from registers and the row bounds and
 * row pointers worked out once. */
template <typename T, bool GLU, int BN, int ACT>
__device__ __forceinline__ void tmp_epilogue_act(const fmlp_cu_gemm_args &p, const float (&d)[BN / 2],
                                                 const uint32_t (&bw)[BN / 8], int64_t m0, int64_t n0)
{
    T *out = static_cast<T *>(p.out);
    const bool paired = ((uintptr_t)out & 3) == 0 && (p.ldo & 1) == 0;
    const int t = threadIdx.x & 127, lane = t & 31, g = lane >> 2, tq = lane & 3;
    const int64_t r0 = m0 + (t >> 5) * 16 + g;
    const bool ok0 = r0 < p.m, ok1 = r0 + 8 < p.m;
    T *o0 = out + r0 * p.ldo, *o1 = o0 + 8 * p.ldo;
    if (GLU) {
#pragma unroll
        for (int j = 0; j < BN / 16; j++) {
            const int64_t hc = n0 / 2 + j * 8 + 2 * tq;
            if (hc >= p.n) continue;
            const bool both = hc + 1 < p.n;
            const float bg0 = bits_f32<T>(bw[2 * j] & 0xFFFFu), bg1 = bits_f32<T>(bw[2 * j] >> 16);
            const float bu0 = bits_f32<T>(bw[2 * j + 1] & 0xFFFFu), bu1 = bits_f32<T>(bw[2 * j + 1] >> 16);
            const float *e = d + 8 * j;
            if (ok0)
                fmlp_store2<T>(o0 + hc, fmlp_act_fast(ACT, e[0] + bg0) * (e[4] + bu0),
                               fmlp_act_fast(ACT, e[1] + bg1) * (e[5] + bu1), both, paired);
            if (ok1)
                fmlp_store2<T>(o1 + hc, fmlp_act_fast(ACT, e[2] + bg0) * (e[6] + bu0),
                               fmlp_act_fast(ACT, e[3] + bg1) * (e[7] + bu1), both, paired);
        }
    } else {
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
            const int64_t col = n0 + j * 8 + 2 * tq;
            if (col >= p.n) continue;
            const bool both = col + 1 < p.n;
            const float b0 = bits_f32<T>(bw[j] & 0xFFFFu), b1 = bits_f32<T>(bw[j] >> 16);
            const float *e = d + 4 * j;
            if (ok0) fmlp_store2<T>(o0 + col, fmlp_act_fast(ACT, e[0] + b0), fmlp_act_fast(ACT, e[1] + b1), both, paired);
            if (ok1) fmlp_store2<T>(o1 + col, fmlp_act_fast(ACT, e[2] + b0), fmlp_act_fast(ACT, e[3] + b1), both, paired);
        }
    }
}

#define FMLP_TMP_EPILOGUE_CASE(e, ...)                             \
    case e: tmp_epilogue_act<T, GLU, BN, e>(p, d, bw, m0, n0); \
        return;

template <typename T, bool GLU, int BN>
__device__ __forceinline__ void tmp_epilogue(const fmlp_cu_gemm_args &p, const float (&d)[BN / 2],
                                             const uint32_t (&bw)[BN / 8], int64_t m0, int64_t n0)
{
    switch (p.act) { FMLP_ACT_TABLE(FMLP_TMP_EPILOGUE_CASE) }
}

template <typename T> __device__ __forceinline__ uint32_t pack2(float v0, float v1)
{
    const T pair[2] = {fmlp_from_f32<T>(v0), fmlp_from_f32<T>(v1)};
    return *reinterpret_cast<const uint32_t *>(pair);
}

/* tmp_epilogue_act into a team's staging area: m64 slice w of its
 * BM x OUT output tile, as boxes of OBC columns laid out the way the
 * output tensor map's swizzle reads them (128-byte rows: 16-byte chunk c
 * of row r at chunk c ^ (r & 7); 64-byte rows: c ^ ((r >> 1) & 3)). A
 * warp's pair stores then fall on 32 distinct banks. Bounds are the TMA
 * store's. The bias comes from bw, or where the accumulators leave no
 * registers for it (BREG false) from L1, prefetched when the tile
 * started. GELU-tanh takes the hardware tanh here (fmlp_act_fast). */
template <typename T, bool GLU, int BN, int OBC, int BOX, int BPR, bool BREG, int ACT>
__device__ __forceinline__ void tmp_stage_act(const fmlp_cu_gemm_args &p, const float (&d)[BN / 2],
                                              const uint32_t *bw, int64_t n0, uint32_t stg, int w, int r)
{
    const int t = threadIdx.x & 127, lane = t & 31, g = lane >> 2, tq = lane & 3;
    const uint32_t row0 = stg + (uint32_t)(w * 64 + (t >> 5) * 16 + g) * (OBC * 2) + 4 * tq, row1 = row0 + 8 * OBC * 2;
    /* the box of the 8 columns j * 8.. of the tile, and where they go in
     * the staging area (rows g and g + 8 share their swizzle); a round
     * stages boxes r * BPR.. */
    auto box = [](int j) { return OBC == 64 ? j >> 3 : j >> 2; };
    auto chunk = [g, r, box](int j) {
        return (uint32_t)((box(j) - r * BPR) * BOX) +
               (OBC == 64 ? (uint32_t)(((j & 7) ^ g) << 4) : (uint32_t)(((j & 3) ^ ((g >> 1) & 3)) << 4));
    };
    auto word = [&](int i) -> uint32_t {
        if constexpr (BREG) return bw[i];
        else return bias_word<GLU>(p, i, n0);
    };
    if (GLU) {
#pragma unroll
        for (int j = 0; j < BN / 16; j++) {
            if (box(j) / BPR != r) continue;
            const uint32_t wg = word(2 * j), wu = word(2 * j + 1);
            const float bg0 = bits_f32<T>(wg & 0xFFFFu), bg1 = bits_f32<T>(wg >> 16);
            const float bu0 = bits_f32<T>(wu & 0xFFFFu), bu1 = bits_f32<T>(wu >> 16);
            const float *e = d + 8 * j;
            const uint32_t v0 = pack2<T>(fmlp_act_fast<true>(ACT, e[0] + bg0) * (e[4] + bu0), fmlp_act_fast<true>(ACT, e[1] + bg1) * (e[5] + bu1));
            const uint32_t v1 = pack2<T>(fmlp_act_fast<true>(ACT, e[2] + bg0) * (e[6] + bu0), fmlp_act_fast<true>(ACT, e[3] + bg1) * (e[7] + bu1));
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(row0 + chunk(j)), "r"(v0) : "memory");
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(row1 + chunk(j)), "r"(v1) : "memory");
        }
    } else {
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
            if (box(j) / BPR != r) continue;
            const uint32_t wb = word(j);
            const float b0 = bits_f32<T>(wb & 0xFFFFu), b1 = bits_f32<T>(wb >> 16);
            const float *e = d + 4 * j;
            const uint32_t v0 = pack2<T>(fmlp_act_fast<true>(ACT, e[0] + b0), fmlp_act_fast<true>(ACT, e[1] + b1));
            const uint32_t v1 = pack2<T>(fmlp_act_fast<true>(ACT, e[2] + b0), fmlp_act_fast<true>(ACT, e[3] + b1));
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(row0 + chunk(j)), "r"(v0) : "memory");
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(row1 + chunk(j)), "r"(v1) : "memory");
        }
    }
}

#define FMLP_TMP_STAGE_CASE(e, ...)                                                     \
    case e: tmp_stage_act<T, GLU, BN, OBC, BOX, BPR, BREG, e>(p, d, bw, n0, stg, w, r); \
        return;

template <typename T, bool GLU, int BN, int OBC, int BOX, int BPR, bool BREG>
__device__ __forceinline__ void tmp_stage(const fmlp_cu_gemm_args &p, const float (&d)[BN / 2], const uint32_t *bw,
                                          int64_t n0, uint32_t stg, int w, int r)
{
    switch (p.act) { FMLP_ACT_TABLE(FMLP_TMP_STAGE_CASE) }
}

/* A team's 128 threads (named barriers 3 and 4; 1 and 2 order the teams). */
__device__ __forceinline__ void team_sync(int team)
{
    asm volatile("bar.sync %0, 128;\n" ::"r"(3 + team) : "memory");
}

template <typename T, bool GLU, int WPT, int MW, int BN, int SR, int TS>
__device__ __forceinline__ void tmp_body(const CUtensorMap *tx, const CUtensorMap *tw, const CUtensorMap *to,
                                         const fmlp_cu_gemm_args &p, bool ts)
{
    using C = tmp_cfg<WPT, MW, BN, SR, TS, GLU>;
    constexpr int S = C::S;
    constexpr int TEAMS = 2 / WPT;
    /* the bias in registers, except where the accumulators and the bias
     * words would not fit (plain 128x256: 128 accumulators and 32 words;
     * 128x192: 192 and 24; ptxas spills; 128x160 is built alike); there
     * it is prefetched into L1 at the tile's start and read from there */
    constexpr bool BREG = BN <= 128;
    /* 160 or 192 accumulators a thread: the consumers take 240 registers, the
     * producer (a loop of TMA issues) 24 */
    constexpr bool BIG = MW * BN > 256;
    const int wg = warpgroup();
    const int KT = (int)((p.k + 63) / 64);
    /* tma_launch keeps tiles and rows under 2^31 */
    const int mt = (int)((p.m + C::BM - 1) / C::BM), nt = (int)((p.nw + BN - 1) / BN), tiles = mt * nt;
    /* Launched as a programmatic dependent (p.pdl), the kernel after may
     * start its blocks as these leave their SMs. */
    pdl_launch_dependents();
    const uint32_t smem = ring_init<S, C::STAGE, C::EXTRA>(WPT);
    const uint32_t stg0 = smem + S * C::STAGE, full = stg0 + C::EXTRA, empty = full + S * 8;

    if (wg == 2) {
        if (BIG) asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
        else asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x == 256) {
            asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)tx) : "memory");
            asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)tw) : "memory");
            /* Under PDL the kernel before may still be writing x, or reading
             * the output: nothing global is loaded before this wait, and the
             * consumers write only what these loads feed. */
            pdl_wait();
            int s = 0;
            uint32_t ph = 0;
            bool wrapped = false;
            for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int mb, nb;
                tile_at(tile, mt, nt, mb, nb);
                for (int kt = 0; kt < KT; kt++) {
                    if (wrapped) mbar_wait(empty + 8 * s, ph ^ 1u);
                    mbar_expect(full + 8 * s, C::STAGE);
                    tma_load(smem + s * C::STAGE, tx, full + 8 * s, kt * 64, mb * C::BM);
                    tma_load(smem + s * C::STAGE + C::A_BYTES, tw, full + 8 * s, kt * 64, nb * BN);
                    if (++s == S) {
                        s = 0;
                        ph ^= 1u;
                        wrapped = true;
                    }
                }
            }
        }
    } else {
        if (BIG) asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
        else asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
        const int team = WPT == 2 ? 0 : wg, wi = WPT == 2 ? wg : 0;
        const bool lead = (threadIdx.x & 127) == 0;
        const uint32_t stg = stg0 + team * C::STG;
        float d[MW][BN / 2];
        for (int j = team;; j += TEAMS) {
            const int tile = blockIdx.x + j * gridDim.x;
            if (tile >= tiles) break;
            int mb, nb;
            tile_at(tile, mt, nt, mb, nb);
            uint32_t bw[BREG ? BN / 8 : 1];
            if constexpr (BREG) tmp_bias<T, GLU, BN>(p, bw, (int64_t)nb * BN);
            else if ((threadIdx.x & 127) < (BN + 63) / 64 && p.b && (int64_t)nb * BN + (threadIdx.x & 127) * 64 < (GLU ? p.nw : p.n))
                asm volatile("prefetch.global.L1 [%0];\n" ::"l"(static_cast<const T *>(p.b) + (int64_t)nb * BN +
                                                                   (threadIdx.x & 127) * 64));
            /* this tile's first k step in the ring */
            const int64_t first = (int64_t)j * KT;
            int s = (int)(first % S);
            uint32_t ph = (uint32_t)(first / S) & 1u;
            if (TEAMS == 2 && j > 0) {
                if (team == 0) asm volatile("bar.sync 1, 256;\n" ::: "memory");
                else asm volatile("bar.sync 2, 256;\n" ::: "memory");
            }
            int prev = -1;
            for (int kt = 0; kt < KT; kt++) {
                mbar_wait(full + 8 * s, ph);
                const uint32_t a = wg_lo(smem + s * C::STAGE + wi * MW * 64 * 128), b = wg_lo(smem + s * C::STAGE + C::A_BYTES);
                asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
                for (int kk = 0; kk < 4; kk++)
#pragma unroll
                    for (int w = 0; w < MW; w++)
                        wgmma_tile<T, BN>(d[w], wg_desc_lo(a + w * (64 * 128 >> 4) + kk * 2), wg_desc_lo(b + kk * 2),
                                          kt > 0 || kk > 0);
                asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
                if (prev >= 0 && lead) mbar_arrive(empty + 8 * prev);
                prev = s;
                if (++s == S) {
                    s = 0;
                    ph ^= 1u;
                }
            }
            /* the other team's turn: its tile's stages are next in the ring */
            if (TEAMS == 2 && tile + (int)gridDim.x < tiles) {
                if (team == 0) asm volatile("bar.arrive 2, 256;\n" ::: "memory");
                else asm volatile("bar.arrive 1, 256;\n" ::: "memory");
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            if (prev >= 0 && lead) mbar_arrive(empty + 8 * prev);
            if constexpr (TS) if (ts) {
#pragma unroll
                for (int r = 0; r < C::RND; r++) {
                    /* the staging area is free once the team's last store has read it */
                    if (lead) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
                    team_sync(team);
#pragma unroll
                    for (int w = 0; w < MW; w++)
                        tmp_stage<T, GLU, BN, C::OBC, C::BOX, C::BPR, BREG>(p, d[w], bw, (int64_t)nb * BN, stg, w, r);
                    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                    team_sync(team);
                    if (lead) {
                        const int c0 = nb * C::OUT;
#pragma unroll
                        for (int bx = r * C::BPR; bx < (r + 1) * C::BPR; bx++)
                            if (c0 + bx * C::OBC < p.n)
                                tma_store(to, stg + (bx - r * C::BPR) * C::BOX, c0 + bx * C::OBC, mb * C::BM);
                        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
                    }
                }
                continue;
            }
#pragma unroll
            for (int w = 0; w < MW; w++)
                if constexpr (BREG) tmp_epilogue<T, GLU, BN>(p, d[w], bw, (int64_t)mb * C::BM + (wi * MW + w) * 64, (int64_t)nb * BN);
                else tma_epilogue<T, GLU, BN>(p, d[w], (int64_t)mb * C::BM + (wi * MW + w) * 64, (int64_t)nb * BN);
        }
        /* the staging area must outlive the stores' reads of it; the
         * writes are the grid's and complete with it */
        if (TS && ts && lead) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
    }
}

#endif

} // namespace

#ifdef FMLP_HAVE_WGMMA
#define FMLP_TMA_BODY(T, GLU, WGS, BN, S) tma_body<T, GLU, WGS, BN, S>(&tx, &tw, p);
#define FMLP_TMP_BODY(T, GLU, WPT, MW, BN, S, TS) tmp_body<T, GLU, WPT, MW, BN, S, TS>(&tx, &tw, &to, p, ts != 0);
#else
#define FMLP_TMA_BODY(T, GLU, WGS, BN, S) (void)tx, (void)tw, (void)p;
#define FMLP_TMP_BODY(T, GLU, WPT, MW, BN, S, TS) (void)tx, (void)tw, (void)to, (void)p, (void)ts;
#endif
#define FMLP_TMA_K(NAME, T, GLU, WGS, BN, S)                                                                  \
    extern "C" __global__ void __launch_bounds__(tma_cfg<WGS, BN, S>::THREADS, tma_cfg<WGS, BN, S>::MIN_BLOCKS) \
        NAME(const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap tw,                   \
             const fmlp_cu_gemm_args p)                                                                       \
    {                                                                                                         \
        FMLP_TMA_BODY(T, GLU, WGS, BN, S)                                                                     \
    }
/* One block per SM: the register cap at entry (384 threads, 1 block) is
 * what lets setmaxnreg move registers between the warpgroups. to: the
 * output's tensor map, used where ts is set (TS configurations, an output
 * the TMA can write). */
#define FMLP_TMP_K(NAME, T, GLU, WPT, MW, BN, S, TS)                                                     \
    extern "C" __global__ void __launch_bounds__(384, 1)                                                     \
        NAME(const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap tw,                   \
             const fmlp_cu_gemm_args p, const __grid_constant__ CUtensorMap to, int ts)                       \
    {                                                                                                         \
        FMLP_TMP_BODY(T, GLU, WPT, MW, BN, S, TS)                                                         \
    }
/* Tile configurations, smallest first: BM x BN, stages. */
#define FMLP_TMA_CONFIGS(X) \
    X(64x64, 1, 64, 6)      \
    X(64x128, 1, 128, 4)    \
    X(128x128, 2, 128, 3)   \
    X(64x48, 1, 48, 8)      \
    X(128x48, 2, 48, 6)
/* Persistent configurations: name, warpgroups per tile, m64 slices per
 * warpgroup, BN, stages (BM = 64 x the two middle numbers; fewer where
 * the output staging leaves no room), TMA-stored output (0 no, 1 yes, 2
 * one box a round). tma_pick names them by their position. */
#define FMLP_TMP_CONFIGS(X)                          \
    X(128x256_coop, 2, 1, 256, 4, 0)                 \
    X(128x128_pingpong, 1, 2, 128, 6, 0)             \
    X(128x128_pingpong_tmastore, 1, 2, 128, 6, 1)    \
    X(128x192_pingpong_tmastore, 1, 2, 192, 4, 1)    \
    X(128x160_pingpong, 1, 2, 160, 6, 0)             \
    X(128x192_pingpong_tmastore_s5, 1, 2, 192, 5, 2)
#define FMLP_TMA_FAMILY(SHAPE, WGS, BN, S)                                                           \
    FMLP_TMA_K(fmlp_gemm_bf16_wgmma_##SHAPE, __nv_bfloat16, false, WGS, BN, S)                       \
    FMLP_TMA_K(fmlp_gemm_glu_bf16_wgmma_##SHAPE, __nv_bfloat16, true, WGS, BN, S)                    \
    FMLP_TMA_K(fmlp_gemm_f16_wgmma_##SHAPE, __half, false, WGS, BN, S)                               \
    FMLP_TMA_K(fmlp_gemm_glu_f16_wgmma_##SHAPE, __half, true, WGS, BN, S)
#define FMLP_TMP_FAMILY(SHAPE, WPT, MW, BN, S, TS)                                               \
    FMLP_TMP_K(fmlp_gemm_bf16_wgmma_##SHAPE, __nv_bfloat16, false, WPT, MW, BN, S, TS)           \
    FMLP_TMP_K(fmlp_gemm_glu_bf16_wgmma_##SHAPE, __nv_bfloat16, true, WPT, MW, BN, S, TS)        \
    FMLP_TMP_K(fmlp_gemm_f16_wgmma_##SHAPE, __half, false, WPT, MW, BN, S, TS)                   \
    FMLP_TMP_K(fmlp_gemm_glu_f16_wgmma_##SHAPE, __half, true, WPT, MW, BN, S, TS)
FMLP_TMA_CONFIGS(FMLP_TMA_FAMILY)
FMLP_TMP_CONFIGS(FMLP_TMP_FAMILY)

namespace {

/* persistent: a grid of at most one block per SM that loops over tiles;
 * ts: output tiles written by TMA where it can */
struct tma_entry {
    const void *fn[2][2]; /* [f16][glu] */
    const char *name[2][2];
    int bm, bn, threads, smem[2], obc[2]; /* [glu]; obc: output box columns */
    bool persistent, ts;
};
#define FMLP_TMA_FNS(SHAPE)                                                                                          \
    {{{(const void *)fmlp_gemm_bf16_wgmma_##SHAPE, (const void *)fmlp_gemm_glu_bf16_wgmma_##SHAPE},                   \
      {(const void *)fmlp_gemm_f16_wgmma_##SHAPE, (const void *)fmlp_gemm_glu_f16_wgmma_##SHAPE}},                    \
     {{"fmlp_gemm_bf16_wgmma_" #SHAPE, "fmlp_gemm_glu_bf16_wgmma_" #SHAPE},                                          \
      {"fmlp_gemm_f16_wgmma_" #SHAPE, "fmlp_gemm_glu_f16_wgmma_" #SHAPE}},
#define FMLP_TMA_ENTRY(SHAPE, WGS, BN, S) \
    FMLP_TMA_FNS(SHAPE) 64 * WGS, BN, tma_cfg<WGS, BN, S>::THREADS, {tma_cfg<WGS, BN, S>::SMEM, tma_cfg<WGS, BN, S>::SMEM}, \
        {64, 64}, false, false},
#define FMLP_TMP_ENTRY(SHAPE, WPT, MW, BN, S, TS)                                            \
    FMLP_TMA_FNS(SHAPE) 64 * MW * WPT, BN, 384,                                                  \
        {tmp_cfg<WPT, MW, BN, S, TS, false>::SMEM, tmp_cfg<WPT, MW, BN, S, TS, true>::SMEM},      \
        {tmp_cfg<WPT, MW, BN, S, TS, false>::OBC, tmp_cfg<WPT, MW, BN, S, TS, true>::OBC}, true, TS != 0},
const tma_entry tma_table[] = {FMLP_TMA_CONFIGS(FMLP_TMA_ENTRY) FMLP_TMP_CONFIGS(FMLP_TMP_ENTRY)};
constexpr int TMA_CONFIGS = (int)(sizeof tma_table / sizeof tma_table[0]);
#define FMLP_TMA_COUNT(...) +1
constexpr int TMA_PLAIN_CONFIGS = 0 FMLP_TMA_CONFIGS(FMLP_TMA_COUNT);
/* The one-tile-per-block configurations picked by tile count; the 48-wide
 * ones after them are picked for GLU GEMMs of at most 128 rows. */
constexpr int TMA_PLAIN_PICKS = 3;
constexpr int TMA_64x64 = 0, TMA_128x128 = 2, TMA_64x48 = 3, TMA_128x48 = 4;

/* Table positions of the persistent configurations. */
constexpr int TMA_COOP_128x256 = TMA_PLAIN_CONFIGS, TMA_PINGPONG_128x128 = TMA_PLAIN_CONFIGS + 1,
              TMA_PINGPONG_STORE = TMA_PLAIN_CONFIGS + 2, TMA_PINGPONG_STORE_128x192 = TMA_PLAIN_CONFIGS + 3,
              TMA_PINGPONG_128x160 = TMA_PLAIN_CONFIGS + 4, TMA_PINGPONG_STORE_128x192_S5 = TMA_PLAIN_CONFIGS + 5;

/* True when `tiles` keep at least 90% of the SMs busy in every wave. */
bool fills_waves(int64_t tiles, int64_t sms)
{
    return tiles * 10 >= sms * 9 && tiles * 10 >= (tiles + sms - 1) / sms * sms * 9;
}

/* Persistent tiles where they were measured faster (bf16, GEMM-only
 * tables at 1024-8192 rows: H200, bench/results/h200_gemm_2026-12-01.txt
 * and h200_gemm_tmastore_2026-12-01.txt; H100,
 * h100_glu_128x192_tmastore_2026-12-06.md):
 * - GLU, a 128x128 tile per SM or more: the tile whose whole waves hold the
 *   least work per SM, a narrower tile weighed by what it was measured to
 *   cost more per column.
 *   - K < 3072: the TMA-stored 128x192 where it has more than two tiles
 *     per SM and the TMA-stored 128x128 counted 10% dearer (H100: 1.01-1.11x
 *     cuBLASLt from 2048 rows of 768 -> 3072, 896 -> 4864, 1024 -> 4096,
 *     1536 -> 8960, 2048 -> 8192 and 2304 -> 9216, where the 128x128 one
 *     read 0.74-1.02x; with fewer tiles or a nearly empty last wave, as at
 *     1024 rows of 768 -> 3072, 896 -> 4864, 1024 -> 4096 and 2048 -> 8192,
 *     the 128x128 one: 0.96-1.04x against 0.89-0.93x). The TMA store was 1.03-1.18x
 *     the register-stored 128x128 on 768 -> 3072 (H200).
 *   - K >= 3072: the TMA-stored 128x192 with five stages (TS 2 above;
 *     1.01-1.03x the four-stage one at K = 3072, 3584 and 4096 on the
 *     H100, in 14 of 16 timings at 3072 and 3584,
 *     h100_s5_k3072_2026-12-07.md), the 128x160 counted 1% and the
 *     register-stored 128x128 3% dearer (a sixth fewer operand bytes per
 *     FLOP through L2 gives the wider tile a higher clock under the power
 *     cap: 1.03-1.11x the 128x128 one at 2048-8192 rows of 3584 -> 18944,
 *     3072 -> 24576 and 4096 -> 14336, h200_gemm_2026-12-02.md; on the
 *     H100 the TMA-stored 128x192 read 0.99-1.05x cuBLASLt at 4096-8192
 *     rows of 4096 -> 14336, 3584 -> 18944 and 3072 -> 8192, the
 *     register-stored one it replaces 0.90-1.03x). The 128x160 fills the
 *     waves of 1024 rows of 4096 -> 14336 better (1.00-1.01x cuBLASLt;
 *     h200_glu_128x160_2026-12-04.md).
 * - plain, a 128x128 tile per SM or more, by the same measure of work per
 *   SM: the TMA-stored 128x192 where it has a wave of tiles and beats the
 *   TMA-stored 128x128 counted 10% dearer (3072 -> 768 at 8192 / 32768
 *   rows: 0.96 / 0.97x cuBLASLt against 0.84 / 0.81x,
 *   h100_pdl_rounds_2026-12-06.md), unless the shared 128x256 tile, at K
 *   >= 2048 with its tiles filling whole waves and counted 1% dearer, holds
 *   no more (14336 -> 4096 at 1024-8192 rows: 0.95-0.96x against
 *   0.70-0.90x for the 128x192; 1.18-1.30x the one-tile-per-block kernel;
 *   at 32768 rows of 3072 -> 768, equal work per SM, it read 0.83x against
 *   the 128x192's 0.97x); else the TMA-stored 128x128 where its tiles fill
 *   whole waves (1.03-1.10x the register-stored one on 3072 -> 768).
 * - GLU of at most 128 rows with fewer 128x128 tiles than SMs (H100,
 *   GEMM-only against cuBLASLt's plain GEMM of the same size, timed as
 *   plain launches, which may favour fmlp; the tutorial's forward in a
 *   graph went from 11.3 / 15.2 / 13.7 to 10.9 / 13.8 / 12.5 us L2-warm
 *   at 64 / 96 / 128 rows;
 *   bench/results/h100_glu_small_tiles_2026-12-06.md): at up to 64 rows
 *   the 64x48 tile where 64x64 tiles leave SMs without one (768 -> 3072:
 *   1.10-1.15x against 0.99-1.06x); at 65-128 rows 128x48 unless the
 *   128x128 tiles cover half the SMs (768 -> 3072 at 96 / 128 rows:
 *   0.81-0.82 / 0.94-1.00x against 0.69 / 0.75-0.79x for the 64x64 picked
 *   before; 896 -> 4864 at 128 rows: 128x128 0.82-1.04x, 128x48
 *   0.76-0.99x, the 64x128 picked before 0.69-0.93x). From 193 rows, K <
 *   2048, the TMA-stored ping-pong even with fewer tiles than SMs (768 ->
 *   3072 at 256 rows: 0.90x against 0.62x for the 64x128 picked before,
 *   the forward 14% faster L2-warm and 10% cold). At 129-192 rows it read
 *   0.86-0.88x against 0.69x too, but there the forward was 4% slower
 *   L2-warm at 192 rows and 2% slower cold at 129, so those keep 64x128.
 * Otherwise the largest one-tile-per-block tile that still gives every SM
 * a tile: large tiles re-read less and stream longer, but below one tile
 * per SM they leave SMs idle (bench/results/h200_kernels.txt: 64x64 wins
 * at 128 rows, 128x128 from about 1024 rows). */
int tma_pick(const fmlp_cu_gemm_args *a)
{
    const int64_t sms = a->sm_count > 0 ? a->sm_count : 132;
    auto tiles = [a](const tma_entry &e) { return ((a->m + e.bm - 1) / e.bm) * ((a->nw + e.bn - 1) / e.bn); };
    const int64_t pp = tiles(tma_table[TMA_PINGPONG_128x128]);
    /* work per SM: the columns of every wave, the last one counted whole,
     * a tile weighed by what it was measured to cost more per column */
    auto cost = [&](int c, int weight) { return (tiles(tma_table[c]) + sms - 1) / sms * tma_table[c].bn * weight; };
    if (a->glu && pp >= sms) {
        if (a->k < 3072)
            return tiles(tma_table[TMA_PINGPONG_STORE_128x192]) > 2 * sms &&
                           cost(TMA_PINGPONG_STORE_128x192, 100) < cost(TMA_PINGPONG_STORE, 110)
                       ? TMA_PINGPONG_STORE_128x192
                       : TMA_PINGPONG_STORE;
        const int cand[3] = {TMA_PINGPONG_STORE_128x192_S5, TMA_PINGPONG_128x160, TMA_PINGPONG_128x128}, weight[3] = {100, 101, 103};
        int best = 0;
        for (int i = 1; i < 3; i++)
            if (cost(cand[i], weight[i]) < cost(cand[best], weight[best])) best = i;
        return cand[best];
    }
    if (a->glu && a->k < 2048 && a->m > 192) return TMA_PINGPONG_STORE;
    if (a->glu && a->m <= 64 && tiles(tma_table[TMA_64x64]) < sms) return TMA_64x48;
    if (a->glu && a->m > 64 && a->m <= 128) return tiles(tma_table[TMA_128x128]) * 2 >= sms ? TMA_128x128 : TMA_128x48;
    if (!a->glu && pp >= sms) {
        const bool coop = a->k >= 2048 && fills_waves(tiles(tma_table[TMA_COOP_128x256]), sms);
        const bool wide = tiles(tma_table[TMA_PINGPONG_STORE_128x192]) >= sms &&
                          cost(TMA_PINGPONG_STORE_128x192, 100) < cost(TMA_PINGPONG_STORE, 110);
        if (coop && (!wide || cost(TMA_COOP_128x256, 101) <= cost(TMA_PINGPONG_STORE_128x192, 100))) return TMA_COOP_128x256;
        if (wide) return TMA_PINGPONG_STORE_128x192;
    }
    if (!a->glu && fills_waves(pp, sms)) return TMA_PINGPONG_STORE;
    for (int i = TMA_PLAIN_PICKS - 1; i > 0; i--)
        if (tiles(tma_table[i]) >= sms) return i;
    return 0;
}

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/* The driver's tensor-map encoder, found at run time so that the library
 * links only the CUDA runtime. */
encode_tiled_fn encoder()
{
    static const encode_tiled_fn fn = [] {
        void *f = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess)
            return (encode_tiled_fn) nullptr;
        return (encode_tiled_fn)f;
    }();
    return fn;
}

/* A (rows, cols) row-major matrix with row stride ld, read in boxes of
 * box_rows x box_cols (64 or 32) elements, their 128 or 64 bytes a row
 * swizzled alike, zeros past its end. */
bool encode_map(CUtensorMap *map, int dtype, const void *base, int64_t rows, int64_t cols, int64_t ld, int box_rows,
                int box_cols)
{
    const encode_tiled_fn enc = encoder();
    if (!enc) return false;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)ld * 2};
    const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
    const cuuint32_t elem[2] = {1, 1};
    return enc(map, dtype == FMLP_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
               const_cast<void *>(base), dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
               box_cols == 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/* The last tensor maps this thread encoded. A map depends only on what
 * it was encoded from, so one encoded earlier for the same matrix and box
 * is the same map; a launch of a few rows otherwise spends about as long
 * encoding its three maps as launching. */
struct map_key {
    const void *base;
    int64_t rows, cols, ld;
    int dtype, box_rows, box_cols;
};
constexpr int MAP_CACHE = 64;
struct cached_map {
    map_key key;
    CUtensorMap map;
};
thread_local cached_map map_cache[MAP_CACHE];
thread_local int map_next;

bool same_key(const map_key &a, const map_key &b)
{
    return a.base == b.base && a.rows == b.rows && a.cols == b.cols && a.ld == b.ld && a.dtype == b.dtype &&
           a.box_rows == b.box_rows && a.box_cols == b.box_cols;
}

/* encode_map's map, from this thread's cache where it holds one. */
bool tensor_map(CUtensorMap *map, int dtype, const void *base, int64_t rows, int64_t cols, int64_t ld, int box_rows,
                int box_cols = 64)
{
    const map_key key = {base, rows, cols, ld, dtype, box_rows, box_cols};
    for (int i = 0; i < MAP_CACHE; i++)
        if (map_cache[i].key.base && same_key(map_cache[i].key, key)) {
            *map = map_cache[i].map;
            return true;
        }
    if (!encode_map(map, dtype, base, rows, cols, ld, box_rows, box_cols)) return false;
    map_cache[map_next] = {key, *map};
    map_next = (map_next + 1) % MAP_CACHE;
    return true;
}

/* Blocks of the entry's launch for the shape; 0 where it cannot run. */
int64_t launch_blocks(const fmlp_cu_gemm_args *a, const tma_entry &e)
{
    const int64_t tiles = ((a->m + e.bm - 1) / e.bm) * ((a->nw + e.bn - 1) / e.bn);
    const int64_t sms = a->sm_count > 0 ? a->sm_count : 132;
    return e.persistent && tiles > sms ? sms : tiles;
}

cudaError_t tma_launch(cudaStream_t s, const fmlp_cu_gemm_args *a, const tma_entry &e)
{
    const int f16 = a->dtype == FMLP_F16 ? 1 : 0, glu = a->glu ? 1 : 0;
    const int64_t tiles = ((a->m + e.bm - 1) / e.bm) * ((a->nw + e.bn - 1) / e.bn);
    if (tiles > 2147483647LL || a->m > 2147483647LL) return cudaErrorInvalidConfiguration;
    CUtensorMap tx, tw, to = {};
    if (!tensor_map(&tx, a->dtype, a->x, a->m, a->k, a->ldx, e.bm) ||
        !tensor_map(&tw, a->dtype, a->w, a->nw, a->k, a->k, e.bn))
        return cudaErrorNotSupported;
    /* TMA writes 16-byte aligned rows; other outputs take the pair stores */
    int ts = e.ts && ((uintptr_t)a->out & 15) == 0 && (a->ldo * 2) % 16 == 0 &&
             tensor_map(&to, a->dtype, a->out, a->m, a->n, a->ldo, e.bm, e.obc[glu]);
    cudaError_t err = fmlp_smem_opt_in(e.fn[f16][glu], (size_t)e.smem[glu]);
    if (err != cudaSuccess) return err;
    void *args[] = {&tx, &tw, (void *)a, &to, &ts};
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)launch_blocks(a, e));
    cfg.blockDim = dim3(e.threads);
    cfg.dynamicSmemBytes = (size_t)e.smem[glu];
    cfg.stream = s;
    /* programmatic dependent launch: the persistent kernels wait for the
     * kernel before in their producer */
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = a->pdl && e.persistent ? 1 : 0;
    return cudaLaunchKernelExC(&cfg, e.fn[f16][glu], args);
}

} // namespace

extern "C" bool fmlp_cu_gemm_wgmma_ready(void) { return encoder() != nullptr; }

extern "C" int fmlp_cu_gemm_wgmma_configs(void) { return TMA_CONFIGS; }

extern "C" int64_t fmlp_cu_gemm_wgmma_blocks(const fmlp_cu_gemm_args *a, int config)
{
    if (config >= TMA_CONFIGS) return 0;
    return launch_blocks(a, tma_table[config < 0 ? tma_pick(a) : config]);
}

extern "C" const char *fmlp_cu_gemm_wgmma_config_name(const fmlp_cu_gemm_args *a, int config)
{
    const tma_entry &e = tma_table[config < 0 ? tma_pick(a) : config];
    return e.name[a->dtype == FMLP_F16 ? 1 : 0][a->glu ? 1 : 0];
}

extern "C" cudaError_t fmlp_cu_gemm_wgmma_config(cudaStream_t s, const fmlp_cu_gemm_args *a, int config)
{
    if (config >= TMA_CONFIGS) return cudaErrorInvalidValue;
    return tma_launch(s, a, tma_table[config < 0 ? tma_pick(a) : config]);
}

extern "C" const char *fmlp_cu_gemm_wgmma_name(const fmlp_cu_gemm_args *a) { return fmlp_cu_gemm_wgmma_config_name(a, -1); }

extern "C" cudaError_t fmlp_cu_gemm_wgmma(cudaStream_t s, const fmlp_cu_gemm_args *a)
{
    return fmlp_cu_gemm_wgmma_config(s, a, -1);
}
