/* audio.c: a video's audio for a window of its timeline, sample-exact
 * (reel/audio.h): opening, a0, and the decode from a0 that places each
 * frame on the output grid and keeps only the window's samples. */
#include "reel/audio.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MAX_RATE     1000000
#define MAX_CHANNELS 64

struct reel_audio {
    char name[1024];
    reel_audio_settings s;
    reel_audio_info info;
    AVFormatContext *fmt;
    AVCodecParameters *par; /* the stream's, for a fresh codec per call */
    AVRational tb;
    int stream;
    float *scratch; /* one frame as float planes, then its mix */
    size_t scratch_cap;
};

void reel_audio_default_settings(reel_audio_settings *s)
{
    if (!s) return;
    memset(s, 0, sizeof *s);
    s->stream_index = -1;
    s->missing = REEL_AUDIO_MISSING_RAISE;
}

const reel_audio_info *reel_audio_get_info(const reel_audio *a)
{
    return a ? &a->info : NULL;
}

void reel_audio_close(reel_audio **a)
{
    if (!a || !*a) return;
    avformat_close_input(&(*a)->fmt);
    avcodec_parameters_free(&(*a)->par);
    free((*a)->scratch);
    free(*a);
    *a = NULL;
}

/* A fresh codec for each decode from a0: libavcodec's AAC decoder keeps a
 * noise generator that neither a flush nor a seek resets. */
static int open_codec(reel_audio *a, AVCodecContext **out, reel_error *err)
{
    const AVCodec *c = avcodec_find_decoder(a->par->codec_id);
    if (!c)
        return reel__error_set(err, REEL_E_UNSUPPORTED_CODEC, "%s: audio decoder for %s not in this build", a->name,
                               avcodec_get_name(a->par->codec_id));
    AVCodecContext *ctx = avcodec_alloc_context3(c);
    if (!ctx) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
    int r = avcodec_parameters_to_context(ctx, a->par);
    if (r >= 0) {
        ctx->pkt_timebase = a->tb;
        ctx->thread_count = 1;
        r = avcodec_open2(ctx, c, NULL);
    }
    if (r < 0) {
        avcodec_free_context(&ctx);
        char eb[AV_ERROR_MAX_STRING_SIZE];
        av_strerror(r, eb, sizeof eb);
        return reel__error_set(err, REEL_E_UNSUPPORTED_CODEC, "%s: cannot open the %s audio decoder: %s", a->name,
                               avcodec_get_name(a->par->codec_id), eb);
    }
    *out = ctx;
    return REEL_OK;
}

/* Back to the stream's first packet: the container opened afresh. A seek
 * to the start is not the same for every demuxer (mp4's seek to time 0
 * lands after AAC's priming packet, which the decode needs), and the CLI
 * that the samples are held to reads from the first byte. */
static int rewind_stream(reel_audio *a, reel_error *err)
{
    avformat_close_input(&a->fmt);
    int r = avformat_open_input(&a->fmt, a->name, NULL, NULL);
    if (r < 0 || (unsigned)a->stream >= a->fmt->nb_streams ||
        a->fmt->streams[a->stream]->codecpar->codec_id != a->par->codec_id) {
        char eb[AV_ERROR_MAX_STRING_SIZE] = "its streams changed";
        if (r < 0) av_strerror(r, eb, sizeof eb);
        return reel__error_set(err, r < 0 ? reel__status_from_av(r) : REEL_E_CORRUPT, "%s: cannot reopen: %s", a->name,
                               eb);
    }
    return REEL_OK;
}

/* ---- the decode from a0 ------------------------------------------------- */

/* A decoded frame as float planes, channel after channel (FFmpeg's
 * swresample conversions: s16 / 2^15, s32 / 2^31, (u8 - 128) / 2^7). */
