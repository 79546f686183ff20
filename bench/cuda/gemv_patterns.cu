/* Why: at one to sixteen rows a GEMM streams its weights, and the shape of
 * its loads decides how close it gets to HBM speed. This standalone tool
 * times load patterns for that stream on the GPU (bf16, hashed random
 * weights, every kernel's output checked against a double-precision
 * reference, err = normwise relative error): the mma gemv's 8 rows x 64
 * bytes per load instruction ("cur": chunks interleaved over the warps as
 * in gemm.cu; "contig": each warp's chunks adjacent; one wave of blocks or
 * a persistent grid), the same rows staged through shared memory with
 * cp.async ("cpa"), and whole 512-byte row segments per warp with f32 FMAs
 * ("fma": a warp per row; "fmas": SPLIT warps per row; "fmad": the same,
 * double-buffered), next to a plain streaming read of the same bytes
 * (read_sum, 1 to 8 blocks of 256 threads per SM). Shapes: the Llama-3-8B
 * MLP's gate|up and down weights, the tutorial's. L2-cold rotates copies
 * of the weights; L2-warm (small shapes only) reuses one.
 *
 *   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc \
 *        -o gemv_patterns bench/cuda/gemv_patterns.cu && ./gemv_patterns
 *
 * Results: bench/results/h200_row_gemv_2026-12-02.md. */
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <cmath>
#include "cuda/mma_sync.cuh"
#include "cuda_check.cuh"
typedef __nv_bfloat16 T;

__global__ void fillk(T *w, size_t n, uint32_t seed)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = ((uint32_t)i + seed) * 0x9e3779b1u ^ (uint32_t)(i >> 32);
        h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13;
        w[i] = __float2bfloat16(((int)(h & 0xffff) - 32768) / 32768.0f);
    }
}

struct P { const T *x; const T *w; float *out; int64_t m, n, k; };
constexpr int W = 4;

/* s + the dot product of 8 bf16 weights and 8 bf16 x values, in order. */
__device__ __forceinline__ float dot8(uint4 w, uint4 x, float s)
{
    const __nv_bfloat162 *a = (const __nv_bfloat162 *)&w, *c = (const __nv_bfloat162 *)&x;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        const float2 fa = __bfloat1622float2(a[q]), fc = __bfloat1622float2(c[q]);
        s = fmaf(fa.x, fc.x, s);
        s = fmaf(fa.y, fc.y, s);
    }
    return s;
}

__device__ __forceinline__ float warp_sum(float s)
{
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    return s;
}

/* x's one row into shared memory, for the whole block. */
__device__ __forceinline__ void stage_x(const P &p, uint4 *xs, int64_t kv)
{
    for (int64_t i = threadIdx.x; i < kv; i += blockDim.x) xs[i] = __ldg((const uint4 *)p.x + i);
    __syncthreads();
}

/* s + the dot product of x (in shared memory) with one weight row's 16-byte
 * vectors [kb, ke): U loads per lane in flight, then their FMAs. */
template <int U>
__device__ __forceinline__ float row_dot(const uint4 *wr, const uint4 *xs, int64_t kb, int64_t ke, int lane, float s)
{
    for (int64_t b = kb; b < ke; b += 32 * U) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t i = b + u * 32 + lane;
            v[u] = i < ke ? __ldg(wr + i) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t i = b + u * 32 + lane;
            if (i < ke) s = dot8(v[u], xs[i], s);
        }
    }
    return s;
}

/* One 32-wide k chunk of 16 weight rows (wa: row g, wb: row g + 8, 8
 * consecutive k each) against the NT x row groups, as the library's gemv
 * feeds mma.sync (the same k permutation for both operands). */
