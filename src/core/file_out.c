/* Why: see file_out.h. */
#define _GNU_SOURCE
#include "core/file_out.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"

/* Symlinks followed at most, as the kernel's own limit (ELOOP past it). */
#define MAX_LINKS 40

static int g_fail_stage;
static int64_t g_fail_after;

void fmlp_file_out_test_fail(fmlp_file_out_stage stage, int64_t after)
{
    __atomic_store_n(&g_fail_after, after, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_fail_stage, (int)stage, __ATOMIC_SEQ_CST);
}

static bool injected(fmlp_file_out_stage stage) { return __atomic_load_n(&g_fail_stage, __ATOMIC_RELAXED) == (int)stage; }

/* `link`'s target read as a path: relative targets are taken from the
 * link's directory. Malloc'd; NULL with errno set. */
static char *link_target(const char *link)
{
    char buf[PATH_MAX];
    ssize_t n = readlink(link, buf, sizeof buf - 1);
    if (n < 0) return NULL;
    buf[n] = 0;
    const char *slash = strrchr(link, '/');
    if (buf[0] == '/' || !slash) return fmlp_strdup(buf);
    size_t dir = (size_t)(slash - link) + 1, len = dir + (size_t)n + 1;
    char *out = fmlp_malloc(len);
    if (!out) return NULL;
    memcpy(out, link, dir);
    memcpy(out + dir, buf, (size_t)n + 1);
    return out;
}

/* Follows the symlinks of the last component: the file to replace, which
 * may not exist yet. *st is its lstat (st_mode 0 when absent). */
static char *resolve(const char *path, struct stat *st)
{
    char *cur = fmlp_strdup(path);
    for (int hops = 0; cur; hops++) {
        if (lstat(cur, st) != 0) {
            if (errno != ENOENT) break;
            memset(st, 0, sizeof *st);
            return cur;
        }
        if (!S_ISLNK(st->st_mode)) return cur;
        if (hops == MAX_LINKS) {
            errno = ELOOP;
            break;
        }
        char *next = link_target(cur);
        free(cur);
        cur = next;
    }
    free(cur);
    return NULL;
}

static void release(fmlp_file_out *o)
{
    free(o->target);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    o->fd = -1;
}

/* "cannot write 'PATH': [WHAT: ]REASON; FIX" */
static fmlp_status fail_open(fmlp_file_out *o, const char *what, int e, const char *fix)
{
    fmlp_status s = fmlp_fail(e == ENOMEM ? FMLP_ERR_OUT_OF_MEMORY : FMLP_ERR_IO, "cannot write '%.300s': %s%s%s; %s",
                              o->path, what ? what : "", what ? ": " : "", strerror(e), fix);
    release(o);
    return s;
}

/* A fresh file next to the target; its name goes to o->tmp. */
static int open_temp(fmlp_file_out *o, mode_t mode)
{
    static unsigned counter;
    size_t cap = strlen(o->target) + 48;
    o->tmp = fmlp_malloc(cap);
    if (!o->tmp) {
        errno = ENOMEM;
        return -1;
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned k = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
        snprintf(o->tmp, cap, "%s.tmp.%ld.%u", o->target, (long)getpid(), k);
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

fmlp_status fmlp_file_out_open(fmlp_file_out *o, const char *path)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    o->path = path;
    if (!path || !path[0]) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "the output path is empty; give a file name");
    struct stat st;
    o->target = resolve(path, &st);
    const char *writable = "check that the directory exists and is writable";
    if (!o->target) return fail_open(o, "following its symlinks", errno, "check where the link points");
    if (S_ISDIR(st.st_mode)) return fail_open(o, NULL, EISDIR, "give a file name");
    if (st.st_mode && !S_ISREG(st.st_mode)) {
        /* Non-blocking open: a FIFO nobody reads fails (ENXIO) instead of
         * waiting forever; the writes themselves block as usual. */
        o->fd = open(o->target, O_WRONLY | O_CLOEXEC | O_APPEND | O_NONBLOCK);
        if (o->fd >= 0) {
            int fl = fcntl(o->fd, F_GETFL);
            if (fl != -1) (void)fcntl(o->fd, F_SETFL, fl & ~O_NONBLOCK);
        }
        return o->fd >= 0 ? FMLP_OK : fail_open(o, "opening it", errno, S_ISFIFO(st.st_mode) ? "start its reader first" : writable);
    }
    /* A replaced file keeps its permissions; a new one gets the umask's. */
    o->fd = open_temp(o, st.st_mode ? (st.st_mode & 07777) : 0666);
    if (o->fd < 0) return fail_open(o, "creating a temporary file beside it", errno, writable);
    if (st.st_mode) (void)fchmod(o->fd, st.st_mode & 07777);
    return FMLP_OK;
}

