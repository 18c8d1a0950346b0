/* audio_run.c: the audio object's running decode (audio_internal.h): one
 * codec, resampler and history that go on from call to call, placing each
 * frame on the output grid (FFmpeg's 1 ms async rule), and its restarts:
 * from a0, or, for codecs that decode the same after a seek, from a mark a
 * previous run left, with the resampler restarted on an aligned index; the
 * damage it meets (the corrupt policy, the holes; audio.c reports them); a
 * window the cache (audio_cache.c) holds is served without decoding. */
#include <libavutil/channel_layout.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h"

/* A run that restarted from a mark and did not meet the mark's frame. */
#define LOST 1

static int av_fail(reel_audio *a, int status, const char *what, int r, reel_error *err)
{
    char eb[AV_ERROR_MAX_STRING_SIZE];
    av_strerror(r, eb, sizeof eb);
    if (a->io_err.status != REEL_OK && a->io_err.message[0]) /* the byte source said why */
        return reel__error_set(err, a->io_err.status, "%s", a->io_err.message);
    return reel__error_set(err, status, "%s: %s: %s", a->name, what, eb);
}

int64_t reel__audio_frame_ts(const AVFrame *f)
{
    return f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp : f->pts;
}

int reel__audio_open_codec(reel_audio *a, AVCodecContext **out, reel_error *err)
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
        ctx->opaque = a; /* its log lines name the file (decoder/log.h) */
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

void reel__audio_run_init(reel_audio *a)
{
    const enum AVCodecID id = a->par->codec_id;
    const AVCodecDescriptor *d = avcodec_descriptor_get(id);
    /* MP3, MP2, Opus, FLAC and PCM decode the same samples after a seek with
     * preroll; AAC does not: libavcodec's decoder draws its noise
     * substitution from a generator that no flush or seek resets */
    a->seekable = id == AV_CODEC_ID_MP3 || id == AV_CODEC_ID_MP2 || id == AV_CODEC_ID_OPUS || id == AV_CODEC_ID_FLAC ||
                  (d && (d->props & AV_CODEC_PROP_INTRA_ONLY) && id != AV_CODEC_ID_AAC);
    const int64_t sr = a->info.native_sample_rate;
    /* 200 ms, or what the container asks if more; Opus 1 s: its decoder's
     * filters converge to the bit in about 400 ms (measured; 200 ms is 7e-6 off) */
    a->preroll = id == AV_CODEC_ID_OPUS ? sr : sr / 5;
    if (a->par->seek_preroll > a->preroll) a->preroll = a->par->seek_preroll;
    const int64_t r = a->info.sample_rate;
    int64_t g = sr, h = r; /* gcd */
    while (h) {
        int64_t t = g % h;
        g = h;
        h = t;
    }
    a->align = a->info.sample_rate == a->info.native_sample_rate ? 1 : sr / g;
    a->end = a->end_native = -1;
}

void reel__audio_run_free(reel_audio *a)
{
    a->at_a0 = a->pending = 0;
    avcodec_free_context(&a->ctx); /* the resampler stays: each run sets it up again */
    av_packet_free(&a->pkt);
    av_frame_free(&a->frame);
}

/* ---- frames into float planes ------------------------------------------- */

/* A decoded frame as float planes, channel after channel (FFmpeg's
 * swresample conversions: s16 / 2^15, s32 / 2^31, (u8 - 128) / 2^7). */
