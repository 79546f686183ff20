/* Why: every file of the CUDA backend turns failed CUDA calls into statuses
 * and sends work to the calling thread's stream; this leaf is where both
 * live, so those files depend on it and never on one another. */
#include "core/error.h"
#include "cuda/cuda_internal.h"

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
