/* Why: which stream a forward's work goes to is decided per thread, as
 * PyTorch's current stream is: the capture stream while this thread
 * captures an fmlp graph, else the stream the thread set with
 * fmlp_ctx_set_stream, else the context's own. Every launch, copy and wait
 * asks fmlp_cu_stream; this file owns the per-thread choice, the check
 * for a caller's graph capture, and making the context's device the
 * thread's current one before a launch (one thread may drive several
 * GPUs, as a one-process tensor-parallel run does). */
#include <stdatomic.h>

#include "core/error.h"
#include "cuda/cuda_internal.h"

#define THREAD_STREAMS 8

/* Keyed by the state's id, not its address: a context destroyed while
 * another thread still names it must not hand that stream to a new one. */
typedef struct {
    uint64_t id;
    cudaStream_t stream;
} thread_stream;

static atomic_ullong g_next_id = 1;
static _Thread_local fmlp_cu_state *tl_capturing;
static _Thread_local thread_stream tl_streams[THREAD_STREAMS];
static _Thread_local int tl_n_streams;

void fmlp_cu_stream_init(fmlp_cu_state *st) { st->id = atomic_fetch_add(&g_next_id, 1); }

static thread_stream *slot_of(const fmlp_cu_state *st)
{
    for (int i = 0; i < tl_n_streams; i++)
        if (tl_streams[i].id == st->id) return &tl_streams[i];
    return NULL;
}

static cudaStream_t thread_stream_of(const fmlp_cu_state *st)
{
    const thread_stream *t = tl_n_streams ? slot_of(st) : NULL;
    return t ? t->stream : st->stream;
}

cudaStream_t fmlp_cu_stream(fmlp_cu_state *st) { return fmlp_cu_own_capture(st) ? st->capture_stream : thread_stream_of(st); }

void fmlp_cu_set_capturing(fmlp_cu_state *st, bool on) { tl_capturing = on ? st : NULL; }

bool fmlp_cu_own_capture(const fmlp_cu_state *st) { return tl_capturing == st; }

int fmlp_cu_foreign_capture(const fmlp_cu_state *st, cudaStream_t s)
{
    if (fmlp_cu_own_capture(st)) return 0;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &cs) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return cs != cudaStreamCaptureStatusNone;
}

fmlp_status fmlp_cu_set_stream(fmlp_ctx *ctx, void *stream)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    thread_stream *t = slot_of(st);
    if (!stream || stream == (void *)st->stream) {
        if (t) *t = tl_streams[--tl_n_streams];
        return FMLP_OK;
    }
    if (!t) {
        if (tl_n_streams == THREAD_STREAMS)
            return fmlp_fail(FMLP_ERR_UNSUPPORTED,
                             "fmlp_ctx_set_stream: this thread has streams set on %d contexts already; set NULL on one "
                             "of them first",
                             THREAD_STREAMS);
        t = &tl_streams[tl_n_streams++];
        t->id = st->id;
    }
    t->stream = (cudaStream_t)stream;
    return FMLP_OK;
}

void *fmlp_cu_get_stream(fmlp_ctx *ctx) { return (void *)fmlp_cu_stream(fmlp_cu_state_of(ctx)); }

cudaError_t fmlp_cu_use_device(const fmlp_cu_state *st)
{
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == st->device) return cudaSuccess;
    return cudaSetDevice(st->device);
}

bool fmlp_cu_caller_capturing(fmlp_ctx *ctx)
{
    const fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    return fmlp_cu_foreign_capture(st, thread_stream_of(st)) == 1;
}
