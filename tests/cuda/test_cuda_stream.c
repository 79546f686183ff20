/* Why: fmlp_ctx_set_stream lets a caller (PyTorch) put forwards on its own
 * stream and capture them into its own CUDA graph. This checks the per-thread
 * setting, that forwards on a set stream compute the right values, and that
 * inside a caller's capture the kernels land in the caller's graph (the
 * output appears only when that graph is launched) with no capture or wait
 * of fmlp's own. A second context stands in for the caller: its stream is a
 * valid cudaStream_t, and its backend's graph_begin captures one. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "cuda_test.h"

enum { DIM = 64, HIDDEN = 96, ROWS = 9 };

typedef struct {
    fmlp_ctx *ctx;
    void *seen;
} thread_arg;

static void *other_thread(void *p)
{
    thread_arg *a = p;
    fmlp_ctx_get_stream(a->ctx, &a->seen);
    return NULL;
}

static void poison(fmlp_ctx *ctx, fmlp_tensor *dy, uint16_t *h)
{
    tu_poison(FMLP_BF16, h, ROWS * DIM);
    ctx->be->copy(ctx, dy->data, FMLP_DEVICE_CUDA, h, FMLP_DEVICE_CPU, sizeof(uint16_t) * ROWS * DIM);
}

static double err_of(fmlp_ctx *ctx, const fmlp_tensor *dy, const double *ref, uint16_t *h)
{
    if (fmlp_ctx_synchronize(ctx) != FMLP_OK || ct_download(ctx, dy, h) != FMLP_OK) return INFINITY;
    return tu_rel_err(FMLP_BF16, h, DIM, ref, DIM, ROWS, DIM);
}

int main(void)
{
    tu_seed();
    fmlp_ctx *ctx = ct_ctx();
    if (!ctx) return tu_finish();
    fmlp_ctx *caller = ct_ctx();
    if (!caller) return tu_finish();
    const fmlp_dtype dt = FMLP_BF16;
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_GELU_TANH, true, dt};
    fmlp_mlp *m;
    if (!tu_check(fmlp_mlp_create(ctx, &d, 3, &m) == FMLP_OK, "create: %s", fmlp_last_error())) return tu_finish();
    uint16_t *hx = malloc(sizeof(uint16_t) * ROWS * DIM), *hy = malloc(sizeof(uint16_t) * ROWS * DIM);
    double *xr = malloc(sizeof(double) * ROWS * DIM), *ref = malloc(sizeof(double) * ROWS * DIM);
    tu_fill(dt, hx, ROWS * DIM, -1, 1, xr);
    tu_mlp_reference(m, xr, ROWS, ref);
    fmlp_tensor dx, dy;
    tu_check(ct_upload(ctx, dt, hx, ROWS, DIM, DIM, &dx) == FMLP_OK, "upload x");
    tu_check(fmlp_tensor_alloc(ctx, dt, ROWS, DIM, &dy) == FMLP_OK, "alloc y");

    void *own = NULL, *theirs = NULL, *now = NULL;
    fmlp_ctx_get_stream(ctx, &own);
    fmlp_ctx_get_stream(caller, &theirs);
    tu_check(own && theirs && own != theirs, "each context has its own stream (%p, %p)", own, theirs);
    tu_check(fmlp_ctx_set_stream(ctx, theirs) == FMLP_OK && fmlp_ctx_get_stream(ctx, &now) == FMLP_OK && now == theirs,
             "set_stream: forwards now go to the caller's stream");
    thread_arg ta = {ctx, NULL};
    pthread_t th;
    pthread_create(&th, NULL, other_thread, &ta);
    pthread_join(th, NULL);
    tu_check(ta.seen == own, "another thread still sees the context's own stream");

    const fmlp_mode modes[] = {FMLP_MODE_EAGER, FMLP_MODE_COMPILED, FMLP_MODE_FUSED, FMLP_MODE_AUTO};
    for (int i = 0; i < 4; i++) {
        poison(ctx, &dy, hy);
        fmlp_status s = fmlp_mlp_forward(m, modes[i], &dx, &dy);
        const double err = s == FMLP_OK ? err_of(ctx, &dy, ref, hy) : INFINITY;
        tu_check(err <= tu_tol(dt), "%s on the caller's stream: err=%.2e %s", fmlp_mode_name(modes[i]), err,
                 s == FMLP_OK ? "" : fmlp_last_error());
    }

    /* The caller captures its stream; fmlp's graph mode must step aside. */
    fmlp_mlp_set_graph(m, true);
    for (int i = 0; i < 4; i++) {
        poison(ctx, &dy, hy);
        void *capturing = NULL;
        if (!tu_check(caller->be->graph_begin(caller) == FMLP_OK, "caller begins a capture: %s", fmlp_last_error())) break;
        fmlp_ctx_get_stream(caller, &capturing);
        fmlp_ctx_set_stream(ctx, capturing);
        fmlp_status s = fmlp_mlp_forward(m, modes[i], &dx, &dy);
        fmlp_status sync = fmlp_ctx_synchronize(ctx);
        fmlp_tensor hostx = fmlp_tensor_view(hx, dt, ROWS, DIM, DIM);
        fmlp_status host = fmlp_mlp_forward(m, modes[i], &hostx, &dy);
        const char key[] = {'c', 'a', 'l', 'l', 'e', 'r', (char)('0' + i)};
        fmlp_status end = caller->be->graph_end(caller, key, sizeof key, 0);
        tu_check(s == FMLP_OK && sync == FMLP_OK && end == FMLP_OK, "%s: forward inside the caller's capture: %s",
                 fmlp_mode_name(modes[i]), fmlp_last_error());
        tu_check(host == FMLP_ERR_INVALID_ARGUMENT, "%s: a host tensor while captured is refused, not synchronized",
                 fmlp_mode_name(modes[i]));
        /* graph_end launched the caller's graph on the caller's own stream */
        fmlp_ctx_set_stream(ctx, theirs);
        const double err = err_of(ctx, &dy, ref, hy);
        tu_check(err <= tu_tol(dt), "%s: the caller's graph computes the forward: err=%.2e", fmlp_mode_name(modes[i]), err);
    }
    fmlp_mlp_set_graph(m, false);

    tu_check(fmlp_ctx_set_stream(ctx, NULL) == FMLP_OK && fmlp_ctx_get_stream(ctx, &now) == FMLP_OK && now == own,
             "NULL restores the context's own stream");
    fmlp_ctx *many[9] = {0};
    fmlp_status last = FMLP_OK;
    int made = 0;
    for (; made < 9 && last == FMLP_OK; made++) {
        if (fmlp_ctx_create(&(fmlp_ctx_options){FMLP_DEVICE_CUDA, 0, 0, NULL}, &many[made]) != FMLP_OK) break;
        last = fmlp_ctx_set_stream(many[made], theirs);
    }
    tu_check(made == 9 && last == FMLP_ERR_UNSUPPORTED, "a ninth context's stream on one thread is refused: %s",
             fmlp_last_error());
    for (int i = 0; i < 9; i++) {
        fmlp_ctx_set_stream(many[i], NULL);
        fmlp_ctx_destroy(many[i]);
    }
    fmlp_tensor_free(ctx, &dx);
    fmlp_tensor_free(ctx, &dy);
    free(hx);
    free(hy);
    free(xr);
    free(ref);
    fmlp_mlp_destroy(m);
    fmlp_ctx_destroy(caller);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
