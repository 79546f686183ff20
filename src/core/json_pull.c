/* Why: see json_pull.h. The window [buf, end) holds the bytes not yet
 * consumed plus the token being read; when a token runs off its end, the
 * window slides (the token moves to the front) and the reader fills the
 * rest, growing the storage only for a kept token longer than it, up to
 * max_string. Skipped strings slide past without being kept, so their
 * length is bounded only by the reader. Newlines are counted as bytes leave
 * the window, for error positions. Numbers convert exactly: Clinger's fast
 * path when the digits and the power of ten are both exact doubles, else
 * strtod in the "C" locale, which is what json_parse uses. */
#define _GNU_SOURCE
#include "core/json_pull.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/json.h"

/* The reader's window starts small, for a small source, and doubles up to
 * WINDOW while reads keep filling it, for a file: a large window is what
 * makes gigabytes fast, and a small one what makes a header cheap. */
#define FIRST_WINDOW ((size_t)64 << 10)
#define WINDOW ((size_t)1 << 20)
/* Enough for any escape (a surrogate pair is 12 bytes) or UTF-8 sequence. */
#define LOOKAHEAD 12

enum { S_VALUE, S_VALUE_OR_CLOSE, S_KEY, S_KEY_OR_CLOSE, S_AFTER, S_DONE, S_FAILED };

/* ------------------------------------------------------------ the window */

static uint64_t off_of(const jp_parser *p, const unsigned char *q) { return p->buf_off + (uint64_t)(q - p->buf); }

uint64_t jp_offset(const jp_parser *p) { return off_of(p, p->p); }

/* Line and column of q in the window. */
static void position(const jp_parser *p, const unsigned char *q, uint64_t *line, uint64_t *col)
{
    uint64_t l = p->lines;
    const unsigned char *last = NULL;
    for (const unsigned char *c = p->buf; c < q; c++)
        if (*c == '\n') {
            l++;
            last = c;
        }
    *line = l + 1;
    *col = last ? (uint64_t)(q - last) : p->col0 + (uint64_t)(q - p->buf) + 1;
}

static jp_token fail_kind(jp_parser *p, jp_error_kind kind, const unsigned char *where, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static jp_token fail_kind(jp_parser *p, jp_error_kind kind, const unsigned char *where, const char *fmt, ...)
{
    if (p->err != JP_ERR_NONE) return JP_ERROR;
    if (where < p->buf) where = p->buf;
    if (where > p->end) where = p->end;
    p->err = kind;
    p->err_offset = off_of(p, where);
    position(p, where, &p->err_line, &p->err_col);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->msg, sizeof p->msg, fmt, ap);
    va_end(ap);
    p->state = S_FAILED;
    return JP_ERROR;
}

#define fail(p, where, ...) fail_kind(p, JP_ERR_SYNTAX, where, __VA_ARGS__)

/* A syntax error whose message shows the byte at `where` (fmt has one %s),
 * kept out of the hot paths. */
static __attribute__((noinline, cold)) jp_token fail_at_byte(jp_parser *p, const unsigned char *where, const char *fmt)
{
    char b[8];
    return fail(p, where, fmt, json_show_byte(where, p->end, b));
}

/* Counts the newlines of [buf, upto), which leave the window. */
static void count_lines(jp_parser *p, const unsigned char *upto)
{
    size_t n = (size_t)(upto - p->buf), nl = 0, i = 0;
    /* Newline bytes counted eight at a time: a zero byte of w ^ '\n'... is
     * one whose high bit survives this (exactly, without borrows); the
     * multiply sums the eight bytes' flags into the top byte. */
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p->buf + i, 8);
        uint64_t x = w ^ 0x0a0a0a0a0a0a0a0aull, lo7 = 0x7f7f7f7f7f7f7f7full;
        uint64_t ones = ~(((x & lo7) + lo7) | x | lo7) >> 7; /* 1 in each newline's byte */
        nl += (size_t)((ones * 0x0101010101010101ull) >> 56);
    }
    for (; i < n; i++) nl += p->buf[i] == '\n';
    if (!nl) {
        p->col0 += n;
        return;
    }
    p->lines += nl;
    const unsigned char *last = memrchr(p->buf, '\n', n);
    p->col0 = (uint64_t)(upto - last - 1);
}

