/* Why: eager runs gelu and mul as their own kernels (as PyTorch eager does)
 * and compiled fuses them into one gelu·mul pass (as torch.compile does);
 * these are those memory-bound kernels, 16-byte vectorized when the tensors
 * allow it, with a scalar twin for odd strides and offsets. Each variant is
 * an extern "C" kernel so CUPTI reports a readable name. */
#include "cuda/device_util.cuh"
#include "cuda/kernel_entry.cuh"
#include "cuda/kernels.h"

namespace {

template <typename T, int OP, int ACT, int V>
__device__ __forceinline__ void pw_body(int64_t rows, int64_t cols, const T *a, int64_t lda, const T *b, int64_t ldb,
                                        T *out, int64_t ldo)
{
    const int64_t per_row = cols / V;
    const int64_t total = rows * per_row;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int64_t r = i / per_row;
        const int64_t c = (i - r * per_row) * V;
        alignas(16) T va[V];
        alignas(16) T vb[V];
        alignas(16) T vo[V];
        if (V * sizeof(T) == 16) {
            *reinterpret_cast<uint4 *>(va) = __ldg(reinterpret_cast<const uint4 *>(a + r * lda + c));
            if (OP != FMLP_CU_PW_ACT)
                *reinterpret_cast<uint4 *>(vb) = __ldg(reinterpret_cast<const uint4 *>(b + r * ldb + c));
        } else {
#pragma unroll
            for (int j = 0; j < V; j++) {
                va[j] = a[r * lda + c + j];
                if (OP != FMLP_CU_PW_ACT) vb[j] = b[r * ldb + c + j];
            }
        }
#pragma unroll
        for (int j = 0; j < V; j++) {
            const float x = fmlp_to_f32(va[j]);
            float y;
            if (OP == FMLP_CU_PW_ACT)
                y = fmlp_act_apply(ACT, x);
            else if (OP == FMLP_CU_PW_MUL)
                y = x * fmlp_to_f32(vb[j]);
            else
                y = fmlp_act_apply(ACT, x) * fmlp_to_f32(vb[j]);
            vo[j] = fmlp_from_f32<T>(y);
        }
        if (V * sizeof(T) == 16) {
            *reinterpret_cast<uint4 *>(out + r * ldo + c) = *reinterpret_cast<const uint4 *>(vo);
        } else {
#pragma unroll
            for (int j = 0; j < V; j++) out[r * ldo + c + j] = vo[j];
        }
    }
}

} // namespace

#define FMLP_PW_ONE(NAME, T, OP, ACT, V)                                                                      \
    extern "C" __global__ void __launch_bounds__(256) NAME(int64_t rows, int64_t cols, const T *a, int64_t lda, \
                                                           const T *b, int64_t ldb, T *out, int64_t ldo)        \
    {                                                                                                          \
        pw_body<T, OP, ACT, V>(rows, cols, a, lda, b, ldb, out, ldo);                                          \
    }
