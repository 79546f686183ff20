/* Why: at 1..64 rows a GEMM is the time it takes to stream its weights from
 * memory, so its kernel must keep every SM loading: this is the machinery
 * the streaming GEMMs (gemm_stream.cu) and the one-kernel MLP
 * (mlp_stream.cu) share.
 *
 * Work. Weights (nw, k) are cut into tiles of 16 rows (one mma A operand)
 * and K into 32-wide chunks. A block of 8 warps owns `rw` tiles (a group)
 * and one K slice of `cps` chunks; its warps are rw row warps times
 * kw = 8 / rw K parts, each streaming `cpw` chunks of its tile. A task is
 * (group, slice); the 2-kernel path launches one block per task, the
 * one-kernel MLP loops its resident blocks over them.
 * Loads. A lane loads 16 bytes of weight rows g and g+8 straight into mma
 * fragments (the mma's k order is a permutation of the chunk, the same for
 * weights and x, so the sum is unchanged); each warp keeps a ring of U
 * chunks (U KB) in flight, refilling a slot as soon as it is consumed.
 * Weights (never written while kernels run) take the read-only path,
 * bypass L1 (no_allocate) and ask L2 for 256-byte lines; x stays in L1 for
 * the block's rw row warps, which read the same K range.
 * Sums. The kw warps of a tile add up through shared memory in a fixed
 * order; with splits > 1 each block writes its sums (f32) to the scratch,
 * and the block that arrives last at its group's counter adds the slices in
 * slice order and runs the epilogue, so results are the same bits on every
 * run, and resets the counter for the next launch.
 * Waiting. A block issues its first ring of weight loads, then waits (for
 * the previous kernel under PDL, at the grid barrier in the one-kernel MLP)
 * before it reads x: weights never depend on earlier work. */
#ifndef FMLP_CUDA_STREAM_CUH
#define FMLP_CUDA_STREAM_CUH

#include <pthread.h>
#include <string.h>

#include "cuda/device_util.cuh"
#include "cuda/kernels.h"
#include "cuda/mma_sync.cuh"

