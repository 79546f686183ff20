/* Why: the eager and compiled modes' pointwise passes must match PyTorch's
 * arithmetic (widen, f32 math, one rounding) on every path, on strided
 * views, at every vector tail, with IEEE specials, and the vector
 * activations must stay within a few ulp of the double functions over the
 * whole f32 range that matters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/act_ref.h"
#include "core/dtype.h"
#include "cpu/path.h"
#include "cpu/pointwise.h"
#include "cpu/pool.h"
#include "test_util.h"

static const char *k_kinds[] = {"act", "mul", "glu"};

static double ref_op(cpu_pw_kind kind, fmlp_act act, double a, double b)
{
    return kind == CPU_PW_ACT ? fmlp_act_ref(act, a) : kind == CPU_PW_MUL ? a * b : fmlp_act_ref(act, a) * b;
}

static size_t esz(fmlp_dtype dt) { return dt == FMLP_F32 ? 4 : 2; }

static void *alloc_or_die(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

/* One strided pass against the double reference; gaps between output rows
 * must keep their poison. */
static double check_pass(cpu_pool *pool, cpu_path path, fmlp_dtype dt, cpu_pw_kind kind, fmlp_act act, int64_t m,
                         int64_t n)
{
    int64_t lda = n + 2, ldb = n + 7, ldo = n + 1;
    int64_t na = (m - 1) * lda + n, nb = (m - 1) * ldb + n, no = (m - 1) * ldo + n;
    void *a = alloc_or_die((size_t)na * esz(dt)), *b = alloc_or_die((size_t)nb * esz(dt));
    void *o = alloc_or_die((size_t)no * esz(dt)), *poison = alloc_or_die(esz(dt));
    double *a64 = alloc_or_die((size_t)na * sizeof(double)), *b64 = alloc_or_die((size_t)nb * sizeof(double));
    double *ref = alloc_or_die((size_t)(m * n) * sizeof(double));
    tu_fill(dt, a, na, -6.0, 6.0, a64);
    tu_fill(dt, b, nb, -2.0, 2.0, b64);
    tu_poison(dt, o, no);
    tu_poison(dt, poison, 1);
    cpu_pointwise_run(pool, path, dt, kind, act, a, lda, kind == CPU_PW_ACT ? NULL : b, ldb, o, ldo, m, n, NULL);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) ref[i * n + j] = ref_op(kind, act, a64[i * lda + j], b64[i * ldb + j]);
    double err = tu_rel_err(dt, o, ldo, ref, n, m, n);
    for (int64_t i = 0; i + 1 < m; i++)
        for (int64_t j = n; j < ldo; j++)
            if (memcmp((char *)o + (size_t)(i * ldo + j) * esz(dt), poison, esz(dt))) err = INFINITY;
    free(a);
    free(b);
    free(o);
    free(poison);
    free(a64);
    free(b64);
    free(ref);
    return err;
}

static void test_passes(cpu_pool *pool, cpu_path path, fmlp_dtype dt)
{
    static const int64_t shapes[][2] = {{1, 1}, {3, 7}, {2, 17}, {5, 33}, {4, 100}, {1, 5000}, {300, 129}};
    for (int kind = 0; kind < 3; kind++)
        for (int a = 0; a < FMLP_ACT_COUNT; a++) {
            if (kind == CPU_PW_MUL && a) continue;
            double worst = 0;
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                double e = check_pass(pool, path, dt, (cpu_pw_kind)kind, (fmlp_act)a, shapes[s][0], shapes[s][1]);
                if (!(e <= worst)) worst = e;
            }
            tu_check(worst <= tu_tol(dt), "%s %s %s%s%s: worst rel err %.2e over 7 strided shapes",
                     cpu_path_name(path), fmlp_dtype_name(dt), k_kinds[kind], kind == CPU_PW_MUL ? "" : " ",
                     kind == CPU_PW_MUL ? "" : fmlp_act_name((fmlp_act)a), worst);
        }
}

/* f32 activations against the double function over a dense sweep of
 * [-12, 12]: at most 8 ulp where the result is not tiny, except that
 * gelu_tanh's exp argument (up to ~20 in magnitude near x = -4) carries its
 * own f32 rounding, so below x = -3 it is held to a 4e-6 relative bound
 * instead. Results under 1e-30 are skipped: the input's rounding dominates
 * there. Below x = -5 PyTorch's formula cancels in double itself, so the
 * reference is x sigmoid(2u), the same function without the cancellation. */
