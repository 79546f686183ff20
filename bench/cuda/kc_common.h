/* Why: kernel_check is split by concern (kernel_check.cu: every GEMM variant
 * and the pointwise kernels; kc_stream.cu: the small-batch kernels, PDL,
 * the one-kernel MLP and their timings); both need the same random data,
 * dtype conversions, the f64 activations (core/act_ref.h), tolerances and
 * tallies. */
#ifndef FMLP_BENCH_KC_COMMON_H
#define FMLP_BENCH_KC_COMMON_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/act_ref.h"
#include "cuda/kernels.h"
#include "fmlp.h"

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);     \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

/* Activations the checks cover: FMLP_ACT_NONE .. KC_ACT_LAST, every row of the table. */
#define KC_ACT_LAST (FMLP_ACT_COUNT - 1)

extern int kc_fails, kc_checks, kc_sms, kc_ccm;
/* FMLP_CU_SCRATCH_BYTES of zeroed device memory, as a context holds it. */
extern void *kc_scratch;

double kc_urand(double lo, double hi);
static inline size_t kc_esize(int dt) { return dt == FMLP_F32 ? 4 : 2; }
static inline double kc_rounded(int dt, double v)
{
    if (dt == FMLP_BF16) return (double)__bfloat162float(__float2bfloat16_rn((float)v));
    if (dt == FMLP_F16) return (double)__half2float(__float2half_rn((float)v));
    return (double)(float)v;
}
static inline void kc_put(int dt, void *p, size_t i, double v)
{
    if (dt == FMLP_BF16) ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn((float)v);
    else if (dt == FMLP_F16) ((__half *)p)[i] = __float2half_rn((float)v);
    else ((float *)p)[i] = (float)v;
}
static inline double kc_get(int dt, const void *p, size_t i)
{
    if (dt == FMLP_BF16) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    if (dt == FMLP_F16) return __half2float(((const __half *)p)[i]);
    return ((const float *)p)[i];
}
static inline double kc_act(int act, double x) { return fmlp_act_ref((fmlp_act)act, x); }
static inline const char *kc_dtn(int dt) { return dt == FMLP_F32 ? "f32" : dt == FMLP_BF16 ? "bf16" : "f16"; }
static inline double kc_tol(int dt) { return dt == FMLP_F32 ? 1e-5 : dt == FMLP_BF16 ? 1e-2 : 2e-3; }

/* Records one check and prints its line with the verdict first. */
static inline bool kc_record(bool ok)
{
    kc_checks++;
    if (!ok) kc_fails++;
    return ok;
}

/* The small-batch checks (kc_stream.cu) and timings (kc_timing.cu). */
void kc_small_checks(bool quick);
void kc_small_timings(void);

#endif
