/* Why: the one place that knows which backends exist. A context, `fmlp
 * info` and the public device queries ask it for a device's backend, so a
 * new backend is one row here plus its own folder; what a backend can do is
 * asked of its table, never decided by testing the device. */
#include <stdio.h>

#include "core/backend.h"
#include "core/error.h"

static const fmlp_backend *cpu_get(void) { return &fmlp_cpu_backend; }

/* Host first: `fmlp info` and fmlp_backend_at list them in this order. */
static const struct {
    fmlp_device device;
    const fmlp_backend *(*get)(void); /* NULL when not built */
    const char *absent_why;          /* why a context cannot be made without it */
    const char *absent_info;         /* the `fmlp info` line when not built */
} k_slots[] = {
    {FMLP_DEVICE_CPU, cpu_get, "", ""},
    {FMLP_DEVICE_CUDA, fmlp_cuda_backend_get,
     "this fmlp was built without the CUDA backend; rebuild on a machine with nvcc (CMake finds it) or use --device cpu",
     "CUDA backend: not built (no nvcc at configure time)"},
};
#define N_SLOTS ((int)(sizeof k_slots / sizeof k_slots[0]))
_Static_assert(N_SLOTS == FMLP_DEVICE_COUNT, "one registry slot per device of FMLP_DEVICE_TABLE");

fmlp_status fmlp_backend_find(fmlp_device device, const fmlp_backend **out)
{
    *out = NULL;
    for (int i = 0; i < N_SLOTS; i++) {
        if (k_slots[i].device != device) continue;
        *out = k_slots[i].get();
        return *out ? FMLP_OK : fmlp_fail(FMLP_ERR_UNSUPPORTED, "%s", k_slots[i].absent_why);
    }
    return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT, "device %d is not a device; use FMLP_DEVICE_CPU or FMLP_DEVICE_CUDA",
                     (int)device);
}

int fmlp_backend_count(void)
{
    int n = 0;
    for (int i = 0; i < N_SLOTS; i++) n += k_slots[i].get() != NULL;
    return n;
}

const fmlp_backend *fmlp_backend_at(int i)
{
    for (int s = 0; s < N_SLOTS; s++) {
        const fmlp_backend *be = k_slots[s].get();
        if (be && i-- == 0) return be;
    }
    return NULL;
}

int fmlp_cuda_device_count(void)
{
    const fmlp_backend *be = fmlp_cuda_backend_get();
    return be && be->device_count ? be->device_count() : 0;
}

void fmlp_print_info(FILE *f)
{
    if (!f) return;
    fprintf(f, "fmlp %s\n", FMLP_VERSION);
    const fmlp_backend *host = fmlp_backend_at(0);
    if (host->print_info) host->print_info(f);
    fprintf(f, "backends:");
    for (int i = 0; i < fmlp_backend_count(); i++) fprintf(f, "%s %s", i ? "," : "", fmlp_backend_at(i)->name);
    fputc('\n', f);
    for (int s = 1; s < N_SLOTS; s++) {
        const fmlp_backend *be = k_slots[s].get();
        if (!be)
            fprintf(f, "%s\n", k_slots[s].absent_info);
        else if (be->print_info)
            be->print_info(f);
    }
    int nccl = 0;
    if (fmlp_tp_available(&nccl))
        fprintf(f, "tensor parallelism: NCCL %d.%d.%d\n", nccl / 10000, nccl / 100 % 100, nccl % 100);
    else
        fprintf(f, "tensor parallelism: not built (no NCCL at configure time)\n");
}
