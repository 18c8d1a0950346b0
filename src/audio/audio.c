/* audio.c: a video's audio for a window of its timeline, sample-exact
 * (reel/audio.h): opening (a file or an http(s)/s3 URL, read through
 * src/io), a0, the output grid s(t), the public calls and the damage a
 * window reports (audio/damage.h); the decode itself is audio_run.c's. */
#include "reel/audio.h"

#include <libavutil/opt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "decoder/decoder_for_loader.h"
#include "decoder/log.h"
#include "io/io_front.h"
#include "io/remote.h"

#define MAX_RATE            REEL_AUDIO_MAX_RATE
#define MAX_CHANNELS        REEL_AUDIO_MAX_CHANNELS
#define REEL_IO_BUFFER_SIZE (64 * 1024)

void reel_audio_default_settings(reel_audio_settings *s)
{
    if (!s) return;
    memset(s, 0, sizeof *s);
    s->stream_index = -1;
    s->missing = REEL_AUDIO_MISSING_RAISE;
    s->cache_bytes = REEL_AUDIO_CACHE_BYTES;
}

const reel_audio_info *reel_audio_get_info(const reel_audio *a)
{
    return a ? &a->info : NULL;
}

void reel_audio_close(reel_audio **a)
{
    if (!a || !*a) return;
    reel_audio *x = *a;
    reel__audio_run_free(x);
    swr_free(&x->swr);
    reel__audio_cache_free(x);
    avformat_close_input(&x->fmt);
    reel__audio_source_free(x);
    if (x->avio) av_freep(&x->avio->buffer);
    avio_context_free(&x->avio);
    reel__io_close(&x->io);
    avcodec_parameters_free(&x->par);
    free(x->scratch);
    free(x->hist);
    free(x->rs);
    free(x->marks);
    free(x->holes);
    reel__log_unregister_named(x); /* its contexts are freed: no more lines */
    free(x);
    *a = NULL;
}

