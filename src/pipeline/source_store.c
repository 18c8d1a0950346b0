/* source_store.c: the loader's source for packed-store records: stage 1
 * looks the record up and reads the sampled frames' bytes ("read"), and
 * with audio the record's stored samples; stage 2 decodes the frames
 * ("decode jpeg", "decode raw", "decode h264") and cuts each clip's audio
 * from the record's. One store reader per worker thread; the store itself
 * is shared. */
#include "pipeline/source.h"
#include "pipeline/sampler_internal.h"
#include "store/store_for_pipeline.h"
#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct store_sample {
    int64_t record;
    reel__store_blob blob;
    int (*interrupt)(void *opaque);
    void *interrupt_opaque;
    /* with the loader's audio: its rate (the grid of a video without audio),
     * 1 when the video has none and zeros were asked for, and the record's
     * samples once read (float32 [C, S] of reel_store_record) */
    int audio, audio_rate, audio_zeros;
    int fail_corrupt; /* REEL_CORRUPT_FAIL: a clip that damage packed under SKIP touches fails, as the video's would */
    float *samples;
} store_sample;

static int store_thread_init(void *ctx, const reel_source_open *o, void **tls, reel_error *err)
{
    reel_store_reader_settings s;
    reel_store_reader_default_settings(&s);
    s.decoder_threads = o->decoder->threads > 0 ? o->decoder->threads : 1;
    s.remote = o->decoder->remote;
    reel_store_reader *r = NULL;
    int st = reel_store_reader_create(&r, ((const reel_source_store_ctx *)ctx)->store, &s, err);
    *tls = r;
    return st;
}

static void store_thread_free(void *ctx, void *tls)
{
    (void)ctx;
    reel_store_reader *r = tls;
    reel_store_reader_destroy(&r);
}

static int store_open(void *ctx, void *tls, const reel_dataset_entry *entry, const reel_source_open *o, void **handle,
                      reel_source_info *info, reel_error *err)
{
    (void)tls;
    const reel_source_store_ctx *c = ctx;
    reel_store *s = c->store;
    int64_t record = entry->record;
    reel_store_record rec;
    int st = reel_store_get_record(s, record, &rec, err);
    if (st != REEL_OK) return st;
    if (rec.status != REEL_OK) {
        /* the recorded reason names the video already ("<path>: why") */
        const char *why = rec.reason ? rec.reason : "";
        size_t pl = strlen(rec.source_path);
        if (!strncmp(why, rec.source_path, pl) && !strncmp(why + pl, ": ", 2)) why += pl + 2;
        return reel__error_set(err, rec.status, "%s: not in the store %s (it failed to pack): %s", rec.source_path,
                               c->name, why);
    }
    if (o->audio && rec.audio_status != REEL_OK &&
        (rec.audio_status != REEL_E_NO_AUDIO_STREAM || o->audio->missing != REEL_AUDIO_MISSING_ZEROS))
        return reel__error_set(err, rec.audio_status, "%s: %s", rec.source_path,
                               rec.audio_status == REEL_E_NO_AUDIO_STREAM ? "no audio stream" : rec.reason);
    store_sample *h = calloc(1, sizeof *h);
    if (!h) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", rec.source_path);
    h->record = record;
    h->audio = o->audio != NULL;
    h->audio_rate = o->audio ? o->audio->sample_rate : 0;
    h->audio_zeros = o->audio && rec.audio_status != REEL_OK;
    h->fail_corrupt = o->decoder->corrupt_policy == REEL_CORRUPT_FAIL;
    h->interrupt = o->interrupt;
    h->interrupt_opaque = o->interrupt_opaque;
    reel_sampler_video *v = &info->video;
    st = reel_store_get_frame_table(s, record, &v->table, &v->num_frames, err); /* the record was found above */
    if (st != REEL_OK) {
        free(h);
        return st;
    }
    v->time_base_num = rec.time_base_num;
    v->time_base_den = rec.time_base_den;
    v->average_fps = rec.avg_fps_den > 0 ? (double)rec.avg_fps_num / rec.avg_fps_den : 0;
    v->segment_start = 0; /* the segment was applied when packing */
    v->segment_end = -1;
    info->rotation = 0; /* stored upright */
    info->width = rec.width;
    info->height = rec.height;
    info->presampled = c->presampled;
    *handle = h;
    return REEL_OK;
}

