/* Why: the one JSON parser and escaper of the library (see json.h). Input is
 * untrusted: every read is checked against the end of the buffer, every size
 * computation against overflow, and nesting against JSON_MAX_DEPTH, so the
 * recursion below is bounded. Nodes are built in an arena that json_free()
 * releases at once; children of a container are gathered on a scratch stack
 * and copied into one contiguous array when the container closes, which
 * makes json_at() O(1). Numbers are converted in the "C" locale. */
#define _GNU_SOURCE
#include "core/json.h"

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

/* ------------------------------------------------------------------ arena */

typedef struct json_block {
    struct json_block *next;
    size_t used, cap;
    max_align_t data[];
} json_block;

struct json_doc {
    json_block *blocks;
    json_value root;
};

/* Blocks double from the first size to the last, so a small document (a
 * ceilings cache, a shapes string, one header) costs one small block. */
#define JSON_FIRST_BLOCK_BYTES ((size_t)4 << 10)
#define JSON_BLOCK_BYTES ((size_t)1 << 20)

/* `align` is a power of two; strings take 1 so they pack densely. */
static void *arena_alloc(json_doc *doc, size_t bytes, size_t align)
{
    json_block *b = doc->blocks;
    size_t at = b ? (b->used + align - 1) & ~(align - 1) : 0;
    if (b && at <= b->cap && b->cap - at >= bytes) {
        b->used = at + bytes;
        return (unsigned char *)b->data + at;
    }
    size_t grow = !b ? JSON_FIRST_BLOCK_BYTES : b->cap < JSON_BLOCK_BYTES / 2 ? b->cap * 2 : JSON_BLOCK_BYTES;
    size_t cap = bytes > grow ? bytes : grow;
    if (cap > SIZE_MAX - sizeof(json_block)) return NULL;
    json_block *nb = fmlp_malloc(sizeof(json_block) + cap);
    if (!nb) return NULL;
    nb->cap = cap;
    nb->used = bytes;
    /* A big one-off allocation goes behind the current block so the
     * current block's free space stays usable. */
    if (b && cap == bytes) {
        nb->next = b->next;
        b->next = nb;
    } else {
        nb->next = b;
        doc->blocks = nb;
    }
    return nb->data;
}

void json_free(json_doc *doc)
{
    if (!doc) return;
    json_block *b = doc->blocks;
    while (b) {
        json_block *next = b->next;
        free(b);
        b = next;
    }
    free(doc);
}

/* --------------------------------------------------------------- C locale */

static locale_t g_c_locale;
static pthread_once_t g_c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void) { g_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

static locale_t c_locale(void)
{
    pthread_once(&g_c_locale_once, make_c_locale);
    return g_c_locale;
}

/* ----------------------------------------------------------------- parser */

typedef struct {
    const unsigned char *start, *p, *end;
    json_doc *doc;
    json_value *stack; /* children of the open containers */
    size_t sp, scap;
    int depth;
    json_error *err;
} parser;

static bool fail_at(parser *ps, const unsigned char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail_at(parser *ps, const unsigned char *where, const char *fmt, ...)
{
    json_error *e = ps->err;
    e->offset = (size_t)(where - ps->start);
    e->line = 1;
    e->col = 1;
    for (const unsigned char *q = ps->start; q < where; q++) {
        if (*q == '\n') {
            e->line += e->line < INT_MAX;
            e->col = 1;
        } else {
            e->col += e->col < INT_MAX;
        }
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return false;
}

static bool fail_oom(parser *ps)
{
    ps->err->oom = true;
    return fail_at(ps, ps->p, "out of memory while parsing");
}

const char *json_show_byte(const unsigned char *p, const unsigned char *end, char buf[8])
{
    if (p >= end) return "end of input";
    if (*p >= 0x20 && *p < 0x7f)
        snprintf(buf, 8, "'%c'", *p);
    else
        snprintf(buf, 8, "0x%02x", *p);
    return buf;
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static bool push(parser *ps, const json_value *v)
{
    if (ps->sp == ps->scap) {
        size_t cap = ps->scap ? ps->scap * 2 : 256;
        if (cap > SIZE_MAX / sizeof(json_value)) return fail_oom(ps);
        json_value *s = fmlp_realloc(ps->stack, cap * sizeof(json_value));
        if (!s) return fail_oom(ps);
        ps->stack = s;
        ps->scap = cap;
    }
    ps->stack[ps->sp++] = *v;
    return true;
}

/* Moves the children pushed since `base` into the container `v`. */
static bool close_container(parser *ps, size_t base, json_value *v)
{
    size_t n = ps->sp - base;
    v->len = n;
    v->u.items = NULL;
    if (n) {
        json_value *items = arena_alloc(ps->doc, n * sizeof(json_value), _Alignof(json_value));
        if (!items) return fail_oom(ps);
        memcpy(items, ps->stack + base, n * sizeof(json_value));
        v->u.items = items;
    }
    ps->sp = base;
    return true;
}

int json_utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    if (c < 0x80) return 1;
    int n;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0) lo = 0xa0;      /* overlong */
        if (c == 0xed) hi = 0x9f;      /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0) lo = 0x90;      /* overlong */
        if (c == 0xf4) hi = 0x8f;      /* above U+10FFFF */
    } else {
        return 0;
    }
    if (end - p < n) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    return n;
}

