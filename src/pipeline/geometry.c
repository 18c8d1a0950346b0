/* geometry.c: per-clip crop/resize/flip decisions (torchvision semantics)
 * mapped onto a single fused conversion, and the batch layouts. */
#include "pipeline/geometry.h"
#include "convert/dtype.h"
#include "core/error.h"

#include <math.h>

int reel__geometry_check(const reel_clip_transform *ct, int *out_w, int *out_h, reel_error *err)
{
    if (ct->resize < REEL_RESIZE_KEEP || ct->resize > REEL_RESIZE_EXACT)
        return reel__error_set(err, REEL_E_INVALID_ARG, "transform: unknown resize kind %d", ct->resize);
    if (ct->crop < REEL_CROP_NONE || ct->crop > REEL_CROP_RANDOM_RESIZED)
        return reel__error_set(err, REEL_E_INVALID_ARG, "transform: unknown crop kind %d", ct->crop);
    if (ct->flip < REEL_FLIP_NONE || ct->flip > REEL_FLIP_RANDOM)
        return reel__error_set(err, REEL_E_INVALID_ARG, "transform: unknown flip kind %d", ct->flip);
    if (ct->layout < REEL_BATCH_BTCHW || ct->layout > REEL_BATCH_BTHWC)
        return reel__error_set(err, REEL_E_INVALID_ARG, "transform: unknown layout %d", ct->layout);
    if (reel__dtype_size(ct->pixels.dtype) == 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "transform: unknown dtype %d", ct->pixels.dtype);
    if (reel__color_channels(ct->pixels.color) == 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "transform: unknown color %d", ct->pixels.color);
    if (ct->pixels.filter < REEL_FILTER_BILINEAR || ct->pixels.filter > REEL_FILTER_NEAREST)
        return reel__error_set(err, REEL_E_INVALID_ARG, "transform: unknown filter %d", ct->pixels.filter);
    if (ct->resize == REEL_RESIZE_SHORT_SIDE && (ct->short_side < 1 || ct->short_side > 65536))
        return reel__error_set(err, REEL_E_INVALID_ARG, "transform: short_side %d not in [1, 65536]", ct->short_side);
    if (ct->resize == REEL_RESIZE_EXACT &&
        (ct->resize_width < 1 || ct->resize_height < 1 || ct->resize_width > 65536 || ct->resize_height > 65536))
        return reel__error_set(err, REEL_E_INVALID_ARG, "transform: bad resize size %dx%d", ct->resize_width,
                               ct->resize_height);
    if (ct->flip == REEL_FLIP_RANDOM && !(ct->flip_probability >= 0 && ct->flip_probability <= 1))
        return reel__error_set(err, REEL_E_INVALID_ARG, "transform: flip_probability must be in [0, 1]");
    if (!(ct->pixels.divisor != 0) || !isfinite(ct->pixels.divisor))
        return reel__error_set(err, REEL_E_INVALID_ARG, "transform: divisor must be non-zero and finite");
    for (int c = 0; c < 3; c++)
        if (!(ct->pixels.std[c] != 0) || !isfinite(ct->pixels.std[c]) || !isfinite(ct->pixels.mean[c]))
            return reel__error_set(err, REEL_E_INVALID_ARG, "transform: std must be non-zero and finite");
    if (ct->crop == REEL_CROP_NONE) {
        if (ct->resize != REEL_RESIZE_EXACT)
            return reel__error_set(err, REEL_E_INVALID_ARG,
                                   "transform: the output size must be fixed: set a crop or an exact resize");
        *out_w = ct->resize_width;
        *out_h = ct->resize_height;
        return REEL_OK;
    }
    if (ct->crop_width < 1 || ct->crop_height < 1 || ct->crop_width > 65536 || ct->crop_height > 65536)
        return reel__error_set(err, REEL_E_INVALID_ARG, "transform: bad crop size %dx%d", ct->crop_width,
                               ct->crop_height);
    if (ct->crop == REEL_CROP_RANDOM_RESIZED) {
        if (!(ct->scale_min > 0 && ct->scale_min <= ct->scale_max && ct->scale_max <= 1))
            return reel__error_set(err, REEL_E_INVALID_ARG, "transform: need 0 < scale_min <= scale_max <= 1");
        if (!(ct->ratio_min > 0 && ct->ratio_min <= ct->ratio_max && isfinite(ct->ratio_max)))
            return reel__error_set(err, REEL_E_INVALID_ARG, "transform: need 0 < ratio_min <= ratio_max");
    } else {
        if (ct->resize == REEL_RESIZE_EXACT &&
            (ct->crop_width > ct->resize_width || ct->crop_height > ct->resize_height))
            return reel__error_set(err, REEL_E_INVALID_ARG, "transform: crop %dx%d larger than the resize %dx%d",
                                   ct->crop_width, ct->crop_height, ct->resize_width, ct->resize_height);
    }
    *out_w = ct->crop_width;
    *out_h = ct->crop_height;
    return REEL_OK;
}

