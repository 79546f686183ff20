/* Why: the JSON parser reads files we did not write (safetensors headers,
 * traces, caches); this pins down what it accepts, what it rejects with which
 * offset, that exact integers survive beyond 2^53, that nesting is bounded,
 * and that the writer's output parses back to the same string. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "test_util.h"

static json_doc *parse(const char *s, json_error *err) { return json_parse(s, strlen(s), err); }

static void check_rejects(const char *text, size_t len, size_t want_offset, const char *why)
{
    json_error err;
    json_doc *d = json_parse(text, len, &err);
    tu_check(!d && err.msg[0] && err.offset == want_offset, "rejects %s at byte %zu (got byte %zu: %s)", why,
             want_offset, err.offset, err.msg);
    json_free(d);
}

static void test_scalars(void)
{
    json_error err;
    json_doc *d = parse(" [null, true, false, 0, -0, 1.5, -2.5e-3, 1E2, \"x\"] ", &err);
    const json_value *r = json_doc_root(d);
    tu_check(d && r->type == JSON_ARRAY && json_len(r) == 9, "array of scalars parses (%s)", d ? "" : err.msg);
    tu_check(json_at(r, 0)->type == JSON_NULL, "null");
    tu_check(json_at(r, 1)->type == JSON_BOOL && json_at(r, 1)->boolean, "true");
    tu_check(json_at(r, 2)->type == JSON_BOOL && !json_at(r, 2)->boolean, "false");
    int64_t i = 99;
    tu_check(json_int(json_at(r, 3), &i) && i == 0, "0 is the integer 0");
    tu_check(json_int(json_at(r, 4), &i) && i == 0 && signbit(json_num(json_at(r, 4), 1)), "-0 is integer 0, double -0");
    tu_check(!json_int(json_at(r, 5), &i) && json_num(json_at(r, 5), 0) == 1.5, "1.5 is a non-integer number");
    tu_check(json_num(json_at(r, 6), 0) == -2.5e-3, "-2.5e-3");
    tu_check(json_num(json_at(r, 7), 0) == 100.0 && !json_at(r, 7)->is_int, "1E2 is 100 but not an integer literal");
    tu_check(json_str(json_at(r, 8)) && strcmp(json_str(json_at(r, 8)), "x") == 0, "string element");
    tu_check(json_at(r, 9) == NULL && json_at(NULL, 0) == NULL, "out-of-range and NULL json_at give NULL");
    tu_check(json_at(r, 8)->offset == 47, "values record their byte offset (%zu)", json_at(r, 8)->offset);
    json_free(d);

    d = parse("42", &err);
    tu_check(d && json_int(json_doc_root(d), &i) && i == 42, "top-level scalar document");
    json_free(d);
    d = parse("\xef\xbb\xbf{}", &err);
    tu_check(d && json_doc_root(d)->type == JSON_OBJECT, "UTF-8 byte order mark is skipped");
    json_free(d);
}

static void test_objects(void)
{
    const char *text = "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"aten::addmm\", \"ts\": 12.5, \"dur\": 3,"
                       " \"args\": {\"External id\": 7, \"Input Dims\": [[8, 768], [3072, 768]]}}],"
                       " \"a\": 1, \"a\": 2, \"empty\": {}, \"none\": []}";
    json_error err;
    json_doc *d = parse(text, &err);
    const json_value *r = json_doc_root(d);
    tu_check(d && r->type == JSON_OBJECT && json_len(r) == 5, "trace-like object parses (%s)", d ? "" : err.msg);
    const json_value *ev = json_at(json_get(r, "traceEvents"), 0);
    tu_check(strcmp(json_get_str(ev, "name"), "aten::addmm") == 0, "lookup by key");
    tu_check(json_get_num(ev, "ts", -1) == 12.5 && json_get_int(ev, "dur", -1) == 3, "number and integer members");
    tu_check(json_get_int(json_get(ev, "args"), "External id", -1) == 7, "nested args lookup");
    const json_value *dims = json_get(json_get(ev, "args"), "Input Dims");
    tu_check(json_get_int(NULL, "x", -5) == -5 && json_get(json_at(dims, 0), "x") == NULL,
             "lookups on NULL or non-objects give the default");
    tu_check(json_int(json_at(json_at(dims, 1), 0), NULL) && json_at(json_at(dims, 1), 0)->u.num.integer == 3072,
             "array of arrays");
    tu_check(json_get_int(r, "a", -1) == 1, "duplicate key: the first wins");
    tu_check(json_len(json_get(r, "empty")) == 0 && json_get(r, "empty")->type == JSON_OBJECT, "empty object");
    tu_check(json_len(json_get(r, "none")) == 0 && json_get(r, "none")->type == JSON_ARRAY, "empty array");
    tu_check(json_get(r, "missing") == NULL && json_get_str(ev, "ts") == NULL, "missing key and wrong type give NULL");
    const json_value *m = json_at(r, 1);
    tu_check(m && strcmp(m->key, "a") == 0 && m->key_len == 1, "members iterate in order with their keys");
    json_free(d);
}

static void test_numbers(void)
{
    json_error err;
    json_doc *d = parse("[9007199254740993, 9223372036854775807, -9223372036854775808, 9223372036854775808,"
                        " 123456789012345678901234567890, 1e308, 1e-400, 0.1]",
                        &err);
    const json_value *r = json_doc_root(d);
    int64_t i = 0;
    tu_check(d && json_int(json_at(r, 0), &i) && i == 9007199254740993LL, "2^53+1 stays exact (%lld)", (long long)i);
    tu_check(json_int(json_at(r, 1), &i) && i == INT64_MAX, "INT64_MAX exact");
    tu_check(json_int(json_at(r, 2), &i) && i == INT64_MIN, "INT64_MIN exact");
    tu_check(!json_int(json_at(r, 3), &i) && json_num(json_at(r, 3), 0) == 9223372036854775808.0,
             "2^63 is not an int64 but still a number");
    tu_check(!json_at(r, 4)->is_int && json_num(json_at(r, 4), 0) > 1.2e29, "30-digit integer as a double");
    tu_check(json_num(json_at(r, 5), 0) == 1e308, "1e308");
    tu_check(json_num(json_at(r, 6), 1) == 0.0, "underflow to zero is accepted");
    tu_check(json_num(json_at(r, 7), 0) == 0.1, "0.1 rounds to nearest");
    json_free(d);
}

static void test_strings(void)
{
    json_error err;
    json_doc *d = parse("[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u00e9\\u20ac\\ud83d\\ude00\", \"x\\u0000y\","
                        " \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]",
                        &err);
    const json_value *r = json_doc_root(d);
    tu_check(d && strcmp(json_str(json_at(r, 0)), "a\"b\\c/d\b\f\n\r\t") == 0, "simple escapes (%s)",
             d ? "" : err.msg);
    tu_check(strcmp(json_str(json_at(r, 1)), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80") == 0,
             "\\u escapes incl. a surrogate pair become UTF-8");
    tu_check(json_at(r, 2)->len == 3 && memcmp(json_str(json_at(r, 2)), "x\0y", 3) == 0, "\\u0000 kept with length");
    tu_check(strcmp(json_str(json_at(r, 3)), json_str(json_at(r, 1))) == 0, "raw UTF-8 passes through");
    json_free(d);
}

static void test_malformed(void)
{
    struct {
        const char *text;
        size_t offset;
        const char *why;
    } cases[] = {
        {"", 0, "empty input"},
        {"   ", 3, "whitespace only"},
        {"{", 1, "unclosed object"},
        {"[1, 2", 5, "unclosed array"},
        {"[1 2]", 3, "missing comma"},
        {"[1,]", 3, "trailing comma in array"},
        {"{\"a\":1,}", 7, "trailing comma in object"},
        {"{a:1}", 1, "unquoted key"},
        {"{\"a\" 1}", 5, "missing colon"},
        {"{\"a\":}", 5, "missing value"},
        {"\"abc", 0, "unterminated string"},
        {"\"a\\", 0, "string ending in a backslash"},
        {"\"\\x\"", 2, "bad escape"},
        {"\"\\u12G4\"", 5, "bad hex digit"},
        {"\"\\u12\"", 1, "short \\u escape"},
        {"\"\\ud800\"", 1, "lone high surrogate"},
        {"\"\\ud800\\u0041\"", 1, "high surrogate then non-low"},
        {"\"\\udc00\"", 1, "lone low surrogate"},
        {"\"a\tb\"", 2, "raw control character"},
        {"\"\xc3\"", 1, "truncated UTF-8"},
        {"\"\xc0\xaf\"", 1, "overlong UTF-8"},
        {"\"\xed\xa0\x80\"", 1, "UTF-8 encoded surrogate"},
        {"\"\xf4\x90\x80\x80\"", 1, "UTF-8 above U+10FFFF"},
        {"\"\xff\"", 1, "byte 0xff"},
        {"01", 0, "leading zero"},
        {"-", 1, "lone minus"},
        {"+1", 0, "plus sign"},
        {"1.", 2, "no digits after the point"},
        {".5", 0, "no digits before the point"},
        {"1e", 2, "empty exponent"},
        {"1e+", 3, "empty signed exponent"},
        {"1e400", 0, "double overflow"},
        {"NaN", 0, "NaN"},
        {"Infinity", 0, "Infinity"},
        {"tru", 0, "truncated true"},
        {"nul", 0, "truncated null"},
        {"[true false]", 6, "missing comma between literals"},
        {"{} x", 3, "trailing garbage"},
        {"[] []", 3, "two documents"},
        {"/* c */ 1", 0, "comments"},
        {"['a']", 1, "single quotes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_rejects(cases[i].text, strlen(cases[i].text), cases[i].offset, cases[i].why);

    check_rejects("[1, 2, 3]", 5, 5, "a buffer cut short (no NUL terminator relied on)");
    check_rejects("[\0]", 3, 1, "NUL byte outside a string");
    check_rejects("\"a\0b\"", 5, 2, "raw NUL byte inside a string");

    json_error err;
    json_doc *d = json_parse("{\n  \"a\": [1,\n    oops]}", 22, &err);
    tu_check(!d && err.line == 3 && err.col == 5, "line and column of the error (line %d col %d)", err.line, err.col);
    d = json_parse(NULL, 0, &err);
    tu_check(!d && err.msg[0], "NULL buffer is an error, not a crash");
    json_free(NULL);
}

