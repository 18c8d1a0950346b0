/* sws.c: the converter's swscale contexts (a small cache, each set up as
 * the ffmpeg CLI's scale filter sets its own) and scratch memory, shared by
 * the 8-bit path (convert.c) and the gray and 16-bit one (deep.c). */
#include "convert/convert_internal.h"
#include "convert/pixel.h"

#include <libavutil/cpu.h>

#include <libavutil/mem.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

uint8_t *reel__scratch_get(reel__scratch *s, size_t size)
{
    if (s->size < size) {
        av_free(s->p);
        s->p = av_malloc(size);
        s->size = s->p ? size : 0;
    }
    return s->p;
}

int reel__sws_flags_of(int filter)
{
    switch (filter) {
    case REEL_FILTER_AREA: return SWS_AREA;
    case REEL_FILTER_BICUBIC: return SWS_BICUBIC;
    case REEL_FILTER_NEAREST: return SWS_POINT;
    default: return SWS_BILINEAR;
    }
}

/* The inverse matrix swscale uses for an AVColorSpace (unknown ones as
 * BT.601), shared with the GPU's plan (pixel.h). */
const int *reel__convert_coefficients(int cs)
{
    if (cs < 1 || cs > 10 || cs == 8) cs = AVCOL_SPC_BT470BG;
    return sws_getCoefficients(cs);
}

/* One plane of samples, no palette: gray, gray10le, ... */
static int is_gray(int fmt)
{
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(fmt);
    return d && d->nb_components == 1 && !(d->flags & (AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BITSTREAM));
}

int reel__convert_full_range(int range, int pix_fmt)
{
    if (range != AVCOL_RANGE_UNSPECIFIED) return range == AVCOL_RANGE_JPEG;
    return pix_fmt == AV_PIX_FMT_YUVJ420P || pix_fmt == AV_PIX_FMT_YUVJ422P || pix_fmt == AV_PIX_FMT_YUVJ444P ||
           pix_fmt == AV_PIX_FMT_YUVJ440P || pix_fmt == AV_PIX_FMT_YUVJ411P || is_gray(pix_fmt);
}

int reel__convert_unscaled_simd(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return !!(av_get_cpu_flags() & AV_CPU_FLAG_SSSE3);
#else
    return 0;
#endif
}

int reel__convert_vfilter_mmx(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return !!(av_get_cpu_flags() & AV_CPU_FLAG_MMXEXT);
#else
    return 0;
#endif
}

void reel__convert_strides(const reel_transform *t, int w, int h, int channels, int64_t *sx, int64_t *sy, int64_t *sc)
{
    if (t->stride_c || t->stride_y || t->stride_x) {
        *sx = t->stride_x;
        *sy = t->stride_y;
        *sc = t->stride_c;
    } else if (t->layout == REEL_LAYOUT_CHW || channels == 1) {
        *sx = 1;
        *sy = w;
        *sc = (int64_t)w * h;
    } else {
        *sx = channels;
        *sy = (int64_t)w * channels;
        *sc = 1;
    }
}

/* Colour matrix and range exactly as FFmpeg's scale filter picks them
 * (in_color_matrix=auto: the frame's matrix; range: the frame's range), so
 * output matches the ffmpeg CLI bit for bit. keep_range (gray to gray): the
 * output's range is the input's, so a gray picture keeps its codes, as
 * `scale=...:in_range=tv:out_range=tv` (the CLI's default would stretch a
 * limited-range gray picture that it resizes, and not one it leaves alone). */
static void set_colors(struct SwsContext *sws, int cs, int range, int keep_range)
{
    int *inv, *tab, src_full, dst_full, bri, con, sat;
    if (sws_getColorspaceDetails(sws, &inv, &src_full, &tab, &dst_full, &bri, &con, &sat) < 0) return;
    const int *coef = reel__convert_coefficients(cs);
    if (range != AVCOL_RANGE_UNSPECIFIED) src_full = range == AVCOL_RANGE_JPEG;
    sws_setColorspaceDetails(sws, coef, src_full, coef, keep_range ? src_full : dst_full, bri, con, sat);
}

struct SwsContext *reel__get_sws(reel_converter *c, int sw, int sh, int sfmt, int dw, int dh, int dfmt, int flags,
                                 int cs, int range)
{
    sws_entry *lru = &c->cache[0];
    c->tick++;
    for (int i = 0; i < SWS_CACHE; i++) {
        sws_entry *e = &c->cache[i];
        if (e->sws && e->sw == sw && e->sh == sh && e->sfmt == sfmt && e->dw == dw && e->dh == dh && e->dfmt == dfmt &&
            e->flags == flags && e->cs == cs && e->range == range) {
            e->used = c->tick;
            return e->sws;
        }
        if (e->used < lru->used) lru = e;
    }
    sws_freeContext(lru->sws);
    memset(lru, 0, sizeof *lru);
    lru->sws = sws_getContext(sw, sh, sfmt, dw, dh, dfmt, flags, NULL, NULL, NULL);
    if (!lru->sws) return NULL;
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(sfmt);
    if (d && !(d->flags & AV_PIX_FMT_FLAG_RGB)) set_colors(lru->sws, cs, range, is_gray(sfmt) && is_gray(dfmt));
    lru->sw = sw;
    lru->sh = sh;
    lru->sfmt = sfmt;
    lru->dw = dw;
    lru->dh = dh;
    lru->dfmt = dfmt;
    lru->flags = flags;
    lru->cs = cs;
    lru->range = range;
    lru->used = c->tick;
    return lru->sws;
}

/* Pointers to pixel (x, y) of every plane of a YUV frame (x, y on luma). */
void reel__plane_ptrs(const AVFrame *f, int x, int y, const uint8_t *src[4])
{
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f->format);
    for (int p = 0; p < 4; p++) {
        if (!f->data[p]) {
            src[p] = NULL;
            continue;
        }
        int chroma = (p == 1 || p == 2);
        int px = chroma ? (x >> d->log2_chroma_w) : x;
        int py = chroma ? (y >> d->log2_chroma_h) : y;
        int step = 0;
        for (int i = 0; i < d->nb_components; i++)
            if (d->comp[i].plane == p) {
                step = d->comp[i].step;
                break;
            }
        src[p] = f->data[p] + (ptrdiff_t)py * f->linesize[p] + (ptrdiff_t)px * step;
    }
}
