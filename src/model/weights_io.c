/* Why: users bring MLP weights saved from PyTorch (state_dict names, maybe
 * under a prefix such as "model.layers.0.mlp.") and save fmlp's back for
 * PyTorch. This file maps between the two through the MLP's public tensor
 * list only, so it works for every block kind the MLP object knows. A load
 * checks every tensor (presence, rank, shape, dtype, stray extras) before it
 * sets any, so a bad file leaves the MLP as it was. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "model/mlp_internal.h"
#include "model/safetensors.h"

#define NAME_CAP 1024

static fmlp_status full_name(const char *prefix, const char *name, char out[NAME_CAP])
{
    if ((size_t)snprintf(out, NAME_CAP, "%s%s", prefix ? prefix : "", name) >= NAME_CAP)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "tensor name prefix '%.100s...' is too long (limit %d bytes)",
                         prefix, NAME_CAP - 64);
    return FMLP_OK;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Whether `local` (a name with the prefix removed) is one that some MLP of
 * this block kind would hold: gated "{gate,up,down}_proj.{weight,bias}",
 * stacks "<index>.{weight,bias}". */
static bool is_block_name(fmlp_block block, const char *local)
{
    const char *dot = strchr(local, '.');
    if (!dot || (strcmp(dot, ".weight") != 0 && strcmp(dot, ".bias") != 0)) return false;
    size_t stem = (size_t)(dot - local);
    if (block == FMLP_BLOCK_GATED)
        return (stem == 9 && (strncmp(local, "gate_proj", 9) == 0 || strncmp(local, "down_proj", 9) == 0)) ||
               (stem == 7 && strncmp(local, "up_proj", 7) == 0);
    if (stem == 0 || stem > 4) return false;
    for (size_t i = 0; i < stem; i++)
        if (local[i] < '0' || local[i] > '9') return false;
    return true;
}

static bool mlp_has(const fmlp_mlp *mlp, const char *local)
{
    for (int i = 0; i < fmlp_mlp_tensor_count(mlp); i++) {
        const char *name;
        int64_t r, c;
        if (fmlp_mlp_tensor_info(mlp, i, &name, &r, &c) == FMLP_OK && strcmp(name, local) == 0) return true;
    }
    return false;
}

/* Explains a missing tensor: a bias the file never had, a prefix that
 * matches nothing, or simply what is there. */
static fmlp_status report_missing(const fmlp_st_file *f, const char *prefix, const char *full, const char *local)
{
    const char *path = fmlp_st_path(f);
    size_t plen = strlen(prefix);
    int under = 0;
    for (int i = 0; i < fmlp_st_count(f); i++)
        if (strncmp(fmlp_st_name(f, i), prefix, plen) == 0) under++;
    if (plen && !under)
        return fmlp_fail(FMLP_ERR_FORMAT,
                         "safetensors file '%.300s' has no tensor named '%.200s': no tensor starts with the prefix "
                         "'%.200s' (first tensor: '%.200s'); check the prefix",
                         path, full, prefix, fmlp_st_count(f) ? fmlp_st_name(f, 0) : "none");
    if (ends_with(local, ".bias"))
        return fmlp_fail(FMLP_ERR_FORMAT,
                         "safetensors file '%.300s' has no tensor named '%.200s': the MLP has biases but the file "
                         "does not; create the MLP with bias = false (fmlp_mlp_desc_from_safetensors infers it)",
                         path, full);
    if (!plen)
        return fmlp_fail(FMLP_ERR_FORMAT,
                         "safetensors file '%.300s' has no tensor named '%.200s', which the MLP needs (the file holds "
                         "%d, first '%.200s'); check the prefix and the MLP's block kind and layer count",
                         path, full, under, under ? fmlp_st_name(f, 0) : "none");
    return fmlp_fail(FMLP_ERR_FORMAT,
                     "safetensors file '%.300s' has no tensor named '%.200s', which the MLP needs (%d tensors "
                     "start with '%.200s'); check the MLP's block kind and layer count",
                     path, full, under, prefix);
}

/* Checks one tensor against the MLP's (rows, cols): a weight is
 * [rows, cols], a bias [rows]. */