size_t json_put_utf8(unsigned char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xc0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xe0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (unsigned char)(0xf0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Four hex digits at p, which must end before `limit` (the closing quote). */
static bool hex4(parser *ps, const unsigned char *p, const unsigned char *limit, uint32_t *out)
{
    if (limit - p < 4) return fail_at(ps, p - 2, "truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return fail_at(ps, p + i, "invalid hex digit in \\u escape");
        v = v << 4 | d;
    }
    *out = v;
    return true;
}

/* Parses the string whose opening quote is at ps->p into the arena. The
 * unescaped form is never longer than the raw one, so one allocation of the
 * raw length suffices; the first pass only finds the closing quote. */
static bool parse_string(parser *ps, const char **out, size_t *out_len)
{
    const unsigned char *open = ps->p, *q = open + 1;
    while (q < ps->end && *q != '"') q += (*q == '\\' && q + 1 < ps->end) ? 2 : 1;
    if (q >= ps->end) return fail_at(ps, open, "unterminated string");
    size_t raw = (size_t)(q - open - 1);
    unsigned char *o = arena_alloc(ps->doc, raw + 1, 1), *o0 = o;
    if (!o) return fail_oom(ps);
    const unsigned char *p = open + 1;
    while (p < q) {
        unsigned c = *p;
        if (c < 0x20) return fail_at(ps, p, "unescaped control character 0x%02x in string", c);
        if (c != '\\') {
            int n = json_utf8_len(p, q);
            if (!n) return fail_at(ps, p, "invalid UTF-8 byte 0x%02x in string", c);
            memcpy(o, p, (size_t)n);
            o += n;
            p += n;
            continue;
        }
        const unsigned char *esc = p++;
        switch (*p) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            uint32_t cp = 0, lo = 0;
            if (!hex4(ps, p + 1, q, &cp)) return false;
            p += 4;
            if (cp >= 0xdc00 && cp <= 0xdfff) return fail_at(ps, esc, "unpaired low surrogate \\u%04x", cp);
            if (cp >= 0xd800 && cp <= 0xdbff) {
                if (q - p < 7 || p[1] != '\\' || p[2] != 'u')
                    return fail_at(ps, esc, "high surrogate \\u%04x not followed by a low surrogate", cp);
                if (!hex4(ps, p + 3, q, &lo)) return false;
                if (lo < 0xdc00 || lo > 0xdfff)
                    return fail_at(ps, esc, "high surrogate \\u%04x followed by \\u%04x, not a low surrogate", cp,
                                   lo);
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p += 6;
            }
            o += json_put_utf8(o, cp);
            break;
        }
        default: {
            char b[8];
            return fail_at(ps, p, "invalid escape '\\' followed by %s", json_show_byte(p, ps->end, b));
        }
        }
        p++;
    }
    *o = 0;
    *out = (const char *)o0;
    *out_len = (size_t)(o - o0);
    ps->p = q + 1;
    return true;
}

