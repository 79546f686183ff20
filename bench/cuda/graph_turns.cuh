/* Why: GEMMs compared back to back must take turns (on Hopper a long run
 * of matrix work lowers the clock, so whichever runs later reads slower),
 * and the GEMM probes (gemm_one.cu, row_split.cu) time their candidates
 * alike so their figures compare: each candidate's batch captured as one
 * CUDA graph, one replay per round, an untimed round first, five timed
 * rounds each starting one candidate further on, the best kept. */
#ifndef FMLP_BENCH_CUDA_GRAPH_TURNS_CUH
#define FMLP_BENCH_CUDA_GRAPH_TURNS_CUH

#include <cuda_runtime.h>
#include <time.h>

static inline double graph_turns_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* best_ms[i]: graph i's fastest replay. preheat_ms > 0 replays each graph
 * untimed for that long before each of its timed replays (the clock the
 * power cap leaves a long run). */
static inline cudaError_t graph_turns(cudaStream_t st, const cudaGraphExec_t *g, int n, double preheat_ms, float *best_ms)
{
    cudaEvent_t e0, e1;
    cudaError_t e = cudaEventCreate(&e0);
    if (e != cudaSuccess) return e;
    if ((e = cudaEventCreate(&e1)) != cudaSuccess) {
        cudaEventDestroy(e0);
        return e;
    }
    for (int i = 0; i < n; i++) best_ms[i] = 1e30f;
    for (int round = -1; round < 5 && e == cudaSuccess; round++)
        for (int j = 0; j < n && e == cudaSuccess; j++) {
            const int i = (j + (round < 0 ? 0 : round)) % n;
            for (const double t0 = graph_turns_now_ms(); e == cudaSuccess && graph_turns_now_ms() - t0 < preheat_ms;)
                if ((e = cudaGraphLaunch(g[i], st)) == cudaSuccess) e = cudaStreamSynchronize(st);
            float ms = 0;
            if (e == cudaSuccess) e = cudaEventRecord(e0, st);
            if (e == cudaSuccess) e = cudaGraphLaunch(g[i], st);
            if (e == cudaSuccess) e = cudaEventRecord(e1, st);
            if (e == cudaSuccess) e = cudaEventSynchronize(e1);
            if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, e0, e1);
            if (e == cudaSuccess && round >= 0 && ms < best_ms[i]) best_ms[i] = ms;
        }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return e;
}

#endif
