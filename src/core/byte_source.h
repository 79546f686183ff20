/* Why: a trace may be gigabytes, plain or gzip'd, and a small .gz may
 * expand without bound. This hands a file's bytes out chunk by chunk,
 * inflating as it goes (gzip is recognised by its magic bytes, whatever
 * the name) and counting every byte against a cap, so a reader never holds
 * the file and a bomb stops at the cap. A damaged stream says what is wrong
 * with it: truncated, or corrupt and where. */
#ifndef FMLP_CORE_BYTE_SOURCE_H
#define FMLP_CORE_BYTE_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct byte_source byte_source;

typedef enum {
    BS_OK,
    BS_ERR_OPEN,  /* not opened: missing, unreadable, not a regular file */
    BS_ERR_READ,  /* the file system failed a read */
    BS_ERR_GZIP,  /* truncated or corrupt gzip stream, or no zlib in this build */
    BS_ERR_LIMIT, /* more than max_bytes (after decompression) */
    BS_ERR_OOM
} bs_error;

/* Opens a regular file. NULL on failure, with the problem in `why` and the
 * kind in *err. */
byte_source *bs_open(const char *path, uint64_t max_bytes, bs_error *err, char *why, size_t why_len);
void bs_close(byte_source *s);

/* Fills up to `cap` bytes at `dst`: the count, 0 at the end, -1 on failure
 * (then bs_error_of says which and `why` what). Matches jp_read_fn. */
ptrdiff_t bs_read(void *source, unsigned char *dst, size_t cap, char *why, size_t why_len);
bs_error bs_error_of(const byte_source *s);
bool bs_is_gzip(const byte_source *s);

#endif
