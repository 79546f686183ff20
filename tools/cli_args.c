/* Why: shared flag parsing for the CLI (see cli_args.h). */
#include "cli_args.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
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

void cli_options_add(cli_options *l, const struct option *group)
{
    for (; group->name; group++) {
        assert(l->n < CLI_MAX_OPTIONS);
        l->o[l->n++] = *group;
    }
    memset(&l->o[l->n], 0, sizeof l->o[l->n]);
}

void cli_parser_init(cli_parser *p, int argc, char **argv, const cli_options *opts, const char *shorts)
{
    *p = (cli_parser){.argc = argc, .argv = argv, .opts = opts};
    snprintf(p->shortopts, sizeof p->shortopts, "-:%s", shorts);
}

/* Whether `word` spells the flag `val` out in full. */
static bool whole_word(const cli_parser *p, const char *word, int val)
{
    if (strncmp(word, "--", 2) == 0) {
        for (const struct option *o = p->opts->o; o->name; o++)
            if (o->val == val && strcmp(o->name, word + 2) == 0) return true;
        return false;
    }
    return word[0] == '-' && word[1] == val && !word[2];
}

bool cli_next(cli_parser *p, cli_arg *a)
{
    if (!p->started) optind = 0; /* glibc: start afresh, for each subcommand */
    p->started = true;
    opterr = 0;
    int at = optind ? optind : 1;
    memset(a, 0, sizeof *a);
    if (at >= p->argc) return false;
    a->word = p->argv[at];
    if (strcmp(a->word, "--") == 0) { /* getopt's end of flags, never one of ours */
        optind = at + 1;
        a->val = CLI_ARG_UNKNOWN;
        return true;
    }
    int c = getopt_long(p->argc, p->argv, p->shortopts, p->opts->o, NULL);
    if (c == -1) return false;
    if (c == CLI_ARG_POSITIONAL || c == '?') {
        a->val = c == '?' ? CLI_ARG_UNKNOWN : c;
        return true;
    }
    a->missing = c == ':';
    a->val = a->missing ? optopt : c;
    a->value = a->missing ? NULL : optarg;
    if (!whole_word(p, a->word, a->val)) *a = (cli_arg){CLI_ARG_UNKNOWN, a->word, NULL, false};
    return true;
}

int cli_parse(const cli_command *c, int argc, char **argv, const cli_options *opts)
{
    cli_parser p;
    cli_parser_init(&p, argc, argv, opts, "h");
    cli_arg a;
    while (cli_next(&p, &a)) {
        if (a.val == 'h') {
            c->usage(stdout, c->state);
            return 0;
        }
        int k = c->take(c->state, &a);
        if (k == 0) cli_error(c->cmd, "unknown argument \"%s\"", a.word);
        if (k != 1) {
            c->usage(stderr, c->state);
            return -1;
        }
    }
    return 1;
}

const char *cli_arg_value(const cli_arg *a, const char *cmd)
{
    if (a->missing) cli_error(cmd, "%s needs a value", a->word);
    return a->value;
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
