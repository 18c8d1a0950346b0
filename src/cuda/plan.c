/* plan.c: a frame's GPU conversion planned on the host: which of the CPU
 * converter's paths it reproduces (RGB, gray, rgb48) or refuses by name, the
 * colour coefficients, the dither, and the resampling filters built with
 * swscale's arithmetic (kernels, trimming, border folding, normalisation). */
#include "cuda/plan.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

#define ONE_H    (1 << 14) /* horizontal weights sum to this */
#define ONE_V    (1 << 12) /* vertical weights sum to this */
#define MAX_TAPS 256

void reel__cuda_taps_reset(reel__cuda_taps *t)
{
    t->n_start = t->n_coef = 0;
}

void reel__cuda_taps_free(reel__cuda_taps *t)
{
    free(t->start);
    free(t->coef);
    memset(t, 0, sizeof *t);
}

static int taps_grow(reel__cuda_taps *t, int n_start, int n_coef)
{
    if (t->n_start + n_start > t->cap_start) {
        int cap = (t->n_start + n_start) * 2;
        int32_t *p = realloc(t->start, (size_t)cap * sizeof *p);
        if (!p) return 0;
        t->start = p;
        t->cap_start = cap;
    }
    if (t->n_coef + n_coef > t->cap_coef) {
        int cap = (t->n_coef + n_coef) * 2;
        int16_t *p = realloc(t->coef, (size_t)cap * sizeof *p);
        if (!p) return 0;
        t->coef = p;
        t->cap_coef = cap;
    }
    return 1;
}

/* swscale's roundToInt16: 16.16 to a rounded, saturated int16. */
static int32_t round16(int64_t f)
{
    int64_t r = (f + (1 << 15)) >> 16;
    return r < -0x7fff ? -0x8000 : r > 0x7fff ? 0x7fff : (int32_t)r;
}

static void coef_init(const int inv[4], int full, reel__px_coef *k)
{
    int64_t crv = inv[0], cbu = inv[1], cgu = -inv[2], cgv = -inv[3], cy = 1 << 16, oy = 0;
    if (!full) {
        cy = cy * 255 / 219;
        oy = 16 << 16;
    } else {
        crv = crv * 224 / 255;
        cbu = cbu * 224 / 255;
        cgu = cgu * 224 / 255;
        cgv = cgv * 224 / 255;
    }
    k->fy = round16(cy * (1 << 13));
    k->fyo = round16(oy * (1 << 9));
    k->fvr = round16(crv * (1 << 13));
    k->fvg = round16(cgv * (1 << 13));
    k->fug = round16(cgu * (1 << 13));
    k->fub = round16(cbu * (1 << 13));
    k->sy = round16(cy * 8192);
    k->syo = round16(oy * 8);
    k->svr = round16(crv * 8192);
    k->svg = round16(cgv * 8192);
    k->sug = round16(cgu * 8192);
    k->sub = round16(cbu * 8192);
    k->cy = (int32_t)cy;
    k->oy = (int32_t)oy;
    k->yoffs = full ? 384 : 326;
    k->crv = (int32_t)((crv * (1 << 16) + 0x8000) / cy);
    k->cbu = (int32_t)((cbu * (1 << 16) + 0x8000) / cy);
    k->cgu = (int32_t)((cgu * (1 << 16) + 0x8000) / cy);
    k->cgv = (int32_t)((cgv * (1 << 16) + 0x8000) / cy);
}

enum { K_BILINEAR, K_AREA, K_BICUBIC, K_POINT };

static int kind_of(reel_filter f)
{
    switch (f) {
    case REEL_FILTER_AREA: return K_AREA;
    case REEL_FILTER_BICUBIC: return K_BICUBIC;
    case REEL_FILTER_NEAREST: return K_POINT;
    default: return K_BILINEAR;
    }
}

static int ilog2(int v)
{
    int n = 0;
    while (v > 1) {
        v >>= 1;
        n++;
    }
    return n;
}

