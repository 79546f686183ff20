/* Why: the oracle's activations, defined once. The library's reference
 * (model/reference.c), the tests and the standalone CUDA kernel check
 * (bench/cuda/kernel_check.cu, compiled by nvcc as C++) all measure against
 * these: PyTorch's definitions evaluated in double, gelu through erfc so its
 * negative tail does not cancel. NaN propagates and Inf goes where IEEE
 * arithmetic takes it, as in PyTorch (relu(NaN) is NaN). */
#ifndef FMLP_CORE_ACT_REF_H
#define FMLP_CORE_ACT_REF_H

#include <math.h>

#include "fmlp.h"

static inline double fmlp_act_ref(fmlp_act act, double x)
{
    switch (act) {
    case FMLP_ACT_GELU: return 0.5 * x * erfc(-x / sqrt(2.0));
    case FMLP_ACT_GELU_TANH: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case FMLP_ACT_SILU: return x / (1.0 + exp(-x));
    case FMLP_ACT_RELU: return isnan(x) ? x : x > 0 ? x : 0.0;
    case FMLP_ACT_RELU2: return isnan(x) ? x : x > 0 ? x * x : 0.0;
    default: return x;
    }
}

#endif
