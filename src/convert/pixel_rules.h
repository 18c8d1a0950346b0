/* pixel_rules.h: the per-pixel arithmetic of gray and 16-bit output (the
 * largest code of a depth, the float normalisation of a code), as static
 * inline functions, so that a GPU kernel mirrors exactly what the CPU does
 * (float16 and bfloat16 then round to nearest even: widen.c). */
#ifndef REEL_CONVERT_PIXEL_RULES_H
#define REEL_CONVERT_PIXEL_RULES_H

#include <stdint.h>

/* The largest code of a `depth`-bit sample: 255, 1023, 4095, 65535. */
static inline uint32_t reel__px_max_code(int depth)
{
    return depth >= 16 ? 65535u : (1u << depth) - 1u;
}

/* The float divisor of codes whose largest is `max_code`: the settings'
 * divisor is on the 8-bit scale (default 255; not positive: 255), so it is
 * scaled by max_code / 255, in double, then rounded once to float: the
 * default gives max_code exactly (4095 for 12-bit gray). */
static inline float reel__px_scale(float divisor, uint32_t max_code)
{
    double d = divisor > 0 ? (double)divisor : 255.0;
    return (float)(d * (double)max_code / 255.0);
}

/* A code normalised, out = (v / scale - mean) / sd, in float, in this order
 * (the 8-bit tables of convert.c are built with the same expression). */
static inline float reel__px_norm(uint32_t v, float scale, float mean, float sd)
{
    return ((float)v / scale - mean) / sd;
}

#endif
