/* Why: the plan is a list of kernels known before anything runs; this is the
 * record each backend names and runs. It sits between the plan builder
 * (which decides what runs) and the backends (which decide how). */
#ifndef FMLP_CORE_KERNEL_H
#define FMLP_CORE_KERNEL_H

#include "fmlp.h"

typedef enum {
    FMLP_KERNEL_GEMM,     /* out = act(in0 · Wᵀ + b); act NONE in eager */
    FMLP_KERNEL_GEMM_GLU, /* out = act(in0 · Gᵀ + bg) * (in0 · Uᵀ + bu), one pass over in0 */
    FMLP_KERNEL_ACT,      /* out = act(in0) */
    FMLP_KERNEL_MUL,      /* out = in0 * in1 */
    FMLP_KERNEL_GLU,      /* out = act(in0) * in1, one pointwise pass */
    FMLP_KERNEL_MLP       /* a whole gated block in one kernel: in1 = act(in0 · Gᵀ + bg) * (in0 · Uᵀ + bu)
                             (workspace, rows × hidden), out = in1 · Dᵀ + bd; n = out_dim, k = dim;
                             planned only where the backend's one_kernel_mlp says so */
} fmlp_kernel_kind;

/* Buffers a kernel reads or writes: the forward's x and y, or workspace. */
enum { FMLP_BUF_X = 0, FMLP_BUF_Y = 1, FMLP_BUF_T0 = 2, FMLP_BUF_T1 = 3, FMLP_BUF_T2 = 4, FMLP_BUF_COUNT = 5 };

typedef struct {
    fmlp_kernel_kind kind;
    fmlp_act act;
    int layer;          /* GEMM: index of the weight layer; GEMM_GLU: the gate layer */
    int in0, in1, out;  /* FMLP_BUF_* (in1 = -1 when unused) */
    int64_t m, n, k;    /* rows, output cols, reduction (0 for pointwise) */
    const char *op;     /* the op(s) it implements, e.g. "linear", "gelu_tanh*mul" */
    const char *parent; /* the module op it belongs to, e.g. "fmlp::linear" */
    char name[96];      /* filled by the backend: the code path that runs */
    int64_t flops, bytes;
    bool fused;         /* planned by mode fused: the backend may run its own kernel rather than a
                           library GEMM, and start it before the previous kernel ends */
} fmlp_kernel;

#endif
