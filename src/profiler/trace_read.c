/* Why: see trace_read.h. One pass over the file: the pull parser hands out
 * tokens, each event's fields are gathered as they come (in any key order;
 * the first of a repeated key wins) and the event is kept or dropped when
 * its object ends, so the reader holds the event set and one event's worth
 * of text, never the document. Kineto's categories have changed across
 * torch versions ("Operator"/"cpu_op", "Kernel"/"kernel", ...) and the
 * legacy form has no categories or numeric pids at all; this maps them all
 * onto the event kinds, and skips what the table never shows (python
 * frames, GPU user annotations that mirror CPU ranges, flows). */
#define _GNU_SOURCE
#include "profiler/trace_read.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/byte_source.h"
#include "core/error.h"
#include "core/json_pull.h"
#include "profiler/idmap.h"
#include "profiler/torch_work.h"
#include "profiler/trace_limits.h"
#include "profiler/tree.h"

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

/* A copy of a string the parser handed out, up to any NUL in it (names
 * are C strings from here on). */
typedef struct {
    char *s;
    size_t cap;
    bool set;
} text;

typedef enum { V_NONE, V_INT, V_NUM, V_STR } lane_kind;

typedef struct {
    lane_kind kind;
    int64_t i;
    double d;
    text str;
} lane_val;

enum { PH_NONE, PH_X, PH_I, PH_M, PH_OTHER };
enum { CAT_NONE = -2, CAT_SKIP = -1 };

/* One event's fields as far as they were read. */
typedef struct {
    unsigned seen, args_seen; /* keys met (the first one wins) */
    int ph, cat;
    text name;
    lane_val pid, tid;
    double ts, dur;
    int64_t ext, corr, addr, mem_bytes, total;
    double flops, bytes, regs, smem, device, device_id;
    bool have_device, have_device_id, fmlp_main;
    double grid[3], block[3];
    pe_torch_args torch;
} raw_event;

typedef struct {
    jp_parser *p;
    pe_set *s;
    const char *what;
    const pe_trace_limits *lim;
    uint64_t elements;
    pe_idmap lane_names; /* interned pid/tid string -> its number */
    int32_t n_lane_names;
    bool have_main;
    raw_event ev;
    fmlp_status st; /* a failure of the reader itself (limits, memory) */
} reader;

typedef struct {
    const char *s;
    size_t n;
} key;
#define KEY(text) {text, sizeof text - 1}

static const key k_event_keys[] = {KEY("ph"), KEY("cat"), KEY("name"), KEY("pid"),
                                   KEY("tid"), KEY("ts"),  KEY("dur"),  KEY("args")};
enum { K_PH, K_CAT, K_NAME, K_PID, K_TID, K_TS, K_DUR, K_ARGS, K_EVENT_KEYS };

static const key k_args_keys[] = {
    KEY("External id"), KEY("correlation"), KEY("flops"),     KEY("bytes"), KEY("device"), KEY("registers per thread"),
    KEY("shared memory"), KEY("grid"),      KEY("block"),     KEY("Input Dims"), KEY("Input type"), KEY("Device Id"),
    KEY("Addr"),        KEY("Bytes"),       KEY("Total Allocated"), KEY("name")};
enum { A_EXT, A_CORR, A_FLOPS, A_BYTES, A_DEVICE, A_REGS, A_SMEM, A_GRID, A_BLOCK, A_DIMS, A_TYPE,
       A_DEVICE_ID, A_ADDR, A_MBYTES, A_TOTAL, A_NAME, A_KEYS };

/* Index of the current key in `keys`, or -1. */
static int key_index(const jp_parser *p, const key *keys, int n)
{
    for (int i = 0; i < n; i++)
        if (p->len == keys[i].n && memcmp(p->str, keys[i].s, keys[i].n) == 0) return i;
    return -1;
}

enum { FIELDS_END = -1, FIELDS_ERROR = -2 };

/* The next member of the object being read whose key is one of `keys` and
 * not met before (*seen: a bit per key; the first one wins), its value next;
 * other members are skipped. FIELDS_END after the object's end,
 * FIELDS_ERROR on a parse error. */
