/* Why: users carry torch.profiler's schedule in their heads. This checks the
 * step -> action mapping step by step against what torch.profiler.schedule
 * returns (tables below were read off torch's definition), then drives a
 * live profiler: which ProfilerStep#N spans and user ranges land in which
 * window, when on_trace_ready fires, and that warmup is discarded. */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "profiler/hook.h"
#include "profiler/trace_read.h"
#include "profiler/prof.h"
#include "test_util.h"

static fmlp_profiler_options sched(int skip_first, int wait, int warmup, int active, int repeat)
{
    fmlp_profiler_options o = fmlp_profiler_options_default();
    o.skip_first = skip_first;
    o.wait = wait;
    o.warmup = warmup;
    o.active = active;
    o.repeat = repeat;
    return o;
}

/* N none, W warmup, R record, S record-and-save. */
static void check_actions(fmlp_profiler_options o, const char *want)
{
    static const char letter[] = {'N', 'W', 'R', 'S'};
    char got[64];
    size_t n = strlen(want);
    for (size_t i = 0; i < n; i++) got[i] = letter[prof_schedule_action(&o, (int)i)];
    got[n] = 0;
    tu_check(strcmp(got, want) == 0, "skip_first=%d wait=%d warmup=%d active=%d repeat=%d: %s (got %s)", o.skip_first,
             o.wait, o.warmup, o.active, o.repeat, want, got);
}

static void test_actions(void)
{
    check_actions(sched(0, 1, 1, 2, 1), "NWRSNNNN");
    check_actions(sched(0, 1, 1, 3, 2), "NWRRSNWRRSNNN");
    check_actions(sched(2, 1, 1, 1, 2), "NNNWSNWSNN");
    check_actions(sched(0, 0, 1, 2, 0), "WRSWRSWRSWRS");
    check_actions(sched(0, 0, 0, 1, 0), "SSSSSS");
    check_actions(sched(0, 2, 0, 2, 1), "NNRSNNNN");
    check_actions(sched(0, 0, 0, 0, 0), "RRRRRR");
    fmlp_profiler_options bad = sched(0, 1, 1, 0, 1);
    tu_expect_fail(prof_schedule_check(&bad), FMLP_ERR_INVALID_ARGUMENT, "active=0 with a schedule");
    bad = sched(-1, 0, 0, 1, 0);
    tu_expect_fail(prof_schedule_check(&bad), FMLP_ERR_INVALID_ARGUMENT, "negative skip_first");
}

typedef struct {
    int calls;
    int step_at_call;
    char names[8][256];
} ready_log;

static int g_step;

static void on_ready(fmlp_profiler *p, void *user)
{
    ready_log *r = user;
    if (r->calls < 8) {
        char *s = r->names[r->calls];
        s[0] = 0;
        /* The window's spans, in recording order. */
        for (size_t i = 0; i < p->done.n; i++) {
            size_t l = strlen(s);
            snprintf(s + l, 256 - l, "%s%s", l ? " " : "", p->done.ev[i].name);
        }
    }
    r->step_at_call = g_step;
    r->calls++;
}

/* Runs `steps` steps, each holding one user range "rN"; returns the log. */
static void run(fmlp_ctx *ctx, fmlp_profiler_options o, int steps, bool stop, ready_log *log)
{
    memset(log, 0, sizeof *log);
    o.on_trace_ready = on_ready;
    o.user = log;
    fmlp_profiler *p;
    tu_check(fmlp_profiler_create(ctx, &o, &p) == FMLP_OK, "profiler created");
    tu_check(fmlp_profiler_start(p) == FMLP_OK, "started");
    for (g_step = 0; g_step < steps; g_step++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", g_step);
        fmlp_range_push(ctx, name);
        fmlp_range_pop(ctx);
        fmlp_profiler_step(p);
    }
    if (stop) tu_check(fmlp_profiler_stop(p) == FMLP_OK, "stopped");
    fmlp_profiler_destroy(p);
    tu_check(ctx->prof == NULL, "ctx->prof cleared after destroy");
}

static void test_live(fmlp_ctx *ctx)
{
    ready_log log;
    run(ctx, sched(0, 1, 1, 2, 1), 6, true, &log);
    tu_check(log.calls == 1 && log.step_at_call == 3, "wait1 warmup1 active2: one window, ready in step() after step 3");
    tu_check(strcmp(log.names[0], "ProfilerStep#2 r2 ProfilerStep#3 r3") == 0,
             "window holds steps 2 and 3 only (warmup discarded): \"%s\"", log.names[0]);

    run(ctx, sched(0, 0, 1, 1, 0), 6, true, &log);
    tu_check(log.calls == 3, "repeat=0 cycles until stop: 3 windows in 6 steps (got %d)", log.calls);
    tu_check(strcmp(log.names[2], "ProfilerStep#5 r5") == 0, "third window is step 5: \"%s\"", log.names[2]);

    run(ctx, sched(0, 0, 0, 5, 1), 2, true, &log);
    tu_check(log.calls == 1 && strcmp(log.names[0], "ProfilerStep#0 r0 ProfilerStep#1 r1 ProfilerStep#2") == 0,
             "stop inside an active window saves it, the open step closed: \"%s\"", log.names[0]);

    run(ctx, sched(1, 0, 0, 1, 1), 4, true, &log);
    tu_check(log.calls == 1 && strcmp(log.names[0], "ProfilerStep#1 r1") == 0,
             "skip_first=1: step numbers stay absolute: \"%s\"", log.names[0]);

    run(ctx, sched(0, 0, 0, 0, 0), 3, true, &log);
    tu_check(log.calls == 1 && strcmp(log.names[0], "r0 r1 r2") == 0,
             "no schedule: one window from start to stop, no ProfilerStep spans (as torch): \"%s\"", log.names[0]);

    run(ctx, sched(0, 1, 2, 1, 1), 2, true, &log);
    tu_check(log.calls == 0, "stop during warmup: nothing saved");
}

