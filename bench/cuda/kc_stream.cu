/* Why: the small-batch path (streaming GEMMs with split K, PDL between
 * them, the one-kernel MLP with its grid barrier) is correct only if every
 * split, row count and edge shape writes exactly its outputs, leaves the
 * shared scratch zeroed, and gives the same bits on every run and replay.
 * This checks all of that against the f64 reference and then times the
 * kernels on the tutorial (768/3072) and Llama-3-8B (4096/14336) shapes,
 * L2-warm and L2-cold (weights rotated over >= 512 MB), in GB/s of weights. */
#include <string.h>
#include <vector>

#include "kc_common.h"

namespace {

cudaStream_t g_s;

/* A Linear (or gate/up pair) as the backend packs it, with its f64 values. */
struct layer {
    int dt;
    bool glu;
    int64_t n, k, nw;
    std::vector<double> wg, wu, bg, bu;
    void *w, *b;
};

layer make_layer(int dt, bool glu, int64_t n, int64_t k, bool bias)
{
    layer L = {dt, glu, n, k, glu ? 2 * ((n + 7) / 8 * 8) : n, {}, {}, {}, {}, nullptr, nullptr};
    const size_t es = kc_esize(dt);
    const double sc = 1.0 / sqrt((double)k);
    L.wg.resize(n * k);
    L.wu.resize(glu ? n * k : 0);
    L.bg.assign(n, 0.0);
    L.bu.assign(n, 0.0);
    for (auto &e : L.wg) e = kc_rounded(dt, kc_urand(-sc, sc));
    for (auto &e : L.wu) e = kc_rounded(dt, kc_urand(-sc, sc));
    if (bias) {
        for (auto &e : L.bg) e = kc_rounded(dt, kc_urand(-sc, sc));
        if (glu)
            for (auto &e : L.bu) e = kc_rounded(dt, kc_urand(-sc, sc));
    }
    std::vector<char> hw(L.nw * k * es, 0), hb(L.nw * es, 0);
    for (int64_t r = 0; r < n; r++) {
        const int64_t pg = glu ? (r / 8) * 16 + r % 8 : r;
        for (int64_t j = 0; j < k; j++) {
            kc_put(dt, hw.data(), pg * k + j, L.wg[r * k + j]);
            if (glu) kc_put(dt, hw.data(), (pg + 8) * k + j, L.wu[r * k + j]);
        }
        kc_put(dt, hb.data(), pg, L.bg[r]);
        if (glu) kc_put(dt, hb.data(), pg + 8, L.bu[r]);
    }
    CK(cudaMalloc(&L.w, hw.size()));
    CK(cudaMemcpy(L.w, hw.data(), hw.size(), cudaMemcpyHostToDevice));
    if (bias) {
        CK(cudaMalloc(&L.b, hb.size()));
        CK(cudaMemcpy(L.b, hb.data(), hb.size(), cudaMemcpyHostToDevice));
    }
    return L;
}

void free_layer(layer &L)
{
    cudaFree(L.w);
    if (L.b) cudaFree(L.b);
}

/* out (m, n) = epi(x · Wᵀ + b) in f64; x (m, k) dense. */
std::vector<double> reference(const layer &L, int act, const std::vector<double> &x, int64_t m)
{
    std::vector<double> out(m * L.n);
    for (int64_t i = 0; i < m; i++)
        for (int64_t c = 0; c < L.n; c++) {
            double g = L.bg[c], u = L.bu[c];
            const double *xr = &x[i * L.k], *wg = &L.wg[c * L.k], *wu = L.glu ? &L.wu[c * L.k] : nullptr;
            for (int64_t j = 0; j < L.k; j++) {
                g += xr[j] * wg[j];
                if (wu) u += xr[j] * wu[j];
            }
            out[i * L.n + c] = L.glu ? kc_act(act, g) * u : kc_act(act, g);
        }
    return out;
}

/* A device matrix (rows, ld) from f64 values (rows, cols), or poisoned. */
void *upload(int dt, const std::vector<double> &v, int64_t rows, int64_t cols, int64_t ld)
{
    std::vector<char> h(rows * ld * kc_esize(dt), 0);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) kc_put(dt, h.data(), i * ld + j, v[i * cols + j]);
    void *d;
    CK(cudaMalloc(&d, h.size()));
    CK(cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice));
    return d;
}
std::vector<double> random_x(int dt, int64_t m, int64_t k)
{
    std::vector<double> x(m * k);
    for (auto &e : x) e = kc_rounded(dt, kc_urand(-1, 1));
    return x;
}