/* The weight of a source sample at distance d (2^-30 source pixels, already
 * scaled to the output grid on a downscale) in the general branch. */
static int64_t kernel_weight(int kind, int64_t d, int64_t inc, int64_t fone)
{
    if (kind == K_BICUBIC) {
        const int64_t B = 0, C = (int64_t)(0.6 * (1 << 24)), one24 = (int64_t)1 << 24, one30 = (int64_t)1 << 30;
        if (d >= (int64_t)1 << 31) return 0;
        int64_t dd = (d * d) >> 30, ddd = (dd * d) >> 30, c;
        if (d < one30)
            c = (12 * one24 - 9 * B - 6 * C) * ddd + (-18 * one24 + 12 * B + 6 * C) * dd + (6 * one24 - 2 * B) * one30;
        else
            c = (-B - 6 * C) * ddd + (6 * B + 30 * C) * dd + (-12 * B - 48 * C) * d + (8 * B + 24 * C) * one30;
        return c / (((int64_t)1 << 54) / fone);
    }
    if (kind == K_AREA) {
        int64_t d2 = d - (1 << 29), c;
        if (d2 * inc < -((int64_t)1 << 45))
            c = (int64_t)1 << 46;
        else if (d2 * inc < ((int64_t)1 << 45))
            c = -d2 * inc + ((int64_t)1 << 45);
        else
            c = 0;
        return c * (fone >> 46);
    }
    int64_t c = ((int64_t)1 << 30) - d; /* bilinear */
    return (c < 0 ? 0 : c) * (fone >> 30);
}

/* The axis's filters before trimming, as swscale builds them: D rows of
 * *size weights (fone: their unit), row i starting at source sample pos[i]
 * (pos: D entries, filled here). NULL when out of memory. */
static int64_t *axis_filters(int S, int D, int kind, int64_t inc, int64_t fone, int32_t *pos, int *size_out)
{
    int size;
    int64_t *f;
    if (llabs(inc - 0x10000) < 10) { /* unscaled */
        size = 1;
        f = malloc((size_t)D * sizeof *f);
        for (int i = 0; f && i < D; i++) {
            f[i] = fone;
            pos[i] = i;
        }
    } else if (kind == K_POINT) {
        size = 1;
        f = malloc((size_t)D * sizeof *f);
        int64_t x = inc / 2 - 0x8000;
        for (int i = 0; f && i < D; i++, x += inc) {
            pos[i] = (int32_t)((x + (1 << 15)) >> 16);
            f[i] = fone;
        }
    } else if (inc <= 0x10000 && kind == K_AREA) { /* area upscale: linear */
        size = 2;
        f = malloc((size_t)D * 2 * sizeof *f);
        int64_t x = inc / 2 - 0x8000;
        for (int i = 0; f && i < D; i++, x += inc) {
            int64_t xx = x >> 16;
            pos[i] = (int32_t)xx;
            for (int j = 0; j < 2; j++, xx++) {
                int64_t c = fone - llabs(xx * 65536 - x) * (fone >> 16);
                f[i * 2 + j] = c < 0 ? 0 : c;
            }
        }
    } else {
        int factor = kind == K_BICUBIC ? 4 : kind == K_AREA ? 1 : 2;
        size = inc <= 0x10000 ? 1 + factor : 1 + (int)((factor * (int64_t)S + D - 1) / D);
        if (size > S - 2) size = S - 2;
        if (size < 1) size = 1;
        f = malloc((size_t)D * size * sizeof *f);
        int64_t x = inc - 0x10000; /* 2^-17 source pixels */
        for (int i = 0; f && i < D; i++, x += 2 * inc) {
            int64_t xx = (x - (int64_t)(size - 2) * 65536) / (1 << 17);
            pos[i] = (int32_t)xx;
            for (int j = 0; j < size; j++, xx++) {
                int64_t d = llabs(xx * (1 << 17) - x) * (1 << 13);
                if (inc > 0x10000) d = d * D / S;
                f[i * size + j] = kernel_weight(kind, d, inc, fone);
            }
        }
    }
    *size_out = size;
    return f;
}

