/* Why: `fmlp trace` works on files, not live runs: this reads a trace that
 * fmlp or torch.profiler wrote (Kineto JSON, the legacy autograd-profiler
 * array, either one gzip'd) back into the event model, so the same table,
 * analyses, diff and SVG apply to both. Real traces run to gigabytes: the
 * file is streamed once, never held, within the limits of trace_limits.h. */
#ifndef FMLP_PROFILER_TRACE_READ_H
#define FMLP_PROFILER_TRACE_READ_H

#include "fmlp.h"
#include "profiler/events.h"

/* Fills `s` (initialised here; free with pe_set_free even on failure). */
fmlp_status pe_read_trace(const char *path, pe_set *s);
/* The same from bytes already in memory; `what` names them in messages. */
fmlp_status pe_parse_trace(const char *text, size_t len, const char *what, pe_set *s);

#endif
