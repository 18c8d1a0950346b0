/* size_policy.c: per-video output sizes: fixed, or qwen-vl-utils 0.0.14's
 * pixel budget (smart_resize), with the same double operations in the same
 * order as the reference so that every rounding agrees. */
#include "reel/convert.h"
#include "core/error.h"

#include <math.h>
#include <string.h>

void reel_size_policy_default_settings(reel_size_policy *p)
{
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->kind = REEL_SIZE_PIXEL_BUDGET;
    p->factor = 14 * REEL_QWEN_SPATIAL_MERGE_SIZE; /* qwen's patch 14 */
}

int reel_size_smart_resize(int width, int height, int factor, double min_pixels, double max_pixels, int *out_w,
                           int *out_h, reel_error *err)
{
    if (!out_h || !out_w) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_size_smart_resize: NULL argument");
    if (height < 1 || width < 1 || factor < 1 || factor > 65536)
        return reel__error_set(err, REEL_E_INVALID_ARG, "smart_resize: invalid size %dx%d or factor %d", width, height,
                               factor);
    if (!(max_pixels >= min_pixels) || !isfinite(max_pixels) || !(min_pixels >= 0))
        return reel__error_set(err, REEL_E_INVALID_ARG, "smart_resize: max_pixels %g must be >= min_pixels %g",
                               max_pixels, min_pixels);
    const double h = height, w = width, f = factor;
    double ratio = (h > w ? h : w) / (h > w ? w : h);
    if (ratio > 200)
        return reel__error_set(err, REEL_E_INVALID_ARG, "smart_resize: aspect ratio %g of %dx%d is over 200", ratio,
                               width, height);
    /* round(x / f) * f with Python's round (half to even: nearbyint) */
    double hb = nearbyint(h / f) * f, wb = nearbyint(w / f) * f;
    if (hb < f) hb = f;
    if (wb < f) wb = f;
    if (hb * wb > max_pixels) {
        double beta = sqrt((h * w) / max_pixels);
        hb = floor(h / beta / f) * f;
        wb = floor(w / beta / f) * f;
    } else if (hb * wb < min_pixels) {
        double beta = sqrt(min_pixels / (h * w));
        hb = ceil(h * beta / f) * f;
        wb = ceil(w * beta / f) * f;
    }
    if (hb < 1 || wb < 1 || hb > 1 << 20 || wb > 1 << 20)
        return reel__error_set(err, REEL_E_INVALID_ARG, "smart_resize: %dx%d within [%g, %g] pixels gives %gx%g", width,
                               height, min_pixels, max_pixels, wb, hb);
    *out_h = (int)hb;
    *out_w = (int)wb;
    return REEL_OK;
}

int reel_size_policy_apply(const reel_size_policy *p, int src_w, int src_h, int64_t num_frames, int frame_factor,
                           int *out_w, int *out_h, reel_error *err)
{
    if (!p || !out_w || !out_h)
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_size_policy_apply: NULL argument");
    if (p->kind == REEL_SIZE_FIXED) {
        if (p->width < 1 || p->height < 1)
            return reel__error_set(err, REEL_E_INVALID_ARG, "size policy: fixed size %dx%d is not positive", p->width,
                                   p->height);
        *out_w = p->width;
        *out_h = p->height;
        return REEL_OK;
    }
    if (p->kind != REEL_SIZE_PIXEL_BUDGET)
        return reel__error_set(err, REEL_E_INVALID_ARG, "size policy: unknown kind %d", (int)p->kind);
    if (p->factor < 1 || frame_factor < 1 || num_frames < 1)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "size policy: factor %d, frame_factor %d, %lld frames out of range", p->factor,
                               frame_factor, (long long)num_frames);
    const char *const px_names[3] = { "min_pixels", "max_pixels", "total_pixels" };
    const double px[3] = { p->min_pixels, p->max_pixels, p->total_pixels };
    for (int i = 0; i < 3; i++)
        if (!(px[i] >= 0) || !isfinite(px[i]))
            return reel__error_set(err, REEL_E_INVALID_ARG,
                                   "size policy: %s %g must be >= 0 and finite (0: the default)", px_names[i], px[i]);
    if (p->width < 0 || p->height < 0) /* 0: not given; a negative one is no size */
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "size policy: resized_width %d, resized_height %d must be >= 0 (0: from the budget)",
                               p->width, p->height);
    if ((p->width > 0) != (p->height > 0)) /* qwen would drop one alone: say so instead */
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "size policy: resized_width %d, resized_height %d: give both or neither (0: from the "
                               "budget)",
                               p->width, p->height);
    const double f2 = (double)p->factor * p->factor;
    if (p->width > 0 && p->height > 0) /* qwen: resized sizes use the image bounds */
        return reel_size_smart_resize(p->width, p->height, p->factor, REEL_QWEN_IMAGE_MIN_TOKENS * f2,
                                      REEL_QWEN_IMAGE_MAX_TOKENS * f2, out_w, out_h, err);
    double min_px = p->min_pixels > 0 ? p->min_pixels : REEL_QWEN_VIDEO_MIN_TOKENS * f2;
    double total = p->total_pixels > 0 ? p->total_pixels
                                       : (double)((int64_t)REEL_QWEN_MODEL_SEQ_LEN * p->factor * p->factor) *
                                             REEL_QWEN_TOTAL_PIXELS_SHARE;
    double max_px = total / (double)num_frames * frame_factor;
    if (REEL_QWEN_VIDEO_MAX_TOKENS * f2 < max_px) max_px = REEL_QWEN_VIDEO_MAX_TOKENS * f2;
    double floor_px = (double)(int64_t)(min_px * 1.05);
    if (max_px < floor_px) max_px = floor_px;
    if (p->max_pixels > 0 && p->max_pixels < max_px) max_px = p->max_pixels;
    return reel_size_smart_resize(src_w, src_h, p->factor, min_px, max_px, out_w, out_h, err);
}