/* Slides the window so that `keep` (a pointer into it, at or before p->p
 * and p->pin) becomes its start, and reads more. Returns how many bytes
 * left the front: a pointer held as an index i into the old window is at
 * index i - that in the new one. -1 after an error; at the end of the
 * input it returns with p->eof set. */
static ptrdiff_t slide(jp_parser *p, const unsigned char *keep)
{
    if (!p->read || p->eof) {
        p->eof = true;
        return 0;
    }
    if (p->pin && p->pin < keep) keep = p->pin;
    size_t drop = (size_t)(keep - p->buf), at = (size_t)(p->p - keep), live = (size_t)(p->end - keep);
    size_t pin = p->pin ? (size_t)(p->pin - keep) : 0;
    /* A token pinned at the window's start (a long string arriving in
     * small reads) moves nothing. */
    if (drop) {
        count_lines(p, keep);
        memmove(p->own, keep, live);
        p->buf_off += drop;
    }
    if (live == p->cap || (p->filled && p->cap < WINDOW)) {
        unsigned char *nb = fmlp_realloc(p->own, p->cap * 2);
        if (!nb) {
            p->buf = p->own;
            p->p = p->own + at;
            p->end = p->own + live;
            fail_kind(p, JP_ERR_OOM, p->p, "out of memory while parsing");
            return -1;
        }
        p->own = nb;
        p->cap *= 2;
    }
    p->buf = p->own;
    p->p = p->own + at;
    p->end = p->own + live;
    if (p->pin) p->pin = p->own + pin;
    char why[160] = "";
    ptrdiff_t got = p->read(p->ctx, p->own + live, p->cap - live, why, sizeof why);
    if (got < 0) {
        fail_kind(p, JP_ERR_READ, p->end, "%s", why[0] ? why : "read failed");
        return -1;
    }
    if (got == 0) p->eof = true;
    p->filled = (size_t)got == p->cap - live;
    p->end += got;
    return (ptrdiff_t)drop;
}

/* Makes at least `n` bytes available at p->p, or all that remain. */
static bool ensure(jp_parser *p, size_t n)
{
    while ((size_t)(p->end - p->p) < n && !p->eof)
        if (slide(p, p->p) < 0) return false;
    return true;
}

/* JSON's whitespace bytes. */
static const bool k_ws[256] = {[' '] = true, ['\n'] = true, ['\r'] = true, ['\t'] = true};

/* Indentation comes in runs of spaces: those are skipped a word at a time. */
static const unsigned char *skip_ws_in(const unsigned char *q, const unsigned char *e)
{
    while (q < e) {
        if (*q == ' ' && e - q >= 8) {
            uint64_t w;
            memcpy(&w, q, 8);
            uint64_t x = w ^ 0x2020202020202020ull;
            if (!x) {
                q += 8;
                continue;
            }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            q += __builtin_clzll(x) >> 3;
#else
            q += __builtin_ctzll(x) >> 3; /* the first byte is the lowest */
#endif
        }
        if (q >= e || !k_ws[*q]) break;
        q++;
    }
    return q;
}

static inline bool skip_ws(jp_parser *p)
{
    /* Most tokens follow no whitespace or one space. */
    if (p->p < p->end && *p->p > ' ') return true;
    if (p->end - p->p >= 2 && p->p[0] == ' ' && p->p[1] > ' ') {
        p->p++;
        return true;
    }
    for (;;) {
        const unsigned char *q = skip_ws_in(p->p, p->end), *e = p->end;
        p->p = q;
        if (q < e || p->eof) return true;
        if (slide(p, q) < 0) return false;
    }
}

/* ------------------------------------------------------------- strings */

static int hex_digit(unsigned c)
{
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
    return -1;
}

/* Four hex digits at q, before `end`; -1 with an error set if not. A
 * string that ends within them is a truncated escape, as json_parse says. */
