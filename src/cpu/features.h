/* Why: which instructions this CPU has and what the OS grants (AMX tiles
 * need arch_prctl permission), read once. What each code path needs of
 * them is the path table's business (path_table.c). */
#ifndef FMLP_CPU_FEATURES_H
#define FMLP_CPU_FEATURES_H

#include <stdbool.h>

typedef struct {
    char brand[64];
    bool avx2, fma, avx512f, avx512bw, avx512vl, avx512dq, avx512bf16, amx_bf16, amx_tile;
    bool amx_granted; /* arch_prctl(ARCH_REQ_XCOMP_PERM) succeeded */
    int cores;        /* online logical CPUs */
} cpu_features;

const cpu_features *cpu_features_get(void);

#endif
