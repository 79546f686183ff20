/* Why: where a forward's tensors live decides what the CLI measures. On a
 * GPU, x and y are allocated on the device once and every timed forward is
 * device-resident, as a PyTorch user times a model whose tensors are
 * already on the GPU; host copies happen only where the command needs
 * them (--input, --output) or where --host-io asks for the round trip on
 * purpose, always from pinned host memory, and are measured and reported
 * on a line of their own instead of hiding inside the forward time. */
#ifndef FMLP_CLI_IO_H
#define FMLP_CLI_IO_H

#include <stdbool.h>
#include <stdio.h>

#include "fmlp.h"

/* One direction of host<->device traffic: the best of a few copies. */
typedef struct {
    int64_t bytes;
    double seconds;
    bool done;
} cli_copy;

typedef struct {
    fmlp_ctx *ctx;
    bool device;   /* the context's device is not the host */
    bool host_io;  /* forwards take the host tensors (the copies inside them are timed) */
    fmlp_tensor hx, hy; /* host side: pinned on a GPU; the tensors themselves on the CPU */
    fmlp_tensor dx, dy; /* device side (GPU only) */
    cli_copy in, out;
} cli_io;

/* x: (rows, dim), y: (rows, out_dim) in `dtype`; fill io->hx, then call
 * cli_io_upload. Prints its own error. */
fmlp_status cli_io_alloc(fmlp_ctx *ctx, fmlp_dtype dtype, int64_t rows, int64_t dim, int64_t out_dim, bool host_io,
                         cli_io *io);
void cli_io_free(cli_io *io);
/* x to the device (timed; nothing to do on the CPU). */
fmlp_status cli_io_upload(cli_io *io);
/* y back to io->hy (timed; nothing to do on the CPU). */
fmlp_status cli_io_download(cli_io *io);
/* The tensors forwards take. */
fmlp_tensor cli_io_x(const cli_io *io);
fmlp_tensor cli_io_y(const cli_io *io);
/* "host <-> device (pinned): x in 12.58 MB, 0.27 ms, 46.1 GB/s; ..." when
 * anything crossed; nothing on the CPU. */
void cli_io_print(const cli_io *io, FILE *f);

#endif
