/* Why: a trace's bytes reach their file through the one whole-or-nothing
 * writer (core/file_out.h), gzip-compressed on the way for a ".gz" path, so
 * a full disk or a failed compression leaves no truncated trace behind. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/file_out.h"
#include "profiler/prof.h"

#ifdef FMLP_HAVE_ZLIB
#include <zlib.h>
#endif

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

#ifdef FMLP_HAVE_ZLIB
/* zlib's memory through the library's allocator, so its failures are
 * tested with the rest. */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return fmlp_calloc(items, size);
}

static void z_free(voidpf opaque, voidpf p)
{
    (void)opaque;
    free(p);
}

/* gzip of `data` streamed into `o` (what gzwrite would write, but through
 * the one checked, whole-or-nothing writer). */
static fmlp_status write_gzip(fmlp_file_out *o, const char *path, const char *data, size_t len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    z.zalloc = z_alloc;
    z.zfree = z_free;
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        fmlp_file_out_abort(o);
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory compressing \"%s\"", path);
    }
    unsigned char out[1 << 16];
    size_t off = 0;
    int zs = Z_OK;
    bool ok = true;
    while (ok && zs != Z_STREAM_END) {
        if (z.avail_in == 0 && off < len) {
            z.avail_in = len - off > (1u << 30) ? (1u << 30) : (unsigned)(len - off);
            z.next_in = (unsigned char *)(uintptr_t)(data + off);
            off += z.avail_in;
        }
        z.next_out = out;
        z.avail_out = sizeof out;
        zs = deflate(&z, off == len ? Z_FINISH : Z_NO_FLUSH);
        ok = (zs == Z_OK || zs == Z_STREAM_END || zs == Z_BUF_ERROR) &&
             fmlp_file_out_write(o, out, sizeof out - z.avail_out);
    }
    deflateEnd(&z);
    if (!ok && zs != Z_OK && zs != Z_STREAM_END && zs != Z_BUF_ERROR) {
        fmlp_file_out_abort(o);
        return fmlp_fail(FMLP_ERR_INTERNAL, "compressing \"%s\" failed (zlib status %d)", path, zs);
    }
    return fmlp_file_out_commit(o);
}
#endif

fmlp_status prof_write_file(const char *path, const char *data, size_t len)
{
    bool gz = ends_with(path, ".gz");
#ifndef FMLP_HAVE_ZLIB
    if (gz)
        return fmlp_fail(FMLP_ERR_UNSUPPORTED,
                         "\"%s\": this fmlp was built without zlib, so it cannot write .gz; install zlib1g-dev and "
                         "rebuild, or drop the .gz suffix",
                         path);
#endif
    fmlp_file_out o;
    fmlp_status s = fmlp_file_out_open(&o, path);
    if (s != FMLP_OK) return s;
#ifdef FMLP_HAVE_ZLIB
    if (gz) return write_gzip(&o, path, data, len);
#endif
    fmlp_file_out_write(&o, data, len);
    return fmlp_file_out_commit(&o);
}
