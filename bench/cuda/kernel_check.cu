/* Why: checks and times fmlp's CUDA kernels on their own, without the rest
 * of the library, so a device run can validate every GEMM variant and
 * pointwise kernel (random data, poisoned outputs, f64 reference on sampled
 * rows) and report its speed on the tutorial's GeGLU shapes.
 * On Hopper it also times each wgmma tile configuration against cuBLASLt's
 * plain GEMM of the same M x N x K, on the tutorial's and the Llama-3-8B
 * MLP's shapes.
 * Build: nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Isrc
 *        bench/cuda/kernel_check.cu src/cuda/gemm.cu src/cuda/gemm_tma.cu src/cuda/pointwise.cu src/cuda/gemv_row.cu
 *        -lcublasLt -lcuda */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "core/act_ref.h"
#include "cuda_check.cuh"
#include "cuda/kernels.h"
#include "fmlp.h"
#include "lt_plain.h"

static uint64_t rng = 88172645463325252ull;
static double urand(double lo, double hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * ((double)(rng >> 11) / 9007199254740992.0);
}

static size_t esize(int dt) { return dt == FMLP_F32 ? 4 : 2; }
static double rounded(int dt, double v)
{
    if (dt == FMLP_BF16) return (double)__bfloat162float(__float2bfloat16_rn((float)v));
    if (dt == FMLP_F16) return (double)__half2float(__float2half_rn((float)v));
    return (double)(float)v;
}
static void put(int dt, void *p, size_t i, double v)
{
    if (dt == FMLP_BF16) ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn((float)v);
    else if (dt == FMLP_F16) ((__half *)p)[i] = __float2half_rn((float)v);
    else ((float *)p)[i] = (float)v;
}
static double get(int dt, const void *p, size_t i)
{
    if (dt == FMLP_BF16) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    if (dt == FMLP_F16) return __half2float(((const __half *)p)[i]);
    return ((const float *)p)[i];
}
/* A positive integer from the environment, or `fallback` when unset. */
static int64_t env_int(const char *name, int64_t fallback)
{
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end;
    const long long n = strtoll(v, &end, 10);
    if (*end || n < 1) {
        fprintf(stderr, "%s: '%s' is not a positive integer\n", name, v);
        exit(2);
    }
    return n;
}

static const char *dtn(int dt) { return dt == FMLP_F32 ? "f32" : dt == FMLP_BF16 ? "bf16" : "f16"; }
static double tol(int dt) { return dt == FMLP_F32 ? 1e-5 : dt == FMLP_BF16 ? 1e-2 : 2e-3; }

static int fails = 0, checks = 0, g_sms = 0, g_ccm = 0;
static bool g_pdl = false; /* launch with programmatic stream serialization */

/* A kernel to check or time: a variant, and for the wgmma variant one of
 * its tile configurations (-1: the one picked for the shape, launched
 * through fmlp_cu_gemm like the library does). */
struct kv {
    fmlp_cu_gemm_variant v;
    int cfg;
};
/* For the gemv, cfg > 0 forces that many blocks of a cluster to split K. */
static cudaError_t launch(cudaStream_t s, const fmlp_cu_gemm_args *a, kv k)
{
    if (k.v == FMLP_CU_GEMM_WGMMA && a->dtype != FMLP_F32 && k.cfg >= 0) return fmlp_cu_gemm_wgmma_config(s, a, k.cfg);
    if (k.v == FMLP_CU_GEMM_GEMV && k.cfg > 0) {
        fmlp_cu_gemm_args b = *a;
        b.split = k.cfg;
        return fmlp_cu_gemm(s, &b, k.v);
    }
    return fmlp_cu_gemm(s, a, k.v);
}
static const char *kname(const fmlp_cu_gemm_args *a, kv k)
{
    if (k.v == FMLP_CU_GEMM_WGMMA && a->dtype != FMLP_F32) return fmlp_cu_gemm_wgmma_config_name(a, k.cfg);
    if (k.v == FMLP_CU_GEMM_GEMV && k.cfg > 0) {
        static char buf[96];
        snprintf(buf, sizeof buf, "%s/split%d", fmlp_cu_gemm_name(a, k.v), k.cfg);
        return buf;
    }
    return fmlp_cu_gemm_name(a, k.v);
}

/* One GEMM check: x (m, k) with row stride ldx (elements), weights (n, k)
 * per branch, packed as the backend packs them. */