/* Trims near-zero taps: shifts each filter left past them (moving pos[i]),
 * counts them on the right. Returns the most taps a row still needs. */
static int trim_filters(int64_t *f, int32_t *pos, int D, int size, int64_t fone)
{
    const double cut = 0.002 * (double)fone;
    int min_size = 0;
    for (int i = D - 1; i >= 0; i--) {
        int64_t *fi = f + (size_t)i * size;
        int keep = size;
        double acc = 0;
        for (int j = 0; j < size; j++) {
            acc += (double)llabs(fi[0]);
            if (acc > cut) break;
            if (i < D - 1 && pos[i] >= pos[i + 1]) break;
            memmove(fi, fi + 1, (size_t)(size - 1) * sizeof *fi);
            fi[size - 1] = 0;
            pos[i]++;
        }
        acc = 0;
        for (int j = size - 1; j > 0; j--) {
            acc += (double)llabs(fi[j]);
            if (acc > cut) break;
            keep--;
        }
        if (keep > min_size) min_size = keep;
    }
    return min_size;
}

/* Writes the D rows of n taps into the tables after t's current ends (room
 * made by the caller): the taps outside the S source samples folded into the
 * border ones, the weights normalised to sum to `one` with error diffusion.
 * 0 when out of memory. */
static int write_filters(reel__cuda_taps *t, const int64_t *f, const int32_t *pos, int S, int D, int size, int n,
                         int one)
{
    int64_t *g = calloc((size_t)n, sizeof *g);
    for (int i = 0; g && i < D; i++) {
        for (int j = 0; j < n; j++) g[j] = j < size ? f[(size_t)i * size + j] : 0;
        int p = pos[i];
        if (p < 0) { /* fold the taps left of the picture into its first sample */
            for (int j = 1; j < n; j++) {
                int left = j + p > 0 ? j + p : 0;
                g[left] += g[j];
                g[j] = 0;
            }
            p = 0;
        }
        if (p + n > S) { /* and those right of it into its last */
            int shift = p + n - S;
            for (int j = n - 2; j >= 0; j--) {
                int right = j + shift < n - 1 ? j + shift : n - 1;
                g[right] += g[j];
                g[j] = 0;
            }
            p = S - n;
        }
        int64_t sum = 0, error = 0;
        for (int j = 0; j < n; j++) sum += g[j];
        sum = (sum + one / 2) / one;
        for (int j = 0; j < n; j++) {
            int64_t v = g[j] + error;
            int64_t q = (v >= 0 ? v + sum / 2 : v - sum / 2) / sum;
            t->coef[t->n_coef + i * n + j] = (int16_t)q;
            error = v - q * sum;
        }
        t->start[t->n_start + i] = p;
    }
    if (!g) return 0;
    free(g);
    return 1;
}

/* Builds one axis, S source samples to D outputs (both centre-sited), into
 * the tables: `one` is the weights' sum, `align` the tap count's multiple
 * (x86 swscale: 4 horizontally, 2 vertically unless one tap suffices).
 * REEL_OK; REEL_E_NOMEM; REEL_E_CUDA where the filter would have MAX_TAPS
 * taps or more: swscale then scales through a cascade of two contexts and
 * an intermediate picture instead, which the GPU does not reproduce. */
