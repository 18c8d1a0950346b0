/* record.c: one video into one store record: opened with reel's decoder,
 * its segment's frames chosen (every K-th, by time at F fps, or by the
 * whole-video fps/count sampler), decoded
 * with the fused crop+resize at the stored size and display rotation, and
 * handed to the format's encoder; with audio, the samples over the stored
 * frames' window after them. A video that fails is recorded with its
 * reason. */
#define _GNU_SOURCE
#include "pack/pack.h"

#include "audio/damage.h"
#include "reel/audio.h"
#include "reel/decoder.h"
#include "reel/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The stored size of a w x h (displayed) video. */
static void stored_size(const reel_pack_settings *s, int w, int h, int *ow, int *oh)
{
    if (s->width > 0 && s->height > 0) {
        *ow = s->width;
        *oh = s->height;
    } else if (s->short_side == 0) { /* each video at its own (displayed) size */
        *ow = w;
        *oh = h;
    } else if (w <= h) {
        *ow = s->short_side;
        *oh = (int)floor((double)s->short_side * h / w);
    } else {
        *oh = s->short_side;
        *ow = (int)floor((double)s->short_side * w / h);
    }
    if (*ow < 1) *ow = 1;
    if (*oh < 1) *oh = 1;
}

/* The segment's first frame and frame count, as the loader's samplers see
 * the segment (one definition, reel_sampler_run's): a one-frame regular
 * clip at the start of the range, and one at its last frame. An empty
 * segment is REEL_E_OUT_OF_RANGE naming the video. */
static int segment(const reel_video_info *info, const reel_frame_entry *tab, int64_t n, const reel__pack_entry *it,
                   int64_t *first, int64_t *count, reel_error *err)
{
    reel_sampler_settings s;
    reel_sampler_default_settings(&s);
    s.kind = REEL_SAMPLER_REGULAR_INDICES;
    s.clips_per_video = 1;
    s.frames_per_clip = 1;
    reel_sampler_video v;
    memset(&v, 0, sizeof v);
    v.table = tab;
    v.num_frames = n;
    v.time_base_num = info->time_base_num;
    v.time_base_den = info->time_base_den;
    v.segment_start = it->start;
    v.segment_end = it->end;
    v.name = it->shown;
    int64_t last = 0;
    int st = reel_sampler_run(&s, &v, 0, 0, 0, first, 1, err);
    s.range_start = -1; /* the segment's last frame */
    if (st == REEL_OK) st = reel_sampler_run(&s, &v, 0, 0, 0, &last, 1, err);
    if (st == REEL_OK) *count = last - *first + 1;
    return st;
}

/* The whole-video sampler's frames of the segment (reel_sampler_run: the
 * indices reel.vlm and the loader's "fps"/"count" samplers take). */
static int sample_whole(const reel_pack_settings *ps, const reel_video_info *info, const reel_frame_entry *tab,
                        int64_t n, const reel__pack_entry *it, int64_t **out, int64_t *count, reel_error *err)
{
    const reel_sampler_settings *s = &ps->sampler;
    reel_sampler_video v;
    memset(&v, 0, sizeof v);
    v.table = tab;
    v.num_frames = n;
    v.time_base_num = info->time_base_num;
    v.time_base_den = info->time_base_den;
    v.average_fps = info->avg_fps_den > 0 ? (double)info->avg_fps_num / info->avg_fps_den : 0;
    v.segment_start = it->start;
    v.segment_end = it->end;
    v.name = it->shown;
    reel_sampler_result r;
    int st = reel_sampler_describe(s, &v, &r, err);
    if (st != REEL_OK) return st;
    int64_t *sel = malloc((size_t)(r.num_frames > 0 ? r.num_frames : 1) * sizeof *sel);
    if (!sel) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", it->shown);
    st = reel_sampler_run(s, &v, 0, 0, 0, sel, (size_t)r.num_frames, err);
    if (st != REEL_OK) {
        free(sel);
        return st;
    }
    *out = sel;
    *count = r.num_frames;
    return REEL_OK;
}

