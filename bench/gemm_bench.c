/* Why: the CPU GEMM is the product's headline speed; this program measures
 * it at the tutorial's GeGLU shapes (dim 768, hidden 3072: the gate/up GLU
 * GEMM m x 768 -> m x 3072 and the down GEMM m x 3072 -> m x 768) for each
 * dtype and row count, straight on the kernels, with no plan or profiler in
 * the way; and, for the eager/compiled modes, the fused gelu_tanh(gate) * up
 * pointwise pass over m x 3072 (GB/s of its three streams). Figures go to
 * stdout and, with --json, to a results file.
 *
 *   gemm_bench [--path NAME] [--threads N] [--dtype f32|bf16|all]
 *              [--rows 1,16,128,1024,8192] [--dim 768] [--hidden 3072]
 *              [--seconds 0.5] [--json FILE] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/dtype.h"
#include "cpu/features.h"
#include "cpu/path.h"
#include "cpu/gemm.h"
#include "cpu/pointwise.h"
#include "cpu/pool.h"

typedef struct {
    const char *path_name, *dtype_name, *rows_list, *json;
    int threads;
    int64_t dim, hidden;
    double seconds;
} options;

static void *random_buffer(fmlp_dtype dt, int64_t count, float scale, uint64_t *state)
{
    size_t esz = dt == FMLP_F32 ? 4 : 2;
    void *p = malloc((size_t)count * esz);
    if (!p) return NULL;
    for (int64_t i = 0; i < count; i++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        float v = ((float)(*state >> 40) / (float)(1 << 24) * 2.0f - 1.0f) * scale;
        fmlp_store(dt, p, i, v);
    }
    return p;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds per call, best of a few batches that each last `seconds` / 4, and
 * the CPU seconds all threads spent per call in that batch: on a machine
 * shared with other work, flops per CPU-second still show the kernel's
 * efficiency (idle threads spin briefly at the end of a call, so it is a
 * slight underestimate). */
static double time_gemm(cpu_pool *pool, const cpu_packed *p, fmlp_act act, const void *A, int64_t lda, void *C,
                        int64_t ldc, int64_t m, double seconds, double *cpu_per_call)
{
    cpu_gemm_run(pool, p, act, A, lda, C, ldc, m, NULL);
    double best = 1e30;
    for (int batch = 0; batch < 4; batch++) {
        int64_t t0 = fmlp_now_ns(), calls = 0, t1;
        double c0 = cpu_seconds();
        do {
            cpu_gemm_run(pool, p, act, A, lda, C, ldc, m, NULL);
            calls++;
            t1 = fmlp_now_ns();
        } while ((double)(t1 - t0) < seconds / 4 * 1e9);
        double per = (double)(t1 - t0) * 1e-9 / (double)calls;
        if (per < best) {
            best = per;
            *cpu_per_call = (cpu_seconds() - c0) / (double)calls;
        }
    }
    return best;
}

static double time_pointwise(cpu_pool *pool, cpu_path path, fmlp_dtype dt, const void *a, const void *b, void *o,
                             int64_t m, int64_t n, double seconds)
{
    double best = 1e30;
    for (int batch = 0; batch < 4; batch++) {
        int64_t t0 = fmlp_now_ns(), calls = 0, t1;
        do {
            cpu_pointwise_run(pool, path, dt, CPU_PW_GLU, FMLP_ACT_GELU_TANH, a, n, b, n, o, n, m, n, NULL);
            calls++;
            t1 = fmlp_now_ns();
        } while ((double)(t1 - t0) < seconds / 4 * 1e9);
        double per = (double)(t1 - t0) * 1e-9 / (double)calls;
        if (per < best) best = per;
    }
    return best;
}

