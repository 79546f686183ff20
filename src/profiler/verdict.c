/* Why: a step's verdict is the sentence people act on, so it must be the
 * one a careful engineer would give from the same numbers: a step whose
 * time goes to host<->device copies is copy-bound (and the fix is keeping
 * tensors on the device), one whose device sits waiting on launches is
 * overhead-bound, and only a step whose kernels keep the device busy is
 * judged against the machine's compute and memory ceilings, which are
 * measured or (GPU) the device's datasheet peaks, and say which. This file
 * owns that judgement; analysis.c gathers the numbers it judges. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "profiler/analysis.h"

/* Without ceilings, only arithmetic intensity is known. The ridge (peak
 * FLOP/s over bandwidth) of current machines lies in these bands: CPUs
 * about 2..50 FLOP/byte (AVX2 desktop to AMX server), GPUs about 10..300
 * (bf16 tensor cores over HBM or GDDR); outside its band the verdict holds
 * on any such machine, inside it is the nearer end's, and says so. */
#define CPU_RIDGE_LO 2.0
#define CPU_RIDGE_HI 50.0
#define GPU_RIDGE_LO 10.0
#define GPU_RIDGE_HI 300.0

/* The reason, cut at its buffer's end when the numbers run long. */
static void say(pe_step_stat *st, fmlp_bound bound, const char *fmt, ...) FMLP_PRINTF(3, 4);

static void say(pe_step_stat *st, fmlp_bound bound, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->reason, sizeof st->reason, fmt, ap);
    va_end(ap);
    st->bound = bound;
}

static const char *fmt_us(double us, char *b, size_t n)
{
    if (us >= 1e6)
        snprintf(b, n, "%.3f s", us / 1e6);
    else if (us >= 1e3)
        snprintf(b, n, "%.2f ms", us / 1e3);
    else
        snprintf(b, n, "%.1f us", us);
    return b;
}

void pe_note_copy(pe_step_stat *st, const char *name, double bytes)
{
    st->copy_bytes += bytes;
    if (strstr(name, "HtoD") || strstr(name, "DtoH") || strstr(name, "HtoH")) st->host_bytes += bytes;
    if (strstr(name, "Pageable")) st->pageable = true;
    if (strstr(name, "Pinned")) st->pinned = true;
}

static void copy_verdict(bool device, pe_step_stat *st)
{
    char t[32], w[32], mb[32], bw[32];
    fmt_us(st->copy_us, t, sizeof t);
    fmt_us(st->wall_us, w, sizeof w);
    if (st->host_bytes <= 0) {
        say(st, FMLP_BOUND_COPY,
                 "%s of %s in device copies and memsets (%s) against %.1f us of kernels; write outputs in place "
                 "instead of copying them",
                 t, w, fmlp_si_format(st->copy_bytes, "B", mb, sizeof mb), st->kernel_us);
        return;
    }
    fmlp_si_format(st->host_bytes, "B", mb, sizeof mb);
    fmlp_si_format(st->copy_us > 0 ? st->host_bytes / (st->copy_us * 1e-6) : 0, "B/s", bw, sizeof bw);
    const char *mem = st->pageable ? ", pageable" : st->pinned ? ", pinned" : "";
    const char *fix = st->pageable || !st->pinned
                          ? "keep tensors on the device (fmlp_tensor_alloc) and copy what must cross from pinned "
                            "memory (fmlp_tensor_alloc_host)"
                          : "keep tensors on the device (fmlp_tensor_alloc) and copy less often";
    say(st, FMLP_BOUND_COPY, "%s of %s moving %s between host and %s (%s%s) against %.1f us of kernels; %s",
             t, w, mb, device ? "device" : "memory", bw, mem, st->kernel_us, fix);
}

static void overhead_verdict(bool device, double busy, pe_step_stat *st)
{
    say(st, FMLP_BOUND_OVERHEAD,
             "kernels busy %.0f%% of %.1f us; %.1f us dispatch overhead (%.1f us per kernel over %d) and %.1f us idle; "
             "fewer launches help: %s",
             busy * 100, st->wall_us, st->overhead_us, st->kernels ? st->overhead_us / st->kernels : 0, st->kernels,
             st->idle_us, device ? "fuse kernels (fused mode, torch.compile) or replay a CUDA graph"
                                 : "fuse kernels, or give each call more rows");
}