static void test_depth(void)
{
    char buf[2 * (JSON_MAX_DEPTH + 1) + 1];
    for (int depth = JSON_MAX_DEPTH; depth <= JSON_MAX_DEPTH + 1; depth++) {
        memset(buf, '[', (size_t)depth);
        memset(buf + depth, ']', (size_t)depth);
        json_error err;
        json_doc *d = json_parse(buf, (size_t)(2 * depth), &err);
        if (depth == JSON_MAX_DEPTH)
            tu_check(d != NULL, "nesting of %d levels is accepted", depth);
        else
            tu_check(!d && err.offset == JSON_MAX_DEPTH && strstr(err.msg, "nesting"),
                     "nesting of %d levels is rejected at byte %zu: %s", depth, err.offset, err.msg);
        json_free(d);
    }
    /* A million open brackets must fail fast at the limit, not overflow the stack. */
    size_t n = 1000000;
    char *deep = malloc(n);
    memset(deep, '[', n);
    json_error err;
    json_doc *d = json_parse(deep, n, &err);
    tu_check(!d && err.offset == JSON_MAX_DEPTH, "a million open brackets are rejected: %s", err.msg);
    free(deep);
}

static void test_large(void)
{
    /* 200k events: the shape of a big trace. */
    size_t n = 200000, cap = n * 64 + 64, len = 0;
    char *buf = malloc(cap);
    len += (size_t)snprintf(buf + len, cap - len, "{\"traceEvents\":[");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s{\"ts\":%zu,\"args\":{\"id\":%zu}}", i ? "," : "",
                                (size_t)(i * 1000000007ull), i);
    len += (size_t)snprintf(buf + len, cap - len, "]}");
    json_error err;
    json_doc *d = json_parse(buf, len, &err);
    const json_value *ev = json_get(json_doc_root(d), "traceEvents");
    bool ok = d && json_len(ev) == n;
    for (size_t i = 0; ok && i < n; i += 997)
        ok = json_get_int(json_at(ev, i), "ts", -1) == (int64_t)(i * 1000000007ull) &&
             json_get_int(json_get(json_at(ev, i), "args"), "id", -1) == (int64_t)i;
    tu_check(ok, "%zu-event document (%zu bytes) parses with exact values", n, len);
    json_free(d);
    free(buf);
}

