/* Why: json_pull reads the traces and safetensors headers that json_parse
 * used to read, so it must accept exactly what json_parse accepts and give
 * the same values, however its input is cut into jc_chunks: documents are
 * parsed both ways (from memory and through readers handing out 1, 2, 3, 7
 * and 4096 bytes at a time) and their values compared as canonical text.
 * Random documents, random corruptions of them and random numbers cover
 * what the hand-written cases do not; the limits on kept strings and depth
 * and the skipping of values too long to keep are checked on their own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_canon.h"
#include "test_util.h"

static const size_t k_chunks[] = {0, 1, 2, 3, 7, 4096}; /* 0: from memory */

typedef struct {
    bool ok;
    jc_buf text;
    char msg[200];
    uint64_t offset, line, col;
} outcome;

static outcome run(const char *doc, size_t len, size_t chunk, int skip_every)
{
    outcome o = {0};
    jp_parser p;
    jc_chunks c = {(const unsigned char *)doc, len, 0, chunk};
    if (chunk)
        jp_init_reader(&p, jc_read_chunk, &c, 1 << 20, JSON_MAX_DEPTH);
    else
        jp_init_mem(&p, doc, len, 1 << 20, JSON_MAX_DEPTH);
    o.ok = jc_canon_pull(&o.text, &p, skip_every);
    snprintf(o.msg, sizeof o.msg, "%s", p.msg);
    o.offset = p.err_offset;
    o.line = p.err_line;
    o.col = p.err_col;
    jp_free(&p);
    return o;
}

/* Both parsers, every chunking: same verdict; for a valid document the same
 * values; for an invalid one the same message and place at every chunking
 * (and json_parse's when `same_msg`). Returns whether all agreed. */
static bool agree(const char *doc, size_t len, bool same_msg)
{
    json_error err;
    json_doc *d = json_parse(doc, len, &err);
    jc_buf want = {0};
    if (d) jc_canon_dom_pull_style(&want, json_doc_root(d));
    bool all = true;
    outcome first = {0};
    for (size_t k = 0; k < sizeof k_chunks / sizeof *k_chunks; k++)
        for (int skip = 0; skip <= 3; skip += 3) {
            outcome o = run(doc, len, k_chunks[k], skip);
            bool good = o.ok == (d != NULL);
            if (good && d && !skip) good = strcmp(o.text.s ? o.text.s : "", want.s ? want.s : "") == 0;
            if (good && !d) {
                if (k == 0 && !skip) first = o;
                good = strcmp(o.msg, first.msg) == 0 && o.offset == first.offset && o.line == first.line &&
                       o.col == first.col;
                if (good && same_msg && !skip)
                    good = strcmp(o.msg, err.msg) == 0 && o.offset == err.offset && o.line == (uint64_t)err.line &&
                           o.col == (uint64_t)err.col;
            }
            if (!good && all)
                printf("  disagree (chunk %zu, skip %d) on %.60s: pull %s '%s' at %llu:%llu, dom %s '%s' at %d:%d\n",
                       k_chunks[k], skip, doc, o.ok ? "ok" : "error", o.msg, (unsigned long long)o.line,
                       (unsigned long long)o.col, d ? "ok" : "error", d ? "" : err.msg, d ? 0 : err.line,
                       d ? 0 : err.col);
            all &= good;
            if (o.text.s != first.text.s) free(o.text.s);
        }
    free(first.text.s);
    free(want.s);
    json_free(d);
    return all;
}

static void test_cases(void)
{
    static const char *const valid[] = {
        "0", "-0", "1.5e-300", "123456789012345678901234567890", "9223372036854775807", "-9223372036854775808",
        "9223372036854775808", "0.1", "5107932002103.018", "1700000000000000.123", "1E22", "1e23", "4.9e-324",
        "\"\"", "\"a\\u0000b\"", "\"\\ud83d\\ude00 \\u00e9 \\\" \\\\ \\/ \\b\\f\\n\\r\\t\"", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
        "[]", "{}", " [ 1 , [ ] , { } , \"x\" ] ", "{\"a\":{\"b\":[true,false,null]},\"a\":2}", "\xef\xbb\xbf[1]",
        "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"aten::mm\",\"ts\":1.5,\"args\":{\"Input Dims\":[[2,3],[3,4]]}}]}",
    };
    for (size_t i = 0; i < sizeof valid / sizeof *valid; i++)
        tu_check(agree(valid[i], strlen(valid[i]), true), "valid: %s", valid[i]);
    static const char *const invalid[] = {
        "", " ", "[", "[1,]", "[1 2]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{1:2}", "01", "-", "1.", "1e", "1e+",
        ".5", "+1", "1e400", "-1e400", "tru", "nul", "[true false]", "\"abc", "\"a\x01\"", "\"\\x\"",
        "\"\\u12\"", "\"\\u12g4\"", "\"\\udc00\"", "\"\\ud800\"", "\"\\ud800\\u0041\"", "\"\xc3\"", "\"\xed\xa0\x80\"",
        "\"\xf4\x90\x80\x80\"", "\"\xc0\xaf\"", "[1] [2]", "{\"a\":1} x", "[\"\\", "\"\\u00",
        /* An error inside a string, then escaped quotes and backslashes to
         * scan past for the closing quote (or to find there is none). */
        "\"a\x01\\\"b\\\\\"", "\"a\x01\\\"b\\\\", "\"\\x\\\"\\\"\"", "[\"\xc3(\\\"\"]",
    };
    for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++)
        tu_check(agree(invalid[i], strlen(invalid[i]), true), "invalid, same message as json_parse: %s", invalid[i]);
    char deep[600];
    memset(deep, '[', 300);
    memset(deep + 300, ']', 300);
    tu_check(agree(deep, 600, true), "301 levels: both refuse at level %d", JSON_MAX_DEPTH + 1);
}