static int frame_to_planes(const AVFrame *f, int ch, float *dst)
{
    const int n = f->nb_samples;
    const enum AVSampleFormat fmt = (enum AVSampleFormat)f->format;
    const int planar = av_sample_fmt_is_planar(fmt);
    for (int c = 0; c < ch; c++) {
        float *o = dst + (size_t)c * (size_t)n;
        const uint8_t *p = f->extended_data[planar ? c : 0];
        const int step = planar ? 1 : ch, off = planar ? 0 : c;
        for (int i = 0; i < n; i++) {
            const size_t k = (size_t)i * (size_t)step + (size_t)off;
            switch (av_get_packed_sample_fmt(fmt)) {
            case AV_SAMPLE_FMT_FLT: o[i] = ((const float *)p)[k]; break;
            case AV_SAMPLE_FMT_DBL: o[i] = (float)((const double *)p)[k]; break;
            case AV_SAMPLE_FMT_S16: o[i] = (float)((const int16_t *)p)[k] * (1.0f / (1 << 15)); break;
            case AV_SAMPLE_FMT_S32: o[i] = (float)((const int32_t *)p)[k] * (1.0f / (1U << 31)); break;
            case AV_SAMPLE_FMT_U8: o[i] = (float)(((const uint8_t *)p)[k] - 0x80) * (1.0f / (1 << 7)); break;
            default: return -1;
            }
        }
    }
    return 0;
}

/* The planes' mean into plane 0 (channels 1): gains of 1/C summed in channel
 * order, as FFmpeg's pan filter mixes (c0 = 0.5*c0 + 0.5*c1 for stereo). */
static void mix_to_mono(float *planes, int ch, int n)
{
    if (ch == 1) return;
    const float g = 1.0f / (float)ch;
    for (int i = 0; i < n; i++) {
        float v = g * planes[i];
        for (int c = 1; c < ch; c++) v += g * planes[(size_t)c * (size_t)n + (size_t)i];
        planes[i] = v;
    }
}

/* The output side of one decode: native-rate samples come in (positioned
 * from a0), the window's overlap goes out. */
typedef struct sink {
    reel_audio *a;
    SwrContext *swr; /* NULL: the output rate is the native one */
    int64_t lo, hi;  /* the window on the output grid */
    int64_t out_pos; /* output samples produced so far (grid index of the next) */
    float *dst;      /* [C, hi - lo] */
    float *rs;       /* the resampler's output planes */
    int rs_cap;
} sink;

static void sink_put(sink *k, const float *planes, int n, int stride)
{
    const int ch = k->a->info.channels;
    const int64_t S = k->hi - k->lo;
    int64_t from = k->out_pos > k->lo ? k->out_pos : k->lo, to = k->out_pos + n < k->hi ? k->out_pos + n : k->hi;
    for (int c = 0; c < ch && from < to; c++)
        memcpy(k->dst + (size_t)c * (size_t)S + (size_t)(from - k->lo),
               planes + (size_t)c * (size_t)stride + (size_t)(from - k->out_pos), (size_t)(to - from) * sizeof(float));
    k->out_pos += n;
}

/* n native samples (planes of `stride`, or zeros when planes is NULL) into
 * the output grid, through the resampler when there is one. */
static int sink_feed(sink *k, const float *planes, int n, int stride)
{
    const int ch = k->a->info.channels;
    if (!k->swr) { /* the window starts zeroed: a gap only moves on */
        if (planes)
            sink_put(k, planes, n, stride);
        else
            k->out_pos += n;
        return REEL_OK;
    }
    float *zeros = NULL; /* a gap goes through the resampler like samples */
    if (!planes && n > 0) {
        zeros = calloc((size_t)n * (size_t)ch, sizeof(float));
        if (!zeros) return REEL_E_NOMEM;
        planes = zeros;
        stride = n;
    }
    const uint8_t *in[MAX_CHANNELS];
    for (int c = 0; c < ch; c++) in[c] = planes ? (const uint8_t *)(planes + (size_t)c * (size_t)stride) : NULL;
    int want = swr_get_out_samples(k->swr, n);
    if (want > k->rs_cap) {
        float *p = realloc(k->rs, (size_t)want * (size_t)ch * sizeof(float));
        if (!p) {
            free(zeros);
            return REEL_E_NOMEM;
        }
        k->rs = p;
        k->rs_cap = want;
    }
    uint8_t *out[MAX_CHANNELS];
    for (int c = 0; c < ch; c++) out[c] = (uint8_t *)(k->rs + (size_t)c * (size_t)k->rs_cap);
    int got = swr_convert(k->swr, out, k->rs_cap, planes ? in : NULL, planes ? n : 0);
    free(zeros);
    if (got < 0) return REEL_E_INTERNAL;
    if (got > 0) sink_put(k, k->rs, got, k->rs_cap);
    return REEL_OK;
}

/* floor(num / den + 1/2) for den > 0, exact. */
static __int128 round_half_up(__int128 num, __int128 den)
{
    __int128 q = (2 * num + den) / (2 * den);
    if ((2 * num + den) % (2 * den) < 0) q -= 1; /* C divides toward zero */
    return q;
}

