/* Why: sizes, counts and FLOPs are products of numbers users choose, and
 * each product that does not fit int64 must come back as an error naming
 * the values and what to do, never as a wrapped size (a tiny allocation
 * written past) or a silently wrong count. Every tensor that enters the API
 * is checked the same way: dtype, device, shape and row stride. Views here
 * point at small buffers while claiming huge shapes: any check that came
 * after touching memory would crash under ASan instead of failing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "test_util.h"

/* Clears the last message first, so a failure that sets none is caught. */
#define EXPECT_FAIL(call, want, what)          \
    do {                                       \
        fmlp_clear_error();                    \
        tu_expect_fail((call), (want), (what)); \
    } while (0)

static bool says(const char *word)
{
    return tu_check(strstr(fmlp_last_error(), word) != NULL, "  the message says \"%s\": %s", word, fmlp_last_error());
}

static void arithmetic(void)
{
    int64_t r = 7;
    tu_check(fmlp_mul_i64(INT64_C(3037000499), INT64_C(3037000499), &r) && r == INT64_C(9223372030926249001),
             "mul: the largest square that fits");
    r = 7;
    tu_check(!fmlp_mul_i64(INT64_C(3037000500), INT64_C(3037000500), &r) && r == 7, "mul: overflow, out untouched");
    tu_check(!fmlp_mul_i64(INT64_MIN, -1, &r), "mul: INT64_MIN x -1 overflows");
    tu_check(!fmlp_mul_i64(INT64_C(1) << 62, 4, &r), "mul: 2^62 x 4 (sizeof(float)) overflows");
    tu_check(fmlp_mul_i64(-5, 6, &r) && r == -30, "mul: signs");
    tu_check(fmlp_add_i64(INT64_MAX - 1, 1, &r) && r == INT64_MAX, "add: to the limit");
    tu_check(!fmlp_add_i64(INT64_MAX, 1, &r), "add: past it");
    tu_check(!fmlp_add_i64(INT64_MIN, -1, &r), "add: below INT64_MIN");
    tu_check(!fmlp_mul_i64(2, 3, NULL) && !fmlp_add_i64(2, 3, NULL), "NULL out is refused");
}

static void tensor_alloc(fmlp_ctx *ctx)
{
    fmlp_tensor t;
    memset(&t, 0, sizeof t);
    EXPECT_FAIL(fmlp_tensor_alloc(ctx, FMLP_F32, INT64_C(1) << 48, 16384, &t), FMLP_ERR_INVALID_ARGUMENT,
                "alloc of 2^48 x 16384 f32 (2^64 bytes)");
    says("281474976710656");
    says("fewer rows");
    tu_check(strstr(fmlp_last_error(), "fmlp_tensor_alloc") == NULL, "  and names no internal function: %s",
             fmlp_last_error());
    EXPECT_FAIL(fmlp_tensor_alloc(ctx, FMLP_BF16, INT64_C(1) << 31, INT64_C(1) << 31, &t), FMLP_ERR_INVALID_ARGUMENT,
                "alloc of 2^31 x 2^31 bf16 (2^63 bytes)");
    EXPECT_FAIL(fmlp_tensor_alloc(ctx, (fmlp_dtype)55, 4, 8, &t), FMLP_ERR_INVALID_ARGUMENT, "alloc with dtype 55");
    says("55");
    says("f32");
    EXPECT_FAIL(fmlp_tensor_alloc_host(ctx, (fmlp_dtype)-1, 4, 8, &t), FMLP_ERR_INVALID_ARGUMENT, "alloc_host with dtype -1");
    EXPECT_FAIL(fmlp_tensor_alloc(ctx, FMLP_F32, -1, 8, &t), FMLP_ERR_INVALID_ARGUMENT, "alloc with -1 rows");
    tu_check(t.data == NULL, "no memory handed out on failure");
    if (tu_check(fmlp_tensor_alloc(ctx, FMLP_F32, 0, 8, &t) == FMLP_OK, "an empty tensor is fine")) fmlp_tensor_free(ctx, &t);
}