static int build_axis(reel__cuda_taps *t, int S, int D, int kind, int one, int align, reel__px_axis *a)
{
    const int64_t inc = (((int64_t)S << 16) + (D >> 1)) / D;
    const int64_t fone = (int64_t)1 << (54 - (ilog2(S / D) < 8 ? ilog2(S / D) : 8));
    int size;
    int32_t *pos = malloc((size_t)D * sizeof *pos);
    if (!pos) return REEL_E_NOMEM;
    int64_t *f = axis_filters(S, D, kind, inc, fone, pos, &size);
    if (!f) {
        free(pos);
        return REEL_E_NOMEM;
    }
    int min_size = trim_filters(f, pos, D, size, fone);
    int n = min_size;
    if (!(align == 2 && min_size == 1)) n = (min_size + align - 1) / align * align;
    int r = n >= MAX_TAPS ? REEL_E_CUDA : taps_grow(t, D, D * n) ? REEL_OK : REEL_E_NOMEM;
    if (r != REEL_OK) {
        free(f);
        free(pos);
        return r;
    }
    a->taps = n;
    a->pos = t->n_start;
    a->coef = t->n_coef;
    int ok = write_filters(t, f, pos, S, D, size, n, one);
    free(f);
    free(pos);
    if (!ok) return REEL_E_NOMEM;
    t->n_start += D;
    t->n_coef += D * n;
    return REEL_OK;
}

/* The luma axes, and the chroma ones when c_sw > 0, built; a status with
 * its message. */
static int build_axes(reel__cuda_taps *t, int sw, int sh, int dw, int dh, int c_sw, int c_sh, int c_dw, int kind,
                      reel__px_frame *o, reel_error *err)
{
    int r = build_axis(t, sw, dw, kind, ONE_H, 4, &o->hy);
    if (r == REEL_OK) r = build_axis(t, sh, dh, kind, ONE_V, 2, &o->vy);
    if (r == REEL_OK && c_sw) r = build_axis(t, c_sw, c_dw, kind, ONE_H, 4, &o->hc);
    if (r == REEL_OK && c_sw) r = build_axis(t, c_sh, dh, kind, ONE_V, 2, &o->vc);
    if (r == REEL_E_CUDA)
        return reel__error_set(err, r,
                               "CUDA conversion: a downscale of %dx%d to %dx%d whose filter needs %d taps or more "
                               "(swscale cascades through an intermediate picture) is not done on the GPU yet",
                               sw, sh, dw, dh, MAX_TAPS);
    if (r != REEL_OK) return reel__error_set(err, r, "CUDA conversion: out of memory for the filters");
    return REEL_OK;
}

/* swscale's ordered dither for 8-bit output of a deeper source (its
 * ff_dither_8x8_128): row r & 7, column c & 7. */
static const uint8_t DITHER_8x8[8][8] = {
    { 36, 68, 60, 92, 34, 66, 58, 90 },     { 100, 4, 124, 28, 98, 2, 122, 26 },   { 52, 84, 44, 76, 50, 82, 42, 74 },
    { 116, 20, 108, 12, 114, 18, 106, 10 }, { 32, 64, 56, 88, 38, 70, 62, 94 },    { 96, 0, 120, 24, 102, 6, 126, 30 },
    { 48, 80, 40, 72, 54, 86, 46, 78 },     { 112, 16, 104, 8, 118, 22, 110, 14 },
};

/* The refusals: what the GPU does not do, by name (NULL: it does). */
static const char *unsupported(const reel__cuda_src *s, const reel_transform *t, int rot, int resize)
{
    if (rot && resize) return "a display rotation with a resize";
    /* without a resize both paths convert the whole picture unscaled; with
     * one, AFTER_RGB's RGB24 resize is done (pass 2), the deep path's
     * resize within its gray or rgb48 picture is not */
    if (t->pixels.convert_path != REEL_CONVERT_PATH_FUSED && resize &&
        (t->pixels.color == REEL_COLOR_GRAY || t->pixels.dtype == REEL_DTYPE_UINT16))
        return "convert_path AFTER_RGB with a resize of gray or uint16 output";
    if (s->format == REEL_CUDA_SRC_NV && s->bits != 8 && s->bits != 10 && s->bits != 12)
        return "this bit depth of a 4:2:0 picture (8, 10 and 12 are done)";
    if (s->format == REEL_CUDA_SRC_444 && s->bits != 8 && s->bits != 10 && s->bits != 12)
        return "this bit depth of a 4:4:4 picture (8, 10 and 12 are done)";
    if (s->format == REEL_CUDA_SRC_GRAY && s->bits != 8 && s->bits != 10 && s->bits != 12 && s->bits != 16)
        return "this bit depth of a gray picture (8, 10, 12 and 16 are done)";
    if (s->format != REEL_CUDA_SRC_NV && s->format != REEL_CUDA_SRC_GRAY && s->format != REEL_CUDA_SRC_444)
        return "this picture layout";
    if (t->pixels.color != REEL_COLOR_GRAY) {
        /* swscale's unscaled table converter (yuv2rgb_c_48) there: done
         * for even widths only */
        if (t->pixels.dtype == REEL_DTYPE_UINT16 && s->format == REEL_CUDA_SRC_NV && s->bits == 8 && !resize &&
            !(s->height & 1) && (s->width & 1))
            return "uint16 RGB of an unscaled 8-bit picture of odd width";
    }
    return NULL;
}

