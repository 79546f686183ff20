/* Why: fmlp saves MLP weights and CLI outputs as safetensors that PyTorch's
 * safetensors package reads back. The file is written beside its final path
 * and renamed over it only when complete, so a reader never sees half a file
 * and a failed save leaves any previous file intact. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "model/safetensors.h"

/* Names are JSON strings in the header: anything that is not valid UTF-8
 * would be rewritten on the way and not be found again under its name. */
static bool name_survives_json(const char *name)
{
    size_t n = strlen(name), need = json_escape(NULL, 0, name, n);
    char *buf = fmlp_malloc(need + 1);
    if (!buf) return true;
    json_escape(buf, need + 1, name, n);
    json_doc *d = json_parse(buf, need, NULL);
    const char *back = json_str(json_doc_root(d));
    bool same = back && strcmp(back, name) == 0;
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
        if (!name_survives_json(name))
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

static bool write_all(int fd, const void *p, uint64_t n)
{
    const unsigned char *c = p;
    while (n) {
        size_t chunk = n > ((size_t)1 << 30) ? (size_t)1 << 30 : (size_t)n;
        ssize_t w = write(fd, c, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        c += w;
        n -= (uint64_t)w;
    }
    return true;
}

/* A fresh file next to `path`; its name is returned in `tmp`. */
static int open_temp(const char *path, char *tmp, size_t cap)
{
    static unsigned counter;
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned k = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
        if ((size_t)snprintf(tmp, cap, "%s.tmp.%ld.%u", path, (long)getpid(), k) >= cap) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
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

    char tmp[4096];
    int fd = open_temp(path, tmp, sizeof tmp);
    if (fd < 0) {
        st = fmlp_fail(FMLP_ERR_IO, "cannot create a file next to '%.300s': %s; check that the directory exists and is writable",
                       path, strerror(errno));
    } else {
        unsigned char len8[8];
        for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
        bool ok = write_all(fd, len8, 8) && write_all(fd, header, hlen);
        for (int i = 0; ok && i < n; i++) ok = write_all(fd, tensors[i].data, ofs[i + 1] - ofs[i]);
        int e = ok ? 0 : errno;
        if (ok && fsync(fd) != 0) {
            ok = false;
            e = errno;
        }
        if (close(fd) != 0 && ok) {
            ok = false;
            e = errno;
        }
        if (ok && rename(tmp, path) != 0) {
            ok = false;
            e = errno;
        }
        if (!ok) {
            unlink(tmp);
            st = fmlp_fail(FMLP_ERR_IO, "cannot write '%.300s': %s; check free space and permissions", path,
                           e ? strerror(e) : "short write");
        }
    }
    free(header);
    free(ofs);
    return st;
}