/* ------------------------------------------------------- random documents */

static void rand_string(jc_buf *b)
{
    static const char *const pieces[] = {"a", "Z", " ", "\\n", "\\\"", "\\\\", "\\u00e9", "\\ud83d\\ude00", "\xc3\xa9",
                                         "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\\u0000", "\\/", "aten::mm", "#"};
    jc_put(b, "\"", 1);
    int n = (int)(tu_rand_u64() % 12);
    for (int i = 0; i < n; i++) {
        const char *s = pieces[tu_rand_u64() % (sizeof pieces / sizeof *pieces)];
        jc_put(b, s, strlen(s));
    }
    jc_put(b, "\"", 1);
}

static void rand_number(jc_buf *b)
{
    char t[64];
    int n;
    switch (tu_rand_u64() % 4) {
    case 0: n = snprintf(t, sizeof t, "%lld", (long long)(tu_rand_u64() >> (tu_rand_u64() % 64))); break;
    case 1: n = snprintf(t, sizeof t, "-%llu", (unsigned long long)(tu_rand_u64() >> (tu_rand_u64() % 64))); break;
    case 2: n = snprintf(t, sizeof t, "%.17g", tu_rand_uniform(-1e6, 1e6) * pow(10, (double)(tu_rand_u64() % 40) - 20)); break;
    default: n = snprintf(t, sizeof t, "%.3f", tu_rand_uniform(0, 1e13)); break;
    }
    jc_put(b, t, (size_t)n);
}

static void rand_value(jc_buf *b, int depth)
{
    int k = (int)(tu_rand_u64() % (depth > 5 ? 4 : 6));
    const char *ws = tu_rand_u64() % 3 ? "" : "\n  ";
    jc_put(b, ws, strlen(ws));
    switch (k) {
    case 0: rand_number(b); break;
    case 1: rand_string(b); break;
    case 2: jc_put(b, tu_rand_u64() % 2 ? "true" : "null", 4); break;
    case 3: jc_put(b, "false", 5); break;
    default: {
        bool obj = k == 5;
        jc_put(b, obj ? "{" : "[", 1);
        int n = (int)(tu_rand_u64() % 6);
        for (int i = 0; i < n; i++) {
            if (i) jc_put(b, ",", 1);
            if (obj) {
                rand_string(b);
                jc_put(b, " : ", 1 + (tu_rand_u64() % 2) * 2);
            }
            rand_value(b, depth + 1);
        }
        jc_put(b, obj ? "}" : "]", 1);
    }
    }
}

static void test_random(void)
{
    int bad = 0, docs = 0, corrupted = 0;
    for (int i = 0; i < 300; i++) {
        jc_buf b = {0};
        rand_value(&b, 0);
        docs++;
        bad += !agree(b.s, b.n, true);
        /* A corruption: one byte replaced, inserted or dropped. */
        for (int m = 0; m < 4 && b.n; m++) {
            char *c = malloc(b.n + 2);
            size_t at = tu_rand_u64() % b.n, n = b.n;
            static const char bytes[] = "\"\\{}[],: 0-.eE\x01\xc3\xe2\xff";
            char with = bytes[tu_rand_u64() % (sizeof bytes - 1)];
            memcpy(c, b.s, b.n);
            switch (m % 3) {
            case 0: c[at] = with; break;
            case 1:
                memmove(c + at + 1, c + at, b.n - at);
                c[at] = with;
                n++;
                break;
            default:
                memmove(c + at, c + at + 1, b.n - at - 1);
                n--;
                break;
            }
            corrupted++;
            bad += !agree(c, n, false);
            free(c);
        }
        free(b.s);
    }
    tu_check(bad == 0, "%d random documents and %d corruptions: same verdict and values both ways, any chunking (%d differ)",
             docs, corrupted, bad);
}

