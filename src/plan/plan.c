/* Why: the one place that decides which kernels each mode runs. Eager is
 * PyTorch eager (one kernel per op, bias in the GEMM epilogue as addmm),
 * compiled fuses the pointwise ops as torch.compile does, fused puts the GLU
 * or activation in the GEMM epilogue. */
#include <stdio.h>
#include <string.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/names.h"
#include "plan/plan.h"

#define KIND_OP(kind, op, parent) [kind] = op,
#define KIND_PARENT(kind, op, parent) [kind] = parent,
#define ACT_MODULE(e, name, glu, module) [e] = "fmlp::" #module,
#define ACT_GLU_OP(e, name, glu, module) [e] = "fmlp::fused_" #name "_mul",
static const char *const kind_ops[] = {FMLP_KERNEL_TABLE(KIND_OP)};
static const char *const kind_parents[] = {FMLP_KERNEL_TABLE(KIND_PARENT)};
static const char *const act_modules[] = {FMLP_ACT_TABLE(ACT_MODULE)};
static const char *const act_glu_ops[] = {FMLP_ACT_TABLE(ACT_GLU_OP)};
_Static_assert(sizeof kind_ops / sizeof *kind_ops == FMLP_KERNEL_KIND_COUNT, "a kernel kind without an op");
_Static_assert(sizeof kind_parents / sizeof *kind_parents == FMLP_KERNEL_KIND_COUNT, "a kernel kind without a parent");
_Static_assert(sizeof act_modules / sizeof *act_modules == FMLP_ACT_COUNT, "an activation without a module");
_Static_assert(sizeof act_glu_ops / sizeof *act_glu_ops == FMLP_ACT_COUNT, "an activation without a GLU op");

static fmlp_kernel *add(fmlp_plan *p, fmlp_kernel_kind kind, fmlp_act act, int in0, int in1, int out)
{
    fmlp_kernel *k = &p->k[p->n++];
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->act = act;
    k->op = kind_ops[kind] ? kind_ops[kind] : fmlp_act_name(act);
    k->parent = kind_parents[kind] ? kind_parents[kind] : kind == FMLP_KERNEL_GLU ? act_glu_ops[act] : act_modules[act];
    if (kind == FMLP_KERNEL_GEMM && act != FMLP_ACT_NONE) {
        k->op = "linear+act";
        k->parent = "fmlp::linear_act";
    }
    k->in0 = in0;
    k->in1 = in1;
    k->out = out;
    k->layer = -1;
    return k;
}

static void gemm_shape(fmlp_kernel *k, const fmlp_mlp *m, int layer, int64_t rows)
{
    const fmlp_layer *l = &m->layers[layer];
    k->layer = layer;
    k->m = rows;
    k->n = l->n;
    k->k = l->k;
}

static void pointwise_shape(fmlp_kernel *k, int64_t rows, int64_t cols)
{
    k->m = rows;
    k->n = cols;
}

static void build_gated(const fmlp_mlp *m, fmlp_mode mode, int64_t rows, fmlp_plan *p)
{
    fmlp_act act = m->desc.act;
    int64_t h = m->desc.hidden;
    const fmlp_backend *be = m->ctx->be;
    int64_t ws = 0;
    if (mode == FMLP_MODE_FUSED && be->one_kernel && be->one_kernel(m->ctx, &m->desc, rows, &ws)) {
        fmlp_kernel *k = add(p, FMLP_KERNEL_MLP_GLU, act, FMLP_BUF_X, FMLP_BUF_T0, FMLP_BUF_Y);
        gemm_shape(k, m, 0, rows);
        k->n = m->layers[2].n;
        k->hidden = h;
        /* h, then the kernel's own workspace, 256-byte aligned, in T0 */
        const int64_t row_bytes = rows * (int64_t)fmlp_dtype_size(m->desc.dtype);
        p->t_cols[FMLP_BUF_T0] = h + (ws + 256 + row_bytes - 1) / row_bytes;
        return;
    }
    if (mode == FMLP_MODE_FUSED) {
        fmlp_kernel *k = add(p, FMLP_KERNEL_GEMM_GLU, act, FMLP_BUF_X, -1, FMLP_BUF_T0);
        gemm_shape(k, m, 0, rows);
        k = add(p, FMLP_KERNEL_GEMM, FMLP_ACT_NONE, FMLP_BUF_T0, -1, FMLP_BUF_Y);
        gemm_shape(k, m, 2, rows);
        k->tuned = true;
        p->t_cols[FMLP_BUF_T0] = h;
        return;
    }
    fmlp_kernel *k = add(p, FMLP_KERNEL_GEMM, FMLP_ACT_NONE, FMLP_BUF_X, -1, FMLP_BUF_T0);
    gemm_shape(k, m, 0, rows);
    k = add(p, FMLP_KERNEL_GEMM, FMLP_ACT_NONE, FMLP_BUF_X, -1, FMLP_BUF_T1);
    gemm_shape(k, m, 1, rows);
    p->t_cols[FMLP_BUF_T0] = p->t_cols[FMLP_BUF_T1] = p->t_cols[FMLP_BUF_T2] = h;
    if (mode == FMLP_MODE_COMPILED || act == FMLP_ACT_NONE) {
        k = add(p, act == FMLP_ACT_NONE ? FMLP_KERNEL_MUL : FMLP_KERNEL_GLU, act, FMLP_BUF_T0, FMLP_BUF_T1, FMLP_BUF_T2);
        pointwise_shape(k, rows, h);
    } else {
        k = add(p, FMLP_KERNEL_ACT, act, FMLP_BUF_T0, -1, FMLP_BUF_T2);
        pointwise_shape(k, rows, h);
        k = add(p, FMLP_KERNEL_MUL, FMLP_ACT_NONE, FMLP_BUF_T2, FMLP_BUF_T1, FMLP_BUF_T0);
        pointwise_shape(k, rows, h);
    }
    int hin = p->k[p->n - 1].out;
    k = add(p, FMLP_KERNEL_GEMM, FMLP_ACT_NONE, hin, -1, FMLP_BUF_Y);
    gemm_shape(k, m, 2, rows);
}