static fmlp_status check_tensor(const fmlp_st_file *f, const char *full, const char *local, int64_t rows,
                                int64_t cols)
{
    int rank;
    int64_t shape[FMLP_ST_MAX_RANK];
    fmlp_status st = fmlp_st_shape(f, full, &rank, shape, FMLP_ST_MAX_RANK);
    if (st != FMLP_OK) return st;
    bool bias = ends_with(local, ".bias");
    int64_t want[2] = {rows, cols};
    int want_rank = bias ? 1 : 2;
    if (rank != want_rank || shape[0] != rows || (!bias && shape[1] != cols)) {
        char got_s[160], want_s[64];
        fmlp_st_format_shape(rank, shape, got_s, sizeof got_s);
        fmlp_st_format_shape(want_rank, want, want_s, sizeof want_s);
        return fmlp_fail(FMLP_ERR_SHAPE,
                         "safetensors file '%.300s': %.200s has shape %s but the MLP needs %s; create the MLP with "
                         "the file's sizes (fmlp_mlp_desc_from_safetensors reads them)",
                         fmlp_st_path(f), full, got_s, want_s);
    }
    return fmlp_st_find(f, full, NULL, NULL, NULL, NULL);
}

/* Every tensor under the prefix that looks like part of such an MLP must be
 * one this MLP has: an extra bias or layer means the shapes disagree. */
static fmlp_status check_extras(const fmlp_st_file *f, const fmlp_mlp *mlp, const char *prefix)
{
    size_t plen = strlen(prefix);
    fmlp_block block = fmlp_mlp_get_desc(mlp)->block;
    for (int i = 0; i < fmlp_st_count(f); i++) {
        const char *name = fmlp_st_name(f, i);
        if (strncmp(name, prefix, plen) != 0) continue;
        const char *local = name + plen;
        if (!is_block_name(block, local) || mlp_has(mlp, local)) continue;
        if (ends_with(local, ".bias"))
            return fmlp_fail(FMLP_ERR_FORMAT,
                             "safetensors file '%.300s' has '%.200s' but the MLP has no bias there; create the MLP "
                             "with bias = true (fmlp_mlp_desc_from_safetensors infers it)",
                             fmlp_st_path(f), name);
        return fmlp_fail(FMLP_ERR_FORMAT,
                         "safetensors file '%.300s' has '%.200s', a tensor the MLP does not have (the file holds "
                         "more layers or another block kind); create the MLP with "
                         "fmlp_mlp_desc_from_safetensors",
                         fmlp_st_path(f), name);
    }
    return FMLP_OK;
}

/* Sets one tensor straight from the mapping when its data is aligned for
 * its dtype, else through an aligned copy. */
static fmlp_status set_one(fmlp_mlp *mlp, const fmlp_st_file *f, const char *full, const char *local, int64_t rows,
                           int64_t cols)
{
    fmlp_dtype dt;
    int64_t r, c;
    const void *data;
    fmlp_status st = fmlp_st_find(f, full, &dt, &r, &c, &data);
    if (st != FMLP_OK) return st;
    size_t es = fmlp_dtype_size(dt);
    if ((uintptr_t)data % es == 0) return fmlp_mlp_set_weight(mlp, local, dt, data, rows, cols);
    void *copy = fmlp_malloc((size_t)(rows * cols) * es);
    if (!copy) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory reading '%.200s'", full);
    st = fmlp_st_read(f, full, dt, copy, r, c);
    if (st == FMLP_OK) st = fmlp_mlp_set_weight(mlp, local, dt, copy, rows, cols);
    free(copy);
    return st;
}

fmlp_status fmlp_mlp_load_safetensors(fmlp_mlp *mlp, const char *path, const char *prefix)
{
    if (!mlp || !path)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_load_safetensors: %s is NULL", mlp ? "path" : "mlp");
    if (!prefix) prefix = "";
    fmlp_st_file *f;
    fmlp_status st = fmlp_st_open(path, &f);
    if (st != FMLP_OK) return st;

    int n = fmlp_mlp_tensor_count(mlp);
    char full[NAME_CAP];
    for (int pass = 0; pass < 2 && st == FMLP_OK; pass++) {
        for (int i = 0; i < n && st == FMLP_OK; i++) {
            const char *local;
            int64_t rows, cols;
            st = fmlp_mlp_tensor_info(mlp, i, &local, &rows, &cols);
            if (st == FMLP_OK) st = full_name(prefix, local, full);
            if (st != FMLP_OK) break;
            if (pass == 0)
                st = fmlp_st_has(f, full) ? check_tensor(f, full, local, rows, cols)
                                          : report_missing(f, prefix, full, local);
            else
                st = set_one(mlp, f, full, local, rows, cols);
        }
        if (pass == 0 && st == FMLP_OK) st = check_extras(f, mlp, prefix);
    }
    fmlp_st_close(f);
    return st;
}

