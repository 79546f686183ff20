/* Why: times the one-kernel MLP's variants (variants.py) on one shape at
 * the row counts asked for, in one process, next to a plain read of the
 * same weight bytes (limits.cu): the whole forward, and with one output
 * (gate/up, the barrier and a one-row down projection, which in the mma
 * form still walks every pass of K on one block, so that figure overstates
 * gate/up there), so the two phases' shares show. Thirty forwards are
 * replayed from one CUDA graph, so a graph launch's cost is spread over
 * them (fmlp_bench_cuda's fused + graph replays one forward a graph: about
 * 1 us more at the tutorial's shape, within 1% at the Llama-3-8B one);
 * L2-warm on one copy of the weights, L2-cold rotating copies of at least 512 MB in
 * all (three for the Llama-3-8B shape, 38 for the tutorial's). Each
 * variant's output is held to a double-precision reference.
 *
 *   python3 bench/cuda/row_stream/variants.py /tmp/rs
 *   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Isrc -I/tmp/rs \
 *        -o /tmp/rs/probe bench/cuda/row_stream/probe.cu bench/cuda/limits.cu
 *   /tmp/rs/probe [DIM HIDDEN [ROWS...]]      (default 4096 14336 1 16)
 *   PROBE_ONLY=name,name... times only those variants
 *
 * Results: bench/results/h200_row_stream_2026-12-02.md (one row),
 * bench/results/h200_row_stream_rows_2026-12-02.md (2..16 rows),
 * bench/results/h200_phase_sync_2026-12-02.md (the grid barrier),
 * bench/results/h200_pass_rotation_2026-12-04.md (the passes rotated, and
 * what 16 rows cost over 2), bench/results/h200_row_stream_w32_2026-12-04.md
 * (32-bit copy offsets). */
#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda/device_util.cuh"
#include "cuda/kernel_entry.cuh"
#include "cuda/kernels.h"
#include "cuda/mlp_grid.cuh"
#include "cuda/mma_sync.cuh"
#include "cuda/row_dot.cuh"
#include "cuda/stream_copy.cuh"
#include "../cuda_check.cuh"
#include "../limits.h"
#include "../name_list.h"
#include "variants.inc"

typedef __nv_bfloat16 T;

typedef cudaError_t (*launch_fn)(cudaStream_t, const fmlp_cu_mlp_args *);
struct variant {
    const char *name;
    launch_fn fn;
    int64_t first_rows, last_rows;
    bool exact; /* false: timing only */
};
static const variant variants[] = {
#include "variants_list.inc"
};

__global__ void fill(T *w, size_t n, uint32_t seed, float scale)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = ((uint32_t)i + seed) * 0x9e3779b1u ^ (uint32_t)(i >> 32);
        h ^= h >> 16;
        h *= 0x85ebca6bu;
        h ^= h >> 13;
        w[i] = __float2bfloat16(scale * (((int)(h & 0xffff) - 32768) / 32768.0f));
    }
}

static double f64(T v) { return (double)__bfloat162float(v); }

