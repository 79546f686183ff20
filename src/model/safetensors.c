/* Why: weights and test inputs arrive as safetensors files that anyone may
 * have written, so opening one validates every header fact before a single
 * tensor is handed out: lengths against the file size, the JSON, each entry's
 * dtype, shape and offsets, byte sizes, overlaps and duplicate names. After
 * fmlp_st_open() succeeds, every tensor lies inside the mapped file and has
 * exactly the bytes its shape says. The file is mapped read-only; tensors of
 * dtypes fmlp does not compute in (F64, I64, ...) are validated and listed
 * but refused when accessed. The header (up to 100 MB) is checked as it is
 * parsed, entry by entry, so a header that is not what it should be (an
 * array, say) is refused at its first byte and what is stored never grows
 * beyond what the header, and so the file, holds. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file_in.h"
#include "core/json.h"
#include "core/json_pull.h"
#include "model/safetensors.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader maps it directly"
#endif

/* Every dtype tag of the format, with its width, so sizes of tensors we do
 * not compute in are still checked. */
static const struct {
    const char *tag;
    int bits;
    int dtype; /* fmlp_dtype, or -1 when fmlp cannot compute in it */
} k_dtypes[] = {
    {"F32", 32, FMLP_F32},   {"BF16", 16, FMLP_BF16},  {"F16", 16, FMLP_F16},     {"F64", 64, -1},
    {"I64", 64, -1},         {"U64", 64, -1},          {"I32", 32, -1},           {"U32", 32, -1},
    {"I16", 16, -1},         {"U16", 16, -1},          {"I8", 8, -1},             {"U8", 8, -1},
    {"BOOL", 8, -1},         {"F8_E4M3", 8, -1},       {"F8_E5M2", 8, -1},        {"F8_E8M0", 8, -1},
    {"F6_E2M3", 6, -1},      {"F6_E3M2", 6, -1},       {"F4", 4, -1},
};
#define N_DTYPES ((int)(sizeof k_dtypes / sizeof k_dtypes[0]))

typedef struct {
    const char *name;
    int kind; /* index into k_dtypes */
    int rank;
    size_t dim0;         /* its dims: dims[dim0 .. dim0 + rank) */
    uint64_t begin, end; /* relative to the data section */
} st_entry;

struct fmlp_st_file {
    char *path;
    unsigned char *map;
    size_t map_size;
    const unsigned char *data;
    uint64_t data_size;
    int n;
    st_entry *entries; /* header order */
    int *by_name;      /* entry indices sorted by name */
    char *names;       /* storage of every name */
    int64_t *dims;     /* every entry's shape */
};

#define FIX_CORRUPT "the file is corrupt or not safetensors; re-export it (safetensors.torch.save_file or fmlp_st_write)"

const char *fmlp_st_dtype_tag(fmlp_dtype d) { return k_dtypes[d == FMLP_BF16 ? 1 : d == FMLP_F16 ? 2 : 0].tag; }

/* "safetensors file 'P': tensor 'T': <problem>; <fix>", names clipped so a
 * hostile header cannot crowd the problem out of the message. */
static fmlp_status st_fail(fmlp_status s, const char *path, const char *tensor, const char *fix, const char *fmt, ...)
    FMLP_PRINTF(5, 6);

