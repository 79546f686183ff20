/* Why: the trace is read by Perfetto, Holistic Trace Analysis and our own
 * `fmlp trace`; this writes a synthetic window (CPU ops, a kernel on two
 * worker lanes, a GPU launch with its kernel, memory events) and holds the
 * file to the Trace Event Format and Kineto's conventions, checks ns
 * precision, counts kernels and copies apart, and reads it back (plain and gzip) to the same table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "profiler/prof.h"
#include "profiler/svg.h"
#include "profiler/trace_read.h"
#include "test_util.h"
#include "trace_check.h"

static pe_event *ev(pe_set *s, pe_kind k, const char *name, int64_t pid, int64_t tid, int64_t t0, int64_t t1,
                    int64_t ext, int64_t corr)
{
    pe_event *e = pe_add(s, k, name, pid, tid);
    e->t0 = t0;
    e->t1 = t1;
    e->ext_id = ext;
    e->corr = corr;
    return e;
}

/* Gives e the values `fill` writes into a copy of its own. */
#define MORE(s, e, fill)                         \
    do {                                         \
        pe_more m_ = *pe_more_of((s), (e));      \
        fill;                                    \
        pe_set_more((s), (e), &m_);              \
    } while (0)

/* Times in ns, deliberately not multiples of 1000. */
static void build(pe_set *s)
{
    pe_set_init(s);
    s->pid = 4242;
    s->main_tid = 4242;
    s->base_ns = 1700000000123456789LL;
    s->ceil = (pe_ceilings){true, 1000, 4000, 100, 0, 0, 0, false};
    int64_t T = 5000000000LL;
    ev(s, PE_STEP, "ProfilerStep#2", 4242, 4242, T, T + 1000123, 1, 0);
    pe_event *e = ev(s, PE_CPU_OP, "fmlp::mlp", 4242, 4242, T + 100, T + 900001, 2, 0);
    MORE(s, e, m_.shapes = pe_intern(s, "[[64, 768]]"));
    e = ev(s, PE_CPU_OP, "fmlp::linear", 4242, 4242, T + 200, T + 400000, 3, 0);
    MORE(s, e, m_.shapes = pe_intern(s, "not json"));
    pe_event *k = ev(s, PE_KERNEL, "cpu_gemm_f32_avx2", 4242, 4242, T + 150123, T + 380000, 3, 1);
    MORE(s, k, (m_.flops = 123456789, m_.bytes = 4096));
    ev(s, PE_KERNEL, "cpu_gemm_f32_avx2", 4242, 4243, T + 150500, T + 390000, 3, 1);
    ev(s, PE_KERNEL, "cpu_gemm_f32_avx2", 4242, 4244, T + 151000, T + 385000, 3, 1);
    ev(s, PE_CPU_OP, "fmlp::gelu_tanh", 4242, 4242, T + 400100, T + 600000, 4, 0);
    ev(s, PE_RUNTIME, "cudaLaunchKernel", 4242, 4242, T + 400200, T + 410000, 4, 2);
    pe_event *g = ev(s, PE_KERNEL, "gelu_kernel", 0, 7, T + 420000, T + 520000, 4, 2);
    g->device = 0;
    MORE(s, g, (m_.grid[0] = 120, m_.block[0] = 256, m_.regs = 32));
    ev(s, PE_RUNTIME, "cudaMemcpyAsync", 4242, 4242, T + 610000, T + 615000, 2, 3);
    ev(s, PE_MEMCPY, "Memcpy DtoH", 0, 7, T + 620000, T + 640000, 2, 3)->device = 0;
    pe_event *m = pe_add(s, PE_MEMORY, "[memory]", 4242, 4242);
    m->t0 = m->t1 = T + 101;
    MORE(s, m, (m_.mem_bytes = 1 << 20, m_.mem_total = 3 << 20, m_.mem_addr = 0x7f00));
}

static const json_value *find_event(const json_value *evs, const char *name, const char *ph)
{
    for (size_t i = 0; i < json_len(evs); i++) {
        const json_value *e = json_at(evs, i);
        const char *n = json_get_str(e, "name"), *p = json_get_str(e, "ph");
        if (n && p && strcmp(n, name) == 0 && strcmp(p, ph) == 0) return e;
    }
    return NULL;
}

