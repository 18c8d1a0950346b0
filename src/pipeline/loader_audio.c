/* loader_audio.c: each clip's audio (settings.audio): the settings checked
 * and as the decode takes them, the clip's window from its frames' table
 * entries (stage 1), its samples through the source's `audio` op (stage 2),
 * and the batch's zero-padded plane (stage 3). Every input kind goes
 * through the one seam op; nothing here asks what the input is. */
#define _POSIX_C_SOURCE 200809L
#include "pipeline/loader_internal.h"
#include "core/error.h"
#include "core/clock.h"

#include <stdlib.h>
#include <string.h>

int reel__loader_audio_check(const reel_loader_audio *a, reel_error *err)
{
    if (a->enabled != 0 && a->enabled != 1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: audio.enabled must be 0 or 1");
    if (!a->enabled) return REEL_OK;
    if (a->sample_rate < 1 || a->sample_rate > 1000000)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: audio.sample_rate %d not in 1..1000000 (a batch holds one rate: give it)",
                               a->sample_rate);
    if (a->channels < 1 || a->channels > 64)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: audio.channels %d not in 1..64 (a batch holds one channel count: 1 for the "
                               "mean of each video's channels, or the videos' own count)",
                               a->channels);
    if (a->stream_index < -1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: audio.stream_index %d: -1 (the best) or >= 0",
                               a->stream_index);
    if (a->missing != REEL_AUDIO_MISSING_RAISE && a->missing != REEL_AUDIO_MISSING_ZEROS)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: audio.missing %d: RAISE (0) or ZEROS (1)",
                               (int)a->missing);
    return REEL_OK;
}

void reel__loader_audio_settings(const reel_loader_audio *a, reel_corrupt_policy policy, reel_audio_settings *out)
{
    reel_audio_default_settings(out);
    out->corrupt_policy = policy; /* the video's: SKIP delivers the clip with its valid range narrowed */
    out->sample_rate = a->sample_rate;
    out->channels = a->channels == 1 ? 1 : 0; /* the mean, or the stream's own (checked per video) */
    out->stream_index = a->stream_index;
    out->missing = a->missing;
    out->cache_bytes = 0; /* each object reads one clip's window: nothing to serve again */
}

int reel__loader_audio_windows(const reel_loader *l, reel_slot *s, const reel_source_info *info, reel_error *e)
{
    const reel_sampler_video *v = &info->video;
    const size_t T = l->shapes_vary ? (size_t)s->num_frames : (size_t)l->frames_per_clip;
    for (int k = 0; k < l->clips_per_sample; k++) {
        int64_t t0 = INT64_MAX, t1 = INT64_MIN;
        for (size_t t = 0; t < T; t++) {
            int64_t f = s->indices[(size_t)k * T + t];
            if (f < 0 || f >= v->num_frames || !v->table)
                return reel__error_set(e, REEL_E_INTERNAL, "%s: frame %lld is not in its table of %lld", v->name,
                                       (long long)f, (long long)v->num_frames);
            const reel_frame_entry *fe = &v->table[f];
            if (fe->pts < t0) t0 = fe->pts;
            if (fe->pts + fe->duration > t1) t1 = fe->pts + fe->duration;
        }
        s->audio_win[2 * k] = t0;
        s->audio_win[2 * k + 1] = t1;
    }
    return REEL_OK;
}

/* Where clip k's window sits and how many channels its audio has (0: no
 * audio stream, zeros asked for), without decoding. */
static int clip_window(reel_loader *l, worker *w, reel_slot *s, int k, reel_audio_window *win, int *channels,
                       reel_error *e)
{
    const int C = l->s.audio.channels;
    int st = l->src.ops->audio(l->src.ctx, w->tls, s->handle, s->audio_win[2 * k], s->audio_win[2 * k + 1], s->tb_num,
                               s->tb_den, NULL, 0, win, channels, e);
    if (st == REEL_OK && *channels != 0 && *channels != C)
        st = reel__error_set(e, REEL_E_INVALID_ARG,
                             "%s: its audio has %d channel%s where the loader's audio.channels is %d (1 mixes each "
                             "video's channels to their mean)",
                             sample_name(l, s->sample), *channels, *channels == 1 ? "" : "s", C);
    return st;
}

/* Clip k's samples into dst (C x its window) and its row; *bad: the
 * packets dropped in its window (REEL_CORRUPT_SKIP). */
