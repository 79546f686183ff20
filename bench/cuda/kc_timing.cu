/* Why: the small-batch bars are times on two shapes (the tutorial's GeGLU,
 * 768 -> 3072 -> 768, and Llama-3-8B's MLP, 4096 -> 14336 -> 4096, bf16),
 * L2-warm (one copy of the weights) and L2-cold (launches rotate over
 * copies totalling >= 512 MB), as the GLU kernel, the down kernel, the
 * PDL-chained pair in a CUDA graph and the one-kernel MLP in a graph, with
 * the weight bytes each moves per second (and, from 32 rows, the TMA tiles
 * the streaming kernels hand over to above 64); and a sweep over the
 * streaming kernels' splits so the planner's model can be refit from one run. */
#include <string.h>
#include <vector>

#include "kc_common.h"

namespace {

struct shape {
    const char *name;
    int64_t dim, hidden;
};

/* Weight copies of one MLP (gate/up packed, down) and shared activations. */
struct copies {
    int n;
    std::vector<void *> wg, wd;
    void *x, *h, *y;
    shape sh;
};

constexpr int64_t MAX_ROWS = 128;

copies make_copies(const shape &sh)
{
    copies c;
    c.sh = sh;
    const size_t gb = 2 * sh.hidden * sh.dim * 2, db = sh.dim * sh.hidden * 2;
    c.n = (int)((512u << 20) / (gb + db) + 1);
    std::vector<__nv_bfloat16> tmp(2 * sh.hidden * sh.dim);
    for (auto &e : tmp) e = __float2bfloat16_rn((float)kc_urand(-0.03, 0.03));
    for (int i = 0; i < c.n; i++) {
        void *g, *d;
        CK(cudaMalloc(&g, gb));
        CK(cudaMalloc(&d, db));
        CK(cudaMemcpy(g, tmp.data(), gb, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d, tmp.data(), db, cudaMemcpyHostToDevice));
        c.wg.push_back(g);
        c.wd.push_back(d);
    }
    CK(cudaMalloc(&c.x, MAX_ROWS * sh.dim * 2));
    CK(cudaMalloc(&c.h, MAX_ROWS * sh.hidden * 2));
    CK(cudaMalloc(&c.y, MAX_ROWS * sh.dim * 2));
    CK(cudaMemcpy(c.x, tmp.data(), MAX_ROWS * sh.dim * 2, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
    return c;
}

void free_copies(copies &c)
{
    for (int i = 0; i < c.n; i++) {
        cudaFree(c.wg[i]);
        cudaFree(c.wd[i]);
    }
    cudaFree(c.x);
    cudaFree(c.h);
    cudaFree(c.y);
}

fmlp_cu_gemm_args glu_args(const copies &c, int64_t m, int i)
{
    fmlp_cu_gemm_args a = {FMLP_BF16, FMLP_ACT_GELU_TANH, true, m, c.sh.hidden, c.sh.dim, 2 * c.sh.hidden, c.x,
                           c.sh.dim, c.wg[i], nullptr, c.h, c.sh.hidden, kc_sms, kc_scratch, false, 0, 0};
    return a;
}
fmlp_cu_gemm_args down_args(const copies &c, int64_t m, int i)
{
    fmlp_cu_gemm_args a = {FMLP_BF16, FMLP_ACT_NONE, false, m, c.sh.dim, c.sh.hidden, c.sh.dim, c.h, c.sh.hidden,
                           c.wd[i], nullptr, c.y, c.sh.dim, kc_sms, kc_scratch, false, 0, 0};
    return a;
}

cudaError_t launch(cudaStream_t s, const fmlp_cu_gemm_args &a)
{
    return fmlp_cu_gemm(s, &a, fmlp_cu_gemm_pick(&a, kc_sms, kc_ccm));
}

/* µs per call of f(i) over `iters` calls on s (after a warm-up). */
template <typename F> double time_us(cudaStream_t s, int iters, F f)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++) CK(f(i));
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < iters; i++) CK(f(i));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return ms * 1000.0 / iters;
}

