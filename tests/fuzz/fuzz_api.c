/* Why: the public API and the CLI take sizes, enums and strides from
 * callers who may pass anything; every such value must come back as a
 * clean error or a correct result, never a wrapped size, an out-of-bounds
 * access or undefined behaviour. The first byte picks one of two drivers:
 *
 * - API: an MLP description (block, widths, layers, activation, bias,
 *   dtype) from the bytes, created, planned for hostile modes and row
 *   counts, and run on x and y views with hostile dtypes, devices, shapes
 *   and row strides; weights read back into hostile shapes; tensors
 *   allocated and copied with hostile shapes. Views the fuzzer can back
 *   with real memory are backed (and checked: x unchanged, y's padding
 *   untouched, f32 y against the double reference); views whose byte size
 *   does not fit int64 point at a small buffer and must be refused. Host
 *   allocations over 16 MiB fail (the allocation hook), so no input can run
 *   the machine out of memory, and forwards run only on small shapes.
 * - CLI: `fmlp mlp` or `fmlp linear` with --explain and words from the
 *   bytes (split at spaces and NULs), run in-process (cli_run_main): flag
 *   parsing, number parsing, the size and schedule checks, context and MLP
 *   creation and planning. With --explain nothing is timed and no file is
 *   written, and '/' in a word becomes '_', so a word names at most a file
 *   of the working directory (read, never written: no device or FIFO). The
 *   CLI's output goes to /dev/null. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_commands.h"
#include "core/alloc.h"
#include "fmlp.h"

#define ALLOC_CAP ((size_t)16 << 20)
#define VIEW_CAP ((int64_t)1 << 16) /* bytes of one backed view */
#define MAX_WORK ((int64_t)1 << 14) /* rows x weights of a forward that runs */

static fmlp_ctx *g_ctx;
static FILE *g_null;

typedef struct {
    const uint8_t *p;
    size_t n;
} bytes;

static uint8_t u8(bytes *b)
{
    if (!b->n) return 0;
    b->n--;
    return *b->p++;
}

static uint64_t raw64(bytes *b)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | u8(b);
    return v;
}

/* A size or count as a hostile caller passes one: mostly small, often an
 * edge of int32 or int64, sometimes any 64-bit value. */
static int64_t count(bytes *b)
{
    static const int64_t edge[] = {0, -1, 1, 2, 3, 7, 8, 16, 17, 64, 255, 4096, 65536, 1 << 20, (1 << 20) + 1,
                                   INT32_MAX, (int64_t)INT32_MAX + 1, UINT32_MAX, INT64_C(1) << 40, INT64_C(1) << 48,
                                   INT64_C(1) << 62, INT64_MAX, INT64_MIN, INT64_MIN + 1, -(1 << 20), -16};
    uint8_t k = u8(b);
    switch (k >> 6) {
    case 0: return k & 63;
    case 1: return edge[k % (sizeof edge / sizeof *edge)];
    case 2: {
        int64_t hi = u8(b);
        return hi << 8 | u8(b);
    }
    default: return (int64_t)raw64(b);
    }
}

/* An enum value: one of `n` valid ones, one past them, or an outlier. */
static int pick(bytes *b, int n)
{
    static const int odd[] = {-1, 55, 127, INT32_MAX, INT32_MIN};
    uint8_t k = u8(b);
    return k < 240 ? k % (n + 1) : odd[k % 5];
}

/* The value a view claims: usually `usual`, sometimes a little more (ld
 * with padding), sometimes anything. */
static int64_t mostly(bytes *b, int64_t usual)
{
    uint8_t k = u8(b);
    if (k < 160) return usual;
    if (k < 208) return (int64_t)((uint64_t)usual + (k & 7));
    return count(b);
}

static size_t elem_size(fmlp_dtype dt) { return (unsigned)dt < FMLP_DTYPE_COUNT ? fmlp_dtype_size(dt) : 4; }

/* A view as claimed. `backed`: rows x ld elements (at most VIEW_CAP
 * bytes) of memory behind it, or none when it is empty. `overflows`: a
 * negative number, or its last element ((rows - 1) x ld + cols) lies past
 * int64 bytes, so no call may accept it; it points at a small spare
 * buffer. Views that are neither are not passed at all (they would need
 * more memory than the fuzzer gives). */