static int next_field(jp_parser *p, const key *keys, int n, unsigned *seen)
{
    jp_token t;
    while ((t = jp_next(p)) == JP_KEY) {
        int k = key_index(p, keys, n);
        if (k >= 0 && !(*seen & (1u << k))) {
            *seen |= 1u << k;
            return k;
        }
        if (!jp_skip(p)) return FIELDS_ERROR;
    }
    return t == JP_OBJECT_END ? FIELDS_END : FIELDS_ERROR;
}

static bool text_set(reader *r, text *t, const char *s, size_t len)
{
    len = strnlen(s, len);
    if (len + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < len + 1) cap *= 2;
        char *ns = fmlp_realloc(t->s, cap);
        if (!ns) {
            r->st = fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory reading %s", r->what);
            return false;
        }
        t->s = ns;
        t->cap = cap;
    }
    memcpy(t->s, s, len);
    t->s[len] = 0;
    t->set = true;
    return true;
}

/* ------------------------------------------------------- reading fields */

/* The kind for a cat, or CAT_SKIP to drop the event. */
static int cat_kind(const char *cat, size_t len)
{
    static const struct {
        const char *cat;
        int kind;
    } map[] = {
        {"cpu_op", PE_CPU_OP},          {"operator", PE_CPU_OP},    {"user_annotation", PE_USER},
        {"kernel", PE_KERNEL},          {"cuda_runtime", PE_RUNTIME}, {"runtime", PE_RUNTIME},
        {"cuda_driver", PE_RUNTIME},    {"gpu_memcpy", PE_MEMCPY},  {"memcpy", PE_MEMCPY},
        {"gpu_memset", PE_MEMSET},      {"memset", PE_MEMSET},
    };
    len = strnlen(cat, len);
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strlen(map[i].cat) == len && strncasecmp(cat, map[i].cat, len) == 0) return map[i].kind;
    return CAT_SKIP;
}

static int ph_kind(const char *ph, size_t len)
{
    len = strnlen(ph, len);
    if (len != 1) return PH_OTHER;
    return ph[0] == 'X' ? PH_X : ph[0] == 'i' ? PH_I : ph[0] == 'M' ? PH_M : PH_OTHER;
}

/* A number member, as json_get_num reads it: `def` unless a number. */
static bool read_num(jp_parser *p, double *v, bool *have)
{
    jp_token t = jp_next(p);
    if (t == JP_NUMBER) {
        *v = p->num;
        if (have) *have = true;
    }
    return jp_leave(p, t);
}

/* An integer member, as json_get_int reads it: only an exact literal. */
static bool read_int(jp_parser *p, int64_t *v)
{
    jp_token t = jp_next(p);
    if (t == JP_NUMBER && p->is_int) *v = p->i64;
    return jp_leave(p, t);
}

/* grid/block: the first three children, numbers or 0. */
static bool read_triple(jp_parser *p, double v[3])
{
    jp_token t = jp_next(p);
    if (t != JP_ARRAY && t != JP_OBJECT) return jp_leave(p, t);
    for (int k = 0;; k++) {
        jp_token c = jp_next(p);
        if (c == JP_KEY) c = jp_next(p);
        if (c == JP_ARRAY_END || c == JP_OBJECT_END) return true;
        if (c == JP_NUMBER && k < 3) v[k] = p->num;
        if (!jp_leave(p, c)) return false;
    }
}

static bool read_lane(reader *r, lane_val *v)
{
    jp_token t = jp_next(r->p);
    if (t == JP_NUMBER) {
        v->kind = r->p->is_int ? V_INT : V_NUM;
        v->i = r->p->i64;
        v->d = r->p->num;
    } else if (t == JP_STRING) {
        v->kind = V_STR;
        if (!text_set(r, &v->str, r->p->str, r->p->len)) return false;
    }
    return jp_leave(r->p, t);
}

