/* Why: see byte_source.h. Inflation is zlib's inflate() over the file in
 * fixed chunks, with gzip members read back to back as gzip(1) and gzread()
 * do; bytes after the last member that do not start another one are
 * ignored, as gzread() ignores them. */
#include "core/byte_source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/file_in.h"

#ifdef FMLP_HAVE_ZLIB
#include <zlib.h>
#endif

#define IN_CHUNK ((size_t)1 << 18)

struct byte_source {
    int fd;
    uint64_t max_bytes, produced;
    bs_error err;
    bool gzip, at_eof;
    unsigned char *in; /* compressed input (gzip only) */
    size_t in_len, in_pos;
    /* Bytes read to sniff the magic, handed out first (plain files). */
    unsigned char head[2];
    size_t head_len, head_pos;
#ifdef FMLP_HAVE_ZLIB
    z_stream z;
    bool z_live, member_done;
#endif
};

static ptrdiff_t fail(byte_source *s, bs_error e, char *why, size_t why_len, const char *fmt, const char *arg)
{
    s->err = e;
    snprintf(why, why_len, fmt, arg);
    return -1;
}

static ptrdiff_t read_fd(int fd, unsigned char *dst, size_t cap)
{
    for (;;) {
        ssize_t got = read(fd, dst, cap);
        if (got >= 0 || errno != EINTR) return got;
    }
}

byte_source *bs_open(const char *path, uint64_t max_bytes, bs_error *err, char *why, size_t why_len)
{
    int fd;
    uint64_t size;
    *err = BS_ERR_OPEN;
    if (!file_in_open(path, &fd, &size, why, why_len)) return NULL;
    byte_source *s = fmlp_calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        *err = BS_ERR_OOM;
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    s->fd = fd;
    s->max_bytes = max_bytes;
    while (s->head_len < 2) {
        ptrdiff_t got = read_fd(fd, s->head + s->head_len, 2 - s->head_len);
        if (got < 0) {
            *err = BS_ERR_READ;
            snprintf(why, why_len, "%s", strerror(errno));
            bs_close(s);
            return NULL;
        }
        if (got == 0) break;
        s->head_len += (size_t)got;
    }
    s->gzip = s->head_len == 2 && s->head[0] == 0x1f && s->head[1] == 0x8b;
    if (!s->gzip) {
        if (size > max_bytes) {
            *err = BS_ERR_LIMIT;
            snprintf(why, why_len, "the file is %llu bytes", (unsigned long long)size);
            bs_close(s);
            return NULL;
        }
        *err = BS_OK;
        return s;
    }
#ifdef FMLP_HAVE_ZLIB
    s->in = fmlp_malloc(IN_CHUNK);
    if (!s->in || inflateInit2(&s->z, 15 + 16) != Z_OK) {
        *err = BS_ERR_OOM;
        snprintf(why, why_len, "out of memory starting to inflate");
        bs_close(s);
        return NULL;
    }
    s->z_live = true;
    memcpy(s->in, s->head, 2);
    s->in_len = 2;
    s->head_len = 0;
    *err = BS_OK;
    return s;
#else
    *err = BS_ERR_GZIP;
    snprintf(why, why_len, "is gzip-compressed, but this fmlp was built without zlib; install zlib1g-dev and rebuild, "
                           "or gunzip it first");
    bs_close(s);
    return NULL;
#endif
}

void bs_close(byte_source *s)
{
    if (!s) return;
#ifdef FMLP_HAVE_ZLIB
    if (s->z_live) inflateEnd(&s->z);
#endif
    if (s->fd >= 0) close(s->fd);
    free(s->in);
    free(s);
}

bs_error bs_error_of(const byte_source *s) { return s->err; }

bool bs_is_gzip(const byte_source *s) { return s->gzip; }

/* Counts `n` new bytes against the cap. */
static ptrdiff_t produced(byte_source *s, size_t n, char *why, size_t why_len)
{
    s->produced += n;
    if (s->produced > s->max_bytes) {
        s->err = BS_ERR_LIMIT;
        snprintf(why, why_len, "holds more than %llu bytes%s", (unsigned long long)s->max_bytes,
                 s->gzip ? " once decompressed" : "");
        return -1;
    }
    return (ptrdiff_t)n;
}

