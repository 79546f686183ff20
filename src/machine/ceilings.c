/* Why: a verdict like "memory-bound" means something only against what this
 * machine can do. This measures the CPU's GEMM rate (a 1-layer Linear stack
 * through the public API, f32 and bf16) and memory bandwidth (a read of a
 * buffer larger than a server's L3 on as many threads as the context runs:
 * at a few rows a forward is a read of its weights, and a copy would count
 * writes the forward does not make), plus the GPU's on a CUDA
 * context, once, and caches the numbers as JSON (FMLP_CEILINGS_FILE, or
 * ~/.cache/fmlp/ceilings.json). A context reads that file at its first ask
 * and holds the answer, so a profiler closing window after window reads
 * no file. A GPU that was never measured still has its datasheet peaks,
 * computed from the device's properties. It sits below the profiler as a
 * client of the public API (and of the backend's device description). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/file_in.h"
#include "core/file_out.h"
#include "core/internal.h"
#include "core/json.h"
#include "fmlp.h"
#include "machine/ceilings.h"

enum { GEMM_DIM = 2048, GEMM_ROWS = 1024, GPU_DIM = 8192, GPU_ROWS = 8192 };
#define STREAM_BYTES ((size_t)512 << 20)
#define MIN_SECONDS 0.3
#define MAX_STREAM_THREADS 30

static void cache_path(char *buf, size_t n)
{
    const char *env = getenv("FMLP_CEILINGS_FILE");
    const char *home = getenv("HOME");
    if (env && *env)
        snprintf(buf, n, "%s", env);
    else
        snprintf(buf, n, "%s/.cache/fmlp/ceilings.json", home && *home ? home : ".");
}

static void mkdirs_for(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *c = dir + 1; *c; c++) {
        if (*c != '/') continue;
        *c = 0;
        mkdir(dir, 0755);
        *c = '/';
    }
}

/* Best time of repeated forwards, each call `reps` forwards long. */
static fmlp_status best_forward_s(fmlp_ctx *ctx, fmlp_mlp *m, fmlp_tensor *x, fmlp_tensor *y, double *best)
{
    *best = 1e30;
    double spent = 0;
    for (int i = 0; i < 50 && (i < 3 || spent < MIN_SECONDS); i++) {
        int64_t t0 = fmlp_now_ns();
        fmlp_status s = fmlp_mlp_forward(m, FMLP_MODE_EAGER, x, y);
        if (s == FMLP_OK) s = fmlp_ctx_synchronize(ctx);
        if (s != FMLP_OK) return s;
        double t = (double)(fmlp_now_ns() - t0) * 1e-9;
        spent += t;
        if (i > 0 && t < *best) *best = t; /* the first call packs weights */
    }
    return FMLP_OK;
}

/* GFLOP/s of one rows × dim × dim Linear on `ctx`. */
static fmlp_status gemm_rate(fmlp_ctx *ctx, fmlp_dtype dt, int64_t dim, int64_t rows, double *gflops)
{
    fmlp_mlp_desc d;
    memset(&d, 0, sizeof d);
    d.block = FMLP_BLOCK_STACK;
    d.dim = d.hidden = d.out_dim = dim;
    d.layers = 1;
    d.dtype = dt;
    fmlp_mlp *m = NULL;
    fmlp_tensor x = {0}, y = {0};
    fmlp_status s = fmlp_mlp_create(ctx, &d, 1, &m);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, dt, rows, dim, &x);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, dt, rows, dim, &y);
    if (s == FMLP_OK && fmlp_ctx_device(ctx) == FMLP_DEVICE_CPU) memset(x.data, 0x3c, (size_t)(rows * dim) * fmlp_dtype_size(dt));
    double t = 0;
    if (s == FMLP_OK) s = best_forward_s(ctx, m, &x, &y, &t);
    if (s == FMLP_OK) *gflops = 2.0 * (double)rows * (double)dim * (double)dim / t * 1e-9;
    fmlp_tensor_free(ctx, &x);
    fmlp_tensor_free(ctx, &y);
    fmlp_mlp_destroy(m);
    return s;
}

