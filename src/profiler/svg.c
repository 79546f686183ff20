/* Why: see svg.h. One lane per CPU thread (the stepping thread first) and
 * per GPU stream; spans stacked by nesting depth and labelled where they
 * are wide enough (every span carries a hover title); arrows from each
 * launch to its kernel and from a CPU region's launching thread to its
 * workers; a time axis in us or ms. */
#include "profiler/svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/idx_sort.h"
#include "profiler/tree.h"

enum { LEFT = 190, TOP = 56, ROW = 18, LANE_GAP = 10, AXIS_H = 30, CHAR_W = 6 };

typedef struct {
    int64_t pid, tid;
    int device;
    int depth; /* rows used */
    double y;
    uint32_t id; /* the set's lane */
} lane;

typedef struct {
    const pe_set *s;
    lane *lanes;
    int n_lanes;
    int *ev_lane, *ev_depth;
    int64_t t0, t1;
    double plot_w;
} layout;

static double xpos(const layout *L, int64_t t)
{
    return LEFT + (double)(t - L->t0) * L->plot_w / (double)(L->t1 - L->t0);
}

static bool visible(const layout *L, const pe_event *e)
{
    return pe_is_span(e) && e->t1 >= e->t0 && e->t1 > L->t0 && e->t0 < L->t1;
}

static int lane_rank(const pe_set *s, const lane *l)
{
    return l->device >= 0 ? 2 : l->tid == s->main_tid ? 0 : 1;
}

/* The set the lane comparator reads (qsort takes no context): one per
 * thread, so traces written or drawn on two threads at once do not race. */
static _Thread_local const pe_set *g_set;

static int by_lane(const void *a, const void *b)
{
    const lane *x = a, *y = b;
    int rx = lane_rank(g_set, x), ry = lane_rank(g_set, y);
    if (rx != ry) return rx - ry;
    if (x->device != y->device) return x->device - y->device;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* A lane's spans: by start, the longer first, then in set order. */
static int by_lane_start(const void *ctx, uint32_t a, uint32_t b)
{
    const pe_event *x = &((const pe_set *)ctx)->ev[a], *y = &((const pe_set *)ctx)->ev[b];
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1) return x->t1 > y->t1 ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Depth of each span on its lane: how many spans on the lane enclose it.
 * The visible events are grouped by lane (a counting sort), then each
 * lane's are ordered by start. */
static bool assign_depths(layout *L)
{
    const pe_set *s = L->s;
    uint32_t *idx = fmlp_malloc((s->n + 1) * sizeof *idx);
    int64_t *stack_end = fmlp_malloc((s->n + 1) * sizeof *stack_end);
    size_t *start = fmlp_calloc((size_t)L->n_lanes + 2, sizeof *start);
    bool ok = idx && stack_end && start;
    if (ok) {
        for (size_t i = 0; i < s->n; i++)
            if (L->ev_lane[i] >= 0) start[L->ev_lane[i] + 1]++;
        for (int li = 0; li < L->n_lanes; li++) start[li + 1] += start[li];
        for (size_t i = 0; i < s->n; i++)
            if (L->ev_lane[i] >= 0) idx[start[L->ev_lane[i]]++] = (uint32_t)i;
    }
    /* start[li] is now the end of lane li's run. */
    size_t a = 0;
    for (int li = 0; ok && li < L->n_lanes; a = start[li++]) {
        size_t n = start[li] - a;
        ok = idx_sort(idx + a, n, by_lane_start, s);
        int depth = 0;
        for (size_t k = 0; k < n && ok; k++) {
            const pe_event *e = &s->ev[idx[a + k]];
            while (depth && stack_end[depth - 1] <= e->t0) depth--;
            L->ev_depth[idx[a + k]] = depth;
            stack_end[depth++] = e->t1;
            if (depth > L->lanes[li].depth) L->lanes[li].depth = depth;
        }
    }
    free(idx);
    free(stack_end);
    free(start);
    return ok;
}

/* The lanes drawn: those with a visible span, each with the device of its
 * first one, in lane order (the stepping thread, other CPU threads, device
 * streams). */
static bool find_lanes(layout *L)
{
    const pe_set *s = L->s;
    int32_t *of_lane = fmlp_malloc((s->lanes.n + 1) * sizeof *of_lane);
    L->lanes = fmlp_calloc(s->lanes.n + 1, sizeof *L->lanes);
    if (!of_lane || !L->lanes) {
        free(of_lane);
        return false;
    }
    memset(of_lane, 0xff, (s->lanes.n + 1) * sizeof *of_lane);
    for (size_t i = 0; i < s->n; i++) {
        const pe_event *e = &s->ev[i];
        if (!visible(L, e) || of_lane[e->lane] >= 0) continue;
        const pe_lane *ln = pe_lane_of(s, e);
        of_lane[e->lane] = L->n_lanes;
        L->lanes[L->n_lanes++] = (lane){ln->pid, ln->tid, e->device < 0 ? -1 : e->device, 0, 0, e->lane};
    }
    g_set = s;
    qsort(L->lanes, (size_t)L->n_lanes, sizeof *L->lanes, by_lane);
    for (int li = 0; li < L->n_lanes; li++) of_lane[L->lanes[li].id] = li;
    for (size_t i = 0; i < s->n; i++) L->ev_lane[i] = visible(L, &s->ev[i]) ? of_lane[s->ev[i].lane] : -1;
    free(of_lane);
    return true;
}

static bool build_layout(layout *L, const pe_set *s, const pe_svg_options *o)
{
    memset(L, 0, sizeof *L);
    L->s = s;
    L->t0 = o->t0;
    L->t1 = o->t1;
    if (L->t1 <= L->t0) {
        L->t0 = INT64_MAX;
        L->t1 = INT64_MIN;
        for (size_t i = 0; i < s->n; i++) {
            if (!pe_is_span(&s->ev[i]) || s->ev[i].t1 < s->ev[i].t0) continue;
            if (s->ev[i].t0 < L->t0) L->t0 = s->ev[i].t0;
            if (s->ev[i].t1 > L->t1) L->t1 = s->ev[i].t1;
        }
        if (L->t1 <= L->t0) L->t0 = 0, L->t1 = 1000;
    }
    L->plot_w = (o->width > 0 ? o->width : 1600) - LEFT - 20;
    L->ev_lane = fmlp_malloc((s->n + 1) * sizeof *L->ev_lane);
    L->ev_depth = fmlp_calloc(s->n + 1, sizeof *L->ev_depth);
    if (!L->ev_lane || !L->ev_depth || !find_lanes(L) || !assign_depths(L)) return false;
    double y = TOP;
    for (int i = 0; i < L->n_lanes; i++) {
        L->lanes[i].y = y;
        y += L->lanes[i].depth * ROW + LANE_GAP;
    }
    return true;
}

static void free_layout(layout *L)
{
    free(L->lanes);
    free(L->ev_lane);
    free(L->ev_depth);
}

static void put_text(FILE *f, const char *s, size_t max_chars)
{
    size_t n = strlen(s);
    bool cut = n > max_chars;
    if (cut) n = max_chars > 1 ? max_chars - 1 : 0;
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(s[i], f);
        }
    }
    if (cut) fputs("\xe2\x80\xa6", f);
}

