/* Why: the plain-C GEMM microkernel: runs on any x86-64 and is the baseline
 * the SIMD paths are compared against. Same panel layout (KN, 8 columns) and
 * the same contract as the vector tiles: each element summed from zero in
 * ascending k, bias added in f32, one rounding on the way out. */
#include <stdbool.h>
#include <string.h>

#include "core/dtype.h"
#include "cpu/gemm_internal.h"
#include "cpu/pointwise.h"

#define NR GEMM_NR_SCALAR

/* dt stays a run-time value (no copy of tile specialised on it): with a
 * constant bf16 GCC vectorises over rows instead of columns, several times
 * slower. */
#if __has_attribute(noipa)
#define NOT_SPECIALISED __attribute__((noipa))
#else
#define NOT_SPECIALISED __attribute__((noinline))
#endif

/* The sums live in a local array until the end: in acc, which might alias
 * A as far as the compiler knows, they would not be vectorised over j. */
NOT_SPECIALISED static void tile(fmlp_dtype dt, bool add, int rows, const void *A, int64_t lda, const void *W,
                                 int64_t k, float *acc)
{
    float sum[GEMM_MR_SCALAR][NR];
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < NR; j++) sum[r][j] = add ? acc[r * NR + j] : 0.0f;
    for (int64_t kk = 0; kk < k; kk++) {
        float w[NR];
        for (int j = 0; j < NR; j++) w[j] = fmlp_load(dt, W, kk * NR + j);
        for (int r = 0; r < rows; r++) {
            float a = fmlp_load(dt, A, r * lda + kk);
            for (int j = 0; j < NR; j++) sum[r][j] += a * w[j];
        }
    }
    memcpy(acc, sum, (size_t)rows * sizeof sum[0]);
}

/* The four gemm_ukernels of this path: dtype by whether sums start from acc. */
#define SCALAR_TILE(NAME, DT, ADD)                                                                               \
    void NAME(int rows, const void *A, int64_t lda, const void *W, int64_t ps, int64_t k, float *acc)          \
    {                                                                                                            \
        (void)ps;                                                                                                \
        tile(DT, ADD, rows, A, lda, W, k, acc);                                                                  \
    }
SCALAR_TILE(gemm_tile_scalar_f32, FMLP_F32, false)
SCALAR_TILE(gemm_tile_scalar_bf16, FMLP_BF16, false)
SCALAR_TILE(gemm_tile_add_scalar_f32, FMLP_F32, true)
SCALAR_TILE(gemm_tile_add_scalar_bf16, FMLP_BF16, true)

void gemm_epilogue_scalar(const gemm_call *g, const float *acc, int rows, int64_t i0, int64_t panel)
{
    const cpu_packed *p = g->p;
    int outs = gemm_panel_outs(p);
    int64_t col0 = panel * outs;
    int valid = p->n - col0 < outs ? (int)(p->n - col0) : outs;
    const float *b = p->bias ? p->bias + panel * NR : NULL;
    for (int r = 0; r < rows; r++) {
        const float *a = acc + r * NR;
        for (int j = 0; j < valid; j++) {
            float v = a[j] + (b ? b[j] : 0.0f);
            float y = cpu_act_f32(g->act, v);
            if (p->glu) y *= a[j + outs] + (b ? b[j + outs] : 0.0f);
            fmlp_store(p->dtype, g->C, (i0 + r) * g->ldc + col0 + j, y);
        }
    }
}
