/* Why: safetensors files come from anywhere. This checks that what fmlp
 * writes reads back bit-exactly (every dtype, ranks 1-3, conversion on read),
 * that PyTorch-written fixtures open, and that every kind of corrupt file is
 * refused with the right status and a message naming the tensor and the
 * problem, never a crash (run it under ASan/UBSan). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/dtype.h"
#include "test_util.h"

static char g_path[1024];

static const char *tmp_path(const char *name)
{
    snprintf(g_path, sizeof g_path, "%s/st_%s.safetensors", tu_tmpdir(), name);
    return g_path;
}

/* A file of the 8-byte length, the header text, and `data_len` bytes. */
static const char *write_raw(const char *name, const char *header, size_t data_len)
{
    const char *path = tmp_path(name);
    FILE *f = fopen(path, "wb");
    uint64_t n = strlen(header);
    for (int i = 0; i < 8; i++) fputc((int)((n >> (8 * i)) & 0xff), f);
    fwrite(header, 1, n, f);
    for (size_t i = 0; i < data_len; i++) fputc((int)(i * 7 + 1) & 0xff, f);
    fclose(f);
    return path;
}

static const char *write_bytes(const char *name, const void *p, size_t n)
{
    const char *path = tmp_path(name);
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
    return path;
}

static bool msg_has(const char *a, const char *b)
{
    const char *m = fmlp_last_error();
    return strstr(m, a) && (!b || strstr(m, b));
}

/* Opening must fail with `want` and a message containing both needles. */
static void expect_open_fail(const char *path, fmlp_status want, const char *n1, const char *n2, const char *what)
{
    fmlp_st_file *f = (fmlp_st_file *)(uintptr_t)1;
    fmlp_status st = fmlp_st_open(path, &f);
    if (tu_expect_fail(st, want, what)) tu_check(msg_has(n1, n2), "  message names '%s'%s%s", n1, n2 ? " and " : "", n2 ? n2 : "");
    tu_check(f == NULL, "  no handle is returned on failure");
    if (st == FMLP_OK) fmlp_st_close(f);
}

static void expect_header_fail(const char *header, size_t data_len, const char *n1, const char *n2, const char *what)
{
    expect_open_fail(write_raw("bad", header, data_len), FMLP_ERR_FORMAT, n1, n2, what);
}

