/* Why: the GEMM driver, one for every path. It packs weights once into the
 * panel layout of the path's microkernels (gemm_internal.h), and per call
 * cuts the output into units (a block of rows that stays in L2 by a group
 * of panels) that the pool's threads claim until none are left, then walks
 * each unit's tiles in the path's order, small blocks on the path's wide
 * kernels. The per-ISA microkernels do the arithmetic, the path's epilogue
 * finishes each tile while it is hot. Where a panel is too long to stay in
 * L1 and the path's kernels can continue a sum, k is cut into chunks walked
 * in order by the same thread (the sums wait in f32 between them); k is
 * never split across threads, so each element is one fixed-order sum
 * whoever computes it. The parts of a path it uses come from the path
 * table. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/dtype.h"
#include "cpu/gemm_internal.h"
#include "cpu/path_table.h"

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
    const size_t esz = p->esz;
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
    p->bias = fmlp_calloc(count, sizeof(float));
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

/* The rows of A one thread keeps hot in L2 while it walks its panels. */
#define GEMM_A_BLOCK_BYTES (192 * 1024)

/* Where k is cut: panels longer than GEMM_CHUNK_PANEL_BYTES no longer
 * stay in L2 beside a block's A rows, and weights past
 * GEMM_CHUNK_WEIGHT_BYTES (the L3 of the machines measured) are read from
 * memory again by every block of rows, which the whole-k grid keeps to a
 * few rows so that they fit L2 (so those are cut only from two blocks of
 * rows on). Up to two row tiles (2 mr rows) nothing is cut: one tile
 * reads no panel again, and whole panels stream from memory in order (cut
 * there, the f32 Llama-3-8B MLP ran about 10% slower at one row), and a
 * second tile's re-read from L2 costs less than the cut (at 16 rows of the
 * Llama-3-8B MLP in two 8- or 12-row AVX-512 tiles, cut: forwards
 * 0.87-1.01x, bf16 GLU GEMMs 0.75-0.86x; cut from 17 and 25 rows, its
 * forwards ran 1.08-1.38x at 32 rows and 1.27-1.67x at 128 on a 2-core
 * AVX-512 EPYC, bench/results/cpu_k_chunks_avx512_2026-12-08.md). Cut, a chunk's
 * slice of a panel (GEMM_CHUNK_W_BYTES) stays in L1 while every row tile
 * of a block reads it, and a block holds up to 192 rows (GEMM_A_BLOCK_BYTES
 * of A per chunk). On a 2-core AVX2 EPYC the f32 Llama-3-8B MLP ran
 * 1.37-1.67x faster at 16 and 128 rows, its GEMMs 1.2-2.1x at 16-1024
 * (bench/results/cpu_k_chunks_2026-12-07.md); bf16 there, then held by
 * the kernel's bf16 broadcasts, moved within noise. The tutorial's MLP,
 * inside both limits, is not cut: 16 KB chunks ran it no faster. */
#define GEMM_CHUNK_W_BYTES (16 * 1024)
#define GEMM_CHUNK_PANEL_BYTES ((size_t)192 * 1024)
#define GEMM_CHUNK_WEIGHT_BYTES ((size_t)32 << 20)

/* Weights of 2 MiB and up go on 2 MiB pages where the kernel allows. Small
 * batches stream every weight once per call, and past the reach of the TLB
 * in 4 KiB pages (3072 entries, 12 MB on Zen 4) each new page costs a table
 * walk and the prefetchers stop at every page edge: the f32 GeGLU gate/up
 * packing (18.9 MB) is past it, the 9.4 MB plain ones are not. Advice only:
 * where it is refused the pages stay small. The size is rounded to whole
 * huge pages so that none is shared with other heap data. */
#define GEMM_HUGE_PAGE ((size_t)2 << 20)

static void *alloc_weights(size_t bytes)
{
    if (bytes < GEMM_HUGE_PAGE || bytes > SIZE_MAX - GEMM_HUGE_PAGE) return fmlp_aligned_alloc(64, bytes);
    bytes = (bytes + GEMM_HUGE_PAGE - 1) / GEMM_HUGE_PAGE * GEMM_HUGE_PAGE;
    void *w = fmlp_aligned_alloc(GEMM_HUGE_PAGE, bytes);
#ifdef MADV_HUGEPAGE
    if (w) (void)madvise(w, bytes, MADV_HUGEPAGE);
#endif
    return w;
}

