/* Why: eager and compiled modes run their GEMMs exactly as PyTorch eager
 * does for nn.Linear (aten::addmm through cuBLASLt, bias in the epilogue,
 * FP32 accumulation, TF32 off), so the comparison with PyTorch is about
 * fusion, not GEMM quality. Descriptors and the heuristic's choice are
 * built once per problem and reused, so a steady-state GEMM costs one
 * cublasLtMatmul call. A fused plan's GEMMs are fmlp's own choice: the
 * heuristic's first choice is not always its fastest (the tutorial's down
 * GEMM at 1024 rows: its fifth 1.22x faster on the H100,
 * bench/results/h100_device_run_2026-12-06.md), so there the first call
 * that may time them times its first FMLP_CU_LT_TUNE algorithms and keeps
 * the fastest. */
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "cuda/cuda_internal.h"

#define LT_WORKSPACE_BYTES ((size_t)32 << 20)

/* Timing: rounds over the candidates, runs per timing, each candidate's
 * best round kept. Another algorithm replaces the heuristic's first only
 * when it is this much faster (so that timing noise does not move a
 * GEMM between equals). GEMMs whose first run takes longer than
 * LT_TUNE_MAX_US are not timed: the largest measured (the Llama-3-8B down
 * GEMM from 1024 rows) already had the heuristic's first within 0.7% of
 * the fastest, and timing them would cost tens of ms. */
#define LT_TUNE_ROUNDS 3
#define LT_TUNE_RUNS 3
#define LT_TUNE_MARGIN 0.98f
#define LT_TUNE_MAX_US 300.0f

static fmlp_status lt_fail(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_ALLOC_FAILED)
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "%s: cuBLASLt is out of device memory", what);
    return fmlp_fail(FMLP_ERR_DEVICE, "%s failed: %s", what, cublasLtGetStatusString(s));
}

fmlp_status fmlp_cu_lt_init(fmlp_cu_state *st)
{
    cublasStatus_t s = cublasLtCreate(&st->lt);
    if (s != CUBLAS_STATUS_SUCCESS) return lt_fail(s, "cublasLtCreate");
    cudaError_t e = cudaMalloc(&st->lt_ws, LT_WORKSPACE_BYTES);
    if (e != cudaSuccess) {
        cublasLtDestroy(st->lt);
        st->lt = NULL;
        return fmlp_cu_fail(e, "allocating the cuBLASLt workspace");
    }
    st->lt_ws_bytes = LT_WORKSPACE_BYTES;
    return FMLP_OK;
}

static void plan_destroy(fmlp_cu_lt_plan *p)
{
    if (p->la) cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
    if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
    if (p->op) cublasLtMatmulDescDestroy(p->op);
    memset(p, 0, sizeof *p);
}

void fmlp_cu_lt_fini(fmlp_cu_state *st)
{
    for (int i = 0; i < st->n_lt; i++) plan_destroy(&st->lt_plans[i]);
    st->n_lt = 0;
    if (st->lt_tune_stream) cudaStreamDestroy(st->lt_tune_stream);
    st->lt_tune_stream = NULL;
    if (st->lt_ws) cudaFree(st->lt_ws);
    if (st->lt) cublasLtDestroy(st->lt);
    st->lt_ws = NULL;
    st->lt = NULL;
}

static int alignment_of(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    int al = 1;
    while (al < 256 && (a & (uintptr_t)(2 * al - 1)) == 0) al *= 2;
    return al;
}

static cudaDataType_t lt_type(fmlp_dtype dt)
{
    return dt == FMLP_BF16 ? CUDA_R_16BF : dt == FMLP_F16 ? CUDA_R_16F : CUDA_R_32F;
}

#define LT_TRY(call, what)                                  \
    do {                                                    \
        cublasStatus_t s_ = (call);                         \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                  \
            plan_destroy(p);                                \
            return lt_fail(s_, what);                       \
        }                                                   \
    } while (0)

static bool memo_matches(const fmlp_cu_lt_pick_memo *e, const fmlp_cu_lt_plan *p)
{
    return e->dtype == p->dtype && e->m == p->m && e->n == p->n && e->k == p->k && e->ldx == p->ldx &&
           e->ldy == p->ldy && e->align_x == p->align_x && e->align_y == p->align_y &&
           e->align_w == alignment_of(p->w) && e->bias == (p->bias != NULL);
}

