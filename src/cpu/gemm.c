/* Why: the GEMM driver. It packs weights once into the panel layout of the
 * path's microkernel (gemm_internal.h), and per call splits the output over
 * the pool and blocks rows for the caches; the per-ISA block functions do
 * the arithmetic. No k is ever split, across threads or blocks, so each
 * element is one thread's fixed-order sum. */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/dtype.h"
#include "cpu/gemm_internal.h"

static int path_nr(cpu_path path)
{
    switch (path) {
    case CPU_PATH_SCALAR: return GEMM_NR_SCALAR;
    case CPU_PATH_AVX2: return GEMM_NR_AVX2;
    default: return GEMM_NR_AVX512;
    }
}

static int path_mr(cpu_path path)
{
    switch (path) {
    case CPU_PATH_SCALAR: return GEMM_MR_SCALAR;
    case CPU_PATH_AVX2: return GEMM_MR_AVX2;
    case CPU_PATH_AMX: return GEMM_MR_AMX;
    case CPU_PATH_AVX512BF16: return GEMM_MR_AVX512BF16;
    default: return GEMM_MR_AVX512;
    }
}

static gemm_block_fn path_block(cpu_path path)
{
    switch (path) {
    case CPU_PATH_AVX2: return gemm_block_avx2;
    case CPU_PATH_AVX512: return gemm_block_avx512;
    case CPU_PATH_AVX512BF16: return gemm_block_avx512bf16;
    case CPU_PATH_AMX: return gemm_block_amx;
    default: return gemm_block_scalar;
    }
}

/* Source column of packed column j of `panel`, or -1 past the weight;
 * *up says whether it comes from the GLU's up weight. */
static int64_t source_column(const cpu_packed *p, int64_t panel, int j, bool *up)
{
    int outs = gemm_panel_outs(p);
    *up = p->glu && j >= outs;
    int64_t col = panel * outs + (*up ? j - outs : j);
    return col < p->n ? col : -1;
}

static void fill_panels(cpu_packed *p, const void *w0, const void *w1)
{
    size_t esz = p->dtype == FMLP_F32 ? 4 : 2;
    memset(p->w, 0, (size_t)p->panels * (size_t)p->panel_elems * esz);
    for (int64_t panel = 0; panel < p->panels; panel++) {
        char *dst = (char *)gemm_panel(p, panel);
        for (int j = 0; j < p->nr; j++) {
            bool up;
            int64_t col = source_column(p, panel, j, &up);
            if (col < 0) continue;
            const char *src = (const char *)(up ? w1 : w0) + (size_t)col * (size_t)p->k * esz;
            for (int64_t kk = 0; kk < p->k; kk++) {
                int64_t at = p->pairs ? (kk / 2) * p->nr * 2 + j * 2 + kk % 2 : kk * p->nr + j;
                memcpy(dst + (size_t)at * esz, src + (size_t)kk * esz, esz);
            }
        }
    }
}

static bool fill_bias(cpu_packed *p, const void *b0, const void *b1)
{
    if (!b0 && !b1) return true;
    size_t count = (size_t)p->panels * (size_t)p->nr;
    p->bias = calloc(count, sizeof(float));
    if (!p->bias) return false;
    for (int64_t panel = 0; panel < p->panels; panel++)
        for (int j = 0; j < p->nr; j++) {
            bool up;
            int64_t col = source_column(p, panel, j, &up);
            const void *b = up ? b1 : b0;
            if (col >= 0 && b) p->bias[panel * p->nr + j] = fmlp_load(p->dtype, b, col);
        }
    return true;
}

static cpu_packed *pack(cpu_path path, fmlp_dtype dtype, const void *w0, const void *b0, const void *w1,
                        const void *b1, int64_t n, int64_t k, bool glu)
{
    if ((dtype != FMLP_F32 && dtype != FMLP_BF16) || n < 1 || k < 1 || !w0 || (glu && !w1)) return NULL;
    path = cpu_path_for_dtype(path, dtype);
    if (!cpu_path_available(path, NULL)) return NULL;
    cpu_packed *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->path = path;
    p->dtype = dtype;
    p->glu = glu;
    p->pairs = dtype == FMLP_BF16 && (path == CPU_PATH_AVX512BF16 || path == CPU_PATH_AMX);
    p->n = n;
    p->k = k;
    p->nr = path_nr(path);
    int64_t kstep = path == CPU_PATH_AMX ? GEMM_AMX_KSTEP : p->pairs ? 2 : 1;
    p->kpad = (k + kstep - 1) / kstep * kstep;
    int outs = gemm_panel_outs(p);
    p->panels = (n + outs - 1) / outs;
    p->panel_elems = p->kpad * p->nr;
    size_t esz = dtype == FMLP_F32 ? 4 : 2;
    if ((uint64_t)p->panels > SIZE_MAX / esz / (uint64_t)p->panel_elems) {
        free(p);
        return NULL;
    }
    size_t bytes = ((size_t)p->panels * (size_t)p->panel_elems * esz + 63) / 64 * 64;
    p->w = aligned_alloc(64, bytes);
    if (!p->w || !fill_bias(p, b0, b1)) {
        cpu_packed_free(p);
        return NULL;
    }
    fill_panels(p, w0, w1);
    return p;
}

