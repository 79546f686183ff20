/* Why: the eager/compiled modes' pointwise passes (activation, gate*up
 * product, or both fused), split over the pool by rows, or by column chunks
 * when there are fewer rows than threads; the per-ISA row functions do the
 * arithmetic. Also the scalar activations: computed in double and rounded
 * once, they are the most accurate f32 values and the scalar path's truth. */
#include <math.h>

#include "core/clock.h"
#include "core/dtype.h"
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

static pw_row_fn row_fn(cpu_path path)
{
    switch (path) {
    case CPU_PATH_SCALAR: return pw_row_scalar;
    case CPU_PATH_AVX2: return pw_row_avx2;
    default: return pw_row_avx512;
    }
}

/* Below this many elements a pass stays on the calling thread. */
#define PW_MIN_PARALLEL 32768
/* Column chunks (when rows < threads) start on multiples of this. */
#define PW_CHUNK 64

int cpu_pointwise_threads(cpu_pool *pool, int64_t m, int64_t n)
{
    if (!pool || m < 1 || n < 1 || m * n < PW_MIN_PARALLEL) return 1;
    int nt = cpu_pool_threads(pool);
    int64_t units = m >= nt ? m : m * ((n + PW_CHUNK - 1) / PW_CHUNK);
    return units < nt ? (int)units : nt;
}

typedef struct {
    pw_row_fn fn;
    fmlp_dtype dt;
    cpu_pw_kind kind;
    fmlp_act act;
    const char *a, *b;
    char *out;
    int64_t lda, ldb, ldo, m, n;
    int nthreads;
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
    const pw_task *t = arg;
    (void)nthreads;
    int64_t lo, hi;
    if (t->m >= t->nthreads) {
        cpu_split(t->m, t->nthreads, tid, &lo, &hi);
        for (int64_t r = lo; r < hi; r++) segment(t, r, 0, t->n);
        return;
    }
    int64_t chunks = (t->n + PW_CHUNK - 1) / PW_CHUNK;
    cpu_split(t->m * chunks, t->nthreads, tid, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t c0 = u % chunks * PW_CHUNK, c1 = c0 + PW_CHUNK < t->n ? c0 + PW_CHUNK : t->n;
        segment(t, u / chunks, c0, c1);
    }
}

void cpu_pointwise_run(cpu_pool *pool, cpu_path path, fmlp_dtype dtype, cpu_pw_kind kind, fmlp_act act,
                       const void *a, int64_t lda, const void *b, int64_t ldb, void *out, int64_t ldo, int64_t m,
                       int64_t n, cpu_lane_time *times)
{
    pw_task t = {.fn = row_fn(path), .dt = dtype, .kind = kind, .act = act, .a = a, .b = b, .out = out,
                 .lda = lda, .ldb = ldb, .ldo = ldo, .m = m, .n = n,
                 .nthreads = cpu_pointwise_threads(pool, m, n)};
    if (m < 1 || n < 1) return;
    if (pool) {
        cpu_pool_run(pool, t.nthreads, pw_task_run, &t, times);
        return;
    }
    if (times) times[0].t0_ns = fmlp_now_ns();
    pw_task_run(&t, 0, 1);
    if (times) {
        times[0].t1_ns = fmlp_now_ns();
        times[0].os_tid = fmlp_thread_id();
    }
}
