/* Why: `fmlp trace` reads whatever file it is given. Each way a file used
 * to take the reader down is reproduced here and must now be refused
 * quickly, with a message naming the problem (and the limit and its
 * variable, where a limit decides), holding little memory while it reads:
 * an array of millions of tiny elements, a FIFO, a directory, a truncated
 * or corrupt .gz, a gzip bomb, deep nesting, an endless name, too many
 * distinct names, a bad limit setting. Memory is measured in a child
 * process, as the growth of its peak resident size during the one read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profiler/prof.h"
#include "profiler/trace_read.h"
#include "test_util.h"

static char g_path[1024];

static const char *tmp(const char *name)
{
    snprintf(g_path, sizeof g_path, "%s/hostile_%s", tu_tmpdir(), name);
    return g_path;
}

/* A file made of a head, `n` copies of `unit` and a tail. */
static const char *write_repeat(const char *name, const char *head, const char *unit, size_t n, const char *tail)
{
    const char *path = tmp(name);
    FILE *f = fopen(path, "wb");
    fputs(head, f);
    char block[4096];
    size_t ul = strlen(unit), per = sizeof block / ul;
    for (size_t i = 0; i < per; i++) memcpy(block + i * ul, unit, ul);
    for (size_t done = 0; done < n; done += per) fwrite(block, ul, n - done < per ? n - done : per, f);
    fputs(tail, f);
    fclose(f);
    return path;
}

typedef struct {
    fmlp_status st;
    char msg[1024];
    long grew_kb; /* peak resident growth during the read */
} outcome;

static void open_trace(void *path, void *out)
{
    outcome *o = out;
    fmlp_trace *t = NULL;
    o->st = fmlp_trace_open(path, &t);
    snprintf(o->msg, sizeof o->msg, "%s", fmlp_last_error());
    fmlp_trace_close(t);
}

/* Opens `path` as a trace in a child process, measuring what it held. */
static outcome open_in_child(const char *path)
{
    outcome o = {FMLP_ERR_INTERNAL, "", -1};
    long grew;
    if (tu_run_in_child(open_trace, (void *)path, &o, sizeof o, &grew)) o.grew_kb = grew;
    return o;
}

/* The same with environment variable `var` set to `value` meanwhile. */
static outcome open_under(const char *var, const char *value, const char *path)
{
    setenv(var, value, 1);
    outcome o = open_in_child(path);
    unsetenv(var);
    return o;
}

static bool has(const outcome *o, const char *a, const char *b)
{
    return strstr(o->msg, a) && (!b || strstr(o->msg, b));
}

static void test_tiny_elements(void)
{
    /* 10M elements in 20 MB: the old reader held 1.1 GB of tree for this. */
    const char *path = write_repeat("zeros.json", "{\"traceEvents\":[0", ",0", 10000000, "]}");
    outcome o = open_under("FMLP_TRACE_MAX_EVENTS", "1000000", path);
    tu_check(o.st == FMLP_ERR_UNSUPPORTED && has(&o, "more than 1000000 events", "FMLP_TRACE_MAX_EVENTS"),
             "20 MB of [0,0,...] under FMLP_TRACE_MAX_EVENTS=1000000: refused by the limit (%s)", o.msg);
    tu_check(o.grew_kb >= 0 && o.grew_kb < 64 * 1024, "  holding %ld KB while reading (< 64 MB)", o.grew_kb);
    o = open_in_child(path);
    tu_check(o.st == FMLP_OK && o.grew_kb >= 0 && o.grew_kb < 64 * 1024,
             "the same under the default limit: read (no events), holding %ld KB", o.grew_kb);
    unlink(path);
}

static void test_not_files(void)
{
    const char *fifo = tmp("fifo.json");
    unlink(fifo);
    if (mkfifo(fifo, 0600) == 0) {
        outcome o = open_in_child(fifo);
        tu_check(o.st == FMLP_ERR_IO && has(&o, "FIFO", "not a regular file"), "a FIFO is refused, not waited on: %s",
                 o.msg);
        unlink(fifo);
    } else {
        tu_skip("cannot make a FIFO in %s: %s", tu_tmpdir(), strerror(errno));
    }
    outcome o = open_in_child(tu_tmpdir());
    tu_check(o.st == FMLP_ERR_IO && has(&o, "directory", "not a regular file"), "a directory is refused: %s", o.msg);
    o = open_in_child("/dev/zero");
    tu_check(o.st == FMLP_ERR_IO && has(&o, "character device", NULL), "/dev/zero is refused: %s", o.msg);
}

/* Writes `text` gzip'd to `name`; false when this build has no zlib. */
static bool write_gz(const char *name, const char *text, size_t len)
{
    return prof_write_file(tmp(name), text, len) == FMLP_OK;
}

static size_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (size_t)sb.st_size : 0;
}

