/* Why: the OS thread id for CPU lanes, cached per thread (gettid is a
 * syscall, and lanes are asked for on every profiled kernel). */
#include "core/clock.h"

#include <sys/syscall.h>
#include <unistd.h>

int fmlp_thread_id(void)
{
    static _Thread_local int tid;
    if (!tid) tid = (int)syscall(SYS_gettid);
    return tid;
}
