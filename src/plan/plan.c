/* Why: the one place that decides which kernels each mode runs. Eager is
 * PyTorch eager (one kernel per op, bias in the GEMM epilogue as addmm),
 * compiled fuses the pointwise ops as torch.compile does, fused puts the GLU
 * or activation in the GEMM epilogue. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "plan/plan.h"

static fmlp_kernel *add(fmlp_plan *p, fmlp_kernel_kind kind, const char *op, const char *parent, int in0, int in1,
                        int out)
{
    fmlp_kernel *k = &p->k[p->n++];
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->op = op;
    k->parent = parent;
    k->in0 = in0;
    k->in1 = in1;
    k->out = out;
    k->layer = -1;
    return k;
}

static void gemm_shape(fmlp_kernel *k, const fmlp_mlp *m, int layer, int64_t rows, fmlp_act act)
{
    const fmlp_layer *l = &m->layers[layer];
    k->layer = layer;
    k->act = act;
    k->m = rows;
    k->n = l->n;
    k->k = l->k;
}

static void pointwise_shape(fmlp_kernel *k, int64_t rows, int64_t cols, fmlp_act act)
{
    k->m = rows;
    k->n = cols;
    k->act = act;
}

static const char *act_op(fmlp_act a) { return fmlp_act_name(a); }

static const char *glu_op(fmlp_act a)
{
    switch (a) {
    case FMLP_ACT_GELU_TANH: return "fmlp::fused_gelu_tanh_mul";
    case FMLP_ACT_GELU: return "fmlp::fused_gelu_mul";
    case FMLP_ACT_SILU: return "fmlp::fused_silu_mul";
    case FMLP_ACT_RELU: return "fmlp::fused_relu_mul";
    default: return "fmlp::mul";
    }
}

static const char *act_parent(fmlp_act a)
{
    switch (a) {
    case FMLP_ACT_GELU_TANH:
    case FMLP_ACT_GELU: return "fmlp::gelu";
    case FMLP_ACT_SILU: return "fmlp::silu";
    case FMLP_ACT_RELU: return "fmlp::relu";
    default: return "fmlp::identity";
    }
}

/* Fused mode's whole gated block as one kernel, where the backend offers
 * it for this size; h goes through workspace T0 (in1). */
static bool build_gated_one(const fmlp_mlp *m, int64_t rows, fmlp_plan *p)
{
    const fmlp_backend *be = m->ctx->be;
    if (!be->one_kernel_mlp || !be->one_kernel_mlp(m->ctx, &m->desc, rows)) return false;
    fmlp_kernel *k = add(p, FMLP_KERNEL_MLP, "linear+glu+linear", "fmlp::fused_mlp", FMLP_BUF_X, FMLP_BUF_T0, FMLP_BUF_Y);
    gemm_shape(k, m, 0, rows, m->desc.act);
    k->n = m->layers[2].n;
    p->t_cols[FMLP_BUF_T0] = m->desc.hidden;
    return true;
}

