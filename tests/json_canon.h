/* Why: the JSON parsers are checked against each other (test_json_pull,
 * fuzz_json): both must give the same values, so each writes what it read
 * as one canonical text (strings as hex bytes, numbers as %a and their
 * exact integer) to compare; json_pull is also fed through a reader that
 * hands out a few bytes at a time, to cut tokens at every place. */
#ifndef FMLP_TESTS_JSON_CANON_H
#define FMLP_TESTS_JSON_CANON_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/json_pull.h"

typedef struct {
    char *s;
    size_t n, cap;
} jc_buf;

static inline void jc_put(jc_buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static inline void jc_put_str(jc_buf *b, const char *s, size_t n)
{
    jc_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        char h[4];
        snprintf(h, sizeof h, "%02x", (unsigned char)s[i]);
        jc_put(b, h, 2);
    }
    jc_put(b, "\"", 1);
}

static inline void jc_put_num(jc_buf *b, double v, bool is_int, int64_t i)
{
    char t[80];
    int n = is_int ? snprintf(t, sizeof t, "%a/%lld", v, (long long)i) : snprintf(t, sizeof t, "%a", v);
    jc_put(b, t, (size_t)n);
}

static inline void jc_canon_dom(jc_buf *b, const json_value *v)
{
    switch (v->type) {
    case JSON_NULL: jc_put(b, "n", 1); break;
    case JSON_BOOL: jc_put(b, v->boolean ? "t" : "f", 1); break;
    case JSON_NUMBER: jc_put_num(b, v->u.num.number, v->is_int, v->u.num.integer); break;
    case JSON_STRING: jc_put_str(b, v->u.str, v->len); break;
    case JSON_ARRAY:
    case JSON_OBJECT:
        jc_put(b, v->type == JSON_ARRAY ? "[" : "{", 1);
        for (size_t i = 0; i < v->len; i++) {
            const json_value *c = &v->u.items[i];
            if (v->type == JSON_OBJECT) {
                jc_put_str(b, c->key, c->key_len);
                jc_put(b, ":", 1);
            }
            jc_canon_dom(b, c);
            jc_put(b, ",", 1);
        }
        jc_put(b, v->type == JSON_ARRAY ? "]" : "}", 1);
        break;
    }
}

/* The same text from tokens; `skip_every` > 0 skips every so-many member
 * values (they then read as "s"), to run jp_skip over all kinds of values. */
static inline bool jc_canon_pull(jc_buf *b, jp_parser *p, int skip_every)
{
    int members = 0;
    for (;;) {
        jp_token t = jp_next(p);
        switch (t) {
        case JP_ERROR: return false;
        case JP_END: return true;
        case JP_NULL: jc_put(b, "n,", 2); break;
        case JP_TRUE: jc_put(b, "t,", 2); break;
        case JP_FALSE: jc_put(b, "f,", 2); break;
        case JP_NUMBER:
            jc_put_num(b, p->num, p->is_int, p->i64);
            jc_put(b, ",", 1);
            break;
        case JP_STRING:
            jc_put_str(b, p->str, p->len);
            jc_put(b, ",", 1);
            break;
        case JP_KEY:
            jc_put_str(b, p->str, p->len);
            jc_put(b, ":", 1);
            if (skip_every && ++members % skip_every == 0) {
                if (!jp_skip(p)) return false;
                jc_put(b, "s,", 2);
            }
            break;
        case JP_ARRAY: jc_put(b, "[", 1); break;
        case JP_OBJECT: jc_put(b, "{", 1); break;
        case JP_ARRAY_END: jc_put(b, "],", 2); break;
        case JP_OBJECT_END: jc_put(b, "},", 2); break;
        }
    }
}

/* The DOM's canon text as jc_canon_pull writes it: a ',' after every value. */
static inline void jc_canon_dom_pull_style(jc_buf *b, const json_value *v)
{
    jc_canon_dom(b, v);
    jc_put(b, ",", 1);
}

typedef struct {
    const unsigned char *s;
    size_t len, at, chunk;
} jc_chunks;

static inline ptrdiff_t jc_read_chunk(void *ctx, unsigned char *dst, size_t cap, char *why, size_t why_len)
{
    (void)why;
    (void)why_len;
    jc_chunks *c = ctx;
    size_t n = c->len - c->at;
    if (n > c->chunk) n = c->chunk;
    if (n > cap) n = cap;
    memcpy(dst, c->s + c->at, n);
    c->at += n;
    return (ptrdiff_t)n;
}

#endif