/* Pass 2 of AFTER_RGB with a resize: swscale's context for RGB24 cw x ch
 * -> RGB24 ow x oh (FFmpeg 5.1 utils.c sws_init_context): an RGB source is
 * not subsampled, so full chroma interpolation is forced (chroma at the
 * output width, yuv2rgb24_full_*); its chroma input is read from pixel
 * pairs (rgb24ToUV_half) where the output is at most half the width, else
 * per pixel; chroma down as luma; YUV as the default matrix (BT.601) in
 * limited range both ways (the range override for RGB formats), with the
 * hard-coded BT.601 input weights of fill_rgb2yuv_table. */
static int plan_rgb2(reel__cuda_taps *taps, const reel_transform *t, int cx, int cy, int cw, int ch, int ow, int oh,
                     reel__px_frame *o, reel_error *err)
{
    static const double W[9] = { 0.299, 0.587, 0.114, -0.169, -0.331, 0.500, 0.500, -0.419, -0.081 };
    static const int RANGE[9] = { 219, 219, 219, 224, 224, 224, 224, 224, 224 };
    for (int i = 0; i < 9; i++) { /* (int)(w * range / 255 * 2^15 + 0.5), the sign outside */
        const double a = W[i] < 0 ? -W[i] : W[i];
        const int v = (int)(a * RANGE[i] / 255 * (1 << 15) + 0.5);
        o->r2y[i] = W[i] < 0 ? -v : v;
    }
    coef_init(reel__convert_coefficients(5 /* AVCOL_SPC_BT470BG: swscale's SWS_CS_DEFAULT */), 0, &o->coef2);
    o->rgb2 = 1;
    o->x2 = cx;
    o->y2 = cy;
    o->chalf = ow <= cw >> 1;
    const int kind = kind_of(t->pixels.filter), csw = o->chalf ? (cw + 1) >> 1 : cw;
    int r = build_axis(taps, cw, ow, kind, ONE_H, 4, &o->h2y);
    if (r == REEL_OK) r = build_axis(taps, ch, oh, kind, ONE_V, 2, &o->v2y);
    if (r == REEL_OK) r = build_axis(taps, csw, ow, kind, ONE_H, 4, &o->h2c);
    if (r == REEL_E_CUDA)
        return reel__error_set(err, r,
                               "CUDA conversion: an RGB downscale of %dx%d to %dx%d whose filter needs %d taps or "
                               "more (swscale cascades through an intermediate picture) is not done on the GPU yet",
                               cw, ch, ow, oh, MAX_TAPS);
    if (r != REEL_OK) return reel__error_set(err, r, "CUDA conversion: out of memory for the filters");
    o->vmode2 = o->v2y.taps == 1 ? REEL_PX_V1 : o->v2y.taps == 2 ? REEL_PX_V2 : REEL_PX_VX;
    return REEL_OK;
}

/* The gray picture deep.c makes: its depth, range step, dither, and the
 * copy swscale runs instead of its scaler for an unscaled gray source made
 * 8-bit (its ranges agree; a YUV source's never do: gray is full range). */
