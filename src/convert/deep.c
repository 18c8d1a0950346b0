/* deep.c: gray and 16-bit output. swscale makes a gray picture at the
 * source's depth (or 8 bits) or an RGB48 one, fused with crop and resize
 * where convert.c fuses them; one pass then writes it in the output dtype,
 * layout and strides by the per-pixel rules of pixel.h. */
#include "convert/convert_internal.h"
#include "convert/pixel.h"
#include "core/error.h"

#include <string.h>

#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

/* The picture swscale makes for `t` from a frame of pixel format `fmt`:
 * its format, channels, bytes per sample and largest code. */
typedef struct inter {
    int fmt, nc, bps;
    uint32_t max_code;
} inter;

static int source_depth(int fmt)
{
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(fmt);
    return d && d->nb_components ? d->comp[0].depth : 8;
}

static inter inter_of(int fmt, const reel_transform *t)
{
    inter i = { AV_PIX_FMT_RGB48, 3, 2, 65535u };
    if (t->pixels.color != REEL_COLOR_GRAY) return i;
    i.nc = 1;
    const int depth = t->pixels.dtype == REEL_DTYPE_UINT8 ? 8 : source_depth(fmt);
    switch (depth) {
    case 9: i.fmt = AV_PIX_FMT_GRAY9; break;
    case 10: i.fmt = AV_PIX_FMT_GRAY10; break;
    case 12: i.fmt = AV_PIX_FMT_GRAY12; break;
    case 14: i.fmt = AV_PIX_FMT_GRAY14; break;
    default: i.fmt = depth <= 8 ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_GRAY16; break;
    }
    i.bps = i.fmt == AV_PIX_FMT_GRAY8 ? 1 : 2;
    i.max_code = reel__px_max_code(depth <= 8 ? 8 : i.fmt == AV_PIX_FMT_GRAY16 ? 16 : depth);
    return i;
}

int reel__convert_is_deep(int fmt, const reel_transform *t)
{
    (void)fmt;
    return t->pixels.color == REEL_COLOR_GRAY || t->pixels.dtype == REEL_DTYPE_UINT16;
}

/* Row stride of an intermediate picture of w pixels: room for swscale's
 * SIMD writes past the width, as convert.c's rgb_stride. */
static int inter_stride(int w, int pixel_bytes)
{
    return (w * pixel_bytes + 48 + 63) & ~63;
}

/* swscale: the src region (x, y, w, h; on the frame's luma) to ow x oh of
 * i->fmt at dst. */
static int scale_into(reel_converter *c, const AVFrame *f, int x, int y, int w, int h, int ow, int oh, int flags,
                      const inter *i, uint8_t *dst, int dst_stride)
{
    struct SwsContext *sws = reel__get_sws(c, w, h, f->format, ow, oh, i->fmt, flags, f->colorspace, f->color_range);
    if (!sws) return REEL_E_UNSUPPORTED_CODEC;
    const uint8_t *src[4];
    reel__plane_ptrs(f, x, y, src);
    uint8_t *d[4] = { dst, NULL, NULL, NULL };
    int ds[4] = { dst_stride, 0, 0, 0 };
    return sws_scale(sws, src, f->linesize, 0, h, d, ds) == oh ? REEL_OK : REEL_E_INTERNAL;
}

/* 1 where FFmpeg 5.1's unscaled 4:2:0 / 4:2:2 -> RGB48 table converter
 * (yuv2rgb_c_48: 8-bit source, even height, whole frame) would leave the last
 * column of an odd-width picture unwritten (the ffmpeg CLI's rgb48le has
 * zeros there): the picture is then converted one column wider, which the
 * frame's padding and the chroma plane's (w + 1) / 2 samples cover, so the
 * last pixel gets the value the converter gives every even pixel, from its
 * own chroma sample. 0 otherwise. */
static int unwritten_column(const AVFrame *f, const inter *i)
{
    const int fmt = f->format;
    const int table = fmt == AV_PIX_FMT_YUV420P || fmt == AV_PIX_FMT_YUVJ420P || fmt == AV_PIX_FMT_YUV422P ||
                      fmt == AV_PIX_FMT_YUVJ422P;
    return table && i->fmt == AV_PIX_FMT_RGB48 && (f->width & 1) && !(f->height & 1) && f->linesize[0] > f->width;
}

/* A picture of pixels of `pb` bytes rotated clockwise by rot degrees. */
static void rotate_pixels(const uint8_t *src, int sstride, int w, int h, int rot, int pb, uint8_t *dst, int dstride)
{
    const int ow = rot == 180 ? w : h, oh = rot == 180 ? h : w;
    for (int r = 0; r < oh; r++) {
        uint8_t *o = dst + (ptrdiff_t)r * dstride;
        for (int col = 0; col < ow; col++) {
            int sr = rot == 90 ? h - 1 - col : rot == 180 ? h - 1 - r : col;
            int sc = rot == 90 ? r : rot == 180 ? w - 1 - col : w - 1 - r;
            memcpy(o + (ptrdiff_t)col * pb, src + (ptrdiff_t)sr * sstride + (ptrdiff_t)sc * pb, (size_t)pb);
        }
    }
}

/* The crop at ow x oh as an intermediate picture: *res, *res_stride (in the
 * converter's scratch). Fused (one swscale call from the source's crop)
 * when there is no rotation and either no resize or the FUSED path, as
 * convert.c; else the whole picture first, rotated, then cropped and
 * resized within the intermediate format (the AFTER_RGB path). */