template <int NT>
__device__ __forceinline__ void mma_chunk(const P &p, float (&acc)[NT][4], uint4 wa, uint4 wb, int64_t kk, bool in, int g)
{
    const uint32_t a0[4] = {wa.x, wb.x, wa.y, wb.y};
    const uint32_t a1[4] = {wa.z, wb.z, wa.w, wb.w};
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        const int64_t xr = nt * 8 + g;
        const uint4 xv = in && xr < p.m ? __ldg((const uint4 *)(p.x + xr * p.k + kk)) : make_uint4(0, 0, 0, 0);
        mma16816<T>(acc[nt], a0, xv.x, xv.y);
        mma16816<T>(acc[nt], a1, xv.z, xv.w);
    }
}

/* The mma kernels' end of a 16-row task: warps 1.. hand their sums to warp
 * 0 through shared memory, warp 0 adds them in warp order and stores rows
 * rb + g and rb + g + 8. */
template <int NT>
__device__ __forceinline__ void reduce_store(const P &p, float (&acc)[NT][4], float (&red)[W - 1][NT * 4][32], int64_t rb)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    if (warp > 0)
        for (int nt = 0; nt < NT; nt++)
            for (int e = 0; e < 4; e++) red[warp - 1][nt * 4 + e][lane] = acc[nt][e];
    __syncthreads();
    if (warp == 0) {
        for (int i = 0; i < W - 1; i++)
            for (int nt = 0; nt < NT; nt++)
                for (int e = 0; e < 4; e++) acc[nt][e] += red[i][nt * 4 + e][lane];
        for (int nt = 0; nt < NT; nt++)
            for (int j = 0; j < 2; j++) {
                const int64_t xr = nt * 8 + 2 * tq + j;
                if (xr < p.m) {
                    p.out[xr * p.n + rb + g] = acc[nt][j];
                    p.out[xr * p.n + rb + g + 8] = acc[nt][2 + j];
                }
            }
    }
    __syncthreads();
}

// mode 0: chunks warp-interleaved (current lib); 1: warp-contiguous
template <int NT, int U, int MODE>
__device__ __forceinline__ void task(const P &p, int64_t rg, float (&red)[W - 1][NT * 4][32])
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const int64_t r0 = rg * 16 + g, r1 = r0 + 8;
    const int64_t nch = p.k / 32;
    float acc[NT][4] = {};
    for (int64_t b = 0; b * W * U < nch; b++) {
        uint4 wa[U], wb[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t c = MODE == 0 ? b * W * U + warp + u * W : b * W * U + warp * U + u;
            const int64_t kk = c * 32 + tq * 8;
            const bool in = c < nch;
            wa[u] = in ? __ldg((const uint4 *)(p.w + r0 * p.k + kk)) : make_uint4(0, 0, 0, 0);
            wb[u] = in ? __ldg((const uint4 *)(p.w + r1 * p.k + kk)) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t c = MODE == 0 ? b * W * U + warp + u * W : b * W * U + warp * U + u;
            const int64_t kk = c * 32 + tq * 8;
            const bool in = c < nch;
            mma_chunk<NT>(p, acc, wa[u], wb[u], kk, in, g);
        }
    }
    reduce_store<NT>(p, acc, red, rg * 16);
}

template <int NT, int U, int MODE> __global__ void __launch_bounds__(128) k_mma(P p)
{
    __shared__ float red[W - 1][NT * 4][32];
    const int64_t ntask = p.n / 16;
    for (int64_t t = blockIdx.x; t < ntask; t += gridDim.x) task<NT, U, MODE>(p, t, red);
}

// m = 1: a warp per row, 512 contiguous bytes per load instruction, x in shared memory
template <int U, int WPB> __global__ void __launch_bounds__(WPB * 32) k_fma(P p)
{
    extern __shared__ uint4 xs[];
    const int64_t kv = p.k / 8;
    stage_x(p, xs, kv);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t tw = (int64_t)gridDim.x * WPB;
    for (int64_t r = (int64_t)blockIdx.x * WPB + warp; r < p.n; r += tw) {
        const uint4 *wr = (const uint4 *)(p.w + r * p.k);
        const float s = warp_sum(row_dot<U>(wr, xs, 0, kv, lane, 0.f));
        if (lane == 0) p.out[r] = s;
    }
}