static bool read_args(reader *r)
{
    jp_parser *p = r->p;
    raw_event *e = &r->ev;
    jp_token t = jp_next(p);
    if (t != JP_OBJECT) return jp_leave(p, t);
    int k;
    while ((k = next_field(p, k_args_keys, A_KEYS, &e->args_seen)) >= 0) {
        bool ok = true;
        switch (k) {
        case A_EXT: ok = read_int(p, &e->ext); break;
        case A_CORR: ok = read_int(p, &e->corr); break;
        case A_ADDR: ok = read_int(p, &e->addr); break;
        case A_MBYTES: ok = read_int(p, &e->mem_bytes); break;
        case A_TOTAL: ok = read_int(p, &e->total); break;
        case A_FLOPS: ok = read_num(p, &e->flops, NULL); break;
        case A_BYTES: ok = read_num(p, &e->bytes, NULL); break;
        case A_REGS: ok = read_num(p, &e->regs, NULL); break;
        case A_SMEM: ok = read_num(p, &e->smem, NULL); break;
        case A_DEVICE: ok = read_num(p, &e->device, &e->have_device); break;
        case A_DEVICE_ID: ok = read_num(p, &e->device_id, &e->have_device_id); break;
        case A_GRID: ok = read_triple(p, e->grid); break;
        case A_BLOCK: ok = read_triple(p, e->block); break;
        case A_DIMS: ok = pe_torch_read_dims(p, jp_next(p), &e->torch); break;
        case A_TYPE: ok = pe_torch_read_type(p, jp_next(p), &e->torch); break;
        case A_NAME: {
            jp_token v = jp_next(p);
            if (v == JP_STRING) e->fmlp_main = memmem(p->str, strnlen(p->str, p->len), "fmlp main", 9) != NULL;
            ok = jp_leave(p, v);
            break;
        }
        }
        if (!ok) return false;
    }
    return k == FIELDS_END;
}

/* --------------------------------------------------------- making events */

/* A string pid/tid gets a number of its own, in order of first use. */
static int64_t lane_number(reader *r, const lane_val *v)
{
    switch (v->kind) {
    case V_INT: return v->i;
    case V_NUM: return clamp_i64(v->d, -1e15, 1e15);
    case V_NONE: return 0;
    case V_STR: break;
    }
    const char *key = pe_intern(r->s, v->str.s);
    if (!key) return 0;
    int32_t id = pe_idmap_get(&r->lane_names, (int64_t)(uintptr_t)key);
    if (id < 0) {
        id = r->n_lane_names;
        if (pe_idmap_put(&r->lane_names, (int64_t)(uintptr_t)key, id))
            r->n_lane_names++;
        else
            r->s->oom = true;
    }
    return STRING_ID_BASE + id;
}

/* A trace spans well under 10^15 us (31 years); beyond is damage. */
static int64_t us_to_ns(double us)
{
    return clamp_i64(round(us * 1000.0), -1e18, 1e18);
}

static int device_of(double v) { return pe_device_of(clamp_i64(v, -1, PE_MAX_DEVICE)); }

static void make_span(reader *r, int kind)
{
    const raw_event *v = &r->ev;
    int64_t pid = lane_number(r, &v->pid), tid = lane_number(r, &v->tid);
    pe_event *e = pe_add(r->s, (pe_kind)kind, v->name.s, pid, tid);
    if (!e) return;
    e->t0 = us_to_ns(v->ts);
    /* No span lasts 11 days: longer is damage, and sums of durations must
     * stay far from int64's end. */
    e->t1 = e->t0 + clamp_i64(round(v->dur * 1000.0), -1e15, 1e15);
    e->ext_id = v->ext;
    e->corr = v->corr;
    bool dev_kind = kind == PE_KERNEL || kind == PE_MEMCPY || kind == PE_MEMSET;
    e->device = dev_kind ? device_of(v->have_device ? v->device : (double)pid) : -1;
    pe_more m = pe_more_none();
    m.flops = clamp_i64(v->flops, 0, 1e18);
    m.bytes = clamp_i64(v->bytes, 0, 1e18);
    m.regs = (int32_t)clamp_i64(v->regs, 0, 1e9);
    m.smem = (int32_t)clamp_i64(v->smem, 0, 1e9);
    if (kind == PE_CPU_OP && !m.flops) pe_torch_work(e->name, &v->torch, &m.flops, &m.bytes);
    for (int i = 0; i < 3; i++) {
        m.grid[i] = (int32_t)clamp_i64(v->grid[i], 0, 1e9);
        m.block[i] = (int32_t)clamp_i64(v->block[i], 0, 1e9);
    }
    pe_set_more(r->s, e, &m);
}

