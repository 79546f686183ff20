/* Why: every subcommand parses flags the same way and fails the same way:
 * a one-line error naming the flag and the bad value, the usage, exit 2.
 * Flags are read with getopt_long, in order, and flag groups that several
 * subcommands share (model flags, profiling flags) are option arrays joined
 * per subcommand, each with its own handler. */
#ifndef FMLP_CLI_ARGS_H
#define FMLP_CLI_ARGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_USAGE_ERROR 2

/* Option values of the flag groups, in ranges of their own so the arrays
 * of several groups can be joined; 'h' and 'o' are the only short flags. */
enum { CLI_OPT_MODEL = 0x100, CLI_OPT_PROFILE = 0x200, CLI_OPT_COMMAND = 0x300 };

/* What cli_next gives instead of an option's value. */
enum { CLI_ARG_POSITIONAL = 1, CLI_ARG_UNKNOWN = -2 };

#define CLI_MAX_OPTIONS 48

/* The options of one subcommand: its groups' arrays joined. */
typedef struct {
    struct option o[CLI_MAX_OPTIONS + 1]; /* ends with a zeroed entry */
    int n;
} cli_options;
/* Appends `group` (ended by a zeroed entry) to `l`. */
void cli_options_add(cli_options *l, const struct option *group);

/* One word of a command line, as parsed. */
typedef struct {
    int val;           /* the option's val, CLI_ARG_POSITIONAL or CLI_ARG_UNKNOWN */
    const char *word;  /* the word as written: the flag, or the positional argument */
    const char *value; /* the flag's value (the next word); NULL when it takes none or it is missing */
    bool missing;      /* the flag takes a value and was the last word */
} cli_arg;

typedef struct {
    int argc;
    char **argv;
    const cli_options *opts;
    char shortopts[16]; /* getopt's optstring: "-:" and the short flags */
    bool started;
} cli_parser;

/* Parses argv[1..argc) (argv[0] is the subcommand's name) with getopt_long
 * returning positional arguments in place ("-" ordering, so nothing is
 * permuted). `shorts` lists the short flags, e.g. "h" or "ho:". Flags are
 * whole words as the CLI has always taken them: "--name VALUE" and "-h";
 * abbreviations, "--name=VALUE", "-hx", "-oFILE" and "--" come back as
 * CLI_ARG_UNKNOWN, so scripts keep seeing the same errors. */
void cli_parser_init(cli_parser *p, int argc, char **argv, const cli_options *opts, const char *shorts);
/* The next word, or false at the end. */
bool cli_next(cli_parser *p, cli_arg *a);

/* A subcommand whose words are all flags: its name, its usage and one
 * handler for every flag it takes. */
typedef struct {
    const char *cmd;
    /* 1 taken, 0 not one of its flags, -1 bad value (message printed). */
    int (*take)(void *state, const cli_arg *a);
    void (*usage)(FILE *f, const void *state);
    void *state;
} cli_command;
/* Reads every word in order: -h/--help prints the usage to stdout (0); a
 * word no handler takes is an unknown argument, and that or a bad value
 * prints the usage to stderr (-1); 1 when all were taken. */
int cli_parse(const cli_command *c, int argc, char **argv, const cli_options *opts);

/* The flag's value, or NULL after printing "fmlp CMD: FLAG needs a value"
 * when it is missing. */
const char *cli_arg_value(const cli_arg *a, const char *cmd);
bool cli_parse_i64(const char *cmd, const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out);
bool cli_parse_int(const char *cmd, const char *flag, const char *s, int lo, int hi, int *out);
bool cli_parse_double(const char *cmd, const char *flag, const char *s, double lo, double hi, double *out);
/* Splits a comma list into at most `cap` items (pointers into a copy kept
 * in `buf`); returns the count, or -1 when empty or too long. */
int cli_split_list(const char *s, char *buf, size_t buflen, const char **items, int cap);
/* Prints "fmlp CMD: message" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool cli_is_help(const char *arg);

#endif