static void check_gemm(int dt, bool glu, int act, int64_t m, int64_t n, int64_t k, int64_t ldx, bool bias, kv v)
{
    const size_t es = esize(dt);
    const int64_t nw = glu ? 2 * ((n + 7) / 8 * 8) : n;
    std::vector<double> xs(m * k), wg(n * k), wu(glu ? n * k : 0), bg(n), bu(n);
    std::vector<char> hx(m * ldx * es), hw(nw * k * es, 0), hb(nw * es, 0);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < k; j++) {
            xs[i * k + j] = rounded(dt, urand(-1, 1));
            put(dt, hx.data(), i * ldx + j, xs[i * k + j]);
        }
    const double sc = 1.0 / sqrt((double)k);
    for (auto &e : wg) e = rounded(dt, urand(-sc, sc));
    for (auto &e : wu) e = rounded(dt, urand(-sc, sc));
    for (auto &e : bg) e = bias ? rounded(dt, urand(-sc, sc)) : 0;
    for (auto &e : bu) e = bias ? rounded(dt, urand(-sc, sc)) : 0;
    for (int64_t r = 0; r < n; r++) {
        const int64_t pg = glu ? (r / 8) * 16 + r % 8 : r, pu = pg + 8;
        for (int64_t j = 0; j < k; j++) {
            put(dt, hw.data(), pg * k + j, wg[r * k + j]);
            if (glu) put(dt, hw.data(), pu * k + j, wu[r * k + j]);
        }
        put(dt, hb.data(), pg, bg[r]);
        if (glu) put(dt, hb.data(), pu, bu[r]);
    }
    void *dx, *dw, *db, *dout;
    const int64_t ldo = n + 3;
    CK(cudaMalloc(&dx, hx.size()));
    CK(cudaMalloc(&dw, hw.size()));
    CK(cudaMalloc(&db, hb.size()));
    CK(cudaMalloc(&dout, m * ldo * es));
    CK(cudaMemcpy(dx, hx.data(), hx.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, hw.data(), hw.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, hb.data(), hb.size(), cudaMemcpyHostToDevice));
    CK(cudaMemset(dout, 0xff, m * ldo * es));
    fmlp_cu_gemm_args a = {dt, act, glu, m, n, k, nw, dx, ldx, dw, bias ? db : NULL, dout, ldo, g_sms, g_ccm, 0, g_pdl};
    CK(launch(0, &a, v));
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<char> ho(m * ldo * es);
    CK(cudaMemcpy(ho.data(), dout, ho.size(), cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    const int64_t step = m > 256 ? m / 97 + 1 : 1;
    for (int64_t i = 0; i < m; i += (i + step < m || i == m - 1) ? step : (m - 1 - i)) {
        for (int64_t c = 0; c < n; c++) {
            double g = bg[c], u = bu[c];
            for (int64_t j = 0; j < k; j++) {
                g += xs[i * k + j] * wg[c * k + j];
                if (glu) u += xs[i * k + j] * wu[c * k + j];
            }
            const double ref = fmlp_act_ref((fmlp_act)act, g) * (glu ? u : 1.0);
            const double got = get(dt, ho.data(), i * ldo + c);
            const double d = got - ref;
            num += isfinite(got) ? d * d : INFINITY;
            den += ref * ref;
        }
        if (i == m - 1) break;
    }
    const double err = sqrt(num / den);
    const bool ok = err <= tol(dt);
    checks++;
    if (!ok) fails++;
    printf("%s gemm %-4s %-28s %s act=%d m=%-5lld n=%-5lld k=%-5lld ldx=%-5lld bias=%d err=%.2e\n", ok ? "ok  " : "FAIL", dtn(dt),
           kname(&a, v), glu ? "glu " : "plain", act, (long long)m, (long long)n, (long long)k,
           (long long)ldx, bias, err);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(db);
    cudaFree(dout);
}

/* The same check on a device of `sms` multiprocessors as far as the tile
 * configurations know: a persistent grid then holds that many blocks, so
 * each block walks many tiles (and a ping-pong block's two teams take
 * several turns) at sizes a sanitizer run still affords. */
static void check_gemm_sms(int sms, int dt, bool glu, int act, int64_t m, int64_t n, int64_t k, int64_t ldx, bool bias,
                           kv v)
{
    const int keep = g_sms;
    g_sms = sms;
    check_gemm(dt, glu, act, m, n, k, ldx, bias, v);
    g_sms = keep;
}

/* Runs one pointwise kernel on host data (rows x cols, row stride ld, output
 * poisoned on the device first) and brings its output back; false when the
 * vector variant cannot take these pointers and strides. */
static bool run_pw(int dt, int op, int act, bool vec, int64_t rows, int64_t cols, int64_t ld,
                   const std::vector<char> &ha, const std::vector<char> &hb, std::vector<char> &ho, const char **name)
{
    void *da, *db, *dout;
    CK(cudaMalloc(&da, ha.size()));
    CK(cudaMalloc(&db, hb.size()));
    CK(cudaMalloc(&dout, ho.size()));
    CK(cudaMemcpy(da, ha.data(), ha.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, hb.data(), hb.size(), cudaMemcpyHostToDevice));
    CK(cudaMemset(dout, 0xff, ho.size()));
    const bool runs = !vec || fmlp_cu_pw_can_vec(dt, cols, da, ld, db, ld, dout, ld);
    if (runs) {
        CK(fmlp_cu_pointwise(0, true, dt, op, act, vec, rows, cols, da, ld, db, ld, dout, ld, name));
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(ho.data(), dout, ho.size(), cudaMemcpyDeviceToHost));
    }
    cudaFree(da);
    cudaFree(db);
    cudaFree(dout);
    return runs;
}

