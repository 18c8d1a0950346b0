/* convert_internal.h: converter internals shared with the pipeline (half and
 * bfloat16 rounding, element sizes). */
#ifndef REEL_CONVERT_INTERNAL_H
#define REEL_CONVERT_INTERNAL_H

#include "reel/convert.h"

/* Bytes per element of a reel_dtype (0 for an unknown dtype). */
size_t reel__dtype_size(int dtype);

/* IEEE 754 binary16 and bfloat16 from float, round to nearest even. */
uint16_t reel__f32_to_f16(float f);
uint16_t reel__f32_to_bf16(float f);

#endif
