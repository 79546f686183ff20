/* Why: shared test discipline (random data, poison, normwise error, the
 * summary line ctest logs show). See test_util.h. */
#include "test_util.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/dtype.h"

static uint64_t g_state;
static int g_pass, g_fail, g_skip;

void tu_seed(void)
{
    const char *s = getenv("FMLP_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    printf("seed %llu (replay with FMLP_TEST_SEED)\n", (unsigned long long)seed);
    g_state = seed * 0x9E3779B97F4A7C15ull + 1;
}

uint64_t tu_rand_u64(void)
{
    if (!g_state) tu_seed();
    uint64_t z = (g_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double tu_rand_uniform(double lo, double hi)
{
    for (;;) {
        double u = (double)(tu_rand_u64() >> 11) * (1.0 / 9007199254740992.0);
        double v = lo + (hi - lo) * u;
        if (v != 0.0) return v;
    }
}

void tu_fill(fmlp_dtype dtype, void *p, int64_t n, double lo, double hi, double *as_f64)
{
    for (int64_t i = 0; i < n; i++) {
        fmlp_store(dtype, p, i, (float)tu_rand_uniform(lo, hi));
        if (as_f64) as_f64[i] = fmlp_load(dtype, p, i);
    }
}

void tu_poison(fmlp_dtype dtype, void *p, int64_t n)
{
    if (dtype == FMLP_F32) {
        uint32_t nan = 0x7fc0dead;
        for (int64_t i = 0; i < n; i++) memcpy((float *)p + i, &nan, 4);
    } else {
        for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i] = dtype == FMLP_BF16 ? 0x7fc1 : 0x7e01;
    }
}

double tu_get(fmlp_dtype dtype, const void *p, int64_t i) { return fmlp_load(dtype, p, i); }

double tu_rel_err(fmlp_dtype dtype, const void *a, int64_t lda, const double *ref, int64_t ldr, int64_t rows,
                  int64_t cols)
{
    double num = 0, den = 0;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++) {
            double x = fmlp_load(dtype, a, r * lda + c), y = ref[r * ldr + c];
            if (isnan(x) && !isnan(y)) return INFINITY;
            double d = x - y;
            num += d * d;
            den += y * y;
        }
    }
    if (den == 0) return sqrt(num);
    return sqrt(num / den);
}

