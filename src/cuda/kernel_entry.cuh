/* Why: each launcher picks its kernel from a table and reports the name
 * CUPTI will show for it; one entry type serves every such table. */
#ifndef FMLP_CUDA_KERNEL_ENTRY_CUH
#define FMLP_CUDA_KERNEL_ENTRY_CUH

struct fmlp_kernel_entry {
    const void *fn;
    const char *name;
};
#define FMLP_KERNEL_ENTRY(NAME) {(const void *)NAME, #NAME}

#endif
