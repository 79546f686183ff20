/* Why: at one row a GEMM is a stream of its weights, and how the loads are
 * shaped decides how close it gets to HBM speed. The mma gemv (gemm.cu)
 * gives each lane 16 bytes of 8 different weight rows per load instruction,
 * 64 contiguous bytes per row; on the H200 that pattern read the Llama-3-8B
 * gate/up weights (235 MB) at 3.4 TB/s and its down weights (K = 14336) at
 * 1.6, where loads of whole 512-byte row segments reached 4.1 and 3.5 (a
 * plain read of the same bytes: 4.35 and 4.1). So at one row each warp here
 * reads a contiguous piece of one weight row, 16 bytes per lane, and
 * multiplies it with x from shared memory in f32 FMAs: one row needs no
 * tensor cores. SPLIT warps share a row, each a contiguous quarter (or
 * half) of K, and their sums are added in warp order, so every run gives
 * the same bits. fmlp_cu_gemm_pick takes it for plain GEMMs; the GLU form
 * runs when asked for (FMLP_CU_GEMM_GEMV_ROW), see the pick for why.
 * Measured: bench/results/h200_row_gemv_2026-12-02.md. */
#include "cuda/device_util.cuh"
#include "cuda/gemv_row.h"
#include "cuda/pdl.cuh"
#include "cuda/row_dot.cuh"
#include "cuda/smem_opt_in.cuh"

namespace {

constexpr int ROW_WARPS = 8;
constexpr int ROW_U = 4; /* 16-byte loads in flight per lane (8 was slower: 69.7 against 66.5 us) */
/* Blocks stream runs of 64 KB of weights, but no fewer than 4 blocks per
 * SM (measured against 32, 128 and 256 KB runs and 8 blocks per SM). */
constexpr int ROW_WAVE_BLOCKS = 4;
constexpr int64_t ROW_RUN_BYTES = 64 * 1024;
constexpr int64_t ROW_MIN_K = 2048; /* below it the mma gemv was as fast or faster (768: 4.2 against 4.9 us) */
constexpr int64_t ROW_MAX_SMEM = 160 * 1024;

/* The packed weight row a warp streams for output group q: plain, one row
 * per warp group; GLU, the gate and the up row of one hidden column
 * (packed in blocks of 8, see kernels.h). -1 past the last output. */
template <bool GLU, int SPLIT>
__device__ __forceinline__ int64_t row_of(const fmlp_cu_gemm_args &p, int64_t q, int rr)
{
    constexpr int OUTS = GLU ? ROW_WARPS / SPLIT / 2 : ROW_WARPS / SPLIT;
    if (GLU) {
        const int64_t c = q * OUTS + rr / 2;
        return c < p.n ? (c / 8) * 16 + c % 8 + (rr & 1) * 8 : -1;
    }
    const int64_t r = q * OUTS + rr;
    return r < p.n ? r : -1;
}

template <typename T, int U>
__device__ __forceinline__ void load_row(const T *w, int64_t k, int64_t row, int64_t b, int64_t ke, int lane,
                                         uint4 (&v)[U])
{
    const uint4 *wr = reinterpret_cast<const uint4 *>(w + (row < 0 ? 0 : row) * k);
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int64_t i = b + u * 32 + lane;
        v[u] = row >= 0 && i < ke ? __ldg(wr + i) : make_uint4(0, 0, 0, 0);
    }
}

