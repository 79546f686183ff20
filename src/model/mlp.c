/* Why: the MLP object: its description checked once, its Linear layers
 * named as PyTorch's state_dict names them, weights stored on the host in
 * the MLP's dtype, and the backend's packed layouts built once before the
 * first forward after any change. Host weights are made (and drawn from
 * the seed) at their first use, not at create: an MLP whose plan is all
 * that is asked for (--explain) never holds gigabytes of weights. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/checked.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/internal.h"
#include "core/names.h"
#include "model/mlp_internal.h"

#define MAX_FEATURES (1 << 20)

fmlp_status fmlp_mlp_desc_check_shape(const fmlp_mlp_desc *d)
{
    if (d->block != FMLP_BLOCK_GATED && d->block != FMLP_BLOCK_STACK)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "block %d is unknown; use FMLP_BLOCK_GATED or FMLP_BLOCK_STACK", (int)d->block);
    if (d->dim < 1 || d->dim > MAX_FEATURES)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "dim = %lld is out of range; use 1..%d", (long long)d->dim, MAX_FEATURES);
    bool needs_hidden = d->block == FMLP_BLOCK_GATED || d->layers > 1;
    if (needs_hidden && (d->hidden < 1 || d->hidden > MAX_FEATURES))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "hidden = %lld is out of range; use 1..%d", (long long)d->hidden, MAX_FEATURES);
    if (d->out_dim < 0 || d->out_dim > MAX_FEATURES)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "out_dim = %lld is out of range; use 0 (same as dim) or 1..%d",
                         (long long)d->out_dim, MAX_FEATURES);
    if (d->block == FMLP_BLOCK_STACK && (d->layers < 1 || d->layers > FMLP_MAX_LAYERS))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "layers = %d is out of range; a stack has 1..%d Linear layers", d->layers,
                         FMLP_MAX_LAYERS);
    return FMLP_OK;
}

static fmlp_status check_desc(const fmlp_ctx *ctx, const fmlp_mlp_desc *d)
{
    fmlp_status s = fmlp_mlp_desc_check_shape(d);
    if (s != FMLP_OK) return s;
    char choices[128];
    if ((unsigned)d->act >= FMLP_ACT_COUNT)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "activation %d is unknown; use %s", (int)d->act,
                         fmlp_act_choices(choices, sizeof choices));
    if ((unsigned)d->dtype >= FMLP_DTYPE_COUNT)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "dtype %d is unknown; use %s", (int)d->dtype,
                         fmlp_dtype_choices(choices, sizeof choices));
    char why[160];
    if (!ctx->be->supports(d->block, d->dtype, FMLP_MODE_AUTO, why, sizeof why))
        return fmlp_fail(FMLP_ERR_UNSUPPORTED, "%s", why);
    return FMLP_OK;
}

static void name_layer(fmlp_layer *l, const char *stem, int64_t n, int64_t k)
{
    snprintf(l->wname, sizeof l->wname, "%s.weight", stem);
    snprintf(l->bname, sizeof l->bname, "%s.bias", stem);
    l->n = n;
    l->k = k;
}

static fmlp_status alloc_layer(fmlp_layer *l, bool bias, fmlp_dtype dt)
{
    int64_t n = l->n, k = l->k, bytes;
    fmlp_status s = fmlp_checked_bytes(l->wname, n, k, dt, "use smaller dims", &bytes);
    if (s != FMLP_OK) return s;
    l->w = fmlp_host_alloc((size_t)bytes);
    l->b = bias ? fmlp_host_alloc((size_t)n * fmlp_dtype_size(dt)) : NULL;
    if (!l->w || (bias && !l->b))
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory for a (%lld, %lld) %s weight", (long long)n, (long long)k,
                         fmlp_dtype_name(dt));
    return FMLP_OK;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* nn.Linear's default init: weights and bias uniform in ±1/sqrt(in_features). */
static void init_layer(fmlp_layer *l, fmlp_dtype dt, uint64_t *state)
{
    float bound = 1.0f / sqrtf((float)l->k);
    for (int64_t i = 0; i < l->n * l->k; i++) {
        float u = (float)(splitmix(state) >> 40) * (1.0f / 16777216.0f);
        fmlp_store(dt, l->w, i, (2.0f * u - 1.0f) * bound);
    }
    for (int64_t i = 0; l->b && i < l->n; i++) {
        float u = (float)(splitmix(state) >> 40) * (1.0f / 16777216.0f);
        fmlp_store(dt, l->b, i, (2.0f * u - 1.0f) * bound);
    }
}

