/* Why: the row-streaming one-kernel MLP has a one-row form (mlp_stream.cu,
 * f32 FMAs on whole row segments) and a form for 2..16 rows
 * (mlp_stream_mma.cu, mma.sync on the same kind of stream); the launchers
 * of kernels.h pick between them by the row count through this seam. */
#ifndef FMLP_CUDA_MLP_STREAM_MMA_H
#define FMLP_CUDA_MLP_STREAM_MMA_H

#include "cuda/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2..16 rows, cc 9.x, dim and hidden multiples of 8, x rows 16-byte aligned. */
bool fmlp_cu_mlp_stream_rows_fits(const fmlp_cu_mlp_args *a);
const char *fmlp_cu_mlp_stream_rows_name(const fmlp_cu_mlp_args *a);
cudaError_t fmlp_cu_mlp_stream_rows(cudaStream_t s, const fmlp_cu_mlp_args *a);

#ifdef __cplusplus
}
#endif
#endif