template <typename T, bool GLU, int SPLIT, bool PDL> __device__ __forceinline__ void row_body(const fmlp_cu_gemm_args &p)
{
    constexpr int OUTS = GLU ? ROW_WARPS / SPLIT / 2 : ROW_WARPS / SPLIT;
    extern __shared__ uint4 xs[];
    __shared__ float part[ROW_WARPS];
    if (PDL) pdl_launch_dependents();
    const T *w = static_cast<const T *>(p.w);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, sub = warp % SPLIT, rr = warp / SPLIT;
    const int64_t kv = p.k / 8;
    const int64_t per = ((kv + SPLIT - 1) / SPLIT + 31) / 32 * 32;
    const int64_t kb = sub * per, ke = kb + per < kv ? kb + per : kv;
    const int64_t groups = (p.n + OUTS - 1) / OUTS;

    /* A block takes a contiguous run of output groups. Blocks are not
     * persistent: as they retire, a PDL-launched kernel after this one
     * takes their place and starts streaming its own weights. */
    const int64_t run = (groups + gridDim.x - 1) / gridDim.x, q0 = (int64_t)blockIdx.x * run;
    const int64_t q1 = q0 + run < groups ? q0 + run : groups;

    /* The first weights are on their way before the wait: under PDL they
     * stream while the kernel before finishes writing x. */
    uint4 v[ROW_U];
    load_row<T, ROW_U>(w, p.k, q0 < q1 ? row_of<GLU, SPLIT>(p, q0, rr) : -1, kb, ke, lane, v);
    if (PDL) pdl_wait();
    const uint4 *x = static_cast<const uint4 *>(p.x);
    for (int64_t i = threadIdx.x; i < kv; i += blockDim.x) xs[i] = PDL ? ld_after_wait(x + i) : __ldg(x + i);
    __syncthreads();

    bool first = true;
    for (int64_t q = q0; q < q1; q++) {
        const int64_t row = row_of<GLU, SPLIT>(p, q, rr);
        float s = 0.0f;
        for (int64_t b = kb; b < ke; b += 32 * ROW_U) {
            if (!first) load_row<T, ROW_U>(w, p.k, row, b, ke, lane, v);
            first = false;
#pragma unroll
            for (int u = 0; u < ROW_U; u++) {
                const int64_t i = b + u * 32 + lane;
                if (i < ke) s = fmlp_dot8<T>(v[u], xs[i], s);
            }
        }
        for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) part[warp] = s;
        __syncthreads();
        if (threadIdx.x < OUTS) {
            const int t = threadIdx.x;
            T *out = static_cast<T *>(p.out);
            const T *bias = static_cast<const T *>(p.b);
            if (GLU) {
                const int64_t c = q * OUTS + t;
                if (c < p.n) {
                    float g = 0.0f, up = 0.0f;
#pragma unroll
                    for (int j = 0; j < SPLIT; j++) {
                        g += part[2 * t * SPLIT + j];
                        up += part[(2 * t + 1) * SPLIT + j];
                    }
                    const int64_t pg = (c / 8) * 16 + c % 8;
                    if (bias) {
                        g += fmlp_to_f32(bias[pg]);
                        up += fmlp_to_f32(bias[pg + 8]);
                    }
                    out[c] = fmlp_from_f32<T>(fmlp_act_apply(p.act, g) * up);
                }
            } else {
                const int64_t r = q * OUTS + t;
                if (r < p.n) {
                    float acc = 0.0f;
#pragma unroll
                    for (int j = 0; j < SPLIT; j++) acc += part[t * SPLIT + j];
                    if (bias) acc += fmlp_to_f32(bias[r]);
                    out[r] = fmlp_from_f32<T>(fmlp_act_apply(p.act, acc));
                }
            }
        }
        __syncthreads();
    }
}

/* Each warp keeps at least 768 elements of a row (measured best at 3072, 4096 and 14336). */
int row_split(int64_t k) { return k >= 3072 ? 4 : 2; }

} // namespace

