/* Why: the table users of torch.profiler already read: key_averages() rows
 * grouped by name, torch's column set, widths, right alignment, number
 * formatting (us/ms/s with three decimals, shares with two) and footers, plus
 * the FLOPs, FLOP/s and Bytes/s columns (rates with the SI prefix that fits
 * them) that say how close a row came to the machine. Built from an event set, so live runs and read traces match.
 * The table's options (and their defaults) live here too, so the calls
 * that print tables (report.c for live windows, trace files) depend on this
 * file and it depends on none of them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "profiler/analysis.h"
#include "profiler/idmap.h"
#include "profiler/prof.h"
#include "profiler/tree.h"

fmlp_table_options fmlp_table_options_default(void)
{
    fmlp_table_options o;
    memset(&o, 0, sizeof o);
    return o;
}

typedef struct {
    const char *key;
    bool device; /* a device kernel/memcpy/memset row */
    int64_t count;
    int64_t self_cpu, cpu_total, self_dev, dev_total, flops, bytes;
    size_t first; /* first-seen rank: ties in the sort keep it */
} row;

enum { COL_W = 12, RATE_W = 14, SPACING = 2, MAX_NAME_W = 55 };

static void fmt_time(char *b, size_t n, double us)
{
    if (us >= 1e6)
        snprintf(b, n, "%.3fs", us / 1e6);
    else if (us >= 1e3)
        snprintf(b, n, "%.3fms", us / 1e3);
    else
        snprintf(b, n, "%.3fus", us);
}

static void fmt_share(char *b, size_t n, double part, double total)
{
    if (total == 0)
        snprintf(b, n, "NaN");
    else
        snprintf(b, n, "%.2f%%", part * 100.0 / total);
}

typedef enum { K_SELF_CPU, K_CPU_TOTAL, K_CPU_AVG, K_SELF_DEV, K_DEV_TOTAL, K_DEV_AVG, K_COUNT, K_FLOPS } sort_key;

static const struct {
    const char *name;
    sort_key key;
} sort_names[] = {
    {"self_cpu_time_total", K_SELF_CPU}, {"cpu_time_total", K_CPU_TOTAL},   {"cpu_time", K_CPU_AVG},
    {"self_cuda_time_total", K_SELF_DEV}, {"cuda_time_total", K_DEV_TOTAL}, {"cuda_time", K_DEV_AVG},
    {"self_device_time_total", K_SELF_DEV}, {"device_time_total", K_DEV_TOTAL}, {"count", K_COUNT},
    {"flops", K_FLOPS},
};

static double key_of(const row *r, sort_key k)
{
    switch (k) {
    case K_SELF_CPU: return (double)r->self_cpu;
    case K_CPU_TOTAL: return (double)r->cpu_total;
    case K_CPU_AVG: return (double)r->cpu_total / (double)r->count;
    case K_SELF_DEV: return (double)r->self_dev;
    case K_DEV_TOTAL: return (double)r->dev_total;
    case K_DEV_AVG: return (double)r->dev_total / (double)r->count;
    case K_COUNT: return (double)r->count;
    case K_FLOPS: return (double)r->flops;
    }
    return 0;
}

bool fmlp_table_sort_key_valid(const char *sort_by)
{
    if (!sort_by || !*sort_by) return true;
    for (size_t i = 0; i < sizeof sort_names / sizeof *sort_names; i++)
        if (strcmp(sort_by, sort_names[i].name) == 0) return true;
    return false;
}

static fmlp_status parse_sort(const char *s, bool has_dev, sort_key *out)
{
    if (!s || !*s) {
        *out = has_dev ? K_SELF_DEV : K_SELF_CPU;
        return FMLP_OK;
    }
    for (size_t i = 0; i < sizeof sort_names / sizeof *sort_names; i++)
        if (strcmp(s, sort_names[i].name) == 0) {
            *out = sort_names[i].key;
            return FMLP_OK;
        }
    return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                     "sort_by \"%s\" is not a column; use self_cpu_time_total, cpu_time_total, cpu_time, "
                     "self_cuda_time_total, cuda_time_total, cuda_time, count or flops",
                     s);
}

/* Groups calls by key in first-seen order (a stable base for the sort).
 * Keys are the set's interned names, one pointer per distinct string, or
 * the "ProfilerStep*" literal, which an interned name may equal. */
