/* Why: see cli_io.h. */
#include "cli_io.h"

#include <string.h>

#include "cli_model.h"

/* A single copy's time is mostly noise at these sizes: the best of a few. */
#define COPY_REPEATS 3

fmlp_status cli_io_alloc(fmlp_ctx *ctx, fmlp_dtype dtype, int64_t rows, int64_t dim, int64_t out_dim, bool host_io,
                         cli_io *io)
{
    memset(io, 0, sizeof *io);
    io->ctx = ctx;
    io->device = fmlp_ctx_device(ctx) != FMLP_DEVICE_CPU;
    io->host_io = host_io && io->device;
    fmlp_status s = fmlp_tensor_alloc_host(ctx, dtype, rows, dim, &io->hx);
    if (s == FMLP_OK) s = fmlp_tensor_alloc_host(ctx, dtype, rows, out_dim, &io->hy);
    if (s == FMLP_OK && io->device) s = fmlp_tensor_alloc(ctx, dtype, rows, dim, &io->dx);
    if (s == FMLP_OK && io->device) s = fmlp_tensor_alloc(ctx, dtype, rows, out_dim, &io->dy);
    if (s != FMLP_OK) {
        fprintf(stderr, "fmlp: allocating x (%lld, %lld) and y (%lld, %lld): %s\n", (long long)rows, (long long)dim,
                (long long)rows, (long long)out_dim, fmlp_last_error());
        cli_io_free(io);
    }
    return s;
}

void cli_io_free(cli_io *io)
{
    fmlp_tensor_free(io->ctx, &io->hx);
    fmlp_tensor_free(io->ctx, &io->hy);
    fmlp_tensor_free(io->ctx, &io->dx);
    fmlp_tensor_free(io->ctx, &io->dy);
}

static fmlp_status timed_copy(fmlp_ctx *ctx, fmlp_tensor *dst, const fmlp_tensor *src, cli_copy *c)
{
    c->bytes = src->rows * src->cols * (int64_t)fmlp_dtype_size(src->dtype);
    c->seconds = 0;
    for (int i = 0; i < COPY_REPEATS; i++) {
        double t0 = cli_now();
        fmlp_status s = fmlp_tensor_copy(ctx, dst, src);
        if (s == FMLP_OK) s = fmlp_ctx_synchronize(ctx);
        if (s != FMLP_OK) return s;
        double t = cli_now() - t0;
        if (i == 0 || t < c->seconds) c->seconds = t;
    }
    c->done = true;
    return FMLP_OK;
}

fmlp_status cli_io_upload(cli_io *io)
{
    return io->device ? timed_copy(io->ctx, &io->dx, &io->hx, &io->in) : FMLP_OK;
}

fmlp_status cli_io_download(cli_io *io)
{
    return io->device ? timed_copy(io->ctx, &io->hy, &io->dy, &io->out) : FMLP_OK;
}

fmlp_tensor cli_io_x(const cli_io *io) { return io->device && !io->host_io ? io->dx : io->hx; }

fmlp_tensor cli_io_y(const cli_io *io) { return io->device && !io->host_io ? io->dy : io->hy; }

static void print_copy(FILE *f, const char *what, const cli_copy *c)
{
    char b[32], t[32], r[32];
    fmlp_si_format((double)c->bytes, "B", b, sizeof b);
    if (c->seconds < 1e-3)
        snprintf(t, sizeof t, "%.1f us", c->seconds * 1e6);
    else
        snprintf(t, sizeof t, "%.2f ms", c->seconds * 1e3);
    fmlp_si_format(c->seconds > 0 ? (double)c->bytes / c->seconds : 0, "B/s", r, sizeof r);
    fprintf(f, " %s %s in %s (%s);", what, b, t, r);
}

void cli_io_print(const cli_io *io, FILE *f)
{
    if (!io->device || !(io->in.done || io->out.done)) return;
    fprintf(f, "host <-> device copies (pinned host memory):");
    if (io->in.done) print_copy(f, "x to the device", &io->in);
    if (io->out.done) print_copy(f, "y to the host", &io->out);
    fprintf(f, " %s\n", io->host_io ? "inside every forward timed above (--host-io)"
                                    : "outside the per-forward times, which are device-resident");
}