static bool is_digit(const parser *ps, const unsigned char *p) { return p < ps->end && *p >= '0' && *p <= '9'; }

static bool parse_number(parser *ps, json_value *v)
{
    const unsigned char *s = ps->p, *p = s;
    bool neg = false, integral = true;
    if (p < ps->end && *p == '-') {
        neg = true;
        p++;
    }
    if (!is_digit(ps, p)) return fail_at(ps, p, "expected a digit in number");
    const unsigned char *digits = p;
    if (*p == '0') {
        p++;
        if (is_digit(ps, p)) return fail_at(ps, s, "number with a leading zero");
    } else {
        while (is_digit(ps, p)) p++;
    }
    const unsigned char *int_end = p;
    if (p < ps->end && *p == '.') {
        integral = false;
        p++;
        if (!is_digit(ps, p)) return fail_at(ps, p, "expected a digit after the decimal point");
        while (is_digit(ps, p)) p++;
    }
    if (p < ps->end && (*p == 'e' || *p == 'E')) {
        integral = false;
        p++;
        if (p < ps->end && (*p == '+' || *p == '-')) p++;
        if (!is_digit(ps, p)) return fail_at(ps, p, "expected a digit in the exponent");
        while (is_digit(ps, p)) p++;
    }

    v->is_int = integral && json_int_literal(digits, int_end, neg, &v->u.num.integer);

    size_t n = (size_t)(p - s);
    char small[64], *tmp = n < sizeof small ? small : fmlp_malloc(n + 1);
    if (!tmp) return fail_oom(ps);
    memcpy(tmp, s, n);
    tmp[n] = 0;
    double d;
    locale_t loc = c_locale();
    errno = 0;
    d = loc ? strtod_l(tmp, NULL, loc) : strtod(tmp, NULL);
    int e = errno;
    if (tmp != small) free(tmp);
    if (e == ERANGE && isinf(d)) return fail_at(ps, s, "number out of the range of a double");
    v->u.num.number = d;
    if (!v->is_int) v->u.num.integer = 0;
    v->type = JSON_NUMBER;
    ps->p = p;
    return true;
}

/* Accumulated negatively so INT64_MIN fits. */
bool json_int_literal(const unsigned char *digits, const unsigned char *end, bool neg, int64_t *out)
{
    int64_t acc = 0;
    for (const unsigned char *d = digits; d < end; d++) {
        int dv = *d - '0';
        if (acc < (INT64_MIN + dv) / 10) return false;
        acc = acc * 10 - dv;
    }
    if (!neg && acc == INT64_MIN) return false;
    *out = neg ? acc : -acc;
    return true;
}

static bool parse_literal(parser *ps, const char *word, json_value *v, json_type t, bool b)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) {
        char buf[8];
        return fail_at(ps, ps->p, "unexpected %s, expected a value", json_show_byte(ps->p, ps->end, buf));
    }
    v->type = t;
    v->boolean = b;
    ps->p += n;
    return true;
}

static bool parse_value(parser *ps, json_value *v);

static bool parse_array(parser *ps, json_value *v)
{
    size_t base = ps->sp;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return close_container(ps, base, v);
    }
    for (;;) {
        json_value item;
        skip_ws(ps);
        if (!parse_value(ps, &item) || !push(ps, &item)) return false;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return close_container(ps, base, v);
        }
        char b[8];
        return fail_at(ps, ps->p, "expected ',' or ']' in array, found %s", json_show_byte(ps->p, ps->end, b));
    }
}

static bool parse_object(parser *ps, json_value *v)
{
    size_t base = ps->sp;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return close_container(ps, base, v);
    }
    for (;;) {
        char b[8];
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"')
            return fail_at(ps, ps->p, "expected a string key in object, found %s", json_show_byte(ps->p, ps->end, b));
        const char *key;
        size_t key_len;
        if (!parse_string(ps, &key, &key_len)) return false;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':')
            return fail_at(ps, ps->p, "expected ':' after object key, found %s", json_show_byte(ps->p, ps->end, b));
        ps->p++;
        skip_ws(ps);
        json_value member;
        if (!parse_value(ps, &member)) return false;
        member.key = key;
        member.key_len = key_len;
        if (!push(ps, &member)) return false;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return close_container(ps, base, v);
        }
        return fail_at(ps, ps->p, "expected ',' or '}' in object, found %s", json_show_byte(ps->p, ps->end, b));
    }
}