// row-contiguous cp.async staging, per-warp ring of S batches
template <int NT, int U, int S> __global__ void __launch_bounds__(128) k_cpa(P p)
{
    constexpr int LPR = U * 4, STRIDE = U * 64 + 64, BUF = 16 * STRIDE;
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ float red[W - 1][NT * 4][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    unsigned char *mine = smem + (size_t)warp * S * BUF;
    const int64_t nch = p.k / 32, nb = (nch + W * U - 1) / (W * U);
    for (int64_t t = blockIdx.x; t < p.n / 16; t += gridDim.x) {
        const int64_t rb = t * 16;
        auto issue = [&](int64_t b) {
            if (b < nb) {
                unsigned char *buf = mine + (b % S) * BUF;
                const int64_t cb = b * W * U + warp * U;
                for (int q = lane; q < 16 * LPR; q += 32) {
                    const int row = q / LPR, piece = q % LPR;
                    const int64_t kk = cb * 32 + piece * 8;
                    const bool in = kk < p.k;
                    cp_async16(buf + row * STRIDE + piece * 16, in ? p.w + (rb + row) * p.k + kk : p.w, in ? 16 : 0);
                }
            }
            asm volatile("cp.async.commit_group;\n" ::);
        };
        float acc[NT][4] = {};
        for (int s = 0; s < S - 1; s++) issue(s);
        for (int64_t b = 0; b < nb; b++) {
            issue(b + S - 1);
            asm volatile("cp.async.wait_group %0;\n" ::"n"(S - 1));
            __syncwarp();
            const unsigned char *buf = mine + (b % S) * BUF;
            const int64_t cb = b * W * U + warp * U;
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int64_t kk = (cb + u) * 32 + tq * 8;
                const bool in = kk < p.k;
                const uint4 wa = *(const uint4 *)(buf + g * STRIDE + u * 64 + tq * 16);
                const uint4 wb = *(const uint4 *)(buf + (g + 8) * STRIDE + u * 64 + tq * 16);
                mma_chunk<NT>(p, acc, wa, wb, kk, in, g);
            }
            __syncwarp();
        }
        reduce_store<NT>(p, acc, red, rb);
    }
}
template <int NT, int U, int S> constexpr int cpa_smem() { return W * S * 16 * (U * 64 + 64); }

// m = 1, SPLIT warps share a row, each a contiguous K range
template <int U, int SPLIT> __global__ void __launch_bounds__(256) k_fmas(P p)
{
    extern __shared__ uint4 xs[];
    __shared__ float part[8];
    const int64_t kv = p.k / 8;
    stage_x(p, xs, kv);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    constexpr int RPB = 8 / SPLIT;
    const int sub = warp % SPLIT, rr = warp / SPLIT;
    const int64_t per = (kv + SPLIT - 1) / SPLIT, kb = sub * per, ke = kb + per < kv ? kb + per : kv;
    for (int64_t r0 = (int64_t)blockIdx.x * RPB; r0 < p.n; r0 += (int64_t)gridDim.x * RPB) {
        const int64_t r = r0 + rr;
        const float s = warp_sum(r < p.n ? row_dot<U>((const uint4 *)(p.w + r * p.k), xs, kb, ke, lane, 0.f) : 0.f);
        if (lane == 0) part[warp] = s;
        __syncthreads();
        if (threadIdx.x < RPB && r0 + threadIdx.x < p.n) {
            float t = 0.f;
            for (int j = 0; j < SPLIT; j++) t += part[threadIdx.x * SPLIT + j];
            p.out[r0 + threadIdx.x] = t;
        }
        __syncthreads();
    }
}


