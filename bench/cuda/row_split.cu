/* Why: at thousands of rows the fused forward (fmlp's GLU GEMM, then
 * cuBLASLt's down GEMM) runs about 8% slower than its two GEMMs timed
 * alone (bench/results/h200_mlp_chain_2026-12-03.md). Part of that is
 * each GEMM's last wave, which leaves SMs idle, and the boundary between
 * the two kernels. Cutting the rows into chunks and running the down GEMM
 * of chunk c on a second stream while the GLU GEMM of chunk c + 1 runs
 * lets one GEMM's blocks take the SMs the other's tail leaves. This times
 * the forward's two GEMMs as the fused plan runs them against the same
 * GEMMs cut by rows: on one stream, with the down GEMMs on a second one,
 * and with whole chunks taking turns on two, to say whether a plan that
 * does so would pay, before one is built.
 *
 * Each variant's batch of reps forwards is captured in a CUDA graph; the
 * variants take turns over five rounds starting one further on, each
 * keeps its best batch. Every variant's y is compared with the unsplit
 * one's (cuBLASLt may pick another algorithm for fewer rows, so not
 * bitwise).
 * Usage: row_split M DIM HIDDEN [chunks,...] [reps]
 *   ROW_SPLIT_PREHEAT_MS=N runs each variant untimed for N ms before each
 *   of its timed batches (the power-capped clock a long run holds).
 *   ROW_SPLIT_SIDE_PRIORITY=1 gives the second stream the device's highest
 *   priority, so its blocks are placed first where both streams have some
 *   waiting (fmlp's persistent GEMM tiles are dealt to blocks in advance,
 *   so a block that starts late finishes late).
 * Build: the fmlp_row_split target of a CUDA build (cmake/cuda_backend.cmake). */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_NAME "row_split"
#include "bf16_fill.cuh"
#include "graph_turns.cuh"
#include "cuda/kernels.h"
#include "fmlp.h"
#include "lt_plain.h"
#include "probe_fail.h"

/* How a variant runs one forward: the rows in `chunks` equal chunks, each
 * chunk's two GEMMs on one stream (ONE_STREAM), the down GEMMs on a second
 * stream each waiting for its chunk's GLU GEMM (DOWNS_APART), or whole
 * chunks taking turns on two streams (ALTERNATE). */
enum { ONE_STREAM, DOWNS_APART, ALTERNATE };
typedef struct {
    int chunks, how;
} variant;

typedef struct {
    int64_t m, dim, hid;
    __nv_bfloat16 *x, *wgu, *bgu, *wd, *h, *y;
    int sms, ccm;
    cublasLtHandle_t lt;
    lt_plain down[2]; /* [0]: all rows, [1]: one chunk's rows (for the variant being captured) */
    void *ws[2];
    size_t wss;
    cudaStream_t s[2];
    cudaEvent_t fork, glu_done[64], down_done;
} setup;

/* The GLU GEMM of rows r0 .. r0 + rows, launched with PDL as the fused plan does. */
static fmlp_cu_gemm_args glu_args(const setup *u, int64_t r0, int64_t rows)
{
    const fmlp_cu_gemm_args a = {FMLP_BF16, FMLP_ACT_GELU_TANH, true, rows, u->hid, u->dim, 2 * u->hid,
                                 u->x + r0 * u->dim, u->dim, u->wgu, u->bgu, u->h + r0 * u->hid, u->hid,
                                 u->sms, u->ccm, 0, true};
    return a;
}

static int glu_gemm(const setup *u, cudaStream_t st, int64_t r0, int64_t rows)
{
    const fmlp_cu_gemm_args a = glu_args(u, r0, rows);
    CK(fmlp_cu_gemm_wgmma(st, &a));
    return 0;
}

static int down_gemm(const setup *u, const lt_plain *lp, cudaStream_t st, int which, int64_t r0)
{
    CKLT(lt_plain_run(u->lt, lp, u->h + r0 * u->hid, u->wd, u->y + r0 * u->dim, u->ws[which], u->wss, st));
    return 0;
}