/* Native samples from a0 to the stream time `pts`. */
static int64_t native_pos(const reel_audio *a, int64_t pts)
{
    return (int64_t)round_half_up((__int128)(pts - a->info.start_pts) * a->tb.num * a->info.native_sample_rate,
                                  a->tb.den);
}

/* One decoded frame onto the native grid (the 1 ms rule), mixed, into the
 * sink. `pos`: native samples placed so far. */
static int place_frame(sink *k, const AVFrame *f, int64_t *pos, reel_error *err)
{
    reel_audio *a = k->a;
    const int nch = a->info.native_channels, n = f->nb_samples;
    if (f->ch_layout.nb_channels != nch || f->sample_rate != a->info.native_sample_rate)
        return reel__error_set(err, REEL_E_UNSUPPORTED_CODEC,
                               "%s: the audio changes format mid-stream (%d Hz, %d channels, was %d Hz, %d)", a->name,
                               f->sample_rate, f->ch_layout.nb_channels, a->info.native_sample_rate, nch);
    size_t need = (size_t)n * (size_t)nch;
    if (need > a->scratch_cap) {
        float *p = realloc(a->scratch, need * sizeof(float));
        if (!p) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
        a->scratch = p;
        a->scratch_cap = need;
    }
    if (frame_to_planes(f, nch, a->scratch) < 0)
        return reel__error_set(err, REEL_E_UNSUPPORTED_CODEC, "%s: audio sample format %s not handled", a->name,
                               av_get_sample_fmt_name((enum AVSampleFormat)f->format));
    if (a->info.channels == 1) mix_to_mono(a->scratch, nch, n);
    int skip = 0;
    const int64_t pts = f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp : f->pts;
    if (pts != AV_NOPTS_VALUE) {
        const int64_t own = native_pos(a, pts), tol = a->info.native_sample_rate / 1000;
        if (own - *pos > tol) { /* a gap: zeros up to the frame's own place */
            int64_t gap = own - *pos;
            while (gap > 0) {
                int part = gap > 1 << 20 ? 1 << 20 : (int)gap;
                if (sink_feed(k, NULL, part, 0) != REEL_OK)
                    return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
                gap -= part;
            }
            *pos = own;
        } else if (*pos - own > tol) { /* an overlap: its first samples go */
            skip = *pos - own >= n ? n : (int)(*pos - own);
        }
    }
    if (skip >= n) return REEL_OK;
    int st = sink_feed(k, a->scratch + skip, n - skip, n);
    if (st != REEL_OK) return reel__error_set(err, st, "%s: resampling failed", a->name);
    *pos += n - skip;
    return REEL_OK;
}

static int sink_done(const sink *k)
{
    return k->out_pos >= k->hi;
}

/* Decodes from a0 until the window [lo, hi) of the output grid is filled
 * or the stream ends; *end: output samples the stream gave (INT64_MAX when
 * the window ended first). */