static void test_round_trip(void)
{
    const fmlp_dtype dts[] = {FMLP_F32, FMLP_BF16, FMLP_F16};
    const int64_t shapes[3][3] = {{37, 0, 0}, {5, 24, 0}, {2, 3, 16}};
    fmlp_st_tensor t[9];
    void *bufs[9];
    char names[9][32];
    int n = 0;
    for (int d = 0; d < 3; d++) {
        for (int r = 1; r <= 3; r++, n++) {
            snprintf(names[n], sizeof names[n], "t.%s.rank%d", fmlp_dtype_name(dts[d]), r);
            int64_t numel = 1;
            for (int k = 0; k < r; k++) numel *= shapes[r - 1][k];
            bufs[n] = malloc((size_t)numel * fmlp_dtype_size(dts[d]));
            tu_fill(dts[d], bufs[n], numel, -3, 3, NULL);
            t[n] = (fmlp_st_tensor){names[n], dts[d], r, {shapes[r - 1][0], shapes[r - 1][1], shapes[r - 1][2]}, bufs[n]};
        }
    }
    const char *path = tmp_path("roundtrip");
    tu_check(fmlp_st_write(path, t, n) == FMLP_OK, "write %d tensors (3 dtypes x ranks 1-3): %s", n, fmlp_last_error());

    FILE *raw = fopen(path, "rb");
    unsigned char len8[8];
    tu_check(raw && fread(len8, 1, 8, raw) == 8, "file has a length prefix");
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | len8[i];
    char *hdr = calloc(1, (size_t)hlen + 1);
    tu_check(fread(hdr, 1, (size_t)hlen, raw) == hlen && (8 + hlen) % 8 == 0, "header pads the data section to 8 bytes");
    tu_check(strstr(hdr, "\"__metadata__\":{\"format\":\"pt\"}") != NULL, "header carries format=pt metadata");
    free(hdr);
    fclose(raw);

    fmlp_st_file *f = NULL;
    tu_check(fmlp_st_open(path, &f) == FMLP_OK, "open what was written: %s", fmlp_last_error());
    tu_check(fmlp_st_count(f) == n, "count %d", fmlp_st_count(f));
    for (int i = 0; i < n; i++) {
        tu_check(strcmp(fmlp_st_name(f, i), names[i]) == 0, "name %d in written order: %s", i, fmlp_st_name(f, i));
        fmlp_dtype dt;
        int64_t rows, cols;
        const void *data;
        fmlp_status st = fmlp_st_find(f, names[i], &dt, &rows, &cols, &data);
        int r = t[i].rank;
        int64_t want_rows = r == 1 ? t[i].shape[0] : r == 2 ? t[i].shape[0] : t[i].shape[0] * t[i].shape[1];
        int64_t want_cols = r == 1 ? 1 : t[i].shape[r - 1];
        size_t bytes = (size_t)(want_rows * want_cols) * fmlp_dtype_size(t[i].dtype);
        tu_check(st == FMLP_OK && dt == t[i].dtype && rows == want_rows && cols == want_cols &&
                     memcmp(data, bufs[i], bytes) == 0,
                 "%s: find gives %lld x %lld and the bytes written", names[i], (long long)rows, (long long)cols);
        tu_check(fmlp_st_find(f, names[i], NULL, NULL, NULL, NULL) == FMLP_OK, "  find with NULL outputs");

        for (int d = 0; d < 3; d++) {
            int64_t numel = rows * cols;
            void *out = malloc((size_t)numel * 4), *want = malloc((size_t)numel * 4);
            tu_poison(dts[d], out, numel);
            fmlp_convert(dts[d], want, t[i].dtype, bufs[i], numel);
            st = fmlp_st_read(f, names[i], dts[d], out, rows, cols);
            tu_check(st == FMLP_OK && memcmp(out, want, (size_t)numel * fmlp_dtype_size(dts[d])) == 0,
                     "  read as %s converts exactly", fmlp_dtype_name(dts[d]));
            free(out);
            free(want);
        }
    }
    float one;
    tu_expect_fail(fmlp_st_read(f, names[1], FMLP_F32, &one, 1, 1), FMLP_ERR_SHAPE, "read with the wrong rows x cols");
    tu_check(msg_has(names[1], "[5, 24]"), "  message names the tensor and its shape");
    tu_expect_fail(fmlp_st_find(f, "nope", NULL, NULL, NULL, NULL), FMLP_ERR_INVALID_ARGUMENT, "find a missing name");
    tu_check(msg_has("nope", "t.f32.rank1"), "  message names the tensor and lists what the file holds");
    tu_expect_fail(fmlp_st_read(f, "nope", FMLP_F32, &one, 1, 1), FMLP_ERR_INVALID_ARGUMENT, "read a missing name");
    tu_check(fmlp_st_name(f, -1) == NULL && fmlp_st_name(f, n) == NULL, "name out of range is NULL");
    fmlp_st_close(f);
    fmlp_st_close(NULL);
    tu_check(fmlp_st_count(NULL) == 0, "count of NULL is 0");
    for (int i = 0; i < n; i++) free(bufs[i]);

    tu_check(fmlp_st_write(tmp_path("empty"), NULL, 0) == FMLP_OK && fmlp_st_open(tmp_path("empty"), &f) == FMLP_OK &&
                 fmlp_st_count(f) == 0,
             "a file with no tensors round-trips");
    fmlp_st_close(f);
}