static int clip_audio(reel_loader *l, worker *w, reel_slot *s, int k, float *dst, int64_t *samples, int64_t *bad,
                      reel_error *e)
{
    const int C = l->s.audio.channels;
    reel_audio_window win;
    int have = 0;
    int st = clip_window(l, w, s, k, &win, &have, e);
    if (st != REEL_OK) return st;
    const size_t n = (size_t)C * (size_t)win.num_samples;
    if (have == 0) { /* no audio stream, and missing=zeros: zeros at the batch's channels */
        memset(dst, 0, n * sizeof *dst);
        win.valid_lo = win.valid_hi = 0;
    } else {
        st = l->src.ops->audio(l->src.ctx, w->tls, s->handle, s->audio_win[2 * k], s->audio_win[2 * k + 1], s->tb_num,
                               s->tb_den, dst, n, &win, &have, e);
        if (st != REEL_OK) return st;
    }
    pthread_mutex_lock(&s->mu); /* the rows as the converter writes them: not under an abandoning watchdog */
    if (!s->abandoned) {
        reel_clip_info *ci = &s->bb->rows[(int64_t)s->index * l->clips_per_sample + k];
        ci->audio = dst;
        ci->audio_samples = win.num_samples;
        ci->audio_first_sample = win.first_sample;
        ci->audio_valid_lo = win.valid_lo;
        ci->audio_valid_hi = win.valid_hi;
        ci->audio_missing = win.missing;
        ci->audio_missing_lo = win.missing_lo;
        ci->audio_missing_hi = win.missing_hi;
        ci->audio_corrupt_packets = win.corrupt_packets;
    }
    pthread_mutex_unlock(&s->mu);
    *samples = win.num_samples;
    *bad = win.corrupt_packets;
    return REEL_OK;
}

/* A clip's place in the reading order: its window's start, then its index. */
typedef struct clip_at {
    int64_t t0;
    size_t off; /* its samples' offset in the slot's plane (clip order) */
    int k;
} clip_at;

static int by_start(const void *x, const void *y)
{
    const clip_at *a = x, *b = y;
    if (a->t0 != b->t0) return a->t0 < b->t0 ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

int reel__loader_audio_decode(reel_loader *l, worker *w, reel_slot *s, reel_error *e)
{
    const char *name = sample_name(l, s->sample);
    const int K = l->clips_per_sample, C = l->s.audio.channels;
    int64_t t_begin = reel__clock_ns();
    size_t total = 0;
    /* The clips are read in their windows' time order and placed in clip
     * order: the sample's audio object keeps no cache (reel__loader_audio_
     * settings), so it decodes on from one window to the next, where a
     * window before the last one read would start a decode from a0 again
     * (AAC; the samples are the same in any order). */
    clip_at *order = malloc((size_t)(K > 0 ? K : 1) * sizeof *order);
    if (!order) return reel__error_set(e, REEL_E_NOMEM, "%s: audio: out of memory", name);
    int st = REEL_OK;
    for (int k = 0; k < K && st == REEL_OK; k++) { /* the windows first: the buffer is sized once */
        reel_audio_window win;
        int have = 0;
        st = clip_window(l, w, s, k, &win, &have, e);
        order[k] = (clip_at){ s->audio_win[2 * k], total, k };
        if (st == REEL_OK) total += (size_t)C * (size_t)win.num_samples;
    }
    if (st == REEL_OK) st = reel__ring_slot_audio_reserve(s, total > 0 ? total : 1, e);
    if (st == REEL_OK) qsort(order, (size_t)K, sizeof *order, by_start);
    int64_t samples = 0, bad = 0;
    for (int i = 0; i < K && st == REEL_OK; i++) {
        int64_t n = 0, b = 0;
        st = clip_audio(l, w, s, order[i].k, s->audio + order[i].off, &n, &b, e);
        samples += n;
        bad += b;
    }
    free(order);
    if (st != REEL_OK && strncmp(e->message, name, strlen(name)) != 0) {
        reel_error inner = *e; /* every record names the sample */
        reel__error_set(e, st, "%s: audio: %s", name, inner.message);
    }
    atomic_fetch_add(&l->audio_ns, reel__clock_ns() - t_begin);
    if (st == REEL_OK) {
        atomic_fetch_add(&l->audio_samples, samples);
        atomic_fetch_add(&l->audio_corrupt_packets, bad);
    }
    return st;
}

int reel__loader_audio_collate(reel_loader *l, reel_batchbuf *bb)
{
    reel_batch *b = &bb->batch;
    const int C = l->s.audio.channels;
    int64_t smax = 0;
    for (int64_t i = 0; i < b->num_clips; i++)
        if (bb->clips[i].audio_samples > smax) smax = bb->clips[i].audio_samples;
    b->audio = NULL;
    b->audio_channels = C;
    b->audio_sample_rate = l->s.audio.sample_rate;
    b->audio_samples = smax;
    if (l->shapes_vary && !l->s.pad) return REEL_OK; /* each clip's own, at reel_clip_info.audio */
    const size_t row = (size_t)C * (size_t)smax, bytes = (size_t)b->num_clips * row * sizeof(float);
    int st = reel__ring_audio_reserve(&l->ring, bb, bytes > 0 ? bytes : sizeof(float), &bb->err);
    if (st != REEL_OK) return st;
    memset(bb->audio, 0, bytes);
    for (int64_t i = 0; i < b->num_clips; i++) {
        const reel_clip_info *ci = &bb->clips[i];
        for (int c = 0; c < C && ci->audio; c++)
            memcpy(bb->audio + (size_t)i * row + (size_t)c * (size_t)smax, ci->audio + (size_t)c * ci->audio_samples,
                   (size_t)ci->audio_samples * sizeof(float));
    }
    b->audio = bb->audio;
    return REEL_OK;
}
