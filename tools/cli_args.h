/* Why: every subcommand parses flags the same way and fails the same way:
 * a one-line error naming the flag and the bad value, the usage, exit 2. */
#ifndef FMLP_CLI_ARGS_H
#define FMLP_CLI_ARGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_USAGE_ERROR 2

/* The value after flag argv[*i] (advancing *i), or NULL after printing an
 * error when it is missing. */
const char *cli_value(int argc, char **argv, int *i, const char *cmd);
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
