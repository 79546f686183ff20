/* Why: every file of the CUDA backend turns failed CUDA calls into statuses;
 * this leaf (with stream.c, which picks the stream work goes to) is what
 * those files depend on, so they never depend on one another. */
#include "core/error.h"
#include "cuda/cuda_internal.h"

fmlp_status fmlp_cu_fail(cudaError_t e, const char *what)
{
    (void)cudaGetLastError();
    if (e == cudaErrorMemoryAllocation)
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "%s: out of device memory; use fewer rows or free device tensors", what);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
        return fmlp_fail(FMLP_ERR_NO_DEVICE, "%s: no CUDA device (%s)", what, cudaGetErrorString(e));
    return fmlp_fail(FMLP_ERR_DEVICE, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}
