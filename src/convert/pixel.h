/* pixel.h: the conversion's per-pixel arithmetic, single-source: static
 * inline functions compiled as C (the converter's normalisation and half
 * floats, src/cuda's host emulation) and as CUDA (src/cuda/kernels.cu). For
 * src/cuda; the tables the functions read are built by cuda/plan.c. */
#ifndef REEL_CONVERT_PIXEL_H
#define REEL_CONVERT_PIXEL_H

#ifdef __CUDACC_RTC__
/* NVRTC (scripts/cuda_kernels.py) has no libc headers: the few types and
 * offsetof the arithmetic uses, with the meanings LP64 gives them. */
typedef unsigned long size_t;
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
#define offsetof(t, m) ((size_t)__INTADDR__(&((t *)0)->m))
#else
#include <stddef.h>
#include <stdint.h>
#endif

#ifdef __CUDACC__
#define REEL_HD static __host__ __device__ __forceinline__
#else
#define REEL_HD static inline
#ifndef __CUDACC__
/* Host side (convert.c): the inverse matrix swscale uses for an AVColorSpace
 * (the converter's rule for unknown ones included), 16.16 {crv, cbu, cgu,
 * cgv}; and whether a frame's range is full as swscale reads it (the
 * frame's range, else the pixel format's: yuvj* and gray* are full). */
const int *reel__convert_coefficients(int colorspace);
int reel__convert_full_range(int color_range, int pix_fmt);
/* 1 where swscale's unscaled 4:2:0 -> rgb24 conversion runs in its x86
 * SSSE3 form (reel__px_rgb_simd), 0 where in its C tables. */
int reel__convert_unscaled_simd(void);
/* 1 where swscale's vertical pass to an 8-bit plane (gray) runs in its x86
 * MMX form (reel__px_gray: 16-bit high products) on all but the last two
 * output rows, 0 where in C. */
int reel__convert_vfilter_mmx(void);
/* The output's element strides for a w x h picture of `channels` channels:
 * the transform's own (stride_x/_y/_c) when it gives any, else CHW (or one
 * channel) planes, else interleaved HWC. One rule for the CPU converter, its
 * deep path and the GPU's plan. */
struct reel_transform;
void reel__convert_strides(const struct reel_transform *t, int w, int h, int channels, int64_t *sx, int64_t *sy,
                           int64_t *sc);
#endif

#endif

/* ---- normalisation and output element types (the CPU converter uses
 * these same functions for its tables) ---- */

/* out = (v / scale - mean) / sd, in float, IEEE division (no fast math). */
REEL_HD float reel__px_normalise(int v, float scale, float mean, float sd)
{
    return ((float)v / scale - mean) / sd;
}

/* ---- gray and 16-bit output (convert/deep.c) ---- */

/* The largest code of a `depth`-bit sample: 255, 1023, 4095, 65535. */
REEL_HD uint32_t reel__px_max_code(int depth)
{
    return depth >= 16 ? 65535u : (1u << depth) - 1u;
}

/* The float divisor of codes whose largest is `max_code`: the settings'
 * divisor is on the 8-bit scale (default 255; not positive: 255), so it is
 * scaled by max_code / 255, in double, then rounded once to float: the
 * default gives max_code exactly (4095 for 12-bit gray). */
REEL_HD float reel__px_scale(float divisor, uint32_t max_code)
{
    double d = divisor > 0 ? (double)divisor : 255.0;
    return (float)(d * (double)max_code / 255.0);
}