static int decode_window(reel_audio *a, int64_t lo, int64_t hi, float *dst, int64_t *end, reel_error *err)
{
    const int ch = a->info.channels;
    sink k = { a, NULL, lo, hi, 0, dst, NULL, 0 };
    AVCodecContext *ctx = NULL;
    AVPacket *pkt = av_packet_alloc();
    AVFrame *f = av_frame_alloc();
    int st = pkt && f ? REEL_OK : reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
    if (st == REEL_OK && a->info.sample_rate != a->info.native_sample_rate) {
        AVChannelLayout lay;
        av_channel_layout_default(&lay, ch);
        if (swr_alloc_set_opts2(&k.swr, &lay, AV_SAMPLE_FMT_FLTP, a->info.sample_rate, &lay, AV_SAMPLE_FMT_FLTP,
                                a->info.native_sample_rate, 0, NULL) < 0 ||
            swr_init(k.swr) < 0)
            st = reel__error_set(err, REEL_E_INTERNAL, "%s: cannot set up resampling %d -> %d Hz", a->name,
                                 a->info.native_sample_rate, a->info.sample_rate);
        av_channel_layout_uninit(&lay);
    }
    if (st == REEL_OK) st = open_codec(a, &ctx, err);
    if (st == REEL_OK) st = rewind_stream(a, err);
    int64_t pos = 0;
    int eof = 0;
    while (st == REEL_OK && !sink_done(&k)) {
        int r = 0;
        if (!eof) {
            r = av_read_frame(a->fmt, pkt);
            if (r == AVERROR_EOF) {
                eof = 1;
                r = avcodec_send_packet(ctx, NULL);
            } else if (r < 0) {
                char eb[AV_ERROR_MAX_STRING_SIZE];
                av_strerror(r, eb, sizeof eb);
                st = reel__error_set(err, REEL_E_CORRUPT, "%s: audio read error: %s", a->name, eb);
                break;
            } else if (pkt->stream_index != a->stream) {
                av_packet_unref(pkt);
                continue;
            } else {
                r = avcodec_send_packet(ctx, pkt);
                av_packet_unref(pkt);
            }
            if (r < 0 && r != AVERROR(EAGAIN) && r != AVERROR_EOF) {
                char eb[AV_ERROR_MAX_STRING_SIZE];
                av_strerror(r, eb, sizeof eb);
                st = reel__error_set(err, REEL_E_CORRUPT, "%s: corrupt audio packet: %s", a->name, eb);
                break;
            }
        }
        for (;;) {
            r = avcodec_receive_frame(ctx, f);
            if (r == AVERROR(EAGAIN)) break;
            if (r == AVERROR_EOF) {
                eof = 2;
                break;
            }
            if (r < 0) {
                char eb[AV_ERROR_MAX_STRING_SIZE];
                av_strerror(r, eb, sizeof eb);
                st = reel__error_set(err, REEL_E_CORRUPT, "%s: corrupt audio: %s", a->name, eb);
                break;
            }
            st = place_frame(&k, f, &pos, err);
            av_frame_unref(f);
            if (st != REEL_OK || sink_done(&k)) break;
        }
        if (eof == 2) break;
    }
    if (st == REEL_OK && !sink_done(&k) && k.swr) { /* the resampler's last samples */
        int64_t before;
        do {
            before = k.out_pos;
            if (sink_feed(&k, NULL, 0, 0) != REEL_OK) {
                st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
                break;
            }
        } while (k.out_pos > before && !sink_done(&k));
    }
    *end = sink_done(&k) ? INT64_MAX : k.out_pos;
    swr_free(&k.swr);
    free(k.rs);
    avcodec_free_context(&ctx);
    av_packet_free(&pkt);
    av_frame_free(&f);
    return st;
}

/* ---- the public calls ------------------------------------------------- */

/* s(t) on the output grid for t = ts * num / den seconds: (t - a0) * r,
 * rounded half up over the common denominator; -1 out of int64 range. */
static int sample_at(const reel_audio *a, int64_t ts, int num, int den, int64_t *out)
{
    const __int128 d = (__int128)den * a->tb.den;
    const __int128 n = ((__int128)ts * num * a->tb.den - (__int128)a->info.start_pts * a->tb.num * den) *
                       (__int128)a->info.sample_rate;
    const __int128 q = round_half_up(n, d);
    if (q > INT64_MAX / 4 || q < -(INT64_MAX / 4)) return -1;
    *out = (int64_t)q;
    return 0;
}

int reel_audio_get_window(const reel_audio *a, int64_t t0, int64_t t1, int num, int den, reel_audio_window *w,
                          reel_error *err)
{
    if (!a || !w) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_audio_get_window: NULL argument");
    if (num <= 0 || den <= 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: audio window: time base %d/%d must be positive", a->name,
                               num, den);
    if (t1 < t0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: audio window ends (%lld) before it starts (%lld)", a->name,
                               (long long)t1, (long long)t0);
    int64_t lo, hi;
    if (sample_at(a, t0, num, den, &lo) < 0 || sample_at(a, t1, num, den, &hi) < 0 || hi - lo > INT32_MAX)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: audio window %lld..%lld x %d/%d s is too long", a->name,
                               (long long)t0, (long long)t1, num, den);
    memset(w, 0, sizeof *w);
    w->first_sample = lo;
    w->num_samples = hi - lo;
    return REEL_OK;
}