static int32_t hex4(jp_parser *p, const unsigned char *q, const unsigned char *esc)
{
    for (int i = 0; i < 4 && q + i < p->end && q[i] != '\\'; i++)
        if (q[i] == '"') {
            fail(p, esc, "truncated \\u escape");
            return -1;
        }
    int32_t v = 0;
    for (int i = 0; i < 4; i++) {
        if (q + i >= p->end) {
            fail(p, esc, "truncated \\u escape");
            return -1;
        }
        int d = hex_digit(q[i]);
        if (d < 0) {
            fail(p, q + i, "invalid hex digit in \\u escape");
            return -1;
        }
        v = v << 4 | d;
    }
    return v;
}

/* Checks the escape at q (a backslash); its length, or 0 after an error.
 * *cp gets the code point of a \u escape, else the byte it stands for. */
static int check_escape(jp_parser *p, const unsigned char *q, uint32_t *cp)
{
    if (q + 1 >= p->end) {
        fail(p, q, "unterminated string");
        return 0;
    }
    static const char plain[] = "\"\\/bfnrt", value[] = "\"\\/\b\f\n\r\t";
    const char *k = q[1] ? strchr(plain, q[1]) : NULL;
    if (k) {
        *cp = (unsigned char)value[k - plain];
        return 2;
    }
    if (q[1] != 'u') {
        char b[8];
        fail(p, q + 1, "invalid escape '\\' followed by %s", json_show_byte(q + 1, p->end, b));
        return 0;
    }
    int32_t hi = hex4(p, q + 2, q);
    if (hi < 0) return 0;
    if (hi >= 0xdc00 && hi <= 0xdfff) {
        fail(p, q, "unpaired low surrogate \\u%04x", (unsigned)hi);
        return 0;
    }
    if (hi < 0xd800 || hi > 0xdbff) {
        *cp = (uint32_t)hi;
        return 6;
    }
    if (p->end - q < 12 || q[6] != '\\' || q[7] != 'u') {
        fail(p, q, "high surrogate \\u%04x not followed by a low surrogate", (unsigned)hi);
        return 0;
    }
    int32_t lo = hex4(p, q + 8, q);
    if (lo < 0) return 0;
    if (lo < 0xdc00 || lo > 0xdfff) {
        fail(p, q, "high surrogate \\u%04x followed by \\u%04x, not a low surrogate", (unsigned)hi, (unsigned)lo);
        return 0;
    }
    *cp = 0x10000 + (((uint32_t)hi - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
    return 12;
}

/* Bytes the string scan must stop at (a quote, a backslash, a control
 * character, a byte that is not ASCII), flagged in the high bit of their
 * byte of the mask. The lowest flag is exact, as each test's is. */
static inline uint64_t special8(const unsigned char *q)
{
    uint64_t w;
    memcpy(&w, q, 8);
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t quote = w ^ (ones * '"'), bs = w ^ (ones * '\\');
    uint64_t zero = ((quote - ones) & ~quote) | ((bs - ones) & ~bs);
    uint64_t ctrl = (w - ones * 0x20) & ~w;
    return ((zero | ctrl) & high) | (w & high);
}

/* Index of the first flagged byte of a special8 mask. */
static inline int first_flagged(uint64_t m)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_clzll(m) >> 3;
#else
    return __builtin_ctzll(m) >> 3;
#endif
}

/* Copies the validated raw string [a, b) into sbuf, unescaped. */
static bool unescape(jp_parser *p, const unsigned char *a, const unsigned char *b)
{
    size_t need = (size_t)(b - a) + 1;
    if (need > p->scap) {
        char *s = fmlp_realloc(p->sbuf, need);
        if (!s) return fail_kind(p, JP_ERR_OOM, a, "out of memory while parsing"), false;
        p->sbuf = s;
        p->scap = need;
    }
    char *o = p->sbuf;
    while (a < b) {
        if (*a != '\\') {
            *o++ = (char)*a++;
            continue;
        }
        uint32_t cp = 0;
        int n = check_escape(p, a, &cp);
        o += json_put_utf8((unsigned char *)o, cp);
        a += n;
    }
    p->str = p->sbuf;
    p->len = (size_t)(o - p->sbuf);
    return true;
}

/* Whether a closing quote follows q (escaped characters skipped) in the
 * window; *known: whether the window showed enough to tell. */
/* Scans from window index *at for the string's closing quote, leaving *at
 * where the scan stopped (at a backslash whose escaped byte is not read
 * yet), so a scan continued after a slide never reads a byte twice. */
static bool terminated(const jp_parser *p, size_t *at, bool *known)
{
    const unsigned char *q = p->buf + *at;
    while (q < p->end && *q != '"') {
        if (*q != '\\') {
            q++;
        } else if (q + 1 < p->end) {
            q += 2;
        } else {
            break;
        }
    }
    *at = (size_t)(q - p->buf);
    bool closed = q < p->end && *q == '"';
    *known = closed || p->eof;
    return closed;
}

/* After an error inside the string opened at `open` (still in the window):
 * json_parse looks for the closing quote first, so with none the string is
 * reported as unterminated, whatever else is wrong in it. The error path
 * reads a little ahead to tell. */
static bool string_failed(jp_parser *p, const unsigned char *open, const unsigned char *q)
{
    if (p->err != JP_ERR_SYNTAX || open != p->p) return false;
    size_t qi = (size_t)(q - p->buf), at = qi;
    bool known, closed = terminated(p, &at, &known);
    while (!known && (size_t)(p->end - p->buf) - qi < 65536) {
        ptrdiff_t d = slide(p, p->p);
        if (d < 0) return false;
        qi -= (size_t)d;
        at -= (size_t)d;
        closed = terminated(p, &at, &known);
    }
    if (known && !closed) {
        p->err = JP_ERR_NONE;
        fail(p, p->p, "unterminated string");
    }
    return false;
}

/* The string whose opening quote is at p->p. Kept: its bytes in str/len,
 * and it must fit max_string. Skipped: only checked. */
static bool read_string(jp_parser *p, bool keep)
{
    uint64_t open_off = off_of(p, p->p);
    size_t qi = 1; /* scan position, as an index from p->p */
    bool escaped = false;
    for (;;) {
        const unsigned char *open = p->p, *q = open + qi, *e = p->end;
        while (q < e) {
            for (; q + 8 <= e; q += 8) {
                uint64_t m = special8(q);
                if (m) {
                    q += first_flagged(m);
                    break;
                }
            }
            if (q >= e) break;
            unsigned c = *q;
            if (c == '"') {
                size_t raw = (size_t)(q - open - 1);
                if (keep && raw > p->max_string)
                    return fail_kind(p, JP_ERR_STRING_LIMIT, open, "a string of more than %zu bytes", p->max_string), false;
                p->p = q + 1;
                if (!keep) return true;
                if (escaped) return unescape(p, open + 1, q);
                p->str = (const char *)open + 1;
                p->len = raw;
                return true;
            }
            if (c == '\\' || c >= 0x80) {
                if (e - q < LOOKAHEAD && !p->eof) break;
                if (q + 1 >= e) {
                    q = e; /* a backslash that ends the input: the string is open */
                    break;
                }
                if (c == '\\') {
                    uint32_t cp;
                    int n = check_escape(p, q, &cp);
                    if (!n) return string_failed(p, open, q + 1);
                    escaped = true;
                    q += n;
                } else {
                    int n = json_utf8_len(q, e);
                    if (!n) return fail(p, q, "invalid UTF-8 byte 0x%02x in string", c), string_failed(p, open, q + 1);
                    q += n;
                }
                continue;
            }
            if (c < 0x20) return fail(p, q, "unescaped control character 0x%02x in string", c), string_failed(p, open, q + 1);
            q++;
        }
        if (q >= e && p->eof) {
            if (open_off >= p->buf_off) return fail(p, open, "unterminated string"), false;
            return fail(p, p->end, "unterminated string (opened at byte %llu)", (unsigned long long)open_off), false;
        }
        if (keep && (size_t)(q - open) > p->max_string)
            return fail_kind(p, JP_ERR_STRING_LIMIT, open, "a string of more than %zu bytes", p->max_string), false;
        /* A long skipped string's scanned part leaves the window (a short
         * one stays, for the position of an error in it). */
        if (!keep && q - open > 4096) {
            p->p = q;
            qi = 0;
        } else {
            qi = (size_t)(q - open);
        }
        if (slide(p, p->p) < 0) return false;
    }
}

/* ------------------------------------------------------------- numbers */

static locale_t g_c_locale;
static pthread_once_t g_c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void) { g_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

static const double k_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* What the grammar of a number found in [s, e): where it ends, its digits
 * (value = m * 10^scale while nd <= 19), or the first thing wrong. */
typedef struct {
    const unsigned char *end, *digits, *int_end;
    bool neg, integral;
    uint64_t m;
    int nd;
    int64_t scale;
    const unsigned char *bad; /* NULL, or where it went wrong (with `why`) */
    const char *why;
} num_scan;

static bool is_digit(const unsigned char *q, const unsigned char *e) { return q < e && (unsigned)(*q - '0') < 10; }

static num_scan scan_number(const unsigned char *s, const unsigned char *e)
{
    num_scan r = {.neg = false, .integral = true};
    const unsigned char *q = s;
    if (q < e && *q == '-') {
        r.neg = true;
        q++;
    }
    r.digits = q;
    if (!is_digit(q, e)) return r.bad = q, r.why = "expected a digit in number", r;
    if (*q == '0') {
        q++;
        if (is_digit(q, e)) return r.bad = s, r.why = "number with a leading zero", r;
    } else {
        for (; is_digit(q, e); q++) {
            if (r.nd < 19) {
                r.m = r.m * 10 + (uint64_t)(*q - '0');
                r.nd++;
            } else {
                r.nd = 20;
                r.scale++;
            }
        }
    }
    r.int_end = q;
    if (q < e && *q == '.') {
        r.integral = false;
        q++;
        if (!is_digit(q, e)) return r.bad = q, r.why = "expected a digit after the decimal point", r;
        for (; is_digit(q, e); q++) {
            if (r.m == 0 && *q == '0') {
                r.scale--;
            } else if (r.nd < 19) {
                r.m = r.m * 10 + (uint64_t)(*q - '0');
                r.nd++;
                r.scale--;
            } else {
                r.nd = 20;
            }
        }
    }
    if (q < e && (*q == 'e' || *q == 'E')) {
        r.integral = false;
        q++;
        bool eneg = false;
        if (q < e && (*q == '+' || *q == '-')) eneg = *q++ == '-';
        if (!is_digit(q, e)) return r.bad = q, r.why = "expected a digit in the exponent", r;
        int64_t ex = 0;
        for (; is_digit(q, e); q++)
            if (ex < 100000000) ex = ex * 10 + (*q - '0');
        r.scale += eneg ? -ex : ex;
    }
    r.end = q;
    return r;
}

/* The number at p->p. `convert`: fill num/i64/is_int; otherwise only check
 * it (including that it fits a double, as json_parse does). */
static bool read_number(jp_parser *p, bool convert)
{
    num_scan r;
    for (;;) {
        r = scan_number(p->p, p->end);
        /* A number that reaches the window's end may go on past it. */
        bool cut = (r.bad ? r.bad : r.end) == p->end;
        if (!cut || p->eof) break;
        if ((size_t)(p->end - p->p) > p->max_string)
            return fail_kind(p, JP_ERR_STRING_LIMIT, p->p, "a number of more than %zu bytes", p->max_string), false;
        if (slide(p, p->p) < 0) return false;
    }
    if (r.bad) return fail(p, r.bad, "%s", r.why), false;
    const unsigned char *s = p->p;
    p->p = r.end;
    /* The integer value exactly: up to 18 digits it is m. */
    p->is_int = false;
    if (convert && r.integral && r.int_end - r.digits <= 18) {
        p->is_int = true;
        p->i64 = r.neg ? -(int64_t)r.m : (int64_t)r.m;
    } else if (convert && r.integral) {
        p->is_int = json_int_literal(r.digits, r.int_end, r.neg, &p->i64);
    }
    bool fast = r.nd <= 19 && (r.m == 0 || (r.m <= (UINT64_C(1) << 53) && r.scale >= -22 && r.scale <= 22));
    if (fast) {
        if (!convert) return true;
        double v = (double)r.m;
        if (r.m) v = r.scale >= 0 ? v * k_pow10[r.scale] : v / k_pow10[-r.scale];
        p->num = r.neg ? -v : v;
        if (!p->is_int) p->i64 = 0;
        return true;
    }
    /* Only a decimal exponent this large can overflow a double. */
    if (!convert && r.scale + r.nd < 300) return true;
    size_t n = (size_t)(r.end - s);
    char small[64], *tmp = n < sizeof small ? small : fmlp_malloc(n + 1);
    if (!tmp) return fail_kind(p, JP_ERR_OOM, s, "out of memory while parsing"), false;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    pthread_once(&g_c_locale_once, make_c_locale);
    errno = 0;
    double d = g_c_locale ? strtod_l(tmp, NULL, g_c_locale) : strtod(tmp, NULL);
    int err = errno;
    if (tmp != small) free(tmp);
    if (err == ERANGE && isinf(d)) return fail(p, s, "number out of the range of a double"), false;
    p->num = d;
    if (!p->is_int) p->i64 = 0;
    return true;
}

/* ---------------------------------------------------------------- tokens */

static jp_token after_value(jp_parser *p, jp_token t)
{
    p->state = p->depth ? S_AFTER : S_DONE;
    return t;
}

static jp_token open_container(jp_parser *p, unsigned char c)
{
    if (p->depth >= p->max_depth)
        return fail_kind(p, JP_ERR_DEPTH_LIMIT, p->p, "nesting deeper than %d levels", p->max_depth);
    p->stack[p->depth++] = c;
    p->p++;
    p->state = c == '{' ? S_KEY_OR_CLOSE : S_VALUE_OR_CLOSE;
    return c == '{' ? JP_OBJECT : JP_ARRAY;
}

static jp_token close_container(jp_parser *p)
{
    unsigned char c = p->stack[--p->depth];
    p->p++;
    return after_value(p, c == '{' ? JP_OBJECT_END : JP_ARRAY_END);
}

static jp_token literal(jp_parser *p, const char *word, jp_token t)
{
    size_t n = strlen(word);
    if (!ensure(p, n)) return JP_ERROR;
    if ((size_t)(p->end - p->p) < n || memcmp(p->p, word, n) != 0)
        return fail_at_byte(p, p->p, "unexpected %s, expected a value");
    p->p += n;
    return after_value(p, t);
}

static jp_token value(jp_parser *p, bool keep)
{
    if (p->p >= p->end) return fail(p, p->p, "unexpected end of input, expected a value");
    unsigned char c = *p->p;
    switch (c) {
    case '{':
    case '[': return open_container(p, c);
    case '"': return read_string(p, keep) ? after_value(p, JP_STRING) : JP_ERROR;
    case 't': return literal(p, "true", JP_TRUE);
    case 'f': return literal(p, "false", JP_FALSE);
    case 'n': return literal(p, "null", JP_NULL);
    default:
        if (c == '-' || (c >= '0' && c <= '9')) return read_number(p, keep) ? after_value(p, JP_NUMBER) : JP_ERROR;
        return fail_at_byte(p, p->p, "unexpected %s, expected a value");
    }
}

static jp_token next(jp_parser *p, bool keep)
{
    for (;;) {
        if (p->state == S_FAILED) return JP_ERROR;
        if (!skip_ws(p)) return JP_ERROR;
        const unsigned char *q = p->p;
        switch (p->state) {
        case S_DONE:
            if (q < p->end) return fail_at_byte(p, q, "unexpected %s after the end of the document");
            return JP_END;
        case S_AFTER: {
            bool obj = p->stack[p->depth - 1] == '{';
            if (q < p->end && *q == ',') {
                p->p++;
                p->state = obj ? S_KEY : S_VALUE;
                continue;
            }
            if (q < p->end && *q == (obj ? '}' : ']')) return close_container(p);
            return fail_at_byte(p, q, obj ? "expected ',' or '}' in object, found %s" : "expected ',' or ']' in array, found %s");
        }
        case S_KEY_OR_CLOSE:
            if (q < p->end && *q == '}') return close_container(p);
            /* fall through */
        case S_KEY:
            if (q >= p->end || *q != '"') return fail_at_byte(p, q, "expected a string key in object, found %s");
            if (!read_string(p, keep)) return JP_ERROR;
            /* The key must survive the window sliding on to its ':'. */
            if (keep && p->str != p->sbuf) p->pin = (const unsigned char *)p->str;
            bool ws_ok = skip_ws(p);
            if (p->pin) p->str = (const char *)p->pin;
            p->pin = NULL;
            if (!ws_ok) return JP_ERROR;
            if (p->p >= p->end || *p->p != ':') return fail_at_byte(p, p->p, "expected ':' after object key, found %s");
            p->p++;
            p->state = S_VALUE;
            return JP_KEY;
        case S_VALUE_OR_CLOSE:
            if (q < p->end && *q == ']') return close_container(p);
            /* fall through */
        default: return value(p, keep);
        }
    }
}

jp_token jp_next(jp_parser *p) { return next(p, true); }

bool jp_skip(jp_parser *p)
{
    int d = p->depth;
    do {
        if (next(p, false) == JP_ERROR) return false;
    } while (p->depth > d);
    return true;
}

bool jp_skip_rest(jp_parser *p)
{
    int d = p->depth;
    while (p->depth >= d)
        if (next(p, false) == JP_ERROR) return false;
    return true;
}

bool jp_leave(jp_parser *p, jp_token t)
{
    if (t == JP_ERROR) return false;
    return t == JP_OBJECT || t == JP_ARRAY ? jp_skip_rest(p) : true;
}

/* ------------------------------------------------------------ lifecycle */

static bool init(jp_parser *p, size_t max_string, int max_depth)
{
    p->max_string = max_string < 64 ? 64 : max_string;
    p->max_depth = max_depth < 1 ? 1 : max_depth;
    p->stack = fmlp_malloc((size_t)p->max_depth);
    if (!p->stack) {
        p->err = JP_ERR_OOM;
        snprintf(p->msg, sizeof p->msg, "out of memory while parsing");
        p->state = S_FAILED;
        return false;
    }
    return true;
}

/* A UTF-8 byte order mark is skipped, as json_parse skips it. */
static void skip_bom(jp_parser *p)
{
    if (ensure(p, 3) && p->end - p->p >= 3 && p->p[0] == 0xef && p->p[1] == 0xbb && p->p[2] == 0xbf) p->p += 3;
}

void jp_init_mem(jp_parser *p, const void *text, size_t len, size_t max_string, int max_depth)
{
    memset(p, 0, sizeof *p);
    p->buf = p->p = text ? text : (const unsigned char *)"";
    p->end = p->buf + (text ? len : 0);
    p->eof = true;
    if (init(p, max_string, max_depth)) skip_bom(p);
}

bool jp_init_reader(jp_parser *p, jp_read_fn read, void *ctx, size_t max_string, int max_depth)
{
    memset(p, 0, sizeof *p);
    p->read = read;
    p->ctx = ctx;
    p->cap = FIRST_WINDOW;
    p->own = fmlp_malloc(p->cap);
    if (!p->own || !init(p, max_string, max_depth)) {
        free(p->own);
        p->own = NULL;
        p->err = JP_ERR_OOM;
        snprintf(p->msg, sizeof p->msg, "out of memory while parsing");
        p->state = S_FAILED;
        return false;
    }
    p->buf = p->p = p->end = p->own;
    skip_bom(p);
    return p->err == JP_ERR_NONE;
}

void jp_free(jp_parser *p)
{
    free(p->own);
    free(p->stack);
    free(p->sbuf);
    memset(p, 0, sizeof *p);
}
