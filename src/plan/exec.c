/* Why: one forward = walk the plan. For each kernel the executor opens the
 * profiler's op span (when one records), asks the backend to run it and
 * closes the span; the backend reports the kernel itself. Inputs are
 * checked here once, so backends can trust shapes. A forward can also be
 * split, its last kernel run by the caller on row ranges with work of its
 * own between them (tensor parallelism's overlapped all-reduce). */
#include <stdio.h>
#include <string.h>

#include "core/checked.h"
#include "core/error.h"
#include "model/mlp_internal.h"
#include "plan/plan.h"
#include "profiler/hook.h"

/* x or y of a forward: a valid tensor (fmlp_tensor_check) of the MLP's
 * dtype and width, with rows; its extent in bytes goes to *extent. */
static fmlp_status check_tensor(const char *what, const fmlp_tensor *t, fmlp_dtype dt, int64_t cols, int64_t *extent)
{
    fmlp_status s = fmlp_tensor_check(what, t, extent);
    if (s != FMLP_OK) return s;
    if (t->dtype != dt)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "%s is %s but the MLP is %s; convert it or create the MLP in %s", what,
                         fmlp_dtype_name(t->dtype), fmlp_dtype_name(dt), fmlp_dtype_name(t->dtype));
    if (t->cols != cols)
        return fmlp_fail(FMLP_ERR_SHAPE, "%s has %lld columns but the MLP needs %lld", what, (long long)t->cols,
                         (long long)cols);
    if (t->rows < 1)
        return fmlp_fail(FMLP_ERR_SHAPE, "%s has %lld rows: nothing to compute; pass at least one row", what,
                         (long long)t->rows);
    return FMLP_OK;
}

/* Whether the byte ranges [a, a + a_bytes) and [b, b + b_bytes) meet. */
static bool overlaps(const void *a, int64_t a_bytes, const void *b, int64_t b_bytes)
{
    uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return a0 < b0 + (uintptr_t)b_bytes && b0 < a0 + (uintptr_t)a_bytes;
}

/* Bytes of workspace a forward of `rows` needs: the plan's temporaries
 * (offsets in off[]), then device copies of host x and y when staged. */
static fmlp_status workspace_layout(const fmlp_mlp *m, const fmlp_plan *p, int64_t rows, bool stage_x, bool stage_y,
                                    int64_t off[FMLP_BUF_COUNT + 2], int64_t *total)
{
    const fmlp_mlp_desc *d = &m->desc;
    int64_t cols[FMLP_BUF_COUNT + 2] = {0};
    for (int b = FMLP_BUF_T0; b < FMLP_BUF_COUNT; b++) cols[b] = p->t_cols[b];
    cols[FMLP_BUF_COUNT] = stage_x ? d->dim : 0;
    cols[FMLP_BUF_COUNT + 1] = stage_y ? d->out_dim : 0;
    int64_t sum = 0;
    for (int b = FMLP_BUF_T0; b < FMLP_BUF_COUNT + 2; b++) {
        int64_t bytes;
        off[b] = sum;
        fmlp_status s = fmlp_checked_bytes("the forward's workspace", rows, cols[b], d->dtype,
                                           "run fewer rows per call", &bytes);
        if (s != FMLP_OK) return s;
        if (!fmlp_add_i64(bytes, 63, &bytes) || !fmlp_add_i64(sum, bytes & ~(int64_t)63, &sum))
            return fmlp_too_large("the forward's workspace", "its buffers together", "bytes", "run fewer rows per call");
    }
    *total = sum;
    return FMLP_OK;
}

static void shapes_of(const fmlp_kernel *k, char *buf, size_t len)
{
    if (k->kind == FMLP_KERNEL_MLP_GLU)
        snprintf(buf, len, "[[%lld, %lld], [%lld, %lld], [%lld, %lld]]", (long long)k->m, (long long)k->k,
                 (long long)(2 * k->hidden), (long long)k->k, (long long)k->n, (long long)k->hidden);
    else if (k->k)
        snprintf(buf, len, "[[%lld, %lld], [%lld, %lld]]", (long long)k->m, (long long)k->k,
                 (long long)(k->kind == FMLP_KERNEL_GEMM_GLU ? 2 * k->n : k->n), (long long)k->k);
    else if (k->in1 >= 0)
        snprintf(buf, len, "[[%lld, %lld], [%lld, %lld]]", (long long)k->m, (long long)k->n, (long long)k->m,
                 (long long)k->n);
    else
        snprintf(buf, len, "[[%lld, %lld]]", (long long)k->m, (long long)k->n);
}