static void test_format(const pe_set *s, const char *json, size_t len)
{
    json_error err;
    json_doc *d = json_parse(json, len, &err);
    tu_check(d != NULL, "trace parses as JSON (%s)", d ? "ok" : err.msg);
    if (!d) return;
    const json_value *root = json_doc_root(d), *evs = json_get(root, "traceEvents");
    tc_check_trace(root, "synthetic");
    tu_check(json_get_int(root, "baseTimeNanoseconds", 0) == s->base_ns, "baseTimeNanoseconds written exactly");
    tu_check(strstr(json, "\"ts\":5000150.123,") != NULL, "ts in us with 3 decimals (ns precision)");
    const json_value *k = find_event(evs, "gelu_kernel", "X"), *a = json_get(k, "args");
    tu_check(json_get_int(a, "stream", -1) == 7 && json_get_int(a, "correlation", -1) == 2 &&
                 json_get_int(a, "External id", -1) == 4 && json_get_int(a, "device", -1) == 0 &&
                 json_get_int(a, "registers per thread", -1) == 32 && json_num(json_at(json_get(a, "grid"), 0), 0) == 120 &&
                 json_num(json_at(json_get(a, "block"), 0), 0) == 256 && json_get(a, "shared memory"),
             "GPU kernel args: stream, correlation, External id, device, registers, grid, block, shared memory");
    tu_check(json_get_int(k, "pid", -1) == 0 && json_get_int(k, "tid", -1) == 7, "GPU lane: pid = device, tid = stream");
    const json_value *step = find_event(evs, "ProfilerStep#2", "X");
    tu_check(step && strcmp(json_get_str(step, "cat"), "user_annotation") == 0, "ProfilerStep#N is a user_annotation");
    const json_value *mlp = find_event(evs, "fmlp::mlp", "X");
    tu_check(json_num(json_at(json_at(json_get(json_get(mlp, "args"), "Input Dims"), 0), 1), 0) == 768,
             "record_shapes: Input Dims as a nested array");
    const json_value *mem = find_event(evs, "[memory]", "i");
    const json_value *ma = json_get(mem, "args");
    tu_check(mem && json_get_int(ma, "Bytes", 0) == 1 << 20 && json_get_int(ma, "Total Allocated", 0) == 3 << 20 &&
                 json_get_int(ma, "Addr", 0) == 0x7f00 && json_get(ma, "Device Id") && json_get(ma, "Total Reserved"),
             "memory instant: Bytes, Total Allocated, Total Reserved, Addr, Device Id");
    int ac2g = 0, fan = 0;
    for (size_t i = 0; i < json_len(evs); i++) {
        const char *cat = json_get_str(json_at(evs, i), "cat");
        ac2g += cat && strcmp(cat, "ac2g") == 0;
        fan += cat && strcmp(cat, "fmlp_fanout") == 0;
    }
    tu_check(ac2g == 4, "ac2g flows for the kernel launch and the memcpy (2 pairs, got %d events)", ac2g);
    tu_check(fan == 4, "fan-out flows to the 2 worker lanes (got %d events)", fan);
    const json_value *an = json_get(root, "fmlpAnalysis");
    tu_check(json_len(json_get(an, "steps")) == 1 && json_get_str(an, "verdict") && json_get_str(an, "reason"),
             "fmlpAnalysis: steps, verdict, reason");
    const json_value *st0 = json_at(json_get(an, "steps"), 0);
    tu_check(json_get_int(st0, "kernels", -1) == 2 && json_get_int(st0, "copies", -1) == 1,
             "fmlpAnalysis counts the CPU GEMM call and the GPU kernel as 2 kernels, the memcpy apart (got %lld, %lld)",
             (long long)json_get_int(st0, "kernels", -1), (long long)json_get_int(st0, "copies", -1));
    json_free(d);
}