static void tensor_copy(fmlp_ctx *ctx)
{
    float a[64], b[64];
    tu_fill(FMLP_F32, a, 64, -1, 1, NULL);
    tu_poison(FMLP_F32, b, 64);
    fmlp_tensor src = fmlp_tensor_view(a, FMLP_F32, 8, 8, 8), dst = fmlp_tensor_view(b, FMLP_F32, 8, 8, 8), bad;
    bad = dst;
    bad.ld = 2;
    EXPECT_FAIL(fmlp_tensor_copy(ctx, &bad, &src), FMLP_ERR_SHAPE, "copy into ld 2 for 8 columns");
    says("row stride 2");
    bad = src;
    bad.ld = 7;
    EXPECT_FAIL(fmlp_tensor_copy(ctx, &dst, &bad), FMLP_ERR_SHAPE, "copy from ld 7 for 8 columns");
    bad = src;
    bad.dtype = (fmlp_dtype)55;
    fmlp_tensor bad_dst = dst;
    bad_dst.dtype = (fmlp_dtype)55;
    EXPECT_FAIL(fmlp_tensor_copy(ctx, &bad_dst, &bad), FMLP_ERR_INVALID_ARGUMENT, "copy of dtype 55 into dtype 55");
    says("dtype 55");
    bad = src;
    bad.device = (fmlp_device)9;
    EXPECT_FAIL(fmlp_tensor_copy(ctx, &dst, &bad), FMLP_ERR_INVALID_ARGUMENT, "copy from device 9");
    bad = src;
    bad.rows = -3;
    EXPECT_FAIL(fmlp_tensor_copy(ctx, &dst, &bad), FMLP_ERR_SHAPE, "copy of -3 rows");
    /* rows x ld wraps: the view claims far more than the 256 bytes behind it */
    bad = fmlp_tensor_view(a, FMLP_F32, INT64_C(1) << 40, 8, INT64_C(1) << 40);
    fmlp_tensor big_dst = fmlp_tensor_view(b, FMLP_F32, INT64_C(1) << 40, 8, INT64_C(1) << 40);
    EXPECT_FAIL(fmlp_tensor_copy(ctx, &big_dst, &bad), FMLP_ERR_INVALID_ARGUMENT, "copy of 2^40 rows 2^40 apart");
    says("smaller row stride");
    EXPECT_FAIL(fmlp_tensor_copy(ctx, &dst, NULL), FMLP_ERR_INVALID_ARGUMENT, "copy from NULL");
    bool untouched = true;
    for (int i = 0; i < 64; i++) untouched = untouched && b[i] != b[i];
    tu_check(untouched, "no failed copy wrote anything");
    tu_check(fmlp_tensor_copy(ctx, &dst, &src) == FMLP_OK && memcmp(a, b, sizeof a) == 0, "a good copy still works");
}