static fmlp_status st_fail(fmlp_status s, const char *path, const char *tensor, const char *fix, const char *fmt, ...)
{
    char problem[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    if (tensor)
        return fmlp_fail(s, "safetensors file '%.300s': tensor '%.120s': %s%s%s", path, tensor, problem,
                         fix ? "; " : "", fix ? fix : "");
    return fmlp_fail(s, "safetensors file '%.300s': %s%s%s", path, problem, fix ? "; " : "", fix ? fix : "");
}

void fmlp_st_close(fmlp_st_file *f)
{
    if (!f) return;
    if (f->map) munmap(f->map, f->map_size);
    free(f->path);
    free(f->entries);
    free(f->by_name);
    free(f->names);
    free(f->dims);
    free(f);
}

static int dtype_kind(const char *tag, size_t len)
{
    len = strnlen(tag, len); /* a tag is a C string: it ends at a NUL */
    for (int i = 0; i < N_DTYPES; i++)
        if (strlen(k_dtypes[i].tag) == len && memcmp(tag, k_dtypes[i].tag, len) == 0) return i;
    return -1;
}

/* The JSON type a value starting with token t has, for messages. */
static const char *token_type(jp_token t)
{
    switch (t) {
    case JP_OBJECT: return "object";
    case JP_ARRAY: return "array";
    case JP_STRING: return "string";
    case JP_NUMBER: return "number";
    case JP_TRUE:
    case JP_FALSE: return "bool";
    default: return "null";
    }
}

/* What one entry's members said, as they streamed by (the first of a
 * repeated member counts). JP_END marks a member that was absent. */
typedef struct {
    jp_token dtype_t, shape_t, offs_t;
    int kind;
    char dtype[40];
    uint64_t rank, n_offs;
    int bad_dim;     /* first dimension that is not a non-negative integer, -1 none */
    bool bad_offset; /* an offset that is not one */
    int64_t shape[FMLP_ST_MAX_RANK], offs[2];
} st_raw;

/* A non-negative integer literal that fits int64, the current token t. */
static bool get_count(const jp_parser *p, jp_token t, int64_t *out)
{
    if (t != JP_NUMBER || !p->is_int || p->i64 < 0) return false;
    *out = p->i64;
    return true;
}

/* The elements of the array whose first token was t: each one's count in
 * v (up to `cap` of them) or its index in *bad; *n gets how many. */
static bool read_counts(jp_parser *p, jp_token t, int64_t *v, size_t cap, uint64_t *n, int *bad)
{
    *n = 0;
    if (t != JP_ARRAY) return jp_leave(p, t);
    for (jp_token c; (c = jp_next(p)) != JP_ARRAY_END; (*n)++) {
        if (c == JP_ERROR) return false;
        int64_t x;
        if (*n < cap && get_count(p, c, &x))
            v[*n] = x;
        else if (*n < cap && *bad < 0)
            *bad = (int)*n;
        if (!jp_leave(p, c)) return false;
    }
    return true;
}

static bool read_raw(jp_parser *p, st_raw *r)
{
    memset(r, 0, sizeof *r);
    r->dtype_t = r->shape_t = r->offs_t = JP_END;
    r->kind = r->bad_dim = -1;
    int bad_off = -1;
    jp_token t;
    while ((t = jp_next(p)) == JP_KEY) {
        jp_token *which = jp_str_is(p, "dtype") ? &r->dtype_t : jp_str_is(p, "shape") ? &r->shape_t
                        : jp_str_is(p, "data_offsets") ? &r->offs_t : NULL;
        if (!which || *which != JP_END) {
            if (!jp_skip(p)) return false;
            continue;
        }
        jp_token v = *which = jp_next(p);
        bool ok;
        if (which == &r->dtype_t) {
            if (v == JP_STRING) {
                r->kind = dtype_kind(p->str, p->len);
                snprintf(r->dtype, sizeof r->dtype, "%.*s", (int)(p->len < 32 ? p->len : 32), p->str);
            }
            ok = jp_leave(p, v);
        } else if (which == &r->shape_t) {
            ok = read_counts(p, v, r->shape, FMLP_ST_MAX_RANK, &r->rank, &r->bad_dim);
        } else {
            ok = read_counts(p, v, r->offs, 2, &r->n_offs, &bad_off);
            r->bad_offset = bad_off >= 0;
        }
        if (!ok) return false;
    }
    return t == JP_OBJECT_END;
}

/* Checks an entry as parse order gives it: members, dtype, shape, sizes,
 * offsets against the data section. */
static fmlp_status check_entry(fmlp_st_file *f, const char *name, const st_raw *r, st_entry *e)
{
    if (r->dtype_t == JP_END || r->shape_t == JP_END || r->offs_t == JP_END)
        return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT, "entry lacks \"%s\" (each tensor needs dtype, shape and data_offsets)",
                       r->dtype_t == JP_END ? "dtype" : r->shape_t == JP_END ? "shape" : "data_offsets");
    if (r->dtype_t != JP_STRING)
        return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT, "dtype is a JSON %s, not a string", token_type(r->dtype_t));
    e->kind = r->kind;
    if (e->kind < 0) return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT, "unknown dtype \"%s\"", r->dtype);
    if (r->shape_t != JP_ARRAY)
        return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT, "shape is a JSON %s, not an array", token_type(r->shape_t));
    if (r->rank > FMLP_ST_MAX_RANK)
        return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT, "shape has %llu dimensions (at most %d are read)",
                       (unsigned long long)r->rank, FMLP_ST_MAX_RANK);
    e->rank = (int)r->rank;
    /* The product of the non-zero dims must fit, so every partial product
     * (rows of a flattened view) fits too. */
    int64_t nonzero = 1, numel = 1;
    for (int d = 0; d < e->rank; d++) {
        if (d == r->bad_dim)
            return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT, "shape dimension %d is not a non-negative integer", d);
        int64_t v = r->shape[d];
        if (v == 0) {
            numel = 0;
        } else {
            if (nonzero > INT64_MAX / v)
                return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT, "shape has more elements than fit in 64 bits");
            nonzero *= v;
        }
    }
    if (numel) numel = nonzero;
    if (r->offs_t != JP_ARRAY || r->n_offs != 2 || r->bad_offset)
        return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT,
                       "data_offsets must be an array of two non-negative integers [begin, end]");
    int64_t b = r->offs[0], en = r->offs[1];
    e->begin = (uint64_t)b;
    e->end = (uint64_t)en;
    if (e->end < e->begin)
        return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT, "data_offsets [%lld, %lld] end before they begin",
                       (long long)b, (long long)en);
    if (e->end > f->data_size)
        return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT,
                       "data_offsets [%lld, %lld] run past the end of the data section (%llu bytes; truncated?)",
                       (long long)b, (long long)en, (unsigned long long)f->data_size);

    int bits = k_dtypes[e->kind].bits;
    if ((uint64_t)numel > UINT64_MAX / (uint64_t)bits)
        return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT, "%lld elements of %s need more bytes than fit in 64 bits",
                       (long long)numel, k_dtypes[e->kind].tag);
    if (((uint64_t)numel * (uint64_t)bits) % 8)
        return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT, "%lld elements of %s do not fill whole bytes",
                       (long long)numel, k_dtypes[e->kind].tag);
    uint64_t need = (uint64_t)numel * (uint64_t)bits / 8;
    if (e->end - e->begin != need)
        return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT,
                       "data_offsets span %llu bytes but %lld elements of %s need %llu",
                       (unsigned long long)(e->end - e->begin), (long long)numel, k_dtypes[e->kind].tag,
                       (unsigned long long)need);
    return FMLP_OK;
}

