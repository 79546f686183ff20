/* Why: forwards reuse cached plans, so a cache bug would show as a wrong
 * answer: a plan for other rows or another mode, a plan freed while a
 * concurrent forward still walks it, or weights changed under a cached plan.
 * Threads cycle through more row counts than there are cache slots, every
 * mode interleaved, each output checked against the reference; then a
 * weight changes between forwards and the next output must follow it. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "test_util.h"

#define CALLERS 4
#define ROW_COUNTS 24 /* more than the cache holds */
#define DIM 24
#define HIDDEN 40

typedef struct {
    fmlp_mlp *mlp;
    int first;
    double worst;
    fmlp_status status;
} caller;

/* ‖forward − reference‖ / ‖reference‖ of one fresh input. */
static double one_forward(fmlp_mlp *m, fmlp_mode mode, int64_t rows, fmlp_status *st)
{
    void *x = malloc((size_t)(rows * DIM) * 4), *y = malloc((size_t)(rows * DIM) * 4);
    double *xr = malloc(sizeof(double) * (size_t)(rows * DIM)), *ref = malloc(sizeof(double) * (size_t)(rows * DIM));
    tu_fill(FMLP_F32, x, rows * DIM, -1, 1, xr);
    tu_poison(FMLP_F32, y, rows * DIM);
    fmlp_tensor tx = fmlp_tensor_view(x, FMLP_F32, rows, DIM, 0), ty = fmlp_tensor_view(y, FMLP_F32, rows, DIM, 0);
    *st = fmlp_mlp_forward(m, mode, &tx, &ty);
    tu_mlp_reference(m, xr, rows, ref);
    double err = *st == FMLP_OK ? tu_rel_err(FMLP_F32, y, DIM, ref, DIM, rows, DIM) : INFINITY;
    free(x);
    free(y);
    free(xr);
    free(ref);
    return err;
}

static void *cycle(void *p)
{
    caller *c = p;
    c->status = FMLP_OK;
    for (int i = 0; i < 3 * ROW_COUNTS && c->status == FMLP_OK; i++) {
        int64_t rows = 1 + (c->first + i) % ROW_COUNTS;
        fmlp_mode mode = (fmlp_mode)((c->first + i) % (FMLP_MODE_AUTO + 1));
        double err = one_forward(c->mlp, mode, rows, &c->status);
        if (!(err <= c->worst)) c->worst = err;
    }
    return NULL;
}

int main(void)
{
    tu_seed();
    fmlp_ctx_options o = fmlp_ctx_options_default();
    o.threads = 2;
    fmlp_ctx *ctx;
    if (!tu_check(fmlp_ctx_create(&o, &ctx) == FMLP_OK, "context")) return tu_finish();
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_SILU, true, FMLP_F32};
    fmlp_mlp *m;
    if (!tu_check(fmlp_mlp_create(ctx, &d, tu_rand_u64(), &m) == FMLP_OK, "create")) return tu_finish();

    caller cs[CALLERS];
    pthread_t th[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        cs[i] = (caller){m, i * 7, 0, FMLP_OK};
        pthread_create(&th[i], NULL, cycle, &cs[i]);
    }
    double worst = 0;
    bool ok = true;
    for (int i = 0; i < CALLERS; i++) {
        pthread_join(th[i], NULL);
        ok = ok && cs[i].status == FMLP_OK;
        if (!(cs[i].worst <= worst)) worst = cs[i].worst;
    }
    tu_check(ok && worst <= tu_tol(FMLP_F32), "%d threads cycling %d row counts x every mode: worst err %.2e", CALLERS,
             ROW_COUNTS, worst);

    /* The plan of a forward survives a weight change; the output follows it. */
    fmlp_status st;
    double before = one_forward(m, FMLP_MODE_FUSED, 5, &st);
    float *w = malloc(sizeof(float) * HIDDEN * DIM);
    tu_fill(FMLP_F32, w, HIDDEN * DIM, -3, 3, NULL);
    bool set = fmlp_mlp_set_weight(m, "up_proj.weight", FMLP_F32, w, HIDDEN, DIM) == FMLP_OK;
    double after = one_forward(m, FMLP_MODE_FUSED, 5, &st);
    tu_check(set && st == FMLP_OK && before <= tu_tol(FMLP_F32) && after <= tu_tol(FMLP_F32),
             "a weight set between two cached-plan forwards is used: err before %.2e, after %.2e", before, after);
    free(w);
    fmlp_mlp_destroy(m);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