namespace fmlp_stream {

constexpr int WARPS = 8, THREADS = WARPS * 32;
constexpr int MAX_ROWS = 64;

/* Scratch layout (FMLP_CU_SCRATCH_BYTES, zeroed once): two regions of
 * per-group counters (phase 0: GEMMs and the MLP's GLU phase; 1: the MLP's
 * down phase), the grid barrier word, then f32 partial sums. */
constexpr int64_t COUNTERS = 8192;
constexpr size_t BARRIER_OFF = 2 * COUNTERS * sizeof(unsigned);
constexpr size_t PART_OFF = 128 * 1024;
constexpr int64_t PART_FLOATS = (int64_t)((FMLP_CU_SCRATCH_BYTES - PART_OFF) / sizeof(float));

/* x-row tiles of 8 per mma (N), and the ring depth in chunks. */
__host__ __device__ constexpr int nt_for(int64_t m) { return m <= 8 ? 1 : m <= 16 ? 2 : m <= 32 ? 4 : 8; }
__host__ __device__ constexpr int ring_for(int nt) { return nt <= 2 ? 8 : 4; }

/* One streaming GEMM as its kernel sees it: the arguments and the split. */
struct job {
    fmlp_cu_gemm_args a;
    int rw, kw, splits, cps, cpw;
    int64_t groups, tasks;
    unsigned *cnt; /* per-group arrival counters (splits > 1) */
    float *part;   /* [groups][splits][rw * 16 * m] partial sums (splits > 1) */
};

/* ------------------------------------------------------------- planning */

/* Model constants for choosing the split (H200 leads; bench/cuda/kernel_check
 * sweeps the splits so these can be refit): HBM and L2 rates, the latency a
 * warp's ring waits on, a split reduction's fixed cost (fence, counter, L2
 * round trip) and what one SM reads per second at most. */
constexpr double HBM_BPS = 4.0e12, L2_BPS = 8.0e12, LAT_S = 0.8e-6, RED_S = 0.8e-6, SM_BPS = 4.5e10;

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* How one GEMM is cut: see the file header. */
struct split {
    int rw, kw, splits, cps, cpw;
    int64_t groups;
};

/* The split of one GEMM for `target` resident blocks, by the model above.
 * Forced rw/splits (benchmarks) are honoured when they fit. */
inline split choose_split(const fmlp_cu_gemm_args &a, int64_t target)
{
    const int nt = nt_for(a.m), U = ring_for(nt);
    const int64_t tiles = cdiv(a.nw, 16), nchunks = cdiv(a.k, 32);
    const double wbytes = 2.0 * (double)a.nw * (double)a.k;
    const int sms = a.sm_count > 0 ? a.sm_count : 132;
    double best = 1e30, best_key = -1.0;
    split sp = {0, 0, 0, 0, 0, 0};
    for (int rw = 8; rw >= 1; rw /= 2) {
        if (a.stream_rw > 0 && rw != a.stream_rw) continue;
        const int kw = WARPS / rw;
        const int64_t groups = cdiv(tiles, rw), elems = (int64_t)rw * 16 * a.m;
        int64_t smax = target / groups;
        if (!a.scratch || groups > COUNTERS) smax = 1;
        if (smax > nchunks) smax = nchunks;
        if (smax > PART_FLOATS / (groups * elems)) smax = PART_FLOATS / (groups * elems);
        if (smax < 1) smax = 1;
        if (a.stream_splits > smax) continue;
        for (int64_t s = 1; s <= smax; s++) {
            const int64_t cps = cdiv(nchunks, s);
            if (cdiv(nchunks, cps) != s) continue; /* same split as a smaller s */
            if (a.stream_splits > 0 && s != a.stream_splits) continue;
            const int64_t cpw = cdiv(cps, kw), blocks = groups * s;
            const double resident = (double)(blocks < target ? blocks : target);
            const double inflight = resident * WARPS * 1024.0 * (double)(cpw < U ? cpw : U);
            const double frac = inflight >= HBM_BPS * LAT_S ? 1.0 : inflight / (HBM_BPS * LAT_S);
            const double per_sm = wbytes / (double)(blocks < sms ? blocks : sms) / SM_BPS;
            const double t_hbm = wbytes / (HBM_BPS * frac);
            const double t_w = t_hbm > per_sm ? t_hbm : per_sm;
            const double t_l2 = wbytes * (1.0 + nt / (2.0 * rw)) / L2_BPS;
            const double t_red = s > 1 ? RED_S + (double)s * (double)elems * 4.0 / SM_BPS : 0.0;
            const double waves = (double)cdiv(blocks, target);
            const double cost = (t_w > t_l2 ? t_w : t_l2) + t_red + (waves - 1.0) * LAT_S;
            /* within 2%: one wave first, then more resident blocks (busier SMs), then fewer splits */
            const double key = (blocks <= target ? 1e9 : 0.0) + resident;
            if (cost < best * 0.98 || (cost < best * 1.02 && key > best_key)) {
                best = cost;
                best_key = key;
                sp = {rw, kw, (int)s, (int)cps, (int)cpw, groups};
            }
        }
    }
    if (!sp.rw) { /* a forced split that cannot run: the chosen one instead */
        fmlp_cu_gemm_args free_a = a;
        free_a.stream_rw = free_a.stream_splits = 0;
        return choose_split(free_a, target);
    }
    return sp;
}

/* The job for `target` resident blocks; `phase` picks the counter region.
 * Choosing costs microseconds of host time, so the splits of the shapes
 * seen are kept (one direct-mapped table per process). */
inline job plan(const fmlp_cu_gemm_args &a, int64_t target, int phase)
{
    struct slot {
        int64_t key[8];
        split sp;
        bool used;
    };
    static slot table[256];
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    if (target < 1) target = 2 * (int64_t)(a.sm_count > 0 ? a.sm_count : 132);
    const int64_t key[8] = {a.m, a.nw, a.k, a.sm_count, a.scratch != nullptr, a.stream_rw, a.stream_splits, target};
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 8; i++) h = (h ^ (uint64_t)key[i]) * 1099511628211ull;
    slot &e = table[h % 256];
    pthread_mutex_lock(&lock);
    const bool hit = e.used && memcmp(e.key, key, sizeof key) == 0;
    split sp = e.sp;
    pthread_mutex_unlock(&lock);
    if (!hit) {
        sp = choose_split(a, target);
        pthread_mutex_lock(&lock);
        memcpy(e.key, key, sizeof key);
        e.sp = sp;
        e.used = true;
        pthread_mutex_unlock(&lock);
    }
    job j;
    j.a = a;
    j.rw = sp.rw;
    j.kw = sp.kw;
    j.splits = sp.splits;
    j.cps = sp.cps;
    j.cpw = sp.cpw;
    j.groups = sp.groups;
    j.tasks = sp.groups * sp.splits;
    char *base = static_cast<char *>(a.scratch);
    j.cnt = base ? reinterpret_cast<unsigned *>(base) + phase * COUNTERS : nullptr;
    j.part = base ? reinterpret_cast<float *>(base + PART_OFF) : nullptr;
    return j;
}

/* Kernels of one family by x-row bucket (8, 16, 32, 64 rows). */
struct kernel_entry {
    const void *fn;
    const char *name;
};
inline int bucket(int64_t m) { return m <= 8 ? 0 : m <= 16 ? 1 : m <= 32 ? 2 : 3; }

