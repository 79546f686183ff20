/* Why: which form of the one-kernel MLP a shape takes (the hidden slice or
 * the row stream at one row, the row stream at 2..16, the `_smem` kernel,
 * the K-pieces kernel, or none)
 * is decided on the host from the shape, dtype, alignment and device, and
 * those decisions need no GPU. Checked here in every CUDA build, so a
 * change that sends a shape to a kernel that cannot take it, or past its
 * shared memory, fails before a device visit. */
#include <stdint.h>
#include <string.h>

#include "test_util.h"

#ifdef FMLP_HAVE_CUDA
#include "cuda/kernels.h"

static fmlp_cu_mlp_args shape(int dtype, int64_t m, int64_t dim, int64_t hidden)
{
    fmlp_cu_mlp_args a;
    memset(&a, 0, sizeof a);
    a.dtype = dtype;
    a.act = FMLP_ACT_GELU_TANH;
    a.m = m;
    a.dim = dim;
    a.hidden = hidden;
    a.out = dim;
    a.ldx = dim;
    a.nwgu = 2 * hidden;
    a.sm_count = 132;
    a.cc_major = 9;
    a.row_stream = FMLP_CU_ROW_STREAM_DEFAULT;
    a.slice = 1; /* as a context has it unless FMLP_CUDA_SLICE=0 */
    return a;
}

/* The one kernel fits, runs by default or not, and is called `want`. */
static void takes(const fmlp_cu_mlp_args *a, bool by_default, const char *want, const char *what)
{
    if (!tu_check(fmlp_cu_mlp_one_fits(a), "%s: the one kernel fits", what)) return;
    tu_check(fmlp_cu_mlp_one_by_default(a) == by_default, "%s: %s by default", what, by_default ? "runs" : "does not run");
    const char *name = fmlp_cu_mlp_one_name(a);
    tu_check(strcmp(name, want) == 0, "%s: runs %s (%s)", what, want, name);
}

