/* Why: a timeline anyone can open, on machines where Perfetto is out of
 * reach: `fmlp trace render` draws an event set as one standalone SVG. */
#ifndef FMLP_PROFILER_SVG_H
#define FMLP_PROFILER_SVG_H

#include <stdio.h>

#include "profiler/events.h"

typedef struct {
    const char *title;  /* first line above the timeline; NULL = none */
    int64_t t0, t1;     /* the time range drawn (ns); t1 <= t0 = everything */
    int width;          /* pixels; 0 = 1600 */
} pe_svg_options;

/* false when out of memory. */
bool pe_render_svg(const pe_set *s, const pe_svg_options *opt, FILE *f);

#endif
