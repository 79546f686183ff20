/* Why: at small batch sizes a forward is a handful of short kernels and
 * launch overhead dominates; a CUDA graph per (mode, rows, buffers) replays
 * the whole forward with one launch. Capture runs on a side stream owned by
 * the capturing thread, so forwards other threads run meanwhile on the
 * context's stream are neither captured nor blocked. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "cuda/cuda_internal.h"

static void graph_drop(fmlp_cu_graph *g)
{
    cudaGraphExecDestroy(g->exec);
    free(g->key);
    memset(g, 0, sizeof *g);
}

void fmlp_cu_graph_clear(fmlp_cu_state *st)
{
    pthread_mutex_lock(&st->lock);
    for (int i = 0; i < st->n_graphs; i++) graph_drop(&st->graphs[i]);
    st->n_graphs = 0;
    pthread_mutex_unlock(&st->lock);
}

static fmlp_status launch(fmlp_cu_state *st, cudaGraphExec_t exec, int64_t external_id)
{
    cudaError_t e = fmlp_cu_use_device(st);
    if (e != cudaSuccess) return fmlp_cu_fail(e, "cudaSetDevice");
    const bool tagged = external_id != 0 && fmlp_cu_prof_active();
    if (tagged) fmlp_cu_prof_push(external_id);
    e = cudaGraphLaunch(exec, fmlp_cu_stream(st));
    if (tagged) fmlp_cu_prof_pop();
    return e == cudaSuccess ? FMLP_OK : fmlp_cu_fail(e, "cudaGraphLaunch");
}

fmlp_status fmlp_cu_graph_launch(fmlp_ctx *ctx, const void *key, size_t key_bytes, int64_t external_id, bool *hit)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    *hit = false;
    if (!key || !key_bytes) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "graph_launch: empty key");
    pthread_mutex_lock(&st->lock);
    cudaGraphExec_t exec = NULL;
    const bool pdl = fmlp_cu_pdl_now(st);
    for (int i = 0; i < st->n_graphs; i++) {
        fmlp_cu_graph *g = &st->graphs[i];
        if (g->pdl == pdl && g->key_bytes == key_bytes && memcmp(g->key, key, key_bytes) == 0) {
            g->last_use = ++st->graph_clock;
            exec = g->exec;
            break;
        }
    }
    fmlp_status s = FMLP_OK;
    if (exec) {
        s = launch(st, exec, external_id);
        *hit = s == FMLP_OK;
    }
    pthread_mutex_unlock(&st->lock);
    return s;
}

fmlp_status fmlp_cu_graph_begin(fmlp_ctx *ctx)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    pthread_mutex_lock(&st->graph_lock);
    cudaSetDevice(st->device);
    /* the capture must see the earlier work of the stream it replays on as done */
    cudaError_t e = cudaStreamSynchronize(fmlp_cu_stream(st));
    if (e == cudaSuccess) e = cudaStreamBeginCapture(st->capture_stream, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) {
        pthread_mutex_unlock(&st->graph_lock);
        return fmlp_cu_fail(e, "cudaStreamBeginCapture");
    }
    fmlp_cu_set_capturing(st, true);
    return FMLP_OK;
}

fmlp_status fmlp_cu_graph_end(fmlp_ctx *ctx, const void *key, size_t key_bytes, int64_t external_id)
{
    fmlp_cu_state *st = fmlp_cu_state_of(ctx);
    fmlp_cu_set_capturing(st, false);
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(st->capture_stream, &graph);
    cudaGraphExec_t exec = NULL;
    if (e == cudaSuccess && key && key_bytes) e = cudaGraphInstantiate(&exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    pthread_mutex_unlock(&st->graph_lock);
    if (e != cudaSuccess) return fmlp_cu_fail(e, "capturing the forward into a CUDA graph");
    if (!exec) return FMLP_OK;

    void *kcopy = fmlp_malloc(key_bytes);
    if (!kcopy) {
        cudaGraphExecDestroy(exec);
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of host memory caching a CUDA graph");
    }
    memcpy(kcopy, key, key_bytes);
    pthread_mutex_lock(&st->lock);
    fmlp_cu_graph *slot;
    if (st->n_graphs < FMLP_CU_GRAPHS) {
        slot = &st->graphs[st->n_graphs++];
    } else {
        slot = &st->graphs[0];
        for (int i = 1; i < st->n_graphs; i++)
            if (st->graphs[i].last_use < slot->last_use) slot = &st->graphs[i];
        cudaStreamSynchronize(fmlp_cu_stream(st));
        graph_drop(slot);
    }
    slot->key = kcopy;
    slot->key_bytes = key_bytes;
    slot->exec = exec;
    slot->last_use = ++st->graph_clock;
    slot->pdl = fmlp_cu_pdl_now(st);
    fmlp_status s = launch(st, exec, external_id);
    pthread_mutex_unlock(&st->lock);
    return s;
}