static const char *fill_of(const pe_event *e)
{
    switch (e->kind) {
    case PE_STEP: return "#d0d0d0";
    case PE_USER: return "#c9b3e6";
    case PE_CPU_OP: return "#8fb8e8";
    case PE_KERNEL: return e->device >= 0 ? "#7cc27c" : "#f2a65a";
    case PE_RUNTIME: return "#f0dc78";
    case PE_MEMCPY:
    case PE_MEMSET: return "#6fc7c0";
    case PE_MEMORY: break;
    }
    return "#cccccc";
}

static void fmt_dur(char *b, size_t n, double ns)
{
    if (ns >= 1e6)
        snprintf(b, n, "%.3f ms", ns / 1e6);
    else
        snprintf(b, n, "%.3f us", ns / 1e3);
}

static void put_axis(FILE *f, const layout *L, double y)
{
    double span = (double)(L->t1 - L->t0), raw = span / 8, mag = pow(10, floor(log10(raw)));
    double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", LEFT, y, LEFT + L->plot_w, y);
    for (double t = 0; t <= span + 1e-9; t += step) {
        double x = xpos(L, L->t0 + (int64_t)t);
        char b[32];
        if (step >= 1e6)
            snprintf(b, sizeof b, "%g ms", t / 1e6);
        else
            snprintf(b, sizeof b, "%g us", t / 1e3);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", x, TOP - 4, x, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"middle\">%s</text>\n", x, y + 14, b);
    }
}

static void put_spans(FILE *f, const layout *L)
{
    const pe_set *s = L->s;
    for (size_t i = 0; i < s->n; i++) {
        int li = L->ev_lane[i];
        if (li < 0) continue;
        const pe_event *e = &s->ev[i];
        int64_t a = e->t0 < L->t0 ? L->t0 : e->t0, b = e->t1 > L->t1 ? L->t1 : e->t1;
        double x = xpos(L, a), w = xpos(L, b) - x;
        if (w < 0.5) w = 0.5;
        double y = L->lanes[li].y + L->ev_depth[i] * ROW;
        char dur[32];
        fmt_dur(dur, sizeof dur, (double)(e->t1 - e->t0));
        fputs("<g><title>", f);
        put_text(f, e->name, 400);
        fprintf(f, " (%s, %s)</title>", pe_kind_cat(e->kind), dur);
        fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" stroke=\"#555\" stroke-width=\"0.3\"/>",
                x, y, w, ROW - 2, fill_of(e));
        size_t chars = (size_t)((w - 4) / CHAR_W);
        if (chars >= 4) {
            fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" class=\"sp\">", x + 2, y + ROW - 6);
            put_text(f, e->name, chars);
            fputs("</text>", f);
        }
        fputs("</g>\n", f);
    }
}

