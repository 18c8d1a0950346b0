/* convert.c: decoded frame -> output pixels. swscale does YUV->RGB (fused
 * with crop and resize where exactness allows), then one pass writes the
 * small result into its final dtype, layout and strides. */
#include "convert/convert_internal.h"
#include "convert/pixel.h"
#include "core/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <libavutil/cpu.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

void reel_pixel_default_settings(reel_pixel_settings *p)
{
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->filter = REEL_FILTER_BILINEAR;
    p->convert_path = REEL_CONVERT_PATH_FUSED;
    p->apply_rotation = 1;
    p->dtype = REEL_DTYPE_UINT8;
    p->divisor = 255.0f;
    p->std[0] = p->std[1] = p->std[2] = 1.0f;
}

void reel_transform_default_settings(reel_transform *t)
{
    if (!t) return;
    memset(t, 0, sizeof *t);
    reel_pixel_default_settings(&t->pixels);
    t->layout = REEL_LAYOUT_HWC;
}

size_t reel__dtype_size(int dtype)
{
    switch (dtype) {
    case REEL_DTYPE_UINT8: return 1;
    case REEL_DTYPE_FLOAT32: return 4;
    case REEL_DTYPE_FLOAT16:
    case REEL_DTYPE_BFLOAT16:
    case REEL_DTYPE_UINT16: return 2;
    default: return 0;
    }
}

int reel__color_channels(int color)
{
    return color == REEL_COLOR_RGB ? 3 : color == REEL_COLOR_GRAY ? 1 : 0;
}

int reel_transform_get_output_size(const reel_transform *t, int src_w, int src_h, int *out_w, int *out_h, size_t *bytes,
                                   reel_error *err)
{
    reel_transform def;
    if (!t) {
        reel_transform_default_settings(&def);
        t = &def;
    }
    int cw = src_w, ch = src_h;
    if (t->crop_w || t->crop_h) {
        if (t->crop_w <= 0 || t->crop_h <= 0 || t->crop_x < 0 || t->crop_y < 0 || t->crop_x > src_w - t->crop_w ||
            t->crop_y > src_h - t->crop_h)
            return reel__error_set(err, REEL_E_INVALID_ARG, "crop %d,%d,%dx%d falls outside the %dx%d frame", t->crop_x,
                                   t->crop_y, t->crop_w, t->crop_h, src_w, src_h);
        cw = t->crop_w;
        ch = t->crop_h;
    }
    int w = t->width, h = t->height;
    if (w < 0 || h < 0) return reel__error_set(err, REEL_E_INVALID_ARG, "output size %dx%d is negative", w, h);
    if (w == 0 && h == 0) {
        w = cw;
        h = ch;
    } else if (h == 0)
        h = (int)lrint((double)ch * w / cw);
    else if (w == 0)
        w = (int)lrint((double)cw * h / ch);
    if (w < 1) w = 1;
    if (h < 1) h = 1;
    if (w > 16384 || h > 16384) return reel__error_set(err, REEL_E_INVALID_ARG, "output size %dx%d is too large", w, h);
    size_t es = reel__dtype_size(t->pixels.dtype);
    if (!es) return reel__error_set(err, REEL_E_INVALID_ARG, "unknown dtype %d", t->pixels.dtype);
    const int nc = reel__color_channels(t->pixels.color);
    if (!nc) return reel__error_set(err, REEL_E_INVALID_ARG, "unknown color %d", t->pixels.color);
    if (t->layout != REEL_LAYOUT_HWC && t->layout != REEL_LAYOUT_CHW)
        return reel__error_set(err, REEL_E_INVALID_ARG, "unknown layout %d", t->layout);
    if (t->pixels.filter < REEL_FILTER_BILINEAR || t->pixels.filter > REEL_FILTER_NEAREST)
        return reel__error_set(err, REEL_E_INVALID_ARG, "unknown filter %d", t->pixels.filter);
    if (out_w) *out_w = w;
    if (out_h) *out_h = h;
    if (bytes) *bytes = (size_t)w * (size_t)h * (size_t)nc * es;
    return REEL_OK;
}