static void plans_and_forwards(fmlp_ctx *ctx)
{
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 16384, 1, 0, 0, FMLP_ACT_GELU_TANH, false, FMLP_F32};
    fmlp_mlp *m;
    if (!tu_check(fmlp_mlp_create(ctx, &d, 1, &m) == FMLP_OK, "create 16384 -> 1 -> 16384")) return;
    fmlp_plan_info *plan = malloc(sizeof *plan);
    /* rows x dim x hidden FLOPs: 2^48 x 2^14 x 2 x 2 = 2^64 */
    EXPECT_FAIL(fmlp_mlp_plan(m, FMLP_MODE_FUSED, INT64_C(1) << 48, plan), FMLP_ERR_INVALID_ARGUMENT,
                "plan of 2^48 rows (2^64 FLOPs)");
    says("fewer rows");
    EXPECT_FAIL(fmlp_mlp_plan(m, FMLP_MODE_EAGER, INT64_MAX, plan), FMLP_ERR_INVALID_ARGUMENT, "plan of INT64_MAX rows");
    tu_check(fmlp_mlp_plan(m, FMLP_MODE_EAGER, 1 << 20, plan) == FMLP_OK && plan->flops > 0 && plan->bytes > 0,
             "plan of 2^20 rows counts: %lld FLOPs", (long long)plan->flops);
    float x[16384], y[16384];
    tu_fill(FMLP_F32, x, 16384, -1, 1, NULL);
    fmlp_tensor tx = fmlp_tensor_view(x, FMLP_F32, INT64_C(1) << 48, 16384, 16384);
    fmlp_tensor ty = fmlp_tensor_view(y, FMLP_F32, INT64_C(1) << 48, 16384, 16384);
    EXPECT_FAIL(fmlp_mlp_forward(m, FMLP_MODE_FUSED, &tx, &ty), FMLP_ERR_INVALID_ARGUMENT,
                "forward of 2^48 x 16384 f32 views (2^64 bytes each)");
    tx = fmlp_tensor_view(x, FMLP_F32, INT64_C(1) << 40, 16384, INT64_C(1) << 40);
    EXPECT_FAIL(fmlp_mlp_forward(m, FMLP_MODE_EAGER, &tx, &ty), FMLP_ERR_INVALID_ARGUMENT,
                "forward of x with rows x ld past int64");
    tx = fmlp_tensor_view(x, (fmlp_dtype)55, 1, 16384, 16384);
    EXPECT_FAIL(fmlp_mlp_forward(m, FMLP_MODE_EAGER, &tx, &ty), FMLP_ERR_INVALID_ARGUMENT, "forward of x in dtype 55");
    says("dtype 55");
    tx = fmlp_tensor_view(x, FMLP_F32, 1, 16384, 16384);
    tx.device = (fmlp_device)-4;
    EXPECT_FAIL(fmlp_mlp_forward(m, FMLP_MODE_EAGER, &tx, &ty), FMLP_ERR_INVALID_ARGUMENT, "forward of x on device -4");
    float w[4];
    EXPECT_FAIL(fmlp_mlp_get_weight(m, "up_proj.weight", w, INT64_C(1) << 62, 4), FMLP_ERR_SHAPE,
                "get_weight into a [2^62, 4] buffer (2^64 values)");
    EXPECT_FAIL(fmlp_mlp_get_weight(m, "up_proj.weight", w, -16384, -1), FMLP_ERR_SHAPE, "get_weight into [-16384, -1]");
    double xr[16], yr[16];
    EXPECT_FAIL(fmlp_mlp_reference(m, xr, INT64_C(1) << 50, yr), FMLP_ERR_INVALID_ARGUMENT, "reference of 2^50 rows");
    free(plan);
    fmlp_mlp_destroy(m);
}

static void schedules(fmlp_ctx *ctx)
{
    fmlp_profiler_options o = fmlp_profiler_options_default();
    o.wait = 2147483647;
    o.active = 1;
    fmlp_profiler *p = NULL;
    EXPECT_FAIL(fmlp_profiler_create(ctx, &o, &p), FMLP_ERR_INVALID_ARGUMENT, "schedule wait INT_MAX + active 1");
    says("2147483647");
    o = fmlp_profiler_options_default();
    o.skip_first = 2000000000;
    o.warmup = 2000000000;
    o.active = 3;
    EXPECT_FAIL(fmlp_profiler_create(ctx, &o, &p), FMLP_ERR_INVALID_ARGUMENT, "schedule skip_first + warmup past INT_MAX");
    tu_check(p == NULL, "no profiler handed out");
}

int main(void)
{
    tu_seed();
    arithmetic();
    fmlp_ctx *ctx = tu_ctx(2);
    if (ctx) {
        tensor_alloc(ctx);
        tensor_copy(ctx);
        plans_and_forwards(ctx);
        schedules(ctx);
        fmlp_ctx_destroy(ctx);
    }
    return tu_finish();
}