static void make_memory(reader *r)
{
    const raw_event *v = &r->ev;
    int64_t pid = lane_number(r, &v->pid), tid = lane_number(r, &v->tid);
    pe_event *e = pe_add(r->s, PE_MEMORY, "[memory]", pid, tid);
    if (!e) return;
    e->t0 = e->t1 = us_to_ns(v->ts);
    e->device = device_of(v->have_device_id ? v->device_id : -1);
    pe_more m = pe_more_none();
    m.mem_addr = v->addr;
    m.mem_bytes = v->mem_bytes;
    m.mem_total = v->total;
    pe_set_more(r->s, e, &m);
}

/* Keeps the event just read, if it is one the table shows. */
static void finish_event(reader *r)
{
    const raw_event *v = &r->ev;
    if (v->ph == PH_NONE || !v->name.set) return;
    const char *name = v->name.s;
    if (v->ph == PH_X) {
        int kind = strncmp(name, "ProfilerStep#", 13) == 0 ? PE_STEP : v->cat == CAT_NONE ? PE_CPU_OP : v->cat;
        if (kind >= 0) make_span(r, kind);
    } else if (v->ph == PH_I && strcmp(name, "[memory]") == 0) {
        make_memory(r);
    } else if (v->ph == PH_M && strcmp(name, "thread_name") == 0 && v->fmlp_main) {
        r->s->main_tid = lane_number(r, &v->tid);
        r->have_main = true;
    }
}

static void reset_event(raw_event *e)
{
    text name = e->name, pid = e->pid.str, tid = e->tid.str;
    memset(e, 0, sizeof *e);
    e->name = (text){name.s, name.cap, false};
    e->pid.str = (text){pid.s, pid.cap, false};
    e->tid.str = (text){tid.s, tid.cap, false};
    e->cat = CAT_NONE;
}

/* One element of the events array, its first token t. */
static bool read_event(reader *r, jp_token t)
{
    jp_parser *p = r->p;
    if (t != JP_OBJECT) return jp_leave(p, t);
    raw_event *e = &r->ev;
    reset_event(e);
    int k;
    while ((k = next_field(p, k_event_keys, K_EVENT_KEYS, &e->seen)) >= 0) {
        bool ok = true;
        jp_token v;
        switch (k) {
        case K_PH:
        case K_CAT:
        case K_NAME:
            v = jp_next(p);
            if (v == JP_STRING) {
                if (k == K_PH) e->ph = ph_kind(p->str, p->len);
                if (k == K_CAT) e->cat = cat_kind(p->str, p->len);
                if (k == K_NAME) ok = text_set(r, &e->name, p->str, p->len);
            }
            ok = ok && jp_leave(p, v);
            break;
        case K_PID: ok = read_lane(r, &e->pid); break;
        case K_TID: ok = read_lane(r, &e->tid); break;
        case K_TS: ok = read_num(p, &e->ts, NULL); break;
        case K_DUR: ok = read_num(p, &e->dur, NULL); break;
        case K_ARGS: ok = read_args(r); break;
        }
        if (!ok) return false;
    }
    if (k != FIELDS_END) return false;
    finish_event(r);
    return true;
}