typedef struct {
    const uint64_t *src;
    size_t words;
    uint64_t sum;
} read_job;

/* Four sums, so the loads do not wait on one chain of adds. */
static void *read_part(void *arg)
{
    read_job *j = arg;
    uint64_t s[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= j->words; i += 4) {
        s[0] += j->src[i];
        s[1] += j->src[i + 1];
        s[2] += j->src[i + 2];
        s[3] += j->src[i + 3];
    }
    for (; i < j->words; i++) s[0] += j->src[i];
    j->sum = s[0] + s[1] + s[2] + s[3];
    return NULL;
}

/* One read of `words` split over `threads` threads, as the kernels'
 * threads share the memory system; the sum keeps the reads from being
 * optimized away. */
static uint64_t parallel_read(const uint64_t *src, size_t words, int threads)
{
    pthread_t tid[MAX_STREAM_THREADS];
    read_job job[MAX_STREAM_THREADS];
    size_t part = words / (size_t)threads;
    int started = 0;
    for (int t = 0; t < threads; t++) {
        size_t off = part * (size_t)t, n = t == threads - 1 ? words - off : part;
        job[t] = (read_job){src + off, n, 0};
        if (t > 0 && pthread_create(&tid[t], NULL, read_part, &job[t]) == 0)
            started |= 1 << t;
        else if (t > 0)
            read_part(&job[t]);
    }
    read_part(&job[0]);
    uint64_t sum = job[0].sum;
    for (int t = 1; t < threads; t++) {
        if (started & (1 << t)) pthread_join(tid[t], NULL);
        sum += job[t].sum;
    }
    return sum;
}

/* Bytes read per second of a large read, in GB/s. */
static fmlp_status read_rate(int threads, double *gbps)
{
    if (threads < 1) threads = 1;
    if (threads > MAX_STREAM_THREADS) threads = MAX_STREAM_THREADS;
    uint64_t *a = fmlp_malloc(STREAM_BYTES);
    if (!a) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "measuring memory bandwidth needs 512 MiB of host memory");
    const size_t words = STREAM_BYTES / sizeof *a;
    for (size_t i = 0; i < words; i++) a[i] = i * 0x9E3779B97F4A7C15ull;
    double best = 1e30;
    volatile uint64_t sink = 0;
    for (int i = 0; i < 6; i++) {
        int64_t t0 = fmlp_now_ns();
        sink += parallel_read(a, words, threads);
        double t = (double)(fmlp_now_ns() - t0) * 1e-9;
        if (t < best) best = t;
    }
    (void)sink;
    *gbps = (double)STREAM_BYTES / best * 1e-9;
    free(a);
    return FMLP_OK;
}

static fmlp_status gpu_rates(fmlp_ctx *ctx, fmlp_ceilings *c)
{
    double gflops = 0;
    fmlp_status s = gemm_rate(ctx, FMLP_BF16, GPU_DIM, GPU_ROWS, &gflops);
    if (s != FMLP_OK) return s;
    c->gpu_gemm_tflops_bf16 = gflops * 1e-3;
    fmlp_tensor a = {0}, b = {0};
    int64_t rows = 16384, cols = 16384; /* 512 MiB of f16 */
    s = fmlp_tensor_alloc(ctx, FMLP_F16, rows, cols, &a);
    if (s == FMLP_OK) s = fmlp_tensor_alloc(ctx, FMLP_F16, rows, cols, &b);
    double best = 1e30;
    for (int i = 0; i < 6 && s == FMLP_OK; i++) {
        int64_t t0 = fmlp_now_ns();
        s = fmlp_tensor_copy(ctx, &b, &a);
        if (s == FMLP_OK) s = fmlp_ctx_synchronize(ctx);
        double t = (double)(fmlp_now_ns() - t0) * 1e-9;
        if (i > 0 && t < best) best = t;
    }
    if (s == FMLP_OK) c->gpu_mem_gbps = 2.0 * (double)(rows * cols * 2) / best * 1e-9;
    fmlp_tensor_free(ctx, &a);
    fmlp_tensor_free(ctx, &b);
    if (s != FMLP_OK) return s;
    /* Launch cost: a 1-row, 16-wide Linear is nothing but its launch. */
    double lin_gflops;
    s = gemm_rate(ctx, FMLP_BF16, 16, 1, &lin_gflops);
    if (s == FMLP_OK) c->gpu_launch_us = 2.0 * 16 * 16 / (lin_gflops * 1e9) * 1e6;
    return s;
}