typedef struct {
    fmlp_tensor t;
    void *mem;
    size_t len;
    bool backed, overflows;
} view;

static void view_make(view *v, fmlp_dtype dt, fmlp_device dev, int64_t rows, int64_t cols, int64_t ld, void *spare)
{
    memset(v, 0, sizeof *v);
    v->t = (fmlp_tensor){spare, dt, dev, rows, cols, ld}; /* not fmlp_tensor_view: it takes ld 0 for cols */
    int64_t es = (int64_t)elem_size(dt), last, n, len = 0;
    bool empty = rows == 0 || cols == 0; /* addresses nothing, whatever its ld */
    if (rows < 0 || cols < 0 || ld < 0 ||
        (!empty && (__builtin_mul_overflow(rows - 1, ld, &last) || __builtin_add_overflow(last, cols, &last) ||
                    __builtin_mul_overflow(last, es, &last)))) {
        v->overflows = true;
        return;
    }
    if (!empty && (__builtin_mul_overflow(rows, ld, &n) || __builtin_mul_overflow(n, es, &len) || len > VIEW_CAP))
        return;
    v->len = (size_t)len;
    v->mem = malloc(v->len + 1);
    if (!v->mem) return;
    v->t.data = v->mem;
    v->backed = true;
}

static void view_free(view *v) { free(v->mem); }

/* Whether byte `byte` of a backed view lies in a row's padding (columns
 * cols..ld), where no call may write. */
static bool is_padding(const view *v, size_t byte)
{
    size_t e = byte / elem_size(v->t.dtype);
    return (int64_t)(e % (size_t)v->t.ld) >= v->t.cols;
}

static void check_forward(fmlp_mlp *m, const fmlp_mlp_desc *d, bytes *b, fmlp_mode mode, int64_t rows)
{
    int64_t out = d->out_dim ? d->out_dim : d->dim, weights = 0, work;
    int layers = d->block == FMLP_BLOCK_GATED ? 3 : d->layers;
    if (__builtin_mul_overflow(d->dim > d->hidden ? d->dim : d->hidden, out > d->hidden ? out : d->hidden, &weights) ||
        __builtin_mul_overflow(weights, (int64_t)layers, &weights))
        weights = INT64_MAX;
    fmlp_dtype xdt = u8(b) < 224 ? d->dtype : (fmlp_dtype)pick(b, FMLP_DTYPE_COUNT);
    fmlp_dtype ydt = u8(b) < 224 ? d->dtype : (fmlp_dtype)pick(b, FMLP_DTYPE_COUNT);
    fmlp_device dev = u8(b) < 240 ? FMLP_DEVICE_CPU : (fmlp_device)pick(b, FMLP_DEVICE_COUNT);
    int64_t xr = mostly(b, rows), xc = mostly(b, d->dim), xld = mostly(b, xc);
    int64_t yr = mostly(b, xr), yc = mostly(b, out), yld = mostly(b, yc);
    static unsigned char spare[64];
    view x, y;
    view_make(&x, xdt, dev, xr, xc, xld, spare);
    view_make(&y, ydt, FMLP_DEVICE_CPU, yr, yc, yld, spare);
    bool small = !__builtin_mul_overflow(xr > 0 ? xr : 0, weights, &work) && work <= MAX_WORK;
    if ((x.overflows || y.overflows) && (x.overflows || x.backed) && (y.overflows || y.backed)) {
        if (fmlp_mlp_forward(m, mode, &x.t, &y.t) == FMLP_OK && xr > 0 && yr > 0) abort();
    } else if (x.backed && y.backed && small) {
        uint32_t seed = (uint32_t)raw64(b) | 1;
        for (size_t i = 0; i < x.len; i++) {
            seed = seed * 1103515245u + 12345u;
            ((unsigned char *)x.mem)[i] = (unsigned char)(seed >> 16);
        }
        /* Random f32 bytes hold NaNs and huge values; keep x's values tame
         * when it is f32 so the reference comparison means something. */
        if (xdt == FMLP_F32)
            for (size_t i = 0; i + 4 <= x.len; i += 4) ((float *)x.mem)[i / 4] = (float)((i * 37 % 101) / 50.0 - 1.0);
        memset(y.mem, 0xA5, y.len);
        void *x_before = malloc(x.len + 1);
        if (x_before) memcpy(x_before, x.mem, x.len);
        fmlp_status s = fmlp_mlp_forward(m, mode, &x.t, &y.t);
        if (x_before && memcmp(x_before, x.mem, x.len) != 0) abort(); /* x is read only */
        free(x_before);
        if (s == FMLP_OK) {
            for (size_t i = 0; i < y.len; i++)
                if (is_padding(&y, i) && ((unsigned char *)y.mem)[i] != 0xA5) abort(); /* wrote past cols */
            if (xdt == FMLP_F32 && ydt == FMLP_F32 && xr > 0 && xr <= 8) {
                double *xd = malloc((size_t)(xr * xc) * sizeof *xd), *yd = malloc((size_t)(xr * yc) * sizeof *yd);
                for (int64_t r = 0; xd && r < xr; r++)
                    for (int64_t c = 0; c < xc; c++) xd[r * xc + c] = ((float *)x.mem)[r * xld + c];
                if (xd && yd && fmlp_mlp_reference(m, xd, xr, yd) == FMLP_OK) {
                    double num = 0, den = 0;
                    for (int64_t r = 0; r < xr; r++)
                        for (int64_t c = 0; c < yc; c++) {
                            double e = ((float *)y.mem)[r * yld + c] - yd[r * yc + c];
                            num += e * e;
                            den += yd[r * yc + c] * yd[r * yc + c];
                        }
                    /* A gross-error bound: x and the weights are O(1), so a wrong row,
                     * stride or element is off by O(1), while f32 rounding stays far
                     * inside 1% of ||ref|| plus 1e-4 per element even where the sum
                     * cancels to almost nothing. */
                    if (!(num <= 1e-4 * den + 1e-8 * (double)(xr * yc))) abort();
                }
                free(xd);
                free(yd);
            }
        }
    }
    view_free(&x);
    view_free(&y);
}