/* Rows per block whose A rows over k_len (GEMM_A_BLOCK_BYTES) stay in L2:
 * whole tiles, at least one, at most `most`. */
static int64_t block_rows(const cpu_packed *p, int64_t k_len, int64_t most)
{
    int64_t mr = p->gp->mr, rows = GEMM_A_BLOCK_BYTES / (int64_t)(p->esz * (size_t)k_len);
    if (rows > most) rows = most;
    return rows < mr ? mr : rows / mr * mr;
}

/* Rows per block of the whole-k grid. */
static int64_t uncut_rows(const cpu_packed *p) { return block_rows(p, p->k, INT64_MAX); }

/* The packing's k chunk and the row count from which runs cut k by it
 * (INT64_MAX: never), by the rules above; only where the path's kernels
 * can go on from a stored sum. */
static void pick_k_chunk(cpu_packed *p, size_t weight_bytes)
{
    int64_t kc = GEMM_CHUNK_W_BYTES / ((int64_t)p->nr * (int64_t)p->esz) / p->gp->kstep * p->gp->kstep;
    p->kc = p->kpad;
    p->cut_from = INT64_MAX;
    if (!p->kernels->tile_add || kc < 1 || kc >= p->kpad) return;
    if ((size_t)p->panel_elems * p->esz > GEMM_CHUNK_PANEL_BYTES) p->cut_from = 2 * p->gp->mr + 1;
    else if (weight_bytes > GEMM_CHUNK_WEIGHT_BYTES) p->cut_from = uncut_rows(p) + 1;
    if (p->cut_from < INT64_MAX) p->kc = kc;
}

/* Whether a run of m rows cuts k. */
static bool cuts_k(const cpu_packed *p, int64_t m) { return m >= p->cut_from; }

static cpu_packed *pack(cpu_path path, fmlp_dtype dtype, const void *w0, const void *b0, const void *w1,
                        const void *b1, int64_t n, int64_t k, bool glu)
{
    if ((dtype != FMLP_F32 && dtype != FMLP_BF16) || n < 1 || k < 1 || !w0 || (glu && !w1)) return NULL;
    path = cpu_path_for_dtype(path, dtype);
    if (!cpu_path_available(path, NULL)) return NULL;
    const gemm_path *gp = &cpu_path_table[path].gemm;
    const gemm_kernels *kernels = dtype == FMLP_F32 ? &gp->f32 : &gp->bf16;
    if (!kernels->tile) return NULL; /* a table row whose f32 names a bf16-only path */
    cpu_packed *p = fmlp_calloc(1, sizeof *p);
    if (!p) return NULL;
    p->path = path;
    p->gp = gp;
    p->kernels = kernels;
    p->dtype = dtype;
    p->glu = glu;
    p->pairs = dtype == FMLP_BF16 && gp->pairs;
    p->n = n;
    p->k = k;
    p->nr = gp->nr;
    p->kpad = (k + gp->kstep - 1) / gp->kstep * gp->kstep;
    int outs = gemm_panel_outs(p);
    p->panels = (n + outs - 1) / outs;
    p->panel_elems = p->kpad * p->nr;
    size_t esz = fmlp_dtype_size(dtype);
    p->esz = esz;
    if ((uint64_t)p->panels > SIZE_MAX / esz / (uint64_t)p->panel_elems) {
        free(p);
        return NULL;
    }
    size_t bytes = ((size_t)p->panels * (size_t)p->panel_elems * esz + 63) / 64 * 64;
    p->w = alloc_weights(bytes);
    if (!p->w || !fill_bias(p, b0, b1)) {
        cpu_packed_free(p);
        return NULL;
    }
    pick_k_chunk(p, bytes);
    fill_panels(p, w0, w1);
    return p;
}

