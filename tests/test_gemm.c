/* Why: the CPU GEMM kernels are where the speed is, so they are where the
 * bugs would be: tails of every tile dimension, strides, odd k for the
 * pairwise bf16 layout, epilogues, IEEE specials and the thread partition.
 * Every available path and dtype runs against a double reference computed
 * here from the stored (rounded) inputs (normwise error, see rel_err);
 * outputs are poisoned before each run and the gaps between rows must
 * survive untouched. Buffers are sized
 * exactly, so a read or write past A or C trips the sanitizers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/act_ref.h"
#include "core/alloc.h"
#include "cpu/path.h"
#include "cpu/gemm.h"
#include "cpu/pool.h"
#include "test_util.h"

/* One problem: inputs as stored, and as doubles for the reference. */
typedef struct {
    fmlp_dtype dt;
    int64_t m, n, k, lda, ldc;
    bool glu, bias;
    void *A, *w0, *w1, *b0, *b1;
    double *A64, *w064, *w164, *b064, *b164;
} problem;

static size_t esz(fmlp_dtype dt) { return dt == FMLP_F32 ? 4 : 2; }

static void *filled(fmlp_dtype dt, int64_t n, double **as64)
{
    void *p = malloc((size_t)n * esz(dt));
    *as64 = malloc((size_t)n * sizeof(double));
    if (!p || !*as64) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    tu_fill(dt, p, n, -1.0, 1.0, *as64);
    return p;
}

static problem make(fmlp_dtype dt, int64_t m, int64_t n, int64_t k, bool glu, bool bias, bool strided)
{
    problem q = {.dt = dt, .m = m, .n = n, .k = k, .glu = glu, .bias = bias};
    q.lda = strided ? k + 5 : k;
    q.ldc = strided ? n + 3 : n;
    /* Exactly (m-1) strides plus one row: nothing to spare past the end. */
    q.A = filled(dt, (m - 1) * q.lda + k, &q.A64);
    q.w0 = filled(dt, n * k, &q.w064);
    if (glu) q.w1 = filled(dt, n * k, &q.w164);
    if (bias) q.b0 = filled(dt, n, &q.b064);
    if (bias && glu) q.b1 = filled(dt, n, &q.b164);
    return q;
}

static void release(problem *q)
{
    void *all[] = {q->A, q->w0, q->w1, q->b0, q->b1, q->A64, q->w064, q->w164, q->b064, q->b164};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

static double dot(const problem *q, const double *w, const double *b, int64_t i, int64_t j)
{
    double s = b ? b[j] : 0.0;
    for (int64_t kk = 0; kk < q->k; kk++) s += q->A64[i * q->lda + kk] * w[j * q->k + kk];
    return s;
}

static double abs_dot(const problem *q, const double *w, const double *b, int64_t i, int64_t j)
{
    double s = b ? fabs(b[j]) : 0.0;
    for (int64_t kk = 0; kk < q->k; kk++) s += fabs(q->A64[i * q->lda + kk] * w[j * q->k + kk]);
    return s;
}

/* (m, n) reference, row stride n; *scale gets the norm of the magnitudes
 * behind it (sum |a w| + |b| per dot product, multiplied for a GLU). */
static double *reference(const problem *q, fmlp_act act, double *scale)
{
    double *ref = malloc((size_t)(q->m * q->n) * sizeof(double));
    if (!ref) exit(1);
    double s2 = 0;
    for (int64_t i = 0; i < q->m; i++)
        for (int64_t j = 0; j < q->n; j++) {
            double v = fmlp_act_ref(act, dot(q, q->w064, q->b064, i, j)), s = abs_dot(q, q->w064, q->b064, i, j);
            if (q->glu) {
                v *= dot(q, q->w164, q->b164, i, j);
                s *= abs_dot(q, q->w164, q->b164, i, j);
            }
            ref[i * q->n + j] = v;
            s2 += s * s;
        }
    *scale = sqrt(s2);
    return ref;
}

/* ||out - ref|| / ||ref||, with ||ref|| floored at scale / sqrt(k): when
 * the exact result cancels to nearly nothing (a relu'd gate just above 0,
 * a 1x1 output) rounding noise of that size is all any f32 GEMM can give.
 * NaN where the reference is finite (an unwritten element) is +Inf. */
static double rel_err(const problem *q, const void *C, const double *ref, double scale)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < q->m; i++)
        for (int64_t j = 0; j < q->n; j++) {
            double x = tu_get(q->dt, C, i * q->ldc + j), y = ref[i * q->n + j];
            if (isnan(x) && !isnan(y)) return INFINITY;
            num += (x - y) * (x - y);
            den += y * y;
        }
    double floor = scale / sqrt((double)q->k);
    return sqrt(num) / fmax(sqrt(den), floor);
}