/* The module op around a whole forward, as torch nests aten::linear. */
static int64_t outer_begin(struct fmlp_profiler *prof, const fmlp_mlp *m, const fmlp_plan *p, int64_t rows)
{
    char shapes[96];
    snprintf(shapes, sizeof shapes, "[[%lld, %lld]]", (long long)rows, (long long)m->desc.dim);
    return fmlp_prof_op_begin(prof, p->outer, shapes, p->flops, p->bytes);
}

/* One kernel on `bufs`, under its op span when `prof` records, with its
 * layer's packing (gate/up and down both for the one-kernel MLP). */
static fmlp_status run_kernel(fmlp_mlp *m, const fmlp_kernel *k, fmlp_tensor *bufs, struct fmlp_profiler *prof)
{
    fmlp_ctx *ctx = m->ctx;
    fmlp_dtype dt = m->desc.dtype;
    const void *both[2] = {m->packed_glu, m->n_layers > 2 ? m->layers[2].packed : NULL};
    const void *packed = k->kind == FMLP_KERNEL_MLP_GLU    ? (const void *)both
                         : k->kind == FMLP_KERNEL_GEMM_GLU ? m->packed_glu
                         : k->layer >= 0                   ? m->layers[k->layer].packed
                                                           : NULL;
    const fmlp_tensor *in1 = k->in1 >= 0 ? &bufs[k->in1] : NULL;
    if (!prof) return ctx->be->run(ctx, dt, k, packed, &bufs[k->in0], in1, &bufs[k->out], 0);
    char shapes[96];
    shapes_of(k, shapes, sizeof shapes);
    int64_t id = fmlp_prof_op_begin(prof, k->parent, shapes, k->flops, k->bytes);
    fmlp_status s = ctx->be->run(ctx, dt, k, packed, &bufs[k->in0], in1, &bufs[k->out], id);
    fmlp_prof_op_end(prof, id);
    return s;
}

/* Runs the plan's kernels [first, last) in order; `prof` NULL records
 * nothing (also while a CUDA graph captures, when kernels are recorded,
 * not run). */
static fmlp_status run_range(fmlp_mlp *m, const fmlp_plan *p, int first, int last, fmlp_tensor *bufs,
                             struct fmlp_profiler *prof)
{
    fmlp_status s = FMLP_OK;
    for (int i = first; i < last && s == FMLP_OK; i++) s = run_kernel(m, &p->k[i], bufs, prof);
    return s;
}

fmlp_status fmlp_exec_run_kernels(fmlp_mlp *m, const fmlp_plan *p, fmlp_tensor *bufs, struct fmlp_profiler *prof)
{
    return run_range(m, p, 0, p->n, bufs, prof);
}

/* What a captured CUDA graph depends on; zeroed so padding compares equal. */
typedef struct {
    const fmlp_mlp *mlp;
    int mode;
    int64_t rows;
    const void *ptr[FMLP_BUF_COUNT];
    int64_t ld[FMLP_BUF_COUNT];
} graph_key;

/* Replays the graph cached for this forward, or captures one and launches
 * it, under the op `external_id`. */
static fmlp_status run_graph(fmlp_mlp *m, const fmlp_plan *p, fmlp_tensor *bufs, int64_t external_id)
{
    fmlp_ctx *ctx = m->ctx;
    graph_key key;
    memset(&key, 0, sizeof key);
    key.mlp = m;
    key.mode = (int)p->resolved;
    key.rows = bufs[FMLP_BUF_X].rows;
    for (int b = 0; b < FMLP_BUF_COUNT; b++) {
        key.ptr[b] = bufs[b].data;
        key.ld[b] = bufs[b].ld;
    }
    bool hit = false;
    fmlp_status s = ctx->be->graph_launch(ctx, &key, sizeof key, external_id, &hit);
    if (s != FMLP_OK || hit) return s;
    s = ctx->be->graph_begin(ctx);
    if (s != FMLP_OK) return s;
    s = fmlp_exec_run_kernels(m, p, bufs, NULL);
    fmlp_status e = ctx->be->graph_end(ctx, s == FMLP_OK ? &key : NULL, sizeof key, external_id);
    return s != FMLP_OK ? s : e;
}

