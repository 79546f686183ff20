/* Why: each planned kernel goes to cuBLASLt (plain GEMMs, as aten::addmm
 * runs them) or to fmlp's own kernels (epilogue GEMMs, pointwise), named
 * before it runs with the name CUPTI will report, and launched on the
 * calling thread's stream, tagged with its op's External id. */
#include <stdio.h>

#include "core/error.h"
#include "cuda/cuda_internal.h"
#include "cuda/kernels.h"

static int pw_op(fmlp_kernel_kind kind)
{
    return kind == FMLP_KERNEL_ACT ? FMLP_CU_PW_ACT : kind == FMLP_KERNEL_MUL ? FMLP_CU_PW_MUL : FMLP_CU_PW_GLU;
}

/* Plain GEMMs go to cuBLASLt, as aten::addmm does, except at a few rows
 * with weights of at most half the L2: there the forward is latency-bound,
 * cuBLASLt runs a split-K GEMM plus a reduction kernel, and fmlp's gemv does
 * the split in one launch (K split over a cluster) that starts while the
 * kernel before it finishes. Measured on the H200
 * (bench/results/h200_small_rows_2026-12-01.md), the tutorial's fused
 * forward at 1 row: 8.1 us in a graph against 10.4 with cuBLASLt's down
 * GEMM, 8.9 back to back without a graph against 19.3. The Llama-3-8B down
 * projection (117 MB) streams faster through cuBLASLt (28 us against 45). */
#define CUDA_OWN_SMALL_GEMM_ROWS 32

/* PDL for gemvs of any weight size up to this many rows. The Llama-3-8B
 * fused forward (352 MB) in a graph: 92 us with PDL against 100 without at
 * 1 row, but 102 against 98 at 16 rows, where the PDL kernel's x loads,
 * ordinary loads kept after the wait, cost more than the overlap gains
 * (bench/results/h200_one_kernel_2026-12-01.md). */
#define CUDA_PDL_ANY_WEIGHTS_ROWS 8

/* Weights of at most half the L2: the GEMM is latency-bound at few rows. */
static bool small_weights(const fmlp_cu_state *st, fmlp_dtype dtype, int64_t nw, int64_t k)
{
    return 2 * nw * k * (int64_t)fmlp_dtype_size(dtype) <= st->l2_bytes;
}

/* The kernel's pick for the shape; FMLP_CUDA_ROW_GEMV=0 keeps one-row
 * GEMMs on the mma gemv (for comparisons). */
static fmlp_cu_gemm_variant pick_gemm(const fmlp_cu_state *st, const fmlp_cu_gemm_args *a)
{
    const fmlp_cu_gemm_variant v = fmlp_cu_gemm_pick(a, st->sm_count, st->cc_major);
    return v == FMLP_CU_GEMM_GEMV_ROW && !st->row_gemv ? FMLP_CU_GEMM_GEMV : v;
}

static bool uses_lt(const fmlp_cu_state *st, fmlp_dtype dtype, const fmlp_kernel *k)
{
    if (k->kind != FMLP_KERNEL_GEMM || k->act != FMLP_ACT_NONE || st->force_own) return false;
    const bool small = !st->force_lt && dtype != FMLP_F32 && st->cc_major >= 9 && k->m <= CUDA_OWN_SMALL_GEMM_ROWS &&
                       k->k % 8 == 0 && small_weights(st, dtype, k->n, k->k);
    return !small;
}