static cpu_packed *pack(cpu_path path, const problem *q)
{
    if (q->glu) return cpu_gemm_pack_glu(path, q->dt, q->w0, q->b0, q->w1, q->b1, q->n, q->k);
    return cpu_gemm_pack(path, q->dt, q->w0, q->b0, q->n, q->k);
}

/* Runs into a poisoned C; returns C (caller frees). *gaps_ok: the elements
 * between rows still hold the poison. */
static void *run(cpu_pool *pool, const cpu_packed *p, const problem *q, fmlp_act act, bool *gaps_ok)
{
    int64_t count = (q->m - 1) * q->ldc + q->n;
    void *C = malloc((size_t)count * esz(q->dt)), *poison = malloc(esz(q->dt));
    if (!C || !poison) exit(1);
    tu_poison(q->dt, C, count);
    tu_poison(q->dt, poison, 1);
    cpu_gemm_run(pool, p, act, q->A, q->lda, C, q->ldc, q->m, NULL);
    *gaps_ok = true;
    for (int64_t i = 0; i + 1 < q->m; i++)
        for (int64_t j = q->n; j < q->ldc; j++)
            if (memcmp((char *)C + (size_t)(i * q->ldc + j) * esz(q->dt), poison, esz(q->dt))) *gaps_ok = false;
    free(poison);
    return C;
}

/* Error of one run against the reference; +Inf when a gap was touched. */
static double check_once(cpu_pool *pool, cpu_path path, fmlp_dtype dt, int64_t m, int64_t n, int64_t k, bool glu,
                         bool bias, fmlp_act act)
{
    problem q = make(dt, m, n, k, glu, bias, true);
    cpu_packed *p = pack(path, &q);
    if (!p) {
        release(&q);
        return INFINITY;
    }
    bool gaps_ok;
    void *C = run(pool, p, &q, act, &gaps_ok);
    double scale;
    double *ref = reference(&q, act, &scale);
    double err = gaps_ok ? rel_err(&q, C, ref, scale) : INFINITY;
    free(C);
    free(ref);
    cpu_packed_free(p);
    release(&q);
    return err;
}

/* Every activation x {plain, GLU} x {bias, none} on two awkward shapes. */
static void test_epilogues(cpu_pool *pool, cpu_path path, fmlp_dtype dt)
{
    for (int a = 0; a < FMLP_ACT_COUNT; a++)
        for (int glu = 0; glu < 2; glu++)
            for (int bias = 0; bias < 2; bias++) {
                double e1 = check_once(pool, path, dt, 17, 33, 129, glu, bias, (fmlp_act)a);
                double e2 = check_once(pool, path, dt, 3, 17, 3, glu, bias, (fmlp_act)a);
                double e = e1 > e2 ? e1 : e2;
                tu_check(e <= tu_tol(dt), "%s %s %s %s%s: rel err %.2e (17x33x129, 3x17x3, strided)",
                         cpu_path_name(path), fmlp_dtype_name(dt), fmlp_act_name((fmlp_act)a), glu ? "glu" : "plain",
                         bias ? "+bias" : "", e);
            }
}

/* Every m x n x k of the grid, epilogue variants rotating over the shapes. */
static void test_shapes(cpu_pool *pool, cpu_path path, fmlp_dtype dt)
{
    /* 15: the last row count whose AMX tiles are cut to its rows; 16: the first whose are not */
    static const int64_t ms[] = {1, 3, 15, 16, 17, 100}, nks[] = {1, 3, 17, 33, 64, 129};
    int variant = 0;
    for (int mi = 0; mi < (int)(sizeof ms / sizeof ms[0]); mi++) {
        double worst = 0;
        for (int ni = 0; ni < 6; ni++)
            for (int ki = 0; ki < 6; ki++, variant++) {
                if (ms[mi] == 100 && nks[ni] * nks[ki] > 64 * 64 && (ni + ki) % 2) continue;
                double e = check_once(pool, path, dt, ms[mi], nks[ni], nks[ki], variant % 2, variant / 2 % 2,
                                      (fmlp_act)(variant % FMLP_ACT_COUNT));
                if (!(e <= worst)) worst = e;
            }
        tu_check(worst <= tu_tol(dt), "%s %s m=%lld, n,k in {1,3,17,33,64,129}: worst rel err %.2e",
                 cpu_path_name(path), fmlp_dtype_name(dt), (long long)ms[mi], worst);
    }
}