/* __metadata__ (its first token t): an object of strings. */
static fmlp_status check_metadata(fmlp_st_file *f, jp_parser *p, jp_token t)
{
    if (t != JP_OBJECT)
        return jp_leave(p, t) ? st_fail(FMLP_ERR_FORMAT, f->path, NULL, FIX_CORRUPT, "__metadata__ is a JSON %s, not an object",
                                        token_type(t))
                              : FMLP_ERR_FORMAT;
    while ((t = jp_next(p)) == JP_KEY) {
        char key[81];
        snprintf(key, sizeof key, "%.*s", (int)(p->len < 80 ? p->len : 80), p->str);
        jp_token v = jp_next(p);
        if (v != JP_STRING && v != JP_ERROR)
            return st_fail(FMLP_ERR_FORMAT, f->path, NULL, FIX_CORRUPT, "__metadata__ value \"%s\" is not a string", key);
        if (v == JP_ERROR) return FMLP_ERR_FORMAT;
    }
    return t == JP_OBJECT_END ? FMLP_OK : FMLP_ERR_FORMAT;
}

/* Sorting goes through (entry, index) pairs so the comparators need no
 * global state and files can be opened from several threads at once. */
typedef struct {
    const st_entry *e;
    int i;
} st_ref;

static int by_offset(const void *a, const void *b)
{
    const st_entry *x = ((const st_ref *)a)->e, *y = ((const st_ref *)b)->e;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const st_ref *)a)->e->name, ((const st_ref *)b)->e->name);
}

