/* Why: the one table of CPU code paths (path_table.h) and the queries
 * path.h answers from it. A row's needs are checked against the features
 * read once by features.c; the best path is the first row this machine
 * meets. */
#include "cpu/path_table.h"

#include <string.h>

static bool has_avx2_fma(const cpu_features *f) { return f->avx2 && f->fma; }
static bool has_avx512(const cpu_features *f) { return f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq; }
static bool has_avx512bf16(const cpu_features *f) { return f->avx512bf16; }
static bool has_amx_bf16(const cpu_features *f) { return f->amx_tile && f->amx_bf16; }
/* AMX's epilogue and edge copies are AVX-512 code with bf16 conversions. */
static bool has_avx512_bf16_for_amx(const cpu_features *f) { return f->avx512f && f->avx512bw && f->avx512bf16; }
static bool amx_granted(const cpu_features *f) { return f->amx_granted; }

#define NEED_AVX512 {has_avx512, "this CPU lacks AVX-512 F/BW/VL/DQ"}

const cpu_path_row cpu_path_table[CPU_PATH_COUNT] = {
    [CPU_PATH_AMX] =
        {
            .name = "amx",
            .needs = {{has_amx_bf16, "this CPU lacks AMX-BF16"},
                      {has_avx512_bf16_for_amx, "this CPU lacks AVX-512 BF16"},
                      {amx_granted, "the OS refused AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)"}},
            .f32 = CPU_PATH_AVX512,
            /* Panels outside: AMX consumes a panel so fast that keeping it
             * in L1/L2 across the row tiles pays more than keeping A there
             * (measured on a Xeon: down GEMM 697 vs 571 GFLOP/s per core). */
            .gemm = {.mr = GEMM_MR_AMX, .nr = GEMM_NR_AVX512, .kstep = GEMM_AMX_KSTEP, .pairs = true,
                     .order = GEMM_PANELS_OUTSIDE, .bf16 = {.tile = gemm_tile_amx},
                     .epilogue = gemm_epilogue_avx512, .enter = gemm_amx_enter, .leave = gemm_amx_leave},
            .pw_row = pw_row_avx512,
        },
    [CPU_PATH_AVX512BF16] =
        {
            .name = "avx512bf16",
            .needs = {NEED_AVX512, {has_avx512bf16, "this CPU lacks AVX512_BF16"}},
            .f32 = CPU_PATH_AVX512,
            .gemm = {.mr = GEMM_MR_AVX512BF16, .nr = GEMM_NR_AVX512, .kstep = 2, .pairs = true,
                     .order = GEMM_ROWS_OUTSIDE,
                     .bf16 = {.tile = gemm_tile_avx512bf16, .wide = gemm_wide_avx512bf16, .tile_add = gemm_tile_add_avx512bf16},
                     .epilogue = gemm_epilogue_avx512},
            .pw_row = pw_row_avx512,
        },
    [CPU_PATH_AVX512] =
        {
            .name = "avx512",
            .needs = {NEED_AVX512},
            .f32 = CPU_PATH_AVX512,
            .gemm = {.mr = GEMM_MR_AVX512, .nr = GEMM_NR_AVX512, .kstep = 1, .order = GEMM_ROWS_OUTSIDE,
                     .f32 = {.tile = gemm_tile_avx512_f32, .wide = gemm_wide_avx512_f32, .tile_add = gemm_tile_add_avx512_f32},
                     .bf16 = {.tile = gemm_tile_avx512_bf16, .wide = gemm_wide_avx512_bf16, .tile_add = gemm_tile_add_avx512_bf16},
                     .epilogue = gemm_epilogue_avx512},
            .pw_row = pw_row_avx512,
        },
    [CPU_PATH_AVX2] =
        {
            .name = "avx2",
            .needs = {{has_avx2_fma, "this CPU lacks AVX2/FMA"}},
            .f32 = CPU_PATH_AVX2,
            .gemm = {.mr = GEMM_MR_AVX2, .nr = GEMM_NR_AVX2, .kstep = 1, .order = GEMM_ROWS_OUTSIDE,
                     .f32 = {.tile = gemm_tile_avx2_f32, .tile_add = gemm_tile_add_avx2_f32},
                     .bf16 = {.tile = gemm_tile_avx2_bf16, .tile_add = gemm_tile_add_avx2_bf16},
                     .epilogue = gemm_epilogue_avx2},
            .pw_row = pw_row_avx2,
        },
    [CPU_PATH_SCALAR] =
        {
            .name = "scalar",
            .f32 = CPU_PATH_SCALAR,
            .gemm = {.mr = GEMM_MR_SCALAR, .nr = GEMM_NR_SCALAR, .kstep = 1, .order = GEMM_PANELS_OUTSIDE,
                     .f32 = {.tile = gemm_tile_scalar_f32, .tile_add = gemm_tile_add_scalar_f32},
                     .bf16 = {.tile = gemm_tile_scalar_bf16, .tile_add = gemm_tile_add_scalar_bf16},
                     .epilogue = gemm_epilogue_scalar},
            .pw_row = pw_row_scalar,
        },
};

_Static_assert(sizeof cpu_path_table / sizeof cpu_path_table[0] == CPU_PATH_COUNT, "one row per cpu_path");
_Static_assert(CPU_PATH_SCALAR == CPU_PATH_COUNT - 1, "scalar, which runs anywhere, is the last resort");

static bool valid(cpu_path p) { return p >= 0 && p < CPU_PATH_COUNT; }

const char *cpu_path_name(cpu_path p) { return valid(p) ? cpu_path_table[p].name : "?"; }

bool cpu_path_parse(const char *s, cpu_path *out)
{
    for (int i = 0; i < CPU_PATH_COUNT; i++) {
        if (s && strcmp(s, cpu_path_table[i].name) == 0) {
            *out = (cpu_path)i;
            return true;
        }
    }
    return false;
}

bool cpu_path_available(cpu_path p, const char **why)
{
    const char *missing = valid(p) ? NULL : "no such path";
    const cpu_features *f = cpu_features_get();
    for (int i = 0; !missing && i < CPU_NEEDS_MAX; i++) {
        const cpu_need *need = &cpu_path_table[p].needs[i];
        if (need->has && !need->has(f)) missing = need->lacks;
    }
    if (why) *why = missing ? missing : "";
    return missing == NULL;
}

cpu_path cpu_path_best(void)
{
    for (int p = 0; p < CPU_PATH_SCALAR; p++)
        if (cpu_path_available((cpu_path)p, NULL)) return (cpu_path)p;
    return CPU_PATH_SCALAR;
}

cpu_path cpu_path_for_dtype(cpu_path p, fmlp_dtype dtype)
{
    return dtype == FMLP_BF16 || !valid(p) ? p : cpu_path_table[p].f32;
}