static void test_writer(void)
{
    const char *in[] = {"plain", "quote\" back\\ slash/", "ctl\x01\x1f\n\t\r\b\f", "\xc3\xa9\xf0\x9f\x98\x80", ""};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        char *mem = NULL;
        size_t memlen = 0;
        FILE *f = open_memstream(&mem, &memlen);
        json_write_string(f, in[i]);
        fclose(f);
        json_error err;
        json_doc *d = json_parse(mem, memlen, &err);
        tu_check(d && strcmp(json_str(json_doc_root(d)), in[i]) == 0, "string %zu round-trips through %s", i, mem);
        char small[4];
        size_t need = json_escape(small, sizeof small, in[i], strlen(in[i]));
        tu_check(need == memlen && strlen(small) == (memlen < 3 ? memlen : 3),
                 "json_escape reports the full length (%zu) and truncates safely", need);
        json_free(d);
        free(mem);
    }
    char out[64];
    json_escape(out, sizeof out, "a\xff" "b\xc3", 4);
    tu_check(strcmp(out, "\"a\\ufffdb\\ufffd\"") == 0, "invalid UTF-8 is written as U+FFFD: %s", out);
    json_escape(out, sizeof out, "x\0y", 3);
    tu_check(strcmp(out, "\"x\\u0000y\"") == 0, "embedded NUL is escaped: %s", out);

    double nums[] = {0.1, 1.0 / 3.0, 1e300, -5e-324, 12345678.0, 9007199254740993.0, NAN, INFINITY};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        char *mem = NULL;
        size_t memlen = 0;
        FILE *f = open_memstream(&mem, &memlen);
        json_write_number(f, nums[i]);
        fclose(f);
        json_doc *d = json_parse(mem, memlen, NULL);
        const json_value *r = json_doc_root(d);
        bool ok = isfinite(nums[i]) ? d && json_num(r, NAN) == nums[i] : d && r->type == JSON_NULL;
        tu_check(ok, "number %g written as %s reads back exactly", nums[i], mem);
        json_free(d);
        free(mem);
    }
}

int main(void)
{
    test_scalars();
    test_objects();
    test_numbers();
    test_strings();
    test_malformed();
    test_depth();
    test_large();
    test_writer();
    return tu_finish();
}
