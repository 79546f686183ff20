/* The tutorial's GeGLU MLP split over several GPUs, one process per GPU,
 * through the public API only: how a serving program that already runs a
 * process per GPU (as torchrun or MPI start them) uses fmlp's tensor
 * parallelism. fmlp never exchanges the ranks' NCCL id itself; here the
 * caller passes it through a file: rank 0 makes it and writes it, the
 * others wait for the file and read it.
 *
 * Each rank builds the same full MLP on the host (the same seed), keeps
 * its slice on its GPU (fmlp_mlp_shard), joins (fmlp_tp_init_rank), runs
 * its forward with the all-reduce of y (fmlp_tp_forward) and times it.
 * Rank 0 prints its plan and checks y against the unsharded MLP on the
 * CPU.
 *
 *   cmake --build build --target tp_ranks
 *   rm -f /tmp/fmlp-tp.id
 *   for r in 0 1; do ./build/examples/tp_ranks $r 2 /tmp/fmlp-tp.id & done; wait
 *
 * Rank r runs on GPU r; give ID_FILE a path no earlier run left behind
 * (rank 0 removes it once every rank has joined). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fmlp.h"

enum { DIM = 768, HIDDEN = 3072, ROWS = 512, ITERS = 50, WAIT_S = 60 };

static int fail(int rank, const char *what)
{
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, fmlp_last_error());
    return 1;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Rank 0 makes the id and writes it whole (fmlp_file_write renames a
 * finished file into place); the others wait until it is there. */
static fmlp_status share_id(int rank, const char *path, fmlp_tp_id *id)
{
    if (rank == 0) {
        fmlp_status s = fmlp_tp_unique_id(id);
        return s == FMLP_OK ? fmlp_file_write(path, id->bytes, sizeof id->bytes) : s;
    }
    for (double t0 = now_s(); now_s() - t0 < WAIT_S; usleep(10000)) {
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        const size_t got = fread(id->bytes, 1, sizeof id->bytes, f);
        fclose(f);
        if (got == sizeof id->bytes) return FMLP_OK;
    }
    fprintf(stderr, "rank %d: no NCCL id in %s after %d s; start rank 0 with the same file\n", rank, path, WAIT_S);
    return FMLP_ERR_IO;
}

/* The same x on every rank, never 0. */
static void fill_x(float *x, int64_t n)
{
    uint64_t st = 12345;
    for (int64_t i = 0; i < n; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        const float v = (float)((double)(st >> 11) / 9007199254740992.0) * 2.0f - 1.0f;
        x[i] = v == 0.0f ? 0.5f : v;
    }
}

/* ‖y − ref‖ / ‖ref‖ of two host bf16 tensors of n elements. */
static double rel_err(const uint16_t *y, const uint16_t *ref, int64_t n)
{
    float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
    double num = 0, den = 0;
    if (a && b) {
        fmlp_convert_buffer(FMLP_F32, a, FMLP_BF16, y, n);
        fmlp_convert_buffer(FMLP_F32, b, FMLP_BF16, ref, n);
        for (int64_t i = 0; i < n; i++) {
            num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
            den += (double)b[i] * b[i];
        }
    }
    free(a);
    free(b);
    return a && b && den > 0 ? sqrt(num / den) : INFINITY;
}