int reel_converter_create(reel_converter **out, reel_error *err)
{
    if (!out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_converter_create: out is NULL");
    *out = calloc(1, sizeof **out);
    if (!*out) return reel__error_set(err, REEL_E_NOMEM, "reel_converter_create: out of memory");
    (*out)->lut_dtype = -1;
    (*out)->ssse3 = !!(av_get_cpu_flags() & AV_CPU_FLAG_SSSE3);
    return REEL_OK;
}

void reel_converter_destroy(reel_converter **pc)
{
    if (!pc || !*pc) return;
    reel_converter *c = *pc;
    for (int i = 0; i < SWS_CACHE; i++) sws_freeContext(c->cache[i].sws);
    for (int i = 0; i < 3; i++) av_free(c->s[i].p);
    free(c);
    *pc = NULL;
}

int64_t reel_frame_get_index(const reel_frame *f)
{
    return f ? f->index : -1;
}
int64_t reel_frame_get_pts(const reel_frame *f)
{
    return f ? f->pts : AV_NOPTS_VALUE;
}
int reel_frame_get_size(const reel_frame *f, int *w, int *h, reel_error *err)
{
    if (w) *w = !f ? 0 : f->full_w ? f->full_w : f->av->width;
    if (h) *h = !f ? 0 : f->full_w ? f->full_h : f->av->height;
    return f ? REEL_OK : reel__error_set(err, REEL_E_INVALID_ARG, "reel_frame_get_size: frame is NULL");
}

/* Row stride for packed RGB24 scratch images: swscale's SIMD yuv2rgb writes
 * in blocks of 8 pixels and may run past the width, so leave room. */
static int rgb_stride(int w)
{
    return FFALIGN(w * 3 + 24, 64);
}

/* YUV region -> RGB24 scratch via swscale. */
static int yuv_to_rgb(reel_converter *c, const AVFrame *f, int x, int y, int w, int h, int ow, int oh, int flags,
                      uint8_t *dst, int dst_stride)
{
    struct SwsContext *sws =
        reel__get_sws(c, w, h, f->format, ow, oh, AV_PIX_FMT_RGB24, flags, f->colorspace, f->color_range);
    if (!sws) return REEL_E_UNSUPPORTED_CODEC;
    const uint8_t *src[4];
    reel__plane_ptrs(f, x, y, src);
    uint8_t *d[4] = { dst, NULL, NULL, NULL };
    int ds[4] = { dst_stride, 0, 0, 0 };
    int r = sws_scale(sws, src, f->linesize, 0, h, d, ds);
    return r == oh ? REEL_OK : REEL_E_INTERNAL;
}

/* Is converting a band of rows pixel-identical to converting the whole
 * frame? True for swscale's unscaled 4:2:0/4:2:2 -> RGB path (one chroma row
 * per output row pair, no filtering) when the band starts on an even row and
 * has even height; other formats interpolate chroma across rows. */
static int band_is_exact(const AVFrame *f)
{
    int fmt = f->format;
    return (fmt == AV_PIX_FMT_YUV420P || fmt == AV_PIX_FMT_YUVJ420P || fmt == AV_PIX_FMT_YUV422P ||
            fmt == AV_PIX_FMT_YUVJ422P) &&
           !(f->height & 1);
}

static void rotate_rgb(const uint8_t *src, int sstride, int w, int h, int rot, uint8_t *dst, int dstride)
{
    int ow = (rot == 180) ? w : h, oh = (rot == 180) ? h : w;
    for (int r = 0; r < oh; r++) {
        uint8_t *o = dst + (ptrdiff_t)r * dstride;
        for (int col = 0; col < ow; col++) {
            int sr, sc;
            if (rot == 90) {
                sr = h - 1 - col;
                sc = r;
            } else if (rot == 180) {
                sr = h - 1 - r;
                sc = w - 1 - col;
            } else {
                sr = col;
                sc = w - 1 - r;
            }
            const uint8_t *p = src + (ptrdiff_t)sr * sstride + sc * 3;
            o[col * 3] = p[0];
            o[col * 3 + 1] = p[1];
            o[col * 3 + 2] = p[2];
        }
    }
}

static void build_luts(reel_converter *c, const reel_transform *t)
{
    float key[7] = { t->pixels.divisor, t->pixels.mean[0], t->pixels.mean[1], t->pixels.mean[2],
                     t->pixels.std[0],  t->pixels.std[1],  t->pixels.std[2] };
    if (c->lut_dtype == (int)t->pixels.dtype && !memcmp(key, c->lut_key, sizeof key)) return;
    float scale = t->pixels.divisor > 0 ? t->pixels.divisor : 255.0f;
    c->f32_vec = 1;
    for (int ch = 0; ch < 3; ch++) {
        float sd = t->pixels.std[ch] != 0.0f ? t->pixels.std[ch] : 1.0f;
        for (int v = 0; v < 256; v++) {
            float x = reel__px_normalise(v, scale, t->pixels.mean[ch], sd);
            c->lut_f32[ch][v] = x;
            c->lut_u16[ch][v] = t->pixels.dtype == REEL_DTYPE_BFLOAT16 ? reel__f32_to_bf16(x) : reel__f32_to_f16(x);
        }
        c->lut_args[ch][0] = scale;
        c->lut_args[ch][1] = t->pixels.mean[ch];
        c->lut_args[ch][2] = sd;
        c->f32_vec &= reel__widen_f32_matches(scale, t->pixels.mean[ch], sd, c->lut_f32[ch]);
    }
    memcpy(c->lut_key, key, sizeof key);
    c->lut_dtype = t->pixels.dtype;
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define REEL_HAVE_SSSE3_PATH 1
/* 16 RGB24 pixels (48 bytes) into 16 bytes of each plane with 9 byte
 * shuffles, reversed when flipping: GCC cannot vectorise stride-3 byte
 * loads, and this row loop is a store record's whole conversion cost.
 * Returns how many pixels it did; the caller finishes the row. */
__attribute__((target("ssse3"))) static int planar_row_u8_ssse3(const uint8_t *s, uint8_t *r, uint8_t *g, uint8_t *b,
                                                                int w, int flip)
{
    const __m128i r0 = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i r1 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14, -1, -1, -1, -1, -1);
    const __m128i r2 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 4, 7, 10, 13);
    const __m128i g0 = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i g1 = _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1);
    const __m128i g2 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14);
    const __m128i b0 = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i b1 = _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1);
    const __m128i b2 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15);
    const __m128i rev = _mm_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    int x = 0;
    for (; x + 16 <= w; x += 16) {
        const uint8_t *p = s + 3 * (flip ? w - 16 - x : x);
        __m128i a0 = _mm_loadu_si128((const __m128i *)p);
        __m128i a1 = _mm_loadu_si128((const __m128i *)(p + 16));
        __m128i a2 = _mm_loadu_si128((const __m128i *)(p + 32));
        __m128i vr =
            _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a0, r0), _mm_shuffle_epi8(a1, r1)), _mm_shuffle_epi8(a2, r2));
        __m128i vg =
            _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a0, g0), _mm_shuffle_epi8(a1, g1)), _mm_shuffle_epi8(a2, g2));
        __m128i vb =
            _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a0, b0), _mm_shuffle_epi8(a1, b1)), _mm_shuffle_epi8(a2, b2));
        if (flip) {
            vr = _mm_shuffle_epi8(vr, rev);
            vg = _mm_shuffle_epi8(vg, rev);
            vb = _mm_shuffle_epi8(vb, rev);
        }
        _mm_storeu_si128((__m128i *)(r + x), vr);
        _mm_storeu_si128((__m128i *)(g + x), vg);
        _mm_storeu_si128((__m128i *)(b + x), vb);
    }
    return x;
}
#endif

