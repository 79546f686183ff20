/* Why: two tests (synthetic events, real forwards) must hold every trace
 * to the same rules: the Trace Event Format, Kineto's conventions and the
 * fields Holistic Trace Analysis joins on. The rules live here once; each
 * reports through tu_check so a failure names the rule and the event. */
#ifndef FMLP_TEST_TRACE_CHECK_H
#define FMLP_TEST_TRACE_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "test_util.h"

typedef struct {
    int64_t pid, tid;
    double ts, end;
    const char *name;
} tc_span;

/* Kernel activities whose start lies in [a, b), counted as torch users
 * count them: every GPU kernel event once, and every CPU parallel region
 * once (its lanes share one correlation); memcpy and memset are not
 * kernels. The same rule reads torch.profiler's traces and fmlp's, old
 * (shared correlations) and new. */
static inline int tc_kernels_in(const json_value *evs, double a, double b)
{
    int64_t seen[1024];
    int n_cpu = 0, n_gpu = 0;
    for (size_t i = 0; i < json_len(evs); i++) {
        const json_value *e = json_at(evs, i);
        const char *cat = json_get_str(e, "cat");
        double ts = json_get_num(e, "ts", -1);
        if (!cat || strcmp(cat, "kernel") != 0 || ts < a || ts >= b) continue;
        const json_value *args = json_get(e, "args");
        if (json_get_int(args, "device", -1) >= 0) {
            n_gpu++;
            continue;
        }
        int64_t c = json_get_int(args, "correlation", 0);
        bool dup = false;
        for (int k = 0; k < n_cpu && !dup; k++) dup = seen[k] == c;
        if (!dup && n_cpu < 1024) seen[n_cpu++] = c;
    }
    return n_gpu + n_cpu;
}

/* Checks that every ProfilerStep span holds `want` kernel activities
 * (tc_kernels_in); returns how many steps it saw. */
static inline int tc_check_step_kernels(const json_value *evs, const char *label, int want)
{
    int steps = 0;
    for (size_t i = 0; i < json_len(evs); i++) {
        const json_value *e = json_at(evs, i);
        const char *name = json_get_str(e, "name"), *ph = json_get_str(e, "ph");
        if (!name || !ph || strcmp(ph, "X") != 0 || strncmp(name, "ProfilerStep#", 13) != 0) continue;
        steps++;
        const double a = json_get_num(e, "ts", 0), b = a + json_get_num(e, "dur", 0);
        const int got = tc_kernels_in(evs, a, b);
        tu_check(got == want, "%s %s: %d kernels (GPU kernel events, CPU regions by correlation), want %d", label, name,
                 got, want);
    }
    return steps;
}

static inline bool tc_is(const json_value *e, const char *ph, const char *cat)
{
    const char *p = json_get_str(e, "ph"), *c = json_get_str(e, "cat");
    return p && strcmp(p, ph) == 0 && (!cat || (c && strcmp(c, cat) == 0));
}

/* A flow end ("f", bp "e") on the activity's lane at its start, whose id
 * starts ("s") on the call's lane at the call's start. */
static inline bool tc_flow_joins(const json_value *evs, const json_value *call, const json_value *act)
{
    for (size_t i = 0; i < json_len(evs); i++) {
        const json_value *f = json_at(evs, i);
        if (!tc_is(f, "f", "ac2g") || json_get_int(f, "pid", -1) != json_get_int(act, "pid", -2) ||
            json_get_int(f, "tid", -1) != json_get_int(act, "tid", -2) ||
            json_get_num(f, "ts", -1) != json_get_num(act, "ts", -2))
            continue;
        int64_t id = json_get_int(f, "id", -1);
        for (size_t k = 0; k < json_len(evs); k++) {
            const json_value *st = json_at(evs, k);
            if (tc_is(st, "s", "ac2g") && json_get_int(st, "id", -2) == id &&
                json_get_int(st, "tid", -1) == json_get_int(call, "tid", -2) &&
                json_get_num(st, "ts", -1) == json_get_num(call, "ts", -2))
                return true;
        }
    }
    return false;
}

/* What breaks Kineto's joins, counted over a trace's GPU activities. */
typedef struct {
    int acts;    /* GPU activities seen */
    int no_call; /* without exactly one runtime call of their correlation */
    int shared;  /* sharing it with another activity outside a graph launch */
    int bad_ext; /* External id missing, or not the call's */
    int no_op;   /* External id naming no cpu_op */
    int no_flow; /* no ac2g flow from the call */
} tc_joins;

/* Kineto's joins, the ones HTA makes: every GPU activity (kernel, memcpy or
 * memset on a device) shares its correlation with exactly one runtime call,
 * and with no other activity unless that call is a graph launch; activity
 * and call carry the same External id, which is a cpu_op's; an ac2g flow
 * runs from the call to the activity. */
