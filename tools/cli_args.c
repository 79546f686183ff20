/* Why: shared flag parsing for the CLI (see cli_args.h). */
#include "cli_args.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fmlp %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

const char *cli_value(int argc, char **argv, int *i, const char *cmd)
{
    if (*i + 1 >= argc) {
        cli_error(cmd, "%s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

bool cli_parse_i64(const char *cmd, const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        cli_error(cmd, "%s: \"%s\" is not an integer in %lld..%lld", flag, s, (long long)lo, (long long)hi);
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_int(const char *cmd, const char *flag, const char *s, int lo, int hi, int *out)
{
    int64_t v;
    if (!cli_parse_i64(cmd, flag, s, lo, hi, &v)) return false;
    *out = (int)v;
    return true;
}

bool cli_parse_double(const char *cmd, const char *flag, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
        cli_error(cmd, "%s: \"%s\" is not a number in %g..%g", flag, s, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

int cli_split_list(const char *s, char *buf, size_t buflen, const char **items, int cap)
{
    if (!s || !*s || strlen(s) >= buflen) return -1;
    strcpy(buf, s);
    int n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (n == cap) return -1;
        items[n++] = tok;
    }
    return n ? n : -1;
}

bool cli_is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }
