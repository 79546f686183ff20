/* Why: one thread-local slot for the message of the last failure, so every
 * public call can return a plain status and still say what went wrong. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char g_last_error[1024];

fmlp_status fmlp_fail(fmlp_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_last_error, sizeof g_last_error, fmt, ap);
    va_end(ap);
    return s;
}

void fmlp_clear_error(void) { g_last_error[0] = 0; }

const char *fmlp_last_error(void) { return g_last_error; }

const char *fmlp_status_name(fmlp_status s)
{
    switch (s) {
    case FMLP_OK: return "ok";
    case FMLP_ERR_INVALID_ARGUMENT: return "invalid argument";
    case FMLP_ERR_SHAPE: return "shape mismatch";
    case FMLP_ERR_OUT_OF_MEMORY: return "out of memory";
    case FMLP_ERR_IO: return "I/O error";
    case FMLP_ERR_FORMAT: return "malformed file";
    case FMLP_ERR_UNSUPPORTED: return "unsupported";
    case FMLP_ERR_NO_DEVICE: return "no device";
    case FMLP_ERR_DEVICE: return "device error";
    case FMLP_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}