static int read_samples(reel_store_reader *r, store_sample *h, const reel_store_record *rec, int64_t *bytes,
                        reel_error *err);

static int store_prepare(void *ctx, void *tls, void *handle, const int64_t *indices, size_t n, reel_source_stats *st,
                         reel_error *err)
{
    store_sample *h = handle;
    reel_store_read_stats rs = { 0 };
    reel__store_reader_set_interrupt(tls, h->interrupt, h->interrupt_opaque);
    int r = reel__store_fetch(tls, h->record, indices, n, &h->blob, &rs, err);
    st->bytes_read += rs.bytes_read;
    reel_remote_stats_add(&st->remote, &rs.remote);
    if (r == REEL_OK && h->audio && !h->audio_zeros) { /* the record's audio, read with its frames */
        reel_store_record rec;
        r = reel_store_get_record(((const reel_source_store_ctx *)ctx)->store, h->record, &rec, err);
        if (r == REEL_OK) r = read_samples(tls, h, &rec, &st->bytes_read, err);
    }
    return r;
}

static int store_decode(void *ctx, void *tls, void *handle, const int64_t *indices, size_t n, reel_frame_fn fn,
                        reel__window_fn window, void *opaque, reel_source_stats *st, reel_error *err)
{
    (void)ctx;
    store_sample *h = handle;
    reel_store_read_stats rs = { 0 };
    reel__store_reader_set_interrupt(tls, h->interrupt, h->interrupt_opaque);
    int r = reel__store_decode(tls, &h->blob, indices, n, fn, window, opaque, &rs, err);
    st->frames_decoded += rs.frames_decoded;
    st->frames_returned += rs.frames_returned;
    return r;
}

static void store_close(void *ctx, void *handle)
{
    (void)ctx;
    store_sample *h = handle;
    if (!h) return;
    reel__store_blob_free(&h->blob);
    free(h->samples);
    free(h);
}

/* The record's stored samples into the sample (once). */
static int read_samples(reel_store_reader *r, store_sample *h, const reel_store_record *rec, int64_t *bytes,
                        reel_error *err)
{
    if (h->samples) return REEL_OK;
    const size_t n = (size_t)rec->audio_channels * (size_t)rec->audio_samples;
    h->samples = malloc((n ? n : 1) * sizeof *h->samples);
    if (!h->samples) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", rec->source_path);
    int st = reel_store_reader_read_audio(r, h->record, h->samples, n, NULL, err);
    if (st != REEL_OK) {
        free(h->samples);
        h->samples = NULL;
        return st;
    }
    *bytes += (int64_t)(n * sizeof(float));
    return REEL_OK;
}

/* Under REEL_CORRUPT_FAIL, a clip [lo, hi) that a record's damage touches
 * (packed under REEL_CORRUPT_SKIP) fails as the video's decode would: the
 * file, the first damaged packet's time and the codec's reason (the
 * record keeps them); a store packed before they were kept: the samples. */
static int clip_fail(const reel_source_store_ctx *c, const store_sample *h, const reel_store_record *rec, int64_t lo,
                     int64_t hi, const reel_audio_window *w, reel_error *err)
{
    size_t len = 0;
    const char *line = reel__store_audio_clip_fail(c->store, h->record, lo, hi, &len);
    if (line) return reel__error_set(err, REEL_E_CORRUPT, "%s: %.*s", rec->source_path, (int)len, line);
    return reel__error_set(err, REEL_E_CORRUPT,
                           "%s: %lld corrupt audio packets touch the samples %lld..%lld (packed under skip into the "
                           "store %s; the loader's corrupt_policy is fail)",
                           rec->source_path, (long long)w->corrupt_packets, (long long)lo, (long long)hi, c->name);
}