static void test_accuracy(cpu_pool *pool, cpu_path path)
{
    enum { N = 48000 };
    float *x = alloc_or_die(N * 4), *y = alloc_or_die(N * 4);
    for (int i = 0; i < N; i++) x[i] = -12.0f + 24.0f * (float)i / N;
    for (int a = FMLP_ACT_NONE + 1; a < FMLP_ACT_COUNT; a++) {
        fmlp_act act = (fmlp_act)a;
        cpu_pointwise_run(pool, path, FMLP_F32, CPU_PW_ACT, act, x, N, NULL, 0, y, N, 1, N, NULL);
        double worst_ulp = 0, worst_rel = 0;
        for (int i = 0; i < N; i++) {
            double xd = x[i], r = fmlp_act_ref(act, xd);
            if (act == FMLP_ACT_GELU_TANH)
                r = xd / (1.0 + exp(-2.0 * sqrt(2.0 / M_PI) * (xd + 0.044715 * xd * xd * xd)));
            if (fabs(r) < 1e-30) continue;
            if (act == FMLP_ACT_GELU_TANH && x[i] < -3.0f) {
                double rel = fabs(y[i] - r) / fabs(r);
                if (rel > worst_rel) worst_rel = rel;
                continue;
            }
            float rf = (float)r;
            double u = fabs(y[i] - r) / fabs((double)nextafterf(rf, INFINITY) - rf);
            if (u > worst_ulp) worst_ulp = u;
        }
        char below[64] = "";
        if (act == FMLP_ACT_GELU_TANH)
            snprintf(below, sizeof below, " (x >= -3), %.1e relative below", worst_rel);
        tu_check(worst_ulp <= 8.0 && worst_rel <= 4e-6, "%s f32 %s: max error %.2f ulp on [-12, 12]%s",
                 cpu_path_name(path), fmlp_act_name(act), worst_ulp, below);
    }
    free(x);
    free(y);
}

static bool same_class(double got, double want)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    /* Below f32's normal range an exact exp-based result may flush to 0. */
    if (fabs(want) < 1.2e-38) return fabs(got) < 1.2e-38;
    return isfinite(got) && fabs(got - want) <= 1e-2 * fabs(want);
}

static void test_specials(cpu_pool *pool, cpu_path path, fmlp_dtype dt)
{
    static const double xs[] = {NAN, INFINITY, -INFINITY, 0.0, 1e30, -1e30, 100.0, -100.0, 3.0, -3.0, 1e-3};
    enum { N = sizeof xs / sizeof xs[0] };
    void *a = alloc_or_die(N * esz(dt)), *o = alloc_or_die(N * esz(dt));
    float as_f32[N];
    for (int i = 0; i < N; i++) as_f32[i] = (float)xs[i];
    fmlp_convert(dt, a, FMLP_F32, as_f32, N);
    for (int k = FMLP_ACT_NONE + 1; k < FMLP_ACT_COUNT; k++) {
        fmlp_act act = (fmlp_act)k;
        cpu_pointwise_run(pool, path, dt, CPU_PW_ACT, act, a, N, NULL, 0, o, N, 1, N, NULL);
        bool ok = true;
        for (int i = 0; i < N; i++) {
            /* f32 arithmetic's result: what overflows f32 is Inf */
            double want = (float)fmlp_act_ref(act, tu_get(dt, a, i)), got = tu_get(dt, o, i);
            if (!same_class(got, want)) {
                ok = false;
                printf("  %s(%g) = %g, want %g\n", fmlp_act_name(act), tu_get(dt, a, i), got, want);
            }
        }
        tu_check(ok, "%s %s %s: NaN, +-Inf, huge and zero inputs as PyTorch computes them", cpu_path_name(path),
                 fmlp_dtype_name(dt), fmlp_act_name(act));
    }
    free(a);
    free(o);
}

static void test_threads(cpu_pool *one, cpu_pool *two, cpu_path path)
{
    int64_t m = 3, n = 40000;
    float *a = alloc_or_die((size_t)(m * n) * 4), *b = alloc_or_die((size_t)(m * n) * 4);
    float *o1 = alloc_or_die((size_t)(m * n) * 4), *o2 = alloc_or_die((size_t)(m * n) * 4);
    tu_fill(FMLP_F32, a, m * n, -4, 4, NULL);
    tu_fill(FMLP_F32, b, m * n, -4, 4, NULL);
    cpu_pointwise_run(one, path, FMLP_F32, CPU_PW_GLU, FMLP_ACT_GELU, a, n, b, n, o1, n, m, n, NULL);
    cpu_lane_time times[2] = {{0, 0, 0}, {0, 0, 0}};
    cpu_pointwise_run(two, path, FMLP_F32, CPU_PW_GLU, FMLP_ACT_GELU, a, n, b, n, o2, n, m, n, times);
    int lanes = cpu_pointwise_threads(two, m, n);
    tu_check(lanes == 2 && !memcmp(o1, o2, (size_t)(m * n) * 4) && times[1].t1_ns >= times[1].t0_ns &&
                 times[1].t0_ns > 0,
             "%s: 2 threads (%d lanes, times filled) bit-identical to 1", cpu_path_name(path), lanes);
    tu_check(cpu_pointwise_threads(two, 1, 16) == 1, "%s: a tiny pass stays on one thread", cpu_path_name(path));
    free(a);
    free(b);
    free(o1);
    free(o2);
}

int main(void)
{
    tu_seed();
    cpu_pool *one = cpu_pool_create(1), *two = cpu_pool_create(2);
    if (!one || !two) return 1;
    for (int pi = 0; pi < CPU_PATH_COUNT; pi++) {
        cpu_path path = (cpu_path)pi;
        const char *why;
        if (!cpu_path_available(path, &why)) {
            tu_skip("%s: %s", cpu_path_name(path), why);
            continue;
        }
        for (int d = 0; d < 2; d++) {
            fmlp_dtype dt = d ? FMLP_BF16 : FMLP_F32;
            test_passes(two, path, dt);
            test_specials(two, path, dt);
        }
        test_accuracy(two, path);
        test_threads(one, two, path);
    }
    cpu_pool_destroy(one);
    cpu_pool_destroy(two);
    return tu_finish();
}