static void check_pw(int dt, int op, int act, int64_t rows, int64_t cols, int64_t ld, bool vec)
{
    const size_t es = esize(dt);
    std::vector<char> ha(rows * ld * es), hb(rows * ld * es), ho(rows * ld * es);
    for (int64_t i = 0; i < rows * ld; i++) {
        put(dt, ha.data(), i, urand(-4, 4));
        put(dt, hb.data(), i, urand(-2, 2));
    }
    const char *name = "";
    if (!run_pw(dt, op, act, vec, rows, cols, ld, ha, hb, ho, &name)) {
        printf("skip pw vec ld=%lld\n", (long long)ld);
        return;
    }
    double num = 0, den = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            const size_t i = r * ld + c;
            const double a = get(dt, ha.data(), i), b = get(dt, hb.data(), i);
            const double y = op == FMLP_CU_PW_MUL ? a : fmlp_act_ref((fmlp_act)act, a);
            const double ref = op == FMLP_CU_PW_ACT ? y : y * b;
            const double got = get(dt, ho.data(), i);
            num += isfinite(got) ? (got - ref) * (got - ref) : INFINITY;
            den += ref * ref;
        }
    const double err = sqrt(num / den);
    const bool ok = err <= tol(dt) * 0.5;
    checks++;
    if (!ok) fails++;
    printf("%s pw   %-28s rows=%lld cols=%lld ld=%lld err=%.2e\n", ok ? "ok  " : "FAIL", name, (long long)rows,
           (long long)cols, (long long)ld, err);
}

/* IEEE specials through one pointwise kernel: NaN stays NaN, and Inf,
 * huge and tiny inputs land where the double reference (rounded to the
 * dtype) says, as PyTorch computes them. */
static void check_pw_specials(int dt, int op, int act)
{
    static const double xs[] = {NAN, INFINITY, -INFINITY, 0.0, 1e30, -1e30, 100.0, -100.0, 3.0, -3.0, 1e-3};
    const int64_t n = sizeof xs / sizeof xs[0];
    const size_t es = esize(dt);
    std::vector<char> ha(n * es), hb(n * es), ho(n * es);
    for (int64_t i = 0; i < n; i++) {
        put(dt, ha.data(), i, xs[i]);
        put(dt, hb.data(), i, 1.5);
    }
    const char *name = "";
    run_pw(dt, op, act, false, 1, n, n, ha, hb, ho, &name);
    bool ok = true;
    for (int64_t i = 0; i < n; i++) {
        const double a = get(dt, ha.data(), i), y = fmlp_act_ref((fmlp_act)act, a);
        const double want = rounded(dt, op == FMLP_CU_PW_ACT ? y : y * 1.5), got = get(dt, ho.data(), i);
        bool same = isnan(want) ? isnan(got)
                    : isinf(want) ? got == want
                    : fabs(want) < 1.2e-38 ? fabs(got) < 1.2e-38 /* an exact exp may flush to 0 */
                                           : isfinite(got) && fabs(got - want) <= 1e-2 * fabs(want);
        if (!same) printf("     %s(%g) = %g, want %g\n", name, a, got, want);
        ok = ok && same;
    }
    checks++;
    if (!ok) fails++;
    printf("%s pw   %-28s NaN, +-Inf, huge and tiny inputs\n", ok ? "ok  " : "FAIL", name);
}

static float time_it(cudaStream_t s, const fmlp_cu_gemm_args *a, kv v, int iters)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 5; i++) CK(launch(s, a, v));
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < iters; i++) CK(launch(s, a, v));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return ms * 1000.0f / iters;
}

/* Back-to-back forwards of the gated MLP's two GEMMs (gate/up with the GLU
 * epilogue, then down) in variant v, each launched with PDL or without. */
static float time_pair(cudaStream_t s, const fmlp_cu_gemm_args *g, const fmlp_cu_gemm_args *d, kv v, bool pdl, int iters)
{
    fmlp_cu_gemm_args gp = *g, dp = *d;
    gp.pdl = dp.pdl = pdl;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 5; i++) {
        CK(launch(s, &gp, v));
        CK(launch(s, &dp, v));
    }
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < iters; i++) {
        CK(launch(s, &gp, v));
        CK(launch(s, &dp, v));
    }
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return ms * 1000.0f / iters;
}

