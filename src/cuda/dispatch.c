/* Why: each planned kernel goes to cuBLASLt (plain GEMMs, as aten::addmm
 * runs them) or to fmlp's own kernels (epilogue GEMMs, fused mode's small
 * batches, the one-kernel MLP, pointwise), named before it runs with the
 * name CUPTI will report, and launched on the calling thread's stream,
 * tagged for the profiler. */
#include <stdio.h>

#include "core/error.h"
#include "cuda/cuda_internal.h"
#include "cuda/kernels.h"

static int pw_op(fmlp_kernel_kind kind)
{
    return kind == FMLP_KERNEL_ACT ? FMLP_CU_PW_ACT : kind == FMLP_KERNEL_MUL ? FMLP_CU_PW_MUL : FMLP_CU_PW_GLU;
}

/* One GEMM's launch arguments; x, w, out NULL when only naming it. */
static fmlp_cu_gemm_args gemm_args(const fmlp_cu_state *st, fmlp_dtype dtype, fmlp_act act, bool glu, int64_t m,
                                   int64_t n, int64_t k, const fmlp_cu_packed *p, const fmlp_tensor *x,
                                   const fmlp_tensor *out)
{
    fmlp_cu_gemm_args a = {dtype, act, glu, m, n, k, glu ? 2 * ((n + 7) / 8 * 8) : n, NULL, k, NULL, NULL, NULL, n,
                           st->sm_count, st->scratch, fmlp_cu_pdl_now(st), 0, 0};
    if (p) {
        a.w = p->w;
        a.b = p->b;
    }
    if (x) {
        a.x = x->data;
        a.ldx = x->ld;
    }
    if (out) {
        a.out = out->data;
        a.ldo = out->ld;
    }
    return a;
}

/* Plain GEMMs go to cuBLASLt, except in fused mode where fmlp's streaming
 * kernel is faster at few rows and chains to the previous kernel. */
static bool uses_lt(const fmlp_cu_state *st, const fmlp_kernel *k, const fmlp_cu_gemm_args *a)
{
    if (k->kind != FMLP_KERNEL_GEMM || k->act != FMLP_ACT_NONE || st->force_own) return false;
    return !(k->fused && fmlp_cu_gemm_pick(a, st->sm_count, st->cc_major) == FMLP_CU_GEMM_STREAM);
}

void fmlp_cu_name_kernel(fmlp_ctx *ctx, fmlp_dtype dtype, fmlp_kernel *k)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    const char *name = "fmlp_cuda_unknown";
    switch (k->kind) {
    case FMLP_KERNEL_GEMM:
    case FMLP_KERNEL_GEMM_GLU: {
        const fmlp_cu_gemm_args a =
            gemm_args(st, dtype, k->act, k->kind == FMLP_KERNEL_GEMM_GLU, k->m, k->n, k->k, NULL, NULL, NULL);
        name = uses_lt(st, k, &a) ? fmlp_cu_lt_name(dtype, true)
                                  : fmlp_cu_gemm_name(&a, fmlp_cu_gemm_pick(&a, st->sm_count, st->cc_major));
        break;
    }
    case FMLP_KERNEL_MLP: {
        const fmlp_cu_gemm_args a = gemm_args(st, dtype, k->act, true, k->m, 0, k->k, NULL, NULL, NULL);
        name = fmlp_cu_mlp_name(&a);
        break;
    }
    default: {
        const int64_t v = dtype == FMLP_F32 ? 4 : 8;
        fmlp_cu_pointwise(NULL, false, dtype, pw_op(k->kind), k->act, k->n % v == 0, k->m, k->n, NULL, 0, NULL, 0, NULL,
                          0, &name);
        break;
    }
    }
    snprintf(k->name, sizeof k->name, "%s", name);
}

static bool packed_for(const fmlp_cu_packed *p, fmlp_dtype dtype, bool glu, int64_t n, int64_t k)
{
    return p && p->dtype == dtype && p->glu == glu && p->n == n && p->k == k;
}

/* The one-kernel MLP; x or h rows that are not 16-byte aligned (odd views)
 * run as the GLU GEMM and the down GEMM instead. */