/* Sorts by offset to find overlaps and by name to find duplicates; keeps the
 * name order for lookups. Empty tensors occupy no bytes and overlap nothing. */
static fmlp_status check_layout(fmlp_st_file *f)
{
    if (!f->n) return FMLP_OK;
    st_ref *refs = fmlp_malloc((size_t)f->n * sizeof *refs);
    f->by_name = fmlp_malloc((size_t)f->n * sizeof(int));
    if (!refs || !f->by_name) {
        free(refs);
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory indexing the %d tensors of '%.300s'", f->n, f->path);
    }
    for (int i = 0; i < f->n; i++) refs[i] = (st_ref){&f->entries[i], i};

    fmlp_status st = FMLP_OK;
    qsort(refs, (size_t)f->n, sizeof *refs, by_name);
    for (int i = 0; i < f->n; i++) {
        f->by_name[i] = refs[i].i;
        if (st == FMLP_OK && i && strcmp(refs[i].e->name, refs[i - 1].e->name) == 0)
            st = st_fail(FMLP_ERR_FORMAT, f->path, refs[i].e->name, FIX_CORRUPT, "name appears twice in the header");
    }

    qsort(refs, (size_t)f->n, sizeof *refs, by_offset);
    const st_entry *last = NULL;
    for (int i = 0; i < f->n && st == FMLP_OK; i++) {
        const st_entry *e = refs[i].e;
        if (e->begin == e->end) continue;
        if (last && e->begin < last->end)
            st = st_fail(FMLP_ERR_FORMAT, f->path, e->name, FIX_CORRUPT,
                         "data_offsets [%llu, %llu] overlap those of tensor '%.120s' [%llu, %llu]",
                         (unsigned long long)e->begin, (unsigned long long)e->end, last->name,
                         (unsigned long long)last->begin, (unsigned long long)last->end);
        if (!last || e->end > last->end) last = e;
    }
    free(refs);
    return st;
}

/* The parser's failure inside the header, as the header's problem. */
static fmlp_status json_failed(const fmlp_st_file *f, const jp_parser *p)
{
    if (p->err == JP_ERR_OOM) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory parsing the header of '%.300s'", f->path);
    return st_fail(FMLP_ERR_FORMAT, f->path, NULL, FIX_CORRUPT, "header is not valid JSON: %s at file byte %llu", p->msg,
                   (unsigned long long)p->err_offset + 8);
}

/* Room for one more entry, its name and its dims. */
typedef struct {
    size_t entries, names, names_len, dims, dims_len;
} st_room;

static bool grow(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *nv = fmlp_realloc(*v, c * size);
    if (!nv) return false;
    *v = nv;
    *cap = c;
    return true;
}

/* The header's members in order, each entry checked as its object ends.
 * Storage grows with what the header holds, never with what it claims, and
 * the header itself is bounded by the file. Names are kept as offsets into
 * f->names until the end, as that storage moves while it grows. */