int reel_audio_get_samples(reel_audio *a, int64_t t0, int64_t t1, int num, int den, float *dst, size_t dst_count,
                           reel_audio_window *w, reel_error *err)
{
    reel_audio_window win;
    int st = reel_audio_get_window(a, t0, t1, num, den, &win, err);
    if (st != REEL_OK) return st;
    const size_t need = (size_t)win.num_samples * (size_t)a->info.channels;
    if (need && !dst) return reel__error_set(err, REEL_E_INVALID_ARG, "%s: audio: NULL output", a->name);
    if (dst_count < need)
        return reel__error_set(err, REEL_E_BUFFER_TOO_SMALL, "%s: audio window needs %zu floats, got %zu", a->name,
                               need, dst_count);
    if (need) memset(dst, 0, need * sizeof(float));
    const int64_t lo = win.first_sample, hi = lo + win.num_samples;
    int64_t end = 0;
    if (a->info.has_audio && hi > 0 && win.num_samples > 0) {
        st = decode_window(a, lo, hi, dst, &end, err);
        if (st != REEL_OK) return st;
    }
    /* the stream covers the grid's [0, end) */
    const int64_t vlo = lo < 0 ? -lo : 0, vend = end == INT64_MAX ? hi : end;
    win.valid_lo = vlo > win.num_samples ? win.num_samples : vlo;
    win.valid_hi = vend - lo < win.valid_lo ? win.valid_lo : vend - lo > win.num_samples ? win.num_samples : vend - lo;
    if (!a->info.has_audio) win.valid_lo = win.valid_hi = 0;
    if (w) *w = win;
    return REEL_OK;
}

/* ---- opening ------------------------------------------------------------ */

static int find_a0(reel_audio *a, reel_error *err)
{
    AVCodecContext *ctx = NULL;
    int st = open_codec(a, &ctx, err);
    if (st != REEL_OK) return st;
    AVPacket *pkt = av_packet_alloc();
    AVFrame *f = av_frame_alloc();
    int found = 0;
    /* the container was just opened: its first packets (those
     * avformat_find_stream_info read are kept) come first, no reopen */
    st = pkt && f ? REEL_OK : reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
    int eof = 0;
    while (st == REEL_OK && !found) {
        if (!eof) {
            int r = av_read_frame(a->fmt, pkt);
            if (r < 0) {
                eof = 1;
                avcodec_send_packet(ctx, NULL);
            } else {
                if (pkt->stream_index == a->stream) avcodec_send_packet(ctx, pkt);
                av_packet_unref(pkt);
            }
        }
        int r = avcodec_receive_frame(ctx, f);
        if (r >= 0) {
            int64_t pts = f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp : f->pts;
            AVStream *s = a->fmt->streams[a->stream];
            a->info.start_pts = pts != AV_NOPTS_VALUE ? pts : s->start_time != AV_NOPTS_VALUE ? s->start_time : 0;
            found = 1;
        } else if (r == AVERROR_EOF || (eof && r == AVERROR(EAGAIN))) {
            st = reel__error_set(err, REEL_E_CORRUPT, "%s: the audio stream decodes to no samples", a->name);
        }
        av_frame_unref(f);
    }
    av_packet_free(&pkt);
    av_frame_free(&f);
    avcodec_free_context(&ctx);
    return st;
}

static int open_stream(reel_audio *a, const reel_audio_settings *s, reel_error *err)
{
    AVFormatContext *fmt = a->fmt;
    int vid = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (vid < 0)
        return reel__error_set(err, REEL_E_NO_VIDEO_STREAM,
                               "%s: no video stream (an audio-only file: reel times audio by a video's frames)",
                               a->name);
    int idx = s->stream_index;
    if (idx >= 0 && ((unsigned)idx >= fmt->nb_streams || fmt->streams[idx]->codecpar->codec_type != AVMEDIA_TYPE_AUDIO))
        return reel__error_set(err, REEL_E_NO_AUDIO_STREAM, "%s: stream %d is not an audio stream", a->name, idx);
    if (idx < 0) idx = av_find_best_stream(fmt, AVMEDIA_TYPE_AUDIO, -1, vid, NULL, 0);
    if (idx < 0) {
        if (s->missing != REEL_AUDIO_MISSING_ZEROS)
            return reel__error_set(err, REEL_E_NO_AUDIO_STREAM, "%s: no audio stream", a->name);
        if (s->sample_rate < 1)
            return reel__error_set(err, REEL_E_INVALID_ARG, "%s: no audio stream: zeros need a sample_rate (got %d)",
                                   a->name, s->sample_rate);
        a->info.stream_index = -1;
        a->info.sample_rate = s->sample_rate;
        a->info.channels = 1;
        a->tb = (AVRational){ 1, s->sample_rate };
        return REEL_OK;
    }
    const AVCodecParameters *par = fmt->streams[idx]->codecpar;
    if (par->sample_rate < 1 || par->sample_rate > MAX_RATE)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: audio stream %d: sample rate %d Hz out of range (1..%d)",
                               a->name, idx, par->sample_rate, MAX_RATE);
    if (par->ch_layout.nb_channels < 1 || par->ch_layout.nb_channels > MAX_CHANNELS)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: audio stream %d: %d channels out of range (1..%d)", a->name,
                               idx, par->ch_layout.nb_channels, MAX_CHANNELS);
    if (!(a->par = avcodec_parameters_alloc()) || avcodec_parameters_copy(a->par, par) < 0)
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
    a->stream = idx;
    a->tb = fmt->streams[idx]->time_base;
    a->info.has_audio = 1;
    a->info.stream_index = idx;
    a->info.native_sample_rate = par->sample_rate;
    a->info.native_channels = par->ch_layout.nb_channels;
    a->info.sample_rate = s->sample_rate ? s->sample_rate : par->sample_rate;
    a->info.channels = s->channels ? 1 : par->ch_layout.nb_channels;
    snprintf(a->info.codec, sizeof a->info.codec, "%s", avcodec_get_name(par->codec_id));
    a->info.time_base_num = a->tb.num;
    a->info.time_base_den = a->tb.den;
    int st = find_a0(a, err);
    if (st != REEL_OK) return st;
    a->info.start_seconds = (double)a->info.start_pts * a->tb.num / a->tb.den;
    return REEL_OK;
}

