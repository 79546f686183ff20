/* Why: the CPU implementation of the backend table: a persistent thread
 * pool, a code path chosen once per context (best available, or forced by
 * option or FMLP_CPU_PATH), packed weights, per-thread kernel lanes for the
 * profiler, and the CPU's part of `fmlp info`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/internal.h"
#include "cpu/features.h"
#include "cpu/gemm.h"
#include "cpu/path.h"
#include "cpu/pointwise.h"
#include "profiler/hook.h"

typedef struct {
    cpu_pool *pool;
    cpu_path path;
} cpu_state;

static cpu_state *state(const fmlp_ctx *ctx) { return (cpu_state *)ctx->be_state; }

/* The path names, slowest first, joined by ", " and the last by `last`;
 * only those this machine runs when `available_only`. */
static void path_list(char *buf, size_t cap, bool available_only, const char *last)
{
    const char *names[CPU_PATH_COUNT];
    int n = 0;
    for (int i = 0; i < CPU_PATH_COUNT; i++) {
        cpu_path p = cpu_path_listed(i);
        if (!available_only || cpu_path_available(p, NULL)) names[n++] = cpu_path_name(p);
    }
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i == 0 ? "" : i == n - 1 ? last : ", ", names[i]);
}

static fmlp_status path_unavailable(const char *name, const char *why)
{
    char avail[128];
    path_list(avail, sizeof avail, true, ", ");
    return fmlp_fail(FMLP_ERR_UNSUPPORTED, "CPU path \"%s\" cannot run here (%s); available: %s", name, why, avail);
}

static fmlp_status cpu_init(fmlp_ctx *ctx, const fmlp_ctx_options *opt)
{
    const char *want = getenv("FMLP_CPU_PATH");
    if (!want || !*want) want = opt->cpu_path;
    cpu_path path = cpu_path_best();
    if (want && *want) {
        if (!cpu_path_parse(want, &path)) {
            char all[128];
            path_list(all, sizeof all, false, " or ");
            return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "CPU path \"%s\" is unknown; use %s", want, all);
        }
        const char *why;
        if (!cpu_path_available(path, &why)) return path_unavailable(want, why);
    }
    int threads = opt->threads > 0 ? opt->threads : cpu_features_get()->cores;
    cpu_state *st = fmlp_calloc(1, sizeof *st);
    if (!st) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory creating the CPU backend");
    st->path = path;
    st->pool = cpu_pool_create(threads);
    if (!st->pool) {
        free(st);
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "could not start %d worker threads; try --threads 1", threads);
    }
    ctx->be_state = st;
    return FMLP_OK;
}

static void cpu_fini(fmlp_ctx *ctx)
{
    cpu_state *st = state(ctx);
    if (!st) return;
    cpu_pool_destroy(st->pool);
    free(st);
    ctx->be_state = NULL;
}

static fmlp_status cpu_pack(fmlp_ctx *ctx, fmlp_dtype dtype, const void *w, const void *b, int64_t n, int64_t k,
                            bool gated_down, void **packed)
{
    (void)gated_down;
    *packed = cpu_gemm_pack(state(ctx)->path, dtype, w, b, n, k);
    if (!*packed)
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory packing a (%lld, %lld) %s weight", (long long)n,
                         (long long)k, fmlp_dtype_name(dtype));
    return FMLP_OK;
}

static fmlp_status cpu_pack_glu(fmlp_ctx *ctx, fmlp_dtype dtype, const void *wg, const void *bg, const void *wu,
                                const void *bu, int64_t n, int64_t k, void **packed)
{
    *packed = cpu_gemm_pack_glu(state(ctx)->path, dtype, wg, bg, wu, bu, n, k);
    if (!*packed)
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory packing gate and up (%lld, %lld) %s weights",
                         (long long)n, (long long)k, fmlp_dtype_name(dtype));
    return FMLP_OK;
}

static void cpu_unpack(fmlp_ctx *ctx, void *packed)
{
    (void)ctx;
    cpu_packed_free(packed);
}

#define GLU_NAME(e, name, glu, module) #glu,
static const char *const glu_names[] = {FMLP_ACT_TABLE(GLU_NAME)};
_Static_assert(sizeof glu_names / sizeof *glu_names == FMLP_ACT_COUNT, "an activation without a GLU name");