void fmlp_cu_name_kernel(fmlp_ctx *ctx, fmlp_dtype dtype, fmlp_kernel *k)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    const char *name = "fmlp_cuda_unknown";
    switch (k->kind) {
    case FMLP_KERNEL_GEMM:
    case FMLP_KERNEL_GEMM_GLU: {
        if (uses_lt(st, dtype, k)) {
            name = fmlp_cu_lt_name(dtype, true, k->tuned && st->lt_tune);
            break;
        }
        const bool glu = k->kind == FMLP_KERNEL_GEMM_GLU;
        fmlp_cu_gemm_args a = {dtype, k->act, glu, k->m, k->n, k->k, glu ? 2 * ((k->n + 7) / 8 * 8) : k->n,
                               NULL, k->k, NULL, NULL, NULL, k->n, st->sm_count, st->cc_major, 0, false};
        name = fmlp_cu_gemm_name(&a, pick_gemm(st, &a));
        break;
    }
    case FMLP_KERNEL_MLP_GLU: {
        const fmlp_cu_mlp_args a = fmlp_cu_mlp_shape(st, dtype, k->act, k->m, k->k, k->hidden, k->n);
        name = fmlp_cu_mlp_one_name(&a);
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

/* The whole gated MLP: h and the kernel's scratch in the workspace `ws`.
 * An x whose rows are not 16-byte aligned takes the fused plan's two GEMMs
 * instead, h in the same place. */
static cudaError_t run_one_kernel(const fmlp_cu_state *st, cudaStream_t stream, fmlp_dtype dtype, const fmlp_kernel *k,
                                  const fmlp_cu_packed *gu, const fmlp_cu_packed *dn, const fmlp_tensor *x,
                                  const fmlp_tensor *ws, fmlp_tensor *y)
{
    const size_t h_bytes = (size_t)(k->m * k->hidden) * fmlp_dtype_size(dtype);
    const uintptr_t scratch = ((uintptr_t)ws->data + h_bytes + 255) & ~(uintptr_t)255;
    fmlp_cu_mlp_args a = fmlp_cu_mlp_shape(st, dtype, k->act, k->m, k->k, k->hidden, k->n);
    a.x = x->data;
    a.ldx = x->ld;
    a.wgu = gu->w;
    a.bgu = gu->b;
    a.nwgu = gu->nw;
    a.wd = dn->w;
    a.wdt = dn->wt;
    a.bd = dn->b;
    a.y = y->data;
    a.ldy = y->ld;
    a.h = ws->data;
    a.scratch = (void *)scratch;
    if (fmlp_cu_mlp_one_fits(&a)) return fmlp_cu_mlp_one(stream, &a);
    fmlp_cu_gemm_args g = {dtype, k->act, true, k->m, k->hidden, k->k, gu->nw, x->data, x->ld, gu->w, gu->b,
                           ws->data, k->hidden, st->sm_count, st->cc_major, 0, false};
    cudaError_t e = fmlp_cu_gemm(stream, &g, pick_gemm(st, &g));
    if (e != cudaSuccess) return e;
    fmlp_cu_gemm_args d = {dtype, FMLP_ACT_NONE, false, k->m, k->n, k->hidden, k->n, ws->data, k->hidden, dn->w, dn->b,
                           y->data, y->ld, st->sm_count, st->cc_major, 0, false};
    return fmlp_cu_gemm(stream, &d, pick_gemm(st, &d));
}

static bool packed_for(const fmlp_cu_packed *p, fmlp_dtype dtype, bool glu, int64_t n, int64_t k)
{
    return p && p->dtype == dtype && p->glu == glu && p->n == n && p->k == k;
}

bool fmlp_cu_pdl_now(const fmlp_cu_state *st) { return st->pdl && !fmlp_cu_prof_active(); }

fmlp_status fmlp_cu_run(fmlp_ctx *ctx, fmlp_dtype dtype, const fmlp_kernel *k, const void *packed,
                          const fmlp_tensor *in0, const fmlp_tensor *in1, fmlp_tensor *out, int64_t external_id)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    fmlp_status s = fmlp_cu_check_device_ptr(st, "input", in0->data, dtype, true);
    if (s == FMLP_OK && in1) s = fmlp_cu_check_device_ptr(st, "second input", in1->data, dtype, true);
    if (s == FMLP_OK) s = fmlp_cu_check_device_ptr(st, "output", out->data, dtype, true);
    if (s != FMLP_OK) return s;
    const bool gemm = k->kind == FMLP_KERNEL_GEMM || k->kind == FMLP_KERNEL_GEMM_GLU;
    const bool one = k->kind == FMLP_KERNEL_MLP_GLU;
    const fmlp_cu_packed *p = one ? NULL : packed;
    const fmlp_cu_packed *gu = one ? ((const fmlp_cu_packed *const *)packed)[0] : NULL;
    const fmlp_cu_packed *dn = one ? ((const fmlp_cu_packed *const *)packed)[1] : NULL;
    if (one && (!in1 || !packed_for(gu, dtype, true, k->hidden, k->k) || !packed_for(dn, dtype, false, k->n, k->hidden)))
        return fmlp_fail(FMLP_ERR_INTERNAL, "CUDA one-kernel MLP given weights packed for another shape or dtype");
    if (gemm && (!p || p->dtype != dtype || p->k != k->k || p->n != k->n || p->glu != (k->kind == FMLP_KERNEL_GEMM_GLU)))
        return fmlp_fail(FMLP_ERR_INTERNAL, "CUDA %s kernel given weights packed for another shape or dtype",
                         k->kind == FMLP_KERNEL_GEMM_GLU ? "GEMM_GLU" : "GEMM");
    if (k->m <= 0) return FMLP_OK;
    cudaError_t e = fmlp_cu_use_device(st);
    if (e != cudaSuccess) return fmlp_cu_fail(e, "cudaSetDevice");
    cudaStream_t stream = fmlp_cu_stream(st);
    const bool tagged = external_id != 0 && fmlp_cu_prof_active();
    if (tagged) fmlp_cu_prof_push(external_id);
    if (one) {
        e = run_one_kernel(st, stream, dtype, k, gu, dn, in0, in1, out);
    } else if (gemm && uses_lt(st, dtype, k)) {
        s = fmlp_cu_lt_gemm(st, stream, dtype, k->m, k->n, k->k, in0->data, in0->ld, p->w, p->b, out->data, out->ld,
                            k->tuned);
    } else if (gemm) {
        fmlp_cu_gemm_args a = {dtype, k->act, p->glu, k->m, k->n, k->k, p->nw, in0->data, in0->ld, p->w, p->b,
                               out->data, out->ld, st->sm_count, st->cc_major, 0, false};
        const fmlp_cu_gemm_variant v = pick_gemm(st, &a);
        /* PDL for the wgmma tiles (their one wait is before their first
         * load), and for the gemv where the weights are small (the kernel
         * before's tail is a large share of the forward) or the rows few;
         * see CUDA_PDL_ANY_WEIGHTS_ROWS. */
        a.pdl = fmlp_cu_pdl_now(st) && (v == FMLP_CU_GEMM_WGMMA || st->pdl_all || k->m <= CUDA_PDL_ANY_WEIGHTS_ROWS ||
                                        small_weights(st, dtype, p->nw, k->k));
        e = fmlp_cu_gemm(stream, &a, v);
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