/* Source frame indices to store: the whole-video sampler's, or the
 * segment subsampled by every or fps. */
static int select_frames(const reel_pack_settings *ps, const reel_video_info *info, const reel_frame_entry *tab,
                         int64_t n, const reel__pack_entry *it, int64_t **out, int64_t *count, reel_error *err)
{
    if (ps->sampler.kind != REEL_SAMPLER_NONE) return sample_whole(ps, info, tab, n, it, out, count, err);
    int64_t first = 0, len = 0;
    int st = segment(info, tab, n, it, &first, &len, err);
    if (st != REEL_OK) return st;
    int64_t *sel = malloc((size_t)(len > 0 ? len : 1) * sizeof *sel);
    if (!sel) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", it->shown);
    int64_t k = 0;
    if (ps->fps > 0) {
        /* keep the frame shown at t0 + j/fps for j = 0, 1, ... (each once) */
        const double tb = (double)info->time_base_num / info->time_base_den;
        const double t0 = (double)tab[first].pts * tb;
        const int64_t last = first + len - 1;
        const double t_end = (double)(tab[last].pts + (tab[last].duration > 0 ? tab[last].duration : 1)) * tb;
        int64_t i = first;
        for (int64_t j = 0; j < (int64_t)1 << 40; j++) {
            double t = t0 + (double)j / ps->fps;
            if (t >= t_end - 1e-9) break;
            while (i < last && (double)tab[i + 1].pts * tb <= t + 1e-9) i++;
            if (k == 0 || sel[k - 1] != i) sel[k++] = i;
        }
    } else {
        int every = ps->every > 1 ? ps->every : 1;
        for (int64_t i = first; i < first + len; i += every) sel[k++] = i;
    }
    *out = sel;
    *count = k;
    return REEL_OK;
}

/* The record's identity from its dataset entry, and the source file's size
 * and time. */
static int init_record(const reel__pack_entry *it, int64_t sample, reel__store_rec *rec, reel_error *err)
{
    memset(rec, 0, sizeof *rec);
    rec->sample = sample;
    rec->label = it->label;
    rec->seg_start = it->start;
    rec->seg_end = it->end;
    rec->path = strdup(it->shown);
    rec->class_name = strdup(it->class_name ? it->class_name : "");
    if (!rec->path || !rec->class_name) return reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
    struct stat st;
    if (stat(it->path, &st) == 0) {
        rec->source_size = (int64_t)st.st_size;
        rec->source_mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    }
    return REEL_OK;
}

/* An open video: its stored size and samples, and the frames to keep
 * (rec's frame table filled but for the payloads). */
typedef struct source {
    reel_decoder *dec;
    int w, h;
    int64_t *sel, nsel;
} source;

/* What the record's frames hold (rec->pixels, rec->depth), by the settings
 * and the source's bit depth: RGB24, or RGB48 for uint16; gray of 8 bits
 * for uint8 or an 8-bit source, else the source's codes. A jpeg or h264
 * build (8-bit RGB) refuses a gray source deeper than 8 bits, a depth map,
 * which it would cut to 8 bits. */
static int stored_pixels(const reel_pack_settings *ps, const reel_video_info *info, const char *name,
                         reel__store_rec *rec, reel_error *err)
{
    const int depth = info->bit_depth;
    if (ps->format != REEL_STORE_FORMAT_RAW && depth > 8 && !strncmp(info->pix_fmt, "gray", 4))
        return reel__error_set(err, REEL_E_UNSUPPORTED_CODEC,
                               "%s: %d-bit gray (%s) does not fit a %s record, which holds 8 bits: pack it with "
                               "format raw, color gray and dtype uint16",
                               name, depth, info->pix_fmt, ps->format == REEL_STORE_FORMAT_JPEG ? "jpeg" : "h264");
    rec->depth = 0;
    if (ps->color == REEL_COLOR_RGB)
        rec->pixels = ps->dtype == REEL_DTYPE_UINT16 ? REEL__STORE_PIX_RGB48 : REEL__STORE_PIX_RGB24;
    else if (ps->dtype == REEL_DTYPE_UINT8 || depth <= 8)
        rec->pixels = REEL__STORE_PIX_GRAY8;
    else {
        /* the converter's gray picture of a deeper source: its depth, or 16 */
        rec->pixels = REEL__STORE_PIX_GRAY16;
        rec->depth = (uint16_t)(depth == 9 || depth == 10 || depth == 12 || depth == 14 ? depth : 16);
    }
    return REEL_OK;
}

