/* source_store.c: the loader's source for packed-store records: stage 1
 * looks the record up and reads the sampled frames' bytes ("read"), stage 2
 * decodes them ("decode jpeg", "decode raw", "decode h264"). One store
 * reader per worker thread; the store itself is shared. */
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
    store_sample *h = calloc(1, sizeof *h);
    if (!h) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", rec.source_path);
    h->record = record;
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

static int store_prepare(void *ctx, void *tls, void *handle, const int64_t *indices, size_t n, reel_source_stats *st,
                         reel_error *err)
{
    (void)ctx;
    store_sample *h = handle;
    reel_store_read_stats rs = { 0 };
    reel__store_reader_set_interrupt(tls, h->interrupt, h->interrupt_opaque);
    int r = reel__store_fetch(tls, h->record, indices, n, &h->blob, &rs, err);
    st->bytes_read += rs.bytes_read;
    reel_remote_stats_add(&st->remote, &rs.remote);
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
    free(h);
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

static int store_check(void *ctx, const reel_loader_settings *s, reel_error *err)
{
    reel_source_store_ctx *c = ctx;
    reel_store_info i;
    reel_store_get_info(c->store, &i, NULL);
    c->presampled = 0;
    if (s->audio.enabled) /* no `audio` op yet: a store keeps its records' frames only */
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: a store packed without --audio holds no audio: the loader's audio needs the "
                               "videos themselves",
                               c->name);
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
    "store",
    { "read", "image decode" },
    store_thread_init,
    store_thread_free,
    store_open,
    store_prepare,
    store_decode,
    store_close,
    store_blocks,
    NULL, /* no GOPs: each record frame is an image */
    store_check,
    store_source_indices,
    NULL, /* no audio: store_check refuses audio settings by name */
};