double tu_rel_err_f64(const double *a, const double *ref, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) && isfinite(ref[i])) return INFINITY;
        num += (a[i] - ref[i]) * (a[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den == 0 ? sqrt(num) : sqrt(num / den);
}

double tu_tol_case(const tu_shape_case *c, fmlp_dtype dtype)
{
    const int rounded = c->block == FMLP_BLOCK_STACK && c->layers > 2 ? c->layers - 1 : 1;
    return tu_tol(dtype) * rounded;
}

double tu_tol_mode(const tu_shape_case *c, fmlp_dtype dtype, fmlp_mode mode)
{
    const double t = tu_tol_case(c, dtype);
    if (c->block != FMLP_BLOCK_GATED) return t;
    return mode == FMLP_MODE_EAGER ? 3 * t : mode == FMLP_MODE_COMPILED ? 2 * t : t;
}

void tu_act_sweep_for(fmlp_act act, int64_t dim, int64_t hidden, int64_t out_dim, tu_act_sweep *out)
{
    snprintf(out->names[0], sizeof out->names[0], "gated-%s", fmlp_act_name(act));
    snprintf(out->names[1], sizeof out->names[1], "stack-%s-3+bias", fmlp_act_name(act));
    out->cases[0] = (tu_shape_case){out->names[0], FMLP_BLOCK_GATED, act, 0, dim, hidden, 0, true};
    out->cases[1] = (tu_shape_case){out->names[1], FMLP_BLOCK_STACK, act, 3, dim, hidden, out_dim, true};
}

double tu_tol(fmlp_dtype dtype)
{
    switch (dtype) {
    case FMLP_BF16: return 1e-2;
    case FMLP_F16: return 2e-3;
    default: return 1e-5;
    }
}

bool tu_check(bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    if (ok)
        g_pass++;
    else
        g_fail++;
    return ok;
}

void tu_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("skipped: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    g_skip++;
}

int tu_finish(void)
{
    printf("%d passed, %d failed, %d skipped\n", g_pass, g_fail, g_skip);
    if (g_fail) return 1;
    if (g_pass == 0 && g_skip > 0) return 77;
    return 0;
}

bool tu_expect_fail(fmlp_status got, fmlp_status want, const char *what)
{
    const char *msg = fmlp_last_error();
    return tu_check(got == want && msg && msg[0], "%s -> %s (want %s): \"%s\"", what, fmlp_status_name(got),
                    fmlp_status_name(want), msg ? msg : "");
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    *len = b ? fread(b, 1, (size_t)n, f) : 0;
    if (b) b[*len] = 0;
    fclose(f);
    return b;
}

const char *tu_tmpdir(void)
{
    static char dir[512];
    if (!dir[0]) {
        const char *base = getenv("FMLP_TEST_TMP");
        snprintf(dir, sizeof dir, "%s", base ? base : "/tmp/fmlp-test");
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) snprintf(dir, sizeof dir, "/tmp");
    }
    return dir;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

bool tu_run_in_child(void (*fn)(void *arg, void *out), void *arg, void *out, size_t out_len, long *grew_kb)
{
    int fd[2];
    *grew_kb = -1;
    if (pipe(fd) != 0) return false;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        long before = rss_kb();
        fn(arg, out);
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        long grew = ru.ru_maxrss - before;
        bool ok = write(fd[1], &grew, sizeof grew) == (ssize_t)sizeof grew &&
                  write(fd[1], out, out_len) == (ssize_t)out_len;
        _exit(ok ? 0 : 1);
    }
    close(fd[1]);
    bool ok = pid > 0 && read(fd[0], grew_kb, sizeof *grew_kb) == (ssize_t)sizeof *grew_kb &&
              read(fd[0], out, out_len) == (ssize_t)out_len;
    close(fd[0]);
    int status = 0;
    if (pid > 0) waitpid(pid, &status, 0);
    return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

fmlp_ctx *tu_ctx(int threads)
{
    fmlp_ctx_options o = fmlp_ctx_options_default();
    o.threads = threads;
    fmlp_ctx *ctx = NULL;
    tu_check(fmlp_ctx_create(&o, &ctx) == FMLP_OK, "a %d-thread context", threads);
    return ctx;
}

/* The GPU tests check thousands of rows at a time; one thread's f64
 * reference took most of their run time (test_cuda_tp about 150 s on the
 * H100's host). */
typedef struct {
    const fmlp_mlp *m;
    const double *x;
    double *y;
    int64_t rows;
    fmlp_status s;
} ref_slice;

static void *ref_slice_run(void *arg)
{
    ref_slice *r = arg;
    r->s = fmlp_mlp_reference(r->m, r->x, r->rows, r->y);
    return NULL;
}

fmlp_status tu_mlp_reference(const fmlp_mlp *m, const double *x, int64_t rows, double *y)
{
    enum { MAX_THREADS = 16, MIN_ROWS = 8 };
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t n = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : cpus;
    if (n > rows / MIN_ROWS) n = rows / MIN_ROWS;
    if (n <= 1 || !m || !x || !y) return fmlp_mlp_reference(m, x, rows, y);
    /* the slices' first use of lazily loaded weights materializes them
     * under the MLP's own lock */
    fmlp_status s = FMLP_OK;
    const int64_t dim = fmlp_mlp_get_desc(m)->dim, out_dim = fmlp_mlp_out_dim(m);
    ref_slice sl[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    for (int64_t i = 0, r0 = 0; i < n; i++) {
        const int64_t r1 = rows * (i + 1) / n;
        sl[i] = (ref_slice){m, x + r0 * dim, y + r0 * out_dim, r1 - r0, FMLP_OK};
        started[i] = pthread_create(&th[i], NULL, ref_slice_run, &sl[i]) == 0;
        if (!started[i]) ref_slice_run(&sl[i]);
        r0 = r1;
    }
    for (int64_t i = 0; i < n; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        if (sl[i].s != FMLP_OK && s == FMLP_OK) s = sl[i].s;
    }
    return s;
}
