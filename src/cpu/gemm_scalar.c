/* Why: the plain-C GEMM path: runs on any x86-64 and is the baseline the
 * SIMD paths are compared against. Same panel layout (KN, 8 columns) and
 * the same contract as the vector tiles: each element summed from zero in
 * ascending k, bias added in f32, one rounding on the way out. */
#include "core/dtype.h"
#include "cpu/gemm_internal.h"
#include "cpu/pointwise.h"

#define MR GEMM_MR_SCALAR
#define NR GEMM_NR_SCALAR

static void tile(const gemm_call *g, const void *W, int rows, int64_t i0, float acc[MR][NR])
{
    const cpu_packed *p = g->p;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < NR; j++) acc[r][j] = 0.0f;
    for (int64_t kk = 0; kk < p->k; kk++) {
        float w[NR];
        for (int j = 0; j < NR; j++) w[j] = fmlp_load(p->dtype, W, kk * NR + j);
        for (int r = 0; r < rows; r++) {
            float a = fmlp_load(p->dtype, g->A, (i0 + r) * g->lda + kk);
            for (int j = 0; j < NR; j++) acc[r][j] += a * w[j];
        }
    }
}

static void epilogue(const gemm_call *g, float acc[MR][NR], int rows, int64_t i0, int64_t panel)
{
    const cpu_packed *p = g->p;
    int outs = gemm_panel_outs(p);
    int64_t col0 = panel * outs;
    int valid = p->n - col0 < outs ? (int)(p->n - col0) : outs;
    const float *b = p->bias ? p->bias + panel * NR : NULL;
    for (int r = 0; r < rows; r++) {
        for (int j = 0; j < valid; j++) {
            float v = acc[r][j] + (b ? b[j] : 0.0f);
            float y = cpu_act_f32(g->act, v);
            if (p->glu) y *= acc[r][j + outs] + (b ? b[j + outs] : 0.0f);
            fmlp_store(p->dtype, g->C, (i0 + r) * g->ldc + col0 + j, y);
        }
    }
}

void gemm_block_scalar(const gemm_call *g, int64_t m0, int64_t m1, int64_t p0, int64_t p1)
{
    float acc[MR][NR];
    for (int64_t panel = p0; panel < p1; panel++) {
        const void *W = gemm_panel(g->p, panel);
        for (int64_t i = m0; i < m1; i += MR) {
            int rows = m1 - i < MR ? (int)(m1 - i) : MR;
            tile(g, W, rows, i, acc);
            epilogue(g, acc, rows, i, panel);
        }
    }
}