static fmlp_status run_plan(fmlp_mlp *m, const fmlp_plan *p, fmlp_tensor *bufs)
{
    fmlp_prof_hold hold = fmlp_prof_hold_take(m->ctx);
    struct fmlp_profiler *prof = hold.p;
    const fmlp_backend *be = m->ctx->be;
    /* Inside the caller's own capture, the kernels go into its graph. */
    bool graph = m->graph && be->graph_launch && !(be->caller_capturing && be->caller_capturing(m->ctx));
    int64_t outer = prof ? outer_begin(prof, m, p, bufs[FMLP_BUF_X].rows) : 0;
    fmlp_status s;
    if (graph)
        s = run_graph(m, p, bufs, outer);
    else
        s = fmlp_exec_run_kernels(m, p, bufs, prof);
    if (prof) fmlp_prof_op_end(prof, outer);
    fmlp_prof_hold_give(m->ctx, hold);
    return s;
}

fmlp_status fmlp_exec_open(fmlp_mlp *m, fmlp_mode mode, const fmlp_tensor *x, fmlp_tensor *y, fmlp_exec_forward *f)
{
    memset(f, 0, sizeof *f);
    fmlp_ctx *ctx = m->ctx;
    const fmlp_mlp_desc *d = &m->desc;
    int64_t x_bytes, y_bytes;
    fmlp_status s = check_tensor("x", x, d->dtype, d->dim, &x_bytes);
    if (s == FMLP_OK) s = check_tensor("y", y, d->dtype, d->out_dim, &y_bytes);
    if (s != FMLP_OK) return s;
    if (x->rows != y->rows)
        return fmlp_fail(FMLP_ERR_SHAPE, "x has %lld rows but y has %lld; they must match", (long long)x->rows,
                         (long long)y->rows);
    if (x->device == y->device && overlaps(x->data, x_bytes, y->data, y_bytes))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "x and y overlap in memory; write the output to a separate buffer");
    if (ctx->device == FMLP_DEVICE_CPU && (x->device != FMLP_DEVICE_CPU || y->device != FMLP_DEVICE_CPU))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "a CPU context needs host tensors; x or y is marked as device memory");
    bool stage_x = ctx->device != FMLP_DEVICE_CPU && x->device == FMLP_DEVICE_CPU;
    bool stage_y = ctx->device != FMLP_DEVICE_CPU && y->device == FMLP_DEVICE_CPU;
    if ((stage_x || stage_y) && ctx->be->caller_capturing && ctx->be->caller_capturing(ctx))
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "host tensors need a synchronizing copy, which a stream being "
                         "captured into a CUDA graph cannot run; pass device tensors while capturing");
    if (mode == FMLP_MODE_AUTO) mode = fmlp_auto_resolve(m, x->rows);
    const fmlp_plan *p;
    s = fmlp_plan_get(m, mode, x->rows, &p);
    if (s != FMLP_OK) return s;
    int64_t rows = x->rows, off[FMLP_BUF_COUNT + 2], total = 0;
    s = workspace_layout(m, p, rows, stage_x, stage_y, off, &total);
    if (s == FMLP_OK) s = fmlp_mlp_ensure_packed(m);
    fmlp_ws_block *ws = NULL;
    if (s == FMLP_OK && total) s = fmlp_ws_take(ctx, (size_t)total, &ws);
    if (s != FMLP_OK) {
        fmlp_plan_release(m, p);
        return s;
    }
    *f = (fmlp_exec_forward){.m = m, .p = p, .ws = ws, .y = *y, .stage_x = stage_x, .stage_y = stage_y};
    fmlp_tensor *bufs = f->bufs;
    bufs[FMLP_BUF_X] = *x;
    bufs[FMLP_BUF_Y] = *y;
    for (int b = FMLP_BUF_T0; b < FMLP_BUF_COUNT; b++) {
        bufs[b] = fmlp_tensor_view(ws ? (char *)ws->data + off[b] : NULL, d->dtype, rows, p->t_cols[b], p->t_cols[b]);
        bufs[b].device = ctx->device;
    }
    if (stage_x) {
        bufs[FMLP_BUF_X] = fmlp_tensor_view((char *)ws->data + off[FMLP_BUF_COUNT], d->dtype, rows, d->dim, d->dim);
        bufs[FMLP_BUF_X].device = ctx->device;
        s = fmlp_tensor_copy(ctx, &bufs[FMLP_BUF_X], x);
    }
    if (stage_y) {
        bufs[FMLP_BUF_Y] = fmlp_tensor_view((char *)ws->data + off[FMLP_BUF_COUNT + 1], d->dtype, rows, d->out_dim,
                                            d->out_dim);
        bufs[FMLP_BUF_Y].device = ctx->device;
    }
    return s == FMLP_OK ? FMLP_OK : fmlp_exec_close(f, s);
}