static bool ieee_match(double got, double want)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return isfinite(got);
}

/* NaN in row 0 and +Inf in row 1 of A must come out as PyTorch's
 * arithmetic says (NaN everywhere in row 0; row 1 per activation). */
static void test_specials(cpu_pool *pool, cpu_path path, fmlp_dtype dt)
{
    for (int a = 0; a < FMLP_ACT_COUNT; a++)
        for (int glu = 0; glu < 2; glu++) {
            problem q = make(dt, 3, 19, 7, glu, true, false);
            double inf = INFINITY, nan = NAN;
            fmlp_dtype d = q.dt;
            if (d == FMLP_F32) {
                ((float *)q.A)[2] = (float)nan;
                ((float *)q.A)[q.lda + 3] = (float)inf;
            } else {
                ((uint16_t *)q.A)[2] = 0x7fc0;
                ((uint16_t *)q.A)[q.lda + 3] = 0x7f80;
            }
            q.A64[2] = nan;
            q.A64[q.lda + 3] = inf;
            cpu_packed *p = pack(path, &q);
            bool gaps_ok, ok = p != NULL;
            if (p) {
                void *C = run(pool, p, &q, (fmlp_act)a, &gaps_ok);
                double scale;
                double *ref = reference(&q, (fmlp_act)a, &scale);
                for (int64_t i = 0; i < q.m * q.n; i++) ok = ok && ieee_match(tu_get(d, C, i), ref[i]);
                free(C);
                free(ref);
            }
            tu_check(ok, "%s %s %s %s: NaN and Inf inputs propagate as IEEE says", cpu_path_name(path),
                     fmlp_dtype_name(dt), fmlp_act_name((fmlp_act)a), glu ? "glu" : "plain");
            cpu_packed_free(p);
            release(&q);
        }
}

/* Bit-identical results on 1 and 2 threads, for a row split, a panel split
 * and a panel split of a small-row (wide-tile) block; the lanes the profiler
 * gets are filled. */
static void test_threads(cpu_pool *one, cpu_pool *two, cpu_path path, fmlp_dtype dt)
{
    static const int64_t shapes[][3] = {{100, 129, 129}, {5, 300, 200}, {2, 700, 64}};
    for (int s = 0; s < 3; s++) {
        problem q = make(dt, shapes[s][0], shapes[s][1], shapes[s][2], s == 1, true, true);
        cpu_packed *p = pack(path, &q);
        if (!p) {
            tu_check(false, "%s %s: pack failed", cpu_path_name(path), fmlp_dtype_name(dt));
            release(&q);
            continue;
        }
        bool g1, g2;
        void *c1 = run(one, p, &q, FMLP_ACT_GELU, &g1), *c2 = run(two, p, &q, FMLP_ACT_GELU, &g2);
        size_t bytes = (size_t)((q.m - 1) * q.ldc + q.n) * esz(dt);
        int lanes = cpu_gemm_threads(two, p, q.m);
        tu_check(lanes == 2 && !memcmp(c1, c2, bytes), "%s %s %lldx%lldx%lld: 1 and %d threads bit-identical",
                 cpu_path_name(path), fmlp_dtype_name(dt), (long long)q.m, (long long)q.n, (long long)q.k, lanes);
        cpu_lane_time times[2] = {{0, 0, 0}, {0, 0, 0}};
        cpu_gemm_run(two, p, FMLP_ACT_GELU, q.A, q.lda, c2, q.ldc, q.m, times);
        bool filled = true;
        for (int t = 0; t < lanes; t++) filled = filled && times[t].t0_ns > 0 && times[t].t1_ns >= times[t].t0_ns;
        tu_check(filled, "%s %s: per-thread times filled for %d lanes", cpu_path_name(path), fmlp_dtype_name(dt),
                 lanes);
        free(c1);
        free(c2);
        cpu_packed_free(p);
        release(&q);
    }
}

/* k cut into chunks: every chunk length gives the uncut sum's bits (the
 * kernels go on from the stored f32 sums), on 1 and 2 threads, within the
 * reference's tolerance; the packing cuts a long panel by itself and
 * leaves the tutorial's alone. Paths whose kernels cannot go on from a
 * stored sum refuse a cut. */