/* One RGB24 row into three planes (flipped or not). */
static void planar_row_u8(const uint8_t *restrict s, uint8_t *restrict r, uint8_t *restrict g, uint8_t *restrict b,
                          int w, int flip, int ssse3)
{
    int x0 = 0;
#ifdef REEL_HAVE_SSSE3_PATH
    if (ssse3) x0 = planar_row_u8_ssse3(s, r, g, b, w, flip);
#else
    (void)ssse3;
#endif
    if (!flip) {
        for (int x = x0; x < w; x++) {
            r[x] = s[3 * x];
            g[x] = s[3 * x + 1];
            b[x] = s[3 * x + 2];
        }
        return;
    }
    for (int x = x0; x < w; x++) {
        const uint8_t *p = s + 3 * (w - 1 - x);
        r[x] = p[0];
        g[x] = p[1];
        b[x] = p[2];
    }
}

/* float32 planes: de-interleaved into bytes a chunk at a time (on the
 * stack, in cache), then widened in SIMD lanes (widen.c) when that gives the
 * table's values exactly (reel__widen_f32_matches, checked per transform); else
 * the table. */
static void planar_row_f32(const reel_converter *c, const uint8_t *restrict s, float *restrict r, float *restrict g,
                           float *restrict b, int w, int flip)
{
    const float(*lut)[256] = c->lut_f32;
    if (c->f32_vec) {
        enum { CHUNK = 256 };
        uint8_t p[3][CHUNK];
        float *o[3] = { r, g, b };
        for (int x0 = 0; x0 < w; x0 += CHUNK) {
            int n = w - x0 < CHUNK ? w - x0 : CHUNK;
            /* flipped: output x0.. comes from input w-x0-n.. read backwards */
            planar_row_u8(s + 3 * (flip ? w - x0 - n : x0), p[0], p[1], p[2], n, flip, c->ssse3);
            for (int ch = 0; ch < 3; ch++)
                reel__widen_f32(p[ch], o[ch] + x0, n, c->lut_args[ch][0], c->lut_args[ch][1], c->lut_args[ch][2]);
        }
        return;
    }
    for (int x = 0; x < w; x++) {
        const uint8_t *p = s + 3 * (flip ? w - 1 - x : x);
        r[x] = lut[0][p[0]];
        g[x] = lut[1][p[1]];
        b[x] = lut[2][p[2]];
    }
}

