/* Why: a profiler (ncu) reads one kernel best when the process runs
 * nothing else, and GEMMs compared back to back must take turns: on the
 * H200 a long run of matrix work lowers the clock (power), so whichever
 * runs later reads slower. This runs bf16 GEMMs of the MLP's shapes,
 * fmlp's (a wgmma configuration, or the one picked) and cuBLASLt's plain
 * GEMM of the same M x N x K, on random data: each candidate's batch of
 * reps, captured in a CUDA graph so that host launch costs (several us a
 * cuBLASLt call) do not pace small GEMMs, once per round, five rounds
 * starting one further on, best batch kept; one line each, with the ratio
 * to cuBLASLt when it is listed.
 * Usage: gemm_one M DIM HIDDEN glu|down fmlp|lt|lt<i>|<config>[,...] [reps]
 *   glu: the gate|up GEMM with GELU-tanh (M x 2 HIDDEN x DIM), down: the
 *   plain GEMM (M x DIM x HIDDEN); <config> a wgmma configuration number;
 *   lt<i> the cuBLASLt heuristic's i-th algorithm (lt = lt0, its choice; those past
 *   the number it offers for the shape are skipped with a note).
 *   GEMM_ONE_PREHEAT_MS=N runs each candidate untimed for N ms before each
 *   of its timed batches: the clock the power cap leaves it, the state a
 *   forward runs in (bench/results/h100_sustained_2026-12-06.md); without
 *   it a batch reads whatever clock the one before left.
 *   GEMM_ONE_PDL=1 launches fmlp's persistent tiles as programmatic
 *   dependents, as fmlp's forwards do (cuBLASLt's launches stay plain).
 * Build: the fmlp_gemm_one target of a CUDA build (cmake/cuda_backend.cmake). */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_NAME "gemm_one"
#include "bf16_fill.cuh"
#include "graph_turns.cuh"
#include "cuda/kernels.h"
#include "fmlp.h"
#include "lt_plain.h"
#include "probe_fail.h"

