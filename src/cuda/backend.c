/* Why: the CUDA backend's entry in the backend registry: which of the
 * backend table's entries this backend fills, and with what. Each concern
 * lives in its own file (discovery, memory, weights, dispatch, policy,
 * graphs, CUPTI); this file only assembles them. */
#include "cuda/cuda_internal.h"

static const fmlp_backend cuda_backend = {
    .name = "cuda",
    .device = FMLP_DEVICE_CUDA,
    .init = fmlp_cu_init,
    .fini = fmlp_cu_fini,
    .supports = fmlp_cu_supports,
    .auto_measured = true,
    .device_count = fmlp_cu_device_count,
    .print_info = fmlp_cu_print_info,
    .pack = fmlp_cu_pack,
    .pack_glu = fmlp_cu_pack_glu,
    .unpack = fmlp_cu_unpack,
    .name_kernel = fmlp_cu_name_kernel,
    .run = fmlp_cu_run,
    .alloc = fmlp_cu_alloc,
    .free = fmlp_cu_free,
    .copy = fmlp_cu_copy,
    .copy2d = fmlp_cu_copy2d,
    .synchronize = fmlp_cu_synchronize,
    .graph_launch = fmlp_cu_graph_launch,
    .graph_begin = fmlp_cu_graph_begin,
    .graph_end = fmlp_cu_graph_end,
    .prof_start = fmlp_cu_prof_start,
    .prof_stop = fmlp_cu_prof_stop,
    .prof_discard = fmlp_cu_prof_discard,
    .auto_mode = fmlp_cu_auto_mode,
    .one_kernel = fmlp_cu_one_kernel,
    .device_props = fmlp_cu_device_props,
    .set_stream = fmlp_cu_set_stream,
    .get_stream = fmlp_cu_get_stream,
    .caller_capturing = fmlp_cu_caller_capturing,
    .host_alloc = fmlp_cu_host_alloc,
    .host_free = fmlp_cu_host_free,
};

const fmlp_backend *fmlp_cuda_backend_get(void) { return &cuda_backend; }