static void cpu_name_kernel(fmlp_ctx *ctx, fmlp_dtype dtype, fmlp_kernel *k)
{
    cpu_path path = cpu_path_for_dtype(state(ctx)->path, dtype);
    const char *dt = fmlp_dtype_name(dtype), *pn = cpu_path_name(path);
    switch (k->kind) {
    case FMLP_KERNEL_GEMM:
        snprintf(k->name, sizeof k->name, "cpu_gemm_%s_%s%s%s", dt, pn, k->act != FMLP_ACT_NONE ? "_" : "",
                 k->act != FMLP_ACT_NONE ? fmlp_act_name(k->act) : "");
        break;
    case FMLP_KERNEL_GEMM_GLU: snprintf(k->name, sizeof k->name, "cpu_gemm_%s_%s_%s", dt, pn, glu_names[k->act]); break;
    case FMLP_KERNEL_ACT: snprintf(k->name, sizeof k->name, "cpu_%s_%s_%s", fmlp_act_name(k->act), dt, pn); break;
    case FMLP_KERNEL_MUL: snprintf(k->name, sizeof k->name, "cpu_mul_%s_%s", dt, pn); break;
    case FMLP_KERNEL_GLU:
        snprintf(k->name, sizeof k->name, "cpu_fused_%s_mul_%s_%s", fmlp_act_name(k->act), dt, pn);
        break;
    case FMLP_KERNEL_MLP_GLU: snprintf(k->name, sizeof k->name, "cpu_unplanned_mlp"); break;
    }
}

/* One parallel region: one correlation for all its lanes, and the External
 * id of the op that ran it. */
static void report_lanes(struct fmlp_profiler *prof, const fmlp_kernel *k, const cpu_lane_time *t, int lanes,
                         int64_t external_id, fmlp_prof_record *r)
{
    const int64_t corr = fmlp_prof_correlation(prof);
    for (int i = 0; i < lanes; i++) {
        memset(&r[i], 0, sizeof r[i]);
        r[i].kind = FMLP_REC_KERNEL;
        r[i].name = k->name;
        r[i].t0_ns = t[i].t0_ns;
        r[i].t1_ns = t[i].t1_ns;
        r[i].device = -1;
        r[i].lane = t[i].os_tid;
        r[i].correlation = corr;
        r[i].external_id = external_id;
        /* The whole kernel's work is carried by its first lane. */
        r[i].flops = i == 0 ? k->flops : 0;
        r[i].bytes = i == 0 ? k->bytes : 0;
        r[i].grid[0] = lanes;
        r[i].grid[1] = r[i].grid[2] = 1;
        r[i].block[0] = r[i].block[1] = r[i].block[2] = 1;
    }
    fmlp_prof_record_add_n(prof, r, lanes);
}

#define STACK_LANES 64

static fmlp_status cpu_run(fmlp_ctx *ctx, fmlp_dtype dtype, const fmlp_kernel *k, const void *packed,
                           const fmlp_tensor *in0, const fmlp_tensor *in1, fmlp_tensor *out, int64_t external_id)
{
    if (k->kind == FMLP_KERNEL_MLP_GLU)
        return fmlp_fail(FMLP_ERR_INTERNAL, "the CPU backend has no one-kernel MLP; its plans never ask for one");
    cpu_state *st = state(ctx);
    fmlp_prof_hold hold = fmlp_prof_hold_take(ctx);
    bool profiled = hold.p != NULL;
    cpu_lane_time stack_times[STACK_LANES], *times = NULL;
    fmlp_prof_record stack_recs[STACK_LANES], *recs = NULL;
    int lanes = cpu_pool_threads(st->pool);
    if (profiled) {
        bool small = lanes <= STACK_LANES;
        times = small ? stack_times : fmlp_calloc((size_t)lanes, sizeof *times);
        recs = small ? stack_recs : fmlp_calloc((size_t)lanes, sizeof *recs);
        if (!times || !recs) {
            if (!small) {
                free(times);
                free(recs);
            }
            fmlp_prof_hold_give(ctx, hold);
            return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory recording kernel lanes");
        }
    }
    cpu_path path = cpu_path_for_dtype(st->path, dtype);
    switch (k->kind) {
    case FMLP_KERNEL_GEMM:
    case FMLP_KERNEL_GEMM_GLU:
        lanes = cpu_gemm_threads(st->pool, packed, k->m);
        cpu_gemm_run(st->pool, packed, k->act, in0->data, in0->ld, out->data, out->ld, k->m, times);
        break;
    case FMLP_KERNEL_ACT:
    case FMLP_KERNEL_MUL:
    case FMLP_KERNEL_GLU: {
        cpu_pw_kind pw = k->kind == FMLP_KERNEL_ACT ? CPU_PW_ACT : k->kind == FMLP_KERNEL_MUL ? CPU_PW_MUL : CPU_PW_GLU;
        lanes = cpu_pointwise_threads(st->pool, k->m, k->n);
        cpu_pointwise_run(st->pool, path, dtype, pw, k->act, in0->data, in0->ld, in1 ? in1->data : NULL,
                          in1 ? in1->ld : 0, out->data, out->ld, k->m, k->n, times);
        break;
    }
    case FMLP_KERNEL_MLP_GLU: break;
    }
    if (profiled) {
        report_lanes(hold.p, k, times, lanes, external_id, recs);
        if (times != stack_times) {
            free(times);
            free(recs);
        }
    }
    fmlp_prof_hold_give(ctx, hold);
    return FMLP_OK;
}