#define FMLP_PW_DTYPES(PREFIX, OP, ACT)                                 \
    FMLP_PW_ONE(PREFIX##_f32_scalar, float, OP, ACT, 1)                 \
    FMLP_PW_ONE(PREFIX##_f32_vec, float, OP, ACT, 4)                    \
    FMLP_PW_ONE(PREFIX##_bf16_scalar, __nv_bfloat16, OP, ACT, 1)        \
    FMLP_PW_ONE(PREFIX##_bf16_vec, __nv_bfloat16, OP, ACT, 8)           \
    FMLP_PW_ONE(PREFIX##_f16_scalar, __half, OP, ACT, 1)                \
    FMLP_PW_ONE(PREFIX##_f16_vec, __half, OP, ACT, 8)

#define FMLP_PW_ACT_KERNELS(e, name, ...) FMLP_PW_DTYPES(fmlp_##name, FMLP_CU_PW_ACT, e)
#define FMLP_PW_GLU_KERNELS(e, name, ...) FMLP_PW_DTYPES(fmlp_##name##_mul, FMLP_CU_PW_GLU, e)
FMLP_ACT_FUNCTIONS(FMLP_PW_ACT_KERNELS)
FMLP_PW_DTYPES(fmlp_mul, FMLP_CU_PW_MUL, FMLP_ACT_NONE)
FMLP_ACT_FUNCTIONS(FMLP_PW_GLU_KERNELS)

namespace {

#define FMLP_PW_E(NAME) FMLP_KERNEL_ENTRY(NAME)
#define FMLP_PW_ROW(PREFIX)                                                      \
    {{FMLP_PW_E(PREFIX##_f32_scalar), FMLP_PW_E(PREFIX##_f32_vec)},              \
     {FMLP_PW_E(PREFIX##_bf16_scalar), FMLP_PW_E(PREFIX##_bf16_vec)},            \
     {FMLP_PW_E(PREFIX##_f16_scalar), FMLP_PW_E(PREFIX##_f16_vec)}}
#define FMLP_PW_ACT_ROW(e, name, ...) FMLP_PW_ROW(fmlp_##name),
#define FMLP_PW_GLU_ROW(e, name, ...) FMLP_PW_ROW(fmlp_##name##_mul),

/* [act][dtype][vec]. NONE, the table's first row, has no kernels: the
 * product without an activation is pw_mul. */
static_assert(FMLP_ACT_NONE == 0, "pw_act and pw_glu start with NONE's empty row");
static_assert(FMLP_DTYPE_COUNT == 3, "FMLP_PW_DTYPES and FMLP_PW_ROW cover every dtype");
const fmlp_kernel_entry pw_act[][FMLP_DTYPE_COUNT][2] = {{}, FMLP_ACT_FUNCTIONS(FMLP_PW_ACT_ROW)};
const fmlp_kernel_entry pw_glu[][FMLP_DTYPE_COUNT][2] = {{}, FMLP_ACT_FUNCTIONS(FMLP_PW_GLU_ROW)};
const fmlp_kernel_entry pw_mul[FMLP_DTYPE_COUNT][2] = FMLP_PW_ROW(fmlp_mul);
static_assert(sizeof pw_act / sizeof pw_act[0] == FMLP_ACT_COUNT, "an activation without ACT kernels");
static_assert(sizeof pw_glu / sizeof pw_glu[0] == FMLP_ACT_COUNT, "an activation without GLU kernels");

bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

} // namespace

extern "C" bool fmlp_cu_pw_can_vec(int dtype, int64_t cols, const void *a, int64_t lda, const void *b, int64_t ldb,
                                   const void *out, int64_t ldo)
{
    const int64_t v = dtype == FMLP_F32 ? 4 : 8;
    if (cols % v || lda % v || ldo % v || !aligned16(a) || !aligned16(out)) return false;
    if (b && (ldb % v || !aligned16(b))) return false;
    return true;
}

extern "C" cudaError_t fmlp_cu_pointwise(cudaStream_t s, bool launch, int dtype, int op, int act, bool vec,
                                         int64_t rows, int64_t cols, const void *a, int64_t lda, const void *b,
                                         int64_t ldb, void *out, int64_t ldo, const char **name)
{
    const fmlp_kernel_entry(*row)[2];
    if (op == FMLP_CU_PW_MUL)
        row = pw_mul;
    else if (act > FMLP_ACT_NONE && act < FMLP_ACT_COUNT)
        row = op == FMLP_CU_PW_ACT ? pw_act[act] : pw_glu[act];
    else
        return cudaErrorInvalidValue;
    if (dtype < 0 || dtype >= FMLP_DTYPE_COUNT) return cudaErrorInvalidValue;
    const fmlp_kernel_entry &e = row[dtype][vec ? 1 : 0];
    if (name) *name = e.name;
    if (!launch || rows <= 0 || cols <= 0) return cudaSuccess;
    const int64_t v = vec ? (dtype == FMLP_F32 ? 4 : 8) : 1;
    const int64_t work = rows * (cols / v);
    int64_t blocks = (work + 255) / 256;
    if (blocks > 8192) blocks = 8192;
    void *args[] = {&rows, &cols, (void *)&a, &lda, (void *)&b, &ldb, &out, &ldo};
    return cudaLaunchKernel(e.fn, dim3((unsigned)blocks), dim3(256), args, 0, s);
}
