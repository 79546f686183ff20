/* Why: see file_in.h. O_NONBLOCK makes open() return at once even for a
 * FIFO with no writer; the mode from fstat then decides, and for a regular
 * file the flag is cleared again (it has no effect on regular files, but
 * whoever reads the descriptor should not see it). */
#include "core/file_in.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"

static const char *kind_of(mode_t m)
{
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a plain file";
}

bool file_in_open(const char *path, int *fd, uint64_t *size, char *why, size_t why_len)
{
    *fd = -1;
    *size = 0;
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (f < 0) {
        snprintf(why, why_len, "%s", strerror(errno));
        return false;
    }
    struct stat sb;
    if (fstat(f, &sb) != 0) {
        snprintf(why, why_len, "%s", strerror(errno));
        close(f);
        return false;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(why, why_len, "is %s, not a regular file", kind_of(sb.st_mode));
        close(f);
        return false;
    }
    int flags = fcntl(f, F_GETFL);
    if (flags >= 0) fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
    *fd = f;
    *size = (uint64_t)sb.st_size;
    return true;
}

bool file_in_read(const char *path, size_t max, char **buf, size_t *len, char *why, size_t why_len)
{
    *buf = NULL;
    *len = 0;
    int fd;
    uint64_t size;
    if (!file_in_open(path, &fd, &size, why, why_len)) return false;
    if (size > max) {
        snprintf(why, why_len, "is %llu bytes, more than the %zu bytes such a file can hold", (unsigned long long)size, max);
        close(fd);
        return false;
    }
    /* One byte beyond the size: a file that grew since fstat is caught. */
    char *b = fmlp_malloc((size_t)size + 2);
    if (!b) {
        snprintf(why, why_len, "out of memory reading %llu bytes", (unsigned long long)size);
        close(fd);
        return false;
    }
    size_t n = 0;
    while (n < (size_t)size + 1) {
        ssize_t got = read(fd, b + n, (size_t)size + 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            snprintf(why, why_len, "%s", strerror(errno));
            free(b);
            close(fd);
            return false;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    close(fd);
    if (n > max) {
        snprintf(why, why_len, "grew past %zu bytes while being read", max);
        free(b);
        return false;
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    return true;
}