fmlp_status fmlp_exec_close(fmlp_exec_forward *f, fmlp_status s)
{
    fmlp_ctx *ctx = f->m->ctx;
    if (s == FMLP_OK && f->stage_y) s = fmlp_tensor_copy(ctx, &f->y, &f->bufs[FMLP_BUF_Y]);
    if (s == FMLP_OK && (f->stage_x || f->stage_y)) s = fmlp_ctx_synchronize(ctx);
    fmlp_ws_give(ctx, f->ws);
    fmlp_plan_release(f->m, f->p);
    f->ws = NULL;
    f->p = NULL;
    return s;
}

fmlp_status fmlp_mlp_forward(fmlp_mlp *m, fmlp_mode mode, const fmlp_tensor *x, fmlp_tensor *y)
{
    if (!m) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_forward: mlp is NULL");
    fmlp_exec_forward f;
    fmlp_status s = fmlp_exec_open(m, mode, x, y, &f);
    return s == FMLP_OK ? fmlp_exec_close(&f, run_plan(m, f.p, f.bufs)) : s;
}

bool fmlp_exec_splits(const fmlp_plan *p)
{
    const fmlp_kernel *k = p->n >= 2 ? &p->k[p->n - 1] : NULL;
    return k && k->kind == FMLP_KERNEL_GEMM && k->out == FMLP_BUF_Y && k->in0 >= FMLP_BUF_T0 && k->in1 < 0;
}

fmlp_status fmlp_exec_split_begin(fmlp_mlp *m, fmlp_mode mode, const fmlp_tensor *x, fmlp_tensor *y,
                                  fmlp_exec_split *sp)
{
    memset(sp, 0, sizeof *sp);
    if (!m) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_forward: mlp is NULL");
    fmlp_status s = fmlp_exec_open(m, mode, x, y, &sp->f);
    if (s != FMLP_OK) return s;
    sp->hold = fmlp_prof_hold_take(m->ctx);
    const fmlp_plan *p = sp->f.p;
    sp->outer = sp->hold.p ? outer_begin(sp->hold.p, m, p, x->rows) : 0;
    sp->split = fmlp_exec_splits(p);
    s = run_range(m, p, 0, sp->split ? p->n - 1 : p->n, sp->f.bufs, sp->hold.p);
    return s == FMLP_OK ? FMLP_OK : fmlp_exec_split_end(sp, s);
}

/* Rows [r0, r0 + n) of a tensor with rows. */
static fmlp_tensor row_range(const fmlp_tensor *t, int64_t r0, int64_t n)
{
    fmlp_tensor v = *t;
    v.data = (char *)t->data + (size_t)(r0 * t->ld) * fmlp_dtype_size(t->dtype);
    v.rows = n;
    return v;
}

fmlp_status fmlp_exec_split_rows(fmlp_exec_split *sp, int64_t r0, int64_t n)
{
    const fmlp_plan *p = sp->f.p;
    const int64_t rows = sp->f.bufs[FMLP_BUF_Y].rows;
    if (!sp->split || r0 < 0 || n < 1 || r0 > rows - n)
        return fmlp_fail(FMLP_ERR_INTERNAL, "rows [%lld, +%lld) of a %lld-row forward whose last kernel %s", (long long)r0,
                         (long long)n, (long long)rows, sp->split ? "runs on row ranges" : "ran whole");
    fmlp_kernel k = p->k[p->n - 1];
    k.m = n;
    if (!fmlp_plan_count_work(sp->f.m, &k))
        return fmlp_fail(FMLP_ERR_INTERNAL, "the work of %lld rows of a planned kernel does not fit int64", (long long)n);
    fmlp_tensor bufs[FMLP_BUF_COUNT];
    memcpy(bufs, sp->f.bufs, sizeof bufs);
    bufs[k.in0] = row_range(&sp->f.bufs[k.in0], r0, n);
    bufs[k.out] = row_range(&sp->f.bufs[k.out], r0, n);
    return run_kernel(sp->f.m, &k, bufs, sp->hold.p);
}

fmlp_status fmlp_exec_split_end(fmlp_exec_split *sp, fmlp_status s)
{
    fmlp_ctx *ctx = sp->f.m->ctx;
    if (sp->hold.p) fmlp_prof_op_end(sp->hold.p, sp->outer);
    fmlp_prof_hold_give(ctx, sp->hold);
    sp->hold.p = NULL;
    return fmlp_exec_close(&sp->f, s);
}

fmlp_status fmlp_mlp_set_graph(fmlp_mlp *m, bool on)
{
    if (!m) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_set_graph: mlp is NULL");
    if (on && !m->ctx->be->graph_launch)
        return fmlp_fail(FMLP_ERR_UNSUPPORTED, "CUDA graphs need a CUDA context; drop --graph on the CPU");
    m->graph = on;
    return FMLP_OK;
}