static void test_torch_fixture(void)
{
    const char *dir = getenv("FMLP_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/seq_gelu_bf16.safetensors", dir ? dir : "tests/data");
    fmlp_st_file *f = NULL;
    if (access(path, R_OK) != 0) {
        tu_skip("no PyTorch fixture at %s", path);
        return;
    }
    fmlp_status st = fmlp_st_open(path, &f);
    fmlp_dtype dt;
    int64_t rows = 0, cols = 0;
    tu_check(st == FMLP_OK && fmlp_st_count(f) == 6, "PyTorch-written file opens: %s", fmlp_last_error());
    tu_check(fmlp_st_find(f, "0.bias", &dt, &rows, &cols, NULL) == FMLP_OK && dt == FMLP_BF16 && rows == 160 &&
                 cols == 1,
             "0.bias is bf16 [160] -> 160 x 1");
    tu_check(fmlp_st_find(f, "4.weight", &dt, &rows, &cols, NULL) == FMLP_OK && rows == 64 && cols == 160,
             "4.weight is 64 x 160");
    fmlp_st_close(f);
    /* PyTorch's (batch, seq, dim) input: rows = batch * seq, full shape kept. */
    snprintf(path, sizeof path, "%s/seq_relu_f32_io.safetensors", dir ? dir : "tests/data");
    int rank = 0;
    int64_t shape[FMLP_ST_MAX_RANK] = {0};
    bool ok = fmlp_st_open(path, &f) == FMLP_OK && fmlp_st_find(f, "y", NULL, &rows, &cols, NULL) == FMLP_OK &&
              fmlp_st_shape(f, "y", &rank, shape, FMLP_ST_MAX_RANK) == FMLP_OK;
    tu_check(ok && rank == 3 && shape[0] == 3 && shape[1] == 17 && shape[2] == 24 && rows == 51 && cols == 24,
             "torch's y (3, 17, 24): fmlp_st_shape gives all three dims, fmlp_st_find 51 x 24");
    fmlp_st_close(f);
}