static void test_errors(fmlp_ctx *ctx)
{
    fmlp_profiler *p = NULL, *q = NULL;
    fmlp_profiler_options o = fmlp_profiler_options_default();
    tu_expect_fail(fmlp_profiler_create(NULL, &o, &p), FMLP_ERR_INVALID_ARGUMENT, "NULL ctx");
    tu_expect_fail(fmlp_profiler_create(ctx, &o, NULL), FMLP_ERR_INVALID_ARGUMENT, "NULL out");
    tu_check(fmlp_profiler_create(ctx, &o, &p) == FMLP_OK && fmlp_profiler_create(ctx, &o, &q) == FMLP_OK, "two profilers");
    tu_expect_fail(fmlp_profiler_step(p), FMLP_ERR_INVALID_ARGUMENT, "step before start");
    tu_expect_fail(fmlp_profiler_table(p, NULL, stdout), FMLP_ERR_INVALID_ARGUMENT, "table before any window");
    tu_expect_fail(fmlp_profiler_export_trace(p, "x.json"), FMLP_ERR_INVALID_ARGUMENT, "export before any window");
    fmlp_profiler_start(p);
    tu_expect_fail(fmlp_profiler_start(p), FMLP_ERR_INVALID_ARGUMENT, "start twice");
    tu_expect_fail(fmlp_profiler_start(q), FMLP_ERR_INVALID_ARGUMENT, "a second profiler on a recording context");
    fmlp_range_push(ctx, "x");
    fmlp_range_pop(ctx);
    fmlp_range_pop(ctx); /* unbalanced: ignored */
    fmlp_profiler_stop(p);
    tu_expect_fail(fmlp_profiler_stop(p), FMLP_ERR_INVALID_ARGUMENT, "stop twice");
    fmlp_table_options t = fmlp_table_options_default();
    t.sort_by = "nope";
    tu_expect_fail(fmlp_profiler_table(p, &t, stdout), FMLP_ERR_INVALID_ARGUMENT, "bad sort_by");
    char path[512];
    snprintf(path, sizeof path, "%s/no/such/dir/t.json", tu_tmpdir());
    tu_expect_fail(fmlp_profiler_export_trace(p, path), FMLP_ERR_IO, "unwritable trace path");
    fmlp_profiler_destroy(p);
    fmlp_profiler_destroy(q);
    fmlp_profiler_destroy(NULL);
    fmlp_range_push(NULL, "x");
    fmlp_range_pop(NULL);
    tu_check(true, "NULL-safe destroy and ranges");
}

/* Memory events reach the trace only when profile_memory is on, with
 * Kineto's fields and the running total handed in. */
static void test_memory(fmlp_ctx *ctx, bool on)
{
    fmlp_profiler_options o = fmlp_profiler_options_default();
    o.profile_memory = on;
    fmlp_profiler *p;
    fmlp_profiler_create(ctx, &o, &p);
    fmlp_profiler_start(p);
    static char block[64];
    fmlp_range_push(ctx, "alloc");
    fmlp_prof_memory_at(ctx->prof, -1, block, 4096, 8192);
    fmlp_prof_memory(ctx->prof, -1, -4096, 4096);
    fmlp_range_pop(ctx);
    fmlp_profiler_stop(p);
    char path[512];
    snprintf(path, sizeof path, "%s/memory_%d.json", tu_tmpdir(), on);
    tu_check(fmlp_profiler_export_trace(p, path) == FMLP_OK, "memory trace exported");
    fmlp_profiler_destroy(p);
    pe_set s;
    int n = 0;
    bool fields = true;
    if (pe_read_trace(path, &s) == FMLP_OK)
        for (size_t i = 0; i < s.n; i++) {
            if (s.ev[i].kind != PE_MEMORY) continue;
            const pe_more *m = pe_more_of(&s, &s.ev[i]);
            fields &= n == 0 ? m->mem_bytes == 4096 && m->mem_total == 8192 && m->mem_addr == (int64_t)(intptr_t)block
                             : m->mem_bytes == -4096 && m->mem_total == 4096 && m->mem_addr == 0;
            n++;
        }
    pe_set_free(&s);
    if (on)
        tu_check(n == 2 && fields, "profile_memory: 2 [memory] events with Bytes, Total Allocated and Addr (got %d)", n);
    else
        tu_check(n == 0, "profile_memory off: no memory events (got %d)", n);
}

int main(void)
{
    test_actions();
    fmlp_ctx_options co = fmlp_ctx_options_default();
    co.threads = 1;
    fmlp_ctx *ctx;
    if (fmlp_ctx_create(&co, &ctx) != FMLP_OK) {
        tu_check(false, "context: %s", fmlp_last_error());
        return tu_finish();
    }
    test_live(ctx);
    test_errors(ctx);
    test_memory(ctx, true);
    test_memory(ctx, false);
    fmlp_ctx_destroy(ctx);
    return tu_finish();
}
