/* Why: the fast paths are chosen at run time from what this CPU has and
 * what the OS grants (AMX tiles need arch_prctl permission); tests force each
 * path in turn. */
#ifndef FMLP_CPU_FEATURES_H
#define FMLP_CPU_FEATURES_H

#include <stdbool.h>

#include "fmlp.h"

typedef enum {
    CPU_PATH_SCALAR = 0,
    CPU_PATH_AVX2,       /* AVX2 + FMA */
    CPU_PATH_AVX512,     /* AVX-512 F/BW/VL/DQ */
    CPU_PATH_AVX512BF16, /* + AVX512_BF16 (vdpbf16ps) */
    CPU_PATH_AMX,        /* AMX-BF16 tiles, granted by the OS */
    CPU_PATH_COUNT
} cpu_path;

typedef struct {
    char brand[64];
    bool avx2, fma, avx512f, avx512bw, avx512vl, avx512dq, avx512bf16, amx_bf16, amx_tile;
    bool amx_granted; /* arch_prctl(ARCH_REQ_XCOMP_PERM) succeeded */
    int cores;        /* online logical CPUs */
} cpu_features;

const cpu_features *cpu_features_get(void);
const char *cpu_path_name(cpu_path p);
bool cpu_path_parse(const char *s, cpu_path *out);
/* Whether this machine runs `p`; when not, *why says what is missing. */
bool cpu_path_available(cpu_path p, const char **why);
/* The best available path. */
cpu_path cpu_path_best(void);
/* The path GEMMs of `dtype` actually take when `p` is asked for: f32 has no
 * bf16 paths, so AVX512BF16 and AMX run f32 on AVX512. */
cpu_path cpu_path_for_dtype(cpu_path p, fmlp_dtype dtype);

#endif