static void note(fmlp_file_out *o, int e)
{
    if (!o->err) o->err = e ? e : EIO;
}

bool fmlp_file_out_write(fmlp_file_out *o, const void *data, size_t len)
{
    const char *p = data;
    while (len && !o->err) {
        size_t chunk = len > ((size_t)1 << 30) ? (size_t)1 << 30 : len;
        if (injected(FMLP_FILE_OUT_FAIL_WRITE) && o->written + (int64_t)chunk > __atomic_load_n(&g_fail_after, __ATOMIC_RELAXED)) {
            note(o, ENOSPC);
            break;
        }
        ssize_t w = write(o->fd, p, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            note(o, w < 0 ? errno : ENOSPC);
            break;
        }
        p += w;
        len -= (size_t)w;
        o->written += w;
    }
    return !o->err;
}

/* stdio hands its buffer to this, so one write path checks everything. */
static ssize_t stream_write(void *cookie, const char *buf, size_t len)
{
    fmlp_file_out *o = cookie;
    return fmlp_file_out_write(o, buf, len) ? (ssize_t)len : -1;
}

FILE *fmlp_file_out_stream(fmlp_file_out *o)
{
    if (!o->stream) {
        cookie_io_functions_t io = {NULL, stream_write, NULL, NULL};
        o->stream = fopencookie(o, "w", io);
        if (!o->stream) note(o, errno);
    }
    return o->stream;
}

/* Closes the stream and the file, noting any failure. */
static void close_all(fmlp_file_out *o)
{
    if (o->stream) {
        if (fflush(o->stream) != 0 || ferror(o->stream)) note(o, errno);
        fclose(o->stream);
        o->stream = NULL;
    }
    if (o->fd >= 0) {
        bool regular = o->tmp != NULL;
        if (!o->err && regular && (injected(FMLP_FILE_OUT_FAIL_SYNC) || fsync(o->fd) != 0))
            note(o, injected(FMLP_FILE_OUT_FAIL_SYNC) ? ENOSPC : errno);
        if (close(o->fd) != 0 || injected(FMLP_FILE_OUT_FAIL_CLOSE)) note(o, injected(FMLP_FILE_OUT_FAIL_CLOSE) ? ENOSPC : errno);
        o->fd = -1;
    }
}

/* The directory entry made durable too; best effort. */
static void sync_dir(const char *target)
{
    const char *slash = strrchr(target, '/');
    char dir[PATH_MAX];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - target) + 1, target);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

fmlp_status fmlp_file_out_commit(fmlp_file_out *o)
{
    close_all(o);
    if (!o->err && o->tmp) {
        if (injected(FMLP_FILE_OUT_FAIL_RENAME))
            note(o, EXDEV);
        else if (rename(o->tmp, o->target) != 0)
            note(o, errno);
        else
            sync_dir(o->target);
    }
    if (o->err && o->tmp) unlink(o->tmp);
    fmlp_status s = FMLP_OK;
    if (o->err)
        s = fmlp_fail(o->err == ENOMEM ? FMLP_ERR_OUT_OF_MEMORY : FMLP_ERR_IO, "cannot write '%.300s': %s%s", o->path,
                      strerror(o->err), o->tmp ? "; nothing was written (check free space and permissions)" : "");
    release(o);
    return s;
}

void fmlp_file_out_abort(fmlp_file_out *o)
{
    note(o, ECANCELED);
    close_all(o);
    if (o->tmp) unlink(o->tmp);
    release(o);
}

fmlp_status fmlp_file_write(const char *path, const void *data, size_t len)
{
    if (!path || (!data && len)) return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "fmlp_file_write: %s is NULL", path ? "data" : "path");
    fmlp_file_out o;
    fmlp_status s = fmlp_file_out_open(&o, path);
    if (s != FMLP_OK) return s;
    fmlp_file_out_write(&o, data, len);
    return fmlp_file_out_commit(&o);
}