fmlp_status fmlp_mlp_create(fmlp_ctx *ctx, const fmlp_mlp_desc *desc, uint64_t seed, fmlp_mlp **out)
{
    if (!ctx || !desc || !out)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_create: ctx, desc and out must not be NULL");
    *out = NULL;
    fmlp_status s = check_desc(ctx, desc);
    if (s != FMLP_OK) return s;
    fmlp_mlp *m = fmlp_calloc(1, sizeof *m);
    if (!m) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory creating an MLP");
    m->ctx = ctx;
    fmlp_ctx_ref(ctx);
    m->desc = *desc;
    m->seed = seed;
    fmlp_mlp_desc *d = &m->desc;
    if (d->out_dim == 0) d->out_dim = d->dim;
    if (d->block == FMLP_BLOCK_GATED) d->layers = 3;
    if (d->block == FMLP_BLOCK_STACK && d->layers == 1) d->hidden = 0;
    pthread_mutex_init(&m->pack_lock, NULL);
    pthread_mutex_init(&m->plan_lock, NULL);
    if (d->block == FMLP_BLOCK_GATED) {
        m->n_layers = 3;
        name_layer(&m->layers[0], "gate_proj", d->hidden, d->dim);
        name_layer(&m->layers[1], "up_proj", d->hidden, d->dim);
        name_layer(&m->layers[2], "down_proj", d->out_dim, d->hidden);
    } else {
        m->n_layers = d->layers;
        for (int i = 0; i < d->layers; i++) {
            char stem[16];
            snprintf(stem, sizeof stem, "%d", 2 * i);
            name_layer(&m->layers[i], stem, i == d->layers - 1 ? d->out_dim : d->hidden, i == 0 ? d->dim : d->hidden);
        }
    }
    *out = m;
    return FMLP_OK;
}

static void free_weights(fmlp_mlp *m)
{
    for (int i = 0; i < m->n_layers; i++) {
        free(m->layers[i].w);
        free(m->layers[i].b);
        m->layers[i].w = m->layers[i].b = NULL;
    }
}

/* Called with pack_lock held. */
static fmlp_status materialize_locked(fmlp_mlp *m)
{
    if (__atomic_load_n(&m->weights_ok, __ATOMIC_ACQUIRE)) return FMLP_OK;
    fmlp_status s = FMLP_OK;
    for (int i = 0; i < m->n_layers && s == FMLP_OK; i++) s = alloc_layer(&m->layers[i], m->desc.bias, m->desc.dtype);
    if (s != FMLP_OK) {
        free_weights(m);
        return s;
    }
    uint64_t state = m->seed;
    for (int i = 0; i < m->n_layers; i++) init_layer(&m->layers[i], m->desc.dtype, &state);
    __atomic_store_n(&m->weights_ok, 1, __ATOMIC_RELEASE);
    return FMLP_OK;
}

fmlp_status fmlp_mlp_materialize(const fmlp_mlp *cm)
{
    fmlp_mlp *m = (fmlp_mlp *)cm;
    if (__atomic_load_n(&m->weights_ok, __ATOMIC_ACQUIRE)) return FMLP_OK;
    pthread_mutex_lock(&m->pack_lock);
    fmlp_status s = materialize_locked(m);
    pthread_mutex_unlock(&m->pack_lock);
    return s;
}

void fmlp_mlp_drop_plans(fmlp_mlp *m)
{
    pthread_mutex_lock(&m->plan_lock);
    for (int i = 0; i < FMLP_PLAN_SLOTS; i++) {
        free(m->plans[i].plan);
        memset(&m->plans[i], 0, sizeof m->plans[i]);
    }
    pthread_mutex_unlock(&m->plan_lock);
}

static void drop_packings(fmlp_mlp *m)
{
    fmlp_mlp_drop_plans(m);
    const fmlp_backend *be = m->ctx->be;
    for (int i = 0; i < m->n_layers; i++) {
        if (m->layers[i].packed) be->unpack(m->ctx, m->layers[i].packed);
        m->layers[i].packed = NULL;
    }
    if (m->packed_glu) be->unpack(m->ctx, m->packed_glu);
    m->packed_glu = NULL;
    __atomic_store_n(&m->packed_ok, 0, __ATOMIC_RELEASE);
}

void fmlp_mlp_destroy(fmlp_mlp *m)
{
    if (!m) return;
    drop_packings(m);
    free_weights(m);
    pthread_mutex_destroy(&m->pack_lock);
    pthread_mutex_destroy(&m->plan_lock);
    fmlp_ctx *ctx = m->ctx;
    free(m);
    fmlp_ctx_unref(ctx);
}