/* Stage 2: a clip's audio, cut from the record's samples by s(t) on the
 * record's grid; its valid range is the record's seen from the clip (the
 * clip's window lies in the record's, which holds every stored frame). */
static int store_audio(void *ctx, void *tls, void *handle, int64_t t0, int64_t t1, int num, int den, float *dst,
                       size_t cap, reel_audio_window *w, int *channels, reel_error *err)
{
    const reel_source_store_ctx *c = ctx;
    store_sample *h = handle;
    reel_store_record rec;
    int st = reel_store_get_record(c->store, h->record, &rec, err);
    if (st != REEL_OK) return st;
    memset(w, 0, sizeof *w);
    int64_t lo = 0, hi = 0;
    if (h->audio_zeros) { /* as reel_audio without a stream: the loader's rate from 0, no samples */
        *channels = 0;
        st = reel_audio_sample_at(t0, num, den, 0, 1, h->audio_rate, h->audio_rate, &lo, err);
        if (st == REEL_OK) st = reel_audio_sample_at(t1, num, den, 0, 1, h->audio_rate, h->audio_rate, &hi, err);
        w->first_sample = lo;
        w->num_samples = hi - lo;
        return st;
    }
    *channels = rec.audio_channels;
    const int64_t r0 = rec.audio_first_sample, r1 = r0 + rec.audio_samples;
    const int tn = rec.audio_time_base_num, td = rec.audio_time_base_den, rate = rec.audio_sample_rate;
    st = reel_audio_sample_at(t0, num, den, rec.audio_start_pts, tn, td, rate, &lo, err);
    if (st == REEL_OK) st = reel_audio_sample_at(t1, num, den, rec.audio_start_pts, tn, td, rate, &hi, err);
    if (st != REEL_OK) return st;
    if (t1 < t0 || lo < r0 || hi > r1)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE,
                               "%s: audio window %lld..%lld x %d/%d s (samples %lld..%lld) is not inside the stored "
                               "samples %lld..%lld of the store %s",
                               rec.source_path, (long long)t0, (long long)t1, num, den, (long long)lo, (long long)hi,
                               (long long)r0, (long long)r1, c->name);
    /* the record's stream part seen from the clip, and the damage a packing
     * under REEL_CORRUPT_SKIP found there, as the video's window says it */
    const int64_t n = hi - lo;
    w->first_sample = lo;
    w->num_samples = n;
    reel__store_audio_clip_damage(c->store, h->record, lo, hi, w);
    if (h->fail_corrupt && w->corrupt_packets > 0) return clip_fail(c, h, &rec, lo, hi, w, err);
    if (!dst) return REEL_OK;
    const size_t C = (size_t)rec.audio_channels;
    if (cap < C * (size_t)n)
        return reel__error_set(err, REEL_E_BUFFER_TOO_SMALL, "%s: audio window needs %zu floats, got %zu",
                               rec.source_path, C * (size_t)n, cap);
    int64_t bytes = 0;
    st = read_samples(tls, h, &rec, &bytes, err);
    if (st != REEL_OK) return st;
    for (size_t ch = 0; ch < C; ch++)
        memcpy(dst + ch * (size_t)n, h->samples + ch * (size_t)rec.audio_samples + (size_t)(lo - r0),
               (size_t)n * sizeof *dst);
    return REEL_OK;
}

/* Runs of dataset samples whose records lie in one shard. */
static int store_blocks(void *ctx, const reel_dataset_entry *entries, size_t n, int64_t **starts, size_t *nblocks,
                        reel_error *err)
{
    const reel_source_store_ctx *c = ctx;
    *starts = NULL;
    *nblocks = 0;
    if (n == 0) return REEL_OK;
    int64_t *b = malloc((n + 1) * sizeof *b);
    if (!b) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", c->name);
    size_t k = 0;
    const char *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        reel_store_record r;
        int st = reel_store_get_record(c->store, entries[i].record, &r, err);
        if (st != REEL_OK) {
            free(b);
            return st;
        }
        /* one name per shard file, shared by its records */
        if (!prev || strcmp(prev, r.shard) != 0) b[k++] = (int64_t)i;
        prev = r.shard;
    }
    b[k] = (int64_t)n;
    *starts = b;
    *nblocks = k;
    return REEL_OK;
}