static bool parse_value(parser *ps, json_value *v)
{
    memset(v, 0, sizeof *v);
    v->offset = (size_t)(ps->p - ps->start);
    if (ps->p >= ps->end) return fail_at(ps, ps->p, "unexpected end of input, expected a value");
    switch (*ps->p) {
    case '{':
    case '[': {
        if (ps->depth >= JSON_MAX_DEPTH)
            return fail_at(ps, ps->p, "nesting deeper than %d levels", JSON_MAX_DEPTH);
        ps->depth++;
        bool ok;
        if (*ps->p == '{') {
            v->type = JSON_OBJECT;
            ok = parse_object(ps, v);
        } else {
            v->type = JSON_ARRAY;
            ok = parse_array(ps, v);
        }
        ps->depth--;
        return ok;
    }
    case '"':
        v->type = JSON_STRING;
        return parse_string(ps, &v->u.str, &v->len);
    case 't': return parse_literal(ps, "true", v, JSON_BOOL, true);
    case 'f': return parse_literal(ps, "false", v, JSON_BOOL, false);
    case 'n': return parse_literal(ps, "null", v, JSON_NULL, false);
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) return parse_number(ps, v);
        char b[8];
        return fail_at(ps, ps->p, "unexpected %s, expected a value", json_show_byte(ps->p, ps->end, b));
    }
}

json_doc *json_parse(const char *text, size_t len, json_error *err)
{
    json_error dummy;
    if (!err) err = &dummy;
    memset(err, 0, sizeof *err);
    parser ps = {0};
    ps.err = err;
    ps.start = ps.p = (const unsigned char *)(text ? text : "");
    ps.end = ps.start + (text ? len : 0);
    if (text && len > JSON_MAX_TEXT) {
        snprintf(err->msg, sizeof err->msg, "a document of %zu bytes, more than the %zu this parser takes", len,
                 JSON_MAX_TEXT);
        err->line = err->col = 1;
        return NULL;
    }
    ps.doc = fmlp_calloc(1, sizeof(json_doc));
    if (!ps.doc) {
        fail_oom(&ps);
        return NULL;
    }
    if (ps.end - ps.p >= 3 && ps.p[0] == 0xef && ps.p[1] == 0xbb && ps.p[2] == 0xbf) ps.p += 3;
    skip_ws(&ps);
    bool ok = parse_value(&ps, &ps.doc->root);
    if (ok) {
        skip_ws(&ps);
        if (ps.p < ps.end) {
            char b[8];
            ok = fail_at(&ps, ps.p, "unexpected %s after the end of the document", json_show_byte(ps.p, ps.end, b));
        }
    }
    free(ps.stack);
    if (!ok) {
        json_free(ps.doc);
        return NULL;
    }
    return ps.doc;
}

const json_value *json_doc_root(const json_doc *doc) { return doc ? &doc->root : NULL; }

/* -------------------------------------------------------------- accessors */

const char *json_type_name(json_type t)
{
    switch (t) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "bool";
    case JSON_NUMBER: return "number";
    case JSON_STRING: return "string";
    case JSON_ARRAY: return "array";
    case JSON_OBJECT: return "object";
    }
    return "?";
}

const json_value *json_get_n(const json_value *obj, const char *key, size_t key_len)
{
    if (!obj || obj->type != JSON_OBJECT || !key) return NULL;
    for (size_t i = 0; i < obj->len; i++) {
        const json_value *m = &obj->u.items[i];
        if (m->key_len == key_len && memcmp(m->key, key, key_len) == 0) return m;
    }
    return NULL;
}

const json_value *json_get(const json_value *obj, const char *key)
{
    return key ? json_get_n(obj, key, strlen(key)) : NULL;
}

