/* Why: the small-row probes (read_floor.cu, hidden_slice.cu) hold kernels
 * to the time `fused + graph` reads, so they time them the same way: CUDA
 * graphs of `per` launches replayed back to back, L2-warm (one copy of
 * the data) or cold (launch i given copy i % copies, a graph per run of
 * copies), best of five rounds. Written once here. */
#ifndef FMLP_BENCH_CUDA_GRAPH_REPLAYS_CUH
#define FMLP_BENCH_CUDA_GRAPH_REPLAYS_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

static inline void graph_replays_check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return;
    fprintf(stderr, "CUDA error in %s: %s\n", what, cudaGetErrorString(e));
    exit(1);
}

/* us per launch; launch(c) enqueues one launch on s reading copy c. */
template <typename Launch>
static float graph_replay_us(cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, int per, int copies, Launch &&launch)
{
    const int graphs = copies > 1 ? (per >= copies ? 1 : (copies + per - 1) / per) : 1;
    std::vector<cudaGraphExec_t> ge(graphs);
    for (int gi = 0; gi < graphs; gi++) {
        cudaGraph_t g;
        graph_replays_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
        for (int i = 0; i < per; i++) launch((gi * per + i) % copies);
        graph_replays_check(cudaStreamEndCapture(s, &g), "cudaStreamEndCapture");
        graph_replays_check(cudaGraphInstantiate(&ge[gi], g, 0), "cudaGraphInstantiate");
        graph_replays_check(cudaGraphDestroy(g), "cudaGraphDestroy");
    }
    const int replays = std::max(graphs * 4, 2000 / per);
    float best = 1e30f;
    for (int round = -1; round < 5; round++) {
        graph_replays_check(cudaEventRecord(e0, s), "cudaEventRecord");
        for (int r = 0; r < replays; r++) graph_replays_check(cudaGraphLaunch(ge[r % graphs], s), "cudaGraphLaunch");
        graph_replays_check(cudaEventRecord(e1, s), "cudaEventRecord");
        graph_replays_check(cudaEventSynchronize(e1), "cudaEventSynchronize");
        float ms;
        graph_replays_check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
        if (round >= 0) best = std::min(best, ms * 1000.0f / (replays * per));
    }
    for (auto g : ge) graph_replays_check(cudaGraphExecDestroy(g), "cudaGraphExecDestroy");
    graph_replays_check(cudaGetLastError(), "the timed kernels");
    return best;
}

#endif