/* Resident blocks per SM of fn, asked once and kept in *slot (0: not yet;
 * every device of a process has one architecture's occupancy). */
inline int occupancy(int *slot, const void *fn)
{
    int occ = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (!occ) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, THREADS, 0) != cudaSuccess || occ < 1) {
            (void)cudaGetLastError();
            return 0;
        }
        __atomic_store_n(slot, occ, __ATOMIC_RELAXED);
    }
    return occ;
}

/* --------------------------------------------------------------- device */

__device__ __forceinline__ uint4 ld_weights(const void *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

/* x: an ordinary load (cached in L1 for the block's row warps), which the
 * memory model orders after the PDL wait; not the read-only path, since under
 * PDL the previous kernel may still be writing x while this one starts. L2
 * only when other blocks of the same grid wrote it (the one-kernel MLP's h,
 * after its grid barrier). */
template <bool COHERENT> __device__ __forceinline__ uint4 ld_x(const void *p)
{
    uint4 v;
    if (COHERENT)
        asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p)
                     : "memory");
    else
        asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p)
                     : "memory");
    return v;
}

/* Programmatic dependent launch (cc 9.x; no-ops when not launched so). */
__device__ __forceinline__ void pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_launch_dependents()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

template <typename T> __device__ __forceinline__ float bias_at(const T *b, int64_t i)
{
    return b ? fmlp_to_f32(b[i]) : 0.0f;
}

/* One warp's share of a task: its weight rows, K range, ring and sums. */
template <int NT> struct ring {
    static constexpr int U = ring_for(NT);
    uint4 wa[U], wb[U];
    float acc[NT][4];
    int64_t off0, off1, kc0; /* element offsets in w of rows g, g+8 at this lane's first chunk; first chunk */
    int nc;                  /* chunks this warp streams (may be 0) */
    bool ok0, ok1;           /* rows inside nw */
};

template <typename T, int NT> __device__ __forceinline__ void load_chunk(const job &j, ring<NT> &r, int u, int i)
{
    const T *w = static_cast<const T *>(j.a.w);
    const int tq = threadIdx.x & 3;
    const bool in = i < r.nc && (r.kc0 + i) * 32 + tq * 8 < j.a.k;
    const int64_t d = (int64_t)i * 32;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    r.wa[u] = in && r.ok0 ? ld_weights(w + r.off0 + d) : zero;
    r.wb[u] = in && r.ok1 ? ld_weights(w + r.off1 + d) : zero;
}

/* Decodes task t for this warp and fills its ring: call before waiting. */
template <typename T, int NT> __device__ __forceinline__ void task_begin(const job &j, int64_t t, ring<NT> &r)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const int64_t group = t / j.splits;
    const int64_t slice = t - group * j.splits;
    const int rt = warp % j.rw, kp = warp / j.rw;
    const int64_t r0 = (group * j.rw + rt) * 16 + g;
    const int64_t k = j.a.k, nchunks = (k + 31) / 32;
    const int64_t s0 = slice * j.cps, s1 = s0 + j.cps < nchunks ? s0 + j.cps : nchunks;
    r.kc0 = s0 + (int64_t)kp * j.cpw;
    const int64_t e = r.kc0 + j.cpw < s1 ? r.kc0 + j.cpw : s1;
    r.nc = e > r.kc0 ? (int)(e - r.kc0) : 0;
    r.ok0 = r0 < j.a.nw;
    r.ok1 = r0 + 8 < j.a.nw;
    r.off0 = r0 * k + r.kc0 * 32 + tq * 8;
    r.off1 = r.off0 + 8 * k;
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int q = 0; q < 4; q++) r.acc[nt][q] = 0.0f;
#pragma unroll
    for (int u = 0; u < ring<NT>::U; u++) load_chunk<T, NT>(j, r, u, u);
}

template <typename T, int NT, bool COHERENT>
__device__ __forceinline__ void consume_chunk(const job &j, ring<NT> &r, int u, int i)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
    const int64_t kk = (r.kc0 + i) * 32 + tq * 8;
    const bool in = kk < j.a.k;
    const uint32_t a0[4] = {r.wa[u].x, r.wb[u].x, r.wa[u].y, r.wb[u].y};
    const uint32_t a1[4] = {r.wa[u].z, r.wb[u].z, r.wa[u].w, r.wb[u].w};
    const T *x = static_cast<const T *>(j.a.x);
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        if (nt * 8 >= j.a.m) break; /* warp-uniform: x rows past m */
        const int64_t xr = nt * 8 + g;
        const uint4 xv = in && xr < j.a.m ? ld_x<COHERENT>(x + xr * j.a.ldx + kk) : zero;
        mma16816<T>(r.acc[nt], a0, xv.x, xv.y);
        mma16816<T>(r.acc[nt], a1, xv.z, xv.w);
    }
}