/* The cache is a small file of ours: anything else at its path (a FIFO, a
 * device, a directory) is refused rather than opened, which could block. */
#define CACHE_MAX_BYTES 65536
/* 2: the CPU's memory bandwidth is a read's (1 was a copy's, read and
 * write counted), so a cache of 1 is measured again */
#define CACHE_VERSION 2
#define CACHE_FIX "point FMLP_CEILINGS_FILE at a regular file (or remove what is there)"

/* The writer's message, with the way out. */
static fmlp_status cache_failed(fmlp_status s)
{
    char why[600];
    snprintf(why, sizeof why, "%s", fmlp_last_error());
    return fmlp_fail(s, "the ceilings cache: %s; or set FMLP_CEILINGS_FILE to a writable path", why);
}

fmlp_status fmlp_ceilings_save(const char *path, const fmlp_ceilings *c, int threads)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return fmlp_fail(FMLP_ERR_IO, "the ceilings cache \"%s\" is not a regular file; %s", path, CACHE_FIX);
    mkdirs_for(path);
    fmlp_file_out out;
    fmlp_status s = fmlp_file_out_open(&out, path);
    if (s != FMLP_OK) return cache_failed(s);
    FILE *f = fmlp_file_out_stream(&out);
    if (!f) {
        fmlp_file_out_abort(&out);
        return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory writing the ceilings cache \"%s\"", path);
    }
    fprintf(f, "{\"version\":%d,\"threads\":%d,\"cpu\":{\"gemm_gflops_f32\":", CACHE_VERSION, threads);
    json_write_number(f, c->gemm_gflops_f32);
    fputs(",\"gemm_gflops_bf16\":", f);
    json_write_number(f, c->gemm_gflops_bf16);
    fputs(",\"mem_gbps\":", f);
    json_write_number(f, c->mem_gbps);
    fputs("},\"gpu\":{\"gemm_tflops_bf16\":", f);
    json_write_number(f, c->gpu_gemm_tflops_bf16);
    fputs(",\"mem_gbps\":", f);
    json_write_number(f, c->gpu_mem_gbps);
    fputs(",\"launch_us\":", f);
    json_write_number(f, c->gpu_launch_us);
    fputs("}}\n", f);
    s = fmlp_file_out_commit(&out);
    return s == FMLP_OK ? s : cache_failed(s);
}

/* *found: the cache exists, parses and was measured with `threads` (-1:
 * any); a missing or stale cache is no error, but a path that is not a
 * small regular file is. */
