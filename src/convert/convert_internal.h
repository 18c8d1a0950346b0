/* convert_internal.h: the converter's internals, for src/convert alone (the
 * converter object, its swscale cache and scratch, half and bfloat16
 * rounding, the SIMD widening, the deep path); element sizes are dtype.h,
 * gray and 16-bit per-pixel rules pixel.h. */
#ifndef REEL_CONVERT_INTERNAL_H
#define REEL_CONVERT_INTERNAL_H

#include "reel/convert.h"
#include "convert/dtype.h"
#include "core/frame.h"

#include <stdint.h>

#define SWS_CACHE 4

typedef struct sws_entry {
    struct SwsContext *sws;
    int sw, sh, sfmt, dw, dh, dfmt, flags, cs, range;
    uint64_t used;
} sws_entry;

typedef struct reel__scratch {
    uint8_t *p;
    size_t size;
} reel__scratch;

struct reel_converter {
    sws_entry cache[SWS_CACHE];
    uint64_t tick;
    reel__scratch s[3];
    /* normalisation lookup tables, rebuilt when the transform changes */
    int lut_dtype;
    float lut_key[7];
    float lut_f32[3][256];
    uint16_t lut_u16[3][256];
    float lut_args[3][3]; /* per channel: scale, mean, std as the tables were built */
    int f32_vec;          /* reel__widen_f32 reproduces lut_f32 exactly (widen.c) */
    int ssse3;            /* the CPU has SSSE3 (FFmpeg's CPU flags, so its mask applies) */
};

/* widen.c: IEEE 754 binary16 and bfloat16 from float, round to nearest
 * even. */
uint16_t reel__f32_to_f16(float f);
uint16_t reel__f32_to_bf16(float f);

/* widen.c: o[x] = (s[x] / scale - mean) / sd for n bytes, in SIMD lanes
 * where the CPU has them; reel__widen_f32_matches: 1 if it gives exactly
 * lut[v] for every byte value v (then it may replace the table). */
void reel__widen_f32(const uint8_t *restrict s, float *restrict o, int n, float scale, float mean, float sd);
int reel__widen_f32_matches(float scale, float mean, float sd, const float lut[256]);

/* sws.c, shared by convert.c and deep.c: a scratch buffer of at least
 * `size` bytes (NULL when out of memory); swscale flags of a reel_filter;
 * a cached swscale context, the colour matrix and range set as the ffmpeg
 * CLI's scale filter sets them (between two gray formats the range kept: a
 * gray picture keeps its codes); pointers to pixel (x, y) of every plane. */
uint8_t *reel__scratch_get(reel__scratch *s, size_t size);
int reel__sws_flags_of(int filter);
struct SwsContext *reel__get_sws(reel_converter *c, int sw, int sh, int sfmt, int dw, int dh, int dfmt, int flags,
                                 int cs, int range);
struct AVFrame;
void reel__plane_ptrs(const struct AVFrame *f, int x, int y, const uint8_t *src[4]);

/* deep.c. reel__convert_is_deep: 1 when `t` on a frame of pixel format
 * `fmt` takes the deep path (gray, uint16, or a float dtype of a source
 * deeper than 8 bits). reel__convert_deep: the frame's crop (cx, cy, cw, ch
 * in the rotated picture, rot clockwise degrees) at ow x oh, through a gray
 * or RGB48 picture, into dst per `t`. */
int reel__convert_is_deep(int fmt, const reel_transform *t);
int reel__convert_deep(reel_converter *c, const reel_frame *frame, const reel_transform *t, int rot, int cx, int cy,
                       int cw, int ch, int ow, int oh, void *dst, reel_error *err);

#endif