fmlp_status fmlp_mlp_save_safetensors(const fmlp_mlp *mlp, const char *path, const char *prefix)
{
    if (!mlp || !path)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_save_safetensors: %s is NULL", mlp ? "path" : "mlp");
    if (!prefix) prefix = "";
    fmlp_dtype dt = fmlp_mlp_get_desc(mlp)->dtype;
    int n = fmlp_mlp_tensor_count(mlp);
    fmlp_st_tensor *t = fmlp_calloc((size_t)(n > 0 ? n : 1), sizeof *t);
    char *names = fmlp_calloc((size_t)(n > 0 ? n : 1), NAME_CAP);
    float *f32 = NULL;
    fmlp_status st = t && names ? FMLP_OK : fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory saving '%.300s'", path);
    for (int i = 0; i < n && st == FMLP_OK; i++) {
        const char *local;
        int64_t rows, cols;
        st = fmlp_mlp_tensor_info(mlp, i, &local, &rows, &cols);
        if (st == FMLP_OK) st = full_name(prefix, local, names + (size_t)i * NAME_CAP);
        if (st != FMLP_OK) break;
        size_t count = (size_t)(rows * cols);
        float *tmp = fmlp_realloc(f32, count * sizeof(float) + 1);
        void *data = fmlp_malloc(count * fmlp_dtype_size(dt) + 1);
        if (tmp) f32 = tmp;
        if (!tmp || !data) {
            free(data);
            st = fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory saving '%.300s'", path);
            break;
        }
        t[i].data = data;
        st = fmlp_mlp_get_weight(mlp, local, f32, rows, cols);
        if (st != FMLP_OK) break;
        fmlp_convert(dt, data, FMLP_F32, f32, (int64_t)count);
        t[i].name = names + (size_t)i * NAME_CAP;
        t[i].dtype = dt;
        bool bias = ends_with(local, ".bias");
        t[i].rank = bias ? 1 : 2;
        t[i].shape[0] = rows;
        t[i].shape[1] = bias ? 0 : cols;
    }
    if (st == FMLP_OK) st = fmlp_st_write(path, t, n);
    for (int i = 0; t && i < n; i++) free((void *)t[i].data);
    free(f32);
    free(names);
    free(t);
    return st;
}

/* The [rows, cols] of a rank-2 tensor, or an error naming it. */
static fmlp_status matrix(const fmlp_st_file *f, const char *full, int64_t *rows, int64_t *cols)
{
    int rank;
    int64_t shape[FMLP_ST_MAX_RANK];
    fmlp_status st = fmlp_st_shape(f, full, &rank, shape, FMLP_ST_MAX_RANK);
    if (st != FMLP_OK) return st;
    if (rank != 2) {
        char s[160];
        fmlp_st_format_shape(rank, shape, s, sizeof s);
        return fmlp_fail(FMLP_ERR_FORMAT, "safetensors file '%.300s': %.200s has shape %s; a Linear weight is [out, in]",
                         fmlp_st_path(f), full, s);
    }
    *rows = shape[0];
    *cols = shape[1];
    return FMLP_OK;
}

static fmlp_status shape_conflict(const fmlp_st_file *f, const char *full, int64_t r, int64_t c, int64_t wr,
                                  int64_t wc, const char *why)
{
    return fmlp_fail(FMLP_ERR_FORMAT, "safetensors file '%.300s': %.200s has shape [%lld, %lld] but %s implies [%lld, %lld]",
                     fmlp_st_path(f), full, (long long)r, (long long)c, why, (long long)wr, (long long)wc);
}

static fmlp_status infer_gated(const fmlp_st_file *f, const char *prefix, fmlp_mlp_desc *d)
{
    char g[NAME_CAP], u[NAME_CAP], dn[NAME_CAP], gb[NAME_CAP];
    fmlp_status st = full_name(prefix, "gate_proj.weight", g);
    if (st == FMLP_OK) st = full_name(prefix, "up_proj.weight", u);
    if (st == FMLP_OK) st = full_name(prefix, "down_proj.weight", dn);
    if (st == FMLP_OK) st = full_name(prefix, "gate_proj.bias", gb);
    int64_t hidden = 0, dim = 0, ur = 0, uc = 0, out = 0, dc = 0;
    if (st == FMLP_OK) st = matrix(f, g, &hidden, &dim);
    if (st == FMLP_OK) st = matrix(f, u, &ur, &uc);
    if (st == FMLP_OK) st = matrix(f, dn, &out, &dc);
    if (st != FMLP_OK) return st == FMLP_ERR_INVALID_ARGUMENT ? FMLP_ERR_FORMAT : st;
    if (ur != hidden || uc != dim) return shape_conflict(f, u, ur, uc, hidden, dim, "gate_proj.weight");
    if (dc != hidden) return shape_conflict(f, dn, out, dc, out, hidden, "gate_proj.weight");
    d->block = FMLP_BLOCK_GATED;
    d->dim = dim;
    d->hidden = hidden;
    d->out_dim = out;
    d->bias = fmlp_st_has(f, gb);
    return FMLP_OK;
}