static void test_unsupported_and_unaligned(void)
{
    /* F64 and I64 tensors are validated and listed but refused on access. */
    const char *path = write_raw("f64", "{\"w\":{\"dtype\":\"F64\",\"shape\":[2,2],\"data_offsets\":[0,32]},"
                                        "\"i\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[32,40]}}",
                                 40);
    fmlp_st_file *f = NULL;
    tu_check(fmlp_st_open(path, &f) == FMLP_OK && fmlp_st_count(f) == 2, "file with F64/I64 tensors opens: %s",
             fmlp_last_error());
    tu_expect_fail(fmlp_st_find(f, "w", NULL, NULL, NULL, NULL), FMLP_ERR_UNSUPPORTED, "find an F64 tensor");
    tu_check(msg_has("'w'", "F64"), "  message names the tensor and the dtype");
    double d4[4];
    tu_expect_fail(fmlp_st_read(f, "i", FMLP_F32, d4, 1, 1), FMLP_ERR_UNSUPPORTED, "read an I64 tensor");
    tu_check(msg_has("'i'", "I64"), "  message names the tensor and the dtype");
    fmlp_st_close(f);

    /* F32 at an odd offset; a rank-0 scalar and an empty tensor. */
    char header[256];
    snprintf(header, sizeof header,
             "{\"pad\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]},"
             "\"x\":{\"dtype\":\"F32\",\"shape\":[3,1],\"data_offsets\":[3,15]},"
             "\"s\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[15,17]},"
             "\"e\":{\"dtype\":\"F16\",\"shape\":[0,4],\"data_offsets\":[17,17]}}");
    size_t hl = strlen(header);
    unsigned char *buf = calloc(1, 8 + hl + 17);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(hl >> (8 * i));
    memcpy(buf + 8, header, hl);
    float xs[3] = {1.5f, -2.25f, 1e-3f};
    memcpy(buf + 8 + hl + 3, xs, 12);
    uint16_t s = fmlp_f32_to_bf16(-7.0f);
    memcpy(buf + 8 + hl + 15, &s, 2);
    path = write_bytes("unaligned", buf, 8 + hl + 17);
    free(buf);
    tu_check(fmlp_st_open(path, &f) == FMLP_OK, "file with unaligned offsets opens: %s", fmlp_last_error());
    float out[3] = {0};
    uint16_t out16[3];
    tu_check(fmlp_st_read(f, "x", FMLP_F32, out, 3, 1) == FMLP_OK && memcmp(out, xs, 12) == 0,
             "unaligned F32 tensor reads exactly");
    tu_check(fmlp_st_read(f, "x", FMLP_BF16, out16, 3, 1) == FMLP_OK && out16[1] == fmlp_f32_to_bf16(-2.25f),
             "unaligned F32 tensor converts to bf16");
    tu_check(fmlp_st_read(f, "s", FMLP_F32, out, 1, 1) == FMLP_OK && out[0] == -7.0f, "rank-0 scalar reads as 1 x 1");
    int64_t rows = -1, cols = -1;
    tu_check(fmlp_st_find(f, "e", NULL, &rows, &cols, NULL) == FMLP_OK && rows == 0 && cols == 4 &&
                 fmlp_st_read(f, "e", FMLP_F32, NULL, 0, 4) == FMLP_OK,
             "empty tensor [0, 4] is 0 x 4");
    /* The full shapes behind those flattenings, any dtype. */
    int rank = -1;
    int64_t shape[FMLP_ST_MAX_RANK] = {-1, -1};
    tu_check(fmlp_st_shape(f, "x", &rank, shape, FMLP_ST_MAX_RANK) == FMLP_OK && rank == 2 && shape[0] == 3 &&
                 shape[1] == 1,
             "fmlp_st_shape: x is [3, 1]");
    tu_check(fmlp_st_shape(f, "s", &rank, shape, 0) == FMLP_OK && rank == 0, "fmlp_st_shape: a scalar has rank 0");
    tu_check(fmlp_st_shape(f, "pad", &rank, shape, 1) == FMLP_OK && rank == 1 && shape[0] == 3,
             "fmlp_st_shape: a U8 tensor's shape is read too");
    tu_expect_fail(fmlp_st_shape(f, "e", &rank, shape, 1), FMLP_ERR_SHAPE, "fmlp_st_shape with room for 1 of 2 dims");
    tu_check(msg_has("'e'", "2 dimensions"), "  message names the tensor and its rank");
    tu_expect_fail(fmlp_st_shape(f, "nope", &rank, shape, 4), FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_shape of a missing name");
    tu_expect_fail(fmlp_st_shape(f, "x", NULL, shape, 4), FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_shape with rank NULL");
    fmlp_st_close(f);
}

static void test_corrupt_headers(void)
{
    /* A valid entry to splice: 2x2 F32 = 16 bytes. */
#define OK_A "\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}"
    expect_header_fail("{" OK_A ",", 16, "not valid JSON", "byte", "invalid JSON (unterminated object)");
    expect_header_fail("{" OK_A " \"b\":1}", 16, "not valid JSON", "expected ','", "invalid JSON (missing comma)");
    expect_header_fail("[1,2]", 0, "array, not an object", NULL, "header is an array");
    expect_header_fail("{\"a\":[1]}", 0, "'a'", "not an object", "entry is not an object");
    expect_header_fail("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'a'", "dtype", "entry lacks dtype");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "'a'", "shape", "entry lacks shape");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "'a'", "data_offsets", "entry lacks data_offsets");
    expect_header_fail("{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'a'", "not a string",
                       "dtype is a number");
    expect_header_fail("{\"a\":{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'a'", "unknown dtype \"Q7\"",
                       "unknown dtype");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,16]}}", 16, "'a'", "not an array",
                       "shape is a number");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,-2],\"data_offsets\":[0,16]}}", 16, "'a'",
                       "dimension 1", "negative dimension");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,10]}}", 10, "'a'",
                       "not a non-negative integer", "fractional dimension");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,16]}}", 16, "'a'",
                       "64 bits", "element count overflows");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,0,4],\"data_offsets\":[0,0]}}", 0, "'a'",
                       "64 bits", "overflowing dims around a zero");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2305843009213693952],\"data_offsets\":[0,16]}}", 16, "'a'",
                       "need", "byte count of a huge shape");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}",
                       4, "'a'", "dimensions", "rank 17");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "'a'", "two", "one offset");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8, "'a'", "two",
                       "three offsets");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":\"0,4\"}}", 4, "'a'", "two",
                       "offsets as a string");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4, "'a'", "non-negative",
                       "negative offset");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,18446744073709551616]}}", 4, "'a'",
                       "two non-negative integers", "offset beyond 2^64");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", 8, "'a'", "end before",
                       "end < begin");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", 12, "'a'",
                       "past the end of the data section", "end past the data section");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[9223372036854775800,9223372036854775807]}}",
                       16, "'a'", "past the end", "offsets near 2^63");
    expect_header_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,16]}}", 24, "'a'",
                       "span 16 bytes but 6 elements of F32 need 24", "size mismatch");
    expect_header_fail("{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2, "'a'", "whole bytes",
                       "sub-byte dtype with an odd count");
    expect_header_fail("{" OK_A ",\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16, "'b'", "overlap",
                       "overlapping tensors");
    expect_header_fail("{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}," OK_A "}", 16, "overlap", "'a'",
                       "overlap listed in the other order");
    expect_header_fail("{" OK_A ",\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[16,20]}," OK_A "}", 20, "'a'",
                       "twice", "duplicate names");
    expect_header_fail("{" OK_A ",\"__metadata__\":[1]}", 16, "__metadata__", "not an object", "metadata not an object");
    expect_header_fail("{" OK_A ",\"__metadata__\":{\"format\":1}}", 16, "format", "not a string",
                       "metadata value not a string");
    expect_header_fail("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "__metadata__", "twice", "metadata twice");
    expect_header_fail("{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "NUL", NULL,
                       "name with a NUL character");
    expect_header_fail("", 0, "not valid JSON", NULL, "empty header");
#undef OK_A

    /* Offsets with gaps between tensors and unused trailing bytes are fine. */
    fmlp_st_file *f = NULL;
    tu_check(fmlp_st_open(write_raw("gaps",
                                    "{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[8,12]},"
                                    "\"b\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}    ",
                                    20),
                          &f) == FMLP_OK,
             "gaps, trailing bytes and out-of-order offsets are accepted: %s", fmlp_last_error());
    fmlp_st_close(f);
}