/* Rank 0: the plan, and y against the unsharded forward on the CPU. */
static int report(fmlp_tp *tp, fmlp_mlp *shard, fmlp_mlp *full, fmlp_ctx *host, const fmlp_tensor *hx,
                  const fmlp_tensor *hy)
{
    fmlp_tp_plan_info plan;
    if (fmlp_tp_plan(tp, shard, FMLP_MODE_FUSED, ROWS, &plan) != FMLP_OK) return fail(0, "plan");
    fmlp_tp_plan_print(&plan, stdout);
    fmlp_tensor ref;
    if (fmlp_tensor_alloc(host, FMLP_BF16, ROWS, DIM, &ref) != FMLP_OK) return fail(0, "reference y");
    int status = 0;
    if (fmlp_mlp_forward(full, FMLP_MODE_FUSED, hx, &ref) != FMLP_OK) {
        status = fail(0, "the unsharded forward");
    } else {
        const double err = rel_err(hy->data, ref.data, (int64_t)ROWS * DIM);
        printf("rank 0: y against the unsharded MLP on the CPU: relative error %.2e (bf16 bound 1e-2)\n", err);
        status = err <= 1e-2 ? 0 : 1;
    }
    fmlp_tensor_free(host, &ref);
    return status;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s RANK WORLD ID_FILE   (one process per GPU; rank r on GPU r)\n", argv[0]);
        return 2;
    }
    const int rank = atoi(argv[1]), world = atoi(argv[2]);
    const char *id_path = argv[3];
    if (world < 1 || rank < 0 || rank >= world) {
        fprintf(stderr, "rank %s of world %s: give a world of at least 1 and a rank in 0..world-1\n", argv[1], argv[2]);
        return 2;
    }
    fmlp_ctx_options co = fmlp_ctx_options_default();
    fmlp_ctx *host = NULL, *gpu = NULL;
    fmlp_mlp *full = NULL, *shard = NULL;
    fmlp_tp *tp = NULL;
    fmlp_tensor hx = {0}, hy = {0}, x = {0}, y = {0};
    fmlp_tp_id id;
    const fmlp_mlp_desc d = {FMLP_BLOCK_GATED, DIM, HIDDEN, 0, 0, FMLP_ACT_GELU_TANH, true, FMLP_BF16};
    int status = 1;
    co.threads = 1;
    if (fmlp_ctx_create(&co, &host) != FMLP_OK) return fail(rank, "host context");
    co.device = FMLP_DEVICE_CUDA;
    co.device_index = rank;
    if (fmlp_ctx_create(&co, &gpu) != FMLP_OK) {
        status = fail(rank, "GPU context");
    } else if (fmlp_mlp_create(host, &d, 0, &full) != FMLP_OK || fmlp_mlp_shard(full, gpu, rank, world, &shard) != FMLP_OK) {
        status = fail(rank, "this rank's shard");
    } else if (share_id(rank, id_path, &id) != FMLP_OK) {
        status = 1;
    } else if (fmlp_tp_init_rank(gpu, &id, rank, world, &tp) != FMLP_OK) {
        status = fail(rank, "joining the other ranks");
    } else if (fmlp_tensor_alloc_host(gpu, FMLP_BF16, ROWS, DIM, &hx) != FMLP_OK ||
               fmlp_tensor_alloc_host(gpu, FMLP_BF16, ROWS, DIM, &hy) != FMLP_OK ||
               fmlp_tensor_alloc(gpu, FMLP_BF16, ROWS, DIM, &x) != FMLP_OK ||
               fmlp_tensor_alloc(gpu, FMLP_BF16, ROWS, DIM, &y) != FMLP_OK) {
        status = fail(rank, "x and y");
    } else {
        if (rank == 0) remove(id_path);
        float *xf = malloc(sizeof(float) * ROWS * DIM);
        fmlp_status s = xf ? FMLP_OK : FMLP_ERR_OUT_OF_MEMORY;
        if (xf) {
            fill_x(xf, (int64_t)ROWS * DIM);
            fmlp_convert_buffer(FMLP_BF16, hx.data, FMLP_F32, xf, (int64_t)ROWS * DIM);
            free(xf);
        }
        if (s == FMLP_OK) s = fmlp_tensor_copy(gpu, &x, &hx);
        if (s == FMLP_OK) s = fmlp_tp_forward(tp, shard, FMLP_MODE_FUSED, &x, &y);
        if (s == FMLP_OK) s = fmlp_ctx_synchronize(gpu);
        const double t0 = now_s();
        for (int i = 0; i < ITERS && s == FMLP_OK; i++) s = fmlp_tp_forward(tp, shard, FMLP_MODE_FUSED, &x, &y);
        if (s == FMLP_OK) s = fmlp_ctx_synchronize(gpu);
        const double per = (now_s() - t0) / ITERS;
        if (s == FMLP_OK) s = fmlp_tensor_copy(gpu, &hy, &y);
        if (s != FMLP_OK) {
            status = fail(rank, "the forward");
        } else {
            printf("rank %d of %d (GPU %d): %.1f us per forward of %d rows, all-reduce included\n", rank, world, rank,
                   per * 1e6, ROWS);
            status = rank == 0 ? report(tp, shard, full, host, &hx, &hy) : 0;
        }
    }
    fmlp_tensor_free(gpu, &hx);
    fmlp_tensor_free(gpu, &hy);
    fmlp_tensor_free(gpu, &x);
    fmlp_tensor_free(gpu, &y);
    fmlp_tp_destroy(tp);
    fmlp_mlp_destroy(shard);
    fmlp_mlp_destroy(full);
    fmlp_ctx_destroy(gpu);
    fmlp_ctx_destroy(host);
    return status;
}
