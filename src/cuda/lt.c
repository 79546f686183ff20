/* Why: eager and compiled modes run their GEMMs exactly as PyTorch eager
 * does for nn.Linear (aten::addmm through cuBLASLt, bias in the epilogue,
 * FP32 accumulation, TF32 off), so the comparison with PyTorch is about
 * fusion, not GEMM quality. Descriptors and the heuristic's choice are
 * built once per problem and reused, so a steady-state GEMM costs one
 * cublasLtMatmul call. */
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "cuda/cuda_internal.h"

#define LT_WORKSPACE_BYTES ((size_t)32 << 20)

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
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(st->lt, p->op, p->la, p->lb, p->lc, p->lc, pref, 1, &res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS) {
        plan_destroy(p);
        return lt_fail(s, "cublasLtMatmulAlgoGetHeuristic");
    }
    if (found < 1) {
        plan_destroy(p);
        return fmlp_fail(FMLP_ERR_UNSUPPORTED,
                         "cuBLASLt has no algorithm for a %s GEMM m=%lld n=%lld k=%lld with row strides %lld/%lld and "
                         "%d-byte aligned data; use contiguous, 16-byte aligned tensors",
                         fmlp_dtype_name(p->dtype), (long long)p->m, (long long)p->n, (long long)p->k,
                         (long long)p->ldx, (long long)p->ldy, (int)(ax < ay ? ax : ay));
    }
    p->algo = res.algo;
    return FMLP_OK;
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
                            const void *x, int64_t ldx, const void *w, const void *bias, void *y, int64_t ldy)
{
    const int ax = alignment_of(x), ay = alignment_of(y);
    pthread_mutex_lock(&st->lock);
    fmlp_cu_lt_plan *p = NULL;
    for (int i = 0; i < st->n_lt; i++) {
        fmlp_cu_lt_plan *c = &st->lt_plans[i];
        if (c->dtype == dt && c->m == m && c->n == n && c->k == k && c->ldx == ldx && c->ldy == ldy && c->w == w &&
            c->bias == bias && c->align_x == ax && c->align_y == ay) {
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
        fmlp_status fs = plan_build(st, p);
        if (fs != FMLP_OK) {
            pthread_mutex_unlock(&st->lock);
            return fs;
        }
        st->n_lt++;
    }
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t cs = cublasLtMatmul(st->lt, p->op, &alpha, w, p->la, x, p->lb, &beta, y, p->lc, y, p->lc, &p->algo,
                                       st->lt_ws, st->lt_ws_bytes, s);
    pthread_mutex_unlock(&st->lock);
    if (cs != CUBLAS_STATUS_SUCCESS) return lt_fail(cs, "cublasLtMatmul");
    return FMLP_OK;
}

const char *fmlp_cu_lt_name(fmlp_dtype dt, bool bias)
{
    switch (dt) {
    case FMLP_BF16: return bias ? "cublasLt_matmul_bf16_bias" : "cublasLt_matmul_bf16";
    case FMLP_F16: return bias ? "cublasLt_matmul_f16_bias" : "cublasLt_matmul_f16";
    default: return bias ? "cublasLt_matmul_f32_bias" : "cublasLt_matmul_f32";
    }
}
