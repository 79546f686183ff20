/* Why: the ceilings cache, shape strings and the tests' checks of written
 * traces are small JSON documents best handled as a tree. This is one
 * strict, bounds-checked DOM parser for them (RFC 8259, UTF-8 only), plus
 * the few writer helpers that emit JSON strings and numbers correctly
 * escaped and locale-independent. Large or untrusted files (traces,
 * safetensors headers) are read with json_pull.h instead.
 *
 * Parsing never crashes and never reads past `len`: any input either gives a
 * tree or a message with the byte offset, line and column of the problem.
 *
 *     json_error err;
 *     json_doc *doc = json_parse(buf, len, &err);
 *     if (!doc) return fail("%s at byte %zu", err.msg, err.offset);
 *     const json_value *root = json_doc_root(doc);
 *     const json_value *ev = json_get(root, "traceEvents");
 *     for (size_t i = 0; i < json_len(ev); i++) {
 *         const json_value *e = json_at(ev, i);
 *         const char *name = json_get_str(e, "name");      // NULL if absent
 *         int64_t ts = json_get_int(json_get(e, "args"), "External id", -1);
 *     }
 *     json_free(doc);
 *
 * Every node, key and string lives in the document and is freed by the one
 * json_free() call; a trace-like document takes about six times its text
 * size in memory, hence JSON_MAX_TEXT. All accessors are NULL-safe: asking
 * a NULL or wrongly typed value for a member gives NULL / 0 / the default,
 * so lookup chains need no checks in between. */
#ifndef FMLP_CORE_JSON_H
#define FMLP_CORE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Containers nested deeper than this are rejected (stack safety). */
#define JSON_MAX_DEPTH 256
/* Documents longer than this are rejected: a tree costs several times its
 * text, so large or untrusted files go through json_pull.h instead. */
#define JSON_MAX_TEXT ((size_t)64 << 20)

typedef enum { JSON_NULL = 0, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value json_value;

/* Read-only view of one node. Prefer the accessors below; the fields are
 * public so hot loops over large arrays can read them directly. */
struct json_value {
    json_type type;
    bool boolean; /* JSON_BOOL */
    /* JSON_NUMBER written as an integer literal (no fraction, no exponent)
     * that fits int64: `integer` holds it exactly, whatever its magnitude
     * (2^53 and beyond included). */
    bool is_int;
    /* JSON_STRING: bytes (a string may hold "\u0000"); ARRAY/OBJECT: the
     * number of elements / members. */
    size_t len;
    /* Members of an object carry their key (unescaped, NUL-terminated). */
    const char *key;
    size_t key_len;
    union {
        struct {
            double number; /* every JSON_NUMBER, rounded to nearest */
            int64_t integer;
        } num;
        const char *str;          /* JSON_STRING: unescaped UTF-8, NUL-terminated */
        const json_value *items;  /* ARRAY/OBJECT: len contiguous children */
    } u;
    size_t offset; /* byte offset of the value in the parsed buffer */
};

typedef struct json_doc json_doc;

typedef struct {
    size_t offset;  /* byte offset of the problem in the buffer */
    int line, col;  /* 1-based, counted in bytes */
    bool oom;       /* the parse ran out of memory (the input may be fine) */
    char msg[160];  /* e.g. "expected ',' or '}' after object member" */
} json_error;

/* Parses `len` bytes (no NUL terminator needed; a UTF-8 byte order mark is
 * skipped). Returns NULL on failure with `err` filled in (err may be NULL).
 * Duplicate keys are kept; json_get() finds the first. */
json_doc *json_parse(const char *text, size_t len, json_error *err);
void json_free(json_doc *doc);
const json_value *json_doc_root(const json_doc *doc);

const char *json_type_name(json_type t); /* "null", "bool", "number", ... */

/* Objects: the member named `key` (NULL if absent or `obj` is not an object). */
const json_value *json_get(const json_value *obj, const char *key);
const json_value *json_get_n(const json_value *obj, const char *key, size_t key_len);
/* Arrays and objects: child count and child i (NULL if out of range). Object
 * members come in document order, each with its key. */
size_t json_len(const json_value *v);
const json_value *json_at(const json_value *v, size_t i);

/* Scalars: the string (NULL unless JSON_STRING), the number (`def` unless
 * JSON_NUMBER), the exact integer (false unless is_int). */
const char *json_str(const json_value *v);
double json_num(const json_value *v, double def);
bool json_int(const json_value *v, int64_t *out);
/* Shorthands: member `key` of `obj` as string / number / integer. */
const char *json_get_str(const json_value *obj, const char *key);
double json_get_num(const json_value *obj, const char *key, double def);
int64_t json_get_int(const json_value *obj, const char *key, int64_t def);

/* Length of the valid UTF-8 sequence at p (1..4; it must end by `end`), or
 * 0 if it is not one; and the UTF-8 of code point cp written at o (its
 * length). Both parsers check strings with these. */
int json_utf8_len(const unsigned char *p, const unsigned char *end);
size_t json_put_utf8(unsigned char *o, uint32_t cp);

/* The byte at p as messages show it ('x', 0x1f, or "end of input" at
 * `end`), in buf. Both parsers word their errors with it. */
const char *json_show_byte(const unsigned char *p, const unsigned char *end, char buf[8]);

/* The value of the decimal digits [digits, end) (negated when `neg`) when
 * it fits int64, exactly; false when it does not. Both parsers use it. */
bool json_int_literal(const unsigned char *digits, const unsigned char *end, bool neg, int64_t *out);

/* Writers. Strings are quoted and escaped (", \, control characters; bytes
 * that are not valid UTF-8 become U+FFFD) so the output always parses.
 * Numbers use the shortest "%.17g"-style form with a '.' whatever the
 * locale; NaN and infinities, which JSON cannot hold, are written as null.
 * Check ferror(f) for write errors. */
void json_write_string(FILE *f, const char *s);
void json_write_string_n(FILE *f, const char *s, size_t n);
void json_write_number(FILE *f, double v);
/* The same escaping into a buffer, snprintf-style: writes at most cap bytes
 * including the NUL and returns the length the whole quoted string needs. */
size_t json_escape(char *dst, size_t cap, const char *s, size_t n);

#endif