/* An output buffer of (m + 1, ldo) with every byte 0xff; the row past m and
 * the columns past n must keep that poison. */
struct outbuf {
    void *d;
    int64_t m, n, ldo;
    size_t bytes;
};
outbuf out_alloc(int dt, int64_t m, int64_t n)
{
    outbuf o = {nullptr, m, n, n + 3, 0};
    o.bytes = (m + 1) * o.ldo * kc_esize(dt);
    CK(cudaMalloc(&o.d, o.bytes));
    CK(cudaMemset(o.d, 0xff, o.bytes));
    return o;
}

/* Relative error over (m, n) and elements outside it that changed. */
double verify(int dt, const outbuf &o, const std::vector<double> &ref, int64_t *stray, std::vector<char> *bits = nullptr)
{
    std::vector<char> h(o.bytes);
    CK(cudaMemcpy(h.data(), o.d, o.bytes, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    *stray = 0;
    for (int64_t i = 0; i <= o.m; i++)
        for (int64_t c = 0; c < o.ldo; c++) {
            const size_t at = i * o.ldo + c;
            if (i < o.m && c < o.n) {
                const double got = kc_get(dt, h.data(), at), d = got - ref[i * o.n + c];
                num += isfinite(got) ? d * d : INFINITY;
                den += ref[i * o.n + c] * ref[i * o.n + c];
            } else if (((const uint16_t *)h.data())[at] != 0xffff) {
                (*stray)++;
            }
        }
    if (bits) *bits = h;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Every counter back at zero and the barrier's low bits too. */
bool scratch_clean()
{
    std::vector<unsigned> h(128 * 1024 / sizeof(unsigned));
    CK(cudaMemcpy(h.data(), kc_scratch, h.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < h.size(); i++)
        if (h[i] & 0x7fffffffu) return false;
    return true;
}

fmlp_cu_gemm_args args_for(const layer &L, int act, int64_t m, const void *x, int64_t ldx, void *out, int64_t ldo)
{
    fmlp_cu_gemm_args a = {L.dt, act, L.glu, m, L.n, L.k, L.nw, x, ldx, L.w, L.b, out, ldo, kc_sms, kc_scratch, false, 0, 0};
    return a;
}

void line(bool ok, const char *what, const fmlp_cu_gemm_args *a, const char *name, double err, int64_t stray, bool clean)
{
    char split[96] = "";
    if (a && fmlp_cu_gemm_stream_fits(a)) fmlp_cu_gemm_stream_describe(a, split, sizeof split);
    printf("%s %-6s %-4s %-30s act=%d m=%-3lld n=%-5lld k=%-5lld bias=%d err=%.2e stray=%lld scratch=%s %s\n",
           ok ? "ok  " : "FAIL", what, kc_dtn(a ? a->dtype : 0), name, a ? a->act : 0, (long long)(a ? a->m : 0),
           (long long)(a ? a->n : 0), (long long)(a ? a->k : 0), a && a->b ? 1 : 0, err, (long long)stray,
           clean ? "clean" : "DIRTY", split);
}

/* One streaming GEMM (or its fallback when k or ldx rule it out). */
void check_stream(int dt, bool glu, int act, int64_t m, int64_t n, int64_t k, int64_t ldx, bool bias, int rw = 0,
                  int splits = 0, bool pdl = false)
{
    layer L = make_layer(dt, glu, n, k, bias);
    const std::vector<double> x = random_x(dt, m, k), ref = reference(L, act, x, m);
    void *dx = upload(dt, x, m, k, ldx);
    outbuf o = out_alloc(dt, m, n);
    fmlp_cu_gemm_args a = args_for(L, act, m, dx, ldx, o.d, o.ldo);
    a.pdl = pdl;
    a.stream_rw = rw;
    a.stream_splits = splits;
    const fmlp_cu_gemm_variant v = fmlp_cu_gemm_pick(&a, kc_sms, kc_ccm);
    const bool want_stream = k % 8 == 0 && ldx % 8 == 0;
    CK(fmlp_cu_gemm(g_s, &a, v));
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(g_s));
    int64_t stray;
    const double err = verify(dt, o, ref, &stray);
    const bool clean = scratch_clean();
    const bool ok = (v == FMLP_CU_GEMM_STREAM) == want_stream && err <= kc_tol(dt) && stray == 0 && clean;
    kc_record(ok);
    line(ok, want_stream ? "stream" : "fallbk", &a, fmlp_cu_gemm_name(&a, v), err, stray, clean);
    cudaFree(dx);
    cudaFree(o.d);
    free_layer(L);
}

/* A gated block: its layers, x, h workspace and y, and the f64 reference. */
struct block {
    int dt, act;
    int64_t m, dim, hidden, out;
    layer gu, dn;
    std::vector<double> x, h_ref, y_ref;
    void *dx, *dh;
    outbuf y;
    fmlp_cu_gemm_args glu, down;
};

block make_block(int dt, int act, int64_t m, int64_t dim, int64_t hidden, int64_t out, bool bias)
{
    block B;
    B.dt = dt;
    B.act = act;
    B.m = m;
    B.dim = dim;
    B.hidden = hidden;
    B.out = out;
    B.gu = make_layer(dt, true, hidden, dim, bias);
    B.dn = make_layer(dt, false, out, hidden, bias);
    B.x = random_x(dt, m, dim);
    B.h_ref = reference(B.gu, act, B.x, m);
    B.y_ref = reference(B.dn, FMLP_ACT_NONE, B.h_ref, m);
    B.dx = upload(dt, B.x, m, dim, dim);
    CK(cudaMalloc(&B.dh, m * hidden * kc_esize(dt)));
    B.y = out_alloc(dt, m, out);
    B.glu = args_for(B.gu, act, m, B.dx, dim, B.dh, hidden);
    B.down = args_for(B.dn, FMLP_ACT_NONE, m, B.dh, hidden, B.y.d, B.y.ldo);
    return B;
}

void free_block(block &B)
{
    free_layer(B.gu);
    free_layer(B.dn);
    cudaFree(B.dx);
    cudaFree(B.dh);
    cudaFree(B.y.d);
}

/* The pair as fused mode chains it: GLU then down, the down a PDL dependent. */
void launch_pair(cudaStream_t s, block &B, bool pdl)
{
    B.glu.pdl = B.down.pdl = pdl;
    CK(fmlp_cu_gemm(s, &B.glu, fmlp_cu_gemm_pick(&B.glu, kc_sms, kc_ccm)));
    CK(fmlp_cu_gemm(s, &B.down, fmlp_cu_gemm_pick(&B.down, kc_sms, kc_ccm)));
}

void check_mlp(int dt, int act, int64_t m, int64_t dim, int64_t hidden, int64_t out, bool bias)
{
    block B = make_block(dt, act, m, dim, hidden, out, bias);
    const bool fits = fmlp_cu_mlp_fits(&B.glu, &B.down);
    if (fits) CK(fmlp_cu_mlp(g_s, &B.glu, &B.down));
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(g_s));
    int64_t stray;
    const double err = verify(dt, B.y, B.y_ref, &stray);
    const bool clean = scratch_clean();
    const bool ok = fits && err <= kc_tol(dt) && stray == 0 && clean;
    kc_record(ok);
    char plan[160] = "";
    fmlp_cu_mlp_describe(&B.glu, &B.down, plan, sizeof plan);
    printf("%s mlp    %-4s %-30s act=%d m=%-3lld dim=%lld hidden=%lld out=%lld bias=%d err=%.2e stray=%lld "
           "scratch=%s %s\n",
           ok ? "ok  " : "FAIL", kc_dtn(dt), fmlp_cu_mlp_name(&B.glu), act, (long long)m, (long long)dim,
           (long long)hidden, (long long)out, bias, err, (long long)stray, clean ? "clean" : "DIRTY", plan);
    free_block(B);
}

/* Two forwards sharing weights and the h workspace but not x or y, each
 * captured into a graph (poison y, then the forward) and replayed in turn:
 * every replay gives its graph's first bits, which match the reference; a
 * down kernel that read h before its GLU kernel finished (or a stale copy
 * of the other forward's h) would not. */
void check_graph(int dt, int64_t m, int64_t dim, int64_t hidden, bool one_kernel, int replays)
{
    block B = make_block(dt, FMLP_ACT_GELU_TANH, m, dim, hidden, dim, true);
    const std::vector<double> x2 = random_x(dt, m, dim);
    const std::vector<double> y2_ref = reference(B.dn, FMLP_ACT_NONE, reference(B.gu, B.act, x2, m), m);
    void *dx2 = upload(dt, x2, m, dim, dim);
    outbuf y2 = out_alloc(dt, m, dim);
    cudaGraphExec_t ge[2];
    for (int f = 0; f < 2; f++) {
        block F = B; /* the same device buffers, the second forward's x and y */
        if (f == 1) {
            F.glu.x = dx2;
            F.down.out = y2.d;
            F.y = y2;
        }
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeRelaxed));
        CK(cudaMemsetAsync(F.y.d, 0xff, F.y.bytes, g_s));
        if (one_kernel)
            CK(fmlp_cu_mlp(g_s, &F.glu, &F.down));
        else
            launch_pair(g_s, F, true);
        CK(cudaStreamEndCapture(g_s, &g));
        CK(cudaGraphInstantiate(&ge[f], g, 0));
        CK(cudaGraphDestroy(g));
    }
    std::vector<char> first[2], now;
    int64_t stray = 0, st;
    double err = 0;
    int differ = 0;
    for (int r = 0; r < replays; r++) {
        for (int f = 0; f < 2; f++) CK(cudaGraphLaunch(ge[f], g_s));
        if (r > 2 && r % 7 && r != replays - 1) continue;
        CK(cudaStreamSynchronize(g_s));
        for (int f = 0; f < 2; f++) {
            const double e = verify(dt, f ? y2 : B.y, f ? y2_ref : B.y_ref, &st, r ? &now : &first[f]);
            err = e > err ? e : err;
            stray += st;
            differ += r && now != first[f];
        }
    }
    const bool clean = scratch_clean();
    const bool ok = err <= kc_tol(dt) && stray == 0 && differ == 0 && clean;
    kc_record(ok);
    printf("%s graph  %-4s %-30s m=%-3lld dim=%lld hidden=%lld replays=2x%d err=%.2e stray=%lld differing=%d "
           "scratch=%s\n",
           ok ? "ok  " : "FAIL", kc_dtn(dt), one_kernel ? fmlp_cu_mlp_name(&B.glu) : "glu+down (PDL)", (long long)m,
           (long long)dim, (long long)hidden, replays, err, (long long)stray, differ, clean ? "clean" : "DIRTY");
    for (int f = 0; f < 2; f++) CK(cudaGraphExecDestroy(ge[f]));
    cudaFree(dx2);
    cudaFree(y2.d);
    free_block(B);
}