static void test_round_trip(const pe_set *s, const char *json, size_t len)
{
    fmlp_table_options o = fmlp_table_options_default();
    fmlp_status st;
    char *want = prof_table(s, &o, true, &st);
    pe_set r;
    st = pe_parse_trace(json, len, "synthetic", &r);
    char *got = st == FMLP_OK ? prof_table(&r, &o, true, &st) : NULL;
    tu_check(want && got && strcmp(want, got) == 0, "read back, the table is identical");
    if (want && got && strcmp(want, got)) printf("%s\n%s", want, got);
    tu_check(strcmp(r.origin, "fmlp") == 0 && r.main_tid == 4242, "origin fmlp, main thread from its M event");
    tu_check(r.ceil.have && r.ceil.gemm_gflops_bf16 == 4000 && r.ceil.mem_gbps == 100,
             "the ceilings the run was judged against are read back from fmlpAnalysis");
    free(got);
    pe_set_free(&r);

    char path[512];
    snprintf(path, sizeof path, "%s/synthetic.json.gz", tu_tmpdir());
    st = prof_write_file(path, json, len);
    if (st == FMLP_ERR_UNSUPPORTED) {
        tu_skip("built without zlib: .json.gz (%s)", fmlp_last_error());
        free(want);
        return;
    }
    tu_check(st == FMLP_OK, "writes .json.gz");
    FILE *f = fopen(path, "rb");
    unsigned char magic[2] = {0};
    tu_check(f && fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b, "the .gz file is gzip");
    if (f) fclose(f);
    st = pe_read_trace(path, &r);
    got = st == FMLP_OK ? prof_table(&r, &o, true, &st) : NULL;
    tu_check(got && want && strcmp(want, got) == 0, "read back from .json.gz, the table is identical");
    free(got);
    pe_set_free(&r);
    free(want);
}

static void test_bad_input(void)
{
    pe_set r;
    tu_expect_fail(pe_parse_trace("{\"traceEvents\": [", 17, "cut.json", &r), FMLP_ERR_FORMAT, "truncated JSON");
    pe_set_free(&r);
    tu_expect_fail(pe_parse_trace("{\"a\": 1}", 8, "x.json", &r), FMLP_ERR_FORMAT, "no traceEvents");
    pe_set_free(&r);
    tu_expect_fail(pe_read_trace("/nonexistent/trace.json", &r), FMLP_ERR_IO, "missing file");
    pe_set_free(&r);
    tu_check(pe_parse_trace("[{\"ph\":\"X\",\"name\":\"a\",\"ts\":\"bad\",\"pid\":[],\"tid\":{}}]", 52, "odd.json", &r) ==
                 FMLP_OK,
             "wrongly typed fields are tolerated, not fatal");
    pe_set_free(&r);
}

/* Damaged traces (bytes changed, cut short) either fail with a status or
 * read into something the table, analyses and SVG handle; none crashes. */
static void test_damaged(const char *json, size_t len)
{
    char *buf = malloc(len);
    int parsed = 0, failed = 0;
    for (int round = 0; round < 300 && buf; round++) {
        memcpy(buf, json, len);
        size_t n = len;
        int edits = 1 + (int)(tu_rand_u64() % 8);
        /* Odd rounds change only digits: valid JSON with odd numbers
         * (negative durations, huge ids, ends before starts). */
        static const char junk[] = "{}[],:\"-0e9.x\\", digits[] = "0123456789";
        for (int k = 0; k < edits; k++) {
            size_t at = tu_rand_u64() % n;
            if (!(round & 1))
                buf[at] = junk[tu_rand_u64() % (sizeof junk - 1)];
            else if (buf[at] >= '0' && buf[at] <= '9')
                buf[at] = digits[tu_rand_u64() % 10];
        }
        if (round % 3 == 0) n = (size_t)(tu_rand_u64() % n);
        pe_set r;
        fmlp_status st = pe_parse_trace(buf, n, "damaged.json", &r);
        if (st == FMLP_OK) {
            parsed++;
            char *t = prof_table(&r, NULL, true, &st);
            free(t);
            FILE *f = fopen("/dev/null", "w");
            if (f) {
                pe_render_svg(&r, NULL, f);
                fclose(f);
            }
        } else {
            failed += st == FMLP_ERR_FORMAT;
        }
        pe_set_free(&r);
    }
    free(buf);
    tu_check(parsed + failed == 300, "300 damaged traces: %d read, %d refused with FMLP_ERR_FORMAT, none crashed", parsed,
             failed);
}

int main(void)
{
    tu_seed();
    pe_set s;
    build(&s);
    fmlp_profiler_options po;
    memset(&po, 0, sizeof po);
    po.record_shapes = true;
    size_t len = 0;
    char *json = prof_trace_json(&s, &po, &len);
    tu_check(json != NULL && len > 0, "trace written");
    if (json) {
        test_format(&s, json, len);
        test_round_trip(&s, json, len);
        test_damaged(json, len);
    }
    free(json);
    pe_set_free(&s);
    test_bad_input();
    return tu_finish();
}