cpu_packed *cpu_gemm_pack(cpu_path path, fmlp_dtype dtype, const void *w, const void *b, int64_t n, int64_t k)
{
    return pack(path, dtype, w, b, NULL, NULL, n, k, false);
}

cpu_packed *cpu_gemm_pack_glu(cpu_path path, fmlp_dtype dtype, const void *wg, const void *bg, const void *wu,
                              const void *bu, int64_t n, int64_t k)
{
    return pack(path, dtype, wg, bg, wu, bu, n, k, true);
}

void cpu_packed_free(cpu_packed *p)
{
    if (!p) return;
    free(p->w);
    free(p->bias);
    free(p);
}

cpu_path cpu_packed_path(const cpu_packed *p) { return p->path; }

/* Below this many multiply-adds a second thread's wake-up costs more than
 * it saves. */
#define GEMM_MIN_PARALLEL_MACS (64 * 1024)
/* The rows of A one thread keeps hot in L2 while it walks its panels. */
#define GEMM_A_BLOCK_BYTES (192 * 1024)

typedef struct {
    gemm_call g;
    gemm_block_fn block;
    int nthreads;
    bool split_panels;
    int64_t mr, mc;
} gemm_task;

static bool split_over_panels(const cpu_packed *p, int64_t m, int nthreads)
{
    int mr = path_mr(p->path);
    if (p->panels < nthreads) return false;
    return m <= (int64_t)mr * nthreads || p->panels >= 4 * nthreads;
}

int cpu_gemm_threads(cpu_pool *pool, const cpu_packed *p, int64_t m)
{
    if (!pool || m < 1) return 1;
    int nt = cpu_pool_threads(pool);
    double macs = (double)m * (double)p->panels * p->nr * (double)p->k;
    if (nt <= 1 || macs < GEMM_MIN_PARALLEL_MACS) return 1;
    int64_t mr = path_mr(p->path);
    int64_t units = split_over_panels(p, m, nt) ? p->panels : (m + mr - 1) / mr;
    return units < nt ? (int)units : nt;
}

static void gemm_task_run(void *arg, int tid, int nthreads)
{
    const gemm_task *t = arg;
    (void)nthreads;
    int64_t m0 = 0, m1 = t->g.m, p0 = 0, p1 = t->g.p->panels;
    if (t->split_panels) {
        cpu_split(p1, t->nthreads, tid, &p0, &p1);
    } else {
        int64_t tiles = (t->g.m + t->mr - 1) / t->mr, lo, hi;
        cpu_split(tiles, t->nthreads, tid, &lo, &hi);
        m0 = lo * t->mr;
        m1 = hi * t->mr < t->g.m ? hi * t->mr : t->g.m;
    }
    for (int64_t i = m0; i < m1; i += t->mc) t->block(&t->g, i, i + t->mc < m1 ? i + t->mc : m1, p0, p1);
}

void cpu_gemm_run(cpu_pool *pool, const cpu_packed *p, fmlp_act act, const void *A, int64_t lda, void *C,
                  int64_t ldc, int64_t m, cpu_lane_time *times)
{
    gemm_task t = {
        .g = {.p = p, .act = act, .A = A, .lda = lda, .C = C, .ldc = ldc, .m = m},
        .block = path_block(p->path),
        .nthreads = cpu_gemm_threads(pool, p, m),
        .mr = path_mr(p->path),
    };
    t.split_panels = split_over_panels(p, m, t.nthreads);
    size_t esz = p->dtype == FMLP_F32 ? 4 : 2;
    int64_t rows = GEMM_A_BLOCK_BYTES / (int64_t)(esz * (size_t)p->k);
    t.mc = rows < t.mr ? t.mr : rows / t.mr * t.mr;
    if (m < 1) return;
    if (pool) {
        cpu_pool_run(pool, t.nthreads, gemm_task_run, &t, times);
        return;
    }
    if (times) times[0].t0_ns = fmlp_now_ns();
    gemm_task_run(&t, 0, 1);
    if (times) {
        times[0].t1_ns = fmlp_now_ns();
        times[0].os_tid = fmlp_thread_id();
    }
}
