/* Why: the CPU backend runs one code path (an instruction set's kernels)
 * per context, the best this machine has or one forced by option or
 * FMLP_CPU_PATH so that tests can run each in turn. This is the path's
 * identity and the questions asked about it; what a path is (needs,
 * geometry, kernels) is one row of the table in path_table.c. */
#ifndef FMLP_CPU_PATH_H
#define FMLP_CPU_PATH_H

#include <stdbool.h>

#include "fmlp.h"

/* In the table's order: preferred (fastest) first, scalar last. */
typedef enum {
    CPU_PATH_AMX = 0,    /* AMX-BF16 tiles, granted by the OS */
    CPU_PATH_AVX512BF16, /* + AVX512_BF16 (vdpbf16ps) */
    CPU_PATH_AVX512,     /* AVX-512 F/BW/VL/DQ */
    CPU_PATH_AVX2,       /* AVX2 + FMA */
    CPU_PATH_SCALAR,     /* plain C, runs anywhere */
    CPU_PATH_COUNT
} cpu_path;

/* Lists meant for people (`fmlp info`, fmlp_cpu_paths, error messages) go
 * the other way, slowest first: the i-th path listed. */
static inline cpu_path cpu_path_listed(int i) { return (cpu_path)(CPU_PATH_COUNT - 1 - i); }

const char *cpu_path_name(cpu_path p);
bool cpu_path_parse(const char *s, cpu_path *out);
/* Whether this machine runs `p`; when not, *why says what is missing. */
bool cpu_path_available(cpu_path p, const char **why);
/* The first available path of the table. */
cpu_path cpu_path_best(void);
/* The path kernels of `dtype` actually take when `p` is asked for: paths
 * whose kernels are bf16-only run f32 on the one their row names. */
cpu_path cpu_path_for_dtype(cpu_path p, fmlp_dtype dtype);

#endif