size_t json_len(const json_value *v)
{
    return v && (v->type == JSON_ARRAY || v->type == JSON_OBJECT) ? v->len : 0;
}

const json_value *json_at(const json_value *v, size_t i) { return i < json_len(v) ? &v->u.items[i] : NULL; }

const char *json_str(const json_value *v) { return v && v->type == JSON_STRING ? v->u.str : NULL; }

double json_num(const json_value *v, double def) { return v && v->type == JSON_NUMBER ? v->u.num.number : def; }

bool json_int(const json_value *v, int64_t *out)
{
    if (!v || v->type != JSON_NUMBER || !v->is_int) return false;
    if (out) *out = v->u.num.integer;
    return true;
}

const char *json_get_str(const json_value *obj, const char *key) { return json_str(json_get(obj, key)); }

double json_get_num(const json_value *obj, const char *key, double def) { return json_num(json_get(obj, key), def); }

int64_t json_get_int(const json_value *obj, const char *key, int64_t def)
{
    int64_t v;
    return json_int(json_get(obj, key), &v) ? v : def;
}

/* ---------------------------------------------------------------- writers */

/* Escaping feeds pieces to a sink so the FILE and buffer writers share it. */
typedef void (*json_sink)(void *ctx, const char *s, size_t n);

static void escape_to(json_sink sink, void *ctx, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)(s ? s : ""), *end = p + (s ? n : 0);
    sink(ctx, "\"", 1);
    while (p < end) {
        const unsigned char *run = p;
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') p++;
        if (p > run) sink(ctx, (const char *)run, (size_t)(p - run));
        if (p >= end) break;
        unsigned c = *p;
        if (c >= 0x80) {
            int k = json_utf8_len(p, end);
            if (k) {
                sink(ctx, (const char *)p, (size_t)k);
                p += k;
            } else {
                sink(ctx, "\\ufffd", 6);
                p++;
            }
            continue;
        }
        char e[6] = {'\\', 0, 0, 0, 0, 0};
        size_t len = 2;
        switch (c) {
        case '"': e[1] = '"'; break;
        case '\\': e[1] = '\\'; break;
        case '\n': e[1] = 'n'; break;
        case '\r': e[1] = 'r'; break;
        case '\t': e[1] = 't'; break;
        case '\b': e[1] = 'b'; break;
        case '\f': e[1] = 'f'; break;
        default:
            e[1] = 'u';
            e[2] = '0';
            e[3] = '0';
            e[4] = hex[c >> 4];
            e[5] = hex[c & 15];
            len = 6;
        }
        sink(ctx, e, len);
        p++;
    }
    sink(ctx, "\"", 1);
}

static void file_sink(void *ctx, const char *s, size_t n) { fwrite(s, 1, n, (FILE *)ctx); }

void json_write_string_n(FILE *f, const char *s, size_t n) { escape_to(file_sink, f, s, n); }

void json_write_string(FILE *f, const char *s) { json_write_string_n(f, s, s ? strlen(s) : 0); }

typedef struct {
    char *dst;
    size_t cap, len;
} buf_sink_state;

static void buf_sink(void *ctx, const char *s, size_t n)
{
    buf_sink_state *b = ctx;
    if (b->cap && b->len < b->cap - 1) {
        size_t room = b->cap - 1 - b->len;
        memcpy(b->dst + b->len, s, n < room ? n : room);
    }
    b->len += n;
}

size_t json_escape(char *dst, size_t cap, const char *s, size_t n)
{
    buf_sink_state b = {dst, dst ? cap : 0, 0};
    escape_to(buf_sink, &b, s, n);
    if (b.cap) b.dst[b.len < b.cap ? b.len : b.cap - 1] = 0;
    return b.len;
}

void json_write_number(FILE *f, double v)
{
    if (!isfinite(v)) {
        fputs("null", f);
        return;
    }
    char buf[40];
    locale_t loc = c_locale();
    locale_t old = loc ? uselocale(loc) : (locale_t)0;
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (prec == 17 || strtod(buf, NULL) == v) break;
    }
    if (loc) uselocale(old);
    fputs(buf, f);
}
