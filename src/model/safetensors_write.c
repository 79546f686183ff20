/* Why: fmlp saves MLP weights and CLI outputs as safetensors that PyTorch's
 * safetensors package reads back. The file is written whole or not at all
 * (core/file_out.h), so a reader never sees half a file and a failed save
 * leaves any previous file intact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/file_out.h"
#include "core/json.h"
#include "model/safetensors.h"

/* Names are JSON strings in the header: anything that is not valid UTF-8
 * would be rewritten on the way and not be found again under its name.
 * 1 when the name comes back as it went in, 0 when not, -1 out of memory. */
static int name_survives_json(const char *name)
{
    size_t n = strlen(name), need = json_escape(NULL, 0, name, n);
    char *buf = fmlp_malloc(need + 1);
    if (!buf) return -1;
    json_escape(buf, need + 1, name, n);
    json_error err;
    json_doc *d = json_parse(buf, need, &err);
    const char *back = json_str(json_doc_root(d));
    int same = d ? back && strcmp(back, name) == 0 : err.oom ? -1 : 0;
    json_free(d);
    free(buf);
    return same;
}

static fmlp_status check_tensors(const fmlp_st_tensor *t, int n, uint64_t *bytes)
{
    for (int i = 0; i < n; i++) {
        const char *name = t[i].name;
        if (!name || !name[0])
            return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_write: tensor %d has %s name; give every tensor a name",
                             i, name ? "an empty" : "a NULL");
        if (strcmp(name, "__metadata__") == 0)
            return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_write: \"__metadata__\" is reserved by the format; rename tensor %d", i);
        int survives = name_survives_json(name);
        if (survives < 0) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "fmlp_st_write: out of memory checking tensor %d's name", i);
        if (!survives)
            return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_write: tensor %d's name is not valid UTF-8; use UTF-8 names", i);
        for (int j = 0; j < i; j++)
            if (strcmp(t[j].name, name) == 0)
                return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_write: tensor name '%.120s' is given twice (%d and %d)",
                                 name, j, i);
        if ((unsigned)t[i].dtype >= FMLP_DTYPE_COUNT)
            return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_write: tensor '%.120s' has dtype %d, not an fmlp_dtype",
                             name, (int)t[i].dtype);
        if (t[i].rank < 1 || t[i].rank > 3)
            return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_write: tensor '%.120s' has rank %d; use 1, 2 or 3", name,
                             t[i].rank);
        uint64_t numel = 1;
        for (int d = 0; d < t[i].rank; d++) {
            int64_t v = t[i].shape[d];
            if (v < 0)
                return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_write: tensor '%.120s' has dimension %d = %lld < 0",
                                 name, d, (long long)v);
            if (v && numel > (uint64_t)INT64_MAX / (uint64_t)v)
                return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_write: tensor '%.120s' has too many elements", name);
            numel *= (uint64_t)v;
        }
        uint64_t b = numel * fmlp_dtype_size(t[i].dtype);
        if (b && !t[i].data)
            return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_write: tensor '%.120s' has no data", name);
        if (b > UINT64_MAX - bytes[i]) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_write: tensors too large");
        bytes[i + 1] = bytes[i] + b;
    }
    return FMLP_OK;
}

/* The JSON header, padded with spaces so the data section starts 8-byte
 * aligned, as the reference writer does. `ofs[i]..ofs[i+1]` is tensor i. */
static fmlp_status build_header(const fmlp_st_tensor *t, int n, const uint64_t *ofs, char **out, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&buf, &size);
    if (!m) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "fmlp_st_write: out of memory for the header");
    fputc('{', m);
    for (int i = 0; i < n; i++) {
        json_write_string(m, t[i].name);
        fprintf(m, ":{\"dtype\":\"%s\",\"shape\":[", fmlp_st_dtype_tag(t[i].dtype));
        for (int d = 0; d < t[i].rank; d++) fprintf(m, "%s%lld", d ? "," : "", (long long)t[i].shape[d]);
        fprintf(m, "],\"data_offsets\":[%llu,%llu]},", (unsigned long long)ofs[i], (unsigned long long)ofs[i + 1]);
    }
    fputs("\"__metadata__\":{\"format\":\"pt\"}}", m);
    while ((8 + ftell(m)) % 8) fputc(' ', m);
    bool bad = ferror(m) != 0;
    if (fclose(m) != 0 || bad) {
        free(buf);
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "fmlp_st_write: out of memory for the header");
    }
    if (size > FMLP_ST_MAX_HEADER) {
        free(buf);
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_write: the header of %d tensors would exceed 100 MB; split them over several files", n);
    }
    *out = buf;
    *len = size;
    return FMLP_OK;
}

fmlp_status fmlp_st_write(const char *path, const fmlp_st_tensor *tensors, int n)
{
    if (!path || !path[0]) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_write: path is NULL or empty");
    if (n < 0 || (n > 0 && !tensors))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_write: %d tensors at %p; pass n >= 0 tensors", n,
                         (const void *)tensors);
    uint64_t *ofs = fmlp_calloc((size_t)n + 1, sizeof *ofs);
    if (!ofs) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "fmlp_st_write: out of memory");
    char *header = NULL;
    size_t hlen = 0;
    fmlp_status st = check_tensors(tensors, n, ofs);
    if (st == FMLP_OK) st = build_header(tensors, n, ofs, &header, &hlen);
    if (st != FMLP_OK) {
        free(ofs);
        return st;
    }

    fmlp_file_out o;
    st = fmlp_file_out_open(&o, path);
    if (st == FMLP_OK) {
        unsigned char len8[8];
        for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
        bool ok = fmlp_file_out_write(&o, len8, 8) && fmlp_file_out_write(&o, header, hlen);
        for (int i = 0; ok && i < n; i++) ok = fmlp_file_out_write(&o, tensors[i].data, ofs[i + 1] - ofs[i]);
        st = fmlp_file_out_commit(&o);
    }
    free(header);
    free(ofs);
    return st;
}
