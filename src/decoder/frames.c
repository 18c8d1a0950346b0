/* frames.c: the convenience calls on top of reel_decoder_decode: frames at
 * indices, at timestamps, over a range, into a caller's or a library
 * buffer, converted in request order. */
#include "decoder/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int reel_decoder_index_at_time(const reel_decoder *dec, double seconds, int64_t *index, reel_error *err)
{
    if (!dec || !index) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_index_at_time: NULL argument");
    const reel_table *t = &dec->table;
    AVRational tb = dec->st->time_base;
    if (!isfinite(seconds))
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: timestamp is not a finite number", dec->name);
    /* seconds -> ticks, tolerant of the rounding in pts * time_base */
    double ticks_d = seconds * (double)tb.den / (double)tb.num;
    int64_t ticks = (int64_t)floor(ticks_d + 1e-6);
    const reel_frame_entry *f = t->frames;
    if (t->n == 0 || ticks < f[0].pts)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: timestamp %.6f s is before the first frame (%.6f s)",
                               dec->name, seconds, t->n ? (double)f[0].pts * av_q2d(tb) : 0.0);
    int64_t lo = 0, hi = t->n; /* last frame with pts <= ticks */
    while (hi - lo > 1) {
        int64_t mid = (lo + hi) / 2;
        if (f[mid].pts <= ticks)
            lo = mid;
        else
            hi = mid;
    }
    if (lo == t->n - 1 && ticks >= f[lo].pts + f[lo].duration)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE,
                               "%s: timestamp %.6f s is at or after the end of the video (%.6f s)", dec->name, seconds,
                               (double)(f[lo].pts + f[lo].duration) * av_q2d(tb));
    *index = lo;
    return REEL_OK;
}

int reel_decoder_get_output_size(const reel_decoder *dec, const reel_transform *t, int *width, int *height,
                                 size_t *frame_bytes, reel_error *err)
{
    reel_transform def;
    if (!dec) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_output_size: decoder is NULL");
    if (!t) {
        reel_transform_default_settings(&def);
        t = &def;
    }
    int w = dec->info.width, h = dec->info.height;
    if (t->apply_rotation && (dec->rotation == 90 || dec->rotation == 270)) {
        int x = w;
        w = h;
        h = x;
    }
    int r = reel_transform_get_output_size(t, w, h, width, height, frame_bytes, err);
    if (r != REEL_OK && err) {
        char msg[REEL_ERROR_MSG_SIZE];
        memcpy(msg, err->message, sizeof msg);
        snprintf(err->message, sizeof err->message, "%.255s: %.250s", dec->name, msg);
    }
    return r;
}

typedef struct sink {
    reel_decoder *dec;
    reel_transform t; /* with explicit output size */
    uint8_t *dst;
    size_t frame_bytes;
    int sized;          /* the caller asked for an output size */
    int64_t last_index; /* frame converted last, for repeated requests */
    size_t last_pos;
    reel_error *err;
} sink;

static int sink_frame(void *opaque, const reel_frame *f, size_t pos)
{
    sink *s = opaque;
    uint8_t *out = s->dst + pos * s->frame_bytes;
    if (s->last_index == f->index) {
        /* the same frame asked for again: copy the converted bytes */
        memcpy(out, s->dst + s->last_pos * s->frame_bytes, s->frame_bytes);
        return 0;
    }
    const reel_transform *t = &s->t;
    reel_transform scaled;
    int fw, fh;
    reel_frame_get_size(f, &fw, &fh);
    if (!s->sized && (fw != s->dec->info.width || fh != s->dec->info.height)) {
        /* The coded size changed mid-stream and the caller asked for no
         * resize: rescale to the stream's size in one bicubic pass, exactly
         * as the ffmpeg CLI does for such a stream. */
        scaled = s->t;
        scaled.filter = REEL_FILTER_BICUBIC;
        t = &scaled;
    }
    int r = reel_converter_run(s->dec->conv, f, t, out, s->frame_bytes, s->err);
    if (r != REEL_OK) return r;
    s->last_index = f->index;
    s->last_pos = pos;
    return 0;
}