static int open_source(const reel_pack_settings *ps, const reel__pack_entry *it, reel__store_rec *rec, source *v,
                       reel_error *err)
{
    reel_decoder_settings ds;
    reel_decoder_default_settings(&ds);
    ds.threads = 1; /* the build runs videos in parallel instead */
    ds.gop_contexts = 0;
    ds.corrupt_policy = ps->corrupt_policy;
    int st = reel_decoder_open(&v->dec, it->path, &ds, err);
    if (st != REEL_OK) return st;
    const reel_video_info *info = reel_decoder_get_info(v->dec);
    int64_t n = 0;
    const reel_frame_entry *tab = reel_decoder_get_frame_table(v->dec, &n);
    rec->tb_num = info->time_base_num;
    rec->tb_den = info->time_base_den;
    rec->fps_num = info->avg_fps_num;
    rec->fps_den = info->avg_fps_den;
    rec->source_num_frames = info->num_frames;
    int dw = info->source_width, dh = info->source_height;
    int rot = ((info->rotation % 360) + 360) % 360;
    if (rot == 90 || rot == 270) {
        int t = dw;
        dw = dh;
        dh = t;
    }
    stored_size(ps, dw, dh, &v->w, &v->h);
    st = stored_pixels(ps, info, it->shown, rec, err);
    if (st != REEL_OK) return st;
    rec->width = (uint32_t)v->w;
    rec->height = (uint32_t)v->h;
    st = select_frames(ps, info, tab, n, it, &v->sel, &v->nsel, err);
    if (st == REEL_OK && v->nsel == 0)
        st = reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: no frame in the segment", it->shown);
    if (st != REEL_OK) return st;
    rec->num_frames = (uint32_t)v->nsel;
    rec->frames = calloc((size_t)v->nsel, sizeof *rec->frames);
    if (!rec->frames) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", it->shown);
    for (int64_t i = 0; i < v->nsel; i++) {
        rec->frames[i].source_index = v->sel[i];
        rec->frames[i].pts = tab[v->sel[i]].pts;
        rec->frames[i].duration = tab[v->sel[i]].duration;
    }
    return REEL_OK;
}

/* Decodes the kept frames, a chunk at a time, and encodes them. */
static int encode_frames(const reel_pack_settings *ps, const reel__pack_entry *it, source *v, reel__encoder *enc,
                         reel__store_rec *rec, reel__bytes *bytes, reel_error *err)
{
    enum { CHUNK = 16 };
    int st = reel__encoder_begin(enc, v->w, v->h, rec->pixels, it->shown, err);
    if (st != REEL_OK) return st;
    reel_transform t;
    reel_transform_default_settings(&t);
    t.width = v->w;
    t.height = v->h;
    t.pixels.apply_rotation = 1; /* the default, said: a store holds frames as displayed */
    t.pixels.color = rec->pixels == REEL__STORE_PIX_GRAY8 || rec->pixels == REEL__STORE_PIX_GRAY16 ? REEL_COLOR_GRAY
                                                                                                   : REEL_COLOR_RGB;
    t.pixels.dtype = rec->pixels == REEL__STORE_PIX_RGB48 || rec->pixels == REEL__STORE_PIX_GRAY16 ? REEL_DTYPE_UINT16
                                                                                                   : REEL_DTYPE_UINT8;
    const size_t fb = (size_t)v->w * (size_t)v->h * reel__store_pixel_bytes(rec->pixels);
    /* + padding: swscale's SIMD reads a little past the last row it converts */
    uint8_t *rgb = malloc(fb * CHUNK + 256);
    if (!rgb) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", it->shown);
    for (int64_t i = 0; st == REEL_OK && i < v->nsel; i += CHUNK) {
        int k = (int)(v->nsel - i < CHUNK ? v->nsel - i : CHUNK);
        if (ps->interrupt && ps->interrupt(ps->interrupt_opaque)) {
            st = reel__error_set(err, REEL_E_CANCELLED, "pack: cancelled");
            break;
        }
        st = reel_decoder_get_frames(v->dec, v->sel + i, (size_t)k, &t, rgb, fb * CHUNK, NULL, err);
        if (st == REEL_OK) st = reel__encoder_add(enc, rgb, fb, i, k, rec->frames, bytes, it->shown, err);
    }
    if (st == REEL_OK) st = reel__encoder_end(enc, rec->frames, v->nsel, bytes, it->shown, err);
    free(rgb);
    return st;
}