int reel_audio_get_stats(const reel_audio *a, reel_audio_stats *out, reel_error *err)
{
    if (!a || !out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_audio_get_stats: NULL argument");
    *out = a->stats;
    return REEL_OK;
}

int reel_audio_get_remote_stats(const reel_audio *a, reel_remote_stats *out, reel_error *err)
{
    if (!a || !out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_audio_get_remote_stats: NULL argument");
    reel__remote_stats(a->io, out);
    return REEL_OK;
}

/* ---- the public calls ------------------------------------------------- */

/* s(t) on the output grid for t = ts * num / den seconds (the contract's
 * one definition: reel_audio_sample_at); -1 out of range. */
static int sample_at(const reel_audio *a, int64_t ts, int num, int den, int64_t *out)
{
    return reel_audio_sample_at(ts, num, den, a->info.start_pts, a->tb.num, a->tb.den, a->info.sample_rate, out,
                                NULL) == REEL_OK
               ? 0
               : -1;
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
        st = reel__audio_fill(a, lo, hi, dst, &end, err);
        if (st != REEL_OK) return st;
    }
    /* the stream covers the grid's [0, end) */
    const int64_t vlo = lo < 0 ? -lo : 0, vend = end == INT64_MAX ? hi : end;
    win.valid_lo = vlo > win.num_samples ? win.num_samples : vlo;
    win.valid_hi = vend - lo < win.valid_lo ? win.valid_lo : vend - lo > win.num_samples ? win.num_samples : vend - lo;
    if (!a->info.has_audio) win.valid_lo = win.valid_hi = 0;
    a->stream_lo = win.valid_lo;
    a->stream_hi = win.valid_hi;
    if (a->n_holes) reel__audio_damage(a, lo, hi, &win); /* REEL_CORRUPT_SKIP dropped packets */
    if (w) *w = win;
    return REEL_OK;
}

/* ---- opening ------------------------------------------------------------ */

/* Decodes the stream's first frame: a0 (its timestamp) and the native
 * rate and channels (the decoder's, which a header may not give: HE-AAC's
 * SBR doubles the core rate). The decoder and that frame stay as the first
 * run's start (a->at_a0): the container was just opened, its first packets
 * (those avformat_find_stream_info read are kept) come first, so the first
 * decode from a0 needs no reopen. */
static int find_a0(reel_audio *a, reel_error *err)
{
    int st = reel__audio_open_codec(a, &a->ctx, err);
    if (st != REEL_OK) return st;
    a->pkt = av_packet_alloc();
    a->frame = av_frame_alloc();
    if (!a->pkt || !a->frame) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
    int eof = 0, clean = 1; /* clean: no packet refused or failed (else the first run reads them again) */
    for (;;) {
        if (reel__audio_interrupted(a))
            return reel__error_set(err, REEL_E_CANCELLED, "%s: audio: interrupted while opening", a->name);
        if (!eof) {
            int r = av_read_frame(a->fmt, a->pkt);
            if (r < 0) {
                eof = 1;
                avcodec_send_packet(a->ctx, NULL);
            } else {
                if (a->pkt->stream_index == a->stream && avcodec_send_packet(a->ctx, a->pkt) < 0) clean = 0;
                av_packet_unref(a->pkt);
            }
        }
        int r = avcodec_receive_frame(a->ctx, a->frame);
        if (r >= 0) break;
        if (r == AVERROR_EOF || (eof && r == AVERROR(EAGAIN)))
            return reel__error_set(err, REEL_E_CORRUPT, "%s: the audio stream decodes to no samples", a->name);
        if (r != AVERROR(EAGAIN)) clean = 0;
    }
    const AVFrame *f = a->frame;
    const int64_t pts = reel__audio_frame_ts(f);
    const AVStream *s = a->fmt->streams[a->stream];
    a->info.start_pts = pts != AV_NOPTS_VALUE ? pts : s->start_time != AV_NOPTS_VALUE ? s->start_time : 0;
    if (f->sample_rate < 1 || f->sample_rate > MAX_RATE || f->ch_layout.nb_channels < 1 ||
        f->ch_layout.nb_channels > MAX_CHANNELS)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: audio stream %d decodes to %d Hz, %d channels (1..%d, 1..%d)",
                               a->name, a->stream, f->sample_rate, f->ch_layout.nb_channels, MAX_RATE, MAX_CHANNELS);
    a->info.native_sample_rate = f->sample_rate;
    a->info.native_channels = f->ch_layout.nb_channels;
    if (clean) {
        a->at_a0 = 1;
    } else {
        reel__audio_run_free(a); /* the first run reopens, meeting the damage under the corrupt policy */
    }
    return REEL_OK;
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
    for (unsigned i = 0; idx < 0 && i < fmt->nb_streams; i++) /* one it passed over (a rate of 0): named below */
        if (fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) idx = (int)i;
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
    reel__audio_discard_others(a);
    a->tb = fmt->streams[idx]->time_base;
    int st = reel__audio_plan(a, err); /* now the stream's packets alone */
    if (st != REEL_OK) return st;
    a->info.has_audio = 1;
    a->info.stream_index = idx;
    snprintf(a->info.codec, sizeof a->info.codec, "%s", avcodec_get_name(par->codec_id));
    a->info.time_base_num = a->tb.num;
    a->info.time_base_den = a->tb.den;
    st = find_a0(a, err); /* the native rate and channels too */
    if (st != REEL_OK) return st;
    a->info.sample_rate = s->sample_rate ? s->sample_rate : a->info.native_sample_rate;
    a->info.channels = s->channels ? 1 : a->info.native_channels;
    reel__audio_run_init(a);
    reel__audio_cache_init(a);
    a->info.start_seconds = (double)a->info.start_pts * a->tb.num / a->tb.den;
    return REEL_OK;
}

/* 1 when the container's header names what opening needs, so that
 * avformat_find_stream_info (which decodes the first frames of every stream)
 * can be skipped: an mp4/mov with one audio stream whose codec, rate and
 * channels it gives, and a video stream. The rate and channels used are the
 * decoder's anyway (find_a0), and the packets are the same either way. */
static int header_suffices(const AVFormatContext *fmt)
{
    if (strncmp(fmt->iformat->name, "mov,", 4) != 0) return 0;
    int audio = 0, video = 0;
    for (unsigned i = 0; i < fmt->nb_streams; i++) {
        const AVCodecParameters *p = fmt->streams[i]->codecpar;
        if (p->codec_type == AVMEDIA_TYPE_AUDIO) {
            if (p->codec_id == AV_CODEC_ID_NONE || p->sample_rate < 1 || p->ch_layout.nb_channels < 1) return 0;
            audio++;
        } else if (p->codec_type == AVMEDIA_TYPE_VIDEO && p->codec_id != AV_CODEC_ID_NONE && p->width > 0) {
            video++;
        }
    }
    return audio == 1 && video > 0;
}