typedef struct {
    fmlp_status st;
    int count;
    char msg[512];
} open_outcome;

static void open_st(void *path, void *out)
{
    open_outcome *o = out;
    fmlp_st_file *f = NULL;
    o->st = fmlp_st_open(path, &f);
    o->count = fmlp_st_count(f);
    snprintf(o->msg, sizeof o->msg, "%s", fmlp_last_error());
    fmlp_st_close(f);
}

/* A file of the 8-byte length, then `n` copies of `unit` between head and
 * tail as its header, written without holding it. */
static const char *write_big_header(const char *name, const char *head, const char *unit, size_t n, const char *tail)
{
    const char *path = tmp_path(name);
    uint64_t len = strlen(head) + strlen(unit) * n + strlen(tail);
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 8; i++) fputc((int)((len >> (8 * i)) & 0xff), f);
    fputs(head, f);
    for (size_t i = 0; i < n; i++) fputs(unit, f);
    fputs(tail, f);
    fclose(f);
    return path;
}

/* Headers as large as the format allows are checked as they are read: one
 * that is not an object is refused at its first byte, and what a header of
 * many tensors makes the reader hold grows with what it holds. */
static void test_large_headers(void)
{
    const char *path = write_big_header("zeros", "[0", ",0", 10000000, "]");
    open_outcome o;
    long grew;
    bool ran = tu_run_in_child(open_st, (void *)path, &o, sizeof o, &grew);
    tu_check(ran && o.st == FMLP_ERR_FORMAT && strstr(o.msg, "array, not an object") && grew < 8 * 1024,
             "a 20 MB header of [0,0,...] is refused at its first byte, holding %ld KB (< 8 MB): %s", grew, o.msg);
    remove(path);
    /* 100k empty tensors: 5.5 MB of header. */
    FILE *f = fopen(tmp_path("many"), "wb");
    const char *unit = "\"t%07d\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[0,0]}";
    size_t per = strlen(unit) - 4 + 7 + 1, n = 100000;
    uint64_t len = 2 + per * n - 1;
    for (int i = 0; i < 8; i++) fputc((int)((len >> (8 * i)) & 0xff), f);
    fputc('{', f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, unit, (int)i);
        if (i + 1 < n) fputc(',', f);
    }
    fputc('}', f);
    fclose(f);
    ran = tu_run_in_child(open_st, (void *)tmp_path("many"), &o, sizeof o, &grew);
    tu_check(ran && o.st == FMLP_OK && o.count == 100000 && grew < (long)(8 * len / 1024),
             "a header of 100000 empty tensors (%.1f MB) opens, holding %ld KB (< 8x the header): %s", (double)len / 1e6,
             grew, o.st == FMLP_OK ? "ok" : o.msg);
    remove(tmp_path("many"));
}