static int parse(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) goto bad;
        if (!strcmp(a, "--path")) o->path_name = v;
        else if (!strcmp(a, "--threads")) o->threads = atoi(v);
        else if (!strcmp(a, "--dtype")) o->dtype_name = v;
        else if (!strcmp(a, "--rows")) o->rows_list = v;
        else if (!strcmp(a, "--dim")) o->dim = atoll(v);
        else if (!strcmp(a, "--hidden")) o->hidden = atoll(v);
        else if (!strcmp(a, "--seconds")) o->seconds = atof(v);
        else if (!strcmp(a, "--json")) o->json = v;
        else goto bad;
        i++;
        continue;
    bad:
        fprintf(stderr, "usage: gemm_bench [--path NAME] [--threads N] [--dtype f32|bf16|all] [--rows LIST]\n"
                        "                  [--dim D] [--hidden H] [--seconds S] [--json FILE]\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    options o = {.dtype_name = "all", .rows_list = "1,16,128,1024,8192", .dim = 768, .hidden = 3072, .seconds = 0.5};
    if (parse(argc, argv, &o)) return 2;
    cpu_path want = cpu_path_best();
    if (o.path_name && !cpu_path_parse(o.path_name, &want)) {
        fprintf(stderr, "gemm_bench: unknown path %s\n", o.path_name);
        return 2;
    }
    const char *why;
    if (!cpu_path_available(want, &why)) {
        fprintf(stderr, "gemm_bench: path %s unavailable: %s\n", cpu_path_name(want), why);
        return 2;
    }
    cpu_pool *pool = cpu_pool_create(o.threads > 0 ? o.threads : cpu_features_get()->cores);
    if (!pool) return 1;
    FILE *js = o.json ? fopen(o.json, "w") : NULL;
    if (js) {
        time_t now = time(NULL);
        char when[32];
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        fprintf(js, "{\"bench\": \"gemm\", \"when\": \"%s\", \"cpu\": \"%s\", \"threads\": %d, \"version\": \"%s\",\n"
                    " \"dim\": %lld, \"hidden\": %lld, \"results\": [\n",
                when, cpu_features_get()->brand, cpu_pool_threads(pool), FMLP_VERSION, (long long)o.dim,
                (long long)o.hidden);
    }
    printf("cpu: %s, threads %d\n", cpu_features_get()->brand, cpu_pool_threads(pool));
    printf("%-5s %-11s %6s  %12s %9s %9s  %12s %9s %9s  %8s\n", "dtype", "path", "rows", "glu GFLOP/s", "ms",
           "/cpu-s", "down GFLOP/s", "ms", "/cpu-s", "pw GB/s");
    uint64_t seed = 42;
    int first = 1;
    for (int d = 0; d < 2; d++) {
        fmlp_dtype dt = d ? FMLP_BF16 : FMLP_F32;
        if (strcmp(o.dtype_name, "all") && strcmp(o.dtype_name, fmlp_dtype_name(dt))) continue;
        int64_t D = o.dim, H = o.hidden;
        void *wg = random_buffer(dt, H * D, 0.036f, &seed), *wu = random_buffer(dt, H * D, 0.036f, &seed);
        void *wd = random_buffer(dt, D * H, 0.018f, &seed);
        cpu_packed *glu = wg && wu ? cpu_gemm_pack_glu(want, dt, wg, NULL, wu, NULL, H, D) : NULL;
        cpu_packed *down = wd ? cpu_gemm_pack(want, dt, wd, NULL, D, H) : NULL;
        if (!glu || !down) {
            fprintf(stderr, "gemm_bench: out of memory\n");
            return 1;
        }
        const char *rl = o.rows_list;
        while (*rl) {
            int64_t m = strtoll(rl, (char **)&rl, 10);
            if (*rl == ',') rl++;
            if (m < 1) continue;
            void *x = random_buffer(dt, m * D, 1.0f, &seed), *h = random_buffer(dt, m * H, 1.0f, &seed);
            void *y = random_buffer(dt, m * D, 1.0f, &seed);
            if (!x || !h || !y) return 1;
            double cg, cd;
            double tg = time_gemm(pool, glu, FMLP_ACT_GELU_TANH, x, D, h, H, m, o.seconds, &cg);
            double td = time_gemm(pool, down, FMLP_ACT_NONE, h, H, y, D, m, o.seconds, &cd);
            /* Fresh gate and up inputs (h now holds GEMM outputs), out of place. */
            void *gate = random_buffer(dt, m * H, 2.0f, &seed), *up = random_buffer(dt, m * H, 2.0f, &seed);
            if (!gate || !up) return 1;
            double tp = time_pointwise(pool, want, dt, gate, up, h, m, H, o.seconds);
            free(gate);
            free(up);
            double pw_gbs = 3.0 * (double)(m * H) * (dt == FMLP_F32 ? 4 : 2) / tp * 1e-9;
            double fg = 2.0 * 2.0 * (double)m * (double)H * (double)D, fd = 2.0 * (double)m * (double)D * (double)H;
            printf("%-5s %-11s %6lld  %12.1f %9.3f %9.1f  %12.1f %9.3f %9.1f  %8.1f\n", fmlp_dtype_name(dt),
                   cpu_path_name(cpu_packed_path(glu)), (long long)m, fg / tg * 1e-9, tg * 1e3, fg / cg * 1e-9,
                   fd / td * 1e-9, td * 1e3, fd / cd * 1e-9, pw_gbs);
            fflush(stdout);
            if (js)
                fprintf(js,
                        "%s  {\"dtype\": \"%s\", \"path\": \"%s\", \"rows\": %lld, \"glu_gflops\": %.2f, "
                        "\"glu_ms\": %.4f, \"glu_gflops_per_cpu_s\": %.2f, \"down_gflops\": %.2f, \"down_ms\": %.4f, "
                        "\"down_gflops_per_cpu_s\": %.2f, \"pointwise_glu_gbps\": %.2f}",
                        first ? "" : ",\n", fmlp_dtype_name(dt), cpu_path_name(cpu_packed_path(glu)), (long long)m,
                        fg / tg * 1e-9, tg * 1e3, fg / cg * 1e-9, fd / td * 1e-9, td * 1e3, fd / cd * 1e-9, pw_gbs);
            first = 0;
            free(x);
            free(h);
            free(y);
        }
        cpu_packed_free(glu);
        cpu_packed_free(down);
        free(wg);
        free(wu);
        free(wd);
    }
    if (js) {
        fprintf(js, "\n]}\n");
        fclose(js);
    }
    cpu_pool_destroy(pool);
    return 0;
}