static void plan_gray(const reel__cuda_src *s, const reel_transform *t, int resize, reel__px_frame *o)
{
    o->gray = 1;
    o->gdepth = t->pixels.dtype == REEL_DTYPE_UINT8 ? 8 : s->bits;
    if (s->format != REEL_CUDA_SRC_GRAY) /* 8 bits: the frame's range; deeper: the one swscale's init set */
        o->range = s->bits == 8 && s->full_range ? REEL_PX_RANGE_NONE : REEL_PX_RANGE_TO_FULL;
    if (o->gdepth == 8 && s->bits > 8)
        for (int r = 0; r < 8; r++)
            for (int c = 0; c < 8; c++) o->dith[r][c] = DITHER_8x8[r][c];
    else
        memset(o->dith, 64, sizeof o->dith);
    if (!resize && s->format == REEL_CUDA_SRC_GRAY && s->bits > 8 && o->gdepth == 8) {
        o->copy = s->full_range ? 2 : 1;
        const int sh = s->bits - 8; /* its table for a shift of 2 and 4: ours >> (7 - shift); of 8: ours */
        for (int r = 0; r < 8; r++)
            for (int c = 0; c < 8; c++)
                o->dith[r][c] = (uint8_t)(sh >= 7 ? DITHER_8x8[r][c] : DITHER_8x8[r][c] >> (7 - sh));
    }
    o->mmx = o->gdepth == 8 && reel__convert_vfilter_mmx();
}