/* One graph per weight copy holding one forward (pair or one kernel). */
std::vector<cudaGraphExec_t> capture(cudaStream_t s, const copies &c, int64_t m, bool one_kernel)
{
    std::vector<cudaGraphExec_t> out;
    for (int i = 0; i < c.n; i++) {
        fmlp_cu_gemm_args g = glu_args(c, m, i), d = down_args(c, m, i);
        g.pdl = d.pdl = true;
        cudaGraph_t graph;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
        if (one_kernel) {
            CK(fmlp_cu_mlp(s, &g, &d));
        } else {
            CK(launch(s, g));
            CK(launch(s, d));
        }
        CK(cudaStreamEndCapture(s, &graph));
        CK(cudaGraphInstantiate(&ge, graph, 0));
        CK(cudaGraphDestroy(graph));
        out.push_back(ge);
    }
    return out;
}

struct pair_us {
    double warm, cold;
};

void print_time(const copies &c, int64_t m, const char *what, const char *name, const char *plan, pair_us t,
                double bytes)
{
    printf("time %-8s rows=%-4lld %-10s %-32s warm %8.2f us %6.0f GB/s | cold %8.2f us %6.0f GB/s  %s\n", c.sh.name,
           (long long)m, what, name, t.warm, bytes / t.warm * 1e-3, t.cold, bytes / t.cold * 1e-3, plan);
}

/* Rotating over the copies: cold; copy 0 only: warm. */
template <typename F> pair_us warm_cold(cudaStream_t s, const copies &c, int iters, F f)
{
    pair_us t;
    t.warm = time_us(s, iters, [&](int) { return f(0); });
    t.cold = time_us(s, iters, [&](int i) { return f(i % c.n); });
    return t;
}

void sweep(cudaStream_t s, const copies &c, int64_t m, bool glu, int iters)
{
    double best = 1e30;
    char best_plan[96] = "", chosen[96];
    fmlp_cu_gemm_args a0 = glu ? glu_args(c, m, 0) : down_args(c, m, 0);
    fmlp_cu_gemm_stream_describe(&a0, chosen, sizeof chosen);
    char seen[64][96];
    int n_seen = 0;
    for (int rw : {1, 2, 4, 8})
        for (int sp : {1, 2, 3, 4, 6, 8, 11, 16, 24, 32, 48}) {
            fmlp_cu_gemm_args a = a0;
            a.stream_rw = rw;
            a.stream_splits = sp;
            char plan[96];
            fmlp_cu_gemm_stream_describe(&a, plan, sizeof plan);
            bool dup = false;
            for (int i = 0; i < n_seen && !dup; i++) dup = !strcmp(seen[i], plan);
            if (dup || n_seen == 64) continue;
            snprintf(seen[n_seen++], 96, "%s", plan);
            const double us = time_us(s, iters, [&](int i) {
                fmlp_cu_gemm_args b = glu ? glu_args(c, m, i % c.n) : down_args(c, m, i % c.n);
                b.stream_rw = rw;
                b.stream_splits = sp;
                return fmlp_cu_gemm_stream(s, &b);
            });
            printf("sweep %-8s rows=%-4lld %-4s cold %8.2f us  %s\n", c.sh.name, (long long)m, glu ? "glu" : "down", us,
                   plan);
            if (us < best) {
                best = us;
                snprintf(best_plan, sizeof best_plan, "%s", plan);
            }
        }
    printf("sweep %-8s rows=%-4lld %-4s best %.2f us (%s); chosen: %s\n", c.sh.name, (long long)m, glu ? "glu" : "down",
           best, best_plan, chosen);
}

} // namespace