// m = 1, flattened double-buffered stream; SPLIT warps share a row
template <int U, int SPLIT> __device__ __forceinline__ void fmad_load(const P &p, int64_t t, int64_t nb, int rr, int64_t kb,
                                                                     int64_t ke, int RPB, int lane, uint4 (&v)[U], bool &live)
{
    const int64_t q = t / nb, b = t - q * nb;
    const int64_t row = ((int64_t)blockIdx.x + q * gridDim.x) * RPB + rr;
    live = row < p.n;
    const uint4 *wr = (const uint4 *)(p.w + (live ? row : 0) * p.k);
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int64_t i = kb + b * 32 * U + u * 32 + lane;
        v[u] = live && i < ke ? __ldg(wr + i) : make_uint4(0, 0, 0, 0);
    }
}
template <int U, int SPLIT> __global__ void __launch_bounds__(256) k_fmad(P p)
{
    extern __shared__ uint4 xs[];
    __shared__ float part[2][8];
    const int64_t kv = p.k / 8;
    stage_x(p, xs, kv);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    constexpr int RPB = 8 / SPLIT;
    const int sub = warp % SPLIT, rr = warp / SPLIT;
    const int64_t per = ((kv + SPLIT - 1) / SPLIT + 31) / 32 * 32, kb = sub * per, ke = kb + per < kv ? kb + per : kv;
    const int64_t nb = (per + 32 * U - 1) / (32 * U);
    const int64_t groups = (p.n + RPB - 1) / RPB;
    const int64_t npass = blockIdx.x < groups ? (groups - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    const int64_t T = npass * nb;
    uint4 va[U], vb[U];
    bool la = false, lb = false;
    float s = 0.f;
    auto compute = [&](int64_t t, const uint4 (&v)[U]) {
        const int64_t q = t / nb, b = t - q * nb;
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t i = kb + b * 32 * U + u * 32 + lane;
            if (i < ke) s = dot8(v[u], xs[i], s);
        }
        if (b == nb - 1) {
            s = warp_sum(s);
            if (lane == 0) part[q & 1][warp] = s;
            s = 0.f;
            __syncthreads();
            const int64_t r0 = ((int64_t)blockIdx.x + q * gridDim.x) * RPB;
            if (threadIdx.x < RPB && r0 + threadIdx.x < p.n) {
                float tt = 0.f;
                for (int j = 0; j < SPLIT; j++) tt += part[q & 1][threadIdx.x * SPLIT + j];
                p.out[r0 + threadIdx.x] = tt;
            }
        }
    };
    if (T > 0) fmad_load<U, SPLIT>(p, 0, nb, rr, kb, ke, RPB, lane, va, la);
    for (int64_t t = 0; t < T; t += 2) {
        if (t + 1 < T) fmad_load<U, SPLIT>(p, t + 1, nb, rr, kb, ke, RPB, lane, vb, lb);
        compute(t, va);
        if (t + 1 >= T) break;
        if (t + 2 < T) fmad_load<U, SPLIT>(p, t + 2, nb, rr, kb, ke, RPB, lane, va, la);
        compute(t + 1, vb);
    }
}

__global__ void read_sum(const uint4 *__restrict__ w, size_t n16, uint32_t *sums)
{
    const size_t stride = (size_t)gridDim.x * 256;
    size_t i = (size_t)blockIdx.x * 256 + threadIdx.x;
    uint32_t acc = 0;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        const uint4 a = w[i], b = w[i + stride], c = w[i + 2 * stride], d = w[i + 3 * stride];
        acc += a.x + b.y + c.z + d.w + a.y + b.z;
    }
    for (; i < n16; i += stride) acc += w[i].x;
    if (acc == 0x12345) sums[blockIdx.x] = acc;
}

static int sms;
struct Shape { int64_t n, k; };