static void test_gzip(void)
{
    const char *good = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,"
                       "\"ts\":10,\"dur\":5,\"args\":{}}]}";
    if (!write_gz("t.json.gz", good, strlen(good))) {
        tu_skip("built without zlib: %s", fmlp_last_error());
        return;
    }
    char whole[1024];
    snprintf(whole, sizeof whole, "%s", tmp("t.json.gz"));
    outcome o = open_in_child(whole);
    tu_check(o.st == FMLP_OK, "a .json.gz reads: %s", o.msg);

    size_t n = file_size(whole);
    FILE *f = fopen(whole, "rb");
    unsigned char *bytes = malloc(n);
    size_t got = fread(bytes, 1, n, f);
    fclose(f);
    f = fopen(tmp("cut.json.gz"), "wb");
    fwrite(bytes, 1, got / 2, f);
    fclose(f);
    o = open_in_child(tmp("cut.json.gz"));
    tu_check(o.st == FMLP_ERR_FORMAT && has(&o, "truncated gzip stream", "cut.json.gz") && !has(&o, "check the path", NULL),
             "a .gz cut in half says it is truncated: %s", o.msg);
    for (size_t i = 12; i < got - 8; i++) bytes[i] ^= 0x5a;
    f = fopen(tmp("bad.json.gz"), "wb");
    fwrite(bytes, 1, got, f);
    fclose(f);
    o = open_in_child(tmp("bad.json.gz"));
    tu_check(o.st == FMLP_ERR_FORMAT && has(&o, "corrupt gzip stream", NULL), "a .gz with damaged data says so: %s", o.msg);
    free(bytes);

    /* A bomb: 64 MB of whitespace in a small file, past a 16 MB limit. */
    size_t big = 64u << 20;
    char *text = malloc(big);
    memset(text, ' ', big);
    memcpy(text, "{\"traceEvents\":[", 16);
    memcpy(text + big - 2, "]}", 2);
    tu_check(write_gz("bomb.json.gz", text, big), "gzip bomb written");
    free(text);
    o = open_under("FMLP_TRACE_MAX_BYTES", "16000000", tmp("bomb.json.gz"));
    tu_check(o.st == FMLP_ERR_UNSUPPORTED && has(&o, "FMLP_TRACE_MAX_BYTES", "decompressed"),
             "a %zu KB .gz inflating to 64 MB is stopped at the 16 MB limit: %s", file_size(tmp("bomb.json.gz")) / 1024,
             o.msg);
    tu_check(o.grew_kb >= 0 && o.grew_kb < 64 * 1024, "  holding %ld KB while reading", o.grew_kb);
    unlink(tmp("bomb.json.gz"));
}

static void test_limits(void)
{
    const char *path = write_repeat("plain.json", "{\"traceEvents\":[", " ", 2000000, "]}");
    outcome o = open_under("FMLP_TRACE_MAX_BYTES", "1000000", path);
    tu_check(o.st == FMLP_ERR_UNSUPPORTED && has(&o, "FMLP_TRACE_MAX_BYTES", "bytes"),
             "a 2 MB file past FMLP_TRACE_MAX_BYTES=1000000 is refused before reading: %s", o.msg);
    o = open_under("FMLP_TRACE_MAX_BYTES", "lots", path);
    tu_check(o.st == FMLP_ERR_INVALID_ARGUMENT && has(&o, "FMLP_TRACE_MAX_BYTES=\"lots\"", "whole number"),
             "a limit that is not a number is named: %s", o.msg);

    path = write_repeat("deep.json", "{\"traceEvents\":[{\"args\":", "[", 100000, "");
    o = open_in_child(path);
    tu_check(o.st == FMLP_ERR_UNSUPPORTED && has(&o, "nesting deeper than 64", "FMLP_TRACE_MAX_DEPTH"),
             "100000 nested arrays: refused at depth 64: %s", o.msg);

    path = write_repeat("long.json", "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"name\":\"", "k", 100000,
                        "\"}]}");
    o = open_in_child(path);
    tu_check(o.st == FMLP_ERR_UNSUPPORTED && has(&o, "string of more than 65536 bytes", "FMLP_TRACE_MAX_STRING"),
             "a 100 KB name: refused by the 64 KiB string limit: %s", o.msg);
    o = open_under("FMLP_TRACE_MAX_STRING", "200000", path);
    tu_check(o.st == FMLP_OK, "  read once FMLP_TRACE_MAX_STRING=200000: %s", o.msg);

    /* 100 distinct names of 40 bytes: past a 2000-byte limit on names. */
    FILE *f = fopen(tmp("names.json"), "wb");
    fputs("{\"traceEvents\":[", f);
    for (int i = 0; i < 100; i++)
        fprintf(f, "%s{\"ph\":\"X\",\"ts\":%d,\"dur\":1,\"name\":\"op_%036d\"}", i ? "," : "", i, i);
    fputs("]}", f);
    fclose(f);
    o = open_under("FMLP_TRACE_MAX_NAMES", "2000", tmp("names.json"));
    tu_check(o.st == FMLP_ERR_UNSUPPORTED && has(&o, "distinct names", "FMLP_TRACE_MAX_NAMES"),
             "100 distinct 40-byte names under FMLP_TRACE_MAX_NAMES=2000: refused: %s", o.msg);
    o = open_under("FMLP_TRACE_MAX_MEMORY", "4096", tmp("names.json"));
    tu_check(o.st == FMLP_ERR_UNSUPPORTED && has(&o, "FMLP_TRACE_MAX_MEMORY", NULL),
             "the same under FMLP_TRACE_MAX_MEMORY=4096: refused: %s", o.msg);
    o = open_in_child(tmp("names.json"));
    tu_check(o.st == FMLP_OK, "  and read under the defaults: %s", o.msg);
}

int main(void)
{
    tu_seed();
    test_tiny_elements();
    test_not_files();
    test_gzip();
    test_limits();
    return tu_finish();
}