int main(int argc, char **argv)
{
    const int64_t dim = argc > 2 ? atoll(argv[1]) : 4096, hid = argc > 2 ? atoll(argv[2]) : 14336, out = dim;
    std::vector<int64_t> row_counts;
    for (int i = 3; i < argc; i++) row_counts.push_back(atoll(argv[i]));
    if (row_counts.empty()) row_counts = {1, 16};
    const int64_t rmax = *std::max_element(row_counts.begin(), row_counts.end());
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const size_t ngu = (size_t)2 * hid * dim, nd = (size_t)out * hid;
    const int C = (int)std::max<size_t>(3, ((size_t)512 << 20) / ((ngu + nd) * 2) + 1);
    std::vector<T *> wgu(C), wd(C);
    T *x, *h, *y;
    void *scratch;
    CK(cudaMalloc(&scratch, 64 << 20));
    for (int c = 0; c < C; c++) {
        CK(cudaMalloc(&wgu[c], ngu * 2));
        CK(cudaMalloc(&wd[c], nd * 2));
        fill<<<1024, 256>>>(wgu[c], ngu, 17 + c, 1.0f / sqrtf((float)dim));
        fill<<<1024, 256>>>(wd[c], nd, 91 + c, 1.0f / sqrtf((float)hid));
    }
    CK(cudaMalloc(&x, rmax * dim * 2));
    CK(cudaMalloc(&h, rmax * hid * 2));
    CK(cudaMalloc(&y, rmax * out * 2));
    fill<<<16, 256>>>(x, rmax * dim, 5, 1.0f);
    CK(cudaDeviceSynchronize());

    /* reference for copy 0: gate and up rows packed in blocks of 8 (kernels.h), h rounded as the kernel does */
    std::vector<T> hg(ngu), hd(nd), hx(rmax * dim), hy(rmax * out);
    CK(cudaMemcpy(hg.data(), wgu[0], ngu * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hd.data(), wd[0], nd * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hx.data(), x, rmax * dim * 2, cudaMemcpyDeviceToHost));
    std::vector<double> hh(rmax * hid), ref(rmax * out);
    for (int64_t n = 0; n < rmax; n++) {
        const T *xn = hx.data() + n * dim;
        for (int64_t o = 0; o < hid; o++) {
            const int64_t pg = (o / 8) * 16 + o % 8;
            double g = 0, u = 0;
            for (int64_t k = 0; k < dim; k++) {
                g += f64(hg[pg * dim + k]) * f64(xn[k]);
                u += f64(hg[(pg + 8) * dim + k]) * f64(xn[k]);
            }
            const double a = 0.5 * g * (1 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
            hh[n * hid + o] = f64(__float2bfloat16((float)(a * u)));
        }
        for (int64_t r = 0; r < out; r++) {
            double s = 0;
            for (int64_t k = 0; k < hid; k++) s += f64(hd[r * hid + k]) * hh[n * hid + k];
            ref[n * out + r] = s;
        }
    }

    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const double bytes = (double)(ngu + nd) * 2;
    auto args = [&](int c, int64_t rows, int64_t outputs) {
        fmlp_cu_mlp_args a = {};
        a.dtype = FMLP_BF16;
        a.act = FMLP_ACT_GELU_TANH;
        a.m = rows;
        a.dim = dim;
        a.hidden = hid;
        a.out = outputs;
        a.x = x;
        a.ldx = dim;
        a.wgu = wgu[c];
        a.nwgu = 2 * hid;
        a.wd = wd[c];
        a.y = y;
        a.ldy = outputs;
        a.h = h;
        a.scratch = scratch;
        a.sm_count = sms;
        a.cc_major = 9;
        return a;
    };
    /* per forward, best of 5 rounds of graph replays: `reps` launches
     * captured, copies rotating when `cold` */
    auto time_us = [&](bool cold, auto &&launch) {
        const int reps = cold ? C * ((30 + C - 1) / C) : 30;
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < reps; i++) launch(cold ? i % C : 0);
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphLaunch(ge, s));
        float best = 1e30f;
        for (int round = 0; round < 5; round++) {
            const int n = 4;
            CK(cudaEventRecord(e0, s));
            for (int i = 0; i < n; i++) CK(cudaGraphLaunch(ge, s));
            CK(cudaEventRecord(e1, s));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            best = std::min(best, ms * 1000.0f / (n * reps));
        }
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
        CK(cudaGetLastError());
        return best;
    };
    printf("%lld -> %lld -> %lld bf16, %.1f MB of weights, %d SMs\n", (long long)dim, (long long)hid, (long long)out,
           bytes / 1e6, sms);
    bench_limits lim;
    char err_text[256];
    if (bench_limits_measure(0, (int64_t)bytes, C, &lim, err_text, sizeof err_text) == 0)
        printf("%-16s %8.2f us  %5.2f TB/s  (limits.cu: one plain kernel reads the weights, %d copies rotating)\n", "read",
               lim.read_us[1], lim.read_gbps[1] / 1e3, lim.copies[1]);
    else
        printf("read limit: %s\n", err_text);
    int bad = 0;
    const char *only = getenv("PROBE_ONLY");
    for (const int64_t rows : row_counts) {
        for (const variant &v : variants) {
            if (rows < v.first_rows || rows > v.last_rows) continue;
            if (only && !bench_listed(only, v.name)) continue;
            CK(cudaMemset(y, 0xff, rows * out * 2));
            const fmlp_cu_mlp_args a0 = args(0, rows, out);
            CK(v.fn(s, &a0));
            CK(cudaStreamSynchronize(s));
            CK(cudaMemcpy(hy.data(), y, rows * out * 2, cudaMemcpyDeviceToHost));
            double num = 0, den = 0;
            for (int64_t i = 0; i < rows * out; i++) {
                const double d = f64(hy[i]) - ref[i];
                num += d * d;
                den += ref[i] * ref[i];
            }
            const double err = sqrt(num / den);
            const bool ok = err <= 1e-2;
            if (v.exact && !ok) bad++;
            const auto whole = [&](int c) {
                const fmlp_cu_mlp_args a = args(c, rows, out);
                CK(v.fn(s, &a));
            };
            const float warm = time_us(false, whole), cold = time_us(true, whole);
            const float t1 = time_us(true, [&](int c) {
                const fmlp_cu_mlp_args a = args(c, rows, 1);
                CK(v.fn(s, &a));
            });
            printf("rows %2lld %-16s warm %8.2f us  cold %8.2f us  %5.2f TB/s  err %.1e %s  one output: %8.2f us "
                   "(gate/up at %.2f TB/s)\n",
                   (long long)rows, v.name, warm, cold, bytes / cold / 1e6, err,
                   v.exact ? (ok ? "ok" : "WRONG") : "(timing only)", t1, ngu * 2.0 / t1 / 1e6);
            fflush(stdout);
        }
    }
    return bad ? 1 : 0;
}