/* The same bits over `runs` runs (split sums are added in a fixed order). */
void check_determinism(int dt, int64_t m, int64_t dim, int64_t hidden, bool one_kernel, int runs)
{
    block B = make_block(dt, FMLP_ACT_SILU, m, dim, hidden, dim, true);
    std::vector<char> first, now;
    int differ = 0;
    for (int r = 0; r < runs; r++) {
        CK(cudaMemsetAsync(B.y.d, 0xff, B.y.bytes, g_s));
        if (one_kernel)
            CK(fmlp_cu_mlp(g_s, &B.glu, &B.down));
        else
            launch_pair(g_s, B, true);
        CK(cudaStreamSynchronize(g_s));
        now.resize(B.y.bytes);
        CK(cudaMemcpy(now.data(), B.y.d, B.y.bytes, cudaMemcpyDeviceToHost));
        if (r == 0) first = now;
        differ += now != first;
    }
    int64_t stray;
    const double err = verify(dt, B.y, B.y_ref, &stray);
    const bool ok = differ == 0 && err <= kc_tol(dt) && stray == 0;
    kc_record(ok);
    char plan[160];
    fmlp_cu_mlp_describe(&B.glu, &B.down, plan, sizeof plan);
    printf("%s determ %-4s %-30s m=%-3lld dim=%lld hidden=%lld runs=%d differing=%d err=%.2e (%s)\n", ok ? "ok  " : "FAIL",
           kc_dtn(dt), one_kernel ? fmlp_cu_mlp_name(&B.glu) : "glu+down (PDL)", (long long)m, (long long)dim,
           (long long)hidden, runs, differ, err, plan);
    free_block(B);
}

} // namespace