static inline tc_joins tc_count_joins(const json_value *evs)
{
    tc_joins j = {0};
    for (size_t i = 0; i < json_len(evs); i++) {
        const json_value *a = json_at(evs, i);
        const char *cat = json_get_str(a, "cat");
        const json_value *args = json_get(a, "args");
        if (!tc_is(a, "X", NULL) || !cat || json_get_int(args, "device", -1) < 0 ||
            (strcmp(cat, "kernel") != 0 && strcmp(cat, "gpu_memcpy") != 0 && strcmp(cat, "gpu_memset") != 0))
            continue;
        j.acts++;
        const int64_t corr = json_get_int(args, "correlation", -1), ext = json_get_int(args, "External id", -1);
        const json_value *call = NULL, *op = NULL;
        int calls = 0, others = 0;
        for (size_t k = 0; k < json_len(evs); k++) {
            const json_value *e = json_at(evs, k);
            const json_value *ea = json_get(e, "args");
            const char *ec = json_get_str(e, "cat");
            if (!tc_is(e, "X", NULL) || !ec) continue;
            if ((strcmp(ec, "cuda_runtime") == 0 || strcmp(ec, "cuda_driver") == 0) &&
                json_get_int(ea, "correlation", -2) == corr) {
                calls++;
                call = e;
            } else if (e != a && json_get_int(ea, "device", -1) >= 0 && json_get_int(ea, "correlation", -2) == corr) {
                others++;
            } else if (strcmp(ec, "cpu_op") == 0 && json_get_int(ea, "External id", -2) == ext) {
                op = e;
            }
        }
        if (calls != 1) {
            j.no_call++;
            continue;
        }
        const char *cn = json_get_str(call, "name");
        if (others && !(cn && strncmp(cn, "cudaGraphLaunch", 15) == 0)) j.shared++;
        if (json_get_int(json_get(call, "args"), "External id", -2) != ext || ext <= 0) j.bad_ext++;
        if (!op) j.no_op++;
        if (!tc_flow_joins(evs, call, a)) j.no_flow++;
    }
    return j;
}

/* Checks tc_count_joins finds nothing wrong; returns the activities seen. */
static inline int tc_check_correlations(const json_value *evs, const char *label)
{
    const tc_joins j = tc_count_joins(evs);
    tu_check(j.no_call == 0 && j.shared == 0,
             "%s: %d GPU activities, each with its own runtime call's correlation (%d without exactly one call, %d "
             "sharing it outside a graph launch)",
             label, j.acts, j.no_call, j.shared);
    tu_check(j.bad_ext == 0 && j.no_op == 0,
             "%s: activity and call carry the issuing op's External id (%d differ or are missing, %d name no cpu_op)",
             label, j.bad_ext, j.no_op);
    tu_check(j.no_flow == 0, "%s: an ac2g flow from each call to its activity (%d without)", label, j.no_flow);
    return j.acts;
}

static int tc_by_lane_ts(const void *a, const void *b)
{
    const tc_span *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end;
}

static bool tc_lane_named(const json_value *evs, int64_t pid, int64_t tid, const char *what)
{
    for (size_t i = 0; i < json_len(evs); i++) {
        const json_value *e = json_at(evs, i);
        const char *ph = json_get_str(e, "ph"), *name = json_get_str(e, "name");
        if (!ph || strcmp(ph, "M") != 0 || !name || strcmp(name, what) != 0) continue;
        if (json_get_int(e, "pid", -1) == pid && (tid < 0 || json_get_int(e, "tid", -1) == tid) &&
            json_get_str(json_get(e, "args"), "name"))
            return true;
    }
    return false;
}

