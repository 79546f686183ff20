/* Why: every file fmlp writes is whole or absent (core/file_out.h). Each
 * writer (traces .json and .json.gz, SVGs, safetensors, the ceilings
 * cache, fmlp_file_write) is run with a write failing after some bytes,
 * the sync, the close or the rename failing, /dev/full, a directory in the way, and memory running
 * out at each allocation of an export: the call must fail, the file that
 * was there must still hold its old bytes, and no temporary file may be
 * left beside it. Writing through a symlink replaces its target and keeps
 * the link. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/file_out.h"
#include "machine/ceilings.h"
#include "test_util.h"

static char g_dir[600];

static const char *path_of(const char *name)
{
    static char buf[8][800];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 800, "%s/%s", g_dir, name);
    return b;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
}

static bool holds(const char *path, const char *text)
{
    size_t len;
    char *got = tu_read_file(path, &len);
    bool same = got && len == strlen(text) && memcmp(got, text, len) == 0;
    free(got);
    return same;
}

/* Temporary files left in the directory. */
static int leftovers(void)
{
    DIR *d = opendir(g_dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

typedef fmlp_status (*writer)(const char *path, void *arg);

static fmlp_status write_bytes(const char *path, void *arg)
{
    const char *text = arg;
    return fmlp_file_write(path, text, strlen(text));
}

/* `w` under each injected failure, onto a file holding "old". */
static void failures(const char *what, const char *name, writer w, void *arg)
{
    static const struct {
        fmlp_file_out_stage stage;
        int64_t after;
        const char *name;
    } cases[] = {{FMLP_FILE_OUT_FAIL_WRITE, 0, "the first write"},
                 {FMLP_FILE_OUT_FAIL_WRITE, 100, "a write after 100 bytes (disk full)"},
                 {FMLP_FILE_OUT_FAIL_SYNC, 0, "fsync"},
                 {FMLP_FILE_OUT_FAIL_CLOSE, 0, "close"},
                 {FMLP_FILE_OUT_FAIL_RENAME, 0, "the rename"}};
    const char *path = path_of(name);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        put(path, "old");
        fmlp_clear_error();
        fmlp_file_out_test_fail(cases[i].stage, cases[i].after);
        fmlp_status s = w(path, arg);
        fmlp_file_out_test_fail(FMLP_FILE_OUT_OK, 0);
        tu_check(s == FMLP_ERR_IO && strstr(fmlp_last_error(), name) && holds(path, "old") && leftovers() == 0,
                 "%s, %s failing: I/O error naming the file, old file intact, no temporary left (%s)", what,
                 cases[i].name, fmlp_last_error());
    }
    tu_check(w(path, arg) == FMLP_OK && !holds(path, "old") && leftovers() == 0, "%s: then it writes", what);
    char link_name[64];
    snprintf(link_name, sizeof link_name, "link-to-%s", name);
    const char *link = path_of(link_name);
    unlink(link);
    put(path, "old");
    if (symlink(name, link) != 0) return;
    struct stat st;
    tu_check(w(link, arg) == FMLP_OK && lstat(link, &st) == 0 && S_ISLNK(st.st_mode) && !holds(path, "old") &&
                 leftovers() == 0,
             "%s through a relative symlink: the target is replaced, the link stays", what);
    fmlp_clear_error();
    tu_check(w("/dev/full", arg) == FMLP_ERR_IO && strstr(fmlp_last_error(), "/dev/full"), "%s onto /dev/full: %s",
             what, fmlp_last_error());
}

static void helper(void)
{
    const char *path = path_of("plain.txt");
    unlink(path);
    tu_check(fmlp_file_write(path, "hello", 5) == FMLP_OK && holds(path, "hello"), "a new file");
    chmod(path, 0640);
    struct stat st;
    tu_check(fmlp_file_write(path, "again", 5) == FMLP_OK && holds(path, "again") && stat(path, &st) == 0 &&
                 (st.st_mode & 0777) == 0640,
             "a replaced file keeps its permissions (0%o)", st.st_mode & 0777);
    failures("fmlp_file_write", "plain.txt", write_bytes, "new contents, long enough to cross the injected limit "
             "of one hundred bytes in the middle of this sentence, and then some");

    const char *dangling = path_of("dangling"), *made = path_of("made-by-link.txt");
    unlink(dangling);
    unlink(made);
    if (symlink(made, dangling) == 0)
        tu_check(fmlp_file_write(dangling, "x", 1) == FMLP_OK && holds(made, "x") && lstat(dangling, &st) == 0 &&
                     S_ISLNK(st.st_mode),
                 "a dangling absolute symlink: its target is created, the link stays");
    const char *a = path_of("loop-a"), *b = path_of("loop-b");
    unlink(a);
    unlink(b);
    if (symlink("loop-b", a) == 0 && symlink("loop-a", b) == 0) {
        fmlp_clear_error();
        tu_check(fmlp_file_write(a, "x", 1) == FMLP_ERR_IO && leftovers() == 0, "a symlink loop: %s", fmlp_last_error());
    }
    const char *dir = path_of("a-directory");
    mkdir(dir, 0755);
    fmlp_clear_error();
    tu_check(fmlp_file_write(dir, "x", 1) == FMLP_ERR_IO && strstr(fmlp_last_error(), "directory"),
             "a directory in the way: %s", fmlp_last_error());
    fmlp_clear_error();
    tu_check(fmlp_file_write(path_of("no/such/dir/f.txt"), "x", 1) == FMLP_ERR_IO, "a missing directory: %s",
             fmlp_last_error());
}

/* A profiler with one closed window of a small forward. */
static fmlp_profiler *profiled(fmlp_ctx *ctx, fmlp_mlp *m)
{
    fmlp_profiler_options o = fmlp_profiler_options_default();
    o.record_shapes = true;
    o.profile_memory = true;
    fmlp_profiler *p;
    if (fmlp_profiler_create(ctx, &o, &p) != FMLP_OK) return NULL;
    float x[4 * 16], y[4 * 16];
    tu_fill(FMLP_F32, x, 4 * 16, -1, 1, NULL);
    fmlp_tensor tx = fmlp_tensor_view(x, FMLP_F32, 4, 16, 16), ty = fmlp_tensor_view(y, FMLP_F32, 4, 16, 16);
    fmlp_profiler_start(p);
    fmlp_mlp_forward(m, FMLP_MODE_EAGER, &tx, &ty);
    fmlp_profiler_stop(p);
    return p;
}

static fmlp_status export(const char *path, void *p) { return fmlp_profiler_export_trace(p, path); }

static fmlp_status render(const char *path, void *t) { return fmlp_trace_render_svg(t, NULL, path); }

static fmlp_status save(const char *path, void *m) { return fmlp_mlp_save_safetensors(m, path, NULL); }

static fmlp_status st_write(const char *path, void *arg)
{
    (void)arg;
    float v[6] = {1, 2, 3, 4, 5, 6};
    fmlp_st_tensor t = {"y", FMLP_F32, 2, {2, 3, 0}, v};
    return fmlp_st_write(path, &t, 1);
}

static fmlp_status ceilings(const char *path, void *arg)
{
    (void)arg;
    fmlp_ceilings c = {.gemm_gflops_f32 = 100, .gemm_gflops_bf16 = 400, .mem_gbps = 20, .measured = true};
    return fmlp_ceilings_save(path, &c, 3);
}

/* Memory failing at each allocation of a writer: it fails and leaves the
 * old file, or (once past the last allocation) writes the very bytes it
 * writes without failures. */
static void out_of_memory(const char *what, const char *name, writer w, void *arg)
{
    char ref_name[80];
    snprintf(ref_name, sizeof ref_name, "reference-%s", name);
    const char *path = path_of(name), *ref = path_of(ref_name);
    if (w(ref, arg) != FMLP_OK) return;
    size_t ref_len;
    char *want = tu_read_file(ref, &ref_len);
    int failed = 0, bad = 0;
    int64_t n = 1;
    for (;; n++) {
        put(path, "old");
        fmlp_alloc_test_arm(n, 0);
        fmlp_status s = w(path, arg);
        bool fired = fmlp_alloc_test_fired();
        fmlp_alloc_test_disarm();
        if (!fired) {
            size_t len;
            char *got = tu_read_file(path, &len);
            tu_check(s == FMLP_OK && got && len == ref_len && memcmp(got, want, len) == 0,
                     "%s: past the last of %lld allocations the file is whole and the same", what, (long long)n - 1);
            free(got);
            break;
        }
        failed += s != FMLP_OK;
        bool wrong = s != FMLP_ERR_OUT_OF_MEMORY || !holds(path, "old") || leftovers() != 0;
        if (wrong) printf("  allocation %lld: %s (%s)\n", (long long)n, fmlp_status_name(s), fmlp_last_error());
        bad += wrong;
    }
    tu_check(n > 1 && failed == n - 1 && bad == 0,
             "%s: each of %lld allocations failing fails it with out of memory, old file intact (%d not)", what,
             (long long)n - 1, bad);
    free(want);
}

int main(void)
{
    tu_seed();
    snprintf(g_dir, sizeof g_dir, "%s/file_out", tu_tmpdir());
    mkdir(g_dir, 0755);
    helper();
    fmlp_ctx *ctx = tu_ctx(1);
    fmlp_mlp *m;
    fmlp_mlp_desc d = {FMLP_BLOCK_GATED, 16, 24, 0, 0, FMLP_ACT_GELU_TANH, true, FMLP_F32};
    if (!ctx || !tu_check(fmlp_mlp_create(ctx, &d, 3, &m) == FMLP_OK, "an MLP")) return tu_finish();
    fmlp_profiler *p = profiled(ctx, m);
    if (tu_check(p != NULL, "a profiled window")) {
        failures("trace export", "t.json", export, p);
        failures("gzip'd trace export", "t.json.gz", export, p);
        out_of_memory("trace export", "oom.json", export, p);
        out_of_memory("gzip'd trace export", "oom.json.gz", export, p);
        fmlp_trace *t = NULL;
        if (tu_check(fmlp_trace_open(path_of("t.json"), &t) == FMLP_OK, "the exported trace opens")) {
            failures("SVG render", "t.svg", render, t);
            out_of_memory("SVG render", "oom.svg", render, t);
            fmlp_trace_close(t);
        }
        fmlp_profiler_destroy(p);
    }
    failures("the ceilings cache", "ceilings.json", ceilings, NULL);
    out_of_memory("the ceilings cache", "oom-ceilings.json", ceilings, NULL);
    failures("fmlp_st_write", "y.safetensors", st_write, NULL);
    failures("fmlp_mlp_save_safetensors", "w.safetensors", save, m);
    out_of_memory("fmlp_mlp_save_safetensors", "oom.safetensors", save, m);
    fmlp_mlp_destroy(m);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