bool cpu_packed_set_k_chunk(cpu_packed *p, int64_t kc)
{
    if (!p || kc < 1 || kc % p->gp->kstep) return false;
    if (kc >= p->kpad) {
        p->kc = p->kpad;
        p->cut_from = INT64_MAX;
        return true;
    }
    if (!p->kernels->tile_add) return false;
    p->kc = kc;
    p->cut_from = 1;
    return true;
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

int64_t cpu_packed_k_chunk(const cpu_packed *p, int64_t m) { return cuts_k(p, m) ? p->kc : p->kpad; }

/* Below this many multiply-adds a second thread's wake-up costs more than
 * it saves. */
#define GEMM_MIN_PARALLEL_MACS (64 * 1024)
/* Work is handed out in units of one row block by a group of panels, sized
 * to about this many multiply-adds: small enough that a thread slowed by
 * other load on its core leaves its share to the others, large enough that
 * claiming a unit costs nothing. */
#define GEMM_UNIT_MACS (4 * 1024 * 1024)
/* A unit's panels are re-read by each of its row tiles, from L2 (1 MB per
 * core on the machines this was tuned on) next to the tile's A rows. */
#define GEMM_GROUP_BYTES (512 * 1024)

/* How one call cuts C into units; a function of the shape alone. */
typedef struct {
    int64_t mc, row_blocks; /* rows per block: a multiple of the tile, or all m */
    int64_t pg, groups;     /* panels per group */
} gemm_grid;

/* A block's sums between k chunks, in a buffer each thread allocates for
 * the call: every row tile of every panel of the block keeps mr x nr floats
 * there. */
#define GEMM_CHUNK_ACC_FLOATS (16 * 1024)

/* Rows of the block's row tiles, rounded up to whole tiles. */
static int64_t tile_rows(int64_t rows, int mr) { return (rows + mr - 1) / mr * mr; }

/* With k cut: a block's A chunk (mc rows x kc) stays in L2 while the
 * group's panels pass, each panel's chunk in L1 while the row tiles pass;
 * the group is as large as the chunk sums' buffer holds. */
static gemm_grid grid_chunked(const cpu_packed *p, int64_t m, int nthreads)
{
    gemm_grid g;
    int64_t mr = p->gp->mr;
    g.mc = block_rows(p, p->kc, GEMM_CHUNK_ACC_FLOATS / p->nr);
    if (g.mc > m) g.mc = m;
    g.row_blocks = (m + g.mc - 1) / g.mc;
    g.pg = GEMM_CHUNK_ACC_FLOATS / (tile_rows(g.mc, (int)mr) * p->nr);
    int64_t cap = (p->panels + 4 * nthreads - 1) / (4 * nthreads);
    if (g.row_blocks < 4 * nthreads && g.pg > cap) g.pg = cap;
    if (g.pg < 1) g.pg = 1;
    g.groups = (p->panels + g.pg - 1) / g.pg;
    return g;
}

static gemm_grid grid_for(const cpu_packed *p, int64_t m, int nthreads)
{
    if (cuts_k(p, m)) return grid_chunked(p, m, nthreads);
    gemm_grid g;
    /* Below the row count that would cut k, all rows in one block: a
     * second block reads every weight from memory again, which cost more
     * than A's rows spilling out of L2 (16 rows of the Llama-3-8B down
     * projection, k = 14336, in blocks of 12 and 4 rows: 1.9x slower,
     * bench/results/cpu_one_block_2026-12-08.md) */
    g.mc = p->cut_from < INT64_MAX ? m : uncut_rows(p);
    if (g.mc > m) g.mc = m;
    g.row_blocks = (m + g.mc - 1) / g.mc;
    int64_t per_panel = g.mc * p->nr * p->k;
    g.pg = (GEMM_UNIT_MACS + per_panel - 1) / per_panel;
    /* At least a few units per thread when the rows alone do not give them. */
    int64_t cap = (p->panels + 4 * nthreads - 1) / (4 * nthreads);
    if (g.row_blocks < 4 * nthreads && g.pg > cap) g.pg = cap;
    if (g.mc <= GEMM_WIDE_ROWS) {
        /* One pass over the weights, no reuse to keep: whole wide tiles,
         * where the path has wide kernels and the groups still give every
         * thread one (the 768-wide down projection's 24 panels in groups of
         * 4 kept 16 threads to 6 units at one row). */
        const int64_t wide = (g.pg + GEMM_WIDE - 1) / GEMM_WIDE * GEMM_WIDE;
        if (p->kernels->wide && (p->panels + wide - 1) / wide >= nthreads) g.pg = wide;
    } else {
        /* Several row tiles walk the group: it must stay in L2. */
        int64_t fit = GEMM_GROUP_BYTES / (p->panel_elems * (int64_t)p->esz);
        if (g.pg > fit) g.pg = fit;
    }
    if (g.pg < 1) g.pg = 1;
    g.groups = (p->panels + g.pg - 1) / g.pg;
    return g;
}

typedef struct {
    gemm_call g;
    gemm_grid grid;
    bool cut;          /* k cut into chunks (grid_chunked's grid) */
    atomic_llong next; /* the next unclaimed unit */
} gemm_task;

int cpu_gemm_threads(cpu_pool *pool, const cpu_packed *p, int64_t m)
{
    if (!pool || m < 1) return 1;
    int nt = cpu_pool_threads(pool);
    double macs = (double)m * (double)p->panels * p->nr * (double)p->k;
    if (nt <= 1 || macs < GEMM_MIN_PARALLEL_MACS) return 1;
    gemm_grid g = grid_for(p, m, nt);
    int64_t units = g.row_blocks * g.groups;
    return units < nt ? (int)units : nt;
}

/* The A rows from row i on. */
static const void *a_rows(const gemm_call *g, int64_t i)
{
    return (const char *)g->A + (size_t)(i * g->lda) * g->p->esz;
}

/* One tile: rows [i, i + rows) by `panels` panels from `panel`, then the
 * epilogue of each panel. */
static void gemm_tile(const gemm_call *g, gemm_ukernel kernel, int panels, int rows, int64_t i, int64_t panel,
                      float *acc)
{
    const cpu_packed *p = g->p;
    kernel(rows, a_rows(g, i), g->lda, gemm_panel(p, panel), p->panel_elems, p->k, acc);
    for (int q = 0; q < panels; q++) p->gp->epilogue(g, acc + q * rows * p->nr, rows, i, panel + q);
}

/* C rows [m0, m1) for panels [p0, p1), full k, epilogue included. */
static void gemm_block(const gemm_call *g, int64_t m0, int64_t m1, int64_t p0, int64_t p1)
{
    const cpu_packed *p = g->p;
    const gemm_path *gp = p->gp;
    gemm_ukernel tile = p->kernels->tile, wide = p->kernels->wide;
    float acc[GEMM_ACC_FLOATS] __attribute__((aligned(64)));
    if (gp->enter) gp->enter((int)(m1 - m0));
    if (wide && m1 - m0 <= GEMM_WIDE_ROWS) {
        /* All the block's rows in one tile, GEMM_WIDE panels at a time. */
        int rows = (int)(m1 - m0);
        int64_t panel = p0;
        for (; p1 - panel >= GEMM_WIDE; panel += GEMM_WIDE) gemm_tile(g, wide, GEMM_WIDE, rows, m0, panel, acc);
        for (; panel < p1; panel++) gemm_tile(g, tile, 1, rows, m0, panel, acc);
    } else if (gp->order == GEMM_ROWS_OUTSIDE) {
        int64_t ntiles = (m1 - m0 + gp->mr - 1) / gp->mr;
        for (int t = 0; t < ntiles; t++) {
            int64_t lo, hi;
            cpu_split(m1 - m0, (int)ntiles, t, &lo, &hi);
            for (int64_t panel = p0; panel < p1; panel++) gemm_tile(g, tile, 1, (int)(hi - lo), m0 + lo, panel, acc);
        }
    } else {
        for (int64_t panel = p0; panel < p1; panel++)
            for (int64_t i = m0; i < m1; i += gp->mr)
                gemm_tile(g, tile, 1, m1 - i < gp->mr ? (int)(m1 - i) : gp->mr, i, panel, acc);
    }
    if (gp->leave) gp->leave();
}

/* gemm_block with k cut into chunks: each chunk of each panel in turn
 * across the block's row tiles (cpu_split's balanced ones), the sums kept
 * in chunk_acc (GEMM_CHUNK_ACC_FLOATS), then every tile's epilogue. */
static void gemm_block_chunked(const gemm_call *g, float *chunk_acc, int64_t m0, int64_t m1, int64_t p0, int64_t p1)
{
    const cpu_packed *p = g->p;
    const gemm_path *gp = p->gp;
    const size_t esz = p->esz;
    const int ntiles = (int)((m1 - m0 + gp->mr - 1) / gp->mr);
    const int64_t slot = (int64_t)gp->mr * p->nr;
    if (gp->enter) gp->enter((int)(m1 - m0));
    for (int64_t k0 = 0; k0 < p->k; k0 += p->kc) {
        const int64_t len = p->k - k0 < p->kc ? p->k - k0 : p->kc;
        const gemm_ukernel kernel = k0 ? p->kernels->tile_add : p->kernels->tile;
        for (int64_t panel = p0; panel < p1; panel++) {
            const char *w = (const char *)gemm_panel(p, panel) + (size_t)(k0 * p->nr) * esz;
            for (int t = 0; t < ntiles; t++) {
                int64_t lo, hi;
                cpu_split(m1 - m0, ntiles, t, &lo, &hi);
                kernel((int)(hi - lo), (const char *)a_rows(g, m0 + lo) + (size_t)k0 * esz, g->lda, w,
                       p->panel_elems, len, chunk_acc + ((panel - p0) * ntiles + t) * slot);
            }
        }
    }
    for (int64_t panel = p0; panel < p1; panel++)
        for (int t = 0; t < ntiles; t++) {
            int64_t lo, hi;
            cpu_split(m1 - m0, ntiles, t, &lo, &hi);
            gp->epilogue(g, chunk_acc + ((panel - p0) * ntiles + t) * slot, (int)(hi - lo), m0 + lo, panel);
        }
    if (gp->leave) gp->leave();
}

/* Units go row block by row block, so the threads share the A block they
 * work on; which thread computes a unit never changes its bits. */
static void gemm_task_run(void *arg, int tid, int nthreads)
{
    gemm_task *t = arg;
    const gemm_grid *gr = &t->grid;
    int64_t units = gr->row_blocks * gr->groups;
    (void)tid;
    (void)nthreads;
    /* without the buffer (out of memory) whole-k blocks give the same bits */
    float *sums = t->cut ? fmlp_aligned_alloc(64, sizeof(float) * GEMM_CHUNK_ACC_FLOATS) : NULL;
    for (;;) {
        int64_t u = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
        if (u >= units) break;
        int64_t m0 = u / gr->groups * gr->mc, p0 = u % gr->groups * gr->pg;
        int64_t m1 = m0 + gr->mc < t->g.m ? m0 + gr->mc : t->g.m;
        int64_t p1 = p0 + gr->pg < t->g.p->panels ? p0 + gr->pg : t->g.p->panels;
        if (sums) gemm_block_chunked(&t->g, sums, m0, m1, p0, p1);
        else gemm_block(&t->g, m0, m1, p0, p1);
    }
    free(sums);
}

void cpu_gemm_run(cpu_pool *pool, const cpu_packed *p, fmlp_act act, const void *A, int64_t lda, void *C,
                  int64_t ldc, int64_t m, cpu_lane_time *times)
{
    if (m < 1) return;
    int nthreads = cpu_gemm_threads(pool, p, m);
    gemm_task t = {
        .g = {.p = p, .act = act, .A = A, .lda = lda, .C = C, .ldc = ldc, .m = m},
        .grid = grid_for(p, m, nthreads),
        .cut = cuts_k(p, m),
    };
    atomic_init(&t.next, 0);
    if (pool) {
        cpu_pool_run(pool, nthreads, gemm_task_run, &t, times);
        return;
    }
    if (times) times[0].t0_ns = fmlp_now_ns();
    gemm_task_run(&t, 0, 1);
    if (times) {
        times[0].t1_ns = fmlp_now_ns();
        times[0].os_tid = fmlp_thread_id();
    }
}