/* Checks a whole trace document; `label` prefixes every message. */
static void tc_check_trace(const json_value *root, const char *label)
{
    tu_check(root && root->type == JSON_OBJECT, "%s: top level is an object", label);
    tu_check(json_get_int(root, "schemaVersion", 0) == 1, "%s: schemaVersion 1", label);
    tu_check(json_get(root, "deviceProperties") && json_get(root, "deviceProperties")->type == JSON_ARRAY,
             "%s: deviceProperties array", label);
    tu_check(json_get_int(json_get(root, "distributedInfo"), "rank", -1) == 0, "%s: distributedInfo.rank = 0", label);
    const char *unit = json_get_str(root, "displayTimeUnit");
    tu_check(unit && (strcmp(unit, "ms") == 0 || strcmp(unit, "us") == 0 || strcmp(unit, "ns") == 0),
             "%s: displayTimeUnit", label);
    int64_t base = 0;
    tu_check(json_int(json_get(root, "baseTimeNanoseconds"), &base) && base > 0, "%s: baseTimeNanoseconds integer",
             label);
    tu_check(json_get(root, "fmlpAnalysis") && json_get(root, "fmlpAnalysis")->type == JSON_OBJECT,
             "%s: fmlpAnalysis object", label);
    const json_value *evs = json_get(root, "traceEvents");
    tu_check(evs && evs->type == JSON_ARRAY && json_len(evs) > 0, "%s: traceEvents non-empty array", label);
    size_t n = json_len(evs);
    tc_span *sp = calloc(n + 1, sizeof *sp);
    size_t ns = 0;
    int bad_x = 0, bad_cat = 0, bad_hta = 0, unnamed = 0, bad_mono = 0;
    static const char *const cats[] = {"cpu_op", "user_annotation", "kernel", "cuda_runtime", "gpu_memcpy", "gpu_memset"};
    for (size_t i = 0; i < n; i++) {
        const json_value *e = json_at(evs, i);
        const char *ph = json_get_str(e, "ph");
        if (!ph || strcmp(ph, "X") != 0) continue;
        const char *cat = json_get_str(e, "cat"), *name = json_get_str(e, "name");
        const json_value *args = json_get(e, "args");
        double ts = json_get_num(e, "ts", -1), dur = json_get_num(e, "dur", -1);
        if (!name || ts < 0 || dur < 0 || !json_get(e, "pid") || !json_get(e, "tid")) bad_x++;
        bool known = false;
        for (size_t k = 0; cat && k < sizeof cats / sizeof *cats; k++) known |= strcmp(cat, cats[k]) == 0;
        if (!known) bad_cat++;
        if (!json_get(args, "External id")) bad_hta++;
        if (cat && (strcmp(cat, "kernel") == 0 || strcmp(cat, "gpu_memcpy") == 0 || strcmp(cat, "gpu_memset") == 0) &&
            json_get_int(args, "device", -1) >= 0 && (!json_get(args, "correlation") || !json_get(args, "stream")))
            bad_hta++;
        if (cat && strcmp(cat, "cuda_runtime") == 0 && !json_get(args, "correlation")) bad_hta++;
        if (cat && strcmp(cat, "kernel") == 0 && !json_get(args, "correlation")) bad_hta++;
        sp[ns++] = (tc_span){json_get_int(e, "pid", 0), json_get_int(e, "tid", 0), ts, ts + dur, name};
        /* Times never go backwards on a lane, in file order. */
        for (size_t k = ns - 1; k-- > 0;)
            if (sp[k].pid == sp[ns - 1].pid && sp[k].tid == sp[ns - 1].tid) {
                if (sp[k].ts > ts) bad_mono++;
                break;
            }
    }
    tu_check(bad_x == 0, "%s: every span has name, pid, tid, ts and a closing dur >= 0 (%d bad)", label, bad_x);
    tu_check(bad_cat == 0, "%s: every span has a Kineto category (%d unknown)", label, bad_cat);
    tu_check(bad_hta == 0, "%s: External id on every span, correlation (+stream on device) on launches and kernels (%d missing)",
             label, bad_hta);
    tu_check(bad_mono == 0, "%s: timestamps monotonic per lane (%d steps back)", label, bad_mono);
    for (size_t i = 0; i < ns; i++) {
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++) seen = sp[k].pid == sp[i].pid && sp[k].tid == sp[i].tid;
        if (!seen && (!tc_lane_named(evs, sp[i].pid, sp[i].tid, "thread_name") ||
                      !tc_lane_named(evs, sp[i].pid, -1, "process_name")))
            unnamed++;
    }
    tu_check(unnamed == 0, "%s: every lane has process_name and thread_name M events (%d unnamed)", label, unnamed);

    /* Children inside parents: on one lane, spans nest or are disjoint.
     * Rounding to the printed ns cannot break this, as ns are exact. */
    qsort(sp, ns, sizeof *sp, tc_by_lane_ts);
    int partial = 0;
    size_t *stack = malloc((ns + 1) * sizeof *stack), depth = 0;
    for (size_t i = 0; i < ns; i++) {
        if (i && (sp[i].pid != sp[i - 1].pid || sp[i].tid != sp[i - 1].tid)) depth = 0;
        while (depth && sp[stack[depth - 1]].end <= sp[i].ts) depth--;
        if (depth && sp[i].end > sp[stack[depth - 1]].end + 1e-9) partial++;
        stack[depth++] = i;
    }
    tu_check(partial == 0, "%s: children inside parents (%d spans cross their parent's end)", label, partial);
    free(stack);
    free(sp);

    /* Flows: each id one "s" and one "f", the f binding to its enclosing
     * slice (bp "e") and not before its s. */
    int unpaired = 0, flows = 0;
    for (size_t i = 0; i < n; i++) {
        const json_value *e = json_at(evs, i);
        const char *ph = json_get_str(e, "ph");
        if (!ph || strcmp(ph, "s") != 0) continue;
        flows++;
        int64_t id = json_get_int(e, "id", -1);
        int fs = 0;
        for (size_t k = 0; k < n; k++) {
            const json_value *g = json_at(evs, k);
            const char *gph = json_get_str(g, "ph");
            if (!gph || json_get_int(g, "id", -2) != id) continue;
            if (strcmp(gph, "f") == 0) {
                const char *bp = json_get_str(g, "bp");
                if (bp && strcmp(bp, "e") == 0 && json_get_num(g, "ts", 0) >= json_get_num(e, "ts", 0)) fs++;
                else fs += 100;
            } else if (strcmp(gph, "s") == 0 && g != e) {
                fs += 100;
            }
        }
        if (fs != 1) unpaired++;
    }
    tu_check(unpaired == 0, "%s: %d flows, each s paired with exactly one later f (bp e) (%d not)", label, flows, unpaired);
}

#endif