static ptrdiff_t read_plain(byte_source *s, unsigned char *dst, size_t cap, char *why, size_t why_len)
{
    if (s->head_pos < s->head_len) {
        size_t n = s->head_len - s->head_pos < cap ? s->head_len - s->head_pos : cap;
        memcpy(dst, s->head + s->head_pos, n);
        s->head_pos += n;
        return produced(s, n, why, why_len);
    }
    ptrdiff_t got = read_fd(s->fd, dst, cap);
    if (got < 0) return fail(s, BS_ERR_READ, why, why_len, "%s", strerror(errno));
    return produced(s, (size_t)got, why, why_len);
}

#ifdef FMLP_HAVE_ZLIB
/* More compressed input; false at the end of the file. */
static bool refill_in(byte_source *s, char *why, size_t why_len)
{
    if (s->in_pos < s->in_len) return true;
    if (s->at_eof) return false;
    ptrdiff_t got = read_fd(s->fd, s->in, IN_CHUNK);
    if (got < 0) {
        fail(s, BS_ERR_READ, why, why_len, "%s", strerror(errno));
        return false;
    }
    s->in_len = (size_t)got;
    s->in_pos = 0;
    if (got == 0) s->at_eof = true;
    return got > 0;
}

static ptrdiff_t read_gzip(byte_source *s, unsigned char *dst, size_t cap, char *why, size_t why_len)
{
    if (cap > UINT32_MAX) cap = UINT32_MAX;
    for (;;) {
        if (s->member_done) {
            /* Another member follows only if its magic does. */
            if (!refill_in(s, why, why_len)) return s->err ? -1 : 0;
            if (s->in_len - s->in_pos < 2 && !s->at_eof) {
                memmove(s->in, s->in + s->in_pos, s->in_len - s->in_pos);
                s->in_len -= s->in_pos;
                s->in_pos = 0;
                ptrdiff_t got = read_fd(s->fd, s->in + s->in_len, IN_CHUNK - s->in_len);
                if (got < 0) return fail(s, BS_ERR_READ, why, why_len, "%s", strerror(errno));
                if (got == 0) s->at_eof = true;
                s->in_len += (size_t)got;
            }
            if (s->in_len - s->in_pos < 2 || s->in[s->in_pos] != 0x1f || s->in[s->in_pos + 1] != 0x8b) {
                s->in_pos = s->in_len;
                s->at_eof = true;
                return 0;
            }
            inflateReset(&s->z);
            s->member_done = false;
        }
        if (!refill_in(s, why, why_len)) {
            if (s->err) return -1;
            return fail(s, BS_ERR_GZIP, why, why_len, "%s",
                        "truncated gzip stream: the file ends inside compressed data (was it copied whole?)");
        }
        s->z.next_in = s->in + s->in_pos;
        s->z.avail_in = (uInt)(s->in_len - s->in_pos);
        s->z.next_out = dst;
        s->z.avail_out = (uInt)cap;
        int rc = inflate(&s->z, Z_NO_FLUSH);
        s->in_pos = s->in_len - s->z.avail_in;
        size_t out = cap - s->z.avail_out;
        if (rc == Z_STREAM_END) {
            s->member_done = true;
        } else if (rc == Z_MEM_ERROR) {
            return fail(s, BS_ERR_OOM, why, why_len, "%s", "out of memory inflating");
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            return fail(s, BS_ERR_GZIP, why, why_len, "corrupt gzip stream (zlib: %s)",
                        s->z.msg ? s->z.msg : "data error");
        }
        if (out) return produced(s, out, why, why_len);
    }
}
#endif

ptrdiff_t bs_read(void *source, unsigned char *dst, size_t cap, char *why, size_t why_len)
{
    byte_source *s = source;
    if (s->err) return -1;
#ifdef FMLP_HAVE_ZLIB
    if (s->gzip) return read_gzip(s, dst, cap, why, why_len);
#endif
    return read_plain(s, dst, cap, why, why_len);
}