/* Fills n bf16 values with uniform noise in [-a, a] on the device. */
__global__ void fill_bf16(__nv_bfloat16 *p, size_t n, float a, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        p[i] = __float2bfloat16_rn(a * ((float)(h & 0xFFFFFF) / 8388608.0f - 1.0f));
    }
}

#define CKLT(x)                                                                          \
    do {                                                                                 \
        cublasStatus_t s_ = (x);                                                         \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                               \
            printf("cuBLASLt error %d at %s:%d\n", (int)s_, __FILE__, __LINE__);         \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* cuBLASLt's plain bf16 GEMM out (m, n) = x (m, k) . w (n, k)^T, all
 * row-major and contiguous, f32 accumulation, its top heuristic algorithm:
 * mean microseconds per launch over iters back-to-back launches. */
static float time_lt(cudaStream_t s, cublasLtHandle_t lt, void *ws, size_t wss, int64_t m, int64_t n, int64_t k,
                     const void *x, const void *w, void *out, int iters)
{
    lt_plain p;
    const cublasStatus_t made = lt_plain_make(lt, m, n, k, wss, &p);
    if (made == CUBLAS_STATUS_NOT_SUPPORTED) {
        printf("cuBLASLt: no algorithm for %lld x %lld x %lld\n", (long long)m, (long long)n, (long long)k);
        exit(1);
    }
    CKLT(made);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++) CKLT(lt_plain_run(lt, &p, x, w, out, ws, wss, s));
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < iters; i++) CKLT(lt_plain_run(lt, &p, x, w, out, ws, wss, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    lt_plain_free(&p);
    return ms * 1000.0f / iters;
}

/* The median of three timings. */
static float med3(float a, float b, float c) { return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b)); }

/* GEMM-only table: each wgmma configuration's GLU GEMM (m x 2 hid x dim,
 * GELU-tanh epilogue, bias) and down GEMM (m x dim x hid, bias) against
 * cuBLASLt's plain GEMM of the same M x N x K, bf16, L2 warm, the median
 * of three batches of back-to-back launches. */