/* reel_audio_open for `path` known to be remote (remote != 0: an
 * http(s)/s3 URL read through src/io by byte ranges) or a local file.
 * `share`: NULL, or the remote object of the same video that its decoder
 * reads (reel__decoder_source): the audio reads through a share of it
 * (reel__io_share: the bytes it holds are not fetched again, the object's
 * settings apply; s->remote_stats gets the audio's own requests) and
 * `path` and `remote` are not used. */
static int audio_open_as(reel_audio **out, const char *path, int remote, struct reel__io *share,
                         const reel_audio_settings *s, reel_error *err)
{
    if (share) {
        path = NULL; /* the object's name, already redacted */
        remote = 1;
    }
    if (!out || (!path && !share)) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_audio_open: NULL argument");
    *out = NULL;
    reel_audio_settings def;
    if (!s) {
        reel_audio_default_settings(&def);
        s = &def;
    }
    char shown[1024]; /* a URL's name without its user info and query string */
    if (share)
        snprintf(shown, sizeof shown, "%s", reel__io_name(share));
    else if (remote)
        reel_url_redact(path, shown, sizeof shown);
    else
        snprintf(shown, sizeof shown, "%s", path);
    if (s->sample_rate < 0 || s->sample_rate > MAX_RATE)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: audio sample_rate %d out of range (0: native, 1..%d)",
                               shown, s->sample_rate, MAX_RATE);
    if (s->channels != 0 && s->channels != 1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: audio channels %d: 0 (native) or 1 (their mean)", shown,
                               s->channels);
    if (s->missing != REEL_AUDIO_MISSING_RAISE && s->missing != REEL_AUDIO_MISSING_ZEROS)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: audio missing %d: RAISE (0) or ZEROS (1)", shown,
                               (int)s->missing);
    if (s->corrupt_policy != REEL_CORRUPT_FAIL && s->corrupt_policy != REEL_CORRUPT_SKIP)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: audio corrupt_policy %d: FAIL (0) or SKIP (1)", shown,
                               (int)s->corrupt_policy);
    if (s->interrupt && s->interrupt(s->interrupt_opaque))
        return reel__error_set(err, REEL_E_CANCELLED, "%s: audio: interrupted while opening", shown);
    if (s->cache_bytes < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: audio cache_bytes %lld: 0 (none) or more", shown,
                               (long long)s->cache_bytes);
    reel__io_options o;
    reel__io_default_options(&o);
    o.interrupt = s->interrupt;
    o.interrupt_opaque = s->interrupt_opaque;
    o.remote = s->remote;
    o.tally = s->remote_stats;
    reel__io *io = NULL;
    int st = share ? reel__io_share(share, &o, &io, err) : reel__io_open_as(&io, path, remote, &o, err);
    if (st != REEL_OK) return st;
    reel_audio *a = calloc(1, sizeof *a);
    if (!a) {
        reel__io_close(&io);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", shown);
    }
    a->io = io;
    snprintf(a->name, sizeof a->name, "%s", reel__io_name(io));
    reel__log_register_named(a, a->name); /* FFmpeg's lines of its contexts (opaque a) name the file */
    a->s = *s;
    a->s.remote = NULL; /* src/io holds what it needs */
    a->s.remote_stats = NULL;
    a->stream = -1;
    a->end = a->end_native = -1;
    a->remote = remote;
    reel_remote_settings rdef; /* the plan's requests: as the hinted ranges of src/io (reel__io_will_read) */
    const reel_remote_settings *rs = share ? io->opt.remote : s->remote; /* shared: the object's */
    if (!rs || rs->readahead_min == 0) {
        reel_remote_default_settings(&rdef);
        rs = &rdef;
    }
    a->gap_max = (int64_t)rs->readahead_min;
    a->fetch_max = (int64_t)(rs->readahead_max > rs->readahead_min ? rs->readahead_max : rs->readahead_min);
    reel_error_clear(&a->io_err);
    uint8_t *buf = av_malloc(REEL_IO_BUFFER_SIZE);
    if (buf) a->avio = reel__audio_avio(a, buf, REEL_IO_BUFFER_SIZE);
    if (!a->avio) {
        av_free(buf);
        reel_audio_close(&a);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", shown);
    }
    a->keeping = remote; /* the header, read once: the reopens from a0 read it from memory */
    reel__audio_boxes(a);
    int r = reel__audio_open_container(a);
    a->keeping = 0;
    if (r < 0) {
        char eb[AV_ERROR_MAX_STRING_SIZE];
        av_strerror(r, eb, sizeof eb);
        int status = reel__status_from_av(r);
        if (status == REEL_E_CORRUPT) status = REEL_E_NOT_VIDEO;
        if (a->io_err.status != REEL_OK) {
            st = reel__error_set(err, a->io_err.status, "%s", a->io_err.message);
        } else {
            st = reel__error_set(err, status, "%s: cannot open: %s", a->name, eb);
        }
        reel_audio_close(&a);
        return st;
    }
    /* a remote mp4/mov: the stream probe reads the audio streams' packets
     * alone, by their ranges (reel__audio_plan), not the video's bytes; an
     * mp4 whose header says all needs no probe (header_suffices) */
    st = reel__audio_plan(a, err);
    if (st == REEL_OK && !header_suffices(a->fmt) && avformat_find_stream_info(a->fmt, NULL) < 0)
        st = reel__audio_interrupted(a)
                 ? reel__error_set(err, REEL_E_CANCELLED, "%s: audio: interrupted while opening", a->name)
                 : reel__error_set(err, REEL_E_NOT_VIDEO, "%s: cannot read the streams", a->name);
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
    const __int128 q = reel__audio_round_half_up(n, d);
    if (q > INT64_MAX / 4 || q < -(INT64_MAX / 4))
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "reel_audio_sample_at: %lld x %d/%d s is out of range",
                               (long long)ts, num, den);
    *sample = (int64_t)q;
    return REEL_OK;
}