int main(void)
{
    char what[96];
    /* Llama-3-8B: the down groups do not stay resident, so the row streams */
    for (int64_t m = 1; m <= 16; m++) {
        fmlp_cu_mlp_args a = shape(FMLP_BF16, m, 4096, 14336);
        snprintf(what, sizeof what, "bf16 4096x14336 rows=%lld", (long long)m);
        takes(&a, true, m == 1 ? "fmlp_mlp_glu_bf16_onekernel1_rowstream" : "fmlp_mlp_glu_bf16_onekernel16_rowstream", what);
        tu_check(fmlp_cu_mlp_stream_fits(&a) && fmlp_cu_mlp_one_scratch(&a) == 0, "%s: the row stream fits, no scratch", what);
        a.dtype = FMLP_F16;
        snprintf(what, sizeof what, "f16 4096x14336 rows=%lld", (long long)m);
        takes(&a, true, m == 1 ? "fmlp_mlp_glu_f16_onekernel1_rowstream" : "fmlp_mlp_glu_f16_onekernel16_rowstream", what);
        a.dtype = FMLP_BF16;
        a.row_stream = FMLP_CU_ROW_STREAM_OFF;
        snprintf(what, sizeof what, "bf16 4096x14336 rows=%lld FMLP_CUDA_ROW_STREAM=0", (long long)m);
        takes(&a, false, m <= 8 ? "fmlp_mlp_glu_bf16_onekernel8" : "fmlp_mlp_glu_bf16_onekernel16", what);
        tu_check(fmlp_cu_mlp_one_scratch(&a) > 0, "%s: the K pieces need scratch", what);
    }
    /* the tutorial's: the hidden slice at one row, else the down groups
     * stay resident; the row streams only when asked */
    for (int64_t m = 1; m <= 16; m += 5) {
        fmlp_cu_mlp_args a = shape(FMLP_BF16, m, 768, 3072);
        snprintf(what, sizeof what, "bf16 768x3072 rows=%lld", (long long)m);
        takes(&a, true,
              m == 1  ? "fmlp_mlp_glu_bf16_onekernel1_slice768x24"
              : m <= 8 ? "fmlp_mlp_glu_bf16_onekernel8_smem"
                       : "fmlp_mlp_glu_bf16_onekernel16_smem",
              what);
        a.slice = 0;
        snprintf(what, sizeof what, "bf16 768x3072 rows=%lld FMLP_CUDA_SLICE=0", (long long)m);
        takes(&a, true, m <= 8 ? "fmlp_mlp_glu_bf16_onekernel8_smem" : "fmlp_mlp_glu_bf16_onekernel16_smem", what);
        a.slice = 1;
        a.row_stream = FMLP_CU_ROW_STREAM_WHEREVER;
        snprintf(what, sizeof what, "bf16 768x3072 rows=%lld FMLP_CUDA_ROW_STREAM=1", (long long)m);
        takes(&a, true, m == 1 ? "fmlp_mlp_glu_bf16_onekernel1_rowstream" : "fmlp_mlp_glu_bf16_onekernel16_rowstream", what);
    }
    /* the hidden-slice form at one row where it fits: small dim, out and
     * hidden columns a block; the row stream asked for wins */
    {
        fmlp_cu_mlp_args t = shape(FMLP_BF16, 1, 768, 3072);
        t.slice = 0;
        tu_check(!fmlp_cu_mlp_slice_fits(&t), "768x3072 rows=1: no hidden slice with FMLP_CUDA_SLICE=0");
        t.slice = 1;
        takes(&t, true, "fmlp_mlp_glu_bf16_onekernel1_slice768x24", "bf16 768x3072 rows=1");
        tu_check(fmlp_cu_mlp_one_scratch(&t) == (size_t)132 * 768 * 4, "768x3072 slice: scratch for a partial row a block");
        tu_check(fmlp_cu_slice_down_fits(FMLP_BF16, 9, 132, 768, 3072), "768x3072: the down projection takes a transposed copy");
        t.dtype = FMLP_F16;
        takes(&t, true, "fmlp_mlp_glu_f16_onekernel1_slice768x24", "f16 768x3072 rows=1");
        t.dtype = FMLP_BF16;
        t.m = 2;
        takes(&t, true, "fmlp_mlp_glu_bf16_onekernel8_smem", "bf16 768x3072 rows=2");
        t.m = 1;
        t.row_stream = FMLP_CU_ROW_STREAM_WHEREVER;
        takes(&t, true, "fmlp_mlp_glu_bf16_onekernel1_rowstream", "768x3072 rows=1, FMLP_CUDA_ROW_STREAM=1");
        t = shape(FMLP_BF16, 1, 1000, 4200);
        takes(&t, true, "fmlp_mlp_glu_bf16_onekernel1_slice1024x32", "1000x4200 rows=1");
        t = shape(FMLP_BF16, 1, 4096, 14336);
        tu_check(!fmlp_cu_mlp_slice_fits(&t), "4096x14336: no hidden slice (dim past 1024, 109 columns a block)");
        t = shape(FMLP_BF16, 1, 768, 4232);
        tu_check(!fmlp_cu_mlp_slice_fits(&t) && !fmlp_cu_slice_down_fits(FMLP_BF16, 9, 132, 768, 4232),
                 "768x4232: 33 hidden columns a block, no hidden slice and no transposed copy");
        t = shape(FMLP_BF16, 1, 768, 3072);
        t.out = 772;
        tu_check(!fmlp_cu_mlp_slice_fits(&t), "out 772 (not a multiple of 8): no hidden slice");
        t.out = 768;
        t.cc_major = 8;
        tu_check(!fmlp_cu_mlp_slice_fits(&t) && !fmlp_cu_slice_down_fits(FMLP_BF16, 8, 132, 768, 3072), "cc 8.x: no hidden slice");
        t.cc_major = 9;
        t.dtype = FMLP_F32;
        tu_check(!fmlp_cu_mlp_slice_fits(&t), "f32: no hidden slice");
    }
    /* what no one-kernel form takes, or only the forms without the row streams */
    fmlp_cu_mlp_args a = shape(FMLP_BF16, 17, 4096, 14336);
    tu_check(!fmlp_cu_mlp_one_fits(&a) && !fmlp_cu_mlp_stream_fits(&a), "17 rows: no one kernel");
    a = shape(FMLP_F32, 4, 4096, 14336);
    tu_check(!fmlp_cu_mlp_one_fits(&a) && !fmlp_cu_mlp_stream_fits(&a), "f32: no one kernel");
    a = shape(FMLP_BF16, 4, 4100, 14336);
    tu_check(!fmlp_cu_mlp_one_fits(&a) && !fmlp_cu_mlp_stream_fits(&a), "dim 4100 (not a multiple of 8): no one kernel");
    a = shape(FMLP_BF16, 4, 4096, 14340);
    tu_check(!fmlp_cu_mlp_one_fits(&a) && !fmlp_cu_mlp_stream_fits(&a), "hidden 14340: no one kernel");
    a = shape(FMLP_BF16, 4, 4096, 14336);
    a.x = (const void *)(uintptr_t)8;
    tu_check(!fmlp_cu_mlp_one_fits(&a) && !fmlp_cu_mlp_stream_fits(&a), "x rows 8-byte aligned: no one kernel");
    a = shape(FMLP_BF16, 4, 4096, 14336);
    a.x = (const void *)(uintptr_t)256;
    a.ldx = 4100;
    tu_check(!fmlp_cu_mlp_one_fits(&a) && !fmlp_cu_mlp_stream_fits(&a), "row stride 4100: no one kernel");
    for (int64_t m = 1; m <= 16; m += 15) {
        a = shape(FMLP_BF16, m, 4096, 14336);
        a.cc_major = 8;
        snprintf(what, sizeof what, "cc 8.x rows=%lld", (long long)m);
        tu_check(!fmlp_cu_mlp_stream_fits(&a), "%s: no row stream (it needs cc 9.x)", what);
        takes(&a, false, m <= 8 ? "fmlp_mlp_glu_bf16_onekernel8" : "fmlp_mlp_glu_bf16_onekernel16", what);
    }
    /* K too long for the one-row form's registers, hidden too wide for the
     * mma form's shared memory: refused, and the K-pieces form remains */
    a = shape(FMLP_BF16, 1, 4096, 32768);
    tu_check(!fmlp_cu_mlp_stream_fits(&a), "one row, hidden 32768: the one-row stream does not fit");
    a = shape(FMLP_BF16, 4, 4096, 65536);
    tu_check(fmlp_cu_mlp_stream_fits(&a), "4 rows, hidden 65536: the mma stream fits");
    a = shape(FMLP_BF16, 4, 4096, 1 << 21);
    tu_check(!fmlp_cu_mlp_stream_fits(&a), "4 rows, hidden 2^21: the mma stream's shared memory does not fit");
    takes(&a, false, "fmlp_mlp_glu_bf16_onekernel8", "4 rows, hidden 2^21");
    return tu_finish();
}
#else
int main(void)
{
    tu_skip("built without the CUDA backend");
    return tu_finish();
}
#endif