int reel__cuda_plan_frame(reel__cuda_taps *taps, const reel__cuda_src *s, const reel_transform *tin, void *dst,
                          reel__px_frame *o, reel_error *err)
{
    reel_transform def;
    const reel_transform *t = tin;
    if (!t) {
        reel_transform_default_settings(&def);
        t = &def;
    }
    const int rot = t->pixels.apply_rotation ? s->rotation : 0;
    if (rot != 0 && rot != 90 && rot != 180 && rot != 270)
        return reel__error_set(err, REEL_E_CUDA, "CUDA conversion: a display rotation of %d degrees is not done", rot);
    const int pw = rot == 90 || rot == 270 ? s->height : s->width, ph = rot == 90 || rot == 270 ? s->width : s->height;
    int ow, oh;
    size_t bytes;
    int r = reel_transform_get_output_size(t, pw, ph, &ow, &oh, &bytes, err);
    if (r != REEL_OK) return r;
    int cx = 0, cy = 0, cw = pw, ch = ph;
    if (t->crop_w) {
        cx = t->crop_x;
        cy = t->crop_y;
        cw = t->crop_w;
        ch = t->crop_h;
    }
    const int resize = ow != cw || oh != ch;
    const char *no = unsupported(s, t, rot, resize);
    if (no) return reel__error_set(err, REEL_E_CUDA, "CUDA conversion: %s is not done on the GPU yet", no);
    /* AFTER_RGB with a resize: pass 1 is the whole picture unscaled (below,
     * as without a resize), pass 2 the RGB resize of its crop */
    const int rgb2 = resize && t->pixels.convert_path != REEL_CONVERT_PATH_FUSED;
    if (rgb2 && ow <= cw >> 1 && (cw & 1) && cx + cw == s->width)
        return reel__error_set(err, REEL_E_CUDA,
                               "CUDA conversion: convert_path AFTER_RGB downscaling an odd-width crop at the "
                               "picture's right edge (%d wide to %d) is not done on the GPU: swscale's chroma input "
                               "reads the pixel past the crop's last there",
                               cw, ow);
    memset(o, 0, sizeof *o);
    o->y = s->y;
    o->uv = s->uv;
    o->y_pitch = s->y_pitch;
    o->uv_pitch = s->uv_pitch;
    o->bits = s->bits;
    o->shift = s->format != REEL_CUDA_SRC_GRAY && s->bits > 8 ? 16 - s->bits : 0;
    if (s->format == REEL_CUDA_SRC_444) {
        o->v = s->v;
        o->v_pitch = s->v_pitch;
    }
    o->rot = rot;
    o->pw = s->width;
    o->ph = s->height;
    coef_init(reel__convert_coefficients(s->colorspace), s->full_range, &o->coef);
    int sw, sh, dw, dh, kind;
    const int scaled = resize && !rgb2; /* the YUV conversion resizes */
    if (scaled) {                       /* the fused path: the crop scaled inside the conversion */
        o->x0 = cx;
        o->y0 = cy;
        sw = cw;
        sh = ch;
        dw = ow;
        dh = oh;
        kind = kind_of(t->pixels.filter);
    } else { /* the whole picture converted unscaled, (rotated,) then the crop (or pass 2) */
        o->ox = rgb2 ? 0 : cx;
        o->oy = rgb2 ? 0 : cy;
        sw = dw = s->width;
        sh = dh = s->height;
        kind = K_BICUBIC;
    }
    int channels = 3;
    if (t->pixels.color == REEL_COLOR_GRAY) {
        channels = 1;
        plan_gray(s, t, resize, o);
        o->vrows = dh;
        if (!o->copy && (r = build_axes(taps, sw, sh, dw, dh, 0, 0, 0, kind, o, err)) != REEL_OK) return r;
    } else if (!scaled && s->bits == 8 && s->format == REEL_CUDA_SRC_GRAY && t->pixels.dtype != REEL_DTYPE_UINT16) {
        o->mode = REEL_PX_PAL; /* swscale's unscaled palette copy (uint16: its scaler) */
    } else if (!scaled && s->bits == 8 && !(s->height & 1) && s->format == REEL_CUDA_SRC_NV) {
        o->mode = REEL_PX_BLOCK; /* uint16: swscale's C tables, each byte twice */
        o->coef.simd = t->pixels.dtype != REEL_DTYPE_UINT16 && reel__convert_unscaled_simd();
    } else {
        /* swscale interpolates chroma fully for an odd width and for chroma
         * it does not subsample: 4:4:4, and gray (constant chroma) */
        const int c444 = s->format == REEL_CUDA_SRC_444 || s->format == REEL_CUDA_SRC_GRAY;
        o->mode = dw & 1 || c444 ? REEL_PX_FULL : REEL_PX_HALF;
        int csw = c444 ? sw : (sw + 1) >> 1, csh = c444 ? sh : (sh + 1) >> 1;
        int cdw = o->mode == REEL_PX_HALF ? (dw + 1) >> 1 : dw;
        if ((r = build_axes(taps, sw, sh, dw, dh, csw, csh, cdw, kind, o, err)) != REEL_OK) return r;
        int l = o->vy.taps, c = o->vc.taps;
        o->vmode = l == 1 && c <= 2 ? REEL_PX_V1 : l == 2 && c == 2 ? REEL_PX_V2 : REEL_PX_VX;
    }
    if (rgb2 && (r = plan_rgb2(taps, t, cx, cy, cw, ch, ow, oh, o, err)) != REEL_OK) return r;
    reel__convert_strides(t, ow, oh, channels, &o->sx, &o->sy, &o->sc);
    o->dst = dst;
    o->w = ow;
    o->h = oh;
    o->dtype = t->pixels.dtype;
    o->flip = t->flip_horizontal;
    /* gray: deep.c's divisor (the settings' over the largest code) */
    o->scale = o->gray                 ? reel__px_scale(t->pixels.divisor, reel__px_max_code(o->gdepth))
               : t->pixels.divisor > 0 ? t->pixels.divisor
                                       : 255.0f;
    for (int i = 0; i < 3; i++) {
        o->mean[i] = t->pixels.mean[i];
        o->sd[i] = t->pixels.std[i] != 0.0f ? t->pixels.std[i] : 1.0f;
    }
    return REEL_OK;
}
