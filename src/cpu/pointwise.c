/* Why: the eager/compiled modes' pointwise passes (activation, gate*up
 * product, or both fused), cut into units of rows (or of column chunks when
 * rows are few) that the pool's threads claim until none are left; the
 * path's row function (from the path table) does the arithmetic. Also the
 * scalar activations: computed in double and rounded once, they are the
 * most accurate f32 values and the scalar path's truth. */
#include <math.h>
#include <stdatomic.h>

#include "core/clock.h"
#include "core/dtype.h"
#include "cpu/path_table.h"
#include "cpu/pointwise_internal.h"

float cpu_act_f32(fmlp_act act, float x)
{
    double d = x;
    switch (act) {
    case FMLP_ACT_GELU: return (float)(0.5 * d * erfc(-d * M_SQRT1_2));
    case FMLP_ACT_GELU_TANH: {
        /* 0.5 x (1 + tanh(u)) written as x sigmoid(2u): no cancellation. */
        double u = sqrt(2.0 / M_PI) * (d + 0.044715 * d * d * d);
        return (float)(d / (1.0 + exp(-2.0 * u)));
    }
    case FMLP_ACT_SILU: return (float)(d / (1.0 + exp(-d)));
    case FMLP_ACT_RELU: return isnan(x) ? x : x > 0.0f ? x : 0.0f;
    case FMLP_ACT_RELU2: return isnan(x) ? x : x > 0.0f ? (float)(d * d) : 0.0f;
    default: return x;
    }
}

void pw_row_scalar(fmlp_dtype dt, cpu_pw_kind kind, fmlp_act act, const void *a, const void *b, void *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float x = fmlp_load(dt, a, i);
        float y = kind == CPU_PW_MUL ? x : cpu_act_f32(act, x);
        if (kind != CPU_PW_ACT) y *= fmlp_load(dt, b, i);
        fmlp_store(dt, out, i, y);
    }
}

/* Below this many elements a pass stays on the calling thread. */
#define PW_MIN_PARALLEL 32768
/* Threads claim units of about this many elements from a shared counter,
 * so a thread slowed by other load on its core leaves work to the others. */
#define PW_UNIT 16384
/* Column chunks (when rows are too few to share out) are multiples of this. */
#define PW_CHUNK 64

/* Units: `rows` whole rows each, or (when cols < n) one column chunk of one
 * row each; a function of the shape alone. */
typedef struct {
    int64_t rows, cols, per_row, count;
} pw_grid;

static pw_grid grid_for(int64_t m, int64_t n, int nthreads)
{
    pw_grid g = {.rows = 1, .cols = n, .per_row = 1};
    if (m >= 4 * nthreads) {
        g.rows = PW_UNIT / n > 1 ? PW_UNIT / n : 1;
        g.count = (m + g.rows - 1) / g.rows;
        return g;
    }
    int64_t want = (m * n + 4 * nthreads - 1) / (4 * nthreads);
    g.cols = (want + PW_CHUNK - 1) / PW_CHUNK * PW_CHUNK;
    if (g.cols > n) g.cols = n;
    g.per_row = (n + g.cols - 1) / g.cols;
    g.count = m * g.per_row;
    return g;
}

int cpu_pointwise_threads(cpu_pool *pool, int64_t m, int64_t n)
{
    if (!pool || m < 1 || n < 1 || m * n < PW_MIN_PARALLEL) return 1;
    int nt = cpu_pool_threads(pool);
    pw_grid g = grid_for(m, n, nt);
    return g.count < nt ? (int)g.count : nt;
}

typedef struct {
    pw_row_fn fn;
    fmlp_dtype dt;
    cpu_pw_kind kind;
    fmlp_act act;
    const char *a, *b;
    char *out;
    int64_t lda, ldb, ldo, m, n;
    pw_grid grid;
    atomic_llong next;
} pw_task;

static void segment(const pw_task *t, int64_t row, int64_t c0, int64_t c1)
{
    size_t esz = t->dt == FMLP_F32 ? 4 : 2;
    const char *b = t->b ? t->b + (size_t)(row * t->ldb + c0) * esz : NULL;
    t->fn(t->dt, t->kind, t->act, t->a + (size_t)(row * t->lda + c0) * esz, b,
          t->out + (size_t)(row * t->ldo + c0) * esz, c1 - c0);
}

static void pw_task_run(void *arg, int tid, int nthreads)
{
    pw_task *t = arg;
    const pw_grid *g = &t->grid;
    (void)tid;
    (void)nthreads;
    for (;;) {
        int64_t u = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
        if (u >= g->count) return;
        int64_t r0 = u / g->per_row * g->rows, r1 = r0 + g->rows < t->m ? r0 + g->rows : t->m;
        int64_t c0 = u % g->per_row * g->cols, c1 = c0 + g->cols < t->n ? c0 + g->cols : t->n;
        for (int64_t r = r0; r < r1; r++) segment(t, r, c0, c1);
    }
}

void cpu_pointwise_run(cpu_pool *pool, cpu_path path, fmlp_dtype dtype, cpu_pw_kind kind, fmlp_act act,
                       const void *a, int64_t lda, const void *b, int64_t ldb, void *out, int64_t ldo, int64_t m,
                       int64_t n, cpu_lane_time *times)
{
    if (m < 1 || n < 1) return;
    int nthreads = cpu_pointwise_threads(pool, m, n);
    pw_task t = {.fn = cpu_path_table[path].pw_row, .dt = dtype, .kind = kind, .act = act, .a = a, .b = b, .out = out,
                 .lda = lda, .ldb = ldb, .ldo = ldo, .m = m, .n = n, .grid = grid_for(m, n, nthreads)};
    atomic_init(&t.next, 0);
    if (pool) {
        cpu_pool_run(pool, nthreads, pw_task_run, &t, times);
        return;
    }
    if (times) times[0].t0_ns = fmlp_now_ns();
    pw_task_run(&t, 0, 1);
    if (times) {
        times[0].t1_ns = fmlp_now_ns();
        times[0].os_tid = fmlp_thread_id();
    }
}
