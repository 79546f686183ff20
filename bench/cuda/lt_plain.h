/* Why: the GEMM benchmarks hold fmlp's GEMMs against cuBLASLt's plain bf16
 * GEMM of the same M x N x K, and each must set it up the same way (f32
 * accumulation, the top heuristic algorithm for the workspace given), or
 * their tables would compare different peers. The heuristic's next
 * algorithms are kept too, to see what its first choice leaves. */
#ifndef FMLP_BENCH_LT_PLAIN_H
#define FMLP_BENCH_LT_PLAIN_H

#include <cublasLt.h>
#include <string.h>

/* out (m, n) = x (m, k) . w (n, k)^T, all row-major and contiguous. */
#define LT_PLAIN_ALGOS 8
typedef struct {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulHeuristicResult_t hr[LT_PLAIN_ALGOS];
    int algos; /* the heuristic's results, best first */
} lt_plain;

/* CUBLAS_STATUS_NOT_SUPPORTED where the heuristic has no algorithm. */
static inline cublasStatus_t lt_plain_make(cublasLtHandle_t h, int64_t m, int64_t n, int64_t k, size_t wss, lt_plain *p)
{
    memset(p, 0, sizeof *p);
    cublasStatus_t s = cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    /* column-major view: out^T (n, m) = w^T (k, n)^T . x^T (k, m) */
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatrixLayoutCreate(&p->la, CUDA_R_16BF, k, n, k);
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_16BF, k, m, k);
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_16BF, n, m, n);
    cublasLtMatmulPreference_t pref = NULL;
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceCreate(&pref);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wss, sizeof wss);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(h, p->op, p->la, p->lb, p->lc, p->lc, pref, LT_PLAIN_ALGOS, p->hr, &p->algos);
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    return s == CUBLAS_STATUS_SUCCESS && !p->algos ? CUBLAS_STATUS_NOT_SUPPORTED : s;
}

/* Runs the heuristic's algorithm i (0: its first choice; i < p->algos). */
static inline cublasStatus_t lt_plain_run_algo(cublasLtHandle_t h, const lt_plain *p, int i, const void *x, const void *w,
                                               void *out, void *ws, size_t wss, cudaStream_t s)
{
    const float alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(h, p->op, &alpha, w, p->la, x, p->lb, &beta, out, p->lc, out, p->lc, &p->hr[i].algo, ws, wss, s);
}

static inline cublasStatus_t lt_plain_run(cublasLtHandle_t h, const lt_plain *p, const void *x, const void *w, void *out,
                                          void *ws, size_t wss, cudaStream_t s)
{
    return lt_plain_run_algo(h, p, 0, x, w, out, ws, wss, s);
}

/* The split-K count algorithm i asks for (1: none). */
static inline int lt_plain_split(const lt_plain *p, int i)
{
    int32_t v = 1;
    size_t got = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&p->hr[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &v, sizeof v, &got);
    return v > 0 ? v : 1;
}

static inline void lt_plain_free(lt_plain *p)
{
    if (p->la) cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
    if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
    if (p->op) cublasLtMatmulDescDestroy(p->op);
    memset(p, 0, sizeof *p);
}

#endif