static row *group_rows(const pe_calls *cs, size_t *nrows)
{
    size_t n = 0, cap = 64;
    row *rows = fmlp_malloc(cap * sizeof *rows);
    pe_idmap by_key;
    if (!rows || !pe_idmap_init(&by_key, 0, 0, 0)) {
        free(rows);
        return NULL;
    }
    int32_t step_row = -1;
    for (size_t i = 0; i < cs->n; i++) {
        pe_call_view c = pe_call_get(cs, i);
        const char *key = pe_call_key(c.name);
        int32_t j = pe_idmap_get(&by_key, (int64_t)(uintptr_t)key);
        if (j < 0) {
            bool step_key = strcmp(key, "ProfilerStep*") == 0;
            j = step_key ? step_row : -1;
            if (j < 0) {
                if (n == cap) {
                    row *nr = fmlp_realloc(rows, (cap *= 2) * sizeof *rows);
                    if (!nr) goto oom;
                    rows = nr;
                }
                j = (int32_t)n;
                rows[n++] = (row){.key = key, .first = (size_t)j};
                if (step_key) step_row = j;
            }
            if (!pe_idmap_put(&by_key, (int64_t)(uintptr_t)key, j)) goto oom;
        }
        row *r = &rows[j];
        const pe_call *k = &cs->c[i];
        r->device |= c.device;
        r->count++;
        r->self_cpu = pe_add_sat(r->self_cpu, k->self_cpu);
        r->cpu_total = pe_add_sat(r->cpu_total, c.device ? 0 : c.t1 - c.t0);
        r->self_dev = pe_add_sat(r->self_dev, k->self_dev);
        r->dev_total = pe_add_sat(r->dev_total, k->dev_total);
        r->flops = pe_add_sat(r->flops, c.flops);
        r->bytes = pe_add_sat(r->bytes, c.bytes);
    }
    pe_idmap_free(&by_key);
    *nrows = n;
    return rows;
oom:
    pe_idmap_free(&by_key);
    free(rows);
    return NULL;
}

/* The table's order: descending by the sort key, ties in first-seen order
 * (torch's sort is stable). */
static _Thread_local sort_key g_key;

static int by_sort_key(const void *a, const void *b)
{
    const row *x = a, *y = b;
    double kx = key_of(x, g_key), ky = key_of(y, g_key);
    if (kx != ky) return kx > ky ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

static void put_col(FILE *f, const char *text, int width)
{
    fprintf(f, "%*s%*s", width, text, SPACING, "");
}

static void put_sep(FILE *f, int ncols, const int *widths)
{
    for (int i = 0; i < ncols; i++) {
        for (int k = 0; k < widths[i]; k++) fputc('-', f);
        fprintf(f, "%*s", SPACING, "");
    }
    fputc('\n', f);
}

/* torch's auto-scaled FLOPs header from the smallest non-zero count. */
static void flops_scale(const row *rows, size_t n, double *scale, const char **header)
{
    static const char *const hdr[] = {"Total FLOPs", "Total KFLOPs", "Total MFLOPs", "Total GFLOPs",
                                      "Total TFLOPs", "Total PFLOPs"};
    double mn = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].flops > 0 && (mn == 0 || rows[i].flops < mn)) mn = (double)rows[i].flops;
    double lg = mn > 0 ? log10(mn) / 3 : 0;
    if (lg < 0) lg = 0;
    if (lg > 5) lg = 5;
    int e = (int)floor(lg);
    *scale = pow(10, -3.0 * e);
    *header = hdr[e];
}