static void planar_row_u16(const uint8_t *restrict s, uint16_t *restrict r, uint16_t *restrict g, uint16_t *restrict b,
                           int w, int flip, const uint16_t lut[3][256])
{
    for (int x = 0; x < w; x++) {
        const uint8_t *p = s + 3 * (flip ? w - 1 - x : x);
        r[x] = lut[0][p[0]];
        g[x] = lut[1][p[1]];
        b[x] = lut[2][p[2]];
    }
}

/* The one pass from the small RGB24 result into the caller's tensor slot:
 * flip, dtype, normalisation and layout together, so the output is written
 * once. Normalisation is a table lookup per byte (3 x 256 entries). */
static void emit(reel_converter *c, const uint8_t *src, int sstride, int w, int h, const reel_transform *t, void *dst)
{
    int64_t sx, sy, sc;
    reel__convert_strides(t, w, h, 3, &sx, &sy, &sc);
    int flip = t->flip_horizontal;

    if (sx == 1) {
        /* planar rows (CHW): contiguous per plane, so each row is one tight
         * de-interleaving loop the compiler vectorises, not a strided walk */
        if (t->pixels.dtype != REEL_DTYPE_UINT8) build_luts(c, t);
        for (int y = 0; y < h; y++) {
            const uint8_t *s = src + (ptrdiff_t)y * sstride;
            if (t->pixels.dtype == REEL_DTYPE_UINT8) {
                uint8_t *r = (uint8_t *)dst + y * sy;
                planar_row_u8(s, r, r + sc, r + 2 * sc, w, flip, c->ssse3);
            } else if (t->pixels.dtype == REEL_DTYPE_FLOAT32) {
                float *r = (float *)dst + y * sy;
                planar_row_f32(c, s, r, r + sc, r + 2 * sc, w, flip);
            } else {
                uint16_t *r = (uint16_t *)dst + y * sy;
                planar_row_u16(s, r, r + sc, r + 2 * sc, w, flip, c->lut_u16);
            }
        }
        return;
    }
    if (t->pixels.dtype == REEL_DTYPE_UINT8) {
        uint8_t *o = dst;
        if (!flip && sx == 3 && sc == 1) {
            for (int y = 0; y < h; y++) memcpy(o + y * sy, src + (ptrdiff_t)y * sstride, (size_t)w * 3);
            return;
        }
        for (int y = 0; y < h; y++) {
            const uint8_t *s = src + (ptrdiff_t)y * sstride;
            uint8_t *r = o + y * sy, *g = r + sc, *b = g + sc;
            for (int x = 0; x < w; x++) {
                const uint8_t *p = s + 3 * (flip ? w - 1 - x : x);
                int64_t off = x * sx;
                r[off] = p[0];
                g[off] = p[1];
                b[off] = p[2];
            }
        }
        return;
    }
    build_luts(c, t);
    if (t->pixels.dtype == REEL_DTYPE_FLOAT32) {
        float *o = dst;
        const float *l0 = c->lut_f32[0], *l1 = c->lut_f32[1], *l2 = c->lut_f32[2];
        for (int y = 0; y < h; y++) {
            const uint8_t *s = src + (ptrdiff_t)y * sstride;
            float *r = o + y * sy, *g = r + sc, *b = g + sc;
            for (int x = 0; x < w; x++) {
                const uint8_t *p = s + 3 * (flip ? w - 1 - x : x);
                int64_t off = x * sx;
                r[off] = l0[p[0]];
                g[off] = l1[p[1]];
                b[off] = l2[p[2]];
            }
        }
        return;
    }
    uint16_t *o = dst;
    const uint16_t *l0 = c->lut_u16[0], *l1 = c->lut_u16[1], *l2 = c->lut_u16[2];
    for (int y = 0; y < h; y++) {
        const uint8_t *s = src + (ptrdiff_t)y * sstride;
        uint16_t *r = o + y * sy, *g = r + sc, *b = g + sc;
        for (int x = 0; x < w; x++) {
            const uint8_t *p = s + 3 * (flip ? w - 1 - x : x);
            int64_t off = x * sx;
            r[off] = l0[p[0]];
            g[off] = l1[p[1]];
            b[off] = l2[p[2]];
        }
    }
}