static cudaError_t run_mlp(fmlp_cu_state *st, cudaStream_t stream, fmlp_dtype dtype, const fmlp_kernel *k,
                           const fmlp_cu_packed *pg, const fmlp_cu_packed *pd, const fmlp_tensor *x, const fmlp_tensor *h,
                           fmlp_tensor *y)
{
    const fmlp_cu_gemm_args glu = gemm_args(st, dtype, k->act, true, k->m, pg->n, k->k, pg, x, h);
    const fmlp_cu_gemm_args down = gemm_args(st, dtype, FMLP_ACT_NONE, false, k->m, k->n, pg->n, pd, h, y);
    if (st->coop && fmlp_cu_mlp_fits(&glu, &down)) return fmlp_cu_mlp(stream, &glu, &down);
    cudaError_t e = fmlp_cu_gemm(stream, &glu, fmlp_cu_gemm_pick(&glu, st->sm_count, st->cc_major));
    if (e == cudaSuccess) e = fmlp_cu_gemm(stream, &down, fmlp_cu_gemm_pick(&down, st->sm_count, st->cc_major));
    return e;
}

fmlp_status fmlp_cu_run(fmlp_ctx *ctx, fmlp_dtype dtype, const fmlp_kernel *k, const void *packed,
                        const fmlp_tensor *in0, const fmlp_tensor *in1, fmlp_tensor *out, int64_t correlation)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    fmlp_status s = fmlp_cu_check_device_ptr(st, "input", in0->data, dtype, true);
    if (s == FMLP_OK && in1) s = fmlp_cu_check_device_ptr(st, "second input", in1->data, dtype, true);
    if (s == FMLP_OK) s = fmlp_cu_check_device_ptr(st, "output", out->data, dtype, true);
    if (s != FMLP_OK) return s;
    const bool gemm = k->kind == FMLP_KERNEL_GEMM || k->kind == FMLP_KERNEL_GEMM_GLU;
    const fmlp_cu_packed *p = gemm ? packed : NULL, *pg = NULL, *pd = NULL;
    if (gemm && !packed_for(p, dtype, k->kind == FMLP_KERNEL_GEMM_GLU, k->n, k->k))
        return fmlp_fail(FMLP_ERR_INTERNAL, "CUDA %s kernel given weights packed for another shape or dtype",
                         k->kind == FMLP_KERNEL_GEMM_GLU ? "GEMM_GLU" : "GEMM");
    if (k->kind == FMLP_KERNEL_MLP) {
        const void *const *pair = packed;
        pg = pair ? pair[0] : NULL;
        pd = pair ? pair[1] : NULL;
        if (!in1 || !pg || !packed_for(pg, dtype, true, pg->n, k->k) || !packed_for(pd, dtype, false, k->n, pg->n) ||
            in1->cols < pg->n)
            return fmlp_fail(FMLP_ERR_INTERNAL, "CUDA MLP kernel given packings or a workspace for another shape");
    }
    if (k->m <= 0) return FMLP_OK;
    cudaStream_t stream = fmlp_cu_stream(st);
    const bool tagged = correlation != 0 && fmlp_cu_prof_active();
    if (tagged) fmlp_cu_prof_push(correlation);
    cudaError_t e = cudaSuccess;
    if (gemm) {
        const fmlp_cu_gemm_args a =
            gemm_args(st, dtype, k->act, p->glu, k->m, k->n, k->k, p, in0, out);
        if (uses_lt(st, k, &a))
            s = fmlp_cu_lt_gemm(st, stream, dtype, k->m, k->n, k->k, in0->data, in0->ld, p->w, p->b, out->data, out->ld);
        else
            e = fmlp_cu_gemm(stream, &a, fmlp_cu_gemm_pick(&a, st->sm_count, st->cc_major));
    } else if (k->kind == FMLP_KERNEL_MLP) {
        e = run_mlp(st, stream, dtype, k, pg, pd, in0, in1, out);
    } else {
        const void *b = in1 ? in1->data : NULL;
        const int64_t ldb = in1 ? in1->ld : 0;
        const bool vec = fmlp_cu_pw_can_vec(dtype, k->n, in0->data, in0->ld, b, ldb, out->data, out->ld);
        e = fmlp_cu_pointwise(stream, true, dtype, pw_op(k->kind), k->act, vec, k->m, k->n, in0->data, in0->ld, b, ldb,
                              out->data, out->ld, NULL);
    }
    if (tagged) fmlp_cu_prof_pop();
    if (s != FMLP_OK) return s;
    if (e == cudaSuccess) e = cudaGetLastError();
    return e == cudaSuccess ? FMLP_OK : fmlp_cu_fail(e, k->name[0] ? k->name : "kernel launch");
}