fmlp_status fmlp_mlp_ensure_packed(fmlp_mlp *m)
{
    if (__atomic_load_n(&m->packed_ok, __ATOMIC_ACQUIRE)) return FMLP_OK;
    pthread_mutex_lock(&m->pack_lock);
    fmlp_status s = materialize_locked(m);
    if (s == FMLP_OK && !__atomic_load_n(&m->packed_ok, __ATOMIC_ACQUIRE)) {
        const fmlp_backend *be = m->ctx->be;
        fmlp_dtype dt = m->desc.dtype;
        for (int i = 0; i < m->n_layers && s == FMLP_OK; i++) {
            fmlp_layer *l = &m->layers[i];
            const bool gated_down = m->desc.block == FMLP_BLOCK_GATED && i == 2;
            if (!l->packed) s = be->pack(m->ctx, dt, l->w, l->b, l->n, l->k, gated_down, &l->packed);
        }
        if (s == FMLP_OK && m->desc.block == FMLP_BLOCK_GATED && !m->packed_glu) {
            fmlp_layer *g = &m->layers[0], *u = &m->layers[1];
            s = be->pack_glu(m->ctx, dt, g->w, g->b, u->w, u->b, g->n, g->k, &m->packed_glu);
        }
        if (s == FMLP_OK) __atomic_store_n(&m->packed_ok, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&m->pack_lock);
    return s;
}

const fmlp_mlp_desc *fmlp_mlp_get_desc(const fmlp_mlp *m) { return m ? &m->desc : NULL; }
int64_t fmlp_mlp_out_dim(const fmlp_mlp *m) { return m ? m->desc.out_dim : 0; }

int fmlp_mlp_tensor_count(const fmlp_mlp *m)
{
    if (!m) return 0;
    return m->n_layers * (m->desc.bias ? 2 : 1);
}

fmlp_status fmlp_mlp_tensor_info(const fmlp_mlp *m, int i, const char **name, int64_t *rows, int64_t *cols)
{
    int per = m && m->desc.bias ? 2 : 1;
    if (!m || i < 0 || i >= fmlp_mlp_tensor_count(m))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "tensor index %d is out of range; use 0..%d", i,
                         m ? fmlp_mlp_tensor_count(m) - 1 : -1);
    const fmlp_layer *l = &m->layers[i / per];
    bool is_bias = i % per == 1;
    if (name) *name = is_bias ? l->bname : l->wname;
    if (rows) *rows = l->n;
    if (cols) *cols = is_bias ? 1 : l->k;
    return FMLP_OK;
}

/* The layer and part (weight or bias) called `name`, or NULL. */
static fmlp_layer *find_tensor(fmlp_mlp *m, const char *name, bool *is_bias)
{
    for (int i = 0; i < m->n_layers; i++) {
        fmlp_layer *l = &m->layers[i];
        if (strcmp(name, l->wname) == 0) {
            *is_bias = false;
            return l;
        }
        if (m->desc.bias && strcmp(name, l->bname) == 0) {
            *is_bias = true;
            return l;
        }
    }
    return NULL;
}

static fmlp_status unknown_tensor(const fmlp_mlp *m, const char *name)
{
    char list[512] = "";
    size_t used = 0;
    for (int i = 0; i < fmlp_mlp_tensor_count(m) && used < sizeof list - 64; i++) {
        const char *n = "";
        fmlp_mlp_tensor_info(m, i, &n, NULL, NULL);
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", n);
    }
    return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "this MLP has no tensor \"%s\"; its tensors are: %s", name, list);
}

fmlp_status fmlp_mlp_set_weight(fmlp_mlp *m, const char *name, fmlp_dtype src_dtype, const void *data, int64_t rows,
                                int64_t cols)
{
    if (!m || !name || !data)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_set_weight: mlp, name and data must not be NULL");
    if ((unsigned)src_dtype >= FMLP_DTYPE_COUNT)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_set_weight: source dtype %d is unknown", (int)src_dtype);
    bool is_bias;
    fmlp_layer *l = find_tensor(m, name, &is_bias);
    if (!l) return unknown_tensor(m, name);
    int64_t want_r = l->n, want_c = is_bias ? 1 : l->k;
    bool bias_ok = is_bias && ((rows == l->n && cols == 1) || (rows == 1 && cols == l->n));
    if (!bias_ok && (rows != want_r || cols != want_c))
        return fmlp_fail(FMLP_ERR_SHAPE, "%s has shape [%lld, %lld] but the MLP needs [%lld%s%lld]%s", name, (long long)rows,
                         (long long)cols, (long long)want_r, is_bias ? "" : ", ",
                         is_bias ? 0LL : (long long)want_c, is_bias ? " (a bias of that many entries)" : "");
    fmlp_status s = fmlp_mlp_materialize(m);
    if (s != FMLP_OK) return s;
    drop_packings(m);
    int64_t count = is_bias ? l->n : l->n * l->k;
    fmlp_convert(m->desc.dtype, is_bias ? l->b : l->w, src_dtype, data, count);
    return FMLP_OK;
}

fmlp_status fmlp_mlp_get_weight(const fmlp_mlp *m, const char *name, float *out, int64_t rows, int64_t cols)
{
    if (!m || !name || !out)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_get_weight: mlp, name and out must not be NULL");
    bool is_bias;
    fmlp_layer *l = find_tensor((fmlp_mlp *)m, name, &is_bias);
    if (!l) return unknown_tensor(m, name);
    int64_t count = is_bias ? l->n : l->n * l->k, given;
    if (!fmlp_mul_i64(rows, cols, &given) || rows < 0 || cols < 0 || given != count)
        return fmlp_fail(FMLP_ERR_SHAPE, "%s holds %lld values but the buffer was given as [%lld, %lld]", name,
                         (long long)count, (long long)rows, (long long)cols);
    fmlp_status s = fmlp_mlp_materialize(m);
    if (s != FMLP_OK) return s;
    fmlp_convert(FMLP_F32, out, m->desc.dtype, is_bias ? l->b : l->w, count);
    return FMLP_OK;
}
