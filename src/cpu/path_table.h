/* Why: everything the CPU backend knows about a code path is one row of
 * one table, so adding or changing a path touches one place: its name, what
 * it needs of the CPU and OS, where f32 runs when its kernels are bf16-only,
 * its GEMM (geometry, microkernels, epilogue) and its pointwise row. The
 * GEMM driver, the pointwise passes and the path queries (path.h) read it;
 * nothing switches on a path. */
#ifndef FMLP_CPU_PATH_TABLE_H
#define FMLP_CPU_PATH_TABLE_H

#include "cpu/features.h"
#include "cpu/gemm_internal.h"
#include "cpu/path.h"
#include "cpu/pointwise_internal.h"

/* One requirement: `has` tells whether the machine meets it; when not, the
 * path is refused with `lacks` ("this CPU lacks AVX2/FMA"), as `fmlp info`
 * prints after "unavailable: ". */
typedef struct {
    bool (*has)(const cpu_features *f);
    const char *lacks;
} cpu_need;

#define CPU_NEEDS_MAX 3

typedef struct {
    const char *name;               /* as --cpu-path, FMLP_CPU_PATH and kernel names spell it */
    cpu_need needs[CPU_NEEDS_MAX];  /* all must hold, checked in order; unused entries NULL */
    cpu_path f32;                   /* the path f32 runs on: this one unless its kernels are bf16-only */
    gemm_path gemm;
    pw_row_fn pw_row;               /* pointwise passes, any dtype */
} cpu_path_row;

/* Indexed by cpu_path: preferred first. */
extern const cpu_path_row cpu_path_table[CPU_PATH_COUNT];

#endif
