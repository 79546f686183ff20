/* Why: the CUDA backend's table: device discovery (a missing GPU or driver
 * is a status, never a crash), a caching device allocator, host<->device
 * copies, weight upload and re-layout at load time, and the dispatch of each
 * planned kernel to cuBLASLt or fmlp's own kernels on one stream per
 * context. Device pointers are checked before use, so a host pointer or a
 * misaligned view is an error message, not a fault. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_entry.h"
#include "core/error.h"
#include "cuda/cuda_internal.h"
#include "cuda/kernels.h"
#include "profiler/hook.h"

static _Thread_local fmlp_cu_state *tl_capturing;

fmlp_status fmlp_cu_fail(cudaError_t e, const char *what)
{
    (void)cudaGetLastError();
    if (e == cudaErrorMemoryAllocation)
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "%s: out of device memory; use fewer rows or free device tensors", what);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
        return fmlp_fail(FMLP_ERR_NO_DEVICE, "%s: no CUDA device (%s)", what, cudaGetErrorString(e));
    return fmlp_fail(FMLP_ERR_DEVICE, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

cudaStream_t fmlp_cu_stream(fmlp_cu_state *st) { return tl_capturing == st ? st->capture_stream : st->stream; }

void fmlp_cu_set_capturing(fmlp_cu_state *st, bool on) { tl_capturing = on ? st : NULL; }

int fmlp_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

/* ------------------------------------------------------------ lifecycle */

static void cu_fini(fmlp_ctx *ctx)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    if (!st) return;
    cudaSetDevice(st->device);
    if (st->stream) cudaStreamSynchronize(st->stream);
    fmlp_cu_graph_clear(st);
    fmlp_cu_lt_fini(st);
    for (int i = 0; i < st->n_cached; i++) cudaFree(st->cached[i].p);
    for (int i = 0; i < st->n_live; i++) cudaFree(st->live[i].p);
    free(st->live);
    if (st->capture_stream) cudaStreamDestroy(st->capture_stream);
    if (st->stream) cudaStreamDestroy(st->stream);
    pthread_mutex_destroy(&st->graph_lock);
    pthread_mutex_destroy(&st->lock);
    free(st);
    ctx->be_state = NULL;
}

static fmlp_status cu_init(fmlp_ctx *ctx, const fmlp_ctx_options *opt)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        (void)cudaGetLastError();
        return fmlp_fail(FMLP_ERR_NO_DEVICE, "no CUDA device (%s); use --device cpu, or run on a machine with an NVIDIA GPU and driver",
                         e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports 0 devices");
    }
    if (opt->device_index < 0 || opt->device_index >= n)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "CUDA device %d does not exist; this machine has %d (0..%d)",
                         opt->device_index, n, n - 1);
    fmlp_cu_state *st = calloc(1, sizeof *st);
    if (!st) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of host memory creating the CUDA backend");
    st->device = opt->device_index;
    pthread_mutex_init(&st->lock, NULL);
    pthread_mutex_init(&st->graph_lock, NULL);
    ctx->be_state = st;
    const char *own = getenv("FMLP_CUDA_OWN_GEMM");
    st->force_own = own && own[0] == '1';
    fmlp_status s = FMLP_OK;
    if ((e = cudaSetDevice(st->device)) != cudaSuccess)
        s = fmlp_cu_fail(e, "cudaSetDevice");
    else if ((e = cudaDeviceGetAttribute(&st->sm_count, cudaDevAttrMultiProcessorCount, st->device)) != cudaSuccess)
        s = fmlp_cu_fail(e, "cudaDeviceGetAttribute");
    else if ((e = cudaDeviceGetAttribute(&st->cc_major, cudaDevAttrComputeCapabilityMajor, st->device)) != cudaSuccess)
        s = fmlp_cu_fail(e, "cudaDeviceGetAttribute");
    else if ((e = cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking)) != cudaSuccess)
        s = fmlp_cu_fail(e, "cudaStreamCreate");
    else if ((e = cudaStreamCreateWithFlags(&st->capture_stream, cudaStreamNonBlocking)) != cudaSuccess)
        s = fmlp_cu_fail(e, "cudaStreamCreate");
    else
        s = fmlp_cu_lt_init(st);
    if (s != FMLP_OK) cu_fini(ctx);
    return s;
}

/* --------------------------------------------------------------- memory */

static size_t round_block(size_t bytes)
{
    const size_t q = bytes <= ((size_t)1 << 20) ? 512 : ((size_t)2 << 20);
    return bytes ? (bytes + q - 1) / q * q : q;
}

static void report_memory(fmlp_ctx *ctx, fmlp_cu_state *st, int64_t delta)
{
    struct fmlp_profiler *p = ctx->prof;
    if (p) fmlp_prof_memory(p, st->device, delta, st->live_bytes);
}

