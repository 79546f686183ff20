/* Why: bf16 and f16 are stored as raw 16-bit patterns on the CPU; these are
 * the one place their conversions live, rounding to nearest even exactly as
 * PyTorch's c10::BFloat16 and c10::Half do, so eager/compiled outputs round
 * where PyTorch's do. NaN stays NaN (quiet), Inf stays Inf. */
#ifndef FMLP_CORE_DTYPE_H
#define FMLP_CORE_DTYPE_H

#include <stdint.h>
#include <string.h>

#include "fmlp.h"

static inline float fmlp_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t fmlp_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float fmlp_round_bf16(float f) { return fmlp_bf16_to_f32(fmlp_f32_to_bf16(f)); }

float fmlp_f16_to_f32(uint16_t h);
uint16_t fmlp_f32_to_f16(float f);

/* Element i of a buffer of `dtype`, widened to f32 / stored from f32. */
static inline float fmlp_load(fmlp_dtype dt, const void *p, int64_t i)
{
    switch (dt) {
    case FMLP_BF16: return fmlp_bf16_to_f32(((const uint16_t *)p)[i]);
    case FMLP_F16: return fmlp_f16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

static inline void fmlp_store(fmlp_dtype dt, void *p, int64_t i, float v)
{
    switch (dt) {
    case FMLP_BF16: ((uint16_t *)p)[i] = fmlp_f32_to_bf16(v); break;
    case FMLP_F16: ((uint16_t *)p)[i] = fmlp_f32_to_f16(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

/* Converts n elements between dtypes (src and dst may not overlap). */
void fmlp_convert(fmlp_dtype dst_dt, void *dst, fmlp_dtype src_dt, const void *src, int64_t n);

#endif