static void test_k_chunks(cpu_pool *one, cpu_pool *two, cpu_path path, fmlp_dtype dt)
{
    static const int64_t shapes[][4] = {{17, 33, 1100, 0}, {100, 40, 777, 1}, {2, 70, 513, 0}, {1, 9, 300, 1}};
    static const int64_t chunks[] = {2, 14, 64, 250};
    for (int s = 0; s < 4; s++) {
        problem q = make(dt, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3] != 0, true, true);
        cpu_packed *p = pack(path, &q);
        if (!p) {
            tu_check(false, "%s %s: pack failed", cpu_path_name(path), fmlp_dtype_name(dt));
            release(&q);
            continue;
        }
        bool gaps, all_gaps = true, same = true;
        /* whole k: k rounded up to a multiple of every path's k step */
        same = cpu_packed_set_k_chunk(p, (q.k + 31) / 32 * 32) && cpu_packed_k_chunk(p, q.m) >= q.k;
        void *whole = run(two, p, &q, FMLP_ACT_GELU_TANH, &gaps);
        all_gaps = gaps;
        if (!cpu_packed_set_k_chunk(p, 64)) {
            tu_check(same && cpu_packed_k_chunk(p, q.m) >= q.k, "%s %s: no k chunks on kernels that cannot go on from a sum",
                     cpu_path_name(path), fmlp_dtype_name(dt));
            free(whole);
            cpu_packed_free(p);
            release(&q);
            return;
        }
        for (int c = 0; c < 4; c++) {
            same = same && cpu_packed_set_k_chunk(p, chunks[c]) && cpu_packed_k_chunk(p, q.m) == chunks[c];
            void *cut = run(c % 2 ? one : two, p, &q, FMLP_ACT_GELU_TANH, &gaps);
            all_gaps = all_gaps && gaps;
            same = same && !memcmp(whole, cut, (size_t)((q.m - 1) * q.ldc + q.n) * esz(dt));
            free(cut);
        }
        /* without memory for the chunks' sums, whole-k blocks on the cut grid */
        cpu_packed_set_k_chunk(p, 64);
        fmlp_alloc_test_arm(0, 1024);
        void *starved = run(two, p, &q, FMLP_ACT_GELU_TANH, &gaps);
        fmlp_alloc_test_disarm();
        all_gaps = all_gaps && gaps;
        same = same && !memcmp(whole, starved, (size_t)((q.m - 1) * q.ldc + q.n) * esz(dt));
        free(starved);
        double scale;
        double *ref = reference(&q, FMLP_ACT_GELU_TANH, &scale);
        double err = rel_err(&q, whole, ref, scale);
        tu_check(same && all_gaps && err <= tu_tol(dt),
                 "%s %s %lldx%lldx%lld%s: chunks of 2, 14, 64, 250 and none for want of memory give the uncut bits, 1 and 2 threads (rel err %.2e)",
                 cpu_path_name(path), fmlp_dtype_name(dt), (long long)q.m, (long long)q.n, (long long)q.k,
                 q.glu ? " glu" : "", err);
        if (s == 0)
            tu_check(!cpu_packed_set_k_chunk(p, 0) && !cpu_packed_set_k_chunk(NULL, 8),
                     "%s %s: chunk 0 and no packing refused", cpu_path_name(path), fmlp_dtype_name(dt));
        free(ref);
        free(whole);
        cpu_packed_free(p);
        release(&q);
    }
    /* 13000 x 8 columns of bf16 already pass the cut's panel limit; 40
     * rows are more than two row tiles on every path that cuts (12 rows
     * the largest) */
    problem q = make(dt, 40, 20, 13000, false, true, false);
    cpu_packed *p = pack(path, &q);
    problem tut = make(dt, 1, 3072, 768, true, false, false);
    cpu_packed *pt = pack(path, &tut);
    if (p && pt) {
        int64_t picked = cpu_packed_k_chunk(p, q.m);
        bool gaps;
        void *cut = run(two, p, &q, FMLP_ACT_SILU, &gaps);
        cpu_packed_set_k_chunk(p, q.k);
        void *whole = run(two, p, &q, FMLP_ACT_SILU, &gaps);
        tu_check(picked < q.k && cpu_packed_k_chunk(p, 1) >= q.k && !memcmp(cut, whole, (size_t)(q.m * q.n) * esz(dt)) &&
                     cpu_packed_k_chunk(pt, 1) >= tut.k && cpu_packed_k_chunk(pt, 8192) >= tut.k,
                 "%s %s: k = 13000 cut at 40 rows by default (chunk %lld, the uncut bits), not at 1; the tutorial's GLU not",
                 cpu_path_name(path), fmlp_dtype_name(dt), (long long)picked);
        free(cut);
        free(whole);
    } else {
        tu_check(false, "%s %s: pack failed", cpu_path_name(path), fmlp_dtype_name(dt));
    }
    cpu_packed_free(p);
    cpu_packed_free(pt);
    release(&q);
    release(&tut);
    if (dt != FMLP_F32) return;
    /* 36 MB of f32 weights in panels short enough for whole k: cut only
     * where more than one block of rows would read them again */
    problem big = make(dt, 1, 3000, 3000, false, false, false);
    cpu_packed *pb = pack(path, &big);
    tu_check(pb && cpu_packed_k_chunk(pb, 1) >= big.k && cpu_packed_k_chunk(pb, 200) < big.k,
             "%s %s: 3000 x 3000 weights (36 MB) whole-k at 1 row, cut at 200", cpu_path_name(path),
             fmlp_dtype_name(dt));
    cpu_packed_free(pb);
    release(&big);
}