static void gemm_vs_lt(cudaStream_t s, int sms, int ccm)
{
    const int64_t shapes[2][2] = {{768, 3072}, {4096, 14336}};
    const int64_t rows[] = {1024, 4096, 8192};
    const int64_t maxm = 8192, maxd = 4096, maxh = 14336;
    void *x, *w, *b, *h, *w2, *y, *ws;
    const size_t wss = 32u << 20;
    CK(cudaMalloc(&x, maxm * maxd * 2));
    CK(cudaMalloc(&w, 2 * maxh * maxd * 2));
    CK(cudaMalloc(&b, 2 * maxh * 2));
    CK(cudaMalloc(&h, maxm * maxh * 2));
    CK(cudaMalloc(&w2, maxh * maxd * 2));
    CK(cudaMalloc(&y, maxm * 2 * maxh * 2));
    CK(cudaMalloc(&ws, wss));
    fill_bf16<<<1024, 256, 0, s>>>((__nv_bfloat16 *)x, maxm * maxd, 1.0f, 1);
    fill_bf16<<<1024, 256, 0, s>>>((__nv_bfloat16 *)w, 2 * maxh * maxd, 0.03f, 2);
    fill_bf16<<<1024, 256, 0, s>>>((__nv_bfloat16 *)b, 2 * maxh, 0.03f, 3);
    fill_bf16<<<1024, 256, 0, s>>>((__nv_bfloat16 *)h, maxm * maxh, 1.0f, 4);
    fill_bf16<<<1024, 256, 0, s>>>((__nv_bfloat16 *)w2, maxh * maxd, 0.03f, 5);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    cublasLtHandle_t lt;
    CKLT(cublasLtCreate(&lt));
    printf("\nGEMM only, bf16, against cuBLASLt's plain GEMM of the same M x N x K (TFLOP/s; ratio = fmlp / cuBLASLt)\n");
    printf("%-12s %-6s %-42s %9s %8s %6s | %-38s %9s %8s %6s\n", "dim->hid", "rows", "glu kernel (m x 2hid x dim)", "us",
           "TFLOP/s", "ratio", "down kernel (m x dim x hid)", "us", "TFLOP/s", "ratio");
    for (const auto &sh : shapes) {
        const int64_t dim = sh[0], hid = sh[1];
        for (int64_t m : rows) {
            const double fl = 2.0 * m * dim * 2 * hid, fd = 2.0 * m * dim * hid;
            const int ig = fl / 6e8 > 20000 / 5 ? 5 : fl / 6e8 < 100 ? 200 : (int)(20000 / (fl / 6e8));
            const int id = fd / 6e8 > 20000 / 5 ? 5 : fd / 6e8 < 100 ? 200 : (int)(20000 / (fd / 6e8));
            char shape[32];
            snprintf(shape, sizeof shape, "%lld->%lld", (long long)dim, (long long)hid);
            const float lg = med3(time_lt(s, lt, ws, wss, m, 2 * hid, dim, x, w, y, ig),
                                  time_lt(s, lt, ws, wss, m, 2 * hid, dim, x, w, y, ig),
                                  time_lt(s, lt, ws, wss, m, 2 * hid, dim, x, w, y, ig));
            const float ld = med3(time_lt(s, lt, ws, wss, m, dim, hid, h, w2, y, id),
                                  time_lt(s, lt, ws, wss, m, dim, hid, h, w2, y, id),
                                  time_lt(s, lt, ws, wss, m, dim, hid, h, w2, y, id));
            printf("%-12s %-6lld %-42s %9.2f %8.1f %6s | %-38s %9.2f %8.1f %6s\n", shape, (long long)m,
                   "cublasLt plain", lg, fl / lg * 1e-6, "", "cublasLt plain", ld, fd / ld * 1e-6, "");
            fmlp_cu_gemm_args g = {FMLP_BF16, FMLP_ACT_GELU_TANH, true, m, hid, dim, 2 * hid, x, dim, w, b, h, hid, sms, 0, 0, false};
            fmlp_cu_gemm_args dn = {FMLP_BF16, FMLP_ACT_NONE, false, m, dim, hid, dim, h, hid, w2, b, y, dim, sms, 0, 0, false};
            const fmlp_cu_gemm_variant picked = fmlp_cu_gemm_pick(&g, sms, ccm);
            for (int c = 0; c < fmlp_cu_gemm_wgmma_configs(); c++) {
                const kv v = {FMLP_CU_GEMM_WGMMA, c};
                const float tg = med3(time_it(s, &g, v, ig), time_it(s, &g, v, ig), time_it(s, &g, v, ig));
                const float td = med3(time_it(s, &dn, v, id), time_it(s, &dn, v, id), time_it(s, &dn, v, id));
                const bool is_picked = picked == FMLP_CU_GEMM_WGMMA && !strcmp(kname(&g, v), fmlp_cu_gemm_name(&g, picked));
                printf("%-12s %-6lld %-42s %9.2f %8.1f %6.2f | %-38s %9.2f %8.1f %6.2f  blocks %lld/%lld%s\n", shape,
                       (long long)m, kname(&g, v), tg, fl / tg * 1e-6, lg / tg, kname(&dn, v), td, fd / td * 1e-6, ld / td,
                       (long long)fmlp_cu_gemm_wgmma_blocks(&g, c), (long long)fmlp_cu_gemm_wgmma_blocks(&dn, c),
                       is_picked ? "  <- picked (glu)" : "");
            }
            /* where the picked GLU kernel's time goes: the same kernel with
             * no activation (the GLU product alone), and its plain form on
             * the same M x N x K (no pairing, no bias): the epilogue's share */
            {
                fmlp_cu_gemm_args gb = g, pl = g;
                gb.act = FMLP_ACT_NONE;
                pl.act = FMLP_ACT_NONE;
                pl.glu = false;
                pl.n = 2 * hid;
                pl.b = NULL;
                pl.out = y;
                pl.ldo = 2 * hid;
                kv v = {FMLP_CU_GEMM_WGMMA, 0};
                while (v.cfg + 1 < fmlp_cu_gemm_wgmma_configs() && strcmp(kname(&g, v), kname(&g, {FMLP_CU_GEMM_WGMMA, -1})))
                    v.cfg++;
                const float tb = med3(time_it(s, &gb, v, ig), time_it(s, &gb, v, ig), time_it(s, &gb, v, ig));
                const float tp = med3(time_it(s, &pl, v, ig), time_it(s, &pl, v, ig), time_it(s, &pl, v, ig));
                char nb[64], np[64];
                snprintf(nb, sizeof nb, "%s, no act", kname(&gb, v));
                snprintf(np, sizeof np, "%s, m x 2hid x dim", kname(&pl, v));
                printf("%-12s %-6lld %-42s %9.2f %8.1f %6.2f | %-38s %9.2f %8.1f %6.2f\n", shape, (long long)m, nb, tb,
                       fl / tb * 1e-6, lg / tb, np, tp, fl / tp * 1e-6, lg / tp);
            }
        }
    }
    cublasLtDestroy(lt);
    cudaFree(x);
    cudaFree(w);
    cudaFree(b);
    cudaFree(h);
    cudaFree(w2);
    cudaFree(y);
    cudaFree(ws);
}

/* Environment: KC_QUICK=1 checks small shapes only and times nothing (the
 * sanitizer runs); KC_TIMING=only times without checking, KC_TIMING=none
 * checks without timing; KC_WGMMA_ONLY=1 checks the wgmma configurations
 * alone; KC_NO_LT=1 leaves out the comparison with cuBLASLt. */
