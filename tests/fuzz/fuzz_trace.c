/* Why: `fmlp trace summarize|render|diff` read Chrome/Kineto trace files
 * that torch.profiler or anyone else wrote. Each input goes through the
 * whole path those commands take: parse into the event model, build the
 * call tree and the analyses, print the table, draw the SVG and write the
 * trace back out. Output goes to a memory stream that is thrown away. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "profiler/analysis.h"
#include "profiler/prof.h"
#include "profiler/svg.h"
#include "profiler/trace_read.h"
#include "profiler/tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pe_set s;
    if (pe_parse_trace((const char *)data, size, "fuzz input", &s) == FMLP_OK) {
        char *mem = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&mem, &len);
        fmlp_table_options t = fmlp_table_options_default();
        t.analyses = true;
        fmlp_status st;
        free(prof_table(&s, &t, true, &st));
        pe_calls cs;
        if (pe_calls_build(&s, &cs)) {
            pe_analysis a;
            if (pe_analyze(&s, &cs, &a)) {
                pe_analysis_print(&a, &s, out);
                pe_analysis_json(&a, &s, out);
                pe_analysis_free(&a);
            }
            pe_calls_free(&cs);
        }
        pe_svg_options o = {"fuzz", 0, 0, 0};
        pe_render_svg(&s, &o, out);
        fmlp_profiler_options po = fmlp_profiler_options_default();
        size_t n = 0;
        free(prof_trace_json(&s, &po, &n));
        fclose(out);
        free(mem);
    }
    pe_set_free(&s);
    return 0;
}