/* Centre of event i's bar. */
static bool anchor(const layout *L, const pe_event *e, double *x, double *y)
{
    size_t i = (size_t)(e - L->s->ev);
    int li = L->ev_lane[i];
    if (li < 0) return false;
    *x = xpos(L, e->t0 < L->t0 ? L->t0 : e->t0);
    *y = L->lanes[li].y + L->ev_depth[i] * ROW + (ROW - 2) / 2.0;
    return true;
}

static void put_arrow(FILE *f, const layout *L, const pe_event *from, const pe_event *to)
{
    double x0, y0, x1, y1;
    if (!anchor(L, from, &x0, &y0) || !anchor(L, to, &x1, &y1)) return;
    fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" class=\"fl\" marker-end=\"url(#ah)\"/>\n", x0, y0,
            x1, y1);
}

/* false when out of memory */
static bool put_flows(FILE *f, const layout *L)
{
    const pe_set *s = L->s;
    pe_calls cs;
    if (!pe_calls_build(s, &cs)) return false;
    for (size_t i = 0; i < cs.n; i++) {
        pe_call_view c = pe_call_get(&cs, i);
        int launcher = cs.c[i].launcher, parent = cs.c[i].parent;
        if (c.device && launcher >= 0) put_arrow(f, L, pe_call_event(&cs, (size_t)launcher), c.e);
        if (c.kind != PE_KERNEL || c.device || c.lanes < 2) continue;
        const pe_event *home = NULL;
        for (int k = 0; k < c.lanes && !home; k++) {
            const pe_lane *l = pe_lane_of(s, &s->ev[c.rec[k]]);
            if (l->tid == c.tid && l->pid == c.pid) home = &s->ev[c.rec[k]];
        }
        if (!home) home = parent >= 0 ? pe_call_event(&cs, (size_t)parent) : c.e;
        for (int k = 0; k < c.lanes; k++) {
            const pe_event *e = &s->ev[c.rec[k]];
            if (e != home) put_arrow(f, L, home, e);
        }
    }
    pe_calls_free(&cs);
    return true;
}

static void put_lane_names(FILE *f, const layout *L)
{
    for (int i = 0; i < L->n_lanes; i++) {
        const lane *l = &L->lanes[i];
        char name[96];
        if (l->device >= 0)
            snprintf(name, sizeof name, "GPU %d stream %lld", l->device, (long long)l->tid);
        else
            snprintf(name, sizeof name, "CPU thread %lld%s", (long long)l->tid, l->tid == L->s->main_tid ? " (main)" : "");
        double h = l->depth * ROW;
        fprintf(f, "<rect x=\"0\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", l->y - 2, LEFT + L->plot_w + 20,
                h + 4, i % 2 ? "#fafafa" : "#f2f2f2");
        fprintf(f, "<text x=\"8\" y=\"%.1f\" class=\"ln\">%s</text>\n", l->y + 12, name);
    }
}

bool pe_render_svg(const pe_set *s, const pe_svg_options *opt, FILE *f)
{
    pe_svg_options o = opt ? *opt : (pe_svg_options){0};
    layout L;
    if (!build_layout(&L, s, &o)) {
        free_layout(&L);
        return false;
    }
    double axis_y = TOP + 4;
    for (int i = 0; i < L.n_lanes; i++) axis_y += L.lanes[i].depth * ROW + LANE_GAP;
    double width = LEFT + L.plot_w + 20, height = axis_y + AXIS_H;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
            width, height, width, height);
    fputs("<style>text{font-family:DejaVu Sans Mono,monospace}.sp{font-size:10px;fill:#111}"
          ".ln{font-size:11px;fill:#222}.ax{font-size:10px;fill:#444}.tt{font-size:13px;fill:#000}"
          ".fl{stroke:#c0392b;stroke-width:0.8;fill:none;opacity:0.8}</style>\n",
          f);
    fputs("<defs><marker id=\"ah\" markerWidth=\"6\" markerHeight=\"6\" refX=\"5\" refY=\"3\" orient=\"auto\">"
          "<path d=\"M0,0 L6,3 L0,6 z\" fill=\"#c0392b\"/></marker></defs>\n",
          f);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
    if (o.title) {
        fputs("<text x=\"8\" y=\"20\" class=\"tt\">", f);
        put_text(f, o.title, 240);
        fputs("</text>\n", f);
    }
    char span[32];
    fmt_dur(span, sizeof span, (double)(L.t1 - L.t0));
    fprintf(f, "<text x=\"8\" y=\"40\" class=\"ax\">%d lanes, %s shown; kernels orange (CPU) / green (GPU), ops blue, "
               "steps grey, arrows: launch to kernel</text>\n",
            L.n_lanes, span);
    put_lane_names(f, &L);
    put_axis(f, &L, axis_y);
    put_spans(f, &L);
    bool ok = put_flows(f, &L);
    fputs("</svg>\n", f);
    free_layout(&L);
    return ok;
}
