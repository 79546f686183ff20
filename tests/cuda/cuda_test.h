/* Why: the GPU tests share three chores: getting a CUDA context or skipping
 * cleanly when the machine has none, moving test data to and from device
 * tensors, and capturing/replaying a forward as a CUDA graph through the
 * backend table exactly as the executor does. */
#ifndef FMLP_TESTS_CUDA_TEST_H
#define FMLP_TESTS_CUDA_TEST_H

#include <string.h>

#include "core/internal.h"
#include "test_util.h"

/* A CUDA context, or NULL after printing "skipped: no CUDA device" (the
 * status must then be FMLP_ERR_NO_DEVICE or, without the backend, UNSUPPORTED). */
static inline fmlp_ctx *ct_ctx(void)
{
    fmlp_ctx_options o = fmlp_ctx_options_default();
    o.device = FMLP_DEVICE_CUDA;
    fmlp_ctx *ctx = NULL;
    fmlp_status s = fmlp_ctx_create(&o, &ctx);
    if (s == FMLP_OK) return ctx;
    if (s == FMLP_ERR_NO_DEVICE || s == FMLP_ERR_UNSUPPORTED)
        tu_skip("no CUDA device (%s: %s)", fmlp_status_name(s), fmlp_last_error());
    else
        tu_check(false, "CUDA context: unexpected %s: %s", fmlp_status_name(s), fmlp_last_error());
    return NULL;
}

/* A device tensor holding host data `h` (rows, cols, row stride ld). */
static inline fmlp_status ct_upload(fmlp_ctx *ctx, fmlp_dtype dt, const void *h, int64_t rows, int64_t cols,
                                    int64_t ld, fmlp_tensor *out)
{
    fmlp_tensor t;
    fmlp_status s = fmlp_tensor_alloc(ctx, dt, rows, ld, &t);
    if (s != FMLP_OK) return s;
    fmlp_tensor src = fmlp_tensor_view((void *)h, dt, rows, ld, ld);
    s = ctx->be->copy(ctx, t.data, FMLP_DEVICE_CUDA, src.data, FMLP_DEVICE_CPU, (size_t)(rows * ld) * fmlp_dtype_size(dt));
    *out = t;
    out->cols = cols;
    return s;
}

static inline fmlp_status ct_download(fmlp_ctx *ctx, const fmlp_tensor *t, void *h)
{
    return ctx->be->copy(ctx, h, FMLP_DEVICE_CPU, t->data, FMLP_DEVICE_CUDA,
                         (size_t)(t->rows * t->ld) * fmlp_dtype_size(t->dtype));
}

/* One forward replayed from a CUDA graph (captured on first use). */
static inline fmlp_status ct_forward_graph(fmlp_mlp *m, fmlp_mode mode, const fmlp_tensor *x, fmlp_tensor *y)
{
    fmlp_ctx *ctx = m->ctx;
    struct {
        const void *mlp, *x, *y;
        int64_t mode, rows, ldx, ldy;
    } key = {m, x->data, y->data, mode, x->rows, x->ld, y->ld};
    bool hit = false;
    fmlp_status s = ctx->be->graph_launch(ctx, &key, sizeof key, 0, &hit);
    if (s != FMLP_OK || hit) return s;
    /* the workspace must exist before capture: one plain forward */
    s = fmlp_mlp_forward(m, mode, x, y);
    if (s != FMLP_OK) return s;
    s = ctx->be->graph_begin(ctx);
    if (s != FMLP_OK) return s;
    fmlp_status run = fmlp_mlp_forward(m, mode, x, y);
    s = ctx->be->graph_end(ctx, run == FMLP_OK ? &key : NULL, sizeof key, 0);
    return run != FMLP_OK ? run : s;
}

#endif