/* The public entry takes a bare path: the one place (for a path that comes
 * from no dataset entry) that asks whether it is remote. */
int reel_audio_open(reel_audio **out, const char *path, const reel_audio_settings *s, reel_error *err)
{
    return audio_open_as(out, path, path ? reel__io_is_remote(path) : 0, NULL, s, err);
}

int reel_decoder_open_audio(const reel_decoder *dec, const reel_audio_settings *s, reel_audio **out, reel_error *err)
{
    if (out) *out = NULL;
    if (!dec || !out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_open_audio: NULL argument");
    struct reel__io *share = NULL;
    const char *path = NULL;
    const char *name = reel__decoder_source(dec, &share, &path);
    if (!share && !path)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: audio: the decoder reads a caller's bytes (reel_io or memory), not a path or a "
                               "URL: open the audio with reel_audio_open",
                               name);
    return audio_open_as(out, path, 0, share, s, err);
}

/* ---- the damage a window reports -------------------------------------- */

/* Hole h's span on the output grid (the resampler mixes `reach` native
 * samples on each side of a gap into it). */
static reel__audio_span span_of(const reel_audio *a, const reel__audio_hole *h)
{
    const int64_t sr = a->info.native_sample_rate, r = a->info.sample_rate, reach = reel__audio_resample_reach(a);
    int64_t o0 = h->lo, o1 = h->hi;
    if (reach) {
        o0 = (int64_t)reel__audio_floor_div((__int128)(h->lo - reach) * r, sr);
        o1 = h->hi > h->lo ? (int64_t)-reel__audio_floor_div(-(__int128)(h->hi + reach) * r, sr) : o0;
    }
    return (reel__audio_span){ o0, o1, h->packets };
}

int reel__audio_span_touches(const reel__audio_span *p, int64_t lo, int64_t hi)
{
    return p->hi > p->lo ? p->hi > lo && p->lo < hi : p->lo >= lo && p->lo < hi;
}

typedef reel__audio_span (*span_fn)(const void *ctx, size_t i);