#define FMLP_ROW_K(NAME, T, GLU, SPLIT)                                                                        \
    extern "C" __global__ void __launch_bounds__(ROW_WARPS * 32) NAME(const fmlp_cu_gemm_args p)               \
    {                                                                                                          \
        row_body<T, GLU, SPLIT, false>(p);                                                                     \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(ROW_WARPS * 32) NAME##_pdl(const fmlp_cu_gemm_args p)         \
    {                                                                                                          \
        row_body<T, GLU, SPLIT, true>(p);                                                                      \
    }
#define FMLP_ROW_FAMILY(PREFIX, DT, T, GLU)                                                                    \
    FMLP_ROW_K(PREFIX##_##DT##_gemv1s2, T, GLU, 2)                                                             \
    FMLP_ROW_K(PREFIX##_##DT##_gemv1s4, T, GLU, 4)

FMLP_ROW_FAMILY(fmlp_gemm, bf16, __nv_bfloat16, false)
FMLP_ROW_FAMILY(fmlp_gemm_glu, bf16, __nv_bfloat16, true)
FMLP_ROW_FAMILY(fmlp_gemm, f16, __half, false)
FMLP_ROW_FAMILY(fmlp_gemm_glu, f16, __half, true)

namespace {

struct row_entry {
    const void *fn, *fn_pdl;
    const char *name;
};
#define FMLP_RE(NAME) {(const void *)NAME, (const void *)NAME##_pdl, #NAME}
#define FMLP_RE_ROW(PREFIX, DT)                                                                                \
    {FMLP_RE(PREFIX##_##DT##_gemv1s2), FMLP_RE(PREFIX##_##DT##_gemv1s4)}

/* [dtype bf16/f16][glu][split 2, 4] */
const row_entry row_table[2][2][2] = {
    {FMLP_RE_ROW(fmlp_gemm, bf16), FMLP_RE_ROW(fmlp_gemm_glu, bf16)},
    {FMLP_RE_ROW(fmlp_gemm, f16), FMLP_RE_ROW(fmlp_gemm_glu, f16)},
};

const row_entry &row_entry_for(const fmlp_cu_gemm_args *a)
{
    return row_table[a->dtype == FMLP_F16 ? 1 : 0][a->glu ? 1 : 0][row_split(a->k) == 4 ? 1 : 0];
}

} // namespace

extern "C" bool fmlp_cu_gemv_row_applies(const fmlp_cu_gemm_args *a)
{
    if (a->m != 1 || a->k < ROW_MIN_K || a->k % 8 || (a->dtype != FMLP_BF16 && a->dtype != FMLP_F16)) return false;
    if (a->x && ((uintptr_t)a->x & 15)) return false;
    return a->k * 2 <= ROW_MAX_SMEM;
}

extern "C" const char *fmlp_cu_gemv_row_name(const fmlp_cu_gemm_args *a) { return row_entry_for(a).name; }

extern "C" cudaError_t fmlp_cu_gemv_row(cudaStream_t s, const fmlp_cu_gemm_args *a)
{
    const row_entry &e = row_entry_for(a);
    const bool pdl = a->pdl && a->cc_major >= 9;
    const void *fn = pdl ? e.fn_pdl : e.fn;
    const size_t smem = (size_t)a->k * 2;
    if (smem > 48 * 1024) {
        const cudaError_t err = fmlp_smem_opt_in(fn, smem);
        if (err != cudaSuccess) return err;
    }
    const int split = row_split(a->k), outs = a->glu ? ROW_WARPS / split / 2 : ROW_WARPS / split;
    const int64_t groups = (a->n + outs - 1) / outs;
    /* a run of ROW_RUN_BYTES of weights per block, as long as the blocks
     * still fill ROW_WAVE_BLOCKS per SM */
    const int64_t group_bytes = (int64_t)(ROW_WARPS / split) * a->k * 2;
    const int64_t wave = (int64_t)(a->sm_count > 0 ? a->sm_count : 132) * ROW_WAVE_BLOCKS;
    int64_t run = ROW_RUN_BYTES / group_bytes;
    if (run > groups / wave) run = groups / wave;
    if (run < 1) run = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)((groups + run - 1) / run));
    cfg.blockDim = dim3(ROW_WARPS * 32);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = pdl ? 1 : 0;
    void *args[] = {(void *)a};
    return cudaLaunchKernelExC(&cfg, fn, args);
}