/* Streams the warp's chunks through the ring (x is read from here on). */
template <typename T, int NT, bool COHERENT> __device__ __forceinline__ void task_stream(const job &j, ring<NT> &r)
{
    constexpr int U = ring<NT>::U;
    for (int i0 = 0; i0 < r.nc; i0 += U) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (i0 + u < r.nc) consume_chunk<T, NT, COHERENT>(j, r, u, i0 + u);
            load_chunk<T, NT>(j, r, u, i0 + u + U);
        }
    }
}

/* Shared memory of one block: each warp's sums as [x row][weight row]. */
template <int NT> struct block_smem {
    float red[WARPS][NT * 8][17];
    int last;
};

/* out = epi(val(weight row in group, x row)) for the group's outputs. */
template <typename T, bool GLU, typename V> __device__ __forceinline__ void epilogue(const job &j, int64_t group, V val)
{
    T *out = static_cast<T *>(j.a.out);
    const T *bias = static_cast<const T *>(j.a.b);
    const int m = (int)j.a.m, cols = GLU ? j.rw * 8 : j.rw * 16;
    for (int e = threadIdx.x; e < cols * m; e += THREADS) {
        const int c = e % cols, xr = e / cols;
        if (GLU) {
            const int rt = c >> 3, cc = c & 7;
            const int64_t tile = group * j.rw + rt, hc = tile * 8 + cc;
            if (hc >= j.a.n) continue;
            const float gv = val(rt * 16 + cc, xr) + bias_at(bias, tile * 16 + cc);
            const float uv = val(rt * 16 + 8 + cc, xr) + bias_at(bias, tile * 16 + 8 + cc);
            out[xr * j.a.ldo + hc] = fmlp_from_f32<T>(fmlp_act_fast(j.a.act, gv) * uv);
        } else {
            const int64_t col = group * j.rw * 16 + c;
            if (col >= j.a.n) continue;
            out[xr * j.a.ldo + col] = fmlp_from_f32<T>(fmlp_act_fast(j.a.act, val(c, xr) + bias_at(bias, col)));
        }
    }
}

/* Adds the block's warps, then (splits > 1) the slices, and writes out. */
template <typename T, bool GLU, int NT>
__device__ __forceinline__ void task_finish(const job &j, int64_t t, const ring<NT> &r, block_smem<NT> &sm)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, tq = lane & 3;
    __syncthreads(); /* the block's previous task is done reading sm */
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int q = 0; q < 4; q++) sm.red[warp][nt * 8 + 2 * tq + (q & 1)][g + 8 * (q >> 1)] = r.acc[nt][q];
    __syncthreads();
    const int64_t group = t / j.splits, slice = t - group * j.splits;
    const int rows16 = j.rw * 16;
    auto block_sum = [&](int wrl, int xr) {
        float s = 0.0f;
        for (int kp = 0; kp < j.kw; kp++) s += sm.red[kp * j.rw + (wrl >> 4)][xr][wrl & 15];
        return s;
    };
    if (j.splits == 1) {
        epilogue<T, GLU>(j, group, block_sum);
        return;
    }
    const int64_t E = (int64_t)rows16 * j.a.m;
    float *all = j.part + group * j.splits * E;
    for (int e = tid; e < E; e += THREADS) all[slice * E + e] = block_sum(e % rows16, e / rows16);
    __threadfence();
    __syncthreads();
    if (tid == 0) sm.last = atomicAdd(j.cnt + group, 1u) == (unsigned)j.splits - 1;
    __syncthreads();
    if (!sm.last) return;
    __threadfence();
    epilogue<T, GLU>(j, group, [&](int wrl, int xr) {
        float s = 0.0f;
        for (int q = 0; q < j.splits; q++) s += __ldcg(all + q * E + (int64_t)xr * rows16 + wrl);
        return s;
    });
    if (tid == 0) j.cnt[group] = 0;
}

/* A sense-reversing grid barrier on one word (all blocks co-resident: the
 * launch is cooperative). Block 0 adds 2^31 - (blocks - 1), the others 1,
 * so the top bit flips exactly when the last block arrives and the low bits
 * return to zero, ready for the next launch. */
__device__ __forceinline__ void grid_barrier(unsigned *bar)
{
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
        const unsigned old = atomicAdd(bar, add);
        for (;;) {
            unsigned now;
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(now) : "l"(bar) : "memory");
            if ((now ^ old) & 0x80000000u) break;
            __nanosleep(32);
        }
        __threadfence();
    }
    __syncthreads();
}

} // namespace fmlp_stream

#endif