static void write_table(FILE *f, row *rows, size_t nrows, bool has_dev, bool flops_cols, int row_limit)
{
    const char *headers[16];
    int widths[16], nc = 0;
    int name_w = 0;
    for (size_t i = 0; i < nrows; i++) {
        int l = (int)strlen(rows[i].key) + 4;
        if (l > name_w) name_w = l;
    }
    if (name_w > MAX_NAME_W) name_w = MAX_NAME_W;
    if (name_w < 8) name_w = 8;
    double fscale = 1;
    const char *fhdr = NULL;
    flops_scale(rows, nrows, &fscale, &fhdr);
    headers[nc] = "Name";
    widths[nc++] = name_w;
    const char *cpu_h[] = {"Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"};
    for (int i = 0; i < 5; i++) headers[nc] = cpu_h[i], widths[nc++] = COL_W;
    if (has_dev) {
        const char *dev_h[] = {"Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"};
        for (int i = 0; i < 4; i++) headers[nc] = dev_h[i], widths[nc++] = COL_W;
    }
    headers[nc] = "# of Calls", widths[nc++] = COL_W;
    if (flops_cols) {
        headers[nc] = fhdr, widths[nc++] = COL_W;
        headers[nc] = "FLOP/s", widths[nc++] = RATE_W;
        headers[nc] = "Bytes/s", widths[nc++] = RATE_W;
    }

    /* Device time is counted once, on the device rows: the ops that
     * launched it show it too, as torch's table does. */
    double self_cpu_sum = 0, self_dev_sum = 0;
    for (size_t i = 0; i < nrows; i++) {
        self_cpu_sum += (double)rows[i].self_cpu / 1e3;
        if (rows[i].device) self_dev_sum += (double)rows[i].self_dev / 1e3;
    }
    put_sep(f, nc, widths);
    for (int i = 0; i < nc; i++) put_col(f, headers[i], widths[i]);
    fputc('\n', f);
    put_sep(f, nc, widths);
    size_t shown = row_limit > 0 && (size_t)row_limit < nrows ? (size_t)row_limit : nrows;
    for (size_t i = 0; i < shown; i++) {
        const row *r = &rows[i];
        char b[64], name[MAX_NAME_W + 1];
        if ((int)strlen(r->key) >= MAX_NAME_W - 3)
            snprintf(name, sizeof name, "%.*s...", MAX_NAME_W - 3, r->key);
        else
            snprintf(name, sizeof name, "%s", r->key);
        put_col(f, name, widths[0]);
        double self_cpu = (double)r->self_cpu / 1e3, cpu_total = (double)r->cpu_total / 1e3;
        fmt_share(b, sizeof b, self_cpu, self_cpu_sum), put_col(f, b, COL_W);
        fmt_time(b, sizeof b, self_cpu), put_col(f, b, COL_W);
        fmt_share(b, sizeof b, cpu_total, self_cpu_sum), put_col(f, b, COL_W);
        fmt_time(b, sizeof b, cpu_total), put_col(f, b, COL_W);
        fmt_time(b, sizeof b, cpu_total / (double)r->count), put_col(f, b, COL_W);
        if (has_dev) {
            double self_dev = (double)r->self_dev / 1e3, dev_total = (double)r->dev_total / 1e3;
            fmt_time(b, sizeof b, self_dev), put_col(f, b, COL_W);
            fmt_share(b, sizeof b, self_dev, self_dev_sum), put_col(f, b, COL_W);
            fmt_time(b, sizeof b, dev_total), put_col(f, b, COL_W);
            fmt_time(b, sizeof b, dev_total / (double)r->count), put_col(f, b, COL_W);
        }
        snprintf(b, sizeof b, "%lld", (long long)r->count), put_col(f, b, COL_W);
        if (flops_cols) {
            /* Rates over the time the row's work took: device time when it
             * has any, else its CPU total. */
            double t_s = (r->dev_total > 0 ? (double)r->dev_total : (double)r->cpu_total) * 1e-9;
            if (r->flops <= 0) {
                put_col(f, "--", COL_W);
                put_col(f, "--", RATE_W);
            } else {
                snprintf(b, sizeof b, "%8.3f", (double)r->flops * fscale), put_col(f, b, COL_W);
                put_col(f, t_s > 0 ? fmlp_si_format((double)r->flops / t_s, "FLOP/s", b, sizeof b) : "--", RATE_W);
            }
            put_col(f, r->bytes > 0 && t_s > 0 ? fmlp_si_format((double)r->bytes / t_s, "B/s", b, sizeof b) : "--", RATE_W);
        }
        fputc('\n', f);
    }
    put_sep(f, nc, widths);
    char b[64];
    fmt_time(b, sizeof b, self_cpu_sum);
    fprintf(f, "Self CPU time total: %s\n", b);
    if (has_dev) {
        fmt_time(b, sizeof b, self_dev_sum);
        fprintf(f, "Self CUDA time total: %s\n", b);
    }
}

char *prof_table(const pe_set *s, const fmlp_table_options *opt, bool with_flops, fmlp_status *st)
{
    fmlp_table_options o = opt ? *opt : fmlp_table_options_default();
    pe_calls cs;
    *st = FMLP_OK;
    if (!pe_calls_build(s, &cs)) {
        *st = fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory building the profiler table");
        return NULL;
    }
    sort_key key = K_SELF_CPU;
    *st = parse_sort(o.sort_by, cs.has_device, &key);
    if (*st != FMLP_OK) {
        pe_calls_free(&cs);
        return NULL;
    }
    size_t nrows = 0;
    row *rows = group_rows(&cs, &nrows);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = rows ? open_memstream(&buf, &len) : NULL;
    if (!f) {
        free(rows);
        pe_calls_free(&cs);
        *st = fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory building the profiler table");
        return NULL;
    }
    g_key = key;
    qsort(rows, nrows, sizeof *rows, by_sort_key);
    bool flops_cols = false;
    for (size_t i = 0; i < nrows; i++) flops_cols |= rows[i].flops > 0;
    write_table(f, rows, nrows, cs.has_device, with_flops && flops_cols, o.row_limit);
    /* With calls to analyse, only memory running out fails the analysis. */
    bool ok = true;
    if (o.analyses) {
        pe_analysis a;
        if (pe_analyze(s, &cs, &a)) {
            fputc('\n', f);
            pe_analysis_print(&a, s, f);
            pe_analysis_free(&a);
        } else {
            ok = cs.n == 0;
        }
    }
    ok = !ferror(f) && ok;
    ok = fclose(f) == 0 && ok;
    free(rows);
    pe_calls_free(&cs);
    if (ok) return buf;
    free(buf);
    *st = fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory building the profiler table");
    return NULL;
}