int main(void)
{
    const bool quick = getenv("KC_QUICK") != NULL;
    const char *timing = getenv("KC_TIMING");
    const bool check_on = !timing || strcmp(timing, "only") != 0, time_on = !timing || strcmp(timing, "none") != 0;
    const bool wgmma_only = getenv("KC_WGMMA_ONLY") != NULL;
    int sms = 0, ccm = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&ccm, cudaDevAttrComputeCapabilityMajor, 0));
    g_sms = sms;
    g_ccm = ccm;
    const int dts[3] = {FMLP_BF16, FMLP_F16, FMLP_F32};
    const int64_t ms[] = {1, 5, 16, 33, 64, 65, 130, 1000};
    /* every kernel the device offers: the generic variants, then each wgmma configuration */
    std::vector<kv> all = {{FMLP_CU_GEMM_SIMT, 0}, {FMLP_CU_GEMM_GEMV, 0}, {FMLP_CU_GEMM_TILE64, 0},
                           {FMLP_CU_GEMM_TILE128, 0}};
    if (wgmma_only) all.clear();
    if (ccm == 9) {
        for (int c = 0; c < fmlp_cu_gemm_wgmma_configs(); c++) all.push_back({FMLP_CU_GEMM_WGMMA, c});
        if (!wgmma_only) {
            all.push_back({FMLP_CU_GEMM_GEMV, 3}); /* K split over clusters of 3 and 8 blocks */
            all.push_back({FMLP_CU_GEMM_GEMV, 8});
        }
    }
    for (int d = 0; d < 3 && check_on; d++) {
        const int dt = dts[d];
        for (int64_t m : ms) {
            if (quick && m > 130) continue;
            for (const kv &v : all) {
                if (dt == FMLP_F32 && v.v != FMLP_CU_GEMM_SIMT) continue;
                if (v.v == FMLP_CU_GEMM_GEMV && m > 64) continue;
                if (dt == FMLP_F32 && m > 200) continue;
                check_gemm(dt, true, FMLP_ACT_GELU_TANH, m, 136, 264, 264, true, v);
                check_gemm(dt, false, FMLP_ACT_NONE, m, 100, 72, 80, true, v);
                check_gemm(dt, false, FMLP_ACT_SILU, m, 36, 40, 40, false, v);
                check_gemm(dt, true, FMLP_ACT_SILU, m, 13, 24, 24, false, v);
                if (m != 33) continue;
                /* every activation of the table in this variant's epilogue */
                for (int act = FMLP_ACT_NONE + 1; act < FMLP_ACT_COUNT; act++) {
                    check_gemm(dt, true, act, m, 40, 64, 64, true, v);
                    check_gemm(dt, false, act, m, 40, 64, 64, false, v);
                }
            }
        }
        if (!wgmma_only) check_gemm(dt, true, FMLP_ACT_GELU_TANH, 7, 50, 33, 35, true, {FMLP_CU_GEMM_SIMT, 0});
        /* one row, long K: the row-streaming gemv (gemv_row.cu) at both
         * splits, K off its 256-element batches, x over 48 KB of shared
         * memory, odd widths, with and without PDL */
        for (int pdl = 0; pdl < 2 && dt != FMLP_F32 && !wgmma_only; pdl++) {
            const kv gv = {FMLP_CU_GEMM_GEMV_ROW, 0};
            g_pdl = pdl;
            check_gemm(dt, true, FMLP_ACT_GELU_TANH, 1, 13, 2048, 2048, true, gv);
            check_gemm(dt, false, FMLP_ACT_NONE, 1, 771, 2056, 2056, true, gv);
            check_gemm(dt, true, FMLP_ACT_SILU, 1, 1000, 4104, 4104, false, gv);
            check_gemm(dt, false, FMLP_ACT_RELU, 1, 37, 14344, 14344, true, gv);
            check_gemm(dt, true, FMLP_ACT_GELU_TANH, 1, 100, 30000, 30000, true, gv);
            check_gemm(dt, false, FMLP_ACT_NONE, 1, 4101, 3072, 3072, true, gv);
            g_pdl = false;
        }
        /* many tiles per block: 7 blocks of a persistent grid walk them all
         * (ring wrap across tiles, K tails, odd M and N) */
        for (const kv &v : all) {
            if (v.v != FMLP_CU_GEMM_WGMMA || dt == FMLP_F32) continue;
            check_gemm_sms(7, dt, true, FMLP_ACT_GELU_TANH, 1000, 300, 520, 520, true, v);
            check_gemm_sms(7, dt, false, FMLP_ACT_NONE, 777, 1000, 200, 208, true, v);
            check_gemm_sms(7, dt, true, FMLP_ACT_SILU, 259, 136, 1032, 1032, false, v);
            check_gemm_sms(1, dt, false, FMLP_ACT_RELU, 300, 520, 72, 72, true, v);
        }
        /* more rows than one launch's grid holds: fmlp_cu_gemm runs slices */
        if (!quick) {
            if (!wgmma_only)
                check_gemm(dt, true, FMLP_ACT_GELU_TANH, 65535LL * 64 + 1000, 16, 16, 16, true,
                           {dt == FMLP_F32 ? FMLP_CU_GEMM_SIMT : FMLP_CU_GEMM_TILE64, 0});
            if (dt != FMLP_F32 && ccm == 9)
                check_gemm(dt, false, FMLP_ACT_NONE, 65535LL * 64 + 1000, 24, 32, 40, true, {FMLP_CU_GEMM_WGMMA, -1});
        }
        if (dt != FMLP_F32 && !quick) {
            if (!wgmma_only) {
                check_gemm(dt, true, FMLP_ACT_GELU_TANH, 1000, 3072, 768, 768, true, {FMLP_CU_GEMM_TILE128, 0});
                check_gemm(dt, true, FMLP_ACT_GELU_TANH, 64, 3072, 768, 768, true, {FMLP_CU_GEMM_GEMV, 0});
                /* the down projection's shape, K split over a cluster as picked for it, K and n off the chunk grid */
                for (int64_t m : {1, 7, 16, 32}) {
                    check_gemm(dt, false, FMLP_ACT_NONE, m, 768, 3072, 3072, true, {FMLP_CU_GEMM_GEMV, 0});
                    check_gemm(dt, false, FMLP_ACT_NONE, m, 770, 3000, 3000, false, {FMLP_CU_GEMM_GEMV, 0});
                    check_gemm(dt, true, FMLP_ACT_SILU, m, 100, 4000, 4008, true, {FMLP_CU_GEMM_GEMV, 0});
                }
                check_gemm(dt, false, FMLP_ACT_NONE, 300, 768, 3072, 3072, true, {FMLP_CU_GEMM_TILE64, 0});
            }
            for (const kv &v : all) {
                if (v.v != FMLP_CU_GEMM_WGMMA) continue;
                check_gemm(dt, true, FMLP_ACT_GELU_TANH, 1000, 3072, 768, 768, true, v);
                check_gemm(dt, false, FMLP_ACT_NONE, 300, 768, 3072, 3072, true, v);
                check_gemm(dt, true, FMLP_ACT_SILU, 777, 1000, 200, 208, false, v);
                check_gemm(dt, true, FMLP_ACT_GELU_TANH, 200, 3072, 768, 768, true, v);
                check_gemm(dt, false, FMLP_ACT_RELU, 129, 300, 136, 136, true, v);
                check_gemm(dt, false, FMLP_ACT_NONE, 2050, 770, 1000, 1000, true, v);
                /* more tiles than SMs, a long K, and M up to 65536 */
                check_gemm(dt, true, FMLP_ACT_GELU_TANH, 4099, 1000, 520, 520, true, v);
                check_gemm(dt, true, FMLP_ACT_SILU, 1031, 600, 4096, 4096, false, v);
                check_gemm(dt, false, FMLP_ACT_NONE, 65536, 136, 264, 264, true, v);
                check_gemm(dt, true, FMLP_ACT_GELU_TANH, 65535, 40, 72, 72, true, v);
            }
        }
        for (int op = 0; op < 3 && !wgmma_only; op++)
            for (int act = 1; act < FMLP_ACT_COUNT; act++) {
                if (op == FMLP_CU_PW_MUL && act > 1) continue;
                check_pw(dt, op, act, 37, 200, 208, true);
                check_pw(dt, op, act, 37, 203, 205, false);
                if (op != FMLP_CU_PW_MUL) check_pw_specials(dt, op, act);
            }
    }

    if (quick || !time_on) {
        printf("\n%d checks, %d failed\n", checks, fails);
        return fails ? 1 : 0;
    }
    /* Speed on the tutorial GeGLU (768 -> 3072 -> 768, bf16), or on
     * KC_DIM -> KC_HIDDEN at the KC_ROWS listed (comma-separated). */
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const int64_t dim = env_int("KC_DIM", 768), hid = env_int("KC_HIDDEN", 3072);
    std::vector<int64_t> rows = {1, 16, 64, 128, 1024, 8192, 32768};
    if (getenv("KC_ROWS")) {
        rows.clear();
        for (const char *p = getenv("KC_ROWS"); *p;) {
            char *end;
            const long long v = strtoll(p, &end, 10);
            if (end == p || v < 1) {
                fprintf(stderr, "KC_ROWS: '%s' is not a comma-separated list of positive row counts\n", getenv("KC_ROWS"));
                return 2;
            }
            rows.push_back(v);
            p = *end == ',' ? end + 1 : end;
        }
    }
    void *x, *w, *b, *h, *w2, *y;
    CK(cudaMalloc(&x, 32768 * dim * 2));
    CK(cudaMalloc(&w, 2 * hid * dim * 2));
    CK(cudaMalloc(&b, 2 * hid * 2));
    CK(cudaMalloc(&h, 32768 * hid * 2));
    CK(cudaMalloc(&w2, hid * dim * 2));
    CK(cudaMalloc(&y, 32768 * dim * 2));
    {
        std::vector<__nv_bfloat16> tmp(32768 * dim);
        for (auto &e : tmp) e = __float2bfloat16_rn((float)urand(-1, 1));
        CK(cudaMemcpy(x, tmp.data(), tmp.size() * 2, cudaMemcpyHostToDevice));
        tmp.resize(2 * hid * dim);
        for (auto &e : tmp) e = __float2bfloat16_rn((float)urand(-0.036, 0.036));
        CK(cudaMemcpy(w, tmp.data(), tmp.size() * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(w2, tmp.data(), hid * dim * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(b, tmp.data(), 2 * hid * 2, cudaMemcpyHostToDevice));
    }
    printf("\n%-6s %-34s %10s %9s | %-34s %10s %9s\n", "rows", "glu kernel", "us", "TFLOP/s", "down kernel", "us",
           "TFLOP/s");
    for (int64_t m : rows) {
        fmlp_cu_gemm_args g = {FMLP_BF16, FMLP_ACT_GELU_TANH, true, m, hid, dim, 2 * hid, x, dim, w, b, h, hid, sms, ccm, 0, false};
        fmlp_cu_gemm_args dn = {FMLP_BF16, FMLP_ACT_NONE, false, m, dim, hid, dim, h, hid, w2, b, y, dim, sms, ccm, 0, false};
        std::vector<kv> cand = {{FMLP_CU_GEMM_GEMV, 0}, {FMLP_CU_GEMM_GEMV, 1}, {FMLP_CU_GEMM_TILE128, 0}};
        if (fmlp_cu_gemv_row_applies(&g) || fmlp_cu_gemv_row_applies(&dn)) cand.push_back({FMLP_CU_GEMM_GEMV_ROW, 0});
        if (ccm == 9)
            for (int c = 0; c < fmlp_cu_gemm_wgmma_configs(); c++) cand.push_back({FMLP_CU_GEMM_WGMMA, c});
        const fmlp_cu_gemm_variant picked = fmlp_cu_gemm_pick(&g, sms, ccm);
        for (const kv &c : cand) {
            if (c.v == FMLP_CU_GEMM_GEMV && m > 64) continue;
            const int iters = m >= 8192 ? 20 : 200;
            const float tg = time_it(s, &g, c, iters);
            const float td = time_it(s, &dn, c, iters);
            const double fl = 2.0 * m * dim * 2 * hid;
            const bool is_picked = c.v == picked && (c.v != FMLP_CU_GEMM_WGMMA ||
                                                     !strcmp(kname(&g, c), fmlp_cu_gemm_name(&g, picked)));
            printf("%-6lld %-34s %10.2f %9.1f | %-34s %10.2f %9.1f%s\n", (long long)m, kname(&g, c), tg,
                   fl / tg * 1e-6, kname(&dn, c), td, fl / 2 / td * 1e-6, is_picked ? "  <- picked" : "");
            if (c.v == FMLP_CU_GEMM_GEMV || c.v == FMLP_CU_GEMM_GEMV_ROW)
                printf("%-6lld   both GEMMs back to back: %.2f us, with PDL %.2f us\n", (long long)m,
                       time_pair(s, &g, &dn, c, false, iters), time_pair(s, &g, &dn, c, true, iters));
        }
    }
    {
        const char *name;
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        for (int64_t m : rows) {
            CK(cudaEventRecord(e0, s));
            for (int i = 0; i < 50; i++)
                CK(fmlp_cu_pointwise(s, true, FMLP_BF16, FMLP_CU_PW_GLU, FMLP_ACT_GELU_TANH, true, m, hid, h, hid, h,
                                     hid, h, hid, &name));
            CK(cudaEventRecord(e1, s));
            CK(cudaEventSynchronize(e1));
            float ms_;
            CK(cudaEventElapsedTime(&ms_, e0, e1));
            const double us = ms_ * 1000 / 50;
            printf("pw %-28s rows=%-6lld %8.2f us %7.0f GB/s\n", name, (long long)m, us, 3.0 * m * hid * 2 / us * 1e-3);
        }
    }
    if (ccm == 9 && !getenv("KC_NO_LT")) gemm_vs_lt(s, sms, ccm);
    printf("\n%d checks, %d failed\n", checks, fails);
    return fails ? 1 : 0;
}
