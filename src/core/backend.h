/* Why: the CPU and CUDA backends never see each other; both implement this
 * table and the rest of the library speaks only to it, finding a device's
 * backend through the registry (core/registry.c) and asking the table what
 * it can do instead of testing which device it is. Entries marked optional
 * may be NULL. */
#ifndef FMLP_CORE_BACKEND_H
#define FMLP_CORE_BACKEND_H

#include <stdio.h>

#include "core/device_props.h"
#include "core/kernel.h"
#include "fmlp.h"

struct fmlp_profiler;

typedef struct fmlp_backend {
    const char *name; /* "cpu", "cuda" */
    fmlp_device device;
    fmlp_status (*init)(fmlp_ctx *ctx, const fmlp_ctx_options *opt);
    void (*fini)(fmlp_ctx *ctx);

    /* Whether MLPs of `block` in `dtype` run here under `mode` (AUTO: under
     * every mode). When not, `why` says so and what to use instead. */
    bool (*supports)(fmlp_block block, fmlp_dtype dtype, fmlp_mode mode, char *why, size_t why_len);
    /* Whether `auto` is decided by timing the candidate modes on the
     * device once per MLP shape and row bucket (plan/auto.c) rather than by
     * auto_mode's rule alone; FMLP_AUTO_MEASURE=0/1 overrides it. */
    bool auto_measured;
    /* Devices of this kind on the machine (optional: NULL means one, the host). */
    int (*device_count)(void);
    /* Prints this backend's part of `fmlp info` (what it runs on and what it
     * can run there), whole lines, needing no context (optional). */
    void (*print_info)(FILE *f);

    /* Re-lays out one Linear weight (n, k) row-major in `dtype` on the host,
     * with optional bias (n), for this backend's GEMM kernels. gated_down:
     * it is a gated MLP's down projection, which a backend may also keep in
     * a second layout for a one-kernel MLP. */
    fmlp_status (*pack)(fmlp_ctx *ctx, fmlp_dtype dtype, const void *w, const void *b, int64_t n, int64_t k,
                        bool gated_down, void **packed);
    /* Packs gate and up (each (n, k), biases optional) together for GEMM_GLU. */
    fmlp_status (*pack_glu)(fmlp_ctx *ctx, fmlp_dtype dtype, const void *wg, const void *bg, const void *wu,
                            const void *bu, int64_t n, int64_t k, void **packed);
    void (*unpack)(fmlp_ctx *ctx, void *packed);

    /* Fills k->name with the kernel that will run, e.g. "cpu_gemm_bf16_amx_geglu". */
    void (*name_kernel)(fmlp_ctx *ctx, fmlp_dtype dtype, fmlp_kernel *k);

    /* Runs one kernel. `packed` is the layer's packing (GEMM), the gate/up
     * packing (GEMM_GLU), an array of two (MLP_GLU: gate/up, then down),
     * NULL for pointwise kernels. Tensors live on the
     * backend's device. `external_id` is the External id of the op that
     * issued the kernel (0 when no profiler records): every profiler record
     * of the kernel carries it. Correlations are the backend's: one per
     * runtime call on a GPU (CUPTI's), one per parallel region on the CPU. */
    fmlp_status (*run)(fmlp_ctx *ctx, fmlp_dtype dtype, const fmlp_kernel *k, const void *packed,
                       const fmlp_tensor *in0, const fmlp_tensor *in1, fmlp_tensor *out, int64_t external_id);

    /* Device memory (optional: NULL means host malloc, 64-byte aligned). */
    fmlp_status (*alloc)(fmlp_ctx *ctx, size_t bytes, void **out);
    void (*free)(fmlp_ctx *ctx, void *p);
    /* Copies between host and device memory (optional on the CPU). */
    fmlp_status (*copy)(fmlp_ctx *ctx, void *dst, fmlp_device dst_dev, const void *src, fmlp_device src_dev,
                        size_t bytes);
    fmlp_status (*synchronize)(fmlp_ctx *ctx); /* optional */

    /* ---- Optional, implemented by the CUDA backend only (NULL elsewhere). ---- */

    /* CUDA graphs. The key is bytes the executor builds from everything a
     * replay depends on: the MLP, the resolved mode, rows, and the device
     * pointers and row strides of x, y and the workspace. graph_launch sets
     * *hit when a cached graph for the key ran the forward. On a miss,
     * graph_begin starts capturing the context's stream, the executor runs
     * the plan as usual (kernels are recorded, not run), and graph_end
     * instantiates the capture, caches it under the key and launches it.
     * After a successful graph_begin, graph_end must follow even when a run
     * failed: pass key NULL to discard the capture. Graphs that point at
     * packed weights are dropped by unpack. `external_id` is the op the
     * launch runs under, for the profiler (0 when none records); the
     * graph's kernels share the launch call's correlation, as CUPTI
     * reports them. */
    fmlp_status (*graph_launch)(fmlp_ctx *ctx, const void *key, size_t key_bytes, int64_t external_id, bool *hit);
    fmlp_status (*graph_begin)(fmlp_ctx *ctx);
    fmlp_status (*graph_end)(fmlp_ctx *ctx, const void *key, size_t key_bytes, int64_t external_id);

    /* GPU activity. prof_start turns device activity collection on (call it
     * when a profiler starts collecting, before the first recorded step);
     * prof_stop waits for the device, hands every kernel, memcpy, memset and
     * launch-API record since prof_start to `prof` through
     * fmlp_prof_record_add, and turns collection off again so no slowdown
     * stays behind. Records carry their runtime call's correlation and the
     * External id passed to run() (or graph_launch). */
    fmlp_status (*prof_start)(fmlp_ctx *ctx);
    fmlp_status (*prof_stop)(fmlp_ctx *ctx, struct fmlp_profiler *prof);
    /* Drops what collection gathered so far and keeps collecting (a
     * warmup's records when recording begins): switching collection off
     * and on again would put its start-up cost, milliseconds, into the
     * first recorded step. Optional with the two above. */
    fmlp_status (*prof_discard)(fmlp_ctx *ctx);
    /* A strided copy: `rows` rows of `row_bytes`, row starts dld/sld bytes
     * apart, in one call (fmlp_tensor_copy should prefer it to a copy per
     * row). Synchronous like copy. */
    fmlp_status (*copy2d)(fmlp_ctx *ctx, void *dst, size_t dld, fmlp_device dst_dev, const void *src, size_t sld,
                          fmlp_device src_dev, size_t row_bytes, size_t rows);
    /* What mode `auto` runs where this backend's measurements favour one:
     * returns a mode other than FMLP_MODE_AUTO and says why in `why`, or
     * FMLP_MODE_AUTO to leave the plan's default (fused). */
    fmlp_mode (*auto_mode)(fmlp_ctx *ctx, fmlp_block block, fmlp_dtype dtype, int64_t rows, char *why, size_t why_len);
    /* Whether a gated MLP's fused forward of `rows` runs as one kernel
     * (FMLP_KERNEL_MLP_GLU), and the bytes of workspace it needs besides
     * h (rows x hidden elements). */
    bool (*one_kernel)(fmlp_ctx *ctx, const fmlp_mlp_desc *d, int64_t rows, int64_t *ws_bytes);
    /* Describes the context's device for the trace's "deviceProperties";
     * false when it cannot. */
    bool (*device_props)(fmlp_ctx *ctx, fmlp_device_props *out);
    /* Streams, as fmlp_ctx_set_stream documents them: set_stream directs
     * the calling thread's forwards on ctx to `stream` (NULL: the
     * context's own) and get_stream says where they go now. */
    fmlp_status (*set_stream)(fmlp_ctx *ctx, void *stream);
    void *(*get_stream)(fmlp_ctx *ctx);
    /* Whether the caller is capturing the calling thread's stream into a
     * graph of its own: the executor then neither captures nor waits. */
    bool (*caller_capturing)(fmlp_ctx *ctx);
    /* Page-locked host memory for host tensors that cross to and from the
     * device (fmlp_tensor_alloc_host; optional: NULL means plain host
     * memory). host_free takes what host_alloc gave, or plain host memory,
     * which it frees as free() does. */
    fmlp_status (*host_alloc)(fmlp_ctx *ctx, size_t bytes, void **out);
    void (*host_free)(fmlp_ctx *ctx, void *p);
} fmlp_backend;

/* The backend that runs `device`; fails for an unknown device, or for a
 * backend this build lacks (the message says how to get it). */
fmlp_status fmlp_backend_find(fmlp_device device, const fmlp_backend **out);
/* The backends built in, host first: i = 0 .. fmlp_backend_count() - 1. */
int fmlp_backend_count(void);
const fmlp_backend *fmlp_backend_at(int i);

/* The registry's sources; fmlp_cuda_backend_get is NULL when the library was
 * built without CUDA (core/no_cuda.c). */
extern const fmlp_backend fmlp_cpu_backend;
const fmlp_backend *fmlp_cuda_backend_get(void);

#endif