/* What the window [lo, hi) says of spans get(ctx, 0 .. n - 1) (reel__audio_damage_of). */
static void damage_run(span_fn get, const void *ctx, size_t n, int64_t lo, int64_t hi, reel_audio_window *w)
{
    const int64_t vlo = w->valid_lo, vhi = w->valid_hi; /* the stream's part, window-relative */
    int64_t run_lo = vlo, run_hi = vlo, at = vlo;       /* the longest clean run; where the next starts */
    int64_t cover = vlo;                                /* missing samples counted up to here */
    w->missing = w->missing_lo = w->missing_hi = w->corrupt_packets = 0;
    for (size_t i = 0; i < n; i++) {
        const reel__audio_span p = get(ctx, i);
        if (!reel__audio_span_touches(&p, lo, hi)) continue;
        w->corrupt_packets += p.packets;
        int64_t m0 = p.lo - lo > vlo ? p.lo - lo : vlo, m1 = p.hi - lo < vhi ? p.hi - lo : vhi;
        if (m0 < cover) m0 = cover; /* spans overlap where the resampler reaches across two */
        if (m1 <= m0) continue;
        if (w->missing == 0) w->missing_lo = m0;
        w->missing_hi = m1;
        w->missing += m1 - m0;
        cover = m1;
        if (m0 - at > run_hi - run_lo) {
            run_lo = at;
            run_hi = m0;
        }
        at = m1;
    }
    if (w->missing == 0) return;
    if (vhi - at > run_hi - run_lo) {
        run_lo = at;
        run_hi = vhi;
    }
    w->valid_lo = run_lo;
    w->valid_hi = run_hi;
}

static reel__audio_span span_at(const void *ctx, size_t i)
{
    return ((const reel__audio_span *)ctx)[i];
}

static reel__audio_span hole_at(const void *ctx, size_t i)
{
    const reel_audio *a = ctx;
    return span_of(a, &a->holes[i]);
}

void reel__audio_damage_of(const reel__audio_span *s, size_t n, int64_t lo, int64_t hi, reel_audio_window *w)
{
    damage_run(span_at, s, n, lo, hi, w);
}

void reel__audio_damage(const reel_audio *a, int64_t lo, int64_t hi, reel_audio_window *w)
{
    damage_run(hole_at, a, a->n_holes, lo, hi, w);
}

/* What rejected() says of hole h's first packet under REEL_CORRUPT_FAIL,
 * without the file's name, appended to text[cap] as a line. */
static void hole_line(const reel_audio *a, const reel__audio_hole *h, char *text, size_t cap)
{
    char eb[AV_ERROR_MAX_STRING_SIZE], at[48] = "";
    av_strerror(h->why, eb, sizeof eb);
    if (h->ts != AV_NOPTS_VALUE) snprintf(at, sizeof at, " at %.6f s", (double)h->ts * a->tb.num / a->tb.den);
    const size_t used = strlen(text);
    snprintf(text + used, cap - used, "corrupt audio packet%s: %s\n", at, eb);
}

int reel__audio_damage_spans(const reel_audio *a, int64_t lo, int64_t hi, reel__audio_span **out, size_t *n,
                             int64_t *stream_lo, int64_t *stream_hi, char **lines)
{
    *out = NULL;
    *n = 0;
    if (lines) *lines = NULL;
    *stream_lo = a->stream_lo;
    *stream_hi = a->stream_hi;
    size_t k = 0;
    for (size_t i = 0; i < a->n_holes; i++) {
        reel__audio_span p = span_of(a, &a->holes[i]);
        k += reel__audio_span_touches(&p, lo, hi);
    }
    if (!k) return 0;
    reel__audio_span *s = malloc(k * sizeof *s);
    const size_t cap = k * (AV_ERROR_MAX_STRING_SIZE + 80) + 1;
    char *text = lines ? calloc(cap, 1) : NULL;
    if (!s || (lines && !text)) {
        free(s);
        free(text);
        return -1;
    }
    k = 0;
    for (size_t i = 0; i < a->n_holes; i++) {
        reel__audio_span p = span_of(a, &a->holes[i]);
        if (!reel__audio_span_touches(&p, lo, hi)) continue;
        s[k++] = p;
        if (text) hole_line(a, &a->holes[i], text, cap);
    }
    if (lines) *lines = text;
    *out = s;
    *n = k;
    return 0;
}