/* The ceilings this step's kernels run against; 0 = unknown. */
static void ceilings_for(const pe_set *s, bool device, bool bf16, double *peak_flops, double *bw_bytes,
                         const char **what)
{
    const pe_ceilings *c = &s->ceil;
    *peak_flops = !c->have ? 0 : device ? c->gpu_gemm_tflops_bf16 * 1e12 : (bf16 ? c->gemm_gflops_bf16 : c->gemm_gflops_f32) * 1e9;
    *bw_bytes = !c->have ? 0 : (device ? c->gpu_mem_gbps : c->mem_gbps) * 1e9;
    *what = device ? (c->gpu_from_device ? "bf16 tensor peak (device properties)" : "bf16 GEMM peak (measured)")
                   : (bf16 ? "bf16 GEMM peak (measured)" : "f32 GEMM peak (measured)");
}

void pe_verdict(const pe_set *s, bool device, bool bf16, pe_step_stat *st)
{
    double busy = st->wall_us > 0 ? st->kernel_us / st->wall_us : 0;
    double dev_busy = st->wall_us > 0 ? (st->kernel_us + st->copy_us) / st->wall_us : 0;
    if (st->copies > 0 && st->copy_us > st->kernel_us && st->copy_us >= st->overhead_us && st->copy_us >= st->idle_us) {
        copy_verdict(device, st);
        return;
    }
    if (st->kernels + st->copies == 0 || dev_busy < 0.5) {
        overhead_verdict(device, busy, st);
        return;
    }
    char copies[48] = "";
    if (st->copy_us >= 0.1 * st->wall_us)
        snprintf(copies, sizeof copies, "; copies %.0f%% of the step", st->copy_us * 100 / st->wall_us);
    if (st->flops <= 0 && st->bytes <= 0) {
        say(st, FMLP_BOUND_COMPUTE,
                 "kernels busy %.0f%% of %.1f us, so the work itself is the cost; the trace has no FLOP or byte "
                 "counts (profile with record_shapes or with_flops) to tell compute from memory%s",
                 busy * 100, st->wall_us, copies);
        return;
    }
    double kern_s = st->kernel_us * 1e-6;
    double flops = kern_s > 0 ? st->flops / kern_s : 0, bytes = kern_s > 0 ? st->bytes / kern_s : 0;
    char fr[32], br[32], pr[32], bwr[32];
    fmlp_si_format(flops, "FLOP/s", fr, sizeof fr);
    fmlp_si_format(bytes, "B/s", br, sizeof br);
    double peak, bw;
    const char *what;
    ceilings_for(s, device, bf16, &peak, &bw, &what);
    if (peak > 0 && bw > 0) {
        double fc = flops / peak, fm = bytes / bw;
        say(st, fm > fc ? FMLP_BOUND_MEMORY : FMLP_BOUND_COMPUTE, "kernels busy %.0f%%; %s = %.0f%% of the %s %s, %s = %.0f%% of %s memory bandwidth%s",
                 busy * 100, fr, fc * 100, fmlp_si_format(peak, "FLOP/s", pr, sizeof pr), what, br, fm * 100,
                 fmlp_si_format(bw, "B/s", bwr, sizeof bwr), copies);
        return;
    }
    const double lo = device ? GPU_RIDGE_LO : CPU_RIDGE_LO, hi = device ? GPU_RIDGE_HI : CPU_RIDGE_HI;
    double ai = st->bytes > 0 ? st->flops / st->bytes : INFINITY;
    const char *where = ai >= hi ? "above" : ai <= lo ? "below" : "inside";
    say(st, ai >= sqrt(lo * hi) ? FMLP_BOUND_COMPUTE : FMLP_BOUND_MEMORY,
             "kernels busy %.0f%%; %s, %s, %.1f FLOP/byte: %s the band where %s ridges lie (%.0f-%.0f FLOP/byte); "
             "no ceilings known (run `fmlp info --ceilings`)%s",
             busy * 100, fr, br, isfinite(ai) ? ai : 0.0, where, device ? "GPU" : "CPU", lo, hi, copies);
}