/* Rows of RGB per band in convert_banded: even (bands start on even rows,
 * see band_is_exact), and small enough that a 1080p band (about 186 KB)
 * stays in cache between its conversion and its resize. */
#define BAND_ROWS 32

/* AFTER_RGB without a full-resolution RGB picture: the YUV->RGB conversion
 * runs in bands of BAND_ROWS rows (pixel-identical to the whole frame's,
 * band_is_exact), and each band is handed to the RGB resize as a slice
 * (swscale's slice input keeps the rows its vertical filter still needs),
 * so the result is bit-identical to converting the whole picture first.
 * Fused on purpose: per decoder context this holds one band (~0.2 MB at
 * 1080p) instead of a ~6 MB picture, and the band is read back from cache.
 * Needs rot == 0, a resize, band_is_exact(f) and banded_scale_ok(). */
static int convert_banded(reel_converter *c, const AVFrame *f, int cx, int cy, int cw, int ch, int ow, int oh,
                          reel_filter filter, uint8_t *dst, int dst_stride, int *nomem)
{
    const int bs = rgb_stride(f->width);
    uint8_t *band = reel__scratch_get(&c->s[0], (size_t)bs * (BAND_ROWS + 1));
    if (!band) {
        *nomem = 1;
        return REEL_E_NOMEM;
    }
    int out = 0;
    for (int y = cy & ~1; y < cy + ch;) {
        int h = f->height - y < BAND_ROWS ? f->height - y : BAND_ROWS;
        int r = yuv_to_rgb(c, f, 0, y, f->width, h, f->width, h, SWS_BICUBIC, band, bs);
        if (r != REEL_OK) return r;
        /* fetched after the band's context, so that it is always among the
         * cache's three most recent entries and never evicted mid-picture
         * (its slice state lives in it) */
        struct SwsContext *sws =
            reel__get_sws(c, cw, ch, AV_PIX_FMT_RGB24, ow, oh, AV_PIX_FMT_RGB24, reel__sws_flags_of(filter), 0, 0);
        if (!sws) {
            *nomem = 1;
            return REEL_E_NOMEM;
        }
        int s0 = y > cy ? y : cy, s1 = y + h < cy + ch ? y + h : cy + ch;
        const uint8_t *sp[4] = { band + (ptrdiff_t)(s0 - y) * bs + (ptrdiff_t)cx * 3, NULL, NULL, NULL };
        int ss[4] = { bs, 0, 0, 0 };
        uint8_t *dp[4] = { dst, NULL, NULL, NULL };
        int ds[4] = { dst_stride, 0, 0, 0 };
        int got = sws_scale(sws, sp, ss, s0 - cy, s1 - s0, dp, ds);
        if (got < 0) return REEL_E_INTERNAL;
        out += got;
        y += h;
    }
    return out == oh ? REEL_OK : REEL_E_INTERNAL;
}