/* The audio over the stored frames' window [T0, T1) = [min p, max(p + d)),
 * one reel_audio decode from a0 (a video at a URL: read by byte ranges, its
 * audio packets only, as the decoder reads its frames), appended to the
 * record as little-endian float32 [C, S]. A video whose audio is missing or
 * cannot be read keeps its frames: rec->audio_status says why (and *why the
 * reason). */
static int pack_audio(const reel_pack_settings *ps, const reel__pack_entry *it, const reel_decoder *dec,
                      reel__store_rec *rec, reel__bytes *bytes, reel_error *why, reel_error *err)
{
    rec->audio = 1;
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (uint32_t i = 0; i < rec->num_frames; i++) {
        if (rec->frames[i].pts < t0) t0 = rec->frames[i].pts;
        if (rec->frames[i].pts + rec->frames[i].duration > t1) t1 = rec->frames[i].pts + rec->frames[i].duration;
    }
    reel_audio_settings as = *ps->audio;
    as.missing = REEL_AUDIO_MISSING_RAISE;  /* a video without audio is recorded so; the loader decides */
    as.corrupt_policy = ps->corrupt_policy; /* the pack's, frames and audio alike */
    as.interrupt = ps->interrupt;           /* a long decode from a0 stops with the build */
    as.interrupt_opaque = ps->interrupt_opaque;
    as.cache_bytes = 0; /* one window per object: nothing to serve again */
    reel_audio *a = NULL;
    reel_audio_window w;
    float *tmp = NULL;
    int st = reel_decoder_open_audio(dec, &as, &a, why); /* a URL's bytes: the decoder's, not fetched again */
    if (st == REEL_OK) st = reel_audio_get_window(a, t0, t1, rec->tb_num, rec->tb_den, &w, why);
    const reel_audio_info *ai = st == REEL_OK ? reel_audio_get_info(a) : NULL;
    const size_t n = ai ? (size_t)ai->channels * (size_t)w.num_samples : 0;
    if (st == REEL_OK && !(tmp = malloc((n ? n : 1) * sizeof *tmp)))
        st = reel__error_set(why, REEL_E_NOMEM, "%s: out of memory", it->shown);
    if (st == REEL_OK) st = reel_audio_get_samples(a, t0, t1, rec->tb_num, rec->tb_den, tmp, n, &w, why);
    size_t nspans = 0; /* the damage under REEL_CORRUPT_SKIP: its spans, so a clip gets what the video gives it, and
                        * what FAIL says of each (the record's reason, a line a span: the loader's FAIL names it) */
    if (st == REEL_OK &&
        reel__audio_damage_spans(a, w.first_sample, w.first_sample + w.num_samples, &rec->audio_spans, &nspans,
                                 &rec->audio_stream_lo, &rec->audio_stream_hi, &rec->reason) != 0)
        st = reel__error_set(why, REEL_E_NOMEM, "%s: out of memory", it->shown);
    rec->audio_n_spans = (uint32_t)nspans;
    if (st == REEL_OK && reel__bytes_reserve(bytes, n * 4) != 0)
        st = reel__error_set(why, REEL_E_NOMEM, "%s: out of memory", it->shown);
    if (st == REEL_OK) {
        rec->audio_offset = bytes->len;
        rec->audio_length = n * 4;
        uint8_t *q = bytes->data + bytes->len;
        for (size_t i = 0; i < n; i++, q += 4) { /* little-endian float32 */
            uint32_t v;
            memcpy(&v, &tmp[i], sizeof v);
            q[0] = (uint8_t)v;
            q[1] = (uint8_t)(v >> 8);
            q[2] = (uint8_t)(v >> 16);
            q[3] = (uint8_t)(v >> 24);
        }
        rec->audio_crc = reel__crc32(0, bytes->data + bytes->len, n * 4);
        bytes->len += n * 4;
        rec->audio_rate = ai->sample_rate;
        rec->audio_channels = ai->channels;
        rec->audio_first = w.first_sample;
        rec->audio_samples = w.num_samples;
        rec->audio_valid_lo = w.valid_lo;
        rec->audio_valid_hi = w.valid_hi;
        rec->a0_pts = ai->start_pts;
        rec->a0_tb_num = ai->time_base_num;
        rec->a0_tb_den = ai->time_base_den;
    }
    if (st != REEL_OK) { /* no samples: no damage either */
        free(rec->reason);
        rec->reason = NULL;
        free(rec->audio_spans);
        rec->audio_spans = NULL;
        rec->audio_n_spans = 0;
        rec->audio_stream_lo = rec->audio_stream_hi = 0;
    }
    free(tmp);
    reel_audio_close(&a);
    if (st == REEL_E_NOMEM || st == REEL_E_CANCELLED || st == REEL_E_INTERNAL) {
        if (err) *err = *why;
        return st;
    }
    rec->audio_status = st;
    return REEL_OK;
}

