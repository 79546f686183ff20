/* Why: fmlp_st_open promises that once a file opens, every tensor lies in
 * the mapping with exactly the bytes its shape says. Each input is written
 * to an in-memory file and opened; every tensor is then found and read in
 * all three dtypes, and the MLP loader infers a description and, when it is
 * small, loads the file into such an MLP. ASan/UBSan turn any out-of-bounds
 * access or overflow into a crash. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fmlp.h"

static fmlp_ctx *g_ctx;

static void read_all(const fmlp_st_file *f, size_t size)
{
    for (int i = 0; i < fmlp_st_count(f); i++) {
        const char *name = fmlp_st_name(f, i);
        fmlp_dtype dt;
        int64_t rows, cols;
        if (!name || fmlp_st_find(f, name, &dt, &rows, &cols, NULL) != FMLP_OK) continue;
        if (rows < 0 || cols < 0) abort();
        if (rows == 0 || cols == 0) continue;
        /* The tensor's bytes lie inside the input, so its size is bounded by it. */
        if (rows > (int64_t)size || cols > (int64_t)size || (uint64_t)(rows * cols) * fmlp_dtype_size(dt) > size)
            abort();
        float *out = malloc((size_t)(rows * cols) * sizeof(float));
        if (!out) continue;
        for (int d = FMLP_F32; d <= FMLP_F16; d++)
            if (fmlp_st_read(f, name, (fmlp_dtype)d, out, rows, cols) != FMLP_OK) abort();
        if (fmlp_st_read(f, name, FMLP_F32, out, rows + 1, cols) != FMLP_ERR_SHAPE) abort();
        free(out);
    }
}

static void load_mlp(const char *path)
{
    fmlp_mlp_desc d = {.act = FMLP_ACT_RELU, .dtype = FMLP_F32};
    if (fmlp_mlp_desc_from_safetensors(path, NULL, &d) != FMLP_OK) return;
    if (d.dim > 64 || d.hidden > 64 || d.out_dim > 64) return;
    fmlp_mlp *m = NULL;
    if (fmlp_mlp_create(g_ctx, &d, 1, &m) != FMLP_OK) return;
    fmlp_mlp_load_safetensors(m, path, NULL);
    fmlp_mlp_destroy(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_ctx) {
        fmlp_ctx_options opt = fmlp_ctx_options_default();
        opt.threads = 1;
        if (fmlp_ctx_create(&opt, &g_ctx) != FMLP_OK) abort();
    }
    int fd = memfd_create("fuzz.safetensors", MFD_CLOEXEC);
    if (fd < 0) abort();
    if (size && write(fd, data, size) != (ssize_t)size) abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

    fmlp_st_file *f = NULL;
    fmlp_status st = fmlp_st_open(path, &f);
    if (st == FMLP_OK) {
        read_all(f, size);
        fmlp_st_close(f);
        load_mlp(path);
    } else if (f || !fmlp_last_error()[0]) {
        abort();
    }
    close(fd);
    return 0;
}
