/* Why: `fmlp trace diff` as a library call (see fmlp.h, "trace files"):
 * the tutorial's story, eager -> compiled -> fused, told by numbers side
 * by side: kernels per step, where each step's time went, the verdicts, and
 * time per step by kernel name, every change measured against the first
 * trace. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "profiler/idmap.h"
#include "profiler/trace_handle.h"

typedef struct {
    const char *path;
    const pe_analysis *a;
} diff_run;

static void fmt_us(char *b, size_t n, double us)
{
    if (us >= 1e3)
        snprintf(b, n, "%.3fms", us / 1e3);
    else
        snprintf(b, n, "%.3fus", us);
}

static void diff_row(FILE *f, const char *label, const diff_run *r, int n, double (*get)(const diff_run *), bool time)
{
    fprintf(f, "%-28s", label);
    for (int i = 0; i < n; i++) {
        char b[48];
        double v = get(&r[i]);
        if (time)
            fmt_us(b, sizeof b, v);
        else
            snprintf(b, sizeof b, "%.0f", v);
        if (i > 0 && r[0].a->n_steps && get(&r[0]) > 0) {
            size_t l = strlen(b);
            snprintf(b + l, sizeof b - l, " (%+.0f%%)", (v / get(&r[0]) - 1) * 100);
        }
        fprintf(f, "  %24s", b);
    }
    fputc('\n', f);
}

static double g_kernels(const diff_run *r) { return r->a->sum.kernels_per_step; }
static double g_wall(const diff_run *r) { return r->a->sum.wall_us; }
static double g_kern(const diff_run *r) { return r->a->sum.kernel_us; }
static double g_copy(const diff_run *r) { return r->a->sum.copy_us; }
static double g_over(const diff_run *r) { return r->a->sum.overhead_us; }
static double g_idle(const diff_run *r) { return r->a->sum.idle_us; }

/* Kernel names are matched across traces by content: each is interned in
 * one scratch table, and each trace maps those names to its kernels. */
static bool diff_kernels(FILE *f, const diff_run *r, int n)
{
    pe_set names;
    pe_set_init(&names);
    pe_idmap of[FMLP_TRACE_DIFF_MAX];
    int made = 0;
    bool ok = true;
    for (; made < n && ok; made++) {
        ok = pe_idmap_init(&of[made], 0, 0, 0);
        for (int k = 0; ok && k < r[made].a->n_kernels; k++) {
            const char *name = pe_intern(&names, r[made].a->kernels[k].name);
            ok = name && pe_idmap_put(&of[made], (int64_t)(uintptr_t)name, k);
        }
    }
    if (ok) {
        fprintf(f, "\ntime per step by kernel name (avg per launch x launches / steps):\n");
        for (int i = 0; i < n; i++)
            for (int k = 0; k < r[i].a->n_kernels; k++) {
                const char *name = r[i].a->kernels[k].name;
                int64_t key = (int64_t)(uintptr_t)pe_intern(&names, name);
                bool earlier = false;
                for (int j = 0; j < i && !earlier; j++) earlier = pe_idmap_get(&of[j], key) >= 0;
                if (earlier) continue;
                fprintf(f, "%-28.28s", name);
                for (int j = 0; j < n; j++) {
                    char b[48] = "--";
                    int q = pe_idmap_get(&of[j], key);
                    if (q >= 0) {
                        const pe_kernel_stat *ks = &r[j].a->kernels[q];
                        fmt_us(b, sizeof b, ks->dur_us * ks->calls / (r[j].a->n_steps ? r[j].a->n_steps : 1));
                    }
                    fprintf(f, "  %24s", b);
                }
                fputc('\n', f);
            }
    }
    for (int i = 0; i < made; i++) pe_idmap_free(&of[i]);
    pe_set_free(&names);
    return ok;
}

static bool diff_write(FILE *f, const diff_run *r, int n)
{
    fprintf(f, "%-28s", "");
    for (int i = 0; i < n; i++) {
        const char *base = strrchr(r[i].path, '/');
        fprintf(f, "  %24.24s", base ? base + 1 : r[i].path);
    }
    fprintf(f, "\n");
    diff_row(f, "kernels per step", r, n, g_kernels, false);
    diff_row(f, "wall per step", r, n, g_wall, true);
    diff_row(f, "kernel time per step", r, n, g_kern, true);
    diff_row(f, "copy time per step", r, n, g_copy, true);
    diff_row(f, "dispatch overhead per step", r, n, g_over, true);
    diff_row(f, "idle per step", r, n, g_idle, true);
    fprintf(f, "%-28s", "verdict");
    for (int i = 0; i < n; i++) fprintf(f, "  %24s", pe_bound_name(r[i].a->sum.bound));
    fputc('\n', f);
    return diff_kernels(f, r, n);
}

fmlp_status fmlp_trace_diff_string(fmlp_trace *const *traces, int n, char **out)
{
    if (!out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_diff_string: out is NULL");
    *out = NULL;
    if (!traces || n < 2 || n > FMLP_TRACE_DIFF_MAX)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_diff_string: %d traces; give 2 to %d", traces ? n : 0,
                         FMLP_TRACE_DIFF_MAX);
    diff_run r[FMLP_TRACE_DIFF_MAX];
    for (int i = 0; i < n; i++) {
        if (!traces[i]) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_trace_diff_string: trace %d is NULL", i);
        r[i].path = traces[i]->path;
        r[i].a = trace_analysis(traces[i], "fmlp_trace_diff_string");
        if (!r[i].a) return FMLP_ERR_INVALID_ARGUMENT;
    }
    size_t len = 0;
    FILE *f = open_memstream(out, &len);
    if (!f) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory comparing traces");
    bool ok = diff_write(f, r, n);
    fclose(f);
    if (ok) return FMLP_OK;
    free(*out);
    *out = NULL;
    return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory comparing traces");
}
