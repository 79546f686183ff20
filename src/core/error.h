/* Why: the library never aborts on bad input; every failure path goes
 * through fmlp_fail(), which records a thread-local message naming the bad
 * value and the fix, and returns the status for the caller to pass up. */
#ifndef FMLP_CORE_ERROR_H
#define FMLP_CORE_ERROR_H

#include "fmlp.h"

#if defined(__GNUC__)
#define FMLP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define FMLP_PRINTF(a, b)
#endif

fmlp_status fmlp_fail(fmlp_status s, const char *fmt, ...) FMLP_PRINTF(2, 3);
void fmlp_clear_error(void);

#endif
