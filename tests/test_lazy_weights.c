/* Why: a plan must never cost the weights. Creating an MLP and asking for
 * its plans allocates nothing large (a 65536 x 65536 f32 GeGLU would be
 * 51 GB); its weights are drawn from the seed at their first use, and are
 * then exactly the weights that seed gives, whichever call uses them
 * first. A failed first use leaves the MLP as it was. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/alloc.h"
#include "test_util.h"

#define DIM 24
#define HIDDEN 40

static long maxrss_kb(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

static void huge_plan(fmlp_ctx *ctx)
{
    long before = maxrss_kb();
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 65536, 65536, 0, 0, FMLP_ACT_GELU_TANH, true, FMLP_F32};
    fmlp_mlp *m;
    if (!tu_check(fmlp_mlp_create(ctx, &d, 1, &m) == FMLP_OK, "create a 65536 x 65536 f32 GeGLU (51 GB of weights)"))
        return;
    fmlp_plan_info *plan = malloc(sizeof *plan);
    bool ok = true;
    for (int mode = 0; mode < FMLP_MODE_COUNT; mode++)
        ok = ok && fmlp_mlp_plan(m, (fmlp_mode)mode, 8192, plan) == FMLP_OK && plan->n_kernels > 0;
    tu_check(ok, "its plan in every mode");
    const char *name = "";
    int64_t rows = 0, cols = 0;
    ok = fmlp_mlp_tensor_info(m, 0, &name, &rows, &cols) == FMLP_OK;
    tu_check(ok && rows == 65536 && cols == 65536, "its tensor list: %s [%lld, %lld]", name, (long long)rows,
             (long long)cols);
    long grown = maxrss_kb() - before;
    tu_check(grown < 100 * 1024, "max RSS grew by %ld kB (< 100 MB)", grown);
    free(plan);
    fmlp_mlp_destroy(m);
}

static fmlp_mlp *make(fmlp_ctx *ctx, uint64_t seed)
{
    fmlp_mlp_desc d = {FMLP_BLOCK_STACK, DIM, HIDDEN, 16, 3, FMLP_ACT_SILU, true, FMLP_F32};
    fmlp_mlp *m = NULL;
    fmlp_mlp_create(ctx, &d, seed, &m);
    return m;
}

/* Every tensor of a and b, compared bit for bit. */
static bool same_weights(const fmlp_mlp *a, const fmlp_mlp *b)
{
    float wa[HIDDEN * HIDDEN], wb[HIDDEN * HIDDEN];
    for (int i = 0; i < fmlp_mlp_tensor_count(a); i++) {
        const char *name;
        int64_t rows, cols;
        fmlp_mlp_tensor_info(a, i, &name, &rows, &cols);
        tu_poison(FMLP_F32, wa, rows * cols);
        tu_poison(FMLP_F32, wb, rows * cols);
        if (fmlp_mlp_get_weight(a, name, wa, rows, cols) != FMLP_OK ||
            fmlp_mlp_get_weight(b, name, wb, rows, cols) != FMLP_OK || memcmp(wa, wb, (size_t)(rows * cols) * 4) != 0)
            return false;
    }
    return true;
}

static bool forward_ok(fmlp_mlp *m)
{
    float x[5 * DIM], y[5 * 16];
    double xd[5 * DIM], ref[5 * 16];
    tu_fill(FMLP_F32, x, 5 * DIM, -1, 1, xd);
    tu_poison(FMLP_F32, y, 5 * 16);
    fmlp_tensor tx = fmlp_tensor_view(x, FMLP_F32, 5, DIM, DIM), ty = fmlp_tensor_view(y, FMLP_F32, 5, 16, 16);
    return fmlp_mlp_forward(m, FMLP_MODE_FUSED, &tx, &ty) == FMLP_OK && fmlp_mlp_reference(m, xd, 5, ref) == FMLP_OK &&
           tu_rel_err(FMLP_F32, y, 16, ref, 16, 5, 16) < tu_tol(FMLP_F32);
}

static void first_use(fmlp_ctx *ctx)
{
    uint64_t seed = tu_rand_u64();
    fmlp_mlp *by_get = make(ctx, seed), *by_forward = make(ctx, seed), *by_set = make(ctx, seed), *other = make(ctx, seed + 1);
    if (!tu_check(by_get && by_forward && by_set && other, "four small MLPs")) return;
    tu_check(forward_ok(by_forward), "a forward first: right against the reference");
    tu_check(same_weights(by_get, by_forward), "weights read first equal those a forward made first");
    float w[HIDDEN * DIM];
    tu_fill(FMLP_F32, w, HIDDEN * DIM, -1, 1, NULL);
    tu_check(fmlp_mlp_set_weight(by_set, "0.weight", FMLP_F32, w, HIDDEN, DIM) == FMLP_OK, "set_weight first");
    float back[HIDDEN * HIDDEN], want[HIDDEN * HIDDEN];
    tu_check(fmlp_mlp_get_weight(by_set, "2.weight", back, HIDDEN, HIDDEN) == FMLP_OK &&
                 fmlp_mlp_get_weight(by_get, "2.weight", want, HIDDEN, HIDDEN) == FMLP_OK &&
                 memcmp(back, want, sizeof back) == 0,
             "  the other layers keep the seed's values");
    tu_check(!same_weights(by_get, other), "another seed gives other weights");
    fmlp_mlp_destroy(by_get);
    fmlp_mlp_destroy(by_forward);
    fmlp_mlp_destroy(by_set);
    fmlp_mlp_destroy(other);
}

/* Each allocation of the first forward fails in turn: the forward says so,
 * and the next one (nothing failing) is right. */
static void failed_first_use(fmlp_ctx *ctx)
{
    int failed = 0, right = 0, tries = 0;
    for (int64_t n = 1; n < 64; n++) {
        fmlp_mlp *m = make(ctx, 7);
        if (!m) break;
        float x[5 * DIM], y[5 * 16];
        tu_fill(FMLP_F32, x, 5 * DIM, -1, 1, NULL);
        fmlp_tensor tx = fmlp_tensor_view(x, FMLP_F32, 5, DIM, DIM), ty = fmlp_tensor_view(y, FMLP_F32, 5, 16, 16);
        fmlp_alloc_test_arm(n, 0);
        fmlp_status s = fmlp_mlp_forward(m, FMLP_MODE_EAGER, &tx, &ty);
        bool fired = fmlp_alloc_test_fired();
        fmlp_alloc_test_disarm();
        if (!fired) {
            fmlp_mlp_destroy(m);
            break;
        }
        tries++;
        failed += s == FMLP_ERR_OUT_OF_MEMORY;
        right += forward_ok(m);
        fmlp_mlp_destroy(m);
    }
    tu_check(tries > 3 && failed == tries && right == tries,
             "each of the first forward's %d allocations failing: %d forwards said out of memory, %d retries right",
             tries, failed, right);
}

int main(void)
{
    tu_seed();
    fmlp_ctx *ctx = tu_ctx(1);
    if (!ctx) return tu_finish();
    huge_plan(ctx);
    first_use(ctx);
    failed_first_use(ctx);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