/* The reader's own bounds: events, distinct strings, memory held. */
static bool within_limits(reader *r)
{
    char problem[96];
    if (r->s->lanes.n >= PE_MAX_LANES)
        r->st = fmlp_fail(FMLP_ERR_UNSUPPORTED, "%s: more than %zu lanes (distinct pid, tid pairs), more than fmlp keeps apart",
                          r->what, PE_MAX_LANES - 1);
    if (r->st != FMLP_OK) return false;
    if (r->s->oom) {
        r->st = fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory reading %s", r->what);
        return false;
    }
    if (r->elements > r->lim->v[PE_LIMIT_EVENTS]) {
        snprintf(problem, sizeof problem, "more than %llu events", (unsigned long long)r->lim->v[PE_LIMIT_EVENTS]);
        r->st = pe_limit_fail(r->lim, PE_LIMIT_EVENTS, r->what, problem);
        return false;
    }
    if (r->s->strings.bytes > r->lim->v[PE_LIMIT_NAMES]) {
        snprintf(problem, sizeof problem, "more than %llu bytes of distinct names",
                 (unsigned long long)r->lim->v[PE_LIMIT_NAMES]);
        r->st = pe_limit_fail(r->lim, PE_LIMIT_NAMES, r->what, problem);
        return false;
    }
    if (pe_set_bytes(r->s) > r->lim->v[PE_LIMIT_MEMORY]) {
        snprintf(problem, sizeof problem, "its events take more than %llu bytes",
                 (unsigned long long)r->lim->v[PE_LIMIT_MEMORY]);
        r->st = pe_limit_fail(r->lim, PE_LIMIT_MEMORY, r->what, problem);
        return false;
    }
    return true;
}

/* After the events array's JP_ARRAY. */
static bool read_events(reader *r)
{
    for (;;) {
        jp_token t = jp_next(r->p);
        if (t == JP_ARRAY_END) return true;
        if (t == JP_ERROR) return false;
        r->elements++;
        if (!read_event(r, t)) return false;
        if (((r->elements & 1023) == 0 || r->s->oom) && !within_limits(r)) return false;
    }
}

/* fmlpAnalysis: the ceilings the run was judged against travel with it. */
static bool read_analysis(reader *r)
{
    jp_parser *p = r->p;
    jp_token t = jp_next(p);
    if (t != JP_OBJECT) return jp_leave(p, t);
    static const key outer[] = {KEY("ceilings")};
    static const key keys[] = {KEY("gemm_gflops_f32"),      KEY("gemm_gflops_bf16"), KEY("mem_gbps"),
                               KEY("gpu_gemm_tflops_bf16"), KEY("gpu_mem_gbps"),     KEY("gpu_launch_us"),
                               KEY("gpu_source")};
    pe_ceilings *cl = &r->s->ceil;
    double *dst[] = {&cl->gemm_gflops_f32, &cl->gemm_gflops_bf16, &cl->mem_gbps,
                     &cl->gpu_gemm_tflops_bf16, &cl->gpu_mem_gbps, &cl->gpu_launch_us};
    unsigned seen = 0, got = 0;
    int o, k = FIELDS_END;
    while ((o = next_field(p, outer, 1, &seen)) >= 0) {
        t = jp_next(p);
        if (t != JP_OBJECT) {
            if (!jp_leave(p, t)) return false;
            continue;
        }
        cl->have = true;
        while ((k = next_field(p, keys, 7, &got)) >= 0) {
            bool ok;
            if (k == 6) {
                jp_token v = jp_next(p);
                if (v == JP_STRING) cl->gpu_from_device = jp_str_is(p, "from device properties");
                ok = jp_leave(p, v);
            } else {
                ok = read_num(p, dst[k], NULL);
            }
            if (!ok) return false;
        }
        if (k != FIELDS_END) return false;
    }
    return o == FIELDS_END;
}

/* distributedInfo: {"backend", "rank", "world_size"}; a rank outside the
 * world (or a world below 1) reads as none given. */
static bool read_distributed(reader *r)
{
    jp_parser *p = r->p;
    jp_token t = jp_next(p);
    if (t != JP_OBJECT) return jp_leave(p, t);
    int64_t rank = -1, world = 0;
    pe_set *s = r->s;
    while ((t = jp_next(p)) == JP_KEY) {
        bool ok;
        if (jp_str_is(p, "rank")) {
            ok = read_int(p, &rank);
        } else if (jp_str_is(p, "world_size")) {
            ok = read_int(p, &world);
        } else if (jp_str_is(p, "backend")) {
            jp_token v = jp_next(p);
            if (v == JP_STRING) {
                s->dist_backend = pe_intern_n(s, p->str, p->len < 64 ? p->len : 64);
                if (!s->dist_backend) s->oom = true;
            }
            ok = jp_leave(p, v);
        } else {
            ok = jp_skip(p);
        }
        if (!ok) return false;
    }
    if (world >= 1 && world <= INT32_MAX && rank >= 0 && rank < world) {
        s->dist_rank = (int)rank;
        s->dist_world = (int)world;
    }
    return t == JP_OBJECT_END;
}