/* One candidate's batch of reps launches: -2 - i cuBLASLt's algorithm i, else a configuration. */
static int batch(cudaStream_t st, int cand, int reps, cublasLtHandle_t h, const lt_plain *lp, const fmlp_cu_gemm_args *a,
                 void *ws, size_t wss)
{
    for (int r = 0; r < reps; r++) {
        if (cand <= -2) {
            if (lt_plain_run_algo(h, lp, -2 - cand, a->x, a->w, a->out, ws, wss, st) != CUBLAS_STATUS_SUCCESS)
                return probe_fail("lt_plain_run", "cuBLASLt failed");
        } else {
            const cudaError_t e = fmlp_cu_gemm_wgmma_config(st, a, cand);
            if (e != cudaSuccess) return probe_fail("fmlp_cu_gemm_wgmma_config", cudaGetErrorString(e));
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 6) return probe_fail("usage", "gemm_one M DIM HIDDEN glu|down fmlp|lt|lt<i>|<config>[,...] [reps]");
    const int64_t m = atoll(argv[1]), dim = atoll(argv[2]), hid = atoll(argv[3]);
    const bool glu = !strcmp(argv[4], "glu");
    const int reps = argc > 6 ? atoi(argv[6]) : 5;
    int cand[16], nc = 0; /* -2 - i: cuBLASLt's algorithm i, -1: fmlp's pick, else a configuration */
    for (char *t = strtok(argv[5], ","); t && nc < 16; t = strtok(NULL, ","))
        cand[nc++] = !strncmp(t, "lt", 2) ? -2 - atoi(t + 2) : !strcmp(t, "fmlp") ? -1 : atoi(t);
    if (m < 1 || dim < 8 || hid < 8 || reps < 1 || (!glu && strcmp(argv[4], "down")))
        return probe_fail("arguments", "M, DIM, HIDDEN positive (DIM, HIDDEN >= 8), glu or down, reps >= 1");
    const int64_t n = glu ? hid : dim, k = glu ? dim : hid, nw = glu ? 2 * hid : dim;
    int sms = 0, ccm = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&ccm, cudaDevAttrComputeCapabilityMajor, 0));
    __nv_bfloat16 *x, *w, *b, *out;
    CK(cudaMalloc(&x, (size_t)(m * k) * 2));
    CK(cudaMalloc(&w, (size_t)(nw * k) * 2));
    CK(cudaMalloc(&b, (size_t)nw * 2));
    CK(cudaMalloc(&out, (size_t)(m * nw) * 2));
    bench_fill_bf16<<<1024, 256>>>(x, m * k, 1.0f, 1);
    bench_fill_bf16<<<1024, 256>>>(w, nw * k, 0.03f, 2);
    bench_fill_bf16<<<1024, 256>>>(b, nw, 0.03f, 3);
    CK(cudaGetLastError());
    const char *pdl = getenv("GEMM_ONE_PDL");
    fmlp_cu_gemm_args a = {FMLP_BF16, glu ? FMLP_ACT_GELU_TANH : FMLP_ACT_NONE, glu, m, n, k, nw, x, k, w, b, out, n, sms, ccm,
                           0, pdl && pdl[0] == '1'};
    cublasLtHandle_t h = NULL;
    lt_plain lp;
    void *ws = NULL;
    const size_t wss = (size_t)32 << 20;
    for (int c = 0; c < nc; c++)
        if (cand[c] >= fmlp_cu_gemm_wgmma_configs() || cand[c] < -2 - (LT_PLAIN_ALGOS - 1))
            return probe_fail("config", "not a wgmma configuration number or lt0..lt7");
    CK(cudaMalloc(&ws, wss));
    CKLT(cublasLtCreate(&h));
    const cublasStatus_t made = lt_plain_make(h, m, nw, k, wss, &lp);
    if (made == CUBLAS_STATUS_NOT_SUPPORTED) return probe_fail("cuBLASLt", "no algorithm for the shape");
    CKLT(made);
    int kept = 0;
    for (int c = 0; c < nc; c++)
        if (-2 - cand[c] >= lp.algos)
            fprintf(stderr, "gemm_one: lt%d skipped: the cuBLASLt heuristic has %d algorithms for the shape\n", -2 - cand[c],
                    lp.algos);
        else
            cand[kept++] = cand[c];
    nc = kept;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaGraphExec_t g[16];
    for (int c = 0; c < nc; c++) {
        cudaGraph_t gr;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        const int bad = batch(st, cand[c], reps, h, &lp, &a, ws, wss);
        CK(cudaStreamEndCapture(st, &gr));
        if (bad) return 1;
        CK(cudaGraphInstantiate(&g[c], gr, 0));
        CK(cudaGraphDestroy(gr));
    }
    float best[16];
    const char *pre = getenv("GEMM_ONE_PREHEAT_MS");
    CK(graph_turns(st, g, nc, pre ? atof(pre) : 0.0, best));
    const double fl = 2.0 * m * nw * k;
    float lt_us = 0;
    for (int c = 0; c < nc; c++)
        if (cand[c] == -2) lt_us = best[c] * 1e3f / reps;
    for (int c = 0; c < nc; c++) {
        const double us = best[c] * 1e3 / reps;
        char lt_name[64];
        if (cand[c] < -2) snprintf(lt_name, sizeof lt_name, "cublasLt algorithm %d (split-K %d)", -2 - cand[c], lt_plain_split(&lp, -2 - cand[c]));
        printf("%-52s %6lld x %6lld x %6lld %-4s %9.2f us %7.1f TFLOP/s",
               cand[c] == -2 ? "cublasLt" : cand[c] < -2 ? lt_name : fmlp_cu_gemm_wgmma_config_name(&a, cand[c]),
               (long long)m, (long long)nw, (long long)k, argv[4], us, fl / us * 1e-6);
        if (lt_us > 0) printf("  %.3fx cuBLASLt", lt_us / us);
        if (cand[c] > -2) printf("  %lld blocks", (long long)fmlp_cu_gemm_wgmma_blocks(&a, cand[c]));
        printf("\n");
    }
    return 0;
}