static int whole_video(int kind)
{
    return kind == REEL_SAMPLER_FPS || kind == REEL_SAMPLER_COUNT;
}

/* "the fps sampler (fps 2, 4 to 768 frames, frame factor 2)" */
static void sampler_text(const reel_sampler_settings *p, char *buf, size_t cap)
{
    if (p->kind == REEL_SAMPLER_FPS)
        snprintf(buf, cap, "the fps sampler (fps %g, %d to %d frames, frame factor %d)", p->fps, p->min_frames,
                 p->max_frames, p->frame_factor);
    else
        snprintf(buf, cap, "the count sampler (%d frames, frame factor %d)", p->frames_per_clip, p->frame_factor);
}

/* A whole-video sampler over a store: its records must hold that sampler's
 * frames (packed with it: each record is then taken whole), or every source
 * frame (the sampler runs over them as over the video). */
static int check_sampler(reel_source_store_ctx *c, const reel_store_info *i, const reel_sampler_settings *s,
                         reel_error *err)
{
    char want[160], have[160];
    if (i->sampler.kind == REEL_SAMPLER_NONE) {
        if (i->every > 1 || i->fps > 0)
            return reel__error_set(err, REEL_E_INVALID_ARG,
                                   "%s: packed with %s %g, so its records lack frames the loader's %s sampler picks "
                                   "from every frame: pack it with that sampler (reel pack --sampler) or with every "
                                   "frame",
                                   c->name, i->every > 1 ? "every" : "fps", i->every > 1 ? (double)i->every : i->fps,
                                   s->kind == REEL_SAMPLER_FPS ? "fps" : "count");
        return REEL_OK;
    }
    const reel_sampler_settings *p = &i->sampler;
    const int same = p->kind == s->kind && p->frame_factor == s->frame_factor &&
                     (s->kind == REEL_SAMPLER_FPS
                          ? p->fps == s->fps && p->min_frames == s->min_frames && p->max_frames == s->max_frames
                          : p->frames_per_clip == s->frames_per_clip);
    sampler_text(p, have, sizeof have);
    sampler_text(s, want, sizeof want);
    if (!same)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: packed with %s, and the loader asks for %s: its records hold only the packed "
                               "sampler's frames; give the loader the store's settings, or pack again",
                               c->name, have, want);
    if (s->range_start != 0 || s->range_end != 0)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: packed with %s over whole videos (or the manifest's segments): a sampling range "
                               "(video_start/video_end) cannot apply to it; pack the range as a segment",
                               c->name, have);
    c->presampled = 1;
    return REEL_OK;
}

/* "16000 Hz, 1 channel (the mean), stream -1" */
static void audio_text(int rate, int mean, int channels, int stream, char *buf, size_t cap)
{
    char r[32], ch[48];
    if (rate > 0)
        snprintf(r, sizeof r, "%d Hz", rate);
    else
        snprintf(r, sizeof r, "each video's own rate");
    if (mean)
        snprintf(ch, sizeof ch, "1 channel (the mean)");
    else if (channels > 0)
        snprintf(ch, sizeof ch, "%d channels (the video's own)", channels);
    else
        snprintf(ch, sizeof ch, "each video's own channels");
    snprintf(buf, cap, "%s, %s, stream %d", r, ch, stream);
}

/* The loader's audio over a store: the store must have been packed with
 * audio at the loader's rate (or each video's own, when every video's is
 * the loader's), its channels (the mean for 1, each video's own for more)
 * and stream; a store returns the samples it keeps, it cannot resample. */
