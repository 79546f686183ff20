/* Why: the small-row probes (read_floor.cu, hidden_slice.cu) hold kernels
 * to the time `fused + graph` reads, so they time them the same way: CUDA
 * graphs of `per` launches replayed back to back, L2-warm (one copy of
 * the data) or cold (launch i given copy i % copies, a graph per run of
 * copies), best of five rounds. Written once here. */
#ifndef FMLP_BENCH_CUDA_GRAPH_REPLAYS_CUH
#define FMLP_BENCH_CUDA_GRAPH_REPLAYS_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda_check.cuh"

/* A stream and its timing events; us(per, cold, launch) is the time per
 * launch, launch(c) enqueuing one launch on s that reads copy c of the
 * `copies` the cold runs rotate through. */
struct graph_timer {
    cudaStream_t s;
    cudaEvent_t e0, e1;
    int copies;

    explicit graph_timer(int cold_copies) : copies(cold_copies)
    {
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
    }

    template <typename Launch> float us(int per, bool cold, Launch &&launch)
    {
        const int n = cold ? copies : 1;
        const int graphs = n > 1 ? (per >= n ? 1 : (n + per - 1) / per) : 1;
        std::vector<cudaGraphExec_t> ge(graphs);
        for (int gi = 0; gi < graphs; gi++) {
            cudaGraph_t g;
            CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
            for (int i = 0; i < per; i++) launch((gi * per + i) % n);
            CK(cudaStreamEndCapture(s, &g));
            CK(cudaGraphInstantiate(&ge[gi], g, 0));
            CK(cudaGraphDestroy(g));
        }
        const int replays = std::max(graphs * 4, 2000 / per);
        float best = 1e30f;
        for (int round = -1; round < 5; round++) {
            CK(cudaEventRecord(e0, s));
            for (int r = 0; r < replays; r++) CK(cudaGraphLaunch(ge[r % graphs], s));
            CK(cudaEventRecord(e1, s));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (round >= 0) best = std::min(best, ms * 1000.0f / (replays * per));
        }
        for (auto g : ge) CK(cudaGraphExecDestroy(g));
        CK(cudaGetLastError());
        return best;
    }
};

#endif
