/* Why: device memory for tensors and workspace through a caching allocator
 * (steady-state forwards allocate nothing), pinned host memory for the
 * tensors that must cross, host<->device copies, and the
 * check that a pointer handed in really is device memory, so a host pointer
 * or a misaligned view is an error message, not a fault. */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "cuda/cuda_internal.h"
#include "profiler/hook.h"

static size_t round_block(size_t bytes)
{
    const size_t q = bytes <= ((size_t)1 << 20) ? 512 : ((size_t)2 << 20);
    return bytes ? (bytes + q - 1) / q * q : q;
}

static void report_memory(fmlp_ctx *ctx, fmlp_cu_state *st, int64_t delta)
{
    fmlp_prof_hold h = fmlp_prof_hold_take(ctx);
    if (h.p) fmlp_prof_memory(h.p, st->device, delta, st->live_bytes);
    fmlp_prof_hold_give(ctx, h);
}

fmlp_status fmlp_cu_alloc(fmlp_ctx *ctx, size_t bytes, void **out)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    const size_t want = round_block(bytes);
    *out = NULL;
    pthread_mutex_lock(&st->lock);
    void *p = NULL;
    for (int i = 0; i < st->n_cached; i++) {
        if (st->cached[i].bytes == want) {
            p = st->cached[i].p;
            st->cached[i] = st->cached[--st->n_cached];
            break;
        }
    }
    cudaError_t e = cudaSuccess;
    if (!p) {
        cudaSetDevice(st->device);
        e = cudaMalloc(&p, want);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            for (int i = 0; i < st->n_cached; i++) cudaFree(st->cached[i].p);
            st->n_cached = 0;
            e = cudaMalloc(&p, want);
        }
    }
    if (e == cudaSuccess && st->n_live == st->cap_live) {
        int cap = st->cap_live ? 2 * st->cap_live : 64;
        fmlp_cu_block *nl = fmlp_realloc(st->live, (size_t)cap * sizeof *nl);
        if (!nl) {
            cudaFree(p);
            pthread_mutex_unlock(&st->lock);
            return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of host memory tracking device allocations");
        }
        st->live = nl;
        st->cap_live = cap;
    }
    if (e != cudaSuccess) {
        pthread_mutex_unlock(&st->lock);
        (void)cudaGetLastError();
        size_t fr = 0, tot = 0;
        cudaMemGetInfo(&fr, &tot);
        (void)cudaGetLastError();
        if (e == cudaErrorMemoryAllocation)
            return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY,
                             "out of device memory allocating %zu bytes (%zu of %zu bytes free); use fewer rows",
                             want, fr, tot);
        return fmlp_cu_fail(e, "cudaMalloc");
    }
    st->live[st->n_live].p = p;
    st->live[st->n_live].bytes = want;
    st->n_live++;
    st->live_bytes += (int64_t)want;
    report_memory(ctx, st, (int64_t)want);
    pthread_mutex_unlock(&st->lock);
    *out = p;
    return FMLP_OK;
}

void fmlp_cu_free(fmlp_ctx *ctx, void *p)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    if (!p || !st) return;
    pthread_mutex_lock(&st->lock);
    for (int i = 0; i < st->n_live; i++) {
        if (st->live[i].p != p) continue;
        fmlp_cu_block b = st->live[i];
        st->live[i] = st->live[--st->n_live];
        st->live_bytes -= (int64_t)b.bytes;
        report_memory(ctx, st, -(int64_t)b.bytes);
        for (int j = 0; j < FMLP_CU_SEEN_PTRS; j++)
            if (st->seen[j] == p) st->seen[j] = NULL;
        if (st->n_cached < FMLP_CU_FREE_BLOCKS)
            st->cached[st->n_cached++] = b;
        else
            cudaFree(b.p);
        break;
    }
    pthread_mutex_unlock(&st->lock);
}

/* Device (or managed) memory, element-aligned; remembers pointers it has
 * checked so steady-state forwards skip the query. */
fmlp_status fmlp_cu_check_device_ptr(fmlp_cu_state *st, const char *what, const void *p, fmlp_dtype dt, bool element)
{
    if (!p) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s has no data (NULL pointer)", what);
    if (element && (uintptr_t)p % fmlp_dtype_size(dt))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s at %p is misaligned for %s; views must start on an element boundary",
                         what, p, fmlp_dtype_name(dt));
    pthread_mutex_lock(&st->lock);
    for (int i = 0; i < FMLP_CU_SEEN_PTRS; i++) {
        if (st->seen[i] == p) {
            pthread_mutex_unlock(&st->lock);
            return FMLP_OK;
        }
    }
    struct cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) (void)cudaGetLastError();
    const bool dev = e == cudaSuccess && (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged);
    if (dev) {
        st->seen[st->seen_next] = p;
        st->seen_next = (st->seen_next + 1) % FMLP_CU_SEEN_PTRS;
    }
    pthread_mutex_unlock(&st->lock);
    if (!dev)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "%s at %p is not device memory; allocate it with fmlp_tensor_alloc on the CUDA context, or "
                         "mark it as a host tensor (device = FMLP_DEVICE_CPU) so it is copied",
                         what, p);
    return FMLP_OK;
}

/* A copy's runtime call and memcpy carry the External id of the op it runs
 * in (fmlp::copy_); returns whether one was pushed (pop it after). */
