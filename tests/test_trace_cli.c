/* Why: the acceptance run is `fmlp mlp` on the tutorial's GeGLU
 * with --mode all: per mode a trace and a table under the tutorial's file
 * names. This runs the CLI exactly so and holds each file to the trace
 * rules (Trace Event Format, Kineto conventions, HTA's join fields), the
 * 5 / 4 / 2 kernels per step, and torch's table header and footer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "test_util.h"
#include "trace_check.h"

/* Distinct correlation ids of kernel events starting inside each step. */
static void check_counts(const json_value *evs, const char *mode, int want)
{
    const int steps = tc_check_step_kernels(evs, mode, want);
    tu_check(steps == 3, "%s: 3 active steps recorded (got %d)", mode, steps);
}

int main(void)
{
    const char *cli = getenv("FMLP_CLI");
    if (!cli || !*cli) {
        tu_skip("FMLP_CLI is not set (ctest sets it to the built fmlp)");
        return tu_finish();
    }
    char dir[512], cmd[2048];
    snprintf(dir, sizeof dir, "%s/trace_cli", tu_tmpdir());
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && '%s' mlp --mode all --iters 1 --trace-dir '%s' > '%s.out' 2>&1", dir, cli,
             dir, dir);
    int rc = system(cmd);
    tu_check(rc == 0, "fmlp mlp --mode all --trace-dir ran (status %d; output in %s.out)", rc, dir);
    static const struct {
        const char *mode;
        int kernels;
    } modes[] = {{"eager", 5}, {"compiled", 4}, {"fused", 2}};
    for (int i = 0; i < 3; i++) {
        char path[1024];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/64x128x768_bf16_warm_%s.txt", dir, modes[i].mode);
        char *table = tu_read_file(path, &len);
        tu_check(table && strstr(table, "Self CPU %") && strstr(table, "# of Calls") &&
                     strstr(table, "\nSelf CPU time total: ") && strstr(table, "fmlp::mlp"),
                 "%s: %s holds torch's header, the fmlp::mlp row and the footer", modes[i].mode, path);
        free(table);
        snprintf(path, sizeof path, "%s/64x128x768_bf16_warm_%s.json", dir, modes[i].mode);
        char *text = tu_read_file(path, &len);
        json_doc *d = text ? json_parse(text, len, NULL) : NULL;
        tu_check(d != NULL, "%s: %s parses as JSON", modes[i].mode, path);
        if (d) {
            const json_value *root = json_doc_root(d);
            tc_check_trace(root, modes[i].mode);
            check_counts(json_get(root, "traceEvents"), modes[i].mode, modes[i].kernels);
        }
        json_free(d);
        free(text);
    }
    return tu_finish();
}
