/* Why: the trace's "deviceProperties" describe the GPU a run used, as
 * Kineto writes them, and the ceilings a verdict needs come from the same
 * description when none were measured; a backend fills this plain record
 * and the profiler and machine code read it, so neither needs the other's
 * types or a JSON round trip. */
#ifndef FMLP_CORE_DEVICE_PROPS_H
#define FMLP_CORE_DEVICE_PROPS_H

#include <stddef.h>

typedef struct {
    int id;
    char name[256];
    size_t total_global_mem;
    int compute_major, compute_minor;
    int max_threads_per_block, max_threads_per_mp;
    int regs_per_block, regs_per_mp, warp_size;
    size_t shared_mem_per_block, shared_mem_per_mp, shared_mem_per_block_optin;
    int num_sms;
    /* What a peak is computed from when none was measured (0 = unknown). */
    int clock_khz;     /* SM clock (the boost clock the device reports) */
    int mem_clock_khz; /* memory clock */
    int mem_bus_bits;  /* global memory bus width */
} fmlp_device_props;

#endif
