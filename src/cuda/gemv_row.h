/* Why: fmlp_cu_gemm launches the row-streaming variant (gemv_row.cu)
 * through these; the seam between the two files. */
#ifndef FMLP_CUDA_GEMV_ROW_H
#define FMLP_CUDA_GEMV_ROW_H

#include "cuda/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif
const char *fmlp_cu_gemv_row_name(const fmlp_cu_gemm_args *a);
cudaError_t fmlp_cu_gemv_row(cudaStream_t s, const fmlp_cu_gemm_args *a);
#ifdef __cplusplus
}
#endif
#endif
