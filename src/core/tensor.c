/* Why: tensors are plain views (pointer, dtype, shape, row stride) so that
 * batch × seq inputs, transposed layouts and slices never copy; this file
 * checks them and moves them between host and device. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/internal.h"
#include "profiler/hook.h"

fmlp_tensor fmlp_tensor_view(void *data, fmlp_dtype dtype, int64_t rows, int64_t cols, int64_t ld)
{
    fmlp_tensor t = {data, dtype, FMLP_DEVICE_CPU, rows, cols, ld ? ld : cols};
    return t;
}

fmlp_status fmlp_tensor_alloc(fmlp_ctx *ctx, fmlp_dtype dtype, int64_t rows, int64_t cols, fmlp_tensor *out)
{
    if (!ctx || !out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tensor_alloc: ctx and out must not be NULL");
    if (rows < 0 || cols < 0 || (cols && rows > INT64_MAX / 4 / cols))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tensor_alloc: shape (%lld, %lld) is invalid",
                         (long long)rows, (long long)cols);
    size_t bytes = (size_t)(rows * cols) * fmlp_dtype_size(dtype);
    void *p = NULL;
    if (ctx->be->alloc) {
        fmlp_status s = ctx->be->alloc(ctx, bytes, &p);
        if (s != FMLP_OK) return s;
    } else {
        p = fmlp_host_alloc(bytes);
        if (!p) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory allocating a (%lld, %lld) %s tensor", (long long)rows,
                                 (long long)cols, fmlp_dtype_name(dtype));
    }
    *out = fmlp_tensor_view(p, dtype, rows, cols, cols);
    out->device = ctx->device;
    return FMLP_OK;
}

fmlp_status fmlp_tensor_alloc_host(fmlp_ctx *ctx, fmlp_dtype dtype, int64_t rows, int64_t cols, fmlp_tensor *out)
{
    if (!ctx || !out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tensor_alloc_host: ctx and out must not be NULL");
    if (!ctx->be->host_alloc) {
        fmlp_status s = fmlp_tensor_alloc(ctx, dtype, rows, cols, out);
        if (s == FMLP_OK && out->device != FMLP_DEVICE_CPU) {
            fmlp_tensor_free(ctx, out);
            return fmlp_fail(FMLP_ERR_INTERNAL, "backend %s has device memory but no host_alloc", ctx->be->name);
        }
        return s;
    }
    if (rows < 0 || cols < 0 || (cols && rows > INT64_MAX / 4 / cols))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tensor_alloc_host: shape (%lld, %lld) is invalid",
                         (long long)rows, (long long)cols);
    void *p = NULL;
    fmlp_status s = ctx->be->host_alloc(ctx, (size_t)(rows * cols) * fmlp_dtype_size(dtype), &p);
    if (s != FMLP_OK) return s;
    *out = fmlp_tensor_view(p, dtype, rows, cols, cols);
    return FMLP_OK;
}

void fmlp_tensor_free(fmlp_ctx *ctx, fmlp_tensor *t)
{
    if (!ctx || !t || !t->data) return;
    if (t->device != FMLP_DEVICE_CPU && ctx->be->free)
        ctx->be->free(ctx, t->data);
    else if (ctx->be->host_free)
        ctx->be->host_free(ctx, t->data);
    else
        free(t->data);
    t->data = NULL;
}

/* Moves a validated copy: one strided transfer when the backend has one
 * (one plain transfer when both sides are dense), else row by row. */
static fmlp_status transfer(fmlp_ctx *ctx, fmlp_tensor *dst, const fmlp_tensor *src, bool host)
{
    size_t es = fmlp_dtype_size(src->dtype), row = (size_t)src->cols * es;
    size_t dld = (size_t)dst->ld * es, sld = (size_t)src->ld * es;
    if (!host) {
        if (ctx->be->copy2d && !(dld == row && sld == row))
            return ctx->be->copy2d(ctx, dst->data, dld, dst->device, src->data, sld, src->device, row, (size_t)src->rows);
        if (!ctx->be->copy) return fmlp_fail(FMLP_ERR_UNSUPPORTED, "this backend cannot copy device tensors");
        if (dld == row && sld == row)
            return ctx->be->copy(ctx, dst->data, dst->device, src->data, src->device, row * (size_t)src->rows);
    }
    for (int64_t r = 0; r < src->rows; r++) {
        char *d = (char *)dst->data + (size_t)r * dld;
        const char *s = (const char *)src->data + (size_t)r * sld;
        if (host) {
            memmove(d, s, row);
        } else {
            fmlp_status st = ctx->be->copy(ctx, d, dst->device, s, src->device, row);
            if (st != FMLP_OK) return st;
        }
    }
    return FMLP_OK;
}

fmlp_status fmlp_tensor_copy(fmlp_ctx *ctx, fmlp_tensor *dst, const fmlp_tensor *src)
{
    if (!ctx || !dst || !src || !dst->data || !src->data)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tensor_copy: NULL context or tensor");
    if (dst->rows != src->rows || dst->cols != src->cols || dst->dtype != src->dtype)
        return fmlp_fail(FMLP_ERR_SHAPE, "fmlp_tensor_copy: (%lld, %lld) %s into (%lld, %lld) %s; shapes and dtypes must match",
                         (long long)src->rows, (long long)src->cols, fmlp_dtype_name(src->dtype), (long long)dst->rows,
                         (long long)dst->cols, fmlp_dtype_name(dst->dtype));
    bool host = dst->device == FMLP_DEVICE_CPU && src->device == FMLP_DEVICE_CPU;
    struct fmlp_profiler *prof = ctx->prof;
    if (host || !prof) return transfer(ctx, dst, src, host);
    /* A copy to or from the device is an op in profiles, as aten::copy_ is,
     * so its runtime call and GPU memcpy carry an External id. */
    char shapes[64];
    snprintf(shapes, sizeof shapes, "[[%lld, %lld]]", (long long)src->rows, (long long)src->cols);
    int64_t bytes = src->rows * src->cols * (int64_t)fmlp_dtype_size(src->dtype);
    int64_t id = fmlp_prof_op_begin(prof, "fmlp::copy_", shapes, 0, bytes);
    fmlp_status s = transfer(ctx, dst, src, host);
    fmlp_prof_op_end(prof, id);
    return s;
}