/* Can swscale scale cw x ch -> ow x oh in RGB from slices (convert_banded)?
 * Not past a ratio: when a filter of swscale's initFilter (libswscale
 * utils.c) would have 256 taps or more (MAX_FILTER_SIZE * 16 / 16, without
 * SWS_ACCURATE_RND), sws_getContext builds a cascade instead: two contexts
 * through a yuv420p picture of sqrt(src * dst) pixels a side, which
 * sws_scale runs only for a call with the whole picture (scale_internal:
 * srcSliceY == 0 and srcSliceH == srcH). Given slices, the outer context,
 * whose filters were never built, scales them: undefined, a SIGSEGV in
 * every such case tried (issue 25). A downscale's filter has at most
 * 1 + ceil(f * src / dst) taps before swscale trims near-zero ones and
 * rounds up to a multiple of 4 (x86, horizontal) or 2 (vertical); f is 4
 * for bicubic, 2 for bilinear, 1 for area (swscale's size factors), and
 * point sampling has 1 tap. So f * src <= 240 * dst on both axes keeps every
 * filter at 248 taps or fewer, even aligned to 8 (AltiVec). Measured on
 * FFmpeg 5.1 (x86): the cascade starts at about 64x (bicubic), 127x
 * (bilinear) and 252x (area) across. Past the bound the whole picture is
 * converted first, as the ffmpeg CLI's scale filter does. */
static int banded_scale_ok(int cw, int ch, int ow, int oh, reel_filter filter)
{
    int64_t f = filter == REEL_FILTER_BICUBIC ? 4 : filter == REEL_FILTER_BILINEAR ? 2 : filter == REEL_FILTER_AREA;
    return f * cw <= 240 * (int64_t)ow && f * ch <= 240 * (int64_t)oh;
}

/* The general path: full-size RGB, then rotate (clockwise degrees), crop
 * (cx, cy, cw, ch in the rotated picture) and resize to ow x oh in RGB.
 * *res, *res_stride: the result, in the converter's scratch or a view of
 * it. Returns a status; *nomem set when scratch memory ran out. */
