/* Why: weights are uploaded once at load time in the layout fmlp's GEMMs
 * read: plain (n, k) row-major for a Linear, gate and up interleaved in
 * blocks of 8 rows for the GLU GEMM. Dropping a packing also drops what
 * points at it (graphs, cached cuBLASLt plans). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "cuda/cuda_internal.h"

static fmlp_status upload(fmlp_cu_state *st, const void *host, size_t bytes, void **dev)
{
    cudaError_t e = cudaMalloc(dev, bytes);
    if (e != cudaSuccess) {
        *dev = NULL;
        return fmlp_cu_fail(e, "uploading weights");
    }
    e = cudaMemcpyAsync(*dev, host, bytes, cudaMemcpyHostToDevice, st->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st->stream);
    if (e != cudaSuccess) {
        cudaFree(*dev);
        *dev = NULL;
        return fmlp_cu_fail(e, "uploading weights");
    }
    return FMLP_OK;
}

/* w (n, k) of 2-byte elements as (k, n) row-major: what the hidden-slice
 * MLP (mlp_slice.cu, bf16/f16) reads of a gated MLP's down projection, a
 * block's hidden columns contiguous. A second copy of the down weights,
 * kept only where that kernel can run (n <= 1024, k <= 32 per SM, cc 9.x)
 * and not turned off by FMLP_CUDA_SLICE=0. */
static fmlp_status upload_transposed(fmlp_cu_state *st, const void *w, int64_t n, int64_t k, void **dev)
{
    uint16_t *t = fmlp_calloc((size_t)(n * k), sizeof *t);
    if (!t) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of host memory transposing a down projection's weights");
    const uint16_t *src = w;
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < k; c++) t[c * n + r] = src[r * k + c];
    fmlp_status s = upload(st, t, (size_t)(n * k) * sizeof *t, dev);
    free(t);
    return s;
}

void fmlp_cu_unpack(fmlp_ctx *ctx, void *packed)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    fmlp_cu_packed *p = packed;
    if (!p) return;
    cudaSetDevice(st->device);
    cudaStreamSynchronize(st->stream);
    fmlp_cu_graph_clear(st);
    fmlp_cu_lt_forget(st, p->w);
    cudaFree(p->w);
    if (p->b) cudaFree(p->b);
    if (p->wt) cudaFree(p->wt);
    free(p);
}

fmlp_status fmlp_cu_pack(fmlp_ctx *ctx, fmlp_dtype dtype, const void *w, const void *b, int64_t n, int64_t k,
                         bool gated_down, void **packed)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    *packed = NULL;
    fmlp_cu_packed *p = fmlp_calloc(1, sizeof *p);
    if (!p) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of host memory packing weights");
    p->dtype = dtype;
    p->n = n;
    p->k = k;
    p->nw = n;
    const size_t es = fmlp_dtype_size(dtype);
    cudaSetDevice(st->device);
    fmlp_status s = upload(st, w, (size_t)(n * k) * es, &p->w);
    if (s == FMLP_OK && b) s = upload(st, b, (size_t)n * es, &p->b);
    if (s == FMLP_OK && gated_down && st->slice && fmlp_cu_slice_down_fits(dtype, st->cc_major, st->sm_count, n, k))
        s = upload_transposed(st, w, n, k, &p->wt);
    if (s != FMLP_OK) {
        fmlp_cu_unpack(ctx, p);
        return s;
    }
    *packed = p;
    return FMLP_OK;
}

fmlp_status fmlp_cu_pack_glu(fmlp_ctx *ctx, fmlp_dtype dtype, const void *wg, const void *bg, const void *wu,
                               const void *bu, int64_t n, int64_t k, void **packed)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    *packed = NULL;
    const size_t es = fmlp_dtype_size(dtype);
    const int64_t nw = 2 * ((n + 7) / 8 * 8);
    char *hw = fmlp_calloc((size_t)(nw * k), es);
    char *hb = (bg || bu) ? fmlp_calloc((size_t)nw, es) : NULL;
    fmlp_cu_packed *p = fmlp_calloc(1, sizeof *p);
    if (!hw || (!hb && (bg || bu)) || !p) {
        free(hw);
        free(hb);
        free(p);
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of host memory packing gate/up weights");
    }
    for (int64_t r = 0; r < n; r++) {
        const int64_t pg = (r / 8) * 16 + r % 8, pu = pg + 8;
        memcpy(hw + (size_t)(pg * k) * es, (const char *)wg + (size_t)(r * k) * es, (size_t)k * es);
        memcpy(hw + (size_t)(pu * k) * es, (const char *)wu + (size_t)(r * k) * es, (size_t)k * es);
        if (hb && bg) memcpy(hb + (size_t)pg * es, (const char *)bg + (size_t)r * es, es);
        if (hb && bu) memcpy(hb + (size_t)pu * es, (const char *)bu + (size_t)r * es, es);
    }
    p->dtype = dtype;
    p->glu = true;
    p->n = n;
    p->k = k;
    p->nw = nw;
    cudaSetDevice(st->device);
    fmlp_status s = upload(st, hw, (size_t)(nw * k) * es, &p->w);
    if (s == FMLP_OK && hb) s = upload(st, hb, (size_t)nw * es, &p->b);
    free(hw);
    free(hb);
    if (s != FMLP_OK) {
        fmlp_cu_unpack(ctx, p);
        return s;
    }
    *packed = p;
    return FMLP_OK;
}
