/* Why: the plan is a list of kernels known before anything runs; this is the
 * record each backend names and runs. It sits between the plan builder
 * (which decides what runs) and the backends (which decide how). */
#ifndef FMLP_CORE_KERNEL_H
#define FMLP_CORE_KERNEL_H

#include "fmlp.h"

/* Every kernel kind, one row each: X(KIND, op, parent)
 *   op      what the plan's op column shows; NULL: the activation's name
 *   parent  the module op it runs under in profiles; NULL: the activation's
 *           (fmlp::gelu for ACT, fmlp::fused_gelu_mul for GLU)
 * A GEMM with an activation epilogue belongs to the plan's linear+act
 * module instead. */
#define FMLP_KERNEL_TABLE(X)                                                                              \
    X(FMLP_KERNEL_GEMM, "linear", "fmlp::linear")             /* act(in0 · Wᵀ + b); act NONE in eager */ \
    X(FMLP_KERNEL_GEMM_GLU, "linear+glu", "fmlp::linear_glu") /* act(in0 · Gᵀ + bg) * (in0 · Uᵀ + bu) */ \
    X(FMLP_KERNEL_ACT, NULL, NULL)                            /* act(in0) */                              \
    X(FMLP_KERNEL_MUL, "mul", "fmlp::mul")                    /* in0 * in1 */                             \
    X(FMLP_KERNEL_GLU, "act*mul", NULL)                       /* act(in0) * in1, one pointwise pass */ \
    X(FMLP_KERNEL_MLP_GLU, "mlp", "fmlp::fused_mlp")          /* a whole gated MLP in one kernel */

typedef enum { FMLP_KERNEL_TABLE(FMLP_ENUMERATOR_) } fmlp_kernel_kind;
enum { FMLP_KERNEL_KIND_COUNT = 0 FMLP_KERNEL_TABLE(FMLP_COUNT_ROW_) };

/* Buffers a kernel reads or writes: the forward's x and y, or workspace. */
enum { FMLP_BUF_X = 0, FMLP_BUF_Y = 1, FMLP_BUF_T0 = 2, FMLP_BUF_T1 = 3, FMLP_BUF_T2 = 4, FMLP_BUF_COUNT = 5 };

typedef struct {
    fmlp_kernel_kind kind;
    fmlp_act act;
    int layer;          /* GEMM: index of the weight layer; GEMM_GLU: the gate layer */
    int in0, in1, out;  /* FMLP_BUF_* (in1 = -1 when unused; MLP_GLU: its workspace) */
    int64_t m, n, k;    /* rows, output cols, reduction (0 for pointwise) */
    int64_t hidden;     /* MLP_GLU: the hidden width (k is dim, n the output width) */
    const char *op;     /* the op(s) it implements, e.g. "linear", "gelu_tanh*mul" */
    const char *parent; /* the module op it belongs to, e.g. "fmlp::linear" */
    bool tuned;         /* GEMM of a fused plan: fmlp's fastest way, not necessarily PyTorch's (cuBLASLt's heuristic) */
    char name[96];      /* filled by the backend: the code path that runs */
    int64_t flops, bytes;
} fmlp_kernel;

#endif