/* Python's round(): half to even. */
static int64_t round_even(double v)
{
    double r = floor(v + 0.5);
    if (r - v == 0.5 && fmod(r, 2.0) != 0) r -= 1.0;
    return (int64_t)r;
}

/* Draw numbers inside a clip's block of 64. */
enum { D_X = 0, D_Y = 1, D_RRC = 2 /* 2 .. 2+4*10 */, D_FLIP = 63 };

static void random_resized(const reel_clip_transform *ct, int W, int H, const reel_rng_key *key, uint64_t base, int *x,
                           int *y, int *w, int *h)
{
    double area = (double)W * H;
    double lr0 = log(ct->ratio_min), lr1 = log(ct->ratio_max);
    for (int a = 0; a < 10; a++) {
        uint64_t d = base + D_RRC + 4 * (uint64_t)a;
        double target = area * (ct->scale_min + reel__rng_double(key, d) * (ct->scale_max - ct->scale_min));
        double ratio = exp(lr0 + reel__rng_double(key, d + 1) * (lr1 - lr0));
        int cw = (int)round_even(sqrt(target * ratio));
        int ch = (int)round_even(sqrt(target / ratio));
        if (cw > 0 && cw <= W && ch > 0 && ch <= H) {
            *y = (int)reel__rng_below(key, d + 2, (uint64_t)(H - ch + 1));
            *x = (int)reel__rng_below(key, d + 3, (uint64_t)(W - cw + 1));
            *w = cw;
            *h = ch;
            return;
        }
    }
    /* fallback: centre crop at the closest allowed ratio */
    double in_ratio = (double)W / H;
    int cw = W, ch = H;
    if (in_ratio < ct->ratio_min) {
        cw = W;
        ch = (int)round_even(cw / ct->ratio_min);
    } else if (in_ratio > ct->ratio_max) {
        ch = H;
        cw = (int)round_even(ch * ct->ratio_max);
    }
    if (cw < 1) cw = 1;
    if (ch < 1) ch = 1;
    if (cw > W) cw = W;
    if (ch > H) ch = H;
    *x = (W - cw) / 2;
    *y = (H - ch) / 2;
    *w = cw;
    *h = ch;
}

int reel__geometry_frame(const reel_clip_transform *ct, int W, int H, const reel_rng_key *key, int clip,
                         reel_transform *t, reel_error *err)
{
    if (W < 1 || H < 1) return reel__error_set(err, REEL_E_INVALID_ARG, "transform: empty frame %dx%d", W, H);
    reel_transform_default_settings(t);
    t->pixels = ct->pixels;
    const uint64_t base = (uint64_t)clip * 64;

    int sx, sy, sw, sh, ow, oh;
    if (ct->crop == REEL_CROP_RANDOM_RESIZED) {
        random_resized(ct, W, H, key, base, &sx, &sy, &sw, &sh);
        ow = ct->crop_width;
        oh = ct->crop_height;
    } else {
        /* intermediate (resized) size */
        double rw, rh;
        if (ct->resize == REEL_RESIZE_SHORT_SIDE) {
            if (W <= H) {
                rw = ct->short_side;
                rh = floor((double)ct->short_side * H / W);
            } else {
                rh = ct->short_side;
                rw = floor((double)ct->short_side * W / H);
            }
        } else if (ct->resize == REEL_RESIZE_EXACT) {
            rw = ct->resize_width;
            rh = ct->resize_height;
        } else {
            rw = W;
            rh = H;
        }
        if (rw < 1) rw = 1;
        if (rh < 1) rh = 1;
        if (ct->crop == REEL_CROP_NONE) {
            sx = sy = 0;
            sw = W;
            sh = H;
            ow = (int)rw;
            oh = (int)rh;
        } else {
            int cw = ct->crop_width, ch = ct->crop_height;
            /* a frame smaller than the crop is scaled up just enough */
            if (cw > rw || ch > rh) {
                double f = fmax(cw / rw, ch / rh);
                rw = ceil(rw * f);
                rh = ceil(rh * f);
            }
            int64_t cx, cy;
            if (ct->crop == REEL_CROP_CENTER) {
                cx = round_even((rw - cw) / 2.0);
                cy = round_even((rh - ch) / 2.0);
            } else {
                cx = (int64_t)reel__rng_below(key, base + D_X, (uint64_t)(rw - cw) + 1);
                cy = (int64_t)reel__rng_below(key, base + D_Y, (uint64_t)(rh - ch) + 1);
            }
            /* map [cx, cx+cw) of the resized frame back to the source */
            double fx = W / rw, fy = H / rh;
            /* (size first, so every frame of a size gets the same crop size) */
            int64_t w0 = llround(cw * fx), h0 = llround(ch * fy);
            if (w0 < 1) w0 = 1;
            if (h0 < 1) h0 = 1;
            if (w0 > W) w0 = W;
            if (h0 > H) h0 = H;
            int64_t x0 = llround((double)cx * fx), y0 = llround((double)cy * fy);
            if (x0 + w0 > W) x0 = W - w0;
            if (y0 + h0 > H) y0 = H - h0;
            if (x0 < 0) x0 = 0;
            if (y0 < 0) y0 = 0;
            sx = (int)x0;
            sy = (int)y0;
            sw = (int)w0;
            sh = (int)h0;
            ow = cw;
            oh = ch;
        }
    }
    if (!(sx == 0 && sy == 0 && sw == W && sh == H)) {
        t->crop_x = sx;
        t->crop_y = sy;
        t->crop_w = sw;
        t->crop_h = sh;
    }
    t->width = ow;
    t->height = oh;
    if (ct->flip == REEL_FLIP_ALWAYS)
        t->flip_horizontal = 1;
    else if (ct->flip == REEL_FLIP_RANDOM)
        t->flip_horizontal = reel__rng_double(key, base + D_FLIP) < ct->flip_probability;
    return REEL_OK;
}