static void check_weights(fmlp_mlp *m, bytes *b)
{
    int i = (int)(u8(b) % 40);
    const char *name;
    int64_t r, c;
    if (fmlp_mlp_tensor_info(m, i, &name, &r, &c) != FMLP_OK) return;
    int64_t rr = mostly(b, r), cc = mostly(b, c);
    view v;
    static float spare[16];
    view_make(&v, FMLP_F32, FMLP_DEVICE_CPU, rr, cc, cc, spare);
    int64_t n;
    if (__builtin_mul_overflow(r, c, &n) || n > (1 << 12)) {
        view_free(&v);
        return; /* reading it would make weights past the work cap */
    }
    if (v.overflows && fmlp_mlp_get_weight(m, name, spare, rr, cc) == FMLP_OK) abort();
    /* The buffer is rows x cols floats: any shape of the tensor's count. */
    if (v.backed && fmlp_mlp_get_weight(m, name, v.mem, rr, cc) == FMLP_OK && rr * cc != n) abort();
    view_free(&v);
}

static void check_tensors(bytes *b)
{
    fmlp_tensor t;
    fmlp_dtype dt = (fmlp_dtype)pick(b, FMLP_DTYPE_COUNT);
    int64_t rows = count(b), cols = count(b);
    bool host = u8(b) & 1;
    fmlp_status s = host ? fmlp_tensor_alloc_host(g_ctx, dt, rows, cols, &t) : fmlp_tensor_alloc(g_ctx, dt, rows, cols, &t);
    if (s != FMLP_OK) return;
    if (t.rows != rows || t.cols != cols || t.ld < cols || t.dtype != dt) abort();
    size_t len = (size_t)(rows * t.ld) * fmlp_dtype_size(dt);
    if (len && len <= (size_t)VIEW_CAP) memset(t.data, 0x3C, len); /* all of it is ours (ASan checks) */
    view d;
    static unsigned char spare[64];
    view_make(&d, (fmlp_dtype)(u8(b) < 224 ? (int)dt : pick(b, FMLP_DTYPE_COUNT)), FMLP_DEVICE_CPU, mostly(b, rows),
              mostly(b, cols), mostly(b, cols), spare);
    if (d.backed) memset(d.mem, 0, d.len);
    if ((d.backed || d.overflows) && fmlp_tensor_copy(g_ctx, &d.t, &t) == FMLP_OK &&
        (d.overflows || d.t.rows != rows || d.t.cols != cols || d.t.dtype != dt))
        abort();
    view_free(&d);
    fmlp_tensor_free(g_ctx, &t);
}

