/* convert_internal.h: the converter's internals, for src/convert alone (half
 * and bfloat16 rounding, the SIMD widening); element sizes are dtype.h. */
#ifndef REEL_CONVERT_INTERNAL_H
#define REEL_CONVERT_INTERNAL_H

#include "reel/convert.h"
#include "convert/dtype.h"

#include <stdint.h>

/* IEEE 754 binary16 and bfloat16 from float, round to nearest even. */
uint16_t reel__f32_to_f16(float f);
uint16_t reel__f32_to_bf16(float f);

/* widen.c: o[x] = (s[x] / scale - mean) / sd for n bytes, in SIMD lanes
 * where the CPU has them; reel__widen_f32_matches: 1 if it gives exactly
 * lut[v] for every byte value v (then it may replace the table). */
void reel__widen_f32(const uint8_t *restrict s, float *restrict o, int n, float scale, float mean, float sd);
int reel__widen_f32_matches(float scale, float mean, float sd, const float lut[256]);

#endif