static int other_temp(int buf) { return buf == FMLP_BUF_T0 ? FMLP_BUF_T1 : FMLP_BUF_T0; }

static void widen(fmlp_plan *p, int buf, int64_t cols)
{
    if (buf >= FMLP_BUF_T0 && p->t_cols[buf] < cols) p->t_cols[buf] = cols;
}

static void build_stack(const fmlp_mlp *m, fmlp_mode mode, int64_t rows, fmlp_plan *p)
{
    fmlp_act act = m->desc.act;
    int L = m->n_layers;
    int in = FMLP_BUF_X;
    for (int l = 0; l < L; l++) {
        bool last = l == L - 1;
        bool act_after = !last && act != FMLP_ACT_NONE;
        bool fuse_act = mode == FMLP_MODE_FUSED && act_after;
        int out = last ? FMLP_BUF_Y : other_temp(in);
        fmlp_kernel *k = add(p, FMLP_KERNEL_GEMM, fuse_act ? act : FMLP_ACT_NONE, in, -1, out);
        if (L == 1) k->parent = "fmlp::addmm";
        gemm_shape(k, m, l, rows);
        k->tuned = mode == FMLP_MODE_FUSED;
        widen(p, out, m->layers[l].n);
        in = out;
        if (act_after && !fuse_act) {
            int act_out = other_temp(out);
            k = add(p, FMLP_KERNEL_ACT, act, out, -1, act_out);
            pointwise_shape(k, rows, m->layers[l].n);
            widen(p, act_out, m->layers[l].n);
            in = act_out;
        }
    }
}

/* Products and sums of counts that are -1 once anything overflowed. */
static int64_t prod(int64_t a, int64_t b, int64_t c)
{
    int64_t r;
    return a >= 0 && b >= 0 && c >= 0 && fmlp_mul3_i64(a, b, c, &r) ? r : -1;
}

static int64_t sum(int64_t a, int64_t b)
{
    int64_t r;
    return a >= 0 && b >= 0 && fmlp_add_i64(a, b, &r) ? r : -1;
}

bool fmlp_plan_count_work(const fmlp_mlp *m, fmlp_kernel *k)
{
    int64_t nb = m->desc.bias ? k->n : 0, mn = prod(k->m, k->n, 1), elems = -1;
    switch (k->kind) {
    case FMLP_KERNEL_GEMM: /* x (m, k), W (n, k), y (m, n), bias (n) */
        k->flops = prod(2, mn, k->k);
        elems = sum(sum(prod(k->m, k->k, 1), prod(k->n, k->k, 1)), sum(mn, nb));
        break;
    case FMLP_KERNEL_GEMM_GLU: /* x (m, k), gate and up (n, k), h (m, n), two biases */
        k->flops = prod(4, mn, k->k);
        elems = sum(sum(prod(k->m, k->k, 1), prod(2, k->n, k->k)), sum(mn, prod(2, nb, 1)));
        break;
    case FMLP_KERNEL_MLP_GLU: /* x (m, k), gate and up (hidden, k), down (n, hidden), y (m, n), three biases */
        k->flops = sum(prod(4, prod(k->m, k->hidden, 1), k->k), prod(2, mn, k->hidden));
        elems = sum(sum(prod(k->m, k->k, 1), prod(2, k->hidden, k->k)), sum(prod(k->n, k->hidden, 1), mn));
        elems = sum(elems, m->desc.bias ? sum(prod(2, k->hidden, 1), k->n) : 0);
        break;
    case FMLP_KERNEL_ACT:
        k->flops = mn;
        elems = prod(2, mn, 1);
        break;
    case FMLP_KERNEL_MUL:
    case FMLP_KERNEL_GLU:
        k->flops = prod(k->kind == FMLP_KERNEL_GLU ? 2 : 1, mn, 1);
        elems = prod(3, mn, 1);
        break;
    }
    k->bytes = prod(elems, (int64_t)fmlp_dtype_size(m->desc.dtype), 1);
    return k->flops >= 0 && k->bytes >= 0;
}