static fmlp_status read_entries(fmlp_st_file *f, jp_parser *p)
{
    jp_token t = jp_next(p);
    if (t == JP_ERROR) return json_failed(f, p);
    if (t != JP_OBJECT)
        return st_fail(FMLP_ERR_FORMAT, f->path, NULL, FIX_CORRUPT, "header is a JSON %s, not an object", token_type(t));
    st_room room = {0};
    bool seen_meta = false;
    while ((t = jp_next(p)) == JP_KEY) {
        if (memchr(p->str, 0, p->len))
            return st_fail(FMLP_ERR_FORMAT, f->path, p->str, FIX_CORRUPT, "name contains a NUL character");
        if (jp_str_is(p, "__metadata__")) {
            if (seen_meta) return st_fail(FMLP_ERR_FORMAT, f->path, NULL, FIX_CORRUPT, "__metadata__ appears twice");
            seen_meta = true;
            fmlp_status st = check_metadata(f, p, jp_next(p));
            if (st != FMLP_OK) return p->err != JP_ERR_NONE ? json_failed(f, p) : st;
            continue;
        }
        if (f->n >= INT32_MAX / 2)
            return st_fail(FMLP_ERR_FORMAT, f->path, NULL, FIX_CORRUPT, "header lists more than %d tensors", INT32_MAX / 2);
        if (!grow((void **)&f->entries, &room.entries, (size_t)f->n + 1, sizeof *f->entries) ||
            !grow((void **)&f->names, &room.names, room.names_len + p->len + 1, 1) ||
            !grow((void **)&f->dims, &room.dims, room.dims_len + FMLP_ST_MAX_RANK, sizeof *f->dims))
            return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory reading the header of '%.300s'", f->path);
        st_entry *e = &f->entries[f->n];
        char *name = f->names + room.names_len;
        memcpy(name, p->str, p->len);
        name[p->len] = 0;
        e->name = (const char *)(uintptr_t)room.names_len;
        room.names_len += p->len + 1;
        t = jp_next(p);
        if (t == JP_ERROR) return json_failed(f, p);
        if (t != JP_OBJECT)
            return st_fail(FMLP_ERR_FORMAT, f->path, name, FIX_CORRUPT, "entry is a JSON %s, not an object", token_type(t));
        st_raw r;
        if (!read_raw(p, &r)) return json_failed(f, p);
        fmlp_status st = check_entry(f, name, &r, e);
        if (st != FMLP_OK) return st;
        e->dim0 = room.dims_len;
        memcpy(f->dims + room.dims_len, r.shape, (size_t)e->rank * sizeof *f->dims);
        room.dims_len += (size_t)e->rank;
        f->n++;
    }
    if (t != JP_OBJECT_END || jp_next(p) != JP_END) return json_failed(f, p);
    for (int i = 0; i < f->n; i++) f->entries[i].name = f->names + (uintptr_t)f->entries[i].name;
    return check_layout(f);
}

/* Maps the file and checks the 8-byte length against its size. */
static fmlp_status map_file(fmlp_st_file *f, uint64_t *header_len)
{
    int fd;
    uint64_t size;
    char why[160];
    if (!file_in_open(f->path, &fd, &size, why, sizeof why))
        return st_fail(FMLP_ERR_IO, f->path, NULL, "pass the path of a .safetensors file and check its permissions",
                       "cannot open: %s", why);
    if (size < 8) {
        close(fd);
        return st_fail(FMLP_ERR_FORMAT, f->path, NULL, FIX_CORRUPT,
                       "the file is %llu bytes, shorter than the 8-byte header length that starts every safetensors file",
                       (unsigned long long)size);
    }
    if (size > SIZE_MAX) {
        close(fd);
        return st_fail(FMLP_ERR_UNSUPPORTED, f->path, NULL, NULL, "the file is too large to map on this system");
    }
    f->map_size = (size_t)size;
    void *map = mmap(NULL, f->map_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED)
        return st_fail(FMLP_ERR_IO, f->path, NULL, "check free address space and the file system", "cannot map: %s",
                       strerror(e));
    f->map = map;

    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->map[i];
    uint64_t room = (uint64_t)f->map_size - 8;
    if (n > FMLP_ST_MAX_HEADER)
        return st_fail(FMLP_ERR_FORMAT, f->path, NULL, FIX_CORRUPT,
                       "header length %llu is larger than the 100 MB any safetensors writer produces",
                       (unsigned long long)n);
    if (n > room)
        return st_fail(FMLP_ERR_FORMAT, f->path, NULL, FIX_CORRUPT,
                       "header length %llu runs past the end of the file (%llu bytes follow the length; truncated?)",
                       (unsigned long long)n, (unsigned long long)room);
    *header_len = n;
    f->data = f->map + 8 + n;
    f->data_size = room - n;
    return FMLP_OK;
}