static fmlp_status infer_stack(const fmlp_st_file *f, const char *prefix, fmlp_mlp_desc *d)
{
    char w[NAME_CAP], local[32];
    int layers = 0;
    int64_t dim = 0, hidden = 0, prev = 0; /* prev: outputs of the layer before */
    for (;; layers++) {
        snprintf(local, sizeof local, "%d.weight", 2 * layers);
        fmlp_status st = full_name(prefix, local, w);
        if (st != FMLP_OK) return st;
        if (!fmlp_st_has(f, w)) break;
        if (layers == FMLP_MAX_LAYERS)
            return fmlp_fail(FMLP_ERR_UNSUPPORTED, "safetensors file '%.300s' holds a stack of more than %d Linear layers",
                             fmlp_st_path(f), FMLP_MAX_LAYERS);
        int64_t r = 0, c = 0;
        st = matrix(f, w, &r, &c);
        if (st != FMLP_OK) return st;
        if (layers == 0) {
            dim = c;
            hidden = r;
        } else if (c != prev) {
            return shape_conflict(f, w, r, c, r, prev, "the previous layer");
        } else if (prev != hidden) {
            return fmlp_fail(FMLP_ERR_UNSUPPORTED,
                             "safetensors file '%.300s': the layer before %.200s has %lld outputs, but fmlp stacks "
                             "have one hidden width (%lld, from the first layer)",
                             fmlp_st_path(f), w, (long long)prev, (long long)hidden);
        }
        prev = r;
    }
    d->block = FMLP_BLOCK_STACK;
    d->layers = layers;
    d->dim = dim;
    d->hidden = hidden;
    d->out_dim = prev;
    fmlp_status st = full_name(prefix, "0.bias", w);
    if (st != FMLP_OK) return st;
    d->bias = fmlp_st_has(f, w);
    return FMLP_OK;
}

/* The widths read from the file in range, or an error naming the file. A
 * layer of 0 outputs is refused here: in a description, out_dim 0 would
 * mean "same as dim". */
static fmlp_status check_inferred(const fmlp_st_file *f, const fmlp_mlp_desc *d)
{
    if (d->out_dim < 1)
        return fmlp_fail(FMLP_ERR_FORMAT, "safetensors file '%.300s': its last layer has %lld outputs; a Linear layer has "
                         "at least 1",
                         fmlp_st_path(f), (long long)d->out_dim);
    if (fmlp_mlp_desc_check_shape(d) == FMLP_OK) return FMLP_OK;
    char why[400];
    snprintf(why, sizeof why, "%s", fmlp_last_error());
    return fmlp_fail(FMLP_ERR_FORMAT, "safetensors file '%.300s', from its tensors' shapes: %s", fmlp_st_path(f), why);
}

fmlp_status fmlp_mlp_desc_from_safetensors(const char *path, const char *prefix, fmlp_mlp_desc *desc)
{
    if (!path || !desc)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_desc_from_safetensors: %s is NULL", path ? "desc" : "path");
    if (!prefix) prefix = "";
    fmlp_st_file *f;
    fmlp_status st = fmlp_st_open(path, &f);
    if (st != FMLP_OK) return st;
    char g[NAME_CAP], s0[NAME_CAP];
    fmlp_mlp_desc d = *desc;
    st = full_name(prefix, "gate_proj.weight", g);
    if (st == FMLP_OK) st = full_name(prefix, "0.weight", s0);
    if (st == FMLP_OK) {
        if (fmlp_st_has(f, g))
            st = infer_gated(f, prefix, &d);
        else if (fmlp_st_has(f, s0))
            st = infer_stack(f, prefix, &d);
        else
            st = fmlp_fail(FMLP_ERR_FORMAT,
                           "safetensors file '%.300s' holds neither '%.200s' (a gated MLP) nor '%.200s' (an "
                           "nn.Sequential stack); check the prefix (first tensor: '%.200s')",
                           path, g, s0, fmlp_st_count(f) ? fmlp_st_name(f, 0) : "none");
    }
    if (st == FMLP_OK) st = check_inferred(f, &d);
    fmlp_st_close(f);
    if (st == FMLP_OK) *desc = d;
    return st;
}
