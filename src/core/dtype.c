/* Why: f16 conversions (rarer than bf16, so out of line) and the bulk
 * converter used when weights or inputs arrive in another dtype. */
#include "core/dtype.h"

float fmlp_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else {
            int e = -1;
            do {
                man <<= 1;
                e++;
            } while (!(man & 0x400));
            u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else {
        u = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t fmlp_f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t au = u & 0x7fffffffu;
    if (au > 0x7f800000u) return sign | 0x7e00 | (uint16_t)((au >> 13) & 0x3ff);
    if (au >= 0x477ff000u) return sign | 0x7c00; /* rounds to Inf */
    if (au < 0x38800000u) {                       /* subnormal or zero in f16 */
        if (au < 0x33000000u) return sign;
        uint32_t man = (au & 0x7fffff) | 0x800000;
        int shift = 126 - (int)(au >> 23);
        uint32_t half = 1u << (shift - 1);
        uint32_t rest = man & ((1u << shift) - 1);
        uint32_t r = man >> shift;
        if (rest > half || (rest == half && (r & 1))) r++;
        return sign | (uint16_t)r;
    }
    uint32_t r = au - 0x38000000u; /* rebias 127 -> 15 */
    r += 0xfff + ((r >> 13) & 1);
    return sign | (uint16_t)(r >> 13);
}

void fmlp_convert(fmlp_dtype dst_dt, void *dst, fmlp_dtype src_dt, const void *src, int64_t n)
{
    if (dst_dt == src_dt) {
        memcpy(dst, src, (size_t)n * fmlp_dtype_size(dst_dt));
        return;
    }
    for (int64_t i = 0; i < n; i++) fmlp_store(dst_dt, dst, i, fmlp_load(src_dt, src, i));
}

void fmlp_convert_buffer(fmlp_dtype dst_dtype, void *dst, fmlp_dtype src_dtype, const void *src, int64_t n)
{
    if (!dst || !src || n <= 0 || (unsigned)dst_dtype >= FMLP_DTYPE_COUNT || (unsigned)src_dtype >= FMLP_DTYPE_COUNT) return;
    fmlp_convert(dst_dtype, dst, src_dtype, src, n);
}
