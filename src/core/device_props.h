/* Why: the trace's "deviceProperties" describe the GPU a run used, as
 * Kineto writes them; a backend fills this plain record and the profiler
 * writes it, so neither needs the other's types or a JSON round trip. */
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
} fmlp_device_props;

#endif