static int convert_in_rgb(reel_converter *c, const AVFrame *f, int rot, int cx, int cy, int cw, int ch, int ow, int oh,
                          reel_filter filter, const uint8_t **res, int *res_stride, int *nomem)
{
    const int dw = (rot == 90 || rot == 270) ? f->height : f->width;
    const int dh = (rot == 90 || rot == 270) ? f->width : f->height;
    if (!rot && (ow != cw || oh != ch) && band_is_exact(f) && banded_scale_ok(cw, ch, ow, oh, filter)) {
        *res_stride = rgb_stride(ow);
        uint8_t *s2 = reel__scratch_get(&c->s[2], (size_t)*res_stride * (oh + 1));
        if (!s2) {
            *nomem = 1;
            return REEL_E_NOMEM;
        }
        *res = s2;
        return convert_banded(c, f, cx, cy, cw, ch, ow, oh, filter, s2, *res_stride, nomem);
    }
    int fs = rgb_stride(f->width);
    uint8_t *s0 = reel__scratch_get(&c->s[0], (size_t)fs * (f->height + 1));
    if (!s0) {
        *nomem = 1;
        return REEL_E_NOMEM;
    }
    int r = yuv_to_rgb(c, f, 0, 0, f->width, f->height, f->width, f->height, SWS_BICUBIC, s0, fs);
    const uint8_t *img = s0;
    int istride = fs;
    if (r == REEL_OK && rot) {
        int rs = rgb_stride(dw);
        uint8_t *s1 = reel__scratch_get(&c->s[1], (size_t)rs * (dh + 1));
        if (!s1) {
            *nomem = 1;
            return REEL_E_NOMEM;
        }
        rotate_rgb(s0, fs, f->width, f->height, rot, s1, rs);
        img = s1;
        istride = rs;
    }
    const uint8_t *crop = img + (ptrdiff_t)cy * istride + cx * 3;
    if (r == REEL_OK && (ow != cw || oh != ch)) {
        *res_stride = rgb_stride(ow);
        uint8_t *s2 = reel__scratch_get(&c->s[2], (size_t)*res_stride * (oh + 1));
        struct SwsContext *sws =
            reel__get_sws(c, cw, ch, AV_PIX_FMT_RGB24, ow, oh, AV_PIX_FMT_RGB24, reel__sws_flags_of(filter), 0, 0);
        if (!s2 || !sws) {
            *nomem = 1;
            return REEL_E_NOMEM;
        }
        const uint8_t *sp[4] = { crop, NULL, NULL, NULL };
        int ss[4] = { istride, 0, 0, 0 };
        uint8_t *dp[4] = { s2, NULL, NULL, NULL };
        int ds[4] = { *res_stride, 0, 0, 0 };
        r = sws_scale(sws, sp, ss, 0, ch, dp, ds) == oh ? REEL_OK : REEL_E_INTERNAL;
        *res = s2;
    } else {
        *res = crop;
        *res_stride = istride;
    }
    return r;
}

