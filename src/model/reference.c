/* Why: the oracle. The whole block in double precision from the weights as
 * stored, with no intermediate rounding; every kernel on every backend is
 * measured against it. Deliberately plain loops: no reordered sums, no
 * threads. */
#include <stdlib.h>

#include "core/act_ref.h"
#include "core/alloc.h"
#include "core/checked.h"
#include "core/dtype.h"
#include "core/error.h"
#include "model/mlp_internal.h"

/* y(rows, n) = x(rows, k) · Wᵀ + b, all double. Each output is one chain
 * of adds in k order; four rows' chains run side by side (a block of fewer
 * rows repeats its last row and keeps only its own), which leaves every
 * sum as it was and lets the adds overlap: a single chain waits on each
 * add's latency, and the GPU tests' references at thousands of rows took
 * most of their time. */
static void linear_ref(const fmlp_layer *l, fmlp_dtype dt, const double *x, int64_t rows, double *y)
{
    for (int64_t r = 0; r < rows; r += 4) {
        const int64_t nr = rows - r < 4 ? rows - r : 4;
        const double *xs[4];
        for (int64_t q = 0; q < 4; q++) xs[q] = x + (r + (q < nr ? q : nr - 1)) * l->k;
        for (int64_t j = 0; j < l->n; j++) {
            const double b = l->b ? fmlp_load(dt, l->b, j) : 0.0;
            double a[4] = {b, b, b, b};
            for (int64_t i = 0; i < l->k; i++) {
                const double w = fmlp_load(dt, l->w, j * l->k + i);
                for (int q = 0; q < 4; q++) a[q] += xs[q][i] * w;
            }
            for (int64_t q = 0; q < nr; q++) y[(r + q) * l->n + j] = a[q];
        }
    }
}

fmlp_status fmlp_mlp_reference(const fmlp_mlp *m, const double *x, int64_t rows, double *y)
{
    if (!m || !x || !y) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_reference: NULL argument");
    if (rows < 1) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "rows = %lld; use at least 1", (long long)rows);
    const fmlp_mlp_desc *d = &m->desc;
    fmlp_dtype dt = d->dtype;
    fmlp_status s = fmlp_mlp_materialize(m);
    if (s != FMLP_OK) return s;
    int64_t widest = d->dim > d->hidden ? d->dim : d->hidden;
    if (d->out_dim > widest) widest = d->out_dim;
    int64_t bytes;
    s = fmlp_checked_bytes("the reference's buffers", rows, widest, FMLP_F32, "use fewer rows", &bytes);
    if (s != FMLP_OK) return s;
    if (!fmlp_mul_i64(bytes, 2, &bytes)) return fmlp_too_large("the reference's buffers", "in f64", "bytes", "use fewer rows");
    double *a = fmlp_malloc((size_t)bytes);
    double *b = fmlp_malloc((size_t)bytes);
    if (!a || !b) {
        free(a);
        free(b);
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory for the reference at %lld rows", (long long)rows);
    }
    if (d->block == FMLP_BLOCK_GATED) {
        linear_ref(&m->layers[0], dt, x, rows, a);
        linear_ref(&m->layers[1], dt, x, rows, b);
        for (int64_t i = 0; i < rows * d->hidden; i++) a[i] = fmlp_act_ref(d->act, a[i]) * b[i];
        linear_ref(&m->layers[2], dt, a, rows, y);
    } else {
        const double *in = x;
        for (int l = 0; l < m->n_layers; l++) {
            bool last = l == m->n_layers - 1;
            double *out = last ? y : (l % 2 ? b : a);
            linear_ref(&m->layers[l], dt, in, rows, out);
            if (!last)
                for (int64_t i = 0; i < rows * m->layers[l].n; i++) out[i] = fmlp_act_ref(d->act, out[i]);
            in = out;
        }
    }
    free(a);
    free(b);
    return FMLP_OK;
}