static int make_inter(reel_converter *c, const AVFrame *f, const reel_transform *t, const inter *i, int rot, int cx,
                      int cy, int cw, int ch, int ow, int oh, const uint8_t **res, int *res_stride)
{
    const int pb = i->nc * i->bps;
    const int resize = ow != cw || oh != ch;
    if (!rot && resize && t->pixels.convert_path == REEL_CONVERT_PATH_FUSED) {
        *res_stride = inter_stride(ow, pb);
        uint8_t *s0 = reel__scratch_get(&c->s[0], (size_t)*res_stride * (size_t)(oh + 1));
        if (!s0) return REEL_E_NOMEM;
        *res = s0;
        return scale_into(c, f, cx, cy, cw, ch, ow, oh, reel__sws_flags_of(t->pixels.filter), i, s0, *res_stride);
    }
    const int fs = inter_stride(f->width, pb);
    uint8_t *s0 = reel__scratch_get(&c->s[0], (size_t)fs * (size_t)(f->height + 1));
    if (!s0) return REEL_E_NOMEM;
    const int sw = f->width + unwritten_column(f, i);
    int r = scale_into(c, f, 0, 0, sw, f->height, sw, f->height, SWS_BICUBIC, i, s0, fs);
    if (r != REEL_OK) return r;
    const uint8_t *img = s0;
    int istride = fs;
    if (rot) {
        const int dw = rot == 180 ? f->width : f->height, dh = rot == 180 ? f->height : f->width;
        const int rs = inter_stride(dw, pb);
        uint8_t *s1 = reel__scratch_get(&c->s[1], (size_t)rs * (size_t)(dh + 1));
        if (!s1) return REEL_E_NOMEM;
        rotate_pixels(s0, fs, f->width, f->height, rot, pb, s1, rs);
        img = s1;
        istride = rs;
    }
    const uint8_t *crop = img + (ptrdiff_t)cy * istride + (ptrdiff_t)cx * pb;
    if (!resize) {
        *res = crop;
        *res_stride = istride;
        return REEL_OK;
    }
    *res_stride = inter_stride(ow, pb);
    uint8_t *s2 = reel__scratch_get(&c->s[2], (size_t)*res_stride * (size_t)(oh + 1));
    struct SwsContext *sws =
        reel__get_sws(c, cw, ch, i->fmt, ow, oh, i->fmt, reel__sws_flags_of(t->pixels.filter), 0, 0);
    if (!s2 || !sws) return REEL_E_NOMEM;
    const uint8_t *sp[4] = { crop, NULL, NULL, NULL };
    int ss[4] = { istride, 0, 0, 0 };
    uint8_t *dp[4] = { s2, NULL, NULL, NULL };
    int ds[4] = { *res_stride, 0, 0, 0 };
    *res = s2;
    return sws_scale(sws, sp, ss, 0, ch, dp, ds) == oh ? REEL_OK : REEL_E_INTERNAL;
}

/* The one pass from the intermediate picture into the caller's slot: flip,
 * dtype, normalisation (pixel.h) and layout together. */
static void emit_deep(const uint8_t *src, int sstride, int w, int h, const inter *i, const reel_transform *t, void *dst)
{
    int64_t sx, sy, sc;
    reel__convert_strides(t, w, h, i->nc, &sx, &sy, &sc);
    const reel_dtype dt = t->pixels.dtype;
    const float scale = reel__px_scale(t->pixels.divisor, i->max_code);
    for (int ch = 0; ch < i->nc; ch++) {
        const float mean = t->pixels.mean[ch], sd = t->pixels.std[ch] != 0.0f ? t->pixels.std[ch] : 1.0f;
        for (int y = 0; y < h; y++) {
            const uint8_t *s = src + (ptrdiff_t)y * sstride;
            const int64_t o0 = (int64_t)y * sy + (int64_t)ch * sc;
            for (int x = 0; x < w; x++) {
                const int xs = (t->flip_horizontal ? w - 1 - x : x) * i->nc + ch;
                uint32_t v;
                if (i->bps == 1)
                    v = s[xs];
                else {
                    uint16_t u;
                    memcpy(&u, s + 2 * xs, 2);
                    v = u;
                }
                const int64_t o = o0 + (int64_t)x * sx;
                switch (dt) {
                case REEL_DTYPE_UINT8: ((uint8_t *)dst)[o] = (uint8_t)v; break;
                case REEL_DTYPE_UINT16: ((uint16_t *)dst)[o] = (uint16_t)v; break;
                case REEL_DTYPE_FLOAT32: ((float *)dst)[o] = reel__px_normalise((int)v, scale, mean, sd); break;
                case REEL_DTYPE_FLOAT16:
                    ((uint16_t *)dst)[o] = reel__f32_to_f16(reel__px_normalise((int)v, scale, mean, sd));
                    break;
                default: ((uint16_t *)dst)[o] = reel__f32_to_bf16(reel__px_normalise((int)v, scale, mean, sd)); break;
                }
            }
        }
    }
}

int reel__convert_deep(reel_converter *c, const reel_frame *frame, const reel_transform *t, int rot, int cx, int cy,
                       int cw, int ch, int ow, int oh, void *dst, reel_error *err)
{
    const AVFrame *f = frame->av;
    const inter i = inter_of(f->format, t);
    const uint8_t *res = NULL;
    int res_stride = 0;
    int r = make_inter(c, f, t, &i, rot, cx, cy, cw, ch, ow, oh, &res, &res_stride);
    if (r == REEL_E_NOMEM) return reel__error_set(err, r, "converter: out of memory");
    if (r != REEL_OK) {
        const char *pf = av_get_pix_fmt_name(f->format), *to = av_get_pix_fmt_name(i.fmt);
        return reel__error_set(err, r, "cannot convert %s %dx%d to %s", pf ? pf : "?", f->width, f->height,
                               to ? to : "?");
    }
    emit_deep(res, res_stride, ow, oh, &i, t, dst);
    return REEL_OK;
}
