/* Why: a path handed in as data (a trace, a safetensors file, an --input,
 * the ceilings cache) may name a FIFO, a device or a directory, and opening
 * one of those as a file blocks forever or reads without end. Every data
 * file is opened here: without blocking, then checked with fstat, and only a
 * regular file gets through; whole-file reads are capped. */
#ifndef FMLP_CORE_FILE_IN_H
#define FMLP_CORE_FILE_IN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Opens `path` read-only when it is a regular file: *fd (close it) and its
 * size. Otherwise false, with the problem in `why` ("is a FIFO (named pipe),
 * not a regular file", "No such file or directory") and *fd = -1. */
bool file_in_open(const char *path, int *fd, uint64_t *size, char *why, size_t why_len);

/* The whole regular file, NUL-terminated, in malloc'd *buf (length *len),
 * refused when it holds more than `max` bytes. false with `why` as above. */
bool file_in_read(const char *path, size_t max, char **buf, size_t *len, char *why, size_t why_len);

#endif