fmlp_mode fmlp_plan_auto(const fmlp_mlp *m, int64_t rows, char *why, size_t why_len)
{
    const fmlp_backend *be = m->ctx->be;
    fmlp_mode measured;
    if (fmlp_auto_lookup(m, rows, &measured, why, why_len)) return measured;
    if (be->auto_mode) {
        fmlp_mode mode = be->auto_mode(m->ctx, m->desc.block, m->desc.dtype, rows, why, why_len);
        if (mode != FMLP_MODE_AUTO) return mode;
    }
    snprintf(why, why_len, "fused: fewest kernels and no %s intermediate round trip through memory",
             m->desc.block == FMLP_BLOCK_GATED ? "gate/up" : "activation");
    return FMLP_MODE_FUSED;
}

fmlp_status fmlp_plan_build(const fmlp_mlp *m, fmlp_mode mode, int64_t rows, fmlp_plan *p)
{
    char choices[64];
    if ((unsigned)mode >= FMLP_MODE_COUNT)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "mode %d is unknown; use %s", (int)mode,
                         fmlp_mode_choices(choices, sizeof choices));
    if (rows < 1)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "rows = %lld: nothing to compute; pass at least one row", (long long)rows);
    memset(p, 0, sizeof *p);
    if (mode == FMLP_MODE_AUTO)
        mode = fmlp_plan_auto(m, rows, p->why, sizeof p->why);
    p->resolved = mode;
    bool single = m->desc.block == FMLP_BLOCK_STACK && m->n_layers == 1;
    p->outer = single ? "fmlp::linear" : "fmlp::mlp";
    if (m->desc.block == FMLP_BLOCK_GATED)
        build_gated(m, mode, rows, p);
    else
        build_stack(m, mode, rows, p);
    for (int i = 0; i < p->n; i++) {
        fmlp_kernel *k = &p->k[i];
        if (!fmlp_plan_count_work(m, k) || !fmlp_add_i64(p->flops, k->flops, &p->flops) ||
            !fmlp_add_i64(p->bytes, k->bytes, &p->bytes)) {
            char detail[160];
            snprintf(detail, sizeof detail, "%lld rows through %s of %lld x %lld x %lld", (long long)rows,
                     kind_ops[k->kind] ? kind_ops[k->kind] : fmlp_act_name(k->act), (long long)k->m, (long long)k->n,
                     (long long)k->k);
            return fmlp_too_large("the FLOPs or bytes of this forward", detail, "FLOPs or bytes",
                                  "run fewer rows per call");
        }
        m->ctx->be->name_kernel(m->ctx, m->desc.dtype, k);
    }
    return FMLP_OK;
}

fmlp_status fmlp_mlp_plan(const fmlp_mlp *m, fmlp_mode mode, int64_t rows, fmlp_plan_info *out)
{
    if (!m || !out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_mlp_plan: mlp and out must not be NULL");
    fmlp_plan p;
    fmlp_status s = fmlp_plan_build(m, mode, rows, &p);
    if (s != FMLP_OK) return s;
    memset(out, 0, sizeof *out);
    out->mode = mode;
    out->resolved = p.resolved;
    out->device = m->ctx->device;
    out->dtype = m->desc.dtype;
    out->rows = rows;
    out->graph = m->graph;
    snprintf(out->why, sizeof out->why, "%s", p.why);
    out->n_kernels = p.n;
    for (int i = 0; i < p.n; i++) {
        fmlp_kernel_info *ki = &out->kernels[i];
        snprintf(ki->name, sizeof ki->name, "%s", p.k[i].name);
        snprintf(ki->op, sizeof ki->op, "%s", p.k[i].op);
        ki->m = p.k[i].m;
        ki->n = p.k[i].n;
        ki->k = p.k[i].k;
        ki->flops = p.k[i].flops;
        ki->bytes = p.k[i].bytes;
    }
    out->flops = p.flops;
    out->bytes = p.bytes;
    return FMLP_OK;
}