static void test_numbers(void)
{
    int bad = 0;
    for (int i = 0; i < 20000; i++) {
        uint64_t bits = tu_rand_u64();
        double v;
        memcpy(&v, &bits, 8);
        if (!isfinite(v)) continue;
        char t[64];
        snprintf(t, sizeof t, "%.*g", i % 2 ? 17 : (int)(1 + tu_rand_u64() % 17), v);
        jp_parser p;
        jp_init_mem(&p, t, strlen(t), 64, 4);
        const double want = strtod(t, NULL);
        /* fewer digits can round past the largest double: refused, as json_parse does */
        if (isinf(want))
            bad += jp_next(&p) != JP_ERROR;
        else
            bad += jp_next(&p) != JP_NUMBER || p.num != want || signbit(p.num) != signbit(want);
        jp_free(&p);
    }
    tu_check(bad == 0, "20000 random doubles read back exactly as strtod reads them, or refused where it overflows (%d differ)", bad);
}

/* -------------------------------------------------------------- limits */

static void test_limits(void)
{
    /* A string longer than max_string cannot be kept but can be skipped. */
    size_t n = 10u << 20;
    char *doc = malloc(n + 64);
    int len = sprintf(doc, "{\"big\":\"");
    memset(doc + len, 'x', n);
    len += (int)n;
    len += sprintf(doc + len, "\",\"k\":1}");
    jc_chunks c = {(const unsigned char *)doc, (size_t)len, 0, 1 << 16};
    jp_parser p;
    jp_init_reader(&p, jc_read_chunk, &c, 4096, 8);
    bool ok = jp_next(&p) == JP_OBJECT && jp_next(&p) == JP_KEY && jp_skip(&p) && jp_next(&p) == JP_KEY &&
              jp_str_is(&p, "k") && jp_next(&p) == JP_NUMBER && p.num == 1 && jp_next(&p) == JP_OBJECT_END &&
              jp_next(&p) == JP_END;
    tu_check(ok && p.cap <= (2u << 20), "a 10 MB string is skipped through a window of %zu bytes", p.cap);
    jp_free(&p);
    c.at = 0;
    jp_init_reader(&p, jc_read_chunk, &c, 4096, 8);
    ok = jp_next(&p) == JP_OBJECT && jp_next(&p) == JP_KEY && jp_next(&p) == JP_ERROR;
    tu_check(ok && p.err == JP_ERR_STRING_LIMIT && strstr(p.msg, "4096") && p.err_offset == 7 && p.cap <= (2u << 20),
             "the same string kept: refused at its quote, byte 7, by the 4096-byte limit (%s at %llu)", p.msg,
             (unsigned long long)p.err_offset);
    jp_free(&p);
    free(doc);

    char deep[100];
    memset(deep, '[', sizeof deep);
    jp_init_mem(&p, deep, sizeof deep, 64, 10);
    int opened = 0;
    while (jp_next(&p) == JP_ARRAY) opened++;
    tu_check(opened == 10 && p.err == JP_ERR_DEPTH_LIMIT && p.err_offset == 10,
             "depth limit 10: the 11th '[' is refused (%d opened, %s)", opened, p.msg);
    jp_free(&p);

    /* The window: a source that fills every read (a file) grows it to
     * 1 MiB; one that trickles (a pipe-like reader) keeps it at 64 KiB. */
    jc_buf w = {0};
    jc_put(&w, "[", 1);
    for (int i = 0; i < 1000000; i++) jc_put(&w, "12,", 3);
    jc_put(&w, "3]", 2);
    size_t caps[2];
    bool whole[2];
    for (int k = 0; k < 2; k++) {
        jc_chunks wc = {(const unsigned char *)w.s, w.n, 0, k ? 100 : (size_t)-1};
        jp_init_reader(&p, jc_read_chunk, &wc, 64, 4);
        size_t vals = 0;
        jp_token t = jp_next(&p);
        while ((t = jp_next(&p)) == JP_NUMBER) vals++;
        whole[k] = t == JP_ARRAY_END && jp_next(&p) == JP_END && vals == 1000001;
        caps[k] = p.cap;
        jp_free(&p);
    }
    tu_check(whole[0] && whole[1] && caps[0] >= (1u << 20) && caps[1] <= (64u << 10),
             "a 3 MB array read whole: window %zu bytes from a filling source, %zu from 100-byte reads", caps[0],
             caps[1]);
    free(w.s);

    /* Error positions count lines across windows. */
    jc_buf b = {0};
    jc_put(&b, "[", 1);
    for (int i = 0; i < 20000; i++) jc_put(&b, "1,\n", 3);
    jc_put(&b, "x", 1);
    outcome o = run(b.s, b.n, 4096, 0);
    tu_check(!o.ok && o.line == 20001 && o.col == 1, "an error after 20000 lines is at line 20001, column 1 (%llu:%llu)",
             (unsigned long long)o.line, (unsigned long long)o.col);
    free(o.text.s);
    free(b.s);
}

int main(void)
{
    tu_seed();
    test_cases();
    test_random();
    test_numbers();
    test_limits();
    return tu_finish();
}