static fmlp_status cu_alloc(fmlp_ctx *ctx, size_t bytes, void **out)
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
        fmlp_cu_block *nl = realloc(st->live, (size_t)cap * sizeof *nl);
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

static void cu_free(fmlp_ctx *ctx, void *p)
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
static fmlp_status check_device_ptr(fmlp_cu_state *st, const char *what, const void *p, fmlp_dtype dt, bool element)
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

static fmlp_status cu_copy(fmlp_ctx *ctx, void *dst, fmlp_device dst_dev, const void *src, fmlp_device src_dev,
                           size_t bytes)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    if (!bytes) return FMLP_OK;
    fmlp_status s = FMLP_OK;
    if (dst_dev == FMLP_DEVICE_CUDA) s = check_device_ptr(st, "copy destination", dst, FMLP_F32, false);
    if (s == FMLP_OK && src_dev == FMLP_DEVICE_CUDA) s = check_device_ptr(st, "copy source", src, FMLP_F32, false);
    if (s != FMLP_OK) return s;
    cudaSetDevice(st->device);
    cudaStream_t stream = fmlp_cu_stream(st);
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
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

static fmlp_status cu_copy2d(fmlp_ctx *ctx, void *dst, size_t dld, fmlp_device dst_dev, const void *src, size_t sld,
                             fmlp_device src_dev, size_t row_bytes, size_t rows)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    if (!rows || !row_bytes) return FMLP_OK;
    if (dld < row_bytes || sld < row_bytes)
        return fmlp_fail(FMLP_ERR_SHAPE, "strided copy: row strides %zu/%zu bytes are shorter than a %zu-byte row", dld,
                         sld, row_bytes);
    fmlp_status s = FMLP_OK;
    if (dst_dev == FMLP_DEVICE_CUDA) s = check_device_ptr(st, "copy destination", dst, FMLP_F32, false);
    if (s == FMLP_OK && src_dev == FMLP_DEVICE_CUDA) s = check_device_ptr(st, "copy source", src, FMLP_F32, false);
    if (s != FMLP_OK) return s;
    cudaSetDevice(st->device);
    cudaStream_t stream = fmlp_cu_stream(st);
    cudaError_t e = cudaMemcpy2DAsync(dst, dld, src, sld, row_bytes, rows, cudaMemcpyDefault, stream);
    if (e == cudaSuccess && (dst_dev != FMLP_DEVICE_CUDA || src_dev != FMLP_DEVICE_CUDA)) e = cudaStreamSynchronize(stream);
    return e == cudaSuccess ? FMLP_OK : fmlp_cu_fail(e, "cudaMemcpy2DAsync");
}

static fmlp_status cu_synchronize(fmlp_ctx *ctx)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    cudaError_t e = cudaStreamSynchronize(st->stream);
    return e == cudaSuccess ? FMLP_OK : fmlp_cu_fail(e, "cudaStreamSynchronize");
}

/* -------------------------------------------------------------- weights */

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

static void cu_unpack(fmlp_ctx *ctx, void *packed)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    fmlp_cu_packed *p = packed;
    if (!p) return;
    cudaSetDevice(st->device);
    cudaStreamSynchronize(st->stream);
    fmlp_cu_graph_clear(st);
    pthread_mutex_lock(&st->lock);
    for (int i = 0; i < st->n_lt; i++) {
        if (st->lt_plans[i].w == p->w) {
            /* the cached plan names this weight; drop the whole cache */
            for (int j = 0; j < st->n_lt; j++) {
                fmlp_cu_lt_plan *q = &st->lt_plans[j];
                cublasLtMatrixLayoutDestroy(q->la);
                cublasLtMatrixLayoutDestroy(q->lb);
                cublasLtMatrixLayoutDestroy(q->lc);
                cublasLtMatmulDescDestroy(q->op);
            }
            st->n_lt = 0;
            break;
        }
    }
    pthread_mutex_unlock(&st->lock);
    cudaFree(p->w);
    if (p->b) cudaFree(p->b);
    free(p);
}

static fmlp_status cu_pack(fmlp_ctx *ctx, fmlp_dtype dtype, const void *w, const void *b, int64_t n, int64_t k,
                           void **packed)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    *packed = NULL;
    fmlp_cu_packed *p = calloc(1, sizeof *p);
    if (!p) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of host memory packing weights");
    p->dtype = dtype;
    p->n = n;
    p->k = k;
    p->nw = n;
    const size_t es = fmlp_dtype_size(dtype);
    cudaSetDevice(st->device);
    fmlp_status s = upload(st, w, (size_t)(n * k) * es, &p->w);
    if (s == FMLP_OK && b) s = upload(st, b, (size_t)n * es, &p->b);
    if (s != FMLP_OK) {
        cu_unpack(ctx, p);
        return s;
    }
    *packed = p;
    return FMLP_OK;
}