fmlp_status fmlp_st_open(const char *path, fmlp_st_file **out)
{
    if (!out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_open: out is NULL; pass the address of a handle");
    *out = NULL;
    if (!path || !path[0])
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_open: path is %s; pass a .safetensors file",
                         path ? "empty" : "NULL");
    fmlp_st_file *f = fmlp_calloc(1, sizeof *f);
    if (f) f->path = fmlp_strdup(path);
    if (!f || !f->path) {
        fmlp_st_close(f);
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory opening '%.300s'", path);
    }

    uint64_t header_len = 0;
    fmlp_status st = map_file(f, &header_len);
    if (st == FMLP_OK) {
        jp_parser p;
        jp_init_mem(&p, f->map + 8, (size_t)header_len, (size_t)header_len, JSON_MAX_DEPTH);
        st = read_entries(f, &p);
        jp_free(&p);
    }
    if (st != FMLP_OK) {
        fmlp_st_close(f);
        return st;
    }
    *out = f;
    return FMLP_OK;
}

int fmlp_st_count(const fmlp_st_file *f) { return f ? f->n : 0; }

const char *fmlp_st_name(const fmlp_st_file *f, int i) { return f && i >= 0 && i < f->n ? f->entries[i].name : NULL; }

static const st_entry *lookup(const fmlp_st_file *f, const char *name)
{
    int lo = 0, hi = f->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const st_entry *e = &f->entries[f->by_name[mid]];
        int c = strcmp(name, e->name);
        if (!c) return e;
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* Finds `name`, refusing dtypes fmlp cannot compute in; rows × cols is the
 * tensor flattened to 2-D (leading dims folded into rows). */
static fmlp_status find_entry(const fmlp_st_file *f, const char *name, const st_entry **out, int64_t *rows,
                              int64_t *cols)
{
    if (!f || !name) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_find/read: %s is NULL", f ? "name" : "file");
    const st_entry *e = lookup(f, name);
    if (!e) {
        char list[256] = "";
        size_t len = 0;
        for (int i = 0; i < f->n && i < 6 && len < sizeof list; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s'%.40s'", i ? ", " : "", f->entries[i].name);
        return st_fail(FMLP_ERR_INVALID_ARGUMENT, f->path, name, NULL, "no such tensor; the file holds %d: %s%s", f->n,
                       f->n ? list : "none", f->n > 6 ? ", ..." : "");
    }
    if (k_dtypes[e->kind].dtype < 0)
        return st_fail(FMLP_ERR_UNSUPPORTED, f->path, name,
                       "convert it before saving, e.g. tensor.to(torch.float32)",
                       "dtype %s is not one fmlp computes in (F32, BF16, F16)", k_dtypes[e->kind].tag);
    int64_t r = 1, c = 1;
    const int64_t *shape = f->dims + e->dim0;
    if (e->rank >= 1) c = shape[e->rank - 1];
    if (e->rank == 1) {
        r = c;
        c = 1;
    }
    for (int d = 0; d + 1 < e->rank; d++) r *= shape[d];
    *out = e;
    *rows = r;
    *cols = c;
    return FMLP_OK;
}

fmlp_status fmlp_st_find(const fmlp_st_file *f, const char *name, fmlp_dtype *dtype, int64_t *rows, int64_t *cols,
                         const void **data)
{
    const st_entry *e;
    int64_t r, c;
    fmlp_status st = find_entry(f, name, &e, &r, &c);
    if (st != FMLP_OK) return st;
    if (dtype) *dtype = (fmlp_dtype)k_dtypes[e->kind].dtype;
    if (rows) *rows = r;
    if (cols) *cols = c;
    if (data) *data = f->data + e->begin;
    return FMLP_OK;
}

void fmlp_st_format_shape(int rank, const int64_t *shape, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < rank && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

const char *fmlp_st_path(const fmlp_st_file *f) { return f ? f->path : ""; }

bool fmlp_st_has(const fmlp_st_file *f, const char *name) { return f && name && lookup(f, name); }

fmlp_status fmlp_st_shape(const fmlp_st_file *f, const char *name, int *rank, int64_t *shape, int cap)
{
    if (!rank || (!shape && cap > 0))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_shape: rank and shape must not be NULL");
    const st_entry *e = f && name ? lookup(f, name) : NULL;
    if (!e)
        return st_fail(FMLP_ERR_INVALID_ARGUMENT, fmlp_st_path(f), name ? name : "(null)", NULL, "no such tensor");
    if (cap < e->rank)
        return st_fail(FMLP_ERR_SHAPE, f->path, name, "pass room for FMLP_ST_MAX_RANK dims",
                       "has %d dimensions but shape has room for %d", e->rank, cap);
    *rank = e->rank;
    if (e->rank) memcpy(shape, f->dims + e->dim0, (size_t)e->rank * sizeof(int64_t));
    return FMLP_OK;
}

fmlp_status fmlp_st_read(const fmlp_st_file *f, const char *name, fmlp_dtype dtype, void *out, int64_t rows,
                         int64_t cols)
{
    const st_entry *e;
    int64_t r, c;
    fmlp_status st = find_entry(f, name, &e, &r, &c);
    if (st != FMLP_OK) return st;
    if ((unsigned)dtype >= FMLP_DTYPE_COUNT)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_read: dtype %d is not an fmlp_dtype", (int)dtype);
    if (r != rows || c != cols) {
        char shape[160];
        fmlp_st_format_shape(e->rank, f->dims + e->dim0, shape, sizeof shape);
        return st_fail(FMLP_ERR_SHAPE, f->path, name, "pass the tensor's own rows and cols",
                       "shape %s reads as %lld x %lld, but %lld x %lld was asked for", shape, (long long)r,
                       (long long)c, (long long)rows, (long long)cols);
    }
    int64_t n = r * c;
    if (!n) return FMLP_OK;
    if (!out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_st_read: out is NULL for tensor '%.120s'", name);

    fmlp_dtype src_dt = (fmlp_dtype)k_dtypes[e->kind].dtype;
    const unsigned char *src = f->data + e->begin;
    size_t es = fmlp_dtype_size(src_dt);
    if ((uintptr_t)src % es == 0) {
        fmlp_convert(dtype, out, src_dt, src, n);
        return FMLP_OK;
    }
    /* Offsets need not be aligned in the file; stage through an aligned
     * buffer so conversions only ever load aligned elements. */
    union {
        float f[1024];
        uint16_t h[2048];
    } stage;
    int64_t per = (int64_t)(sizeof stage / es), done = 0;
    size_t os = fmlp_dtype_size(dtype);
    while (done < n) {
        int64_t k = n - done < per ? n - done : per;
        memcpy(&stage, src + (size_t)done * es, (size_t)k * es);
        fmlp_convert(dtype, (unsigned char *)out + (size_t)done * os, src_dt, &stage, k);
        done += k;
    }
    return FMLP_OK;
}