static bool cpu_supports(fmlp_block block, fmlp_dtype dtype, fmlp_mode mode, char *why, size_t why_len)
{
    (void)block;
    (void)mode;
    if (dtype == FMLP_F16) {
        snprintf(why, why_len, "f16 runs on CUDA only; on the CPU use bf16 or f32");
        return false;
    }
    if (why_len) why[0] = 0;
    return true;
}

/* The CPU's lines of `fmlp info`: the CPU, its features, every path (why
 * not, where one cannot run) and the default thread count. */
static void cpu_print_info(FILE *f)
{
    const cpu_features *c = cpu_features_get();
    fprintf(f, "CPU: %s, %d logical cores\n", c->brand, c->cores);
    fprintf(f, "features: avx2=%s fma=%s avx512f=%s avx512bw=%s avx512vl=%s avx512dq=%s avx512_bf16=%s amx_tile=%s amx_bf16=%s amx_granted=%s\n",
            c->avx2 ? "yes" : "no", c->fma ? "yes" : "no", c->avx512f ? "yes" : "no", c->avx512bw ? "yes" : "no",
            c->avx512vl ? "yes" : "no", c->avx512dq ? "yes" : "no", c->avx512bf16 ? "yes" : "no",
            c->amx_tile ? "yes" : "no", c->amx_bf16 ? "yes" : "no", c->amx_granted ? "yes" : "no");
    fprintf(f, "CPU code paths (force one with --cpu-path or FMLP_CPU_PATH):\n");
    for (int i = 0; i < CPU_PATH_COUNT; i++) {
        cpu_path p = cpu_path_listed(i);
        const char *why;
        bool ok = cpu_path_available(p, &why);
        fprintf(f, "  %-11s %s%s%s\n", cpu_path_name(p), ok ? "available" : "unavailable: ", ok ? "" : why,
                p == cpu_path_best() ? " (default)" : "");
    }
    fprintf(f, "default threads: %d (one per core; --threads N)\n", c->cores);
}

const fmlp_backend fmlp_cpu_backend = {
    .name = "cpu",
    .device = FMLP_DEVICE_CPU,
    .init = cpu_init,
    .fini = cpu_fini,
    .supports = cpu_supports,
    .print_info = cpu_print_info,
    .pack = cpu_pack,
    .pack_glu = cpu_pack_glu,
    .unpack = cpu_unpack,
    .name_kernel = cpu_name_kernel,
    .run = cpu_run,
};

int fmlp_ctx_threads(const fmlp_ctx *ctx)
{
    if (!ctx || ctx->device != FMLP_DEVICE_CPU) return 0;
    return cpu_pool_threads(state(ctx)->pool);
}

const char *fmlp_ctx_cpu_path(const fmlp_ctx *ctx, fmlp_dtype dtype)
{
    if (!ctx || ctx->device != FMLP_DEVICE_CPU) return "none";
    return cpu_path_name(cpu_path_for_dtype(state(ctx)->path, dtype));
}

int fmlp_cpu_paths(fmlp_cpu_path_info *out, int cap)
{
    int n = 0;
    for (int i = 0; i < CPU_PATH_COUNT; i++) {
        if (out && n < cap) {
            const char *why;
            out[n].name = cpu_path_name(cpu_path_listed(i));
            out[n].available = cpu_path_available(cpu_path_listed(i), &why);
            out[n].why_not = why;
        }
        n++;
    }
    return n;
}