static int frame_to_planes(const AVFrame *f, int ch, float *dst)
{
    const int n = f->nb_samples;
    const enum AVSampleFormat fmt = (enum AVSampleFormat)f->format;
    const enum AVSampleFormat packed = av_get_packed_sample_fmt(fmt);
    const int planar = av_sample_fmt_is_planar(fmt);
    const size_t step = planar ? 1 : (size_t)ch;
    for (int c = 0; c < ch; c++) {
        float *o = dst + (size_t)c * (size_t)n;
        const uint8_t *p = f->extended_data[planar ? c : 0];
        const size_t off = planar ? 0 : (size_t)c;
        switch (packed) { /* one loop per format: the decoders' usual float planes are a copy */
        case AV_SAMPLE_FMT_FLT:
            if (planar) {
                memcpy(o, p, (size_t)n * sizeof(float));
            } else {
                for (int i = 0; i < n; i++) o[i] = ((const float *)p)[(size_t)i * step + off];
            }
            break;
        case AV_SAMPLE_FMT_DBL:
            for (int i = 0; i < n; i++) o[i] = (float)((const double *)p)[(size_t)i * step + off];
            break;
        case AV_SAMPLE_FMT_S16:
            for (int i = 0; i < n; i++) o[i] = (float)((const int16_t *)p)[(size_t)i * step + off] * (1.0f / (1 << 15));
            break;
        case AV_SAMPLE_FMT_S32:
            for (int i = 0; i < n; i++)
                o[i] = (float)((const int32_t *)p)[(size_t)i * step + off] * (1.0f / (1U << 31));
            break;
        case AV_SAMPLE_FMT_U8:
            for (int i = 0; i < n; i++)
                o[i] = (float)(((const uint8_t *)p)[(size_t)i * step + off] - 0x80) * (1.0f / (1 << 7));
            break;
        default: return -1;
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

/* mix_to_mono of two float planes, read where they are; four at a time
 * (the same products and sums, lane by lane). */
typedef float reel__v4f __attribute__((vector_size(16)));

static void mix_stereo(float *restrict dst, const float *restrict l, const float *restrict r, int n)
{
    const reel__v4f g = { 0.5f, 0.5f, 0.5f, 0.5f };
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        reel__v4f x, y;
        memcpy(&x, l + i, sizeof x);
        memcpy(&y, r + i, sizeof y);
        reel__v4f v = g * x;
        v += g * y;
        memcpy(dst + i, &v, sizeof v);
    }
    for (; i < n; i++) {
        float v = 0.5f * l[i];
        v += 0.5f * r[i];
        dst[i] = v;
    }
}

/* ---- the output side: the window and the history ------------------------ */

/* n output samples (planes of `stride`) at out_pos: the window's part into
 * its destination, all of them into the history. */
static void put_out(reel_audio *a, const float *planes, int n, int stride)
{
    const int ch = a->info.channels;
    reel__audio_cache_put(a, planes, n, stride, a->out_pos);
    const int64_t S = a->win_hi - a->win_lo;
    const int64_t from = a->out_pos > a->win_lo ? a->out_pos : a->win_lo;
    const int64_t to = a->out_pos + n < a->win_hi ? a->out_pos + n : a->win_hi;
    for (int c = 0; c < ch && from < to && a->win_dst; c++)
        memcpy(a->win_dst + (size_t)c * (size_t)S + (size_t)(from - a->win_lo),
               planes + (size_t)c * (size_t)stride + (size_t)(from - a->out_pos), (size_t)(to - from) * sizeof(float));
    /* the history keeps between half its room and all of it */
    const int cap = a->hist_cap;
    int64_t have = a->out_pos - a->hist_lo;
    if (n >= cap) {
        for (int c = 0; c < ch; c++)
            memcpy(a->hist + (size_t)c * (size_t)cap, planes + (size_t)c * (size_t)stride + (size_t)(n - cap),
                   (size_t)cap * sizeof(float));
        a->out_pos += n;
        a->hist_lo = a->out_pos - cap;
        return;
    }
    if (have + n > cap) {
        int64_t keep = have < cap / 2 ? have : cap / 2;
        if (keep + n > cap) keep = cap - n;
        for (int c = 0; c < ch; c++) {
            float *h = a->hist + (size_t)c * (size_t)cap;
            memmove(h, h + (have - keep), (size_t)keep * sizeof(float));
        }
        a->hist_lo = a->out_pos - keep;
        have = keep;
    }
    for (int c = 0; c < ch; c++)
        memcpy(a->hist + (size_t)c * (size_t)cap + (size_t)have, planes + (size_t)c * (size_t)stride,
               (size_t)n * sizeof(float));
    a->out_pos += n;
}

/* n native samples (planes of `stride`; zeros when planes is NULL; the
 * resampler's last samples when n is 0 too) to the output, through the
 * resampler when there is one. */
static int feed_out(reel_audio *a, const float *planes, int n, int stride)
{
    const int ch = a->info.channels;
    if (!a->swr) {
        if (planes) {
            put_out(a, planes, n, stride);
            return REEL_OK;
        }
        float *zeros = calloc((size_t)(n > 0 ? n : 1) * (size_t)ch, sizeof(float));
        if (!zeros) return REEL_E_NOMEM;
        put_out(a, zeros, n, n);
        free(zeros);
        return REEL_OK;
    }
    float *zeros = NULL; /* a gap goes through the resampler like samples */
    if (!planes && n > 0) {
        zeros = calloc((size_t)n * (size_t)ch, sizeof(float));
        if (!zeros) return REEL_E_NOMEM;
        planes = zeros;
        stride = n;
    }
    const uint8_t *in[REEL_AUDIO_MAX_CHANNELS];
    for (int c = 0; c < ch; c++) in[c] = planes ? (const uint8_t *)(planes + (size_t)c * (size_t)stride) : NULL;
    int want = swr_get_out_samples(a->swr, n);
    if (want > a->rs_cap) {
        float *p = realloc(a->rs, (size_t)want * (size_t)ch * sizeof(float));
        if (!p) {
            free(zeros);
            return REEL_E_NOMEM;
        }
        a->rs = p;
        a->rs_cap = want;
    }
    uint8_t *out[REEL_AUDIO_MAX_CHANNELS];
    for (int c = 0; c < ch; c++) out[c] = (uint8_t *)(a->rs + (size_t)c * (size_t)a->rs_cap);
    int got = swr_convert(a->swr, out, a->rs_cap, planes ? in : NULL, planes ? n : 0);
    free(zeros);
    if (got < 0) return REEL_E_INTERNAL;
    if (got > 0) put_out(a, a->rs, got, a->rs_cap);
    return got;
}

/* Native samples [start, start + n) to the output, those before feed_from
 * dropped (a restart's resampler begins there). */
static int feed_native(reel_audio *a, const float *planes, int64_t start, int64_t n, int stride)
{
    if (start + n <= a->feed_from) return REEL_OK;
    if (start < a->feed_from) {
        const int64_t d = a->feed_from - start;
        if (planes) planes += d;
        n -= d;
    }
    while (n > 0) {
        const int part = n > 1 << 20 ? 1 << 20 : (int)n;
        int st = feed_out(a, planes, part, stride);
        if (st < 0) return st;
        if (planes) planes += part;
        n -= part;
    }
    return REEL_OK;
}

/* Native samples from a0 to the stream time `ts`. */
static int64_t native_pos(const reel_audio *a, int64_t ts)
{
    return (int64_t)reel__audio_round_half_up(
        (__int128)(ts - a->info.start_pts) * a->tb.num * a->info.native_sample_rate, a->tb.den);
}

/* Output samples after a resampler's restart that differ from a
 * whole-stream resample (10 ms; none at the native rate). */
static int64_t warmup(const reel_audio *a)
{
    return a->info.sample_rate != a->info.native_sample_rate ? a->info.sample_rate / 100 + 1 : 0;
}

/* The output starts again at native index `from` (0: a0, a whole-stream
 * start, exact from its first sample). */
static void output_from(reel_audio *a, int64_t from)
{
    a->feed_from = from;
    a->out_pos = a->hist_lo = (int64_t)((__int128)from * a->info.sample_rate / a->info.native_sample_rate);
    a->exact_lo = from > 0 ? a->out_pos + warmup(a) : 0;
}

/* The history's first exact sample. */
static int64_t hist_exact(const reel_audio *a)
{
    return a->hist_lo > a->exact_lo ? a->hist_lo : a->exact_lo;
}

static int add_mark(reel_audio *a, int64_t ts, int64_t pos)
{
    if (a->n_marks && pos < a->marks[a->n_marks - 1].pos + a->info.native_sample_rate / 2) return REEL_OK;
    if (!a->n_marks && pos < a->info.native_sample_rate / 2) return REEL_OK;
    if (a->n_marks == a->marks_cap) {
        size_t cap = a->marks_cap ? a->marks_cap * 2 : 256;
        reel__audio_mark *m = realloc(a->marks, cap * sizeof *m);
        if (!m) return REEL_E_NOMEM;
        a->marks = m;
        a->marks_cap = cap;
    }
    a->marks[a->n_marks++] = (reel__audio_mark){ ts, pos };
    return REEL_OK;
}

/* Records a hole (dropped packets, zeros at native [lo, hi)) once: a run
 * that decodes there again finds the same one. */
static int add_hole(reel_audio *a, int64_t lo, int64_t hi, int64_t packets)
{
    size_t i = a->n_holes;
    while (i > 0 && a->holes[i - 1].lo > lo) i--;
    if (i > 0 && a->holes[i - 1].lo == lo) return REEL_OK; /* found before */
    if (a->n_holes == a->holes_cap) {
        size_t cap = a->holes_cap ? a->holes_cap * 2 : 16;
        reel__audio_hole *h = realloc(a->holes, cap * sizeof *h);
        if (!h) return REEL_E_NOMEM;
        a->holes = h;
        a->holes_cap = cap;
    }
    memmove(a->holes + i + 1, a->holes + i, (a->n_holes - i) * sizeof *a->holes);
    a->holes[i] = (reel__audio_hole){ lo, hi, packets, a->drop_ts, a->drop_why };
    a->n_holes++;
    return REEL_OK;
}

/* Native samples on each side of a gap whose resampled output the gap
 * reaches: libswresample's filter spans ceil(32 / (0.97 x rate / native))
 * native samples (32 when upsampling); half of it, rounded up generously. */
int64_t reel__audio_resample_reach(const reel_audio *a)
{
    if (a->info.sample_rate == a->info.native_sample_rate) return 0;
    const int64_t sr = a->info.native_sample_rate, r = a->info.sample_rate;
    return 32 * ((sr + r - 1) / r);
}

/* One decoded frame onto the native grid (the 1 ms rule), mixed, to the
 * output; a restarted run's frames before its mark only warm the decoder. */
static int place_frame(reel_audio *a, const AVFrame *f, reel_error *err)
{
    const int nch = a->info.native_channels, n = f->nb_samples;
    const int64_t ts = reel__audio_frame_ts(f);
    if (a->waiting) {
        if (ts == AV_NOPTS_VALUE || ts > a->resume.ts) return LOST;
        if (ts < a->resume.ts) return REEL_OK;
        a->waiting = 0;
        a->pos = a->resume.pos;
    }
    if (f->ch_layout.nb_channels != nch || f->sample_rate != a->info.native_sample_rate)
        return reel__error_set(err, REEL_E_UNSUPPORTED_CODEC,
                               "%s: the audio changes format mid-stream (%d Hz, %d channels, was %d Hz, %d)", a->name,
                               f->sample_rate, f->ch_layout.nb_channels, a->info.native_sample_rate, nch);
    if (a->seekable && ts != AV_NOPTS_VALUE && add_mark(a, ts, a->pos) != REEL_OK)
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
    int skip = 0;
    if (ts != AV_NOPTS_VALUE) {
        const int64_t own = native_pos(a, ts), tol = a->info.native_sample_rate / 1000;
        if (own - a->pos > tol) { /* a gap: zeros up to the frame's own place */
            if ((a->dropped && add_hole(a, a->pos, own, a->dropped) != REEL_OK) ||
                feed_native(a, NULL, a->pos, own - a->pos, 0) != REEL_OK)
                return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
            a->dropped = 0;
            a->pos = own;
        } else if (a->pos - own > tol) { /* an overlap: its first samples go */
            skip = a->pos - own >= n ? n : (int)(a->pos - own);
        }
    }
    if (a->dropped) { /* dropped packets that left no gap */
        if (add_hole(a, a->pos, a->pos, a->dropped) != REEL_OK)
            return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
        a->dropped = 0;
    }
    if (skip >= n) return REEL_OK;
    if (a->pos + (n - skip) <= a->feed_from) { /* before the output starts: placed, not converted */
        a->pos += n - skip;
        return REEL_OK;
    }
    size_t need = (size_t)n * (size_t)nch;
    if (need > a->scratch_cap) {
        float *p = realloc(a->scratch, need * sizeof(float));
        if (!p) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
        a->scratch = p;
        a->scratch_cap = need;
    }
    if (a->info.channels == 1 && nch == 2 && f->format == AV_SAMPLE_FMT_FLTP) { /* AAC's stereo: one pass */
        mix_stereo(a->scratch, (const float *)f->extended_data[0], (const float *)f->extended_data[1], n);
    } else {
        if (frame_to_planes(f, nch, a->scratch) < 0)
            return reel__error_set(err, REEL_E_UNSUPPORTED_CODEC, "%s: audio sample format %s not handled", a->name,
                                   av_get_sample_fmt_name((enum AVSampleFormat)f->format));
        if (a->info.channels == 1) mix_to_mono(a->scratch, nch, n);
    }
    int st = feed_native(a, a->scratch + skip, a->pos, n - skip, n);
    if (st != REEL_OK) return reel__error_set(err, st, "%s: resampling failed", a->name);
    a->pos += n - skip;
    return REEL_OK;
}

/* ---- starting and advancing a run --------------------------------------- */

/* A fresh resampler for the run (none at the native rate). */
static int new_resampler(reel_audio *a, reel_error *err)
{
    if (a->info.sample_rate == a->info.native_sample_rate) return REEL_OK;
    if (reel__audio_resampler(a, &a->swr) != REEL_OK)
        return reel__error_set(err, REEL_E_INTERNAL, "%s: cannot set up resampling %d -> %d Hz", a->name,
                               a->info.native_sample_rate, a->info.sample_rate);
    return REEL_OK;
}

/* A run's decoder (a fresh one, unless `kept`: the open's, at a0), its
 * resampler and history. */
static int start_run(reel_audio *a, int kept, reel_error *err)
{
    int st;
    if (!kept) {
        reel__audio_run_free(a);
        st = reel__audio_open_codec(a, &a->ctx, err);
        if (st != REEL_OK) return st;
        a->pkt = av_packet_alloc();
        a->frame = av_frame_alloc();
        if (!a->pkt || !a->frame) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
    }
    const int ch = a->info.channels;
    st = new_resampler(a, err);
    if (st != REEL_OK) return st;
    if (!a->hist) {
        int64_t cap = 4 * (int64_t)a->info.sample_rate; /* 4 s, within 32 MB */
        if (cap < 4096) cap = 4096;
        if (cap * ch > (8 << 20)) cap = (8 << 20) / ch;
        a->hist = malloc((size_t)cap * (size_t)ch * sizeof(float));
        if (!a->hist) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
        a->hist_cap = (int)cap;
    }
    a->eof = 0;
    a->waiting = 0;
    a->dropped = 0;
    a->last_pkt_ts = AV_NOPTS_VALUE;
    return REEL_OK;
}

/* A run from a0 whose output starts at native index `from` (a multiple of
 * align: the resampler restarted there reproduces the whole stream's): on
 * the open's decoder, still at a0, the first time; else from the first
 * byte again. */
static int start_at_a0(reel_audio *a, int64_t from, reel_error *err)
{
    const int kept = a->at_a0;
    int st = start_run(a, kept, err);
    if (st == REEL_OK && !kept) st = reel__audio_reopen(a, err);
    if (st != REEL_OK) {
        reel__audio_run_free(a);
        return st;
    }
    a->at_a0 = 0;
    a->pending = kept;
    a->pos = 0;
    output_from(a, from);
    a->stats.runs_from_a0++;
    return REEL_OK;
}

/* The native index where a restart from mark m feeds the output from, and
 * its output index. */
static int64_t mark_feed(const reel_audio *a, const reel__audio_mark *m, int64_t *out_index)
{
    const int64_t k = (m->pos + a->align - 1) / a->align * a->align;
    *out_index = (int64_t)((__int128)k * a->info.sample_rate / a->info.native_sample_rate);
    return k;
}

/* The last mark a restart can use for a window from output sample lo: the
 * resampler's restart 10 ms (of output) or more before it. */
static const reel__audio_mark *mark_for(const reel_audio *a, int64_t lo)
{
    if (!a->seekable) return NULL;
    const int64_t pre = a->info.sample_rate != a->info.native_sample_rate ? a->info.sample_rate / 100 + 1 : 0;
    const reel__audio_mark *best = NULL;
    size_t lo_i = 0, hi_i = a->n_marks; /* the last with its output index <= lo - pre */
    while (lo_i < hi_i) {
        size_t mid = lo_i + (hi_i - lo_i) / 2;
        int64_t o;
        mark_feed(a, &a->marks[mid], &o);
        if (o <= lo - pre) {
            best = &a->marks[mid];
            lo_i = mid + 1;
        } else {
            hi_i = mid;
        }
    }
    return best;
}

static int start_at_mark(reel_audio *a, const reel__audio_mark *m, reel_error *err)
{
    const reel__audio_mark mk = *m;
    int st = start_run(a, 0, err);
    if (st != REEL_OK) {
        reel__audio_run_free(a);
        return st;
    }
    const int64_t pre =
        (int64_t)((__int128)a->preroll * a->tb.den / ((__int128)a->tb.num * a->info.native_sample_rate)) + 1;
    if (av_seek_frame(a->fmt, a->stream, mk.ts - pre, AVSEEK_FLAG_BACKWARD) < 0) {
        reel__audio_run_free(a);
        return LOST;
    }
    a->resume = mk;
    a->waiting = 1;
    a->pos = mk.pos;
    int64_t o;
    output_from(a, mark_feed(a, &mk, &o));
    a->stats.runs_from_mark++;
    return REEL_OK;
}

/* A packet the codec rejected (its decode's AVERROR r): dropped under
 * REEL_CORRUPT_SKIP (its samples become the next frame's gap), else the
 * call fails naming the packet's time and the codec's reason. While a
 * restart warms up, ignored (its run from a0 met it). */
static int rejected(reel_audio *a, int r, int64_t ts, reel_error *err)
{
    if (a->waiting) return REEL_OK;
    if (a->s.corrupt_policy == REEL_CORRUPT_SKIP && r != AVERROR(ENOMEM)) {
        if (!a->dropped++) { /* the hole's first packet: a store's FAIL message names it */
            a->drop_ts = ts;
            a->drop_why = r;
        }
        return REEL_OK;
    }
    char what[96] = "corrupt audio packet";
    if (ts != AV_NOPTS_VALUE)
        snprintf(what, sizeof what, "corrupt audio packet at %.6f s", (double)ts * a->tb.num / a->tb.den);
    return av_fail(a, r == AVERROR(ENOMEM) ? REEL_E_NOMEM : REEL_E_CORRUPT, what, r, err);
}

/* Decodes on until the output reaches `hi` or the stream ends (a->eof 3,
 * a->end set); under REEL_CORRUPT_SKIP far enough past it that every hole
 * whose resampled span reaches into [.., hi) was met (the report does not
 * depend on where a run stopped; FAIL finds no holes). */
static int advance(reel_audio *a, int64_t hi, reel_error *err)
{
    const int64_t reach = a->s.corrupt_policy == REEL_CORRUPT_SKIP ? reel__audio_resample_reach(a) : 0;
    const int64_t hi_native =
        reach ? (int64_t)(((__int128)hi * a->info.native_sample_rate + a->info.sample_rate - 1) / a->info.sample_rate) +
                    reach
              : 0;
    if (a->pending) { /* the open's first frame */
        a->pending = 0;
        int st = place_frame(a, a->frame, err);
        av_frame_unref(a->frame);
        if (st != REEL_OK) return st;
    }
    while ((a->out_pos < hi || a->pos < hi_native) && a->eof < 3) {
        int r = avcodec_receive_frame(a->ctx, a->frame);
        if (r >= 0) {
            int st = place_frame(a, a->frame, err);
            av_frame_unref(a->frame);
            if (st != REEL_OK) return st;
            continue;
        }
        if (r == AVERROR_EOF || (r == AVERROR(EAGAIN) && a->eof >= 1)) {
            if (a->waiting) return LOST;
            if (a->swr) { /* the resampler's last samples */
                int got;
                do got = feed_out(a, NULL, 0, 0);
                while (got > 0);
                if (got < 0) return reel__error_set(err, REEL_E_NOMEM, "%s: resampling failed", a->name);
            }
            if (a->dropped && add_hole(a, a->pos, a->pos, a->dropped) != REEL_OK)
                return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
            a->dropped = 0;
            a->eof = 3;
            a->end_native = a->pos;
            if (a->pos > a->feed_from || a->feed_from == 0)
                a->end = a->out_pos; /* else: ended before the output began */
            break;
        }
        if (r != AVERROR(EAGAIN)) {
            int st = rejected(a, r, a->last_pkt_ts, err);
            if (st != REEL_OK) return st;
            continue;
        }
        if (reel__audio_interrupted(a))
            return reel__error_set(err, REEL_E_CANCELLED, "%s: audio: interrupted", a->name);
        r = av_read_frame(a->fmt, a->pkt);
        if (r == AVERROR_EOF) {
            avcodec_send_packet(a->ctx, NULL);
            a->eof = 1;
            continue;
        }
        if (r < 0)
            return av_fail(a, r == AVERROR_EXIT || reel__audio_interrupted(a) ? REEL_E_CANCELLED : REEL_E_CORRUPT,
                           "audio read error", r, err);
        if (a->pkt->stream_index != a->stream) {
            av_packet_unref(a->pkt);
            continue;
        }
        a->last_pkt_ts = a->pkt->pts != AV_NOPTS_VALUE ? a->pkt->pts : a->pkt->dts;
        r = avcodec_send_packet(a->ctx, a->pkt);
        av_packet_unref(a->pkt);
        if (r < 0 && r != AVERROR(EAGAIN)) {
            int st = rejected(a, r, a->last_pkt_ts, err);
            if (st != REEL_OK) return st;
        }
    }
    return REEL_OK;
}

/* The history's exact part of [lo, hi) into dst. */
static void from_history(reel_audio *a, int64_t lo, int64_t hi, float *dst)
{
    const int64_t h = hist_exact(a), from = lo > h ? lo : h, to = hi < a->out_pos ? hi : a->out_pos;
    for (int c = 0; c < a->info.channels && from < to; c++)
        memcpy(dst + (size_t)c * (size_t)(hi - lo) + (size_t)(from - lo),
               a->hist + (size_t)c * (size_t)a->hist_cap + (size_t)(from - a->hist_lo),
               (size_t)(to - from) * sizeof(float));
}

/* The native index, a multiple of align, where output sample `out` is
 * reached (0 before a0's). */
static int64_t native_at(const reel_audio *a, int64_t out)
{
    if (out <= 0) return 0;
    const int64_t n = (int64_t)((__int128)out * a->info.native_sample_rate / a->info.sample_rate);
    return n / a->align * a->align;
}

int reel__audio_fill(reel_audio *a, int64_t lo, int64_t hi, float *dst, int64_t *end, reel_error *err)
{
    *end = INT64_MAX;
    if (a->end >= 0 && lo >= a->end) { /* past the end, known from a run that got there */
        *end = a->end;
        return REEL_OK;
    }
    a->stats.windows++;
    /* [lo, c) from the cache; the rest [c, hi) decodes */
    const int64_t c = reel__audio_cache_get(a, lo, hi, dst);
    if (c >= hi) {
        a->stats.windows_cached++;
        return REEL_OK;
    }
    /* go on with the run when it holds or has yet to reach c, unless a mark
     * ahead saves more than a second of decoding */
    const reel__audio_mark *m = mark_for(a, c);
    /* the output starts at an aligned index 10 ms (of output) or more before
     * c (the resampler's warm-up), and, with a cache, what it can hold
     * before that, so that earlier windows read later find their samples;
     * before it, a run from a0 only decodes */
    const int64_t pre = warmup(a), from_c = native_at(a, c - pre);
    const int64_t from = native_at(a, c - pre - reel__audio_cache_span(a));
    int64_t m_out = -1;
    if (m) mark_feed(a, m, &m_out);
    if (a->end_native >= 0 && from_c >= a->end_native) { /* the stream ends before c's output starts */
        *end = c;
        return REEL_OK;
    }
    int go_on = a->ctx && !a->at_a0 && c >= hist_exact(a) && !(m && m_out > a->out_pos + a->info.sample_rate);
    int st = REEL_OK;
    if (go_on && a->eof == 0 && from > a->pos && from > a->feed_from) {
        /* far ahead: the decoder goes on, the output restarts at `from` (a
         * fresh resampler there gives the whole stream's samples) */
        if ((st = new_resampler(a, err)) != REEL_OK) {
            reel__audio_run_free(a);
            return st;
        }
        output_from(a, from);
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!go_on) {
            st = m ? start_at_mark(a, m, err) : start_at_a0(a, from, err);
            if (st == LOST) {
                a->n_marks = 0; /* this file's timestamps are not what its marks say: from a0 from now on */
                a->seekable = 0;
                m = NULL;
                st = start_at_a0(a, from, err);
            }
            if (st != REEL_OK) return st;
        }
        a->win_lo = lo;
        a->win_hi = hi;
        a->win_dst = dst;
        from_history(a, lo, hi, dst);
        st = advance(a, hi, err);
        a->win_dst = NULL;
        if (st != LOST) break;
        a->n_marks = 0;
        a->seekable = 0;
        m = NULL;
        go_on = 0;
    }
    if (st != REEL_OK) {
        reel__audio_run_free(a); /* the next call starts afresh */
        return st == LOST ? reel__error_set(err, REEL_E_INTERNAL, "%s: audio restart lost its place", a->name) : st;
    }
    if (a->eof == 3) *end = a->end >= 0 ? a->end : c;
    return REEL_OK;
}