static const fmlp_cu_lt_pick_memo *memo_find(const fmlp_cu_state *st, const fmlp_cu_lt_plan *p)
{
    for (int i = 0; i < st->n_lt_picks; i++)
        if (memo_matches(&st->lt_picks[i], p)) return &st->lt_picks[i];
    return NULL;
}

static void memo_keep(fmlp_cu_state *st, const fmlp_cu_lt_plan *p)
{
    const int slot = st->n_lt_picks < FMLP_CU_LT_PICKS ? st->n_lt_picks++ : st->next_lt_pick++ % FMLP_CU_LT_PICKS;
    fmlp_cu_lt_pick_memo *e = &st->lt_picks[slot];
    *e = (fmlp_cu_lt_pick_memo){p->dtype, p->m, p->n, p->k, p->ldx, p->ldy, p->align_x, p->align_y,
                                alignment_of(p->w), p->bias != NULL, p->algo};
}

/* Column-major view of the row-major problem: y^T (n, m) = W (n, k) · x^T,
 * i.e. A = W stored (k, n) transposed, B = x stored (k, m), C = y (n, m). */
static fmlp_status plan_build(fmlp_cu_state *st, fmlp_cu_lt_plan *p)
{
    const cudaDataType_t t = lt_type(p->dtype);
    LT_TRY(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "set TRANSA");
    LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "set TRANSB");
    if (p->bias) {
        const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "set EPILOGUE");
        LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p->bias, sizeof p->bias),
               "set BIAS_POINTER");
        const cudaDataType_t bt = t;
        LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt),
               "set BIAS_DATA_TYPE");
    }
    LT_TRY(cublasLtMatrixLayoutCreate(&p->la, t, (uint64_t)p->k, (uint64_t)p->n, p->k), "layout A");
    LT_TRY(cublasLtMatrixLayoutCreate(&p->lb, t, (uint64_t)p->k, (uint64_t)p->m, p->ldx), "layout B");
    LT_TRY(cublasLtMatrixLayoutCreate(&p->lc, t, (uint64_t)p->n, (uint64_t)p->m, p->ldy), "layout C");

    cublasLtMatmulPreference_t pref;
    LT_TRY(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const uint64_t ws = st->lt_ws_bytes;
    const uint32_t aw = (uint32_t)alignment_of(p->w), ax = (uint32_t)p->align_x, ay = (uint32_t)p->align_y;
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aw, sizeof aw);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ax, sizeof ax);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ay, sizeof ay);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ay, sizeof ay);
    cublasLtMatmulHeuristicResult_t res[FMLP_CU_LT_TUNE];
    int found = 0;
    const int want = p->tuned && st->lt_tune ? FMLP_CU_LT_TUNE : 1;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(st->lt, p->op, p->la, p->lb, p->lc, p->lc, pref, want, res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS) {
        plan_destroy(p);
        return lt_fail(s, "cublasLtMatmulAlgoGetHeuristic");
    }
    /* the heuristic's results, best first; only those it marks usable */
    p->n_cands = 0;
    for (int i = 0; i < found; i++)
        if (res[i].state == CUBLAS_STATUS_SUCCESS) {
            p->cands[p->n_cands++] = res[i].algo;
            if (res[i].workspaceSize > p->tune_ws) p->tune_ws = res[i].workspaceSize;
        }
    if (p->n_cands < 1) {
        plan_destroy(p);
        return fmlp_fail(FMLP_ERR_UNSUPPORTED,
                         "cuBLASLt has no algorithm for a %s GEMM m=%lld n=%lld k=%lld with row strides %lld/%lld and "
                         "%d-byte aligned data; use contiguous, 16-byte aligned tensors",
                         fmlp_dtype_name(p->dtype), (long long)p->m, (long long)p->n, (long long)p->k,
                         (long long)p->ldx, (long long)p->ldy, (int)(ax < ay ? ax : ay));
    }
    p->algo = p->cands[0];
    const fmlp_cu_lt_pick_memo *known = p->n_cands > 1 ? memo_find(st, p) : NULL;
    if (known) {
        p->algo = known->algo;
        p->n_cands = 1;
    }
    return FMLP_OK;
}