void kc_small_timings(void)
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const shape shapes[2] = {{"tutorial", 768, 3072}, {"llama", 4096, 14336}};
    char summary[16][200];
    int n_sum = 0;
    for (const shape &sh : shapes) {
        copies c = make_copies(sh);
        const int iters = sh.dim > 1000 ? 40 : 400;
        const double gbytes = 2.0 * 2 * sh.hidden * sh.dim, dbytes = 2.0 * sh.dim * sh.hidden;
        printf("\n%s: %lld -> %lld -> %lld bf16, %d weight copies (%.0f MB) for L2-cold\n", sh.name, (long long)sh.dim,
               (long long)sh.hidden, (long long)sh.dim, c.n, c.n * (gbytes + dbytes) / 1e6);
        for (int64_t m : {1LL, 16LL, 64LL, 128LL}) {
            char pg[96] = "", pd[96] = "", pm[160] = "";
            fmlp_cu_gemm_args g0 = glu_args(c, m, 0), d0 = down_args(c, m, 0);
            if (fmlp_cu_gemm_stream_fits(&g0)) {
                fmlp_cu_gemm_stream_describe(&g0, pg, sizeof pg);
                fmlp_cu_gemm_stream_describe(&d0, pd, sizeof pd);
            }
            const char *gname = fmlp_cu_gemm_name(&g0, fmlp_cu_gemm_pick(&g0, kc_sms, kc_ccm));
            const char *dname = fmlp_cu_gemm_name(&d0, fmlp_cu_gemm_pick(&d0, kc_sms, kc_ccm));
            const pair_us tg = warm_cold(s, c, iters, [&](int i) { return launch(s, glu_args(c, m, i)); });
            print_time(c, m, "glu", gname, pg, tg, gbytes);
            const pair_us td = warm_cold(s, c, iters, [&](int i) { return launch(s, down_args(c, m, i)); });
            print_time(c, m, "down", dname, pd, td, dbytes);
            if (m >= 32 && kc_ccm == 9 && fmlp_cu_gemm_wgmma_ready()) { /* where the tiles could take over */
                const pair_us wg = warm_cold(s, c, iters, [&](int i) {
                    const fmlp_cu_gemm_args a = glu_args(c, m, i);
                    return fmlp_cu_gemm_wgmma(s, &a);
                });
                print_time(c, m, "glu-tiles", fmlp_cu_gemm_wgmma_name(&g0), "", wg, gbytes);
                const pair_us wd = warm_cold(s, c, iters, [&](int i) {
                    const fmlp_cu_gemm_args a = down_args(c, m, i);
                    return fmlp_cu_gemm_wgmma(s, &a);
                });
                print_time(c, m, "down-tiles", fmlp_cu_gemm_wgmma_name(&d0), "", wd, dbytes);
            }
            const pair_us tp = warm_cold(s, c, iters, [&](int i) {
                fmlp_cu_gemm_args g = glu_args(c, m, i), d = down_args(c, m, i);
                g.pdl = d.pdl = true;
                cudaError_t e = launch(s, g);
                return e == cudaSuccess ? launch(s, d) : e;
            });
            print_time(c, m, "pair", "glu+down, PDL, no graph", "", tp, gbytes + dbytes);
            std::vector<cudaGraphExec_t> gp = capture(s, c, m, false);
            const pair_us tpg = warm_cold(s, c, iters, [&](int i) { return cudaGraphLaunch(gp[i], s); });
            print_time(c, m, "pair-graph", "glu+down, PDL, CUDA graph", "", tpg, gbytes + dbytes);
            for (cudaGraphExec_t ge : gp) CK(cudaGraphExecDestroy(ge));
            pair_us tm = {0, 0};
            if (fmlp_cu_mlp_fits(&g0, &d0)) {
                fmlp_cu_mlp_describe(&g0, &d0, pm, sizeof pm);
                std::vector<cudaGraphExec_t> gm = capture(s, c, m, true);
                tm = warm_cold(s, c, iters, [&](int i) { return cudaGraphLaunch(gm[i], s); });
                print_time(c, m, "mlp-graph", fmlp_cu_mlp_name(&g0), pm, tm, gbytes + dbytes);
                for (cudaGraphExec_t ge : gm) CK(cudaGraphExecDestroy(ge));
            }
            if (n_sum < 16)
                snprintf(summary[n_sum++], sizeof summary[0],
                         "summary %-8s %4lld | %7.2f %7.2f | %7.2f %7.2f | %7.2f %7.2f | %7.2f %7.2f | %5.0f", sh.name,
                         (long long)m, tg.warm, tg.cold, td.warm, td.cold, tpg.warm, tpg.cold, tm.warm, tm.cold,
                         (gbytes + dbytes) / (tm.cold > 0 && tm.cold < tpg.cold ? tm.cold : tpg.cold) * 1e-3);
        }
        for (int64_t m : {1LL, 16LL}) {
            sweep(s, c, m, true, iters / 2);
            sweep(s, c, m, false, iters / 2);
        }
        free_copies(c);
    }
    printf("\nsummary (bf16, us per call; warm / L2-cold; the forward's GB/s from its best cold graph)\n");
    printf("summary shape    rows |  glu w  glu c  | down w  down c | pairG w pairG c | mlpG w  mlpG c  |  GB/s\n");
    for (int i = 0; i < n_sum; i++) printf("%s\n", summary[i]);
    CK(cudaStreamDestroy(s));
}