/* IEEE 754 binary16 from float, round to nearest even. */
REEL_HD uint16_t reel__px_f16(float f)
{
    union {
        float f;
        uint32_t u;
    } b;
    b.f = f;
    uint32_t x = b.u;
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mant = x & 0x7fffffu;
    int32_t exp = (int32_t)((x >> 23) & 0xff);
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    exp = exp - 127 + 15;
    if (exp >= 0x1f) return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

/* bfloat16 from float, round to nearest even (NaN stays NaN). */
REEL_HD uint16_t reel__px_bf16(float f)
{
    union {
        float f;
        uint32_t u;
    } b;
    b.f = f;
    uint32_t x = b.u;
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- YUV -> RGB as FFmpeg 5.1's swscale computes it for rgb24 output (the
 * CPU fused path): 8-bit Y, U, V into a luma table indexed with chroma
 * offsets (table form, chroma shared by an output pixel pair), or 30-bit
 * sums (full form, an odd output width). ---- */

typedef struct reel__px_coef {
    int32_t cy, oy, yoffs;               /* table form: entry k = clip8((k cy - 384<<16 - oy + 2^15) >> 16) */
    int32_t crv, cbu, cgu, cgv;          /* table form: chroma index steps (16.16, relative to cy) */
    int32_t fy, fyo, fvr, fvg, fug, fub; /* full form: 13-bit coefficients, 9-bit luma offset */
    int32_t simd;                        /* 1: the unscaled 2x2 path in x86 SSSE3 form (16-bit products) */
    int32_t sy, syo, svr, svg, sug, sub; /* its coefficients: 16-bit words of 13 fractional bits, offset x8 */
} reel__px_coef;

REEL_HD int reel__px_clip8(int v)
{
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

REEL_HD int reel__px_ytab(const reel__px_coef *k, int idx)
{
    int64_t v = ((int64_t)idx * k->cy - ((int64_t)384 << 16) - k->oy + 0x8000) >> 16;
    return reel__px_clip8((int)v);
}

/* Table form: y, u, v are 8-bit. */
REEL_HD void reel__px_rgb_table(const reel__px_coef *k, int y, int u, int v, int rgb[3])
{
    int base = y + k->yoffs;
    rgb[0] = reel__px_ytab(k, base - (k->crv >> 9) + ((v * k->crv) >> 16));
    rgb[1] = reel__px_ytab(k, base - (k->cgu >> 9) + ((u * k->cgu) >> 16) - (k->cgv >> 9) + ((v * k->cgv) >> 16));
    rgb[2] = reel__px_ytab(k, base - (k->cbu >> 9) + ((u * k->cbu) >> 16));
}

/* SSSE3 form of the unscaled 2x2 path (what x86 swscale runs for 4:2:0 to
 * rgb24 without a resize): samples times 8, 16-bit high products. */
REEL_HD void reel__px_rgb_simd(const reel__px_coef *k, int y, int u, int v, int rgb[3])
{
    int yy = ((int)(int16_t)((y << 3) - k->syo) * k->sy) >> 16;
    int uu = (u << 3) - 1024, vv = (v << 3) - 1024;
    rgb[0] = reel__px_clip8(yy + ((vv * k->svr) >> 16));
    rgb[1] = reel__px_clip8(yy + ((uu * k->sug) >> 16) + ((vv * k->svg) >> 16));
    rgb[2] = reel__px_clip8(yy + ((uu * k->sub) >> 16));
}

/* Full form: y has 9 fractional bits, u and v are centred (value - 128)
 * with 9 fractional bits. */
REEL_HD void reel__px_rgb_full(const reel__px_coef *k, int y, int u, int v, int rgb[3])
{
    int32_t yy = (int32_t)((uint32_t)(y - k->fyo) * (uint32_t)k->fy + (1u << 21));
    int32_t c[3];
    c[0] = (int32_t)((uint32_t)yy + (uint32_t)v * (uint32_t)k->fvr);
    c[1] = (int32_t)((uint32_t)yy + (uint32_t)v * (uint32_t)k->fvg + (uint32_t)u * (uint32_t)k->fug);
    c[2] = (int32_t)((uint32_t)yy + (uint32_t)u * (uint32_t)k->fub);
    for (int i = 0; i < 3; i++) {
        int32_t x = c[i];
        if (x & (int32_t)0xC0000000) x = x < 0 ? 0 : (1 << 30) - 1;
        rgb[i] = x >> 22;
    }
}

/* The kernels' grid: blocks of REEL_PX_BLOCK_W x REEL_PX_BLOCK_H threads
 * over an output frame's (x, y), one grid z per frame of the batch; the
 * emulation walks the same grid. */
#define REEL_PX_BLOCK_W 32
#define REEL_PX_BLOCK_H 8

/* ---- resampling: swscale's two passes, horizontal to 15 bits, then
 * vertical, with the filters cuda/plan.c builds as swscale does ---- */

/* One axis of a resize: output o reads `taps` source samples from
 * start[pos + o] with 14-bit (horizontal) or 12-bit (vertical) weights
 * coef[coef + o * taps + j]. */
typedef struct reel__px_axis {
    int32_t taps, pos, coef;
} reel__px_axis;

enum {
    REEL_PX_BLOCK = 0, /* no resize, 8-bit 4:2:0, even height: chroma of the 2x2 block (swscale's unscaled yuv2rgb) */
    REEL_PX_HALF = 1,  /* chroma resampled to half the output width, shared by a pixel pair (table form) */
    REEL_PX_FULL = 2,  /* chroma resampled to the output width (full form; odd widths, 4:4:4, gray) */
    REEL_PX_PAL = 3    /* no resize, 8-bit gray to 8-bit RGB: swscale's palette, the code in R, G and B */
};

/* The vertical pass's rounding, by the luma and chroma filters' tap counts
 * (swscale picks its packed output function by them). */
enum {
    REEL_PX_V1 = 1, /* one luma tap */
    REEL_PX_V2 = 2, /* two taps each: blends without a rounding term */
    REEL_PX_VX = 3  /* the general sum, rounded */
};

/* The gray output's range step after the horizontal pass (swscale's
 * lumRangeToJpeg / lumRangeFromJpeg, 15- or 19-bit form). */
enum { REEL_PX_RANGE_NONE = 0, REEL_PX_RANGE_TO_FULL = 1, REEL_PX_RANGE_TO_LIMITED = 2 };

/* One frame's source and output. Pointers are host memory in the
 * emulation, device memory on the GPU. */
typedef struct reel__px_frame {
    const uint8_t *y, *uv;        /* luma, interleaved chroma (NULL for a gray source) */
    int32_t y_pitch, uv_pitch;    /* bytes */
    int32_t bits;                 /* sample depth: 8 (bytes), else 16-bit words (below) */
    int32_t x0, y0;               /* the scaler's source origin in luma (the crop, or 0 for the whole frame) */
    int32_t ox, oy;               /* output (x, y) is the scaler's (x + ox, y + oy), before the rotation */
    int32_t mode, vmode;          /* REEL_PX_BLOCK/HALF/FULL; REEL_PX_V1/V2/VX */
    reel__px_axis hy, vy, hc, vc; /* luma and chroma, horizontal and vertical */
    reel__px_coef coef;
    void *dst;                   /* the output's first element */
    int64_t sc, sy, sx;          /* output strides in elements */
    int32_t w, h, dtype, flip;   /* output size, reel_dtype, mirror left-right */
    float scale, mean[3], sd[3]; /* normalisation (float dtypes) */
    int32_t shift;               /* a word's sample is word >> shift (P010 6, P016 of 12 bits 4, gray planes 0) */
    int32_t gray;                /* 1: one channel, swscale's gray picture of the luma (reel__px_gray) */
    int32_t gdepth;              /* gray: the picture's bits (8, or the source's) */
    int32_t range;               /* gray: REEL_PX_RANGE_* */
    int32_t mmx;                 /* gray, 8 bits: the vertical pass's x86 MMX form (but on the last two rows) */
    int32_t vrows;               /* gray: the scaler's output height */
    int32_t copy;                /* gray, unscaled, deeper to 8 bits: swscale's copy (1: shift only, 2: full range) */
    int32_t rot, pw, ph;         /* display rotation (clockwise degrees) of the unscaled pw x ph picture */
    uint8_t dith[8][8];          /* gray 8 bits: dither at (row & 7, column & 7) */
    const uint8_t *v;            /* 4:4:4: uv is the U plane, this the V plane (NULL: 4:2:0 or gray) */
    int32_t v_pitch;             /* bytes */
    /* AFTER_RGB with a resize (reel__px_rgb2): the fields above plan the
     * unscaled picture (pass 1); swscale's RGB24 -> RGB24 resize of its
     * crop (pass 2) is planned here */
    int32_t rgb2;                /* 1: pass 2 runs (mode is then pass 1's) */
    int32_t x2, y2;              /* the crop's origin in the pass-1 picture */
    int32_t chalf;               /* 1: chroma read from pixel pairs (rgb24ToUV_half: a downscale by 2 across) */
    reel__px_axis h2y, v2y, h2c; /* pass 2's luma across and down, chroma across (down: v2y) */
    int32_t vmode2;              /* REEL_PX_V1/V2/VX of pass 2 */
    int32_t r2y[9];              /* RGB -> YUV weights (15 bits): Y, U, V rows of {r, g, b} */
    reel__px_coef coef2;         /* pass 2's YUV -> RGB (BT.601 limited, full form) */
} reel__px_frame;

/* The kernel reads the frames as the host wrote them: the layout must be
 * the same under nvcc (C++) and the C compiler (LP64 on both). */
#ifdef __cplusplus
#define REEL_PX_LAYOUT(c) static_assert(c, "reel__px_frame's layout differs between C and CUDA")
#else
#define REEL_PX_LAYOUT(c) _Static_assert(c, "reel__px_frame's layout differs between C and CUDA")
#endif
REEL_PX_LAYOUT(sizeof(reel__px_frame) == 552 && offsetof(reel__px_frame, coef) == 100 &&
               offsetof(reel__px_frame, dst) == 184 && offsetof(reel__px_frame, sd) == 248 &&
               offsetof(reel__px_frame, dith) == 300 && offsetof(reel__px_frame, v) == 368 &&
               offsetof(reel__px_frame, h2y) == 396 && offsetof(reel__px_frame, coef2) == 472);

REEL_HD int reel__px_sample(const reel__px_frame *f, int chroma, int comp, int col, int row)
{
    const uint8_t *base;
    int pitch;
    if (chroma && f->v) { /* 4:4:4, planar */
        base = comp ? f->v : f->uv;
        pitch = comp ? f->v_pitch : f->uv_pitch;
        col += f->x0;
        row += f->y0;
    } else if (chroma) {
        base = f->uv;
        pitch = f->uv_pitch;
        col = 2 * (col + (f->x0 >> 1)) + comp;
        row += f->y0 >> 1;
    } else {
        base = f->y;
        pitch = f->y_pitch;
        col += f->x0;
        row += f->y0;
    }
    const uint8_t *line = base + (int64_t)row * pitch;
    if (f->bits == 8) return line[col];
    return ((const uint16_t *)line)[col] >> f->shift;
}

/* The horizontal pass at output column o of source row `row`: 15 bits. A
 * gray source has no chroma: swscale's lines hold 128 << 7 then. */
REEL_HD int reel__px_hpass(const reel__px_frame *f, const int32_t *start, const int16_t *coef, reel__px_axis a,
                           int chroma, int comp, int o, int row)
{
    if (chroma && !f->uv) return 1 << 14;
    int s0 = start[a.pos + o];
    const int16_t *w = coef + a.coef + (int64_t)o * a.taps;
    int32_t sum = 0;
    for (int j = 0; j < a.taps; j++) sum += reel__px_sample(f, chroma, comp, s0 + j, row) * w[j];
    sum >>= f->bits == 8 ? 7 : f->bits - 1;
    return sum < 32767 ? sum : 32767;
}

/* One plane at scaler output (col, row) through both passes: the vertical
 * filter's rows and weights (*n of them, at most 2 kept in h[] / w[] for
 * the one- and two-tap cases) and the full sum. */
REEL_HD int64_t reel__px_vsum(const reel__px_frame *f, const int32_t *start, const int16_t *coef, reel__px_axis ha,
                              reel__px_axis va, int chroma, int comp, int col, int row, int h2[2], int w2[2])
{
    int r0 = start[va.pos + row];
    const int16_t *w = coef + va.coef + (int64_t)row * va.taps;
    int64_t sum = 0;
    for (int j = 0; j < va.taps; j++) {
        int h = reel__px_hpass(f, start, coef, ha, chroma, comp, col, r0 + j);
        if (j < 2) {
            h2[j] = h;
            w2[j] = w[j];
        }
        sum += (int64_t)h * w[j];
    }
    return sum;
}

/* swscale's luma table has 512 entries of headroom each side: an
 * overshoot (bicubic) indexes it unclipped. */
REEL_HD int reel__px_headroom(int y)
{
    return y < -256 ? -256 : y > 511 ? 511 : y;
}

/* swscale's packed output functions' vertical rounding (by vmode: its
 * yuv2packed1 / 2 / X) of a plane's vertical sum s (h2, w2: its first two
 * rows and weights): luma 8 bits, unclipped (table form), or 9 fractional
 * bits (full form); chroma 8 bits, or centred with 9 fractional bits. */
REEL_HD int reel__px_luma_out(int vmode, int full, int64_t s, const int h2[2])
{
    if (vmode == REEL_PX_V1) return full ? h2[0] * 4 : reel__px_headroom((h2[0] + 64) >> 7);
    if (vmode == REEL_PX_V2) return full ? (int)(s >> 10) : reel__px_headroom((int)(s >> 19));
    return full ? (int)(((1 << 9) + s) >> 10) : reel__px_headroom((int)(((1 << 18) + s) >> 19));
}

REEL_HD int reel__px_chroma_out(int vmode, int full, int taps, int64_t s, const int h2[2], const int w2[2])
{
    if (vmode == REEL_PX_V1) {
        if (taps == 1 || w2[1] < 2048) return full ? (h2[0] - (128 << 7)) * 4 : reel__px_clip8((h2[0] + 64) >> 7);
        return full ? (h2[0] + h2[1] - (128 << 8)) * 2 : reel__px_clip8((h2[0] + h2[1] + 128) >> 8);
    }
    if (vmode == REEL_PX_V2) return full ? (int)((s - ((int64_t)128 << 19)) >> 10) : reel__px_clip8((int)(s >> 19));
    return full ? (int)(((1 << 9) - ((int64_t)128 << 19) + s) >> 10) : reel__px_clip8((int)(((1 << 18) + s) >> 19));
}

/* Luma at scaler output (col, row): 8 bits, unclipped (table form), or 9
 * fractional bits (full form). */
REEL_HD int reel__px_luma(const reel__px_frame *f, const int32_t *start, const int16_t *coef, int col, int row)
{
    int h2[2] = { 0, 0 }, w2[2] = { 0, 0 };
    int64_t s = reel__px_vsum(f, start, coef, f->hy, f->vy, 0, 0, col, row, h2, w2);
    return reel__px_luma_out(f->vmode, f->mode == REEL_PX_FULL, s, h2);
}

/* One chroma component (comp 0: U, 1: V) at chroma output (col, row): 8
 * bits (table form) or centred with 9 fractional bits (full form). */
REEL_HD int reel__px_chroma(const reel__px_frame *f, const int32_t *start, const int16_t *coef, int comp, int col,
                            int row)
{
    int h2[2] = { 0, 0 }, w2[2] = { 0, 0 };
    int64_t s = reel__px_vsum(f, start, coef, f->hc, f->vc, 1, comp, col, row, h2, w2);
    return reel__px_chroma_out(f->vmode, f->mode == REEL_PX_FULL, f->vc.taps, s, h2, w2);
}

/* The RGB at the scaler's output (c, r). */
REEL_HD void reel__px_rgb(const reel__px_frame *f, const int32_t *start, const int16_t *coef, int c, int r, int rgb[3])
{
    if (f->mode == REEL_PX_PAL) {
        rgb[0] = rgb[1] = rgb[2] = reel__px_sample(f, 0, 0, c, r);
        return;
    }
    if (f->mode == REEL_PX_BLOCK) {
        int yy = reel__px_sample(f, 0, 0, c, r);
        int u = reel__px_sample(f, 1, 0, c >> 1, r >> 1), v = reel__px_sample(f, 1, 1, c >> 1, r >> 1);
        if (f->coef.simd)
            reel__px_rgb_simd(&f->coef, yy, u, v, rgb);
        else
            reel__px_rgb_table(&f->coef, yy, u, v, rgb);
        return;
    }
    int yy = reel__px_luma(f, start, coef, c, r);
    int cc = f->mode == REEL_PX_HALF ? c >> 1 : c;
    int u = reel__px_chroma(f, start, coef, 0, cc, r), v = reel__px_chroma(f, start, coef, 1, cc, r);
    if (f->mode == REEL_PX_HALF)
        reel__px_rgb_table(&f->coef, yy, u, v, rgb);
    else
        reel__px_rgb_full(&f->coef, yy, u, v, rgb);
}

/* ---- AFTER_RGB with a resize: swscale's RGB24 -> RGB24 scaler on the
 * pass-1 picture's crop (what the CPU's convert_banded / convert_in_rgb
 * run): its input converted to 15-bit YUV (rgb24ToY, rgb24ToUV or, a
 * downscale by 2 across, rgb24ToUV_half), both passes, full-chroma output
 * (an RGB source is not subsampled: swscale forces SWS_FULL_CHR_H_INT) ----
 */

/* Pass 2's input plane comp (0 Y, 1 U, 2 V) at sample col of crop row
 * row, as swscale's input functions make it (14 bits, 6 fractional), from
 * the pass-1 RGB computed in place. */
REEL_HD int reel__px_rgbin(const reel__px_frame *f, const int32_t *start, const int16_t *coef, int comp, int col,
                           int row)
{
    const int32_t *k = f->r2y + 3 * comp;
    const int half = comp && f->chalf;
    int a[3], b[3] = { 0, 0, 0 };
    reel__px_rgb(f, start, coef, f->x2 + (half ? 2 * col : col), f->y2 + row, a);
    if (!half) return (k[0] * a[0] + k[1] * a[1] + k[2] * a[2] + ((comp ? 256 : 32) << 14) + (1 << 8)) >> 9;
    reel__px_rgb(f, start, coef, f->x2 + 2 * col + 1, f->y2 + row, b);
    return (k[0] * (a[0] + b[0]) + k[1] * (a[1] + b[1]) + k[2] * (a[2] + b[2]) + (256 << 15) + (1 << 9)) >> 10;
}

/* Pass 2's horizontal pass (hScale16To15 for an RGB source: >> 13, to 15
 * bits) at output column o of crop row row. */
REEL_HD int reel__px_hpass2(const reel__px_frame *f, const int32_t *start, const int16_t *coef, reel__px_axis a,
                            int comp, int o, int row)
{
    int s0 = start[a.pos + o];
    const int16_t *w = coef + a.coef + (int64_t)o * a.taps;
    int32_t sum = 0;
    for (int j = 0; j < a.taps; j++) sum += reel__px_rgbin(f, start, coef, comp, s0 + j, row) * w[j];
    sum >>= 13;
    return sum < 32767 ? sum : 32767;
}

/* The RGB at pass 2's output (c, r): its vertical pass and swscale's
 * yuv2rgb24_full_{1,2,X} with BT.601 limited-range coefficients. */
REEL_HD void reel__px_rgb2(const reel__px_frame *f, const int32_t *start, const int16_t *coef, int c, int r, int rgb[3])
{
    const reel__px_axis va = f->v2y;
    const int r0 = start[va.pos + r];
    const int16_t *w = coef + va.coef + (int64_t)r * va.taps;
    int yuv[3];
    for (int p = 0; p < 3; p++) {
        int h2[2] = { 0, 0 }, w2[2] = { 0, 0 };
        int64_t s = 0;
        for (int j = 0; j < va.taps; j++) {
            int h = reel__px_hpass2(f, start, coef, p ? f->h2c : f->h2y, p, c, r0 + j);
            if (j < 2) {
                h2[j] = h;
                w2[j] = w[j];
            }
            s += (int64_t)h * w[j];
        }
        yuv[p] = p ? reel__px_chroma_out(f->vmode2, 1, va.taps, s, h2, w2) : reel__px_luma_out(f->vmode2, 1, s, h2);
    }
    reel__px_rgb_full(&f->coef2, yuv[0], yuv[1], yuv[2], rgb);
}

/* ---- 19-bit intermediates (swscale's for 16-bit output: gray16 and
 * rgb48) ---- */

/* A horizontal sum of bits-deep samples times 14-bit weights to 19 bits. */
REEL_HD int32_t reel__px_h19(int32_t sum, int bits)
{
    int32_t v = sum >> (bits == 8 ? 3 : bits - 5);
    return v < (1 << 19) - 1 ? v : (1 << 19) - 1;
}

/* One plane's horizontal pass to 19 bits at output column o of row `row`
 * (a gray source's chroma: 128 << 11, as swscale's lines hold). */
REEL_HD int32_t reel__px_hpass19(const reel__px_frame *f, const int32_t *start, const int16_t *coef, reel__px_axis a,
                                 int chroma, int comp, int o, int row)
{
    if (chroma && !f->uv) return 1 << 18;
    int s0 = start[a.pos + o];
    const int16_t *w = coef + a.coef + (int64_t)o * a.taps;
    int32_t sum = 0;
    for (int j = 0; j < a.taps; j++) sum += reel__px_sample(f, chroma, comp, s0 + j, row) * w[j];
    return reel__px_h19(sum, f->bits);
}

/* swscale's two-row blend a (4096 - w) + b w, its int sums wrapping. */
REEL_HD uint32_t reel__px_blend(int32_t a, int32_t b, int w)
{
    return (uint32_t)a * (uint32_t)(4096 - w) + (uint32_t)b * (uint32_t)w;
}

/* uint16 RGB at the scaler's output (c, r): swscale's rgb48 output
 * (yuv2rgba64's 1-, 2- and X-tap forms, chroma shared by a pixel pair or
 * full), 17-bit luma and centred chroma times the 13-bit coefficients. */
REEL_HD void reel__px_rgb48(const reel__px_frame *f, const int32_t *start, const int16_t *coef, int c, int r,
                            int rgb[3])
{
    const reel__px_axis vy = f->vy, vc = f->vc;
    const int cc = f->mode == REEL_PX_HALF ? c >> 1 : c;
    const int ly = start[vy.pos + r], cy = start[vc.pos + r];
    const int16_t *lw = coef + vy.coef + (int64_t)r * vy.taps, *cw = coef + vc.coef + (int64_t)r * vc.taps;
    int32_t Y, U, V;
    if (f->vmode == REEL_PX_V1) {
        Y = reel__px_hpass19(f, start, coef, f->hy, 0, 0, c, ly) >> 2;
        int32_t u0 = reel__px_hpass19(f, start, coef, f->hc, 1, 0, cc, cy);
        int32_t v0 = reel__px_hpass19(f, start, coef, f->hc, 1, 1, cc, cy);
        if (vc.taps == 1 || cw[1] < 2048) {
            U = (u0 - (128 << 11)) >> 2;
            V = (v0 - (128 << 11)) >> 2;
        } else {
            U = (u0 + reel__px_hpass19(f, start, coef, f->hc, 1, 0, cc, cy + 1) - (128 << 12)) >> 3;
            V = (v0 + reel__px_hpass19(f, start, coef, f->hc, 1, 1, cc, cy + 1) - (128 << 12)) >> 3;
        }
    } else if (f->vmode == REEL_PX_V2) {
        const int ya = lw[1], ua = cw[1];
        Y = (int32_t)reel__px_blend(reel__px_hpass19(f, start, coef, f->hy, 0, 0, c, ly),
                                    reel__px_hpass19(f, start, coef, f->hy, 0, 0, c, ly + 1), ya) >>
            14;
        U = (int32_t)(reel__px_blend(reel__px_hpass19(f, start, coef, f->hc, 1, 0, cc, cy),
                                     reel__px_hpass19(f, start, coef, f->hc, 1, 0, cc, cy + 1), ua) -
                      (128u << 23)) >>
            14;
        V = (int32_t)(reel__px_blend(reel__px_hpass19(f, start, coef, f->hc, 1, 1, cc, cy),
                                     reel__px_hpass19(f, start, coef, f->hc, 1, 1, cc, cy + 1), ua) -
                      (128u << 23)) >>
            14;
    } else {
        uint32_t y = (uint32_t)-0x40000000, u = (uint32_t) - (128 << 23), v = u;
        for (int j = 0; j < vy.taps; j++)
            y += (uint32_t)reel__px_hpass19(f, start, coef, f->hy, 0, 0, c, ly + j) * (uint32_t)lw[j];
        for (int j = 0; j < vc.taps; j++) {
            u += (uint32_t)reel__px_hpass19(f, start, coef, f->hc, 1, 0, cc, cy + j) * (uint32_t)cw[j];
            v += (uint32_t)reel__px_hpass19(f, start, coef, f->hc, 1, 1, cc, cy + j) * (uint32_t)cw[j];
        }
        Y = ((int32_t)y >> 14) + 0x10000;
        U = (int32_t)u >> 14;
        V = (int32_t)v >> 14;
    }
    const reel__px_coef *k = &f->coef;
    uint32_t yy = ((uint32_t)Y - (uint32_t)k->fyo) * (uint32_t)k->fy + (1u << 13) - (1u << 29);
    uint32_t x[3] = { (uint32_t)V * (uint32_t)k->fvr, (uint32_t)V * (uint32_t)k->fvg + (uint32_t)U * (uint32_t)k->fug,
                      (uint32_t)U * (uint32_t)k->fub };
    for (int i = 0; i < 3; i++) {
        int32_t o = ((int32_t)(x[i] + yy) >> 14) + (1 << 15);
        rgb[i] = o < 0 ? 0 : o > 65535 ? 65535 : o;
    }
}

/* ---- gray: the luma plane through swscale's scaler to a gray picture of
 * gdepth bits (deep.c's intermediate) ---- */

/* The horizontal pass at output column o of source row `row`, then the
 * range step: 15 bits in an int16 (gdepth <= 14), else 19 bits. */
REEL_HD int32_t reel__px_gray_h(const reel__px_frame *f, const int32_t *start, const int16_t *coef, int o, int row)
{
    const reel__px_axis a = f->hy;
    int s0 = start[a.pos + o];
    const int16_t *w = coef + a.coef + (int64_t)o * a.taps;
    int32_t sum = 0;
    for (int j = 0; j < a.taps; j++) sum += reel__px_sample(f, 0, 0, s0 + j, row) * w[j];
    if (f->gdepth > 14) return reel__px_h19(sum, f->bits); /* 16-bit gray: no range step (no 16-bit YUV) */
    int32_t v = sum >> (f->bits == 8 ? 7 : f->bits - 1);
    v = v < 32767 ? v : 32767;
    if (f->range == REEL_PX_RANGE_TO_FULL)
        v = (int16_t)(((v < 30189 ? v : 30189) * 19077 - 39057361) >> 14);
    else if (f->range == REEL_PX_RANGE_TO_LIMITED)
        v = (int16_t)((v * 14071 + 33561947) >> 14);
    return v;
}

/* The gray code at the scaler's output (c, r): swscale's vertical pass and
 * output at gdepth bits (its yuv2plane1 / yuv2planeX for 8, 9-14 and 16
 * bits, the x86 MMX form where the plan says), or its plain copy to 8 bits
 * of an unscaled deeper gray picture. */
REEL_HD int reel__px_gray(const reel__px_frame *f, const int32_t *start, const int16_t *coef, int c, int r)
{
    const int d = f->gdepth, dith = f->dith[r & 7][c & 7];
    if (f->copy) {
        int v = reel__px_sample(f, 0, 0, c, r), sh = f->bits - 8;
        if (f->copy == 1) {
            int t = (v + dith) >> sh;
            return t - (t >> 8);
        }
        return (v - (v >> 8) + dith) >> sh;
    }
    const reel__px_axis va = f->vy;
    int r0 = start[va.pos + r];
    const int16_t *w = coef + va.coef + (int64_t)r * va.taps;
    if (va.taps == 1) {
        int32_t s = reel__px_gray_h(f, start, coef, c, r0);
        if (d == 8) return reel__px_clip8((s + dith) >> 7);
        int32_t v = d > 14 ? (s + 4) >> 3 : (s + (1 << (14 - d))) >> (15 - d);
        int32_t hi = d > 14 ? 65535 : (1 << d) - 1;
        return v < 0 ? 0 : v > hi ? hi : v;
    }
    if (d == 8 && f->mmx && r < f->vrows - 2) { /* 16-bit lanes: high products, wrapping sums */
        int16_t acc = (int16_t)((dith + 8 * (va.taps - 1)) >> 4);
        for (int j = 0; j < va.taps; j++) {
            int16_t h = (int16_t)reel__px_gray_h(f, start, coef, c, r0 + j);
            acc = (int16_t)(acc + (int16_t)(((int32_t)h * w[j]) >> 16));
        }
        return reel__px_clip8(acc >> 3);
    }
    uint32_t sum = 0;
    for (int j = 0; j < va.taps; j++) /* unsigned: 19 bits times a weight may pass INT_MAX (16-bit output) */
        sum += (uint32_t)reel__px_gray_h(f, start, coef, c, r0 + j) * (uint32_t)w[j];
    if (d == 8) return reel__px_clip8((int32_t)(sum + ((uint32_t)dith << 12)) >> 19);
    if (d > 14) {
        int32_t v = (int32_t)(sum + (1u << 14) - 0x40000000u) >> 15;
        return 0x8000 + (v < -32768 ? -32768 : v > 32767 ? 32767 : v);
    }
    int32_t v = (int32_t)(sum + (1u << (26 - d))) >> (27 - d), hi = (1 << d) - 1;
    return v < 0 ? 0 : v > hi ? hi : v;
}

/* The scaler's output (c, r) that output pixel (x, y) shows: the flip, the
 * crop's offset, then the display rotation (as deep.c and convert.c rotate
 * the unscaled picture). */
REEL_HD void reel__px_where(const reel__px_frame *f, int x, int y, int *c, int *r)
{
    int X = (f->flip ? f->w - 1 - x : x) + f->ox, Y = y + f->oy;
    if (f->rot == 90) {
        *c = Y;
        *r = f->ph - 1 - X;
    } else if (f->rot == 180) {
        *c = f->pw - 1 - X;
        *r = f->ph - 1 - Y;
    } else if (f->rot == 270) {
        *c = f->pw - 1 - Y;
        *r = X;
    } else {
        *c = X;
        *r = Y;
    }
}

/* One value of channel ch at element offset o, in the frame's dtype
 * (reel_dtype: 0 uint8, 1 float32, 2 float16, 3 bfloat16, 4 uint16). */
REEL_HD void reel__px_put(const reel__px_frame *f, int64_t o, int ch, int v)
{
    if (f->dtype == 0) {
        ((uint8_t *)f->dst)[o] = (uint8_t)v;
        return;
    }
    if (f->dtype == 4) {
        ((uint16_t *)f->dst)[o] = (uint16_t)v;
        return;
    }
    float n = reel__px_normalise(v, f->scale, f->mean[ch], f->sd[ch]);
    if (f->dtype == 1)
        ((float *)f->dst)[o] = n;
    else
        ((uint16_t *)f->dst)[o] = f->dtype == 2 ? reel__px_f16(n) : reel__px_bf16(n);
}

/* The whole per-pixel job of one thread: output pixel (x, y) of frame f,
 * in its dtype, normalised, flipped, rotated, at its strides. */
REEL_HD void reel__px_store(const reel__px_frame *f, const int32_t *start, const int16_t *coef, int x, int y)
{
    int c, r;
    reel__px_where(f, x, y, &c, &r);
    int64_t off = (int64_t)y * f->sy + (int64_t)x * f->sx;
    if (f->gray) {
        reel__px_put(f, off, 0, reel__px_gray(f, start, coef, c, r));
        return;
    }
    int rgb[3];
    if (f->rgb2) {
        reel__px_rgb2(f, start, coef, c, r, rgb);
    } else if (f->dtype == 4 && f->mode != REEL_PX_BLOCK) {
        reel__px_rgb48(f, start, coef, c, r, rgb);
    } else {
        reel__px_rgb(f, start, coef, c, r, rgb);
        if (f->dtype == 4) /* the unscaled 8-bit rgb48: the 8-bit value in both bytes */
            for (int ch = 0; ch < 3; ch++) rgb[ch] *= 257;
    }
    for (int ch = 0; ch < 3; ch++) reel__px_put(f, off + ch * f->sc, ch, rgb[ch]);
}

#endif