/* The document: Kineto's object (traceEvents and friends) or the legacy
 * array of events. Sets *have_events when an events array was found. */
static bool read_document(reader *r, bool *have_events, bool *ours)
{
    jp_parser *p = r->p;
    jp_token t = jp_next(p);
    if (t == JP_ARRAY) {
        *have_events = true;
        return read_events(r);
    }
    if (t != JP_OBJECT) return jp_leave(p, t);
    bool seen_events = false, seen_analysis = false, seen_base = false;
    while ((t = jp_next(p)) == JP_KEY) {
        bool ok;
        if (!seen_events && jp_str_is(p, "traceEvents")) {
            seen_events = true;
            jp_token v = jp_next(p);
            *have_events = v == JP_ARRAY;
            ok = *have_events ? read_events(r) : jp_leave(p, v);
        } else if (!seen_analysis && jp_str_is(p, "fmlpAnalysis")) {
            seen_analysis = *ours = true;
            ok = read_analysis(r);
        } else if (!seen_base && jp_str_is(p, "baseTimeNanoseconds")) {
            seen_base = true;
            ok = read_int(p, &r->s->base_ns);
        } else if (jp_str_is(p, "distributedInfo")) {
            ok = read_distributed(r);
        } else {
            ok = jp_skip(p);
        }
        if (!ok) return false;
    }
    return t == JP_OBJECT_END;
}

/* The status for a parse that stopped: the reader's own, or the parser's
 * (its reading side's when that failed). */
static fmlp_status parse_failure(const reader *r, const byte_source *src)
{
    if (r->st != FMLP_OK) return r->st;
    const jp_parser *p = r->p;
    char problem[320];
    switch (p->err) {
    case JP_ERR_STRING_LIMIT:
    case JP_ERR_DEPTH_LIMIT:
        snprintf(problem, sizeof problem, "%s at line %llu, column %llu", p->msg, (unsigned long long)p->err_line,
                 (unsigned long long)p->err_col);
        return pe_limit_fail(r->lim, p->err == JP_ERR_STRING_LIMIT ? PE_LIMIT_STRING : PE_LIMIT_DEPTH, r->what, problem);
    case JP_ERR_OOM: return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory reading %s", r->what);
    case JP_ERR_READ:
        switch (src ? bs_error_of(src) : BS_ERR_READ) {
        case BS_ERR_LIMIT: return pe_limit_fail(r->lim, PE_LIMIT_BYTES, r->what, p->msg);
        case BS_ERR_GZIP: return fmlp_fail(FMLP_ERR_FORMAT, "%s: %s", r->what, p->msg);
        case BS_ERR_OOM: return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory reading %s", r->what);
        default: return fmlp_fail(FMLP_ERR_IO, "cannot read %s: %s", r->what, p->msg);
        }
    default:
        return fmlp_fail(FMLP_ERR_FORMAT, "%s is not valid JSON: %s at line %llu, column %llu", r->what, p->msg,
                         (unsigned long long)p->err_line, (unsigned long long)p->err_col);
    }
}

/* What is known once every event is in: the process, the stepping thread,
 * the kernels' FLOPs. */