static fmlp_status load(const char *path, int threads, fmlp_ceilings *c, bool *found)
{
    *found = false;
    struct stat sb;
    if (stat(path, &sb) != 0) return FMLP_OK;
    char *buf, why[160];
    size_t n;
    if (!file_in_read(path, CACHE_MAX_BYTES, &buf, &n, why, sizeof why))
        return fmlp_fail(FMLP_ERR_IO, "the ceilings cache \"%s\" %s; %s", path, why, CACHE_FIX);
    json_doc *d = json_parse(buf, n, NULL);
    free(buf);
    if (!d) return FMLP_OK;
    const json_value *r = json_doc_root(d), *cpu = json_get(r, "cpu"), *gpu = json_get(r, "gpu");
    bool ok = json_get_int(r, "version", 0) == CACHE_VERSION && (threads < 0 || json_get_int(r, "threads", -1) == threads) && cpu;
    if (ok) {
        c->gemm_gflops_f32 = json_get_num(cpu, "gemm_gflops_f32", 0);
        c->gemm_gflops_bf16 = json_get_num(cpu, "gemm_gflops_bf16", 0);
        c->mem_gbps = json_get_num(cpu, "mem_gbps", 0);
        c->gpu_gemm_tflops_bf16 = json_get_num(gpu, "gemm_tflops_bf16", 0);
        c->gpu_mem_gbps = json_get_num(gpu, "mem_gbps", 0);
        c->gpu_launch_us = json_get_num(gpu, "launch_us", 0);
        c->measured = c->gemm_gflops_f32 > 0 && c->mem_gbps > 0;
        ok = c->measured;
    }
    json_free(d);
    *found = ok;
    return FMLP_OK;
}

/* Both processors are measured whichever context asks: `fmlp info` holds a
 * CPU context, and a GPU run's verdict needs the GPU's numbers. */