int reel_audio_open(reel_audio **out, const char *path, const reel_audio_settings *s, reel_error *err)
{
    if (!out || !path) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_audio_open: NULL argument");
    *out = NULL;
    reel_audio_settings def;
    if (!s) {
        reel_audio_default_settings(&def);
        s = &def;
    }
    if (s->sample_rate < 0 || s->sample_rate > MAX_RATE)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: audio sample_rate %d out of range (0: native, 1..%d)",
                               path, s->sample_rate, MAX_RATE);
    if (s->channels != 0 && s->channels != 1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: audio channels %d: 0 (native) or 1 (their mean)", path,
                               s->channels);
    if (s->missing != REEL_AUDIO_MISSING_RAISE && s->missing != REEL_AUDIO_MISSING_ZEROS)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: audio missing %d: RAISE (0) or ZEROS (1)", path,
                               (int)s->missing);
    reel_audio *a = calloc(1, sizeof *a);
    if (!a) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
    snprintf(a->name, sizeof a->name, "%s", path);
    a->s = *s;
    a->stream = -1;
    int r = avformat_open_input(&a->fmt, path, NULL, NULL);
    if (r < 0) {
        char eb[AV_ERROR_MAX_STRING_SIZE];
        av_strerror(r, eb, sizeof eb);
        int status = reel__status_from_av(r);
        if (status == REEL_E_CORRUPT) status = REEL_E_NOT_VIDEO;
        reel_audio_close(&a);
        return reel__error_set(err, status, "%s: cannot open: %s", path, eb);
    }
    int st = REEL_OK;
    if (avformat_find_stream_info(a->fmt, NULL) < 0)
        st = reel__error_set(err, REEL_E_NOT_VIDEO, "%s: cannot read the streams", path);
    if (st == REEL_OK) st = open_stream(a, s, err);
    if (st != REEL_OK) {
        reel_audio_close(&a);
        return st;
    }
    *out = a;
    return REEL_OK;
}

/* ---- the grid without a file -------------------------------------------- */

int reel_audio_sample_at(int64_t ts, int num, int den, int64_t a0_pts, int a0_num, int a0_den, int sample_rate,
                         int64_t *sample, reel_error *err)
{
    if (!sample) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_audio_sample_at: NULL argument");
    if (num <= 0 || den <= 0 || a0_num <= 0 || a0_den <= 0 || sample_rate <= 0)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "reel_audio_sample_at: time bases %d/%d and %d/%d and the rate %d must be positive", num,
                               den, a0_num, a0_den, sample_rate);
    const __int128 d = (__int128)den * a0_den;
    const __int128 n = ((__int128)ts * num * a0_den - (__int128)a0_pts * a0_num * den) * (__int128)sample_rate;
    const __int128 q = round_half_up(n, d);
    if (q > INT64_MAX / 4 || q < -(INT64_MAX / 4))
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "reel_audio_sample_at: %lld x %d/%d s is out of range",
                               (long long)ts, num, den);
    *sample = (int64_t)q;
    return REEL_OK;
}