static bool tag_copy(fmlp_ctx *ctx)
{
    fmlp_prof_hold h = fmlp_prof_hold_take(ctx);
    const int64_t ext = h.p && fmlp_cu_prof_active() ? fmlp_prof_current_op(h.p) : 0;
    fmlp_prof_hold_give(ctx, h);
    if (ext) fmlp_cu_prof_push(ext);
    return ext != 0;
}

fmlp_status fmlp_cu_copy(fmlp_ctx *ctx, void *dst, fmlp_device dst_dev, const void *src, fmlp_device src_dev,
                           size_t bytes)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    if (!bytes) return FMLP_OK;
    fmlp_status s = FMLP_OK;
    if (dst_dev == FMLP_DEVICE_CUDA) s = fmlp_cu_check_device_ptr(st, "copy destination", dst, FMLP_F32, false);
    if (s == FMLP_OK && src_dev == FMLP_DEVICE_CUDA) s = fmlp_cu_check_device_ptr(st, "copy source", src, FMLP_F32, false);
    if (s != FMLP_OK) return s;
    cudaSetDevice(st->device);
    cudaStream_t stream = fmlp_cu_stream(st);
    const bool tagged = tag_copy(ctx);
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
    if (tagged) fmlp_cu_prof_pop();
    /* From or to pageable memory the call returns once the host side is
     * done with; pinned host memory needs the wait. */
    const void *host = dst_dev != FMLP_DEVICE_CUDA ? dst : src_dev != FMLP_DEVICE_CUDA ? src : NULL;
    if (e == cudaSuccess && host) {
        struct cudaPointerAttributes a;
        cudaError_t q = cudaPointerGetAttributes(&a, host);
        if (q != cudaSuccess || a.type != cudaMemoryTypeUnregistered) e = cudaStreamSynchronize(stream);
        (void)cudaGetLastError();
    }
    return e == cudaSuccess ? FMLP_OK : fmlp_cu_fail(e, "cudaMemcpyAsync");
}

fmlp_status fmlp_cu_copy2d(fmlp_ctx *ctx, void *dst, size_t dld, fmlp_device dst_dev, const void *src, size_t sld,
                             fmlp_device src_dev, size_t row_bytes, size_t rows)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    if (!rows || !row_bytes) return FMLP_OK;
    if (dld < row_bytes || sld < row_bytes)
        return fmlp_fail(FMLP_ERR_SHAPE, "strided copy: row strides %zu/%zu bytes are shorter than a %zu-byte row", dld,
                         sld, row_bytes);
    fmlp_status s = FMLP_OK;
    if (dst_dev == FMLP_DEVICE_CUDA) s = fmlp_cu_check_device_ptr(st, "copy destination", dst, FMLP_F32, false);
    if (s == FMLP_OK && src_dev == FMLP_DEVICE_CUDA) s = fmlp_cu_check_device_ptr(st, "copy source", src, FMLP_F32, false);
    if (s != FMLP_OK) return s;
    cudaSetDevice(st->device);
    cudaStream_t stream = fmlp_cu_stream(st);
    const bool tagged = tag_copy(ctx);
    cudaError_t e = cudaMemcpy2DAsync(dst, dld, src, sld, row_bytes, rows, cudaMemcpyDefault, stream);
    if (tagged) fmlp_cu_prof_pop();
    if (e == cudaSuccess && (dst_dev != FMLP_DEVICE_CUDA || src_dev != FMLP_DEVICE_CUDA)) e = cudaStreamSynchronize(stream);
    return e == cudaSuccess ? FMLP_OK : fmlp_cu_fail(e, "cudaMemcpy2DAsync");
}

fmlp_status fmlp_cu_host_alloc(fmlp_ctx *ctx, size_t bytes, void **out)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    *out = NULL;
    cudaSetDevice(st->device);
    cudaError_t e = cudaHostAlloc(out, bytes ? bytes : 1, cudaHostAllocPortable);
    if (e == cudaSuccess) return FMLP_OK;
    (void)cudaGetLastError();
    *out = NULL;
    if (e == cudaErrorMemoryAllocation)
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY,
                         "cannot pin %zu bytes of host memory; use fewer rows, or plain host memory (slower copies)", bytes);
    return fmlp_cu_fail(e, "cudaHostAlloc");
}

void fmlp_cu_host_free(fmlp_ctx *ctx, void *p)
{
    (void)ctx;
    if (!p) return;
    struct cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    (void)cudaGetLastError();
    if (e == cudaSuccess && a.type == cudaMemoryTypeHost)
        cudaFreeHost(p);
    else
        free(p);
}

/* The context's own stream and the one this thread set; nothing runs on a
 * stream the caller is capturing, so there is nothing to wait for there. */
fmlp_status fmlp_cu_synchronize(fmlp_ctx *ctx)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    cudaError_t e = cudaStreamSynchronize(st->stream);
    cudaStream_t mine = fmlp_cu_stream(st);
    if (e == cudaSuccess && mine != st->stream && !fmlp_cu_caller_capturing(ctx)) e = cudaStreamSynchronize(mine);
    return e == cudaSuccess ? FMLP_OK : fmlp_cu_fail(e, "cudaStreamSynchronize");
}

void fmlp_cu_memory_release(fmlp_cu_state *st)
{
    for (int i = 0; i < st->n_cached; i++) cudaFree(st->cached[i].p);
    for (int i = 0; i < st->n_live; i++) cudaFree(st->live[i].p);
    free(st->live);
    st->live = NULL;
    st->n_cached = st->n_live = st->cap_live = 0;
}