int reel__pack_record(const reel__pack_ctx *c, int64_t sample, reel__encoder *enc, reel__store_rec *rec,
                      reel__bytes *bytes, reel_error *err)
{
    const reel__pack_entry *it = &c->entries[sample];
    int st = init_record(it, sample, rec, err);
    if (st != REEL_OK) return st;
    bytes->len = 0;
    reel_error verr; /* why this video cannot be packed */
    reel_error_clear(&verr);
    source v;
    memset(&v, 0, sizeof v);
    int vst = open_source(c->s, it, rec, &v, &verr);
    if (vst == REEL_OK) vst = encode_frames(c->s, it, &v, enc, rec, bytes, &verr);
    free(v.sel);
    if (vst != REEL_OK) reel_decoder_close(&v.dec); /* else open until its audio is read (it shares the bytes) */
    if (vst == REEL_E_CANCELLED || vst == REEL_E_NOMEM || vst == REEL_E_INTERNAL) {
        if (err) *err = verr;
        return vst;
    }
    if (vst != REEL_OK) {
        /* the video is recorded as a failure, with its reason */
        rec->status = vst;
        rec->audio = c->params.audio ? 1 : 0; /* the entry's audio block, empty */
        rec->reason = strdup(verr.message[0] ? verr.message : reel_strerror(vst));
        free(rec->frames);
        rec->frames = NULL;
        rec->num_frames = 0;
        bytes->len = 0;
        if (!rec->reason) return reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
    } else {
        reel_error aerr; /* why the audio could not be read: the reason of a record whose frames are stored */
        reel_error_clear(&aerr);
        st = c->s->audio ? pack_audio(c->s, it, v.dec, rec, bytes, &aerr, err) : REEL_OK;
        reel_decoder_close(&v.dec);
        if (st != REEL_OK) return st;
        if (!rec->reason) /* else the damage's lines (pack_audio) */
            rec->reason =
                strdup(rec->audio_status != REEL_OK && rec->audio_status != REEL_E_NO_AUDIO_STREAM ? aerr.message : "");
        if (!rec->reason) return reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
        rec->length = bytes->len;
        rec->crc = reel__crc32(0, bytes->data, bytes->len);
    }
    return REEL_OK;
}