int fmlp_cu_lt_pick(const float *us, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (us[i] >= 0.0f && (us[0] < 0.0f || us[i] < us[0] * LT_TUNE_MARGIN) && (best == 0 || us[i] < us[best]))
            best = i;
    return best;
}

/* y = x · wᵀ (+ bias) with `algo` and workspace `ws` of `ws_bytes` on stream s. */
static cublasStatus_t lt_run(const fmlp_cu_state *st, const fmlp_cu_lt_plan *p, const cublasLtMatmulAlgo_t *algo,
                             const void *x, const void *w, void *y, void *ws, size_t ws_bytes, cudaStream_t s)
{
    const float alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(st->lt, p->op, &alpha, w, p->la, x, p->lb, &beta, y, p->lc, y, p->lc, algo, ws, ws_bytes, s);
}

/* µs per run of candidate i on stream s (events e0, e1), or -1 where it fails. */
static float lt_time_one(fmlp_cu_state *st, const fmlp_cu_lt_plan *p, int i, const void *x, const void *w, void *y,
                         void *ws, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1)
{
    if (cudaEventRecord(e0, s) != cudaSuccess) return -1.0f;
    for (int r = 0; r < LT_TUNE_RUNS; r++)
        if (lt_run(st, p, &p->cands[i], x, w, y, ws, p->tune_ws, s) != CUBLAS_STATUS_SUCCESS) return -1.0f;
    float ms = 0.0f;
    if (cudaEventRecord(e1, s) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess ||
        cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
        return -1.0f;
    return ms * 1e3f / LT_TUNE_RUNS;
}

/* Times the plan's candidates on the real operands and keeps the pick.
 * Not while a profiler records (its trace would show the timing runs) nor
 * inside a capture other than fmlp's own (whose mode may forbid waiting);
 * a later call times them. The runs go to a stream of their own with a
 * workspace of their own (another thread's GEMM may be using the shared
 * one). Inside fmlp's own capture, which begins on an idle stream, they
 * start at once; otherwise after the caller's work so far, so they read x
 * and write y in order. Either way they are done before the GEMM itself is
 * launched, and it writes y again. */
static void lt_tune(fmlp_cu_state *st, fmlp_cu_lt_plan *p, cudaStream_t caller, const void *x, const void *w, void *y)
{
    if (fmlp_cu_prof_active() || fmlp_cu_foreign_capture(st, caller) != 0) return;
    const bool own = fmlp_cu_own_capture(st);
    cudaEvent_t e0 = NULL, e1 = NULL;
    void *ws = NULL;
    if (!st->lt_tune_stream && cudaStreamCreateWithFlags(&st->lt_tune_stream, cudaStreamNonBlocking) != cudaSuccess)
        st->lt_tune_stream = NULL;
    cudaStream_t ts = st->lt_tune_stream;
    bool ok = ts && cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess;
    if (ok && !own) ok = cudaEventRecord(e0, caller) == cudaSuccess && cudaStreamWaitEvent(ts, e0, 0) == cudaSuccess;
    if (ok && p->tune_ws) ok = cudaMallocAsync(&ws, p->tune_ws, ts) == cudaSuccess;
    float us[FMLP_CU_LT_TUNE];
    for (int i = 0; i < p->n_cands; i++) us[i] = 1e30f;
    /* the first candidate's first run is not timed: it may load its module */
    ok = ok && lt_time_one(st, p, 0, x, w, y, ws, ts, e0, e1) >= 0.0f;
    bool slow = false;
    for (int r = 0; ok && !slow && r < LT_TUNE_ROUNDS; r++)
        for (int i = 0; ok && !slow && i < p->n_cands; i++) {
            if (us[i] < 0.0f) continue;
            const float t = lt_time_one(st, p, i, x, w, y, ws, ts, e0, e1);
            us[i] = t < 0.0f ? -1.0f : t < us[i] ? t : us[i];
            ok = us[0] >= 0.0f;
            slow = us[0] > LT_TUNE_MAX_US;
        }
    if (ws) cudaFreeAsync(ws, ts);
    if (ts) cudaStreamSynchronize(ts);
    (void)cudaGetLastError();
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    p->algo = p->cands[ok && !slow ? fmlp_cu_lt_pick(us, p->n_cands) : 0];
    p->n_cands = 1;
    if (ok) memo_keep(st, p);
}

void fmlp_cu_lt_forget(fmlp_cu_state *st, const void *w)
{
    pthread_mutex_lock(&st->lock);
    int kept = 0;
    for (int i = 0; i < st->n_lt; i++) {
        if (st->lt_plans[i].w == w)
            plan_destroy(&st->lt_plans[i]);
        else
            st->lt_plans[kept++] = st->lt_plans[i];
    }
    st->n_lt = kept;
    pthread_mutex_unlock(&st->lock);
}

fmlp_status fmlp_cu_lt_gemm(fmlp_cu_state *st, cudaStream_t s, fmlp_dtype dt, int64_t m, int64_t n, int64_t k,
                            const void *x, int64_t ldx, const void *w, const void *bias, void *y, int64_t ldy,
                            bool tuned)
{
    const int ax = alignment_of(x), ay = alignment_of(y);
    pthread_mutex_lock(&st->lock);
    fmlp_cu_lt_plan *p = NULL;
    for (int i = 0; i < st->n_lt; i++) {
        fmlp_cu_lt_plan *c = &st->lt_plans[i];
        if (c->dtype == dt && c->m == m && c->n == n && c->k == k && c->ldx == ldx && c->ldy == ldy && c->w == w &&
            c->bias == bias && c->align_x == ax && c->align_y == ay && c->tuned == tuned) {
            p = c;
            break;
        }
    }
    if (!p) {
        if (st->n_lt == FMLP_CU_LT_CACHE) {
            for (int i = 0; i < st->n_lt; i++) plan_destroy(&st->lt_plans[i]);
            st->n_lt = 0;
        }
        p = &st->lt_plans[st->n_lt];
        memset(p, 0, sizeof *p);
        p->dtype = dt;
        p->m = m;
        p->n = n;
        p->k = k;
        p->ldx = ldx;
        p->ldy = ldy;
        p->w = w;
        p->bias = bias;
        p->align_x = ax;
        p->align_y = ay;
        p->tuned = tuned;
        fmlp_status fs = plan_build(st, p);
        if (fs != FMLP_OK) {
            pthread_mutex_unlock(&st->lock);
            return fs;
        }
        st->n_lt++;
    }
    if (p->n_cands > 1) lt_tune(st, p, s, x, w, y);
    const cublasStatus_t cs = lt_run(st, p, &p->algo, x, w, y, st->lt_ws, st->lt_ws_bytes, s);
    pthread_mutex_unlock(&st->lock);
    if (cs != CUBLAS_STATUS_SUCCESS) return lt_fail(cs, "cublasLtMatmul");
    return FMLP_OK;
}

const fmlp_cu_lt_plan *fmlp_cu_lt_find(fmlp_cu_state *st, int64_t m, int64_t n, int64_t k, bool tuned)
{
    const fmlp_cu_lt_plan *found = NULL;
    pthread_mutex_lock(&st->lock);
    for (int i = 0; i < st->n_lt && !found; i++) {
        const fmlp_cu_lt_plan *c = &st->lt_plans[i];
        if (c->m == m && c->n == n && c->k == k && c->tuned == tuned) found = c;
    }
    pthread_mutex_unlock(&st->lock);
    return found;
}

const char *fmlp_cu_lt_name(fmlp_dtype dt, bool bias, bool timed)
{
    static const char *const names[3][2][2] = {
        {{"cublasLt_matmul_bf16", "cublasLt_matmul_bf16_timed"},
         {"cublasLt_matmul_bf16_bias", "cublasLt_matmul_bf16_bias_timed"}},
        {{"cublasLt_matmul_f16", "cublasLt_matmul_f16_timed"},
         {"cublasLt_matmul_f16_bias", "cublasLt_matmul_f16_bias_timed"}},
        {{"cublasLt_matmul_f32", "cublasLt_matmul_f32_timed"},
         {"cublasLt_matmul_f32_bias", "cublasLt_matmul_f32_bias_timed"}},
    };
    return names[dt == FMLP_BF16 ? 0 : dt == FMLP_F16 ? 1 : 2][bias][timed];
}