static int get_frames(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t, void *dst,
                      size_t dst_size, reel_decode_stats *stats, reel_error *err)
{
    sink s;
    memset(&s, 0, sizeof s);
    if (t)
        s.t = *t;
    else
        reel_transform_default_settings(&s.t);
    if (s.t.stride_c || s.t.stride_y || s.t.stride_x)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: get_frames writes dense frames; explicit strides are for reel_converter_run",
                               dec->name);
    int w, h;
    size_t fb;
    int r = reel_decoder_get_output_size(dec, &s.t, &w, &h, &fb, err);
    if (r != REEL_OK) return r;
    if (n && !dst) return reel__error_set(err, REEL_E_INVALID_ARG, "%s: output buffer is NULL", dec->name);
    if (n && dst_size / n < fb)
        return reel__error_set(err, REEL_E_BUFFER_TOO_SMALL, "%s: output buffer holds %zu bytes, %zu frames need %zu",
                               dec->name, dst_size, n, n * fb);
    /* pin the output size so frames whose coded size changes mid-stream
     * still fill exactly one slot */
    s.sized = s.t.width > 0 || s.t.height > 0;
    s.t.width = w;
    s.t.height = h;
    s.dec = dec;
    s.dst = dst;
    s.frame_bytes = fb;
    s.last_index = -1;
    s.err = err;
    return reel_decoder_decode(dec, indices, n, sink_frame, &s, stats, err);
}

int reel_decoder_get_frames(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t, void *dst,
                            size_t dst_size, reel_decode_stats *stats, reel_error *err)
{
    if (!dec || (n && !indices))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_frames: NULL argument");
    return get_frames(dec, indices, n, t, dst, dst_size, stats, err);
}

int reel_decoder_get_frames_alloc(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t,
                                  void **out, size_t *out_size, reel_decode_stats *stats, reel_error *err)
{
    if (!dec || !out || (n && !indices))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_frames_alloc: NULL argument");
    *out = NULL;
    if (out_size) *out_size = 0;
    size_t fb;
    int r = reel_decoder_get_output_size(dec, t, NULL, NULL, &fb, err);
    if (r != REEL_OK) return r;
    size_t total = fb * (n ? n : 1);
    void *buf = malloc(total);
    if (!buf)
        return reel__error_set(err, REEL_E_NOMEM, "%s: cannot allocate %zu bytes for %zu frames", dec->name, total, n);
    r = get_frames(dec, indices, n, t, buf, total, stats, err);
    if (r != REEL_OK) {
        free(buf);
        return r;
    }
    *out = buf;
    if (out_size) *out_size = fb * n;
    return REEL_OK;
}

int reel_decoder_get_frames_at_times(reel_decoder *dec, const double *seconds, size_t n, const reel_transform *t,
                                     void *dst, size_t dst_size, int64_t *indices_out, reel_decode_stats *stats,
                                     reel_error *err)
{
    if (!dec || (n && !seconds))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_frames_at_times: NULL argument");
    int64_t *idx = indices_out ? indices_out : malloc((n ? n : 1) * sizeof *idx);
    if (!idx) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dec->name);
    int r = REEL_OK;
    for (size_t i = 0; i < n && r == REEL_OK; i++) r = reel_decoder_index_at_time(dec, seconds[i], &idx[i], err);
    if (r == REEL_OK) r = get_frames(dec, idx, n, t, dst, dst_size, stats, err);
    if (idx != indices_out) free(idx);
    return r;
}

int reel_decoder_get_range(reel_decoder *dec, int64_t start, int64_t stop, int64_t step, const reel_transform *t,
                           void *dst, size_t dst_size, size_t *n_out, reel_decode_stats *stats, reel_error *err)
{
    if (!dec) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_range: decoder is NULL");
    if (n_out) *n_out = 0;
    if (step <= 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: range step must be positive (got %lld)", dec->name,
                               (long long)step);
    int64_t nf = dec->table.n;
    if (start < 0) start += nf;
    if (stop < 0) stop += nf;
    if (start < 0) start = 0;
    if (stop > nf) stop = nf;
    if (start >= nf && nf > 0 && stop > start)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: range start %lld out of range (video has %lld frames)",
                               dec->name, (long long)start, (long long)nf);
    size_t n = stop > start ? (size_t)((stop - start + step - 1) / step) : 0;
    int64_t *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dec->name);
    for (size_t i = 0; i < n; i++) idx[i] = start + (int64_t)i * step;
    int r = get_frames(dec, idx, n, t, dst, dst_size, stats, err);
    free(idx);
    if (r == REEL_OK && n_out) *n_out = n;
    return r;
}
