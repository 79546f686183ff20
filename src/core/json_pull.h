/* Why: traces run to gigabytes and safetensors headers to 100 MB, and
 * either may be hostile; json_parse's tree of a whole document costs many
 * times its size before anything in it is checked. This pull parser hands
 * a document out one token at a time, from a buffer or from a reader that
 * fills chunks, holding only a window of it: a string or key the caller
 * takes must fit `max_string` bytes and nesting must stay within
 * `max_depth`; a value the caller skips is checked but never stored. It
 * accepts exactly what json_parse accepts (RFC 8259, UTF-8 validated) and
 * words its errors the same way.
 *
 *     jp_parser p;
 *     jp_init_mem(&p, text, len, 4096, 64);
 *     if (jp_next(&p) != JP_OBJECT) ...
 *     for (jp_token t; (t = jp_next(&p)) == JP_KEY;) {
 *         if (jp_str_is(&p, "name")) { if (jp_next(&p) == JP_STRING) use(p.str, p.len); ... }
 *         else if (!jp_skip(&p)) break;
 *     }
 *     ... p.err != JP_ERR_NONE: p.msg, p.err_offset, p.err_line, p.err_col
 *     jp_free(&p);
 *
 * A container token the caller does not want is left with jp_skip_rest. */
#ifndef FMLP_CORE_JSON_PULL_H
#define FMLP_CORE_JSON_PULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum {
    JP_ERROR,        /* see err and msg; every later call returns it again */
    JP_END,          /* the document ended (only whitespace followed) */
    JP_OBJECT,       /* '{': then JP_KEY + value pairs, then JP_OBJECT_END */
    JP_OBJECT_END,
    JP_ARRAY,        /* '[': then values, then JP_ARRAY_END */
    JP_ARRAY_END,
    JP_KEY,          /* an object member's key in str/len; its value comes next */
    JP_STRING,
    JP_NUMBER,
    JP_TRUE,
    JP_FALSE,
    JP_NULL
} jp_token;

typedef enum {
    JP_ERR_NONE,
    JP_ERR_SYNTAX,       /* not JSON */
    JP_ERR_READ,         /* the reader failed; msg is its reason */
    JP_ERR_OOM,
    JP_ERR_STRING_LIMIT, /* a kept string, key or number longer than max_string */
    JP_ERR_DEPTH_LIMIT   /* nesting deeper than max_depth */
} jp_error_kind;

/* Fills up to `cap` bytes at `dst`: the count, 0 at the end, -1 on failure
 * with the reason in `why`. */
typedef ptrdiff_t (*jp_read_fn)(void *ctx, unsigned char *dst, size_t cap, char *why, size_t why_len);

typedef struct {
    /* The current token. JP_KEY, JP_STRING: the unescaped bytes (not
     * NUL-terminated, may hold NUL), valid until the next call. */
    const char *str;
    size_t len;
    double num;  /* JP_NUMBER, rounded to nearest */
    int64_t i64; /* JP_NUMBER written as an integer literal that fits int64 */
    bool is_int;
    int depth; /* containers open at the parser's position */

    /* After JP_ERROR. Line and column are 1-based, counted in bytes. */
    jp_error_kind err;
    char msg[200];
    uint64_t err_offset;
    uint64_t err_line, err_col;

    /* Private. */
    const unsigned char *p, *end, *buf; /* buf: start of the window */
    const unsigned char *pin;           /* kept across a slide within one call */
    unsigned char *own;                 /* the window's storage (reader mode) */
    size_t cap;
    bool filled; /* the last read filled all the room it was given */
    uint64_t buf_off;               /* document offset of buf[0] */
    uint64_t lines, col0;           /* newlines before buf, bytes since the last one */
    jp_read_fn read;
    void *ctx;
    bool eof;
    size_t max_string;
    int max_depth;
    unsigned char *stack; /* '{' or '[' per open container */
    int state;
    char *sbuf; /* unescaped strings */
    size_t scap;
} jp_parser;

/* Over `len` bytes in memory (kept by the caller until jp_free). */
void jp_init_mem(jp_parser *p, const void *text, size_t len, size_t max_string, int max_depth);
/* Over a reader; false (with err set) when out of memory. */
bool jp_init_reader(jp_parser *p, jp_read_fn read, void *ctx, size_t max_string, int max_depth);
void jp_free(jp_parser *p);

jp_token jp_next(jp_parser *p);
/* After JP_KEY: skips the member's value, whole. false after an error. */
bool jp_skip(jp_parser *p);
/* After JP_OBJECT or JP_ARRAY: skips to the end of that container. */
bool jp_skip_rest(jp_parser *p);
/* Leaves a value whose first token was `t`: skips the rest of a container
 * the caller did not want; false after an error. */
bool jp_leave(jp_parser *p, jp_token t);

/* Bytes of the document consumed so far. */
uint64_t jp_offset(const jp_parser *p);

/* Whether the current key or string is exactly `s`. */
static inline bool jp_str_is(const jp_parser *p, const char *s)
{
    size_t n = strlen(s);
    return p->len == n && memcmp(p->str, s, n) == 0;
}

#endif
