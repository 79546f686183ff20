/* Why: the JSON parser reads trace files and safetensors headers from
 * anywhere. Beyond "never crashes", this checks two properties on every
 * input that parses: each string survives json_escape and a re-parse
 * unchanged, and each number written by json_write_number reads back equal
 * (NaN and Inf cannot occur in parsed JSON). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"

static void check_string(const char *s, size_t n)
{
    size_t need = json_escape(NULL, 0, s, n);
    char *buf = malloc(need + 1);
    if (!buf) return;
    if (json_escape(buf, need + 1, s, n) != need) abort();
    json_error err;
    json_doc *d = json_parse(buf, need, &err);
    const json_value *r = json_doc_root(d);
    if (!d || r->type != JSON_STRING || r->len != n || memcmp(r->u.str, s, n) != 0) abort();
    json_free(d);
    free(buf);
}

static void check_number(double v)
{
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    if (!f) return;
    json_write_number(f, v);
    fclose(f);
    json_doc *d = json_parse(mem, len, NULL);
    if (!d || json_num(json_doc_root(d), 0) != v) abort();
    json_free(d);
    free(mem);
}

static void walk(const json_value *v, int depth)
{
    if (depth > JSON_MAX_DEPTH + 1) abort();
    if (v->key) check_string(v->key, v->key_len);
    switch (v->type) {
    case JSON_STRING:
        if (v->u.str[v->len] != 0) abort();
        check_string(v->u.str, v->len);
        break;
    case JSON_NUMBER: {
        int64_t i;
        if (json_int(v, &i) && (double)i != v->u.num.number) abort();
        check_number(v->u.num.number);
        break;
    }
    case JSON_ARRAY:
    case JSON_OBJECT:
        for (size_t i = 0; i < json_len(v); i++) walk(json_at(v, i), depth + 1);
        if (v->type == JSON_OBJECT && json_len(v) && json_get_n(v, v->u.items[0].key, v->u.items[0].key_len) != &v->u.items[0])
            abort();
        break;
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error err;
    json_doc *d = json_parse((const char *)data, size, &err);
    if (d) {
        walk(json_doc_root(d), 0);
    } else if (err.offset > size || !err.msg[0]) {
        abort();
    }
    json_free(d);
    return 0;
}
