/* Why: the device-property peaks are plain arithmetic on a device
 * description; exposed to the library (and its tests) apart from the
 * measuring and caching in ceilings.c. */
#ifndef FMLP_MACHINE_CEILINGS_H
#define FMLP_MACHINE_CEILINGS_H

#include <stdbool.h>

#include "core/device_props.h"
#include "fmlp.h"

/* Dense bf16 tensor-core FLOP per clock per SM of compute capability
 * major.minor (FP32 accumulate), 0 when the table does not know it. */
int fmlp_tensor_flop_per_clock(int major, int minor);

/* The GPU's peaks from its description: SMs x SM clock x tensor FLOP per
 * clock per SM, and memory clock x bus width x 2 (double data rate). Each
 * is 0 when a number it needs is unknown; false when both are. */
bool fmlp_ceilings_from_props(const fmlp_device_props *d, double *tflops_bf16, double *mem_gbps);

/* Writes the cache file (its directories made), whole or not at all, for
 * a measurement taken with `threads` CPU threads. */
fmlp_status fmlp_ceilings_save(const char *path, const fmlp_ceilings *c, int threads);

#endif