/* The path table's contract: names round-trip, scalar runs anywhere and is
 * listed first, the best path is the first available one, and every
 * available path packs both dtypes onto a path that is itself available. */
static void test_paths(void)
{
    bool names_ok = true, dtypes_ok = true;
    for (int i = 0; i < CPU_PATH_COUNT; i++) {
        cpu_path p = (cpu_path)i, back;
        names_ok = names_ok && cpu_path_parse(cpu_path_name(p), &back) && back == p;
        if (!cpu_path_available(p, NULL)) continue;
        for (int d = 0; d < 2; d++) {
            fmlp_dtype dt = d ? FMLP_BF16 : FMLP_F32;
            cpu_packed *probe = cpu_gemm_pack(p, dt, &(float){1.0f}, NULL, 1, 1);
            dtypes_ok = dtypes_ok && probe && cpu_packed_path(probe) == cpu_path_for_dtype(p, dt) &&
                        cpu_path_available(cpu_packed_path(probe), NULL);
            cpu_packed_free(probe);
        }
    }
    tu_check(names_ok, "every path name parses back to its path");
    tu_check(dtypes_ok, "every available path packs f32 and bf16 onto an available path");
    cpu_path none;
    tu_check(!cpu_path_parse("avx9", &none) && !cpu_path_parse(NULL, &none), "unknown path names are refused");
    tu_check(cpu_path_available(CPU_PATH_SCALAR, NULL) && cpu_path_listed(0) == CPU_PATH_SCALAR,
             "scalar is always available and listed first");
    cpu_path best = cpu_path_best();
    bool first = cpu_path_available(best, NULL);
    for (int i = 0; i < (int)best; i++) first = first && !cpu_path_available((cpu_path)i, NULL);
    tu_check(first, "the default path (%s) is the first available in order of preference", cpu_path_name(best));
}

static void test_pack_errors(void)
{
    float w = 1.0f;
    tu_check(!cpu_gemm_pack(CPU_PATH_SCALAR, FMLP_F32, &w, NULL, 0, 1), "pack refuses n = 0");
    tu_check(!cpu_gemm_pack(CPU_PATH_SCALAR, FMLP_F16, &w, NULL, 1, 1), "pack refuses f16 (no CPU kernels)");
    tu_check(!cpu_gemm_pack(CPU_PATH_SCALAR, FMLP_F32, &w, NULL, (int64_t)1 << 40, (int64_t)1 << 40),
             "pack of an impossible size returns NULL instead of crashing");
    cpu_packed_free(NULL);
}

int main(void)
{
    tu_seed();
    cpu_pool *one = cpu_pool_create(1), *two = cpu_pool_create(2);
    if (!one || !two) return 1;
    test_paths();
    test_pack_errors();
    for (int pi = 0; pi < CPU_PATH_COUNT; pi++) {
        cpu_path path = (cpu_path)pi;
        const char *why;
        if (!cpu_path_available(path, &why)) {
            tu_skip("%s: %s", cpu_path_name(path), why);
            continue;
        }
        for (int d = 0; d < 2; d++) {
            fmlp_dtype dt = d ? FMLP_BF16 : FMLP_F32;
            if (cpu_path_for_dtype(path, dt) != path) continue; /* the same kernels as another path */
            cpu_packed *probe = cpu_gemm_pack(path, dt, &(float){1.0f}, NULL, 1, 1);
            tu_check(probe && cpu_packed_path(probe) == path, "%s %s: packing reports the path it runs",
                     cpu_path_name(path), fmlp_dtype_name(dt));
            cpu_packed_free(probe);
            test_epilogues(two, path, dt);
            test_shapes(two, path, dt);
            test_specials(two, path, dt);
            test_threads(one, two, path, dt);
            test_k_chunks(one, two, path, dt);
        }
    }
    cpu_pool_destroy(one);
    cpu_pool_destroy(two);
    return tu_finish();
}