static void api(bytes *b)
{
    fmlp_mlp_desc d;
    memset(&d, 0, sizeof d);
    d.block = (fmlp_block)pick(b, 2);
    d.dim = count(b);
    d.hidden = count(b);
    d.out_dim = u8(b) < 128 ? 0 : count(b);
    d.layers = (int)count(b);
    d.act = (fmlp_act)pick(b, FMLP_ACT_COUNT);
    d.bias = u8(b) & 1;
    d.dtype = (fmlp_dtype)pick(b, FMLP_DTYPE_COUNT);
    fmlp_mlp *m = (fmlp_mlp *)(uintptr_t)1;
    if (fmlp_mlp_create(g_ctx, &d, raw64(b), &m) != FMLP_OK) {
        if (m != NULL || !fmlp_last_error()[0]) abort();
        check_tensors(b);
        return;
    }
    const fmlp_mlp_desc *got = fmlp_mlp_get_desc(m);
    for (int round = 0; round < 2 && b->n; round++) {
        fmlp_mode mode = (fmlp_mode)pick(b, FMLP_MODE_COUNT);
        int64_t rows = count(b);
        static fmlp_plan_info plan;
        if (fmlp_mlp_plan(m, mode, rows, &plan) == FMLP_OK) {
            int64_t flops = 0;
            if (plan.rows != rows || plan.n_kernels < 1 || plan.n_kernels > FMLP_MAX_PLAN_KERNELS || plan.flops < 0 ||
                plan.bytes < 0)
                abort();
            for (int k = 0; k < plan.n_kernels; k++) flops += plan.kernels[k].flops;
            if (flops != plan.flops) abort();
            fmlp_plan_print(&plan, g_null);
        } else if (!fmlp_last_error()[0]) {
            abort();
        }
        check_forward(m, got, b, mode, rows);
    }
    check_weights(m, b);
    fmlp_mlp_destroy(m);
}

static void cli(bytes *b)
{
    enum { MAX_WORDS = 24, MAX_WORD = 64 };
    static char words[MAX_WORDS][MAX_WORD + 1];
    char *argv[MAX_WORDS + 3];
    bool linear = u8(b) & 1;
    int argc = 0;
    argv[argc++] = linear ? "linear" : "mlp";
    argv[argc++] = "--explain"; /* first, so no flag can take it as its value */
    int w = 0, len = 0;
    while (b->n && w < MAX_WORDS) {
        char c = (char)u8(b);
        bool sep = c == ' ' || c == 0;
        if (!sep) words[w][len++] = c == '/' ? '_' : c;
        if ((sep || len == MAX_WORD || !b->n) && len) {
            words[w][len] = 0;
            argv[argc++] = words[w++];
            len = 0;
        }
    }
    argv[argc] = NULL;
    int rc = cli_run_main(argc, argv, linear);
    if (rc < 0 || rc > 2) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_ctx) {
        g_null = fopen("/dev/null", "w");
        if (!g_null) abort();
        stdout = g_null; /* the CLI's tables and messages; fd 2 stays for sanitizer reports */
        stderr = g_null;
        fmlp_ctx_options opt = fmlp_ctx_options_default();
        opt.threads = 1;
        if (fmlp_ctx_create(&opt, &g_ctx) != FMLP_OK) abort();
        fmlp_alloc_test_arm(0, ALLOC_CAP);
    }
    bytes b = {data, size};
    if (u8(&b) & 1)
        cli(&b);
    else
        api(&b);
    return 0;
}