static fmlp_status finish_set(reader *r, bool ours)
{
    pe_set *s = r->s;
    s->origin = pe_intern(s, ours ? "fmlp" : "torch.profiler");
    if (!s->origin || !pe_give_work_to_kernels(s)) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory reading %s", r->what);
    bool have_main = r->have_main;
    for (size_t i = 0; i < s->n; i++) {
        const pe_event *e = &s->ev[i];
        if (e->device >= 0) continue;
        if (!s->pid) s->pid = pe_lane_of(s, e)->pid;
        if (!have_main && (e->kind == PE_STEP || e->kind == PE_CPU_OP)) {
            s->main_tid = pe_lane_of(s, e)->tid;
            have_main = e->kind == PE_STEP;
        }
    }
    return FMLP_OK;
}

static fmlp_status read_with(jp_parser *p, const byte_source *src, const char *what, const pe_trace_limits *lim,
                             pe_set *s)
{
    reader r = {.p = p, .s = s, .what = what, .lim = lim, .st = FMLP_OK};
    reset_event(&r.ev);
    bool have_events = false, ours = false;
    fmlp_status st = FMLP_OK;
    if (!pe_idmap_init(&r.lane_names, 0, 0, 0)) {
        st = fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory reading %s", what);
    } else if (!read_document(&r, &have_events, &ours) || jp_next(p) != JP_END || !within_limits(&r)) {
        st = parse_failure(&r, src);
    } else if (!have_events) {
        st = fmlp_fail(FMLP_ERR_FORMAT,
                       "%s has no \"traceEvents\" array; give a trace written by fmlp or torch.profiler "
                       "(export_chrome_trace)",
                       what);
    } else {
        st = finish_set(&r, ours);
    }
    pe_idmap_free(&r.lane_names);
    free(r.ev.name.s);
    free(r.ev.pid.str.s);
    free(r.ev.tid.str.s);
    return st;
}

static fmlp_status limits_for(const char *what, pe_trace_limits *lim)
{
    fmlp_status st = pe_trace_limits_get(lim);
    if (st == FMLP_OK) return FMLP_OK;
    char why[512];
    snprintf(why, sizeof why, "%s", fmlp_last_error());
    return fmlp_fail(st, "cannot read %s: %s", what, why);
}

fmlp_status pe_parse_trace(const char *text, size_t len, const char *what, pe_set *s)
{
    pe_set_init(s);
    pe_trace_limits lim;
    fmlp_status st = limits_for(what, &lim);
    if (st != FMLP_OK) return st;
    if (len > lim.v[PE_LIMIT_BYTES]) {
        char problem[64];
        snprintf(problem, sizeof problem, "%zu bytes of JSON", len);
        return pe_limit_fail(&lim, PE_LIMIT_BYTES, what, problem);
    }
    jp_parser p;
    jp_init_mem(&p, text, len, (size_t)lim.v[PE_LIMIT_STRING], (int)lim.v[PE_LIMIT_DEPTH]);
    st = read_with(&p, NULL, what, &lim, s);
    jp_free(&p);
    return st;
}

fmlp_status pe_read_trace(const char *path, pe_set *s)
{
    pe_set_init(s);
    pe_trace_limits lim;
    fmlp_status st = limits_for(path, &lim);
    if (st != FMLP_OK) return st;
    bs_error err;
    char why[200];
    byte_source *src = bs_open(path, lim.v[PE_LIMIT_BYTES], &err, why, sizeof why);
    if (!src) {
        switch (err) {
        case BS_ERR_LIMIT: return pe_limit_fail(&lim, PE_LIMIT_BYTES, path, why);
        case BS_ERR_GZIP: return fmlp_fail(FMLP_ERR_UNSUPPORTED, "%s %s", path, why);
        case BS_ERR_OOM: return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory opening %s", path);
        default:
            return fmlp_fail(FMLP_ERR_IO, "cannot open \"%s\": %s; check the path (a .json or .json.gz trace)", path, why);
        }
    }
    jp_parser p;
    if (!jp_init_reader(&p, bs_read, src, (size_t)lim.v[PE_LIMIT_STRING], (int)lim.v[PE_LIMIT_DEPTH])) {
        reader r = {.p = &p, .what = path, .lim = &lim, .st = FMLP_OK};
        st = parse_failure(&r, src);
    } else {
        st = read_with(&p, src, path, &lim, s);
    }
    jp_free(&p);
    bs_close(src);
    return st;
}
