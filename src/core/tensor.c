/* Why: tensors are plain views (pointer, dtype, shape, row stride) so that
 * batch × seq inputs, transposed layouts and slices never copy; this file
 * checks them and moves them between host and device. */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/internal.h"
#include "core/names.h"
#include "profiler/hook.h"

fmlp_tensor fmlp_tensor_view(void *data, fmlp_dtype dtype, int64_t rows, int64_t cols, int64_t ld)
{
    fmlp_tensor t = {data, dtype, FMLP_DEVICE_CPU, rows, cols, ld ? ld : cols};
    return t;
}

static fmlp_status check_dtype(const char *what, fmlp_dtype dtype)
{
    if ((unsigned)dtype < FMLP_DTYPE_COUNT) return FMLP_OK;
    char choices[64];
    return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s has dtype %d, which is unknown; use %s", what, (int)dtype,
                     fmlp_dtype_choices(choices, sizeof choices));
}

fmlp_status fmlp_tensor_check(const char *what, const fmlp_tensor *t, int64_t *extent_bytes)
{
    if (extent_bytes) *extent_bytes = 0;
    if (!t) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s is NULL; pass a tensor", what);
    fmlp_status s = check_dtype(what, t->dtype);
    if (s != FMLP_OK) return s;
    if ((unsigned)t->device >= FMLP_DEVICE_COUNT)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s has device %d, which is unknown; use FMLP_DEVICE_CPU or "
                         "FMLP_DEVICE_CUDA", what, (int)t->device);
    if (t->rows < 0 || t->cols < 0)
        return fmlp_fail(FMLP_ERR_SHAPE, "%s has shape (%lld, %lld); rows and columns cannot be negative", what,
                         (long long)t->rows, (long long)t->cols);
    if (t->ld < t->cols)
        return fmlp_fail(FMLP_ERR_SHAPE, "%s has row stride %lld, less than its %lld columns; rows would overlap (a "
                         "dense tensor has ld = cols)", what, (long long)t->ld, (long long)t->cols);
    if (t->rows == 0 || t->cols == 0) return FMLP_OK;
    if (!t->data) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s has no data (a NULL pointer)", what);
    int64_t span, elems;
    if (!fmlp_mul_i64(t->rows - 1, t->ld, &span) || !fmlp_add_i64(span, t->cols, &elems))
        elems = -1;
    int64_t bytes;
    if (elems < 0 || !fmlp_mul_i64(elems, (int64_t)fmlp_dtype_size(t->dtype), &bytes)) {
        char detail[160];
        snprintf(detail, sizeof detail, "%lld rows %lld elements apart, of %lld %s columns", (long long)t->rows,
                 (long long)t->ld, (long long)t->cols, fmlp_dtype_name(t->dtype));
        return fmlp_too_large(what, detail, "bytes", "pass fewer rows or a smaller row stride");
    }
    if (extent_bytes) *extent_bytes = bytes;
    return FMLP_OK;
}

/* The bytes of a new dense (rows, cols) tensor, or a failure saying what
 * to do. */
static fmlp_status alloc_bytes(const char *fn, fmlp_dtype dtype, int64_t rows, int64_t cols, size_t *bytes)
{
    fmlp_status s = check_dtype("the tensor asked for", dtype);
    if (s != FMLP_OK) return s;
    if (rows < 0 || cols < 0)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s: a tensor of (%lld, %lld) elements; rows and columns cannot "
                         "be negative", fn, (long long)rows, (long long)cols);
    int64_t b = 0;
    s = fmlp_checked_bytes("the tensor asked for", rows, cols, dtype, "allocate fewer rows or columns (split the batch)",
                           &b);
    *bytes = (size_t)b;
    return s;
}

fmlp_status fmlp_tensor_alloc(fmlp_ctx *ctx, fmlp_dtype dtype, int64_t rows, int64_t cols, fmlp_tensor *out)
{
    if (!ctx || !out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tensor_alloc: ctx and out must not be NULL");
    size_t bytes = 0;
    fmlp_status s = alloc_bytes("fmlp_tensor_alloc", dtype, rows, cols, &bytes);
    if (s != FMLP_OK) return s;
    void *p = NULL;
    if (ctx->be->alloc) {
        s = ctx->be->alloc(ctx, bytes, &p);
        if (s != FMLP_OK) return s;
    } else {
        p = fmlp_host_alloc(bytes);
        if (!p) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory allocating a (%lld, %lld) %s tensor (%zu bytes)",
                                 (long long)rows, (long long)cols, fmlp_dtype_name(dtype), bytes);
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
    size_t bytes = 0;
    fmlp_status s = alloc_bytes("fmlp_tensor_alloc_host", dtype, rows, cols, &bytes);
    if (s != FMLP_OK) return s;
    void *p = NULL;
    s = ctx->be->host_alloc(ctx, bytes, &p);
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
    if (!ctx) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_tensor_copy: ctx is NULL");
    int64_t bytes;
    fmlp_status st = fmlp_tensor_check("the copy's destination", dst, NULL);
    if (st == FMLP_OK) st = fmlp_tensor_check("the copy's source", src, &bytes);
    if (st != FMLP_OK) return st;
    if (dst->rows != src->rows || dst->cols != src->cols || dst->dtype != src->dtype)
        return fmlp_fail(FMLP_ERR_SHAPE, "fmlp_tensor_copy: (%lld, %lld) %s into (%lld, %lld) %s; shapes and dtypes must match",
                         (long long)src->rows, (long long)src->cols, fmlp_dtype_name(src->dtype), (long long)dst->rows,
                         (long long)dst->cols, fmlp_dtype_name(dst->dtype));
    if (bytes == 0) return FMLP_OK;
    bool host = dst->device == FMLP_DEVICE_CPU && src->device == FMLP_DEVICE_CPU;
    fmlp_prof_hold hold = host ? (fmlp_prof_hold){NULL, 0} : fmlp_prof_hold_take(ctx);
    struct fmlp_profiler *prof = hold.p;
    if (!prof) return transfer(ctx, dst, src, host);
    /* A copy to or from the device is an op in profiles, as aten::copy_ is,
     * so its runtime call and GPU memcpy carry an External id. */
    char shapes[64];
    snprintf(shapes, sizeof shapes, "[[%lld, %lld]]", (long long)src->rows, (long long)src->cols);
    /* rows * cols <= the extent, so the bytes moved fit as well */
    int64_t moved = src->rows * src->cols * (int64_t)fmlp_dtype_size(src->dtype);
    int64_t id = fmlp_prof_op_begin(prof, "fmlp::copy_", shapes, 0, moved);
    fmlp_status s = transfer(ctx, dst, src, host);
    fmlp_prof_op_end(prof, id);
    fmlp_prof_hold_give(ctx, hold);
    return s;
}
