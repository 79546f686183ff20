/* Why: bf16 GEMM on AMX tiles (Sapphire Rapids and later), which multiply a
 * 16x32 A tile by a 32x16 B tile in one instruction. A block is 32 rows by
 * one 32-column panel: four f32 accumulator tiles (tmm0-3), two A tiles
 * (tmm4-5) and two B tiles (tmm6-7). The packing is K2N with k padded to 32
 * (zeros), so B tiles load straight from the panel with a 128-byte stride;
 * A tiles load straight from the caller's rows when a whole tile (16 rows,
 * or all of a smaller block's) by 32 is inside A, and from a zero-padded
 * copy at the k and m edges, so nothing past A is ever read. Sums go
 * through the driver's f32 buffer to the shared AVX-512 epilogue. The OS
 * grant for the tile state is taken by features.c; this file only runs
 * when cpu_path_available(CPU_PATH_AMX) said yes, and the driver brackets
 * each block with gemm_amx_enter/leave. */
#include <immintrin.h>
#include <string.h>

#include "cpu/gemm_internal.h"

#define KSTEP GEMM_AMX_KSTEP
#define NR GEMM_NR_AVX512
#define TILE_ROWS 16

/* The palette-1 tile configuration: 64 bytes a row, 16 rows in every
 * tile, or in the accumulator and A tiles as many as a block of fewer than
 * 16 rows has. */
typedef struct {
    uint8_t palette;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((aligned(64))) tile_config;
_Static_assert(sizeof(tile_config) == 64, "ldtilecfg reads 64 bytes");

/* The configuration and tile loads are written here rather than through
 * GCC 12's _tile_loadconfig and _tile_loadd: the first declares its operand
 * as 8 bytes, so the compiler dropped the stores of the other 56 (the
 * Release build loaded palette 1 with zero widths and stack garbage for the
 * row counts, and ldtilecfg faulted: SIGSEGV in `fmlp info --ceilings` on a
 * Sapphire Rapids host); the second reads memory without saying so. */
#define TILE_LOADD(t, base, stride)                                                                                    \
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"((const void *)(base)), "r"((long)(stride)) : "memory")

/* Rows of the accumulator and A tiles this thread configured for its
 * block. A block of fewer than 16 rows (a forward of a few rows) gets
 * tiles of just its rows, which load straight from A: padding them to 16
 * rows meant a zeroed copy of A at every k step of every panel, which made
 * one row slower than sixteen. */
static _Thread_local int tile_rows = TILE_ROWS;

void gemm_amx_enter(int rows)
{
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    tile_rows = rows > 0 && rows < TILE_ROWS ? rows : TILE_ROWS;
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = (uint8_t)(t < 6 ? tile_rows : TILE_ROWS);
    }
    __asm__ volatile("ldtilecfg %0" ::"m"(cfg));
}

void gemm_amx_leave(void) { _tile_release(); }

/* Where the A tile of rows [0, tile_rows) x k [k0, k0 + 32) of A loads
 * from, and its stride: A itself when the block lies inside it, else `buf`
 * filled with zeros past the edges. */
static const void *a_source(const uint16_t *A, int64_t lda, int64_t rows, int64_t k, int64_t k0, uint16_t *buf,
                            int64_t *stride)
{
    if (rows >= tile_rows && k0 + KSTEP <= k) {
        *stride = lda * 2;
        return A + k0;
    }
    memset(buf, 0, TILE_ROWS * KSTEP * 2);
    int64_t cols = k - k0 < KSTEP ? k - k0 : KSTEP, nrow = rows < TILE_ROWS ? rows : TILE_ROWS;
    for (int64_t r = 0; r < nrow; r++) memcpy(buf + r * KSTEP, A + r * lda + k0, (size_t)cols * 2);
    *stride = KSTEP * 2;
    return buf;
}

/* Up to GEMM_MR_AMX rows by one panel: the gemm_ukernel of this path. */
void gemm_tile_amx(int rows, const void *a, int64_t lda, const void *w, int64_t ps, int64_t k, float *acc)
{
    uint16_t buf0[TILE_ROWS * KSTEP], buf1[TILE_ROWS * KSTEP];
    const uint16_t *A = a, *W = w;
    bool two = rows > TILE_ROWS;
    int64_t kpad = (k + KSTEP - 1) / KSTEP * KSTEP;
    (void)ps;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t k0 = 0; k0 < kpad; k0 += KSTEP) {
        int64_t s0, s1;
        const void *a0 = a_source(A, lda, rows, k, k0, buf0, &s0);
        const uint16_t *b = W + k0 * NR; /* k0/2 pairs of 32 columns x 2 */
        TILE_LOADD(4, a0, s0);
        TILE_LOADD(6, b, NR * 4);
        TILE_LOADD(7, b + 32, NR * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        if (two) {
            const void *a1 = a_source(A + TILE_ROWS * lda, lda, rows - TILE_ROWS, k, k0, buf1, &s1);
            TILE_LOADD(5, a1, s1);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
    }
    _tile_stored(0, acc, NR * 4);
    _tile_stored(1, acc + 16, NR * 4);
    if (two) {
        _tile_stored(2, acc + TILE_ROWS * NR, NR * 4);
        _tile_stored(3, acc + TILE_ROWS * NR + 16, NR * 4);
    }
}