static fmlp_status cu_pack_glu(fmlp_ctx *ctx, fmlp_dtype dtype, const void *wg, const void *bg, const void *wu,
                               const void *bu, int64_t n, int64_t k, void **packed)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    *packed = NULL;
    const size_t es = fmlp_dtype_size(dtype);
    const int64_t nw = 2 * ((n + 7) / 8 * 8);
    char *hw = calloc((size_t)(nw * k), es);
    char *hb = (bg || bu) ? calloc((size_t)nw, es) : NULL;
    fmlp_cu_packed *p = calloc(1, sizeof *p);
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
        cu_unpack(ctx, p);
        return s;
    }
    *packed = p;
    return FMLP_OK;
}

/* ------------------------------------------------------------ dispatch */

static int pw_op(fmlp_kernel_kind kind)
{
    return kind == FMLP_KERNEL_ACT ? FMLP_CU_PW_ACT : kind == FMLP_KERNEL_MUL ? FMLP_CU_PW_MUL : FMLP_CU_PW_GLU;
}

static bool uses_lt(const fmlp_cu_state *st, const fmlp_kernel *k)
{
    return k->kind == FMLP_KERNEL_GEMM && k->act == FMLP_ACT_NONE && !st->force_own;
}

static void cu_name_kernel(fmlp_ctx *ctx, fmlp_dtype dtype, fmlp_kernel *k)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    const char *name = "fmlp_cuda_unknown";
    switch (k->kind) {
    case FMLP_KERNEL_GEMM:
    case FMLP_KERNEL_GEMM_GLU: {
        if (uses_lt(st, k)) {
            name = fmlp_cu_lt_name(dtype, true);
            break;
        }
        const bool glu = k->kind == FMLP_KERNEL_GEMM_GLU;
        fmlp_cu_gemm_args a = {dtype, k->act, glu, k->m, k->n, k->k, glu ? 2 * ((k->n + 7) / 8 * 8) : k->n,
                               NULL, k->k, NULL, NULL, NULL, k->n, st->sm_count};
        name = fmlp_cu_gemm_name(&a, fmlp_cu_gemm_pick(&a, st->sm_count, st->cc_major));
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

static fmlp_status cu_run(fmlp_ctx *ctx, fmlp_dtype dtype, const fmlp_kernel *k, const void *packed,
                          const fmlp_tensor *in0, const fmlp_tensor *in1, fmlp_tensor *out, int64_t correlation)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    fmlp_status s = check_device_ptr(st, "input", in0->data, dtype, true);
    if (s == FMLP_OK && in1) s = check_device_ptr(st, "second input", in1->data, dtype, true);
    if (s == FMLP_OK) s = check_device_ptr(st, "output", out->data, dtype, true);
    if (s != FMLP_OK) return s;
    const bool gemm = k->kind == FMLP_KERNEL_GEMM || k->kind == FMLP_KERNEL_GEMM_GLU;
    const fmlp_cu_packed *p = packed;
    if (gemm && (!p || p->dtype != dtype || p->k != k->k || p->n != k->n || p->glu != (k->kind == FMLP_KERNEL_GEMM_GLU)))
        return fmlp_fail(FMLP_ERR_INTERNAL, "CUDA %s kernel given weights packed for another shape or dtype",
                         k->kind == FMLP_KERNEL_GEMM_GLU ? "GEMM_GLU" : "GEMM");
    if (k->m <= 0) return FMLP_OK;
    cudaStream_t stream = fmlp_cu_stream(st);
    const bool tagged = correlation != 0 && fmlp_cu_prof_active();
    if (tagged) fmlp_cu_prof_push(correlation);
    cudaError_t e = cudaSuccess;
    if (gemm && uses_lt(st, k)) {
        s = fmlp_cu_lt_gemm(st, stream, dtype, k->m, k->n, k->k, in0->data, in0->ld, p->w, p->b, out->data, out->ld);
    } else if (gemm) {
        fmlp_cu_gemm_args a = {dtype, k->act, p->glu, k->m, k->n, k->k, p->nw, in0->data, in0->ld, p->w, p->b,
                               out->data, out->ld, st->sm_count};
        e = fmlp_cu_gemm(stream, &a, fmlp_cu_gemm_pick(&a, st->sm_count, st->cc_major));
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

/* ----------------------------------------------------------------- info */

static int cu_device_json(fmlp_ctx *ctx, char *buf, size_t cap)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, st->device) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    int n = snprintf(buf, cap,
                     "{\"id\": %d, \"name\": \"%s\", \"totalGlobalMem\": %zu, \"computeMajor\": %d, \"computeMinor\": %d, "
                     "\"maxThreadsPerBlock\": %d, \"maxThreadsPerMultiprocessor\": %d, \"regsPerBlock\": %d, "
                     "\"regsPerMultiprocessor\": %d, \"warpSize\": %d, \"sharedMemPerBlock\": %zu, "
                     "\"sharedMemPerMultiprocessor\": %zu, \"numSms\": %d, \"sharedMemPerBlockOptin\": %zu}",
                     st->device, p.name, p.totalGlobalMem, p.major, p.minor, p.maxThreadsPerBlock,
                     p.maxThreadsPerMultiProcessor, p.regsPerBlock, p.regsPerMultiprocessor, p.warpSize,
                     p.sharedMemPerBlock, p.sharedMemPerMultiprocessor, p.multiProcessorCount,
                     p.sharedMemPerBlockOptin);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

void fmlp_cuda_print_info(FILE *f)
{
    int n = 0, drv = 0, rt = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    (void)cudaGetLastError();
    fprintf(f, "CUDA backend: built (runtime %d.%d, cuBLASLt %zu); driver %d.%d\n", rt / 1000, rt % 1000 / 10,
            cublasLtGetVersion(), drv / 1000, drv % 1000 / 10);
    if (e != cudaSuccess || n == 0) {
        fprintf(f, "  no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return;
    }
    for (int d = 0; d < n; d++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        int clk = 0, mclk = 0, bus = 0;
        cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, d);
        cudaDeviceGetAttribute(&mclk, cudaDevAttrMemoryClockRate, d);
        cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, d);
        (void)cudaGetLastError();
        fprintf(f, "  cuda:%d  %s  sm_%d%d  %d SMs @ %d MHz  %.1f GiB @ %.0f GB/s peak  L2 %d MiB  smem/block %zu KiB\n", d,
                p.name, p.major, p.minor, p.multiProcessorCount, clk / 1000, (double)p.totalGlobalMem / (1u << 30),
                2.0 * mclk * 1e3 * (bus / 8) / 1e9, p.l2CacheSize >> 20, p.sharedMemPerBlockOptin >> 10);
    }
}

/* ------------------------------------------------------------ auto mode */

/* Measured on the tutorial's GeGLU (bench/results/h200_geglu.json): on
 * Hopper fmlp's TMA-fed GLU GEMM was as fast as or faster than cuBLASLt's
 * two GEMMs plus the fused pointwise kernel at every row count from 1 to
 * 32768, so gated bf16/f16 blocks run fused. Elsewhere (f32, whose fused
 * GEMM is the exact-FMA SIMT kernel; Linear-act stacks; other GPUs) fused
 * wins only while the forward is launch- and weight-bound. */
#define CUDA_FUSED_MAX_ROWS 128

static fmlp_mode cu_auto_mode(fmlp_ctx *ctx, fmlp_block block, fmlp_dtype dtype, int64_t rows, char *why,
                              size_t why_len)
{
    const fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    if (block == FMLP_BLOCK_GATED && dtype != FMLP_F32 && st->cc_major == 9 && fmlp_cu_gemm_wgmma_ready()) {
        snprintf(why, why_len,
                 "fused: on Hopper the one-pass GLU GEMM keeps up with cuBLASLt's two GEMMs at every row count");
        return FMLP_MODE_FUSED;
    }
    if (rows > CUDA_FUSED_MAX_ROWS) {
        snprintf(why, why_len, "compiled: above %d rows cuBLASLt's GEMMs outrun fmlp's fused GEMMs for this block and dtype",
                 CUDA_FUSED_MAX_ROWS);
        return FMLP_MODE_COMPILED;
    }
    return FMLP_MODE_AUTO;
}

static const fmlp_backend cuda_backend = {
    .name = "cuda",
    .init = cu_init,
    .fini = cu_fini,
    .pack = cu_pack,
    .pack_glu = cu_pack_glu,
    .unpack = cu_unpack,
    .name_kernel = cu_name_kernel,
    .run = cu_run,
    .alloc = cu_alloc,
    .free = cu_free,
    .copy = cu_copy,
    .copy2d = cu_copy2d,
    .synchronize = cu_synchronize,
    .graph_launch = fmlp_cu_graph_launch,
    .graph_begin = fmlp_cu_graph_begin,
    .graph_end = fmlp_cu_graph_end,
    .prof_start = fmlp_cu_prof_start,
    .prof_stop = fmlp_cu_prof_stop,
    .auto_mode = cu_auto_mode,
    .device_json = cu_device_json,
};

const fmlp_backend *fmlp_cuda_backend_get(void) { return &cuda_backend; }
