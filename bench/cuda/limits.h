/* Why: a small-batch forward is judged against two limits of the machine,
 * and the judgement is only fair when they are measured in the same process
 * as the forwards: what one CUDA-graph replay costs (the launch floor of a
 * graphed forward) and how fast a plain kernel streams the MLP's weight
 * bytes (its memory floor), L2-warm and L2-cold. limits.cu measures them;
 * this header is the plain-C face bench_cuda.c includes. */
#ifndef FMLP_BENCH_CUDA_LIMITS_H
#define FMLP_BENCH_CUDA_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Wall time of N back-to-back operations between two stream
 * synchronizations, per operation, best of 3: how bench_cuda.c times its
 * forwards. Index 0 is L2-warm (one buffer read again and again), 1 is
 * L2-cold (a rotation through `copies` buffers). */
typedef struct {
    double replay_one_us;  /* a graph of one empty kernel */
    double replay_two_us;  /* a graph of two empty kernels, the second depending on the first */
    double read_us[2];     /* one kernel reading every byte of the weights */
    double read_gbps[2];
    int copies[2];         /* buffers each read rotates through */
    char device[256];
} bench_limits;

/* Measures the limits on CUDA device `device` for `bytes` bytes of weights
 * (even: whole bf16 elements), the cold reads rotating through `copies`
 * buffers of that size. Returns 0, or -1 with what failed written to err. */
int bench_limits_measure(int device, int64_t bytes, int copies, bench_limits *out, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
