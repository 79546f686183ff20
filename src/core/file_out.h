/* Why: every file fmlp writes (traces, tables, SVGs, safetensors, the
 * ceilings cache, the CLI's JSON and CSV) is whole or absent. It is written
 * to a temporary file beside its target, every write checked, flushed to
 * disk, and renamed over the target only when all of that succeeded; any
 * failure removes the temporary file and is an error, so a full disk never
 * leaves half a file or a previous file overwritten. A symlink is written
 * through: the target it points at is replaced and the link stays. A path
 * that names something other than a regular file (a device such as
 * /dev/stdout or /dev/full, a FIFO) cannot be replaced and is written
 * directly, still with every write checked. */
#ifndef FMLP_CORE_FILE_OUT_H
#define FMLP_CORE_FILE_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fmlp.h"

typedef struct {
    const char *path; /* as given, for messages */
    char *target;     /* the file replaced: path with its symlinks followed */
    char *tmp;        /* the temporary beside it; NULL when writing directly */
    int fd;
    FILE *stream;     /* fmlp_file_out_stream's, owning fd once made */
    int err;          /* errno of the first failure, kept until commit */
    int64_t written;
} fmlp_file_out;

/* Creates the temporary file for `path` (or opens a non-regular path). */
fmlp_status fmlp_file_out_open(fmlp_file_out *o, const char *path);
/* Appends bytes; false once anything failed (commit reports it). */
bool fmlp_file_out_write(fmlp_file_out *o, const void *data, size_t len);
/* A stdio stream over the file for writers that print; use it or
 * fmlp_file_out_write, not both. Its errors are reported by commit. */
FILE *fmlp_file_out_stream(fmlp_file_out *o);
/* Flushes, syncs, closes and renames into place: FMLP_OK only when the
 * whole file is there. On failure nothing of it is left, and the message
 * names the path and the reason. `o` is released either way. */
fmlp_status fmlp_file_out_commit(fmlp_file_out *o);
/* Drops the file (nothing is left) and releases `o`. */
void fmlp_file_out_abort(fmlp_file_out *o);

/* Test hook: make the next files fail at `stage` (writes once `after` bytes
 * have been written, or the sync, close or rename) with ENOSPC (EXDEV for
 * rename); FMLP_FILE_OUT_OK turns it off. Inert until a test sets it. */
typedef enum {
    FMLP_FILE_OUT_OK,
    FMLP_FILE_OUT_FAIL_WRITE,
    FMLP_FILE_OUT_FAIL_SYNC,
    FMLP_FILE_OUT_FAIL_CLOSE,
    FMLP_FILE_OUT_FAIL_RENAME
} fmlp_file_out_stage;
void fmlp_file_out_test_fail(fmlp_file_out_stage stage, int64_t after);

#endif