static void build_gated(const fmlp_mlp *m, fmlp_mode mode, int64_t rows, fmlp_plan *p)
{
    fmlp_act act = m->desc.act;
    int64_t h = m->desc.hidden;
    if (mode == FMLP_MODE_FUSED && build_gated_one(m, rows, p)) return;
    if (mode == FMLP_MODE_FUSED) {
        fmlp_kernel *k = add(p, FMLP_KERNEL_GEMM_GLU, "linear+glu", "fmlp::linear_glu", FMLP_BUF_X, -1, FMLP_BUF_T0);
        gemm_shape(k, m, 0, rows, act);
        k = add(p, FMLP_KERNEL_GEMM, "linear", "fmlp::linear", FMLP_BUF_T0, -1, FMLP_BUF_Y);
        gemm_shape(k, m, 2, rows, FMLP_ACT_NONE);
        p->t_cols[FMLP_BUF_T0] = h;
        return;
    }
    fmlp_kernel *k = add(p, FMLP_KERNEL_GEMM, "linear", "fmlp::linear", FMLP_BUF_X, -1, FMLP_BUF_T0);
    gemm_shape(k, m, 0, rows, FMLP_ACT_NONE);
    k = add(p, FMLP_KERNEL_GEMM, "linear", "fmlp::linear", FMLP_BUF_X, -1, FMLP_BUF_T1);
    gemm_shape(k, m, 1, rows, FMLP_ACT_NONE);
    p->t_cols[FMLP_BUF_T0] = p->t_cols[FMLP_BUF_T1] = p->t_cols[FMLP_BUF_T2] = h;
    if (mode == FMLP_MODE_COMPILED || act == FMLP_ACT_NONE) {
        k = add(p, act == FMLP_ACT_NONE ? FMLP_KERNEL_MUL : FMLP_KERNEL_GLU, act == FMLP_ACT_NONE ? "mul" : "act*mul",
                glu_op(act), FMLP_BUF_T0, FMLP_BUF_T1, FMLP_BUF_T2);
        pointwise_shape(k, rows, h, act);
    } else {
        k = add(p, FMLP_KERNEL_ACT, act_op(act), act_parent(act), FMLP_BUF_T0, -1, FMLP_BUF_T2);
        pointwise_shape(k, rows, h, act);
        k = add(p, FMLP_KERNEL_MUL, "mul", "fmlp::mul", FMLP_BUF_T2, FMLP_BUF_T1, FMLP_BUF_T0);
        pointwise_shape(k, rows, h, FMLP_ACT_NONE);
    }
    int hin = p->k[p->n - 1].out;
    k = add(p, FMLP_KERNEL_GEMM, "linear", "fmlp::linear", hin, -1, FMLP_BUF_Y);
    gemm_shape(k, m, 2, rows, FMLP_ACT_NONE);
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
        const char *parent = L == 1 ? "fmlp::addmm" : fuse_act ? "fmlp::linear_act" : "fmlp::linear";
        fmlp_kernel *k = add(p, FMLP_KERNEL_GEMM, fuse_act ? "linear+act" : "linear", parent, in, -1, out);
        gemm_shape(k, m, l, rows, fuse_act ? act : FMLP_ACT_NONE);
        widen(p, out, m->layers[l].n);
        in = out;
        if (act_after && !fuse_act) {
            int act_out = other_temp(out);
            k = add(p, FMLP_KERNEL_ACT, act_op(act), act_parent(act), out, -1, act_out);
            pointwise_shape(k, rows, m->layers[l].n, act);
            widen(p, act_out, m->layers[l].n);
            in = act_out;
        }
    }
}

static void count_work(const fmlp_mlp *m, fmlp_kernel *k)
{
    int64_t es = (int64_t)fmlp_dtype_size(m->desc.dtype);
    bool bias = m->desc.bias;
    switch (k->kind) {
    case FMLP_KERNEL_GEMM:
        k->flops = 2 * k->m * k->n * k->k;
        k->bytes = es * (k->m * k->k + k->n * k->k + k->m * k->n + (bias ? k->n : 0));
        break;
    case FMLP_KERNEL_GEMM_GLU:
        k->flops = 4 * k->m * k->n * k->k;
        k->bytes = es * (k->m * k->k + 2 * k->n * k->k + k->m * k->n + (bias ? 2 * k->n : 0));
        break;
    case FMLP_KERNEL_ACT:
        k->flops = k->m * k->n;
        k->bytes = 2 * es * k->m * k->n;
        break;
    case FMLP_KERNEL_MUL:
    case FMLP_KERNEL_GLU:
        k->flops = (k->kind == FMLP_KERNEL_GLU ? 2 : 1) * k->m * k->n;
        k->bytes = 3 * es * k->m * k->n;
        break;
    case FMLP_KERNEL_MLP: { /* as GEMM_GLU then GEMM, h written and read back */
        const int64_t h = m->desc.hidden;
        k->flops = 4 * k->m * h * k->k + 2 * k->m * k->n * h;
        k->bytes = es * (k->m * k->k + 2 * h * k->k + 2 * k->m * h + k->n * h + k->m * k->n + (bias ? 2 * h + k->n : 0));
        break;
    }
    }
}

fmlp_mode fmlp_plan_auto(const fmlp_mlp *m, int64_t rows, char *why, size_t why_len)
{
    const fmlp_backend *be = m->ctx->be;
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
    if ((int)mode < FMLP_MODE_EAGER || mode > FMLP_MODE_AUTO)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "mode %d is unknown; use eager, compiled, fused or auto", (int)mode);
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
        p->k[i].fused = mode == FMLP_MODE_FUSED;
        count_work(m, &p->k[i]);
        m->ctx->be->name_kernel(m->ctx, m->desc.dtype, &p->k[i]);
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
        out->flops += ki->flops;
        out->bytes += ki->bytes;
    }
    return FMLP_OK;
}
