/* Why: see trace_read.h. Kineto's categories have changed across torch
 * versions ("Operator"/"cpu_op", "Kernel"/"kernel", ...) and the legacy form
 * has no categories or numeric pids at all; this maps them all onto the
 * event kinds, and skips what the table never shows (python frames, GPU
 * user annotations that mirror CPU ranges). */
#include "profiler/trace_read.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "profiler/torch_work.h"
#include "profiler/tree.h"

#ifdef FMLP_HAVE_ZLIB
#include <zlib.h>
#endif

/* Numbers from files are clamped before they become integers: a damaged
 * trace must not overflow int64 arithmetic downstream. */
static int64_t clamp_i64(double v, double lo, double hi)
{
    if (!(v >= lo)) return (int64_t)lo; /* NaN too */
    if (v > hi) return (int64_t)hi;
    return (int64_t)v;
}

/* Ids for string pids/tids ("CPU functions" in legacy traces). */
#define STRING_ID_BASE 1000000000LL

static bool read_all(const char *path, char **out, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = fmlp_malloc(cap);
    if (!buf) return false;
#ifdef FMLP_HAVE_ZLIB
    gzFile g = gzopen(path, "rb");
    if (!g) {
        free(buf);
        return false;
    }
    for (;;) {
        if (n == cap) {
            char *nb = fmlp_realloc(buf, cap *= 2);
            if (!nb) break;
            buf = nb;
        }
        int got = gzread(g, buf + n, (unsigned)(cap - n > (1u << 30) ? (1u << 30) : cap - n));
        if (got <= 0) break;
        n += (size_t)got;
    }
    int err = 0;
    gzerror(g, &err);
    gzclose(g);
    if (err != Z_OK && err != Z_STREAM_END) {
        free(buf);
        return false;
    }
#else
    FILE *f = fopen(path, "rb");
    if (!f) {
        free(buf);
        return false;
    }
    for (;;) {
        if (n == cap) {
            char *nb = fmlp_realloc(buf, cap *= 2);
            if (!nb) break;
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        if (!got) break;
        n += got;
    }
    fclose(f);
#endif
    *out = buf;
    *len = n;
    return true;
}

static int64_t lane_id(const json_value *v, const char **names, int *n_names)
{
    int64_t i;
    if (json_int(v, &i)) return i;
    if (v && v->type == JSON_NUMBER) return clamp_i64(json_num(v, 0), -1e15, 1e15);
    const char *s = json_str(v);
    if (!s) return 0;
    for (int k = 0; k < *n_names; k++)
        if (strcmp(names[k], s) == 0) return STRING_ID_BASE + k;
    if (*n_names < 64) names[(*n_names)++] = s;
    return STRING_ID_BASE + *n_names - 1;
}

/* The kind for a cat, or -1 to skip the event. */
static int kind_of(const char *cat, const char *name)
{
    if (strncmp(name, "ProfilerStep#", 13) == 0) return PE_STEP;
    if (!cat) return PE_CPU_OP;
    static const struct {
        const char *cat;
        int kind;
    } map[] = {
        {"cpu_op", PE_CPU_OP},          {"operator", PE_CPU_OP},    {"user_annotation", PE_USER},
        {"kernel", PE_KERNEL},          {"cuda_runtime", PE_RUNTIME}, {"runtime", PE_RUNTIME},
        {"cuda_driver", PE_RUNTIME},    {"gpu_memcpy", PE_MEMCPY},  {"memcpy", PE_MEMCPY},
        {"gpu_memset", PE_MEMSET},      {"memset", PE_MEMSET},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcasecmp(cat, map[i].cat) == 0) return map[i].kind;
    return -1;
}

/* A trace spans well under 10^15 us (31 years); beyond is damage. */
static int64_t us_to_ns(double us)
{
    return clamp_i64(round(us * 1000.0), -1e18, 1e18);
}

static void read_span(pe_set *s, const json_value *e, const char *name, int kind, const char **names, int *nn)
{
    const json_value *args = json_get(e, "args");
    pe_event *p = pe_add(s, (pe_kind)kind, name);
    if (!p) return;
    p->pid = lane_id(json_get(e, "pid"), names, nn);
    p->tid = lane_id(json_get(e, "tid"), names, nn);
    p->t0 = us_to_ns(json_get_num(e, "ts", 0));
    /* No span lasts 11 days: longer is damage, and sums of durations must
     * stay far from int64's end. */
    p->t1 = p->t0 + clamp_i64(round(json_get_num(e, "dur", 0) * 1000.0), -1e15, 1e15);
    p->ext_id = json_get_int(args, "External id", 0);
    p->corr = json_get_int(args, "correlation", 0);
    p->flops = clamp_i64(json_get_num(args, "flops", 0), 0, 1e18);
    p->bytes = clamp_i64(json_get_num(args, "bytes", 0), 0, 1e18);
    bool dev_kind = kind == PE_KERNEL || kind == PE_MEMCPY || kind == PE_MEMSET;
    p->device = dev_kind ? (int)clamp_i64(json_get_num(args, "device", (double)p->pid), -1, 1e6) : -1;
    p->regs = (int)clamp_i64(json_get_num(args, "registers per thread", 0), 0, 1e9);
    p->smem = (int)clamp_i64(json_get_num(args, "shared memory", 0), 0, 1e9);
    if (kind == PE_CPU_OP && !p->flops) pe_torch_work(p, args);
    const json_value *grid = json_get(args, "grid"), *block = json_get(args, "block");
    for (size_t i = 0; i < 3; i++) {
        p->grid[i] = (int)clamp_i64(json_num(json_at(grid, i), 0), 0, 1e9);
        p->block[i] = (int)clamp_i64(json_num(json_at(block, i), 0), 0, 1e9);
    }
}

static void read_memory(pe_set *s, const json_value *e, const char **names, int *nn)
{
    const json_value *args = json_get(e, "args");
    pe_event *p = pe_add(s, PE_MEMORY, "[memory]");
    if (!p) return;
    p->pid = lane_id(json_get(e, "pid"), names, nn);
    p->tid = lane_id(json_get(e, "tid"), names, nn);
    p->t0 = p->t1 = us_to_ns(json_get_num(e, "ts", 0));
    p->device = (int)clamp_i64(json_get_num(args, "Device Id", -1), -1, 1e6);
    p->mem_addr = json_get_int(args, "Addr", 0);
    p->mem_bytes = json_get_int(args, "Bytes", 0);
    p->mem_total = json_get_int(args, "Total Allocated", 0);
}

fmlp_status pe_parse_trace(const char *text, size_t len, const char *what, pe_set *s)
{
    pe_set_init(s);
    json_error err;
    json_doc *d = json_parse(text, len, &err);
    if (!d)
        return fmlp_fail(err.oom ? FMLP_ERR_OUT_OF_MEMORY : FMLP_ERR_FORMAT, "%s is not valid JSON: %s at line %d, column %d",
                         what, err.msg, err.line, err.col);
    const json_value *root = json_doc_root(d);
    const json_value *evs = root->type == JSON_ARRAY ? root : json_get(root, "traceEvents");
    if (!evs || evs->type != JSON_ARRAY) {
        json_free(d);
        return fmlp_fail(FMLP_ERR_FORMAT,
                         "%s has no \"traceEvents\" array; give a trace written by fmlp or torch.profiler "
                         "(export_chrome_trace)",
                         what);
    }
    const json_value *analysis = json_get(root, "fmlpAnalysis"), *ceil = json_get(analysis, "ceilings");
    bool ours = analysis != NULL;
    /* The ceilings the run was judged against travel with its trace. */
    if (ceil && ceil->type == JSON_OBJECT) {
        s->ceil.have = true;
        s->ceil.gemm_gflops_f32 = json_get_num(ceil, "gemm_gflops_f32", 0);
        s->ceil.gemm_gflops_bf16 = json_get_num(ceil, "gemm_gflops_bf16", 0);
        s->ceil.mem_gbps = json_get_num(ceil, "mem_gbps", 0);
        s->ceil.gpu_gemm_tflops_bf16 = json_get_num(ceil, "gpu_gemm_tflops_bf16", 0);
        s->ceil.gpu_mem_gbps = json_get_num(ceil, "gpu_mem_gbps", 0);
        s->ceil.gpu_launch_us = json_get_num(ceil, "gpu_launch_us", 0);
        const char *gpu_source = json_get_str(ceil, "gpu_source");
        s->ceil.gpu_from_device = gpu_source && strcmp(gpu_source, "from device properties") == 0;
    }
    s->origin = pe_intern(s, ours ? "fmlp" : "torch.profiler");
    s->base_ns = json_get_int(root, "baseTimeNanoseconds", 0);
    const char *names[64];
    int nn = 0;
    bool have_main = false;
    for (size_t i = 0; i < evs->len; i++) {
        const json_value *e = &evs->u.items[i];
        const char *ph = json_get_str(e, "ph"), *name = json_get_str(e, "name");
        if (!ph || !name) continue;
        if (strcmp(ph, "X") == 0) {
            int kind = kind_of(json_get_str(e, "cat"), name);
            if (kind >= 0) read_span(s, e, name, kind, names, &nn);
        } else if (strcmp(ph, "i") == 0 && strcmp(name, "[memory]") == 0) {
            read_memory(s, e, names, &nn);
        } else if (strcmp(ph, "M") == 0 && strcmp(name, "thread_name") == 0) {
            const char *tn = json_get_str(json_get(e, "args"), "name");
            if (tn && strstr(tn, "fmlp main")) {
                s->main_tid = lane_id(json_get(e, "tid"), names, &nn);
                have_main = true;
            }
        }
    }
    json_free(d);
    if (s->oom) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory reading %s", what);
    if (!pe_give_work_to_kernels(s)) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory reading %s", what);
    for (size_t i = 0; i < s->n; i++) {
        const pe_event *e = &s->ev[i];
        if (e->device >= 0) continue;
        if (!s->pid) s->pid = e->pid;
        if (!have_main && (e->kind == PE_STEP || e->kind == PE_CPU_OP)) {
            s->main_tid = e->tid;
            have_main = e->kind == PE_STEP;
        }
    }
    return FMLP_OK;
}

fmlp_status pe_read_trace(const char *path, pe_set *s)
{
    pe_set_init(s);
    char *buf;
    size_t len;
    if (!read_all(path, &buf, &len))
        return fmlp_fail(FMLP_ERR_IO, "cannot read \"%s\"; check the path (a .json or .json.gz trace)", path);
    fmlp_status st = pe_parse_trace(buf, len, path, s);
    free(buf);
    return st;
}