static int check_audio(const reel_source_store_ctx *c, const reel_store_info *i, const reel_loader_audio *a,
                       reel_error *err)
{
    if (!i->audio)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: a store packed without --audio holds no audio: pack it with --audio, or give the "
                               "loader the videos themselves",
                               c->name);
    char have[128], want[128];
    audio_text(i->audio_sample_rate, i->audio_channels == 1, 0, i->audio_stream_index, have, sizeof have);
    audio_text(a->sample_rate, a->channels == 1, a->channels, a->stream_index, want, sizeof want);
    const int same_rate = i->audio_sample_rate == 0 || i->audio_sample_rate == a->sample_rate;
    const int same_channels = (i->audio_channels == 1) == (a->channels == 1);
    if (!same_rate || !same_channels || i->audio_stream_index != a->stream_index)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: packed with audio at %s, and the loader asks for %s: a store returns the audio "
                               "it was packed with; give the loader the store's audio settings, or pack again",
                               c->name, have, want);
    for (int64_t k = 0; i->audio_sample_rate == 0 && k < i->num_records; k++) {
        reel_store_record r;
        int st = reel_store_get_record(c->store, k, &r, err);
        if (st != REEL_OK) return st;
        if (r.status == REEL_OK && r.audio_status == REEL_OK && r.audio_sample_rate != a->sample_rate)
            return reel__error_set(err, REEL_E_INVALID_ARG,
                                   "%s: packed with audio at %s, and %s's is %d Hz where the loader asks for %s: a "
                                   "store cannot resample; pack again with --audio-rate %d",
                                   c->name, have, r.source_path, r.audio_sample_rate, want, a->sample_rate);
    }
    return REEL_OK;
}

static int store_check(void *ctx, const reel_loader_settings *s, reel_error *err)
{
    reel_source_store_ctx *c = ctx;
    reel_store_info i;
    reel_store_get_info(c->store, &i, NULL);
    c->presampled = 0;
    if (s->audio.enabled) {
        int st = check_audio(c, &i, &s->audio, err);
        if (st != REEL_OK) return st;
    }
    if (whole_video(s->sampler.kind)) {
        int st = check_sampler(c, &i, &s->sampler, err);
        if (st != REEL_OK) return st;
    }
    const reel_size_policy *sp = &s->size_policy;
    const int by_picture = sp->kind == REEL_SIZE_PIXEL_BUDGET && !(sp->width > 0 && sp->height > 0);
    const int source_size = i.short_side == 0 && i.width == 0 && i.height == 0;
    if (by_picture && !source_size) {
        char how[64];
        if (i.width > 0)
            snprintf(how, sizeof how, "at %dx%d", i.width, i.height);
        else
            snprintf(how, sizeof how, "at short side %d", i.short_side);
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: packed %s, not at each video's own size, so a pixel-budget size policy cannot "
                               "size its samples as it sizes the videos: pack with reel pack --size source, or give "
                               "the size policy resized_height and resized_width, or a fixed size",
                               c->name, how);
    }
    return REEL_OK;
}

/* Stored positions to source frame indices (the record's frame table). */
static int store_source_indices(void *ctx, void *handle, int64_t *indices, size_t n, reel_error *err)
{
    const reel_source_store_ctx *c = ctx;
    const store_sample *h = handle;
    for (size_t i = 0; i < n; i++) {
        int st = reel_store_get_source_index(c->store, h->record, indices[i], &indices[i], err);
        if (st != REEL_OK) return st;
    }
    return REEL_OK;
}

/* At a URL too: the reader's I/O reads what the store names; the loader's
 * reel_source names stage 1 "fetch" there. */
const reel_source_ops reel__source_store = {
    "store",           { "read", "image decode" },
    store_thread_init, store_thread_free,
    store_open,        store_prepare,
    store_decode,      store_close,
    store_blocks,      NULL, /* no GOPs: each record frame is an image */
    store_check,       store_source_indices,
    store_audio, /* a store packed with audio; store_check refuses other settings by name */
};