static void test_corrupt_files(void)
{
    expect_open_fail(write_bytes("zero", "", 0), FMLP_ERR_FORMAT, "shorter than the 8-byte", NULL, "empty file");
    expect_open_fail(write_bytes("seven", "\x10\0\0\0\0\0\0", 7), FMLP_ERR_FORMAT, "7 bytes", NULL, "7-byte file");
    unsigned char len_only[16] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    expect_open_fail(write_bytes("pastend", len_only, 10), FMLP_ERR_FORMAT, "header length 100", "past the end",
                     "header length past the end of the file");
    unsigned char huge[16] = {0, 0, 0, 0, 0, 0, 0, 0x80, '{', '}'};
    expect_open_fail(write_bytes("huge", huge, 10), FMLP_ERR_FORMAT, "header length 9223372036854775808", "100 MB",
                     "absurd header length");
    expect_open_fail(write_bytes("text", "{\"not\": \"a safetensors file\"}", 29), FMLP_ERR_FORMAT, "header length",
                     NULL, "a JSON file given as safetensors");
    expect_open_fail("/nonexistent/dir/x.safetensors", FMLP_ERR_IO, "cannot open", "/nonexistent", "missing file");
    expect_open_fail(tu_tmpdir(), FMLP_ERR_IO, "regular file", NULL, "a directory");
    char fifo[1024];
    snprintf(fifo, sizeof fifo, "%s/st_fifo", tu_tmpdir());
    unlink(fifo);
    if (mkfifo(fifo, 0600) == 0) expect_open_fail(fifo, FMLP_ERR_IO, "regular file", NULL, "a FIFO (not waited on)");
    fmlp_st_file *f = (fmlp_st_file *)(uintptr_t)1;
    tu_expect_fail(fmlp_st_open(NULL, &f), FMLP_ERR_INVALID_ARGUMENT, "NULL path");
    tu_expect_fail(fmlp_st_open("x", NULL), FMLP_ERR_INVALID_ARGUMENT, "NULL out");

    /* A real file cut short: every cut must be refused cleanly. */
    float w[64];
    tu_fill(FMLP_F32, w, 64, -1, 1, NULL);
    fmlp_st_tensor t[2] = {{"first", FMLP_F32, 2, {4, 8, 0}, w}, {"second", FMLP_F32, 1, {32, 0, 0}, w + 32}};
    const char *path = tmp_path("whole");
    fmlp_st_write(path, t, 2);
    FILE *in = fopen(path, "rb");
    unsigned char whole[1024];
    size_t size = fread(whole, 1, sizeof whole, in);
    fclose(in);
    int refused = 0, cuts = 0;
    for (size_t cut = 0; cut < size; cut++, cuts++) {
        fmlp_status st = fmlp_st_open(write_bytes("cut", whole, cut), &f);
        refused += st == FMLP_ERR_FORMAT && fmlp_last_error()[0];
        if (st == FMLP_OK) fmlp_st_close(f);
    }
    tu_check(refused == cuts, "every truncation of a valid file (%d cuts) is refused as malformed", cuts);
    fmlp_st_open(write_bytes("cut", whole, size - 4), &f);
    tu_check(msg_has("'second'", "truncated"), "  cutting into the last tensor names it: %s", fmlp_last_error());
}

/* Random byte flips in a valid file: whatever opens must read cleanly. */
static void test_mutations(void)
{
    float w[48];
    tu_fill(FMLP_F32, w, 48, -1, 1, NULL);
    fmlp_st_tensor t[3] = {{"model.w", FMLP_F32, 2, {4, 8, 0}, w},
                           {"model.b", FMLP_BF16, 1, {8, 0, 0}, w + 32},
                           {"x", FMLP_F16, 3, {1, 2, 2}, w + 40}};
    const char *path = tmp_path("mut_src");
    fmlp_st_write(path, t, 3);
    FILE *in = fopen(path, "rb");
    unsigned char whole[2048], buf[2048];
    size_t size = fread(whole, 1, sizeof whole, in);
    fclose(in);
    const char alphabet[] = "{}[]\",:0123456789-.e \\uF";
    int opened = 0, rounds = 3000;
    for (int round = 0; round < rounds; round++) {
        memcpy(buf, whole, size);
        int flips = 1 + (int)(tu_rand_u64() % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(tu_rand_u64() % size);
            buf[at] = tu_rand_u64() % 2 ? alphabet[tu_rand_u64() % (sizeof alphabet - 1)] : (unsigned char)tu_rand_u64();
        }
        fmlp_st_file *f = NULL;
        if (fmlp_st_open(write_bytes("mut", buf, size), &f) != FMLP_OK) continue;
        opened++;
        for (int i = 0; i < fmlp_st_count(f); i++) {
            int64_t rows, cols;
            fmlp_dtype dt;
            if (fmlp_st_find(f, fmlp_st_name(f, i), &dt, &rows, &cols, NULL) != FMLP_OK || rows * cols > 4096) continue;
            float out[4096];
            fmlp_st_read(f, fmlp_st_name(f, i), FMLP_F32, out, rows, cols);
        }
        fmlp_st_close(f);
    }
    tu_check(true, "%d random corruptions handled without a crash (%d still opened)", rounds, opened);
}

