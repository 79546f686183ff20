/* Why: bad input on a CUDA context is a status and a message, never a
 * fault: host pointers passed as device tensors, misaligned views, zero
 * rows, and device allocations that cannot be satisfied. Without a GPU the
 * context itself must fail with FMLP_ERR_NO_DEVICE. */
#include <stdlib.h>

#include "cuda_test.h"

int main(void)
{
    tu_seed();
    fmlp_ctx *ctx = ct_ctx();
    if (!ctx) return tu_finish();
    const fmlp_dtype dt = FMLP_BF16;
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 64, 128, 0, 0, FMLP_ACT_GELU_TANH, true, dt};
    fmlp_mlp *m;
    if (!tu_check(fmlp_mlp_create(ctx, &d, 7, &m) == FMLP_OK, "create: %s", fmlp_last_error())) return tu_finish();
    const int64_t rows = 16;
    fmlp_tensor x, y;
    tu_check(fmlp_tensor_alloc(ctx, dt, rows + 1, 64, &x) == FMLP_OK, "alloc x");
    tu_check(fmlp_tensor_alloc(ctx, dt, rows, 64, &y) == FMLP_OK, "alloc y");
    uint16_t *hx = malloc(sizeof(uint16_t) * (size_t)(rows + 1) * 64);
    tu_fill(dt, hx, (rows + 1) * 64, -1, 1, NULL);
    ctx->be->copy(ctx, x.data, FMLP_DEVICE_CUDA, hx, FMLP_DEVICE_CPU, sizeof(uint16_t) * (size_t)(rows + 1) * 64);
    x.rows = rows;

    for (int i = 0; i < 4; i++) {
        fmlp_mode mode = (fmlp_mode)i;
        fmlp_tensor hx_as_dev = fmlp_tensor_view(hx, dt, rows, 64, 64);
        hx_as_dev.device = FMLP_DEVICE_CUDA;
        tu_expect_fail(fmlp_mlp_forward(m, mode, &hx_as_dev, &y), FMLP_ERR_INVALID_ARGUMENT, "host pointer as device x");
        fmlp_tensor mis = x;
        mis.data = (char *)x.data + 1;
        tu_expect_fail(fmlp_mlp_forward(m, mode, &mis, &y), FMLP_ERR_INVALID_ARGUMENT, "x misaligned by one byte");
        fmlp_tensor zero = x;
        zero.rows = 0;
        fmlp_tensor yz = y;
        yz.rows = 0;
        tu_expect_fail(fmlp_mlp_forward(m, mode, &zero, &yz), FMLP_ERR_SHAPE, "zero rows");
        /* an odd element offset is legal: the kernels fall back to scalar loads */
        fmlp_tensor off = x;
        off.data = (char *)x.data + 2 * 64 + 2;
        off.ld = 64;
        tu_check(fmlp_mlp_forward(m, mode, &off, &y) == FMLP_OK && fmlp_ctx_synchronize(ctx) == FMLP_OK,
                 "%s: x at an odd element offset runs: %s", fmlp_mode_name(mode), fmlp_last_error());
    }
    fmlp_tensor huge;
    tu_expect_fail(fmlp_tensor_alloc(ctx, dt, (int64_t)1 << 26, (int64_t)1 << 24, &huge), FMLP_ERR_OUT_OF_MEMORY,
                   "a 2^51-byte device tensor");
    tu_check(fmlp_mlp_forward(m, FMLP_MODE_FUSED, &x, &y) == FMLP_OK && fmlp_ctx_synchronize(ctx) == FMLP_OK,
             "the context still works after the errors: %s", fmlp_last_error());
    free(hx);
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    fmlp_mlp_destroy(m);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