static double ref_check(const std::vector<T> &hw, const std::vector<T> &hx, const std::vector<float> &ho, int64_t m,
                        int64_t n, int64_t k)
{
    double num = 0, den = 0;
    for (int64_t r = 0; r < m; r++)
        for (int64_t c = 0; c < n; c += (m > 1 ? 7 : 1)) {
            double s = 0;
            for (int64_t i = 0; i < k; i++) s += (double)__bfloat162float(hw[c * k + i]) * __bfloat162float(hx[r * k + i]);
            num += (ho[r * n + c] - s) * (ho[r * n + c] - s);
            den += s * s;
        }
    return sqrt(num / den);
}

typedef void (*launch_fn)(const P &, cudaStream_t);

int main()
{
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    Shape shapes[] = {{28672, 4096}, {4096, 14336}, {6144, 768}, {768, 3072}};
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const int NCOPY = 3;
    for (Shape sh : shapes) {
        const size_t nw = (size_t)sh.n * sh.k;
        const int copies = nw * 2 > (64u << 20) ? NCOPY : (int)((600u << 20) / (nw * 2));
        std::vector<T *> ws(copies);
        for (int c = 0; c < copies; c++) {
            CK(cudaMalloc(&ws[c], nw * 2));
            fillk<<<1024, 256, 0, s>>>(ws[c], nw, 17 + c);
        }
        T *x;
        float *out;
        uint32_t *sums;
        CK(cudaMalloc(&x, 16 * sh.k * 2));
        CK(cudaMalloc(&out, 16 * sh.n * 4));
        CK(cudaMalloc(&sums, 1 << 20));
        fillk<<<64, 256, 0, s>>>(x, 16 * sh.k, 99);
        CK(cudaStreamSynchronize(s));
        std::vector<T> hw(nw), hx(16 * sh.k);
        CK(cudaMemcpy(hw.data(), ws[0], nw * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hx.data(), x, 16 * sh.k * 2, cudaMemcpyDeviceToHost));
        const double mb = nw * 2 / 1e6;
        auto timeit = [&](const char *name, int64_t m, auto launch, bool check, bool warm) {
            P p{x, ws[0], out, m, sh.n, sh.k};
            CK(cudaMemsetAsync(out, 0xff, 16 * sh.n * 4, s));
            launch(p);
            CK(cudaGetLastError());
            CK(cudaStreamSynchronize(s));
            double err = -1;
            if (check) {
                std::vector<float> ho(16 * sh.n);
                CK(cudaMemcpy(ho.data(), out, 16 * sh.n * 4, cudaMemcpyDeviceToHost));
                err = ref_check(hw, hx, ho, m, sh.n, sh.k);
            }
            float best = 1e30f;
            for (int rep = 0; rep < 5; rep++) {
                const int it = 30;
                CK(cudaEventRecord(e0, s));
                for (int i = 0; i < it; i++) {
                    p.w = ws[warm ? 0 : i % copies];
                    launch(p);
                }
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (ms / it < best) best = ms / it;
            }
            printf("%6lld x %-6lld m=%-2lld %-4s %-28s %8.2f us %6.2f TB/s  err %.2e\n", (long long)sh.n,
                   (long long)sh.k, (long long)m, warm ? "warm" : "cold", name, best * 1e3, mb / 1e6 / (best * 1e-3),
                   err);
        };
        for (int warm = 0; warm < 2; warm++) {
            if (warm && nw * 2 > (64u << 20)) continue;
            for (int bl : {1, 2, 4, 8})
                timeit(bl == 1 ? "read_sum x1" : bl == 2 ? "read_sum x2" : bl == 4 ? "read_sum x4" : "read_sum x8", 1,
                       [&](const P &p) { read_sum<<<sms * bl, 256, 0, s>>>((const uint4 *)p.w, nw / 8, sums); },
                       false, warm);
            for (int m : {1, 16}) {
                const int64_t tasks = sh.n / 16;
#define RUN(NT, U, MODE, GRID, NAME)                                                                      \
    timeit(NAME, m, [&](const P &p) { k_mma<NT, U, MODE><<<GRID, 128, 0, s>>>(p); }, true, warm)
                auto gridp = [&](int bps) { return (int)(sms * bps < tasks ? sms * bps : tasks); };
#define CPA(NT, U, S, GRID, NAME)                                                                            \
    do {                                                                                                     \
        CK(cudaFuncSetAttribute(k_cpa<NT, U, S>, cudaFuncAttributeMaxDynamicSharedMemorySize, cpa_smem<NT, U, S>())); \
        timeit(NAME, m, [&](const P &p) { k_cpa<NT, U, S><<<GRID, 128, cpa_smem<NT, U, S>(), s>>>(p); }, true, warm); \
    } while (0)
                if (m == 1) {
                    RUN(1, 8, 0, tasks, "cur U8 1wave");
                    RUN(1, 8, 1, tasks, "contig U8 1wave");
                    RUN(1, 8, 0, gridp(4), "cur U8 persist4");
                    RUN(1, 8, 1, gridp(4), "contig U8 persist4");
                    RUN(1, 4, 1, tasks, "contig U4 1wave");
                    CPA(1, 8, 1, tasks, "cpa U8 S1 1wave");
                    CPA(1, 8, 2, tasks, "cpa U8 S2 1wave");
                    CPA(1, 4, 2, tasks, "cpa U4 S2 1wave");
                    CPA(1, 4, 3, tasks, "cpa U4 S3 1wave");
                    const size_t sm = sh.k * 2;
                    CK(cudaFuncSetAttribute(k_fma<8, 8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
                    timeit("fma U8 8w x4", m, [&](const P &p) { k_fma<8, 8><<<sms * 4, 256, sm, s>>>(p); }, true, warm);
                    CK(cudaFuncSetAttribute(k_fmas<8, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
                    CK(cudaFuncSetAttribute(k_fmas<8, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
                    CK(cudaFuncSetAttribute(k_fmas<4, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
                    timeit("fmas U8 split2 x4", m, [&](const P &p) { k_fmas<8, 2><<<sms * 4, 256, sm, s>>>(p); }, true, warm);
                    timeit("fmas U8 split4 x4", m, [&](const P &p) { k_fmas<8, 4><<<sms * 4, 256, sm, s>>>(p); }, true, warm);
                    timeit("fmas U4 split4 x4", m, [&](const P &p) { k_fmas<4, 4><<<sms * 4, 256, sm, s>>>(p); }, true, warm);

#define FMAD(U, SPL, NAME)                                                                                  \
    do {                                                                                                   \
        CK(cudaFuncSetAttribute(k_fmad<U, SPL>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));     \
        int occ = 0;                                                                                       \
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k_fmad<U, SPL>, 256, sm));                  \
        char nm[64];                                                                                       \
        snprintf(nm, sizeof nm, "%s occ%d", NAME, occ);                                                    \
        timeit(nm, m, [&](const P &p) { k_fmad<U, SPL><<<sms * occ, 256, sm, s>>>(p); }, true, warm);      \
    } while (0)
                    FMAD(8, 1, "fmad U8 s1");
                    FMAD(4, 1, "fmad U4 s1");
                    FMAD(4, 2, "fmad U4 s2");
                    FMAD(8, 2, "fmad U8 s2");
                    FMAD(4, 4, "fmad U4 s4");
                    FMAD(2, 4, "fmad U2 s4");
                    FMAD(4, 8, "fmad U4 s8");
                } else {
                    RUN(2, 4, 0, tasks, "cur U4 1wave");
                    RUN(2, 4, 1, tasks, "contig U4 1wave");
                    RUN(2, 8, 1, tasks, "contig U8 1wave");
                    CPA(2, 8, 1, tasks, "cpa U8 S1 1wave");
                    CPA(2, 4, 3, tasks, "cpa U4 S3 1wave");
                }
            }
        }
        for (auto w : ws) CK(cudaFree(w));
        CK(cudaFree(x));
        CK(cudaFree(out));
        CK(cudaFree(sums));
    }
    return 0;
}