fmlp_status fmlp_ceilings_measure(fmlp_ctx *ctx, fmlp_ceilings *out)
{
    if (!ctx || !out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_ceilings_measure: ctx and out must not be NULL");
    memset(out, 0, sizeof *out);
    fmlp_ctx *cpu = ctx, *gpu = NULL;
    fmlp_status s = FMLP_OK;
    if (fmlp_ctx_device(ctx) != FMLP_DEVICE_CPU) {
        gpu = ctx;
        fmlp_ctx_options o = fmlp_ctx_options_default();
        s = fmlp_ctx_create(&o, &cpu);
    } else if (fmlp_cuda_device_count() > 0) {
        fmlp_ctx_options o = fmlp_ctx_options_default();
        o.device = FMLP_DEVICE_CUDA;
        if (fmlp_ctx_create(&o, &gpu) != FMLP_OK) {
            gpu = NULL;
            fmlp_clear_error();
        }
    }
    if (s == FMLP_OK) s = gemm_rate(cpu, FMLP_F32, GEMM_DIM, GEMM_ROWS, &out->gemm_gflops_f32);
    if (s == FMLP_OK) s = gemm_rate(cpu, FMLP_BF16, GEMM_DIM, GEMM_ROWS, &out->gemm_gflops_bf16);
    if (s == FMLP_OK) s = read_rate(fmlp_ctx_threads(cpu), &out->mem_gbps);
    if (s == FMLP_OK && gpu) s = gpu_rates(gpu, out);
    int threads = s == FMLP_OK ? fmlp_ctx_threads(cpu) : 0;
    if (cpu != ctx) fmlp_ctx_destroy(cpu);
    if (gpu != ctx) fmlp_ctx_destroy(gpu);
    if (s != FMLP_OK) return s;
    out->measured = true;
    char path[4096];
    cache_path(path, sizeof path);
    s = fmlp_ceilings_save(path, out, threads);
    if (s == FMLP_OK) {
        pthread_mutex_lock(&ctx->machine_lock);
        ctx->ceilings = *out;
        ctx->ceilings_loaded = true;
        pthread_mutex_unlock(&ctx->machine_lock);
    }
    return s;
}

/* Dense bf16 (f16 before Ampere) tensor FLOP per clock per SM, FP32
 * accumulate: each row is its whitepaper's dense peak over SMs x boost clock.
 *   sm_70 Volta whitepaper, V100 SXM2: 125 TFLOPS f16, 80 SMs, 1530 MHz
 *   sm_75 Turing whitepaper, Tesla T4: 65 TFLOPS f16, 40 SMs, 1590 MHz
 *   sm_80 A100 whitepaper: 312 TFLOPS bf16, 108 SMs, 1410 MHz
 *   sm_86 GA102 whitepaper, A40: 149.7 TFLOPS bf16, 84 SMs, 1740 MHz
 *   sm_89 Ada whitepaper, RTX 6000 Ada: 364.2 TFLOPS bf16, 142 SMs, 2505 MHz
 *   sm_90 H100 whitepaper, H100 SXM5: 989.4 TFLOPS bf16, 132 SMs, 1830 MHz
 * GeForce parts of sm_86/sm_89 run FP32-accumulate MMA at half these rates. */
static const struct {
    int major, minor, flop_per_clock;
} k_tensor_rates[] = {
    {7, 0, 1024}, {7, 5, 1024}, {8, 0, 2048}, {8, 6, 1024}, {8, 9, 1024}, {9, 0, 4096},
};

int fmlp_tensor_flop_per_clock(int major, int minor)
{
    for (size_t i = 0; i < sizeof k_tensor_rates / sizeof *k_tensor_rates; i++)
        if (k_tensor_rates[i].major == major && k_tensor_rates[i].minor == minor) return k_tensor_rates[i].flop_per_clock;
    return 0;
}

bool fmlp_ceilings_from_props(const fmlp_device_props *d, double *tflops_bf16, double *mem_gbps)
{
    const double per_clock = fmlp_tensor_flop_per_clock(d->compute_major, d->compute_minor);
    *tflops_bf16 = (double)d->num_sms * d->clock_khz * 1e3 * per_clock * 1e-12;
    *mem_gbps = 2.0 * d->mem_clock_khz * 1e3 * (d->mem_bus_bits / 8.0) * 1e-9;
    if (*tflops_bf16 < 0) *tflops_bf16 = 0;
    if (*mem_gbps < 0) *mem_gbps = 0;
    return *tflops_bf16 > 0 || *mem_gbps > 0;
}

/* GPU figures nobody measured: the device's peaks. */
static void fill_from_device(fmlp_ctx *ctx, fmlp_ceilings *c)
{
    fmlp_device_props d;
    if (fmlp_ctx_device(ctx) == FMLP_DEVICE_CPU || !ctx->be->device_props) return;
    if (c->gpu_gemm_tflops_bf16 > 0 && c->gpu_mem_gbps > 0) return;
    double tflops, gbps;
    if (!ctx->be->device_props(ctx, &d) || !fmlp_ceilings_from_props(&d, &tflops, &gbps)) return;
    c->gpu_gemm_tflops_bf16 = tflops;
    c->gpu_mem_gbps = gbps;
    c->gpu_launch_us = 0;
    c->gpu_from_device = true;
}

fmlp_status fmlp_ceilings_get(fmlp_ctx *ctx, bool measure_if_missing, fmlp_ceilings *out)
{
    if (!ctx || !out) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_ceilings_get: ctx and out must not be NULL");
    pthread_mutex_lock(&ctx->machine_lock);
    if (!ctx->ceilings_loaded) {
        char path[4096];
        cache_path(path, sizeof path);
        /* CPU numbers depend on the thread count; a GPU context uses the GPU's. */
        int threads = fmlp_ctx_device(ctx) == FMLP_DEVICE_CPU ? fmlp_ctx_threads(ctx) : -1;
        bool found;
        fmlp_status s = load(path, threads, &ctx->ceilings, &found);
        if (s != FMLP_OK) {
            pthread_mutex_unlock(&ctx->machine_lock);
            memset(out, 0, sizeof *out);
            return s;
        }
        if (!found) memset(&ctx->ceilings, 0, sizeof ctx->ceilings);
        fill_from_device(ctx, &ctx->ceilings);
        ctx->ceilings_loaded = true;
    }
    *out = ctx->ceilings;
    pthread_mutex_unlock(&ctx->machine_lock);
    if (out->measured || !measure_if_missing) return FMLP_OK;
    return fmlp_ceilings_measure(ctx, out);
}
