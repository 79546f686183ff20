/* Why: the thread-safety contract. Concurrent forwards on one MLP handle
 * from several threads are safe and bit-identical to a lone forward, and the
 * result does not depend on the worker-thread count. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define CALLERS 4
#define REPEATS 6

typedef struct {
    fmlp_mlp *mlp;
    fmlp_mode mode;
    const void *x;
    void *y;
    int64_t rows, dim, out;
    fmlp_dtype dt;
    fmlp_status status;
} caller;

static void *call(void *p)
{
    caller *c = p;
    fmlp_tensor tx = fmlp_tensor_view((void *)c->x, c->dt, c->rows, c->dim, 0);
    fmlp_tensor ty = fmlp_tensor_view(c->y, c->dt, c->rows, c->out, 0);
    c->status = FMLP_OK;
    for (int i = 0; i < REPEATS && c->status == FMLP_OK; i++) c->status = fmlp_mlp_forward(c->mlp, c->mode, &tx, &ty);
    return NULL;
}

static void concurrent(fmlp_ctx *ctx, fmlp_dtype dt, fmlp_mode mode)
{
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 48, 96, 0, 0, FMLP_ACT_GELU_TANH, true, dt};
    fmlp_mlp *m;
    if (!tu_check(fmlp_mlp_create(ctx, &d, tu_rand_u64(), &m) == FMLP_OK, "create")) return;
    int64_t rows = 37;
    size_t es = fmlp_dtype_size(dt), bytes = (size_t)(rows * 48) * es;
    void *x = malloc(bytes), *want = malloc(bytes);
    tu_fill(dt, x, rows * 48, -1, 1, NULL);
    caller solo = {m, mode, x, want, rows, 48, 48, dt, FMLP_OK};
    call(&solo);
    caller cs[CALLERS];
    pthread_t th[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        cs[i] = solo;
        cs[i].y = malloc(bytes);
        tu_poison(dt, cs[i].y, rows * 48);
        pthread_create(&th[i], NULL, call, &cs[i]);
    }
    bool same = solo.status == FMLP_OK;
    for (int i = 0; i < CALLERS; i++) {
        pthread_join(th[i], NULL);
        same = same && cs[i].status == FMLP_OK && memcmp(cs[i].y, want, bytes) == 0;
        free(cs[i].y);
    }
    tu_check(same, "%d threads x %d forwards, %s %s: bit-identical to a lone forward", CALLERS, REPEATS,
             fmlp_dtype_name(dt), fmlp_mode_name(mode));
    free(x);
    free(want);
    fmlp_mlp_destroy(m);
}

/* The same weights and input on 1 and 2 worker threads. */
static void thread_count_invariance(fmlp_dtype dt, fmlp_mode mode, int64_t rows)
{
    fmlp_ctx *c1, *c2;
    fmlp_ctx_options o = fmlp_ctx_options_default();
    o.threads = 1;
    fmlp_ctx_create(&o, &c1);
    o.threads = 2;
    fmlp_ctx_create(&o, &c2);
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 40, 136, 0, 0, FMLP_ACT_SILU, false, dt};
    uint64_t seed = tu_rand_u64();
    fmlp_mlp *m1, *m2;
    fmlp_mlp_create(c1, &d, seed, &m1);
    fmlp_mlp_create(c2, &d, seed, &m2);
    size_t es = fmlp_dtype_size(dt), bytes = (size_t)(rows * 40) * es;
    void *x = malloc(bytes), *y1 = malloc(bytes), *y2 = malloc(bytes);
    tu_fill(dt, x, rows * 40, -1, 1, NULL);
    tu_poison(dt, y1, rows * 40);
    tu_poison(dt, y2, rows * 40);
    fmlp_tensor tx = fmlp_tensor_view(x, dt, rows, 40, 0), t1 = fmlp_tensor_view(y1, dt, rows, 40, 0),
                t2 = fmlp_tensor_view(y2, dt, rows, 40, 0);
    bool ok = fmlp_mlp_forward(m1, mode, &tx, &t1) == FMLP_OK && fmlp_mlp_forward(m2, mode, &tx, &t2) == FMLP_OK;
    tu_check(ok && memcmp(y1, y2, bytes) == 0, "1 vs 2 worker threads, %s %s rows=%lld: bit-identical",
             fmlp_dtype_name(dt), fmlp_mode_name(mode), (long long)rows);
    free(x);
    free(y1);
    free(y2);
    fmlp_mlp_destroy(m1);
    fmlp_mlp_destroy(m2);
    fmlp_ctx_destroy(c1);
    fmlp_ctx_destroy(c2);
}

int main(void)
{
    tu_seed();
    fmlp_ctx *ctx;
    if (!tu_check(fmlp_ctx_create(NULL, &ctx) == FMLP_OK, "context")) return tu_finish();
    for (int dt = FMLP_F32; dt <= FMLP_BF16; dt++)
        for (int mode = FMLP_MODE_EAGER; mode <= FMLP_MODE_FUSED; mode++) {
            concurrent(ctx, (fmlp_dtype)dt, (fmlp_mode)mode);
            thread_count_invariance((fmlp_dtype)dt, (fmlp_mode)mode, 1);
            thread_count_invariance((fmlp_dtype)dt, (fmlp_mode)mode, 53);
        }
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