/* One forward as the variant runs it, issued on u->s[0] (joined back there). */
static int forward(setup *u, const variant *v)
{
    const int64_t rows = u->m / v->chunks;
    const lt_plain *lp = v->chunks == 1 ? &u->down[0] : &u->down[1];
    if (v->how == ONE_STREAM) {
        for (int c = 0; c < v->chunks; c++)
            if (glu_gemm(u, u->s[0], c * rows, rows) || down_gemm(u, lp, u->s[0], 0, c * rows)) return 1;
        return 0;
    }
    CK(cudaEventRecord(u->fork, u->s[0]));
    CK(cudaStreamWaitEvent(u->s[1], u->fork, 0));
    for (int c = 0; c < v->chunks; c++) {
        if (v->how == ALTERNATE) {
            const int k = c & 1;
            if (glu_gemm(u, u->s[k], c * rows, rows) || down_gemm(u, lp, u->s[k], k, c * rows)) return 1;
            continue;
        }
        if (glu_gemm(u, u->s[0], c * rows, rows)) return 1;
        CK(cudaEventRecord(u->glu_done[c], u->s[0]));
        CK(cudaStreamWaitEvent(u->s[1], u->glu_done[c], 0));
        if (down_gemm(u, lp, u->s[1], 1, c * rows)) return 1;
    }
    CK(cudaEventRecord(u->down_done, u->s[1]));
    CK(cudaStreamWaitEvent(u->s[0], u->down_done, 0));
    return 0;
}

static int capture(setup *u, const variant *v, int reps, cudaGraphExec_t *g)
{
    if (v->chunks > 1) {
        lt_plain_free(&u->down[1]);
        const cublasStatus_t made = lt_plain_make(u->lt, u->m / v->chunks, u->dim, u->hid, u->wss, &u->down[1]);
        if (made != CUBLAS_STATUS_SUCCESS) return probe_fail("cuBLASLt", "no algorithm for a chunk's down GEMM");
    }
    cudaGraph_t gr;
    CK(cudaStreamBeginCapture(u->s[0], cudaStreamCaptureModeThreadLocal));
    int bad = 0;
    for (int r = 0; r < reps && !bad; r++) bad = forward(u, v);
    CK(cudaStreamEndCapture(u->s[0], &gr));
    if (bad) return 1;
    CK(cudaGraphInstantiate(g, gr, 0));
    CK(cudaGraphDestroy(gr));
    return 0;
}

/* max |y - ref| / max |ref| over the output. */
static double rel_diff(const __nv_bfloat16 *y, const __nv_bfloat16 *ref, size_t n)
{
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        const double a = __bfloat162float(y[i]), b = __bfloat162float(ref[i]);
        if (!(fabs(a - b) <= d)) d = fabs(a - b);
        if (fabs(b) > r) r = fabs(b);
    }
    return r > 0 ? d / r : d;
}

