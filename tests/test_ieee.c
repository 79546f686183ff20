/* Why: NaN and Inf in the data propagate as IEEE arithmetic says, as in
 * PyTorch: a NaN in one input row poisons exactly that output row, in every
 * mode, and leaves the other rows finite. */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"

int main(void)
{
    tu_seed();
    fmlp_ctx *ctx;
    if (!tu_check(fmlp_ctx_create(NULL, &ctx) == FMLP_OK, "context")) return tu_finish();
    for (int dt = FMLP_F32; dt <= FMLP_BF16; dt++) {
        for (int a = FMLP_ACT_NONE + 1; a < FMLP_ACT_COUNT; a++) {
            fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 24, 40, 0, 0, (fmlp_act)a, true, (fmlp_dtype)dt};
            fmlp_mlp *m;
            fmlp_mlp_create(ctx, &d, tu_rand_u64(), &m);
            int64_t rows = 5, bad = 2;
            size_t es = fmlp_dtype_size((fmlp_dtype)dt);
            void *x = malloc((size_t)(rows * 24) * es), *y = malloc((size_t)(rows * 24) * es);
            for (int mode = FMLP_MODE_EAGER; mode <= FMLP_MODE_FUSED; mode++) {
                tu_fill((fmlp_dtype)dt, x, rows * 24, -1, 1, NULL);
                tu_fill((fmlp_dtype)dt, (char *)x + (size_t)(bad * 24 + 7) * es, 1, NAN, NAN, NULL);
                tu_poison((fmlp_dtype)dt, y, rows * 24);
                fmlp_tensor tx = fmlp_tensor_view(x, (fmlp_dtype)dt, rows, 24, 0);
                fmlp_tensor ty = fmlp_tensor_view(y, (fmlp_dtype)dt, rows, 24, 0);
                fmlp_status s = fmlp_mlp_forward(m, (fmlp_mode)mode, &tx, &ty);
                bool row_nan = true, others_finite = true;
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t j = 0; j < 24; j++) {
                        double v = tu_get((fmlp_dtype)dt, y, r * 24 + j);
                        if (r == bad) row_nan = row_nan && isnan(v);
                        else others_finite = others_finite && isfinite(v);
                    }
                tu_check(s == FMLP_OK && row_nan && others_finite, "%s %s %s: NaN in row %lld stays in that row",
                         fmlp_dtype_name((fmlp_dtype)dt), fmlp_act_name((fmlp_act)a), fmlp_mode_name((fmlp_mode)mode),
                         (long long)bad);
            }
            free(x);
            free(y);
            fmlp_mlp_destroy(m);
        }
    }
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
