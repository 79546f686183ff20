/* Why: users move between torch.profiler and fmlp with the same schedule in
 * their heads, so the step-to-action mapping must be torch's to the step:
 * skip_first steps first, then cycles of wait, warmup and active steps, the
 * last active step of a cycle saving the trace, `repeat` cycles (0 = cycle
 * until stop). */
#include <limits.h>

#include "core/error.h"
#include "profiler/prof.h"

bool prof_has_schedule(const fmlp_profiler_options *o)
{
    return o->skip_first || o->wait || o->warmup || o->active || o->repeat;
}

fmlp_status prof_schedule_check(const fmlp_profiler_options *o)
{
    if (!prof_has_schedule(o)) return FMLP_OK;
    if (o->skip_first < 0 || o->wait < 0 || o->warmup < 0 || o->repeat < 0)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "profiler schedule skip_first=%d wait=%d warmup=%d repeat=%d: none may be negative",
                         o->skip_first, o->wait, o->warmup, o->repeat);
    if (o->active < 1)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "profiler schedule active=%d records nothing; set active >= 1 (or all fields 0 to record "
                         "every step)",
                         o->active);
    /* Steps are counted in an int, so one cycle and the steps before the
     * first must fit one. */
    int64_t cycle = (int64_t)o->wait + o->warmup + o->active;
    if (cycle > INT_MAX || (int64_t)o->skip_first + cycle > INT_MAX)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "profiler schedule skip_first=%d + wait=%d + warmup=%d + active=%d is %lld steps, more than "
                         "the %d steps a profiler counts; use fewer",
                         o->skip_first, o->wait, o->warmup, o->active, (long long)((int64_t)o->skip_first + cycle),
                         INT_MAX);
    return FMLP_OK;
}

prof_action prof_schedule_action(const fmlp_profiler_options *o, int step)
{
    if (!prof_has_schedule(o)) return PA_RECORD;
    if (step < o->skip_first) return PA_NONE;
    step -= o->skip_first;
    int cycle = o->wait + o->warmup + o->active;
    if (o->repeat > 0 && step / cycle >= o->repeat) return PA_NONE;
    int mod = step % cycle;
    if (mod < o->wait) return PA_NONE;
    if (mod < o->wait + o->warmup) return PA_WARMUP;
    return mod < cycle - 1 ? PA_RECORD : PA_RECORD_AND_SAVE;
}
