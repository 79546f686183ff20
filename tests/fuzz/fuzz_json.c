/* Why: the JSON parsers read trace files and safetensors headers from
 * anywhere. Beyond "never crashes", this checks on every input that the
 * pull parser (json_pull, what the readers use) and the tree parser agree:
 * same verdict, same values, from memory and through a reader cut into
 * chunks of a size the input picks, skipping some values; and, on every
 * input that parses, that each string survives json_escape and a re-parse
 * unchanged and each number written by json_write_number reads back equal
 * (NaN and Inf cannot occur in parsed JSON). Those round trips cost a parse
 * or a stream each, so an input has its first CHECKS strings and numbers
 * checked: a large input's thousandth number is no different from a small
 * input's first, and the runs go to more inputs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "json_canon.h"

enum { CHECKS = 64 };
static int g_strings, g_numbers; /* round trips left for this input */

static void check_string(const char *s, size_t n)
{
    if (g_strings <= 0) return;
    g_strings--;
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
    if (g_numbers <= 0) return;
    g_numbers--;
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

/* json_pull over the input: from memory (chunk 0) or in chunks. */
static bool pull(const uint8_t *data, size_t size, size_t chunk, int skip_every, jc_buf *out)
{
    jp_parser p;
    jc_chunks c = {data, size, 0, chunk};
    if (chunk)
        jp_init_reader(&p, jc_read_chunk, &c, size + 64, JSON_MAX_DEPTH);
    else
        jp_init_mem(&p, data, size, size + 64, JSON_MAX_DEPTH);
    bool ok = jc_canon_pull(out, &p, skip_every);
    if (!ok && (!p.msg[0] || p.err == JP_ERR_NONE)) abort();
    jp_free(&p);
    return ok;
}

static void agree(const uint8_t *data, size_t size, const json_doc *d)
{
    jc_buf want = {0}, mem = {0}, cut = {0}, skipped = {0};
    if (d) jc_canon_dom_pull_style(&want, json_doc_root(d));
    size_t chunk = 1 + (size ? data[0] % 13 : 0);
    bool a = pull(data, size, 0, 0, &mem), b = pull(data, size, chunk, 0, &cut);
    bool c = pull(data, size, chunk, 1 + (int)(size % 3), &skipped);
    if (a != (d != NULL) || b != a || c != a) abort();
    if (d && (strcmp(mem.s ? mem.s : "", want.s ? want.s : "") != 0 || strcmp(cut.s ? cut.s : "", mem.s ? mem.s : "") != 0))
        abort();
    free(want.s);
    free(mem.s);
    free(cut.s);
    free(skipped.s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error err;
    json_doc *d = json_parse((const char *)data, size, &err);
    agree(data, size, d);
    if (d) {
        g_strings = g_numbers = CHECKS;
        walk(json_doc_root(d), 0);
    } else if (err.offset > size || !err.msg[0]) {
        abort();
    }
    json_free(d);
    return 0;
}