void kc_small_checks(bool quick)
{
    /* a blocking stream: the uploads and memsets on the legacy stream come first */
    CK(cudaStreamCreate(&g_s));
    std::vector<int64_t> rows;
    if (quick)
        rows = {1, 2, 7, 16, 17, 33, 64};
    else {
        for (int64_t m = 1; m <= 17; m++) rows.push_back(m);
        for (int64_t m : {31, 32, 33, 63, 64}) rows.push_back(m);
    }
    const int dts[2] = {FMLP_BF16, FMLP_F16};
    for (int dt : dts) {
        for (int64_t m : rows) {
            const int act = (int)(m % (KC_ACT_LAST + 1));
            check_stream(dt, true, FMLP_ACT_GELU_TANH, m, 136, 264, 264, true);
            check_stream(dt, false, FMLP_ACT_NONE, m, 100, 72, 80, true, 0, 0, true);
            check_stream(dt, false, act, m, 27, 40, 40, m % 2 == 0);
            check_stream(dt, true, act, m, 50, 104, 112, m % 2 == 1);
            check_mlp(dt, act, m, 256, 520, 27 + 8 * (m % 3), m % 2 == 0);
        }
        /* every split form: forced (rows per block, K slices) */
        const int forced[][2] = {{1, 4}, {2, 3}, {4, 1}, {8, 5}, {1, 16}};
        for (int64_t m : {1LL, 9LL, 17LL, 33LL, 64LL}) {
            if (quick && m != 1 && m != 17) continue;
            for (const auto &f : forced) {
                check_stream(dt, true, FMLP_ACT_SILU, m, 64, 520, 520, true, f[0], f[1]);
                check_stream(dt, false, FMLP_ACT_GELU, m, 200, 776, 776, false, f[0], f[1], true);
            }
        }
        /* rejected shapes fall back to simt: k % 8, ldx % 8 */
        check_stream(dt, false, FMLP_ACT_RELU, 5, 33, 36, 36, true);
        check_stream(dt, true, FMLP_ACT_GELU_TANH, 3, 24, 64, 68, false);
        for (int act = 0; act <= KC_ACT_LAST; act++) check_mlp(dt, act, quick ? 3 : 11, 128, 200, 64, act % 2 == 0);
        check_graph(dt, quick ? 4 : 16, 256, 512, false, quick ? 8 : 50);
        check_graph(dt, quick ? 4 : 16, 256, 512, true, quick ? 8 : 50);
        if (quick) continue;
        for (int64_t m : {1LL, 16LL, 64LL}) {
            check_stream(dt, true, FMLP_ACT_GELU_TANH, m, 3072, 768, 768, false);
            check_stream(dt, false, FMLP_ACT_NONE, m, 768, 3072, 3072, true, 0, 0, true);
            check_mlp(dt, FMLP_ACT_GELU_TANH, m, 768, 3072, 768, m == 16);
            check_graph(dt, m, 768, 3072, false, 30);
            check_graph(dt, m, 768, 3072, true, 30);
        }
        check_determinism(dt, 16, 768, 3072, false, 20);
        check_determinism(dt, 4, 768, 3072, true, 20);
        if (dt != FMLP_BF16) continue;
        /* Llama-3-8B's MLP: long K (14336) in the down projection */
        check_mlp(dt, FMLP_ACT_SILU, 1, 4096, 14336, 4096, false);
        check_mlp(dt, FMLP_ACT_SILU, 5, 4096, 14336, 4096, true);
        check_determinism(dt, 1, 4096, 14336, false, 20);
    }
    if (quick) {
        check_determinism(FMLP_BF16, 16, 256, 512, false, 5);
        check_determinism(FMLP_BF16, 4, 256, 512, true, 5);
    }
}