static int count_temp_files(void)
{
    int n = 0;
    DIR *d = opendir(tu_tmpdir());
    for (struct dirent *e; d && (e = readdir(d));) n += strncmp(e->d_name, "st_", 3) == 0 && strstr(e->d_name, ".tmp.");
    if (d) closedir(d);
    return n;
}

static void test_write_errors(void)
{
    float w[4] = {1, 2, 3, 4};
    const char *path = tmp_path("werr");
    fmlp_st_tensor ok = {"w", FMLP_F32, 2, {2, 2, 0}, w};
    tu_check(fmlp_st_write(path, &ok, 1) == FMLP_OK, "baseline write");
    fmlp_st_tensor bad[2] = {ok, ok};
    tu_expect_fail(fmlp_st_write(path, bad, 2), FMLP_ERR_INVALID_ARGUMENT, "duplicate names");
    bad[0].rank = 4;
    tu_expect_fail(fmlp_st_write(path, bad, 1), FMLP_ERR_INVALID_ARGUMENT, "rank 4");
    bad[0] = ok;
    bad[0].shape[1] = -2;
    tu_expect_fail(fmlp_st_write(path, bad, 1), FMLP_ERR_INVALID_ARGUMENT, "negative dimension");
    bad[0] = ok;
    bad[0].name = "__metadata__";
    tu_expect_fail(fmlp_st_write(path, bad, 1), FMLP_ERR_INVALID_ARGUMENT, "reserved name");
    bad[0] = ok;
    bad[0].name = NULL;
    tu_expect_fail(fmlp_st_write(path, bad, 1), FMLP_ERR_INVALID_ARGUMENT, "NULL name");
    bad[0] = ok;
    bad[0].data = NULL;
    tu_expect_fail(fmlp_st_write(path, bad, 1), FMLP_ERR_INVALID_ARGUMENT, "NULL data");
    bad[0] = ok;
    bad[0].dtype = (fmlp_dtype)9;
    tu_expect_fail(fmlp_st_write(path, bad, 1), FMLP_ERR_INVALID_ARGUMENT, "bad dtype");
    bad[0] = ok;
    bad[0].name = "bad\xff";
    tu_expect_fail(fmlp_st_write(path, bad, 1), FMLP_ERR_INVALID_ARGUMENT, "name that is not UTF-8");
    tu_expect_fail(fmlp_st_write(path, NULL, 1), FMLP_ERR_INVALID_ARGUMENT, "NULL tensors");
    tu_expect_fail(fmlp_st_write("/nonexistent/dir/x.safetensors", &ok, 1), FMLP_ERR_IO, "unwritable directory");
    tu_check(msg_has("/nonexistent/dir/x.safetensors", NULL), "  message names the path");

    fmlp_st_file *f = NULL;
    float back[4] = {0};
    tu_check(fmlp_st_open(path, &f) == FMLP_OK && fmlp_st_read(f, "w", FMLP_F32, back, 2, 2) == FMLP_OK &&
                 memcmp(back, w, sizeof w) == 0,
             "failed writes leave the previous file intact");
    fmlp_st_close(f);
    tu_check(count_temp_files() == 0, "no temporary files are left behind");

    /* Names that need escaping survive. */
    fmlp_st_tensor odd = {"we\"ird\\name\n\xc3\xa9", FMLP_F32, 1, {4, 0, 0}, w};
    tu_check(fmlp_st_write(path, &odd, 1) == FMLP_OK && fmlp_st_open(path, &f) == FMLP_OK &&
                 fmlp_st_find(f, odd.name, NULL, NULL, NULL, NULL) == FMLP_OK,
             "a name with quotes, backslashes, newline and UTF-8 round-trips");
    fmlp_st_close(f);
}

int main(void)
{
    tu_seed();
    test_round_trip();
    test_torch_fixture();
    test_unsupported_and_unaligned();
    test_corrupt_headers();
    test_corrupt_files();
    test_large_headers();
    test_mutations();
    test_write_errors();
    return tu_finish();
}