void reel__layout_shape(int layout, int64_t rows, int T, int h, int w, int nc, int64_t shape[5], int64_t strides[5])
{
    const int64_t HW = (int64_t)h * w;
    shape[0] = rows;
    switch (layout) {
    case REEL_BATCH_BCTHW:
        shape[1] = nc;
        shape[2] = T;
        shape[3] = h;
        shape[4] = w;
        strides[4] = 1;
        strides[3] = w;
        strides[2] = HW;
        strides[1] = T * HW;
        strides[0] = nc * T * HW;
        break;
    case REEL_BATCH_BTHWC:
        shape[1] = T;
        shape[2] = h;
        shape[3] = w;
        shape[4] = nc;
        strides[4] = 1;
        strides[3] = nc;
        strides[2] = nc * (int64_t)w;
        strides[1] = nc * HW;
        strides[0] = nc * HW * T;
        break;
    default: /* BTCHW */
        shape[1] = T;
        shape[2] = nc;
        shape[3] = h;
        shape[4] = w;
        strides[4] = 1;
        strides[3] = w;
        strides[2] = HW;
        strides[1] = nc * HW;
        strides[0] = nc * HW * T;
        break;
    }
}

void reel__layout_frame(int layout, int T, int h, int w, int nc, int64_t row, int t, int64_t *offset, int64_t *stride_c,
                        int64_t *stride_y, int64_t *stride_x)
{
    int64_t shape[5], st[5];
    reel__layout_shape(layout, 1, T, h, w, nc, shape, st);
    switch (layout) {
    case REEL_BATCH_BCTHW:
        *offset = row * st[0] + t * st[2];
        *stride_c = st[1];
        *stride_y = st[3];
        *stride_x = 1;
        break;
    case REEL_BATCH_BTHWC:
        *offset = row * st[0] + t * st[1];
        *stride_c = 1;
        *stride_y = st[2];
        *stride_x = nc;
        break;
    default:
        *offset = row * st[0] + t * st[1];
        *stride_c = st[2];
        *stride_y = st[3];
        *stride_x = 1;
        break;
    }
}

int reel_loader_settings_get_clip_geometry(const reel_loader_settings *s, int64_t epoch, int64_t sample, int clip,
                                           int src_w, int src_h, int32_t crop[4], int32_t out_size[2], int *flipped,
                                           reel_error *err)
{
    reel_error_clear(err);
    if (!s || !crop || !out_size || !flipped) return reel__error_set(err, REEL_E_INVALID_ARG, "clip_geometry: NULL");
    if (epoch < 0 || sample < 0 || clip < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "clip_geometry: negative epoch, sample or clip");
    int ow, oh;
    int st = reel__geometry_check(&s->transform, &ow, &oh, err);
    if (st != REEL_OK) return st;
    reel_rng_key key = { s->seed, (uint64_t)epoch, (uint64_t)sample, REEL_RNG_CROP, 0 };
    reel_transform t;
    st = reel__geometry_frame(&s->transform, src_w, src_h, &key, clip, &t, err);
    if (st != REEL_OK) return st;
    int whole = t.crop_w <= 0;
    crop[0] = whole ? 0 : t.crop_x;
    crop[1] = whole ? 0 : t.crop_y;
    crop[2] = whole ? src_w : t.crop_w;
    crop[3] = whole ? src_h : t.crop_h;
    out_size[0] = t.width > 0 ? t.width : crop[2];
    out_size[1] = t.height > 0 ? t.height : crop[3];
    *flipped = t.flip_horizontal;
    return REEL_OK;
}

void reel__geometry_clip_info(const reel_transform *t, int src_w, int src_h, reel_clip_info *ci)
{
    const int crop = t->crop_w > 0;
    ci->flipped = t->flip_horizontal;
    ci->crop_x = crop ? t->crop_x : 0;
    ci->crop_y = crop ? t->crop_y : 0;
    ci->crop_w = crop ? t->crop_w : src_w;
    ci->crop_h = crop ? t->crop_h : src_h;
}