int reel_converter_run(reel_converter *c, const reel_frame *frame, const reel_transform *tin, void *dst,
                       size_t dst_size, reel_error *err)
{
    reel_transform def;
    const reel_transform *t = tin;
    if (!t) {
        reel_transform_default_settings(&def);
        t = &def;
    }
    if (!c || !frame || !dst) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_converter_run: NULL argument");
    const AVFrame *f = frame->av;
    int rot = t->pixels.apply_rotation ? frame->rotation : 0;
    int dw = (rot == 90 || rot == 270) ? f->height : f->width;
    int dh = (rot == 90 || rot == 270) ? f->width : f->height;
    /* a window of a larger picture (maybe scaled by 1/d): the crop, in the
     * picture's coordinates, mapped into it, must lie inside it */
    int wx = 0, wy = 0, wcw = 0, wch = 0;
    if (frame->full_w) {
        int d = frame->scale > 1 ? frame->scale : 1;
        if (!rot && t->crop_w) {
            wx = (int)lrint((double)t->crop_x / d);
            wy = (int)lrint((double)t->crop_y / d);
            wcw = (int)lrint((double)(t->crop_x + t->crop_w) / d) - wx;
            wch = (int)lrint((double)(t->crop_y + t->crop_h) / d) - wy;
            if (wcw < 1) wcw = 1;
            if (wch < 1) wch = 1;
        }
        if (rot || !t->crop_w || wx < frame->win_x || wy < frame->win_y || wx + wcw > frame->win_x + f->width ||
            wy + wch > frame->win_y + f->height)
            return reel__error_set(
                err, REEL_E_INVALID_ARG, "crop %d,%d,%dx%d is not inside the decoded window %d,%d,%dx%d (scale 1/%d)",
                t->crop_x, t->crop_y, t->crop_w, t->crop_h, frame->win_x, frame->win_y, f->width, f->height, d);
        dw = frame->full_w;
        dh = frame->full_h;
    }
    int ow, oh;
    size_t bytes;
    int r = reel_transform_get_output_size(t, dw, dh, &ow, &oh, &bytes, err);
    if (r != REEL_OK) return r;
    if (!(t->stride_c || t->stride_y || t->stride_x) && dst_size < bytes)
        return reel__error_set(err, REEL_E_BUFFER_TOO_SMALL,
                               "output buffer of %zu bytes is smaller than the %zu-byte frame", dst_size, bytes);
    int cx = 0, cy = 0, cw = dw, ch = dh;
    if (frame->full_w) {
        cx = wx - frame->win_x;
        cy = wy - frame->win_y;
        cw = wcw;
        ch = wch;
    } else if (t->crop_w) {
        cx = t->crop_x;
        cy = t->crop_y;
        cw = t->crop_w;
        ch = t->crop_h;
    }
    if (reel__convert_is_deep(f->format, t))
        return reel__convert_deep(c, frame, t, rot, cx, cy, cw, ch, ow, oh, dst, err);
    int resize = (ow != cw || oh != ch);
    const uint8_t *res;
    int res_stride;

    if (f->format == AV_PIX_FMT_RGB24 && rot == 0 && !resize) {
        /* an RGB picture already (a packed store's frame): the crop is a
         * window into it, and emit() writes it straight to the output */
        res = f->data[0] + (ptrdiff_t)cy * f->linesize[0] + (ptrdiff_t)cx * 3;
        res_stride = f->linesize[0];
        r = REEL_OK;
    } else if (rot == 0 && resize && t->pixels.convert_path == REEL_CONVERT_PATH_FUSED) {
        /* crop and resize inside the YUV->RGB conversion: full-resolution
         * RGB is never made */
        res_stride = rgb_stride(ow);
        uint8_t *s0 = reel__scratch_get(&c->s[0], (size_t)res_stride * (oh + 1));
        if (!s0) return reel__error_set(err, REEL_E_NOMEM, "converter: out of memory");
        r = yuv_to_rgb(c, f, cx, cy, cw, ch, ow, oh, reel__sws_flags_of(t->pixels.filter), s0, res_stride);
        res = s0;
    } else if (rot == 0 && !resize) {
        /* exact conversion of only the rows that hold the crop */
        int y0 = 0, y1 = f->height;
        if (band_is_exact(f)) {
            y0 = cy & ~1;
            y1 = (cy + ch + 1) & ~1;
            if (y1 > f->height) y1 = f->height;
        }
        res_stride = rgb_stride(f->width);
        uint8_t *s0 = reel__scratch_get(&c->s[0], (size_t)res_stride * (y1 - y0 + 1));
        if (!s0) return reel__error_set(err, REEL_E_NOMEM, "converter: out of memory");
        r = yuv_to_rgb(c, f, 0, y0, f->width, y1 - y0, f->width, y1 - y0, SWS_BICUBIC, s0, res_stride);
        res = s0 + (ptrdiff_t)(cy - y0) * res_stride + cx * 3;
    } else {
        int nomem = 0;
        r = convert_in_rgb(c, f, rot, cx, cy, cw, ch, ow, oh, t->pixels.filter, &res, &res_stride, &nomem);
        if (nomem) return reel__error_set(err, REEL_E_NOMEM, "converter: out of memory");
    }
    if (r != REEL_OK) {
        const char *pf = av_get_pix_fmt_name(f->format);
        return reel__error_set(err, r, "cannot convert %s %dx%d to RGB", pf ? pf : "?", f->width, f->height);
    }
    emit(c, res, res_stride, ow, oh, t, dst);
    return REEL_OK;
}