int main(int argc, char **argv)
{
    if (argc < 4) return probe_fail("usage", "row_split M DIM HIDDEN [chunks,...] [reps]");
    setup u;
    memset(&u, 0, sizeof u);
    u.m = atoll(argv[1]);
    u.dim = atoll(argv[2]);
    u.hid = atoll(argv[3]);
    char chunk_list[64] = "2,4";
    if (argc > 4) snprintf(chunk_list, sizeof chunk_list, "%s", argv[4]);
    const int reps = argc > 5 ? atoi(argv[5]) : 10;
    if (u.m < 128 || u.dim < 64 || u.hid < 64 || u.dim % 64 || u.hid % 64 || reps < 1)
        return probe_fail("arguments", "M >= 128, DIM and HIDDEN multiples of 64, reps >= 1");
    variant vs[16] = {{1, ONE_STREAM}};
    int nv = 1;
    for (char *t = strtok(chunk_list, ","); t && nv + 3 <= 16; t = strtok(NULL, ",")) {
        const int c = atoi(t);
        if (c < 2 || c > 64 || u.m % c || (u.m / c) % 8)
            return probe_fail("chunks", "each 2..64, dividing M into chunks of a multiple of 8 rows");
        vs[nv++] = (variant){c, ONE_STREAM};
        vs[nv++] = (variant){c, DOWNS_APART};
        vs[nv++] = (variant){c, ALTERNATE};
    }
    CK(cudaDeviceGetAttribute(&u.sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&u.ccm, cudaDevAttrComputeCapabilityMajor, 0));
    if (u.ccm < 9 || !fmlp_cu_gemm_wgmma_ready()) return probe_fail("device", "needs a Hopper GPU (wgmma GEMMs)");
    const size_t nx = (size_t)(u.m * u.dim), nh = (size_t)(u.m * u.hid);
    CK(cudaMalloc(&u.x, nx * 2));
    CK(cudaMalloc(&u.wgu, (size_t)(2 * u.hid * u.dim) * 2));
    CK(cudaMalloc(&u.bgu, (size_t)(2 * u.hid) * 2));
    CK(cudaMalloc(&u.wd, (size_t)(u.dim * u.hid) * 2));
    CK(cudaMalloc(&u.h, nh * 2));
    CK(cudaMalloc(&u.y, nx * 2));
    bench_fill_bf16<<<1024, 256>>>(u.x, (int64_t)nx, 1.0f, 1);
    bench_fill_bf16<<<1024, 256>>>(u.wgu, 2 * u.hid * u.dim, 0.03f, 2);
    bench_fill_bf16<<<1024, 256>>>(u.bgu, 2 * u.hid, 0.03f, 3);
    bench_fill_bf16<<<1024, 256>>>(u.wd, u.dim * u.hid, 0.02f, 4);
    CK(cudaGetLastError());
    u.wss = (size_t)32 << 20;
    const char *prio = getenv("ROW_SPLIT_SIDE_PRIORITY");
    int least = 0, greatest = 0;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    for (int i = 0; i < 2; i++) {
        CK(cudaMalloc(&u.ws[i], u.wss));
        CK(cudaStreamCreateWithPriority(&u.s[i], cudaStreamNonBlocking, i && prio && prio[0] == '1' ? greatest : least));
    }
    for (int c = 0; c < 64; c++) CK(cudaEventCreateWithFlags(&u.glu_done[c], cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&u.down_done, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&u.fork, cudaEventDisableTiming));
    CKLT(cublasLtCreate(&u.lt));
    if (lt_plain_make(u.lt, u.m, u.dim, u.hid, u.wss, &u.down[0]) != CUBLAS_STATUS_SUCCESS)
        return probe_fail("cuBLASLt", "no algorithm for the down GEMM");

    cudaGraphExec_t g[16];
    for (int i = 0; i < nv; i++)
        if (capture(&u, &vs[i], reps, &g[i])) return 1;

    /* every variant's y against the unsplit forward's, each on a poisoned y */
    __nv_bfloat16 *ref = (__nv_bfloat16 *)malloc(nx * 2), *got = (__nv_bfloat16 *)malloc(nx * 2);
    if (!ref || !got) return probe_fail("malloc", "host copies of y");
    double diff[16] = {0};
    for (int i = 0; i < nv; i++) {
        CK(cudaMemsetAsync(u.y, 0xFF, nx * 2, u.s[0])); /* NaN in bf16 */
        CK(cudaGraphLaunch(g[i], u.s[0]));
        CK(cudaStreamSynchronize(u.s[0]));
        CK(cudaMemcpy(i ? got : ref, u.y, nx * 2, cudaMemcpyDeviceToHost));
        /* the unsplit forward against itself reads NaN where it left the poison */
        diff[i] = i ? rel_diff(got, ref, nx) : rel_diff(ref, ref, nx);
    }

    float best[16];
    const char *pre = getenv("ROW_SPLIT_PREHEAT_MS");
    const double preheat_ms = pre ? atof(pre) : 0.0;
    CK(graph_turns(u.s[0], g, nv, preheat_ms, best));
    for (int i = 0; i < nv; i++) {
        if (i && vs[i].chunks == vs[i - 1].chunks) continue;
        const int64_t rows = u.m / vs[i].chunks;
        const fmlp_cu_gemm_args a = glu_args(&u, 0, rows);
        printf("GLU GEMM at %lld rows: %s, %lld blocks\n", (long long)rows, fmlp_cu_gemm_wgmma_name(&a),
               (long long)fmlp_cu_gemm_wgmma_blocks(&a, -1));
    }
    const double flops = 2.0 * u.m * u.dim * u.hid * 3, base_us = best[0] * 1e3 / reps;
    for (int i = 0; i < nv; i++) {
        const double us = best[i] * 1e3 / reps;
        char name[64];
        if (vs[i].chunks == 1)
            snprintf(name, sizeof name, "GLU then down, all rows");
        else
            snprintf(name, sizeof name, "%d chunks, %s", vs[i].chunks,
                     vs[i].how == ONE_STREAM ? "one stream" : vs[i].how == DOWNS_APART ? "downs on a second stream" : "alternating streams");
        printf("%6lld x %5lld -> %5lld  %-36s %9.2f us %7.1f TFLOP/s  %.3fx  y rel diff %.1e  (preheat %.0f ms)\n",
               (long long)u.m, (long long)u.dim, (long long)u.hid, name, us, flops / us * 1e-6, base_us / us, diff[i],
               preheat_ms);
    }
    free(ref);
    free(got);
    return 0;
}
