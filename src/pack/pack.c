/* pack.c: `reel pack`: one part of a dataset built into a store. The
 * dataset's entries are read once through the public API; worker threads
 * make records (record.c), which are written in dataset order into the
 * part's shards and journal (store/build.c), so a build is deterministic
 * whatever the thread count and resumes after a kill; a one-part build then
 * merges its index. */
#include "pack/pack.h"
#include "core/clock.h"

#include "reel/dataset.h"
#include "reel/io.h"
#include "reel/sampler.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void reel_pack_default_settings(reel_pack_settings *s)
{
    if (!s) return;
    memset(s, 0, sizeof *s);
    s->format = REEL_STORE_FORMAT_JPEG;
    s->short_side = 256;
    s->every = 1;
    s->quality = 90;
    s->gop = 8;
    s->crf = 18;
    s->shard_size = (int64_t)1 << 30;
    s->part_count = 1;
    reel_sampler_default_settings(&s->sampler);
    s->sampler.kind = REEL_SAMPLER_NONE;
}

/* The whole-video sampler: the fields a store records (its kind, fps,
 * min_frames, max_frames, frames_per_clip, frame_factor) in range, and the
 * others at their defaults, since no store could say it was packed with them. */
static int check_sampler(const reel_pack_settings *s, reel_error *err)
{
    const reel_sampler_settings *p = &s->sampler;
    if (p->kind == REEL_SAMPLER_NONE) return REEL_OK;
    if (p->kind != REEL_SAMPLER_FPS && p->kind != REEL_SAMPLER_COUNT)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "pack: sampler.kind %d: whole-video samplers are the fps (%d) "
                               "and count (%d) samplers, or none (%d)",
                               (int)p->kind, REEL_SAMPLER_FPS, REEL_SAMPLER_COUNT, (int)REEL_SAMPLER_NONE);
    if (s->every > 1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: give a whole-video sampler or every, not both");
    if (s->fps > 0)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "pack: give a whole-video sampler (its rate is sampler.fps) or fps, not both");
    reel_sampler_settings d;
    reel_sampler_default_settings(&d);
    if (p->clips_per_video != d.clips_per_video || p->frame_stride != d.frame_stride ||
        p->seconds_between_frames != d.seconds_between_frames || p->range_start != d.range_start ||
        p->range_end != d.range_end || p->policy != d.policy ||
        p->seconds_between_clip_starts != d.seconds_between_clip_starts)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "pack: a store records the whole-video sampler's kind, fps, min_frames, max_frames, "
                               "frames_per_clip and frame_factor; leave its other fields at their defaults");
    if (p->kind == REEL_SAMPLER_FPS && !(p->fps > 0 && p->fps <= 1000))
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: sampler.fps %g not in (0, 1000]", p->fps);
    if (p->frames_per_clip < 1 || p->frames_per_clip > (p->kind == REEL_SAMPLER_COUNT ? 1000000 : 65536))
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: %s needs sampler.frames_per_clip in [1, %d], got %d",
                               p->kind == REEL_SAMPLER_COUNT ? "the count sampler" : "a sampler",
                               p->kind == REEL_SAMPLER_COUNT ? 1000000 : 65536, p->frames_per_clip);
    if (p->frame_factor < 1 || p->frame_factor > 1000 || p->min_frames < 0 || p->max_frames < p->min_frames)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "pack: need sampler.frame_factor in [1, 1000] and 0 <= sampler.min_frames <= "
                               "sampler.max_frames (got %d, %d, %d)",
                               p->frame_factor, p->min_frames, p->max_frames);
    return REEL_OK;
}

static int check_settings(const reel_pack_settings *s, reel_error *err)
{
    if (s->format < REEL_STORE_FORMAT_JPEG || s->format > REEL_STORE_FORMAT_H264)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: unknown format %d", (int)s->format);
    if ((s->width > 0) != (s->height > 0) || s->width < 0 || s->height < 0 || s->width > 16384 || s->height > 16384)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: give both width and height (1..16384), or neither");
    if (s->width <= 0 && (s->short_side < 0 || s->short_side > 16384))
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: short_side %d not in [0 (source size), 16384]",
                               s->short_side);
    if (!(s->fps >= 0 && s->fps <= 1000))
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: fps must be in [0, 1000]");
    if (s->fps > 0 && s->every > 1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: give fps or every, not both");
    int st = check_sampler(s, err);
    if (st != REEL_OK) return st;
    if (s->every < 0 || s->every > 1000000)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: bad every %d", s->every);
    if (s->format == REEL_STORE_FORMAT_JPEG && (s->quality < 1 || s->quality > 100))
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: quality %d not in [1, 100]", s->quality);
    if (s->format == REEL_STORE_FORMAT_RAW && (s->zstd_level < 0 || s->zstd_level > 19))
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: zstd level %d not in [0, 19]", s->zstd_level);
    if (s->format == REEL_STORE_FORMAT_H264 && (s->gop < 1 || s->gop > 1000 || s->crf < 0 || s->crf > 51))
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: gop must be in [1, 1000] and crf in [0, 51]");
    if (s->shard_size < REEL_STORE_ALIGN)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: shard_size must be at least %d", REEL_STORE_ALIGN);
    if (s->part_count < 1 || s->part_index < 0 || s->part_index >= s->part_count)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: part %d of %d does not exist", s->part_index,
                               s->part_count);
    if (s->threads < 0 || s->threads > 1024) return reel__error_set(err, REEL_E_INVALID_ARG, "pack: bad thread count");
    if (s->color != REEL_COLOR_RGB && s->color != REEL_COLOR_GRAY)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: unknown color %d", (int)s->color);
    if (s->dtype != REEL_DTYPE_UINT8 && s->dtype != REEL_DTYPE_UINT16)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: dtype %d: a store holds uint8 or uint16", (int)s->dtype);
    if (s->format != REEL_STORE_FORMAT_RAW && (s->dtype != REEL_DTYPE_UINT8 || s->color != REEL_COLOR_RGB))
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: %s records hold 8-bit RGB: %s%s%s needs format raw",
                               s->format == REEL_STORE_FORMAT_JPEG ? "jpeg" : "h264",
                               s->dtype == REEL_DTYPE_UINT16 ? "dtype uint16" : "",
                               s->dtype == REEL_DTYPE_UINT16 && s->color == REEL_COLOR_GRAY ? " and " : "",
                               s->color == REEL_COLOR_GRAY ? "color gray" : "");
    if (s->corrupt_policy != REEL_CORRUPT_FAIL && s->corrupt_policy != REEL_CORRUPT_SKIP)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: corrupt_policy %d: FAIL (0) or SKIP (1)",
                               (int)s->corrupt_policy);
    const reel_audio_settings *a = s->audio;
    if (a && (a->sample_rate < 0 || a->sample_rate > 1000000))
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "pack: audio.sample_rate %d not in 0 (each video's own) .. "
                               "1000000",
                               a->sample_rate);
    if (a && a->channels != 0 && a->channels != 1)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "pack: audio.channels %d: 0 (each video's own) or 1 (their "
                               "mean)",
                               a->channels);
    if (a && a->stream_index < -1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: audio.stream_index %d: -1 (the best) or >= 0",
                               a->stream_index);
    if (s->format == REEL_STORE_FORMAT_H264) return reel__encoder_h264_check("pack", err);
    return REEL_OK;
}

/* ---------------------------------------------------------------- the part's workers */

typedef struct result {
    int ready;
    int status;
    reel_error err;
    reel__store_rec rec;
    reel__bytes bytes;
} result;

typedef struct workers {
    const reel__pack_ctx *c;
    int64_t begin;  /* first list position to build */
    int64_t window; /* results in flight */
    result *res;    /* window slots, position % window */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int64_t next;    /* next position to claim */
    int64_t written; /* positions < written are consumed */
    int stop;
} workers;

static void *worker_main(void *arg)
{
    workers *w = arg;
    reel__encoder *enc = NULL;
    reel_error eerr;
    int est = reel__encoder_create(&enc, &w->c->params, &eerr);
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->stop && w->next < w->c->n && w->next >= w->written + w->window) pthread_cond_wait(&w->cond, &w->mu);
        if (w->stop || w->next >= w->c->n) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        int64_t k = w->next++;
        pthread_mutex_unlock(&w->mu);
        result *r = &w->res[k % w->window];
        reel_error_clear(&r->err);
        r->status = est != REEL_OK ? est : reel__pack_record(w->c, w->c->list[k], enc, &r->rec, &r->bytes, &r->err);
        if (est != REEL_OK) r->err = eerr;
        pthread_mutex_lock(&w->mu);
        r->ready = 1;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->mu);
    }
    reel__encoder_destroy(&enc);
    return NULL;
}

/* Starts the workers of w (at most the positions left); *started says how
 * many run, to be joined by stop_workers whatever happens. */
static int start_workers(workers *w, pthread_t *tids, int nt, int *started, reel_error *err)
{
    *started = 0;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cond, NULL);
    for (; *started < nt; ++*started)
        if (pthread_create(&tids[*started], NULL, worker_main, w) != 0)
            return reel__error_set(err, REEL_E_INTERNAL, "pack: cannot start a thread");
    return REEL_OK;
}

static void stop_workers(workers *w, pthread_t *tids, int started)
{
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
    for (int64_t i = 0; w->res && i < w->window; i++) {
        reel__store_rec_free(&w->res[i].rec);
        reel__bytes_free(&w->res[i].bytes);
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cond);
}

/* The build's running totals. */
typedef struct totals {
    reel_pack_progress prog;
    int64_t frames, failed, t0;
} totals;

/* Takes the workers' records in list order from `begin` and writes each to
 * the part, reporting progress; stops at the first error or interrupt. */
static int write_in_order(workers *w, reel__store_part *o, const char *out_dir, totals *t, reel_error *err)
{
    const reel_pack_settings *s = w->c->s;
    int st = REEL_OK;
    for (int64_t k = w->begin; st == REEL_OK && k < w->c->n; k++) {
        result *r = &w->res[k % w->window];
        pthread_mutex_lock(&w->mu);
        while (!r->ready) pthread_cond_wait(&w->cond, &w->mu);
        pthread_mutex_unlock(&w->mu);
        if (r->status != REEL_OK) {
            st = r->status;
            if (err) *err = r->err;
        } else {
            st = reel__store_part_write(o, &r->rec, &r->bytes, err);
            t->frames += r->rec.num_frames;
            if (r->rec.status != REEL_OK) t->failed++;
            t->prog.bytes_written += (int64_t)r->rec.length;
        }
        reel__store_rec_free(&r->rec);
        pthread_mutex_lock(&w->mu);
        r->ready = 0;
        w->written = k + 1;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->mu);
        t->prog.videos_done = k + 1;
        t->prog.videos_failed = t->failed;
        t->prog.elapsed = (double)(reel__clock_ns() - t->t0) / 1e9;
        if (st == REEL_OK && s->progress) s->progress(s->progress_opaque, &t->prog);
        if (st == REEL_OK && s->interrupt && s->interrupt(s->interrupt_opaque))
            st = reel__error_set(err, REEL_E_CANCELLED, "%s: build stopped; run again to resume", out_dir);
    }
    return st;
}

/* Builds the part's records from list position `begin` on with worker
 * threads, written in order. */
static int build(const reel__pack_ctx *c, reel__store_part *o, int64_t begin, const char *out_dir, totals *t,
                 reel_error *err)
{
    workers w;
    memset(&w, 0, sizeof w);
    w.c = c;
    w.begin = w.next = w.written = begin;
    int nt = c->s->threads > 0 ? c->s->threads : reel__cpu_count();
    if (nt > c->n - begin) nt = (int)(c->n - begin);
    w.window = 2 * (int64_t)nt;
    w.res = calloc((size_t)w.window, sizeof *w.res);
    pthread_t *tids = calloc((size_t)nt, sizeof *tids);
    int started = 0, st = REEL_OK;
    if (!w.res || !tids) st = reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
    if (st == REEL_OK) st = start_workers(&w, tids, nt, &started, err);
    if (st == REEL_OK) st = write_in_order(&w, o, out_dir, t, err);
    if (w.res && tids) stop_workers(&w, tids, started);
    free(w.res);
    free(tids);
    return st;
}

/* The dataset's entries (read once, in this thread) and the dataset indices
 * of this part. */
static int read_entries(const reel_dataset *ds, const reel_pack_settings *s, reel__pack_entry **entries, int64_t **list,
                        int64_t *n, reel_error *err)
{
    const size_t size = reel_dataset_get_size(ds);
    const int named = reel_dataset_get_num_classes(ds) > 0;
    *entries = calloc(size ? size : 1, sizeof **entries);
    *list = malloc((size ? size : 1) * sizeof **list);
    *n = 0;
    if (!*entries || !*list) return reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
    for (size_t i = 0; i < size; i++) {
        reel_sample smp;
        int st = reel_dataset_get(ds, i, &smp, err);
        if (st != REEL_OK) return st;
        const char *class_name = NULL; /* none for an entry without a label */
        if (named && smp.label >= 0 && (st = reel_dataset_get_class_name(ds, smp.label, &class_name, err)) != REEL_OK)
            return st;
        const char *shown = smp.path;
        if (strstr(smp.path, "://")) { /* a URL: its credentials go nowhere, the store's record included */
            size_t cap = 3 * strlen(smp.path) + 8;
            char *r = malloc(cap);
            if (!r) return reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
            reel_url_redact(smp.path, r, cap);
            shown = r;
        }
        (*entries)[i] = (reel__pack_entry){ smp.path, shown, smp.label, class_name, smp.start, smp.end };
        if ((int64_t)(i % (size_t)s->part_count) == s->part_index) (*list)[(*n)++] = (int64_t)i;
    }
    return REEL_OK;
}

int reel_pack(const char *source, const char *out_dir, const reel_pack_settings *settings, reel_pack_report *report,
              reel_error *err)
{
    if (!source || !out_dir || !*source || !*out_dir)
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_pack: source and out_dir are required");
    reel_pack_settings defaults;
    if (!settings) {
        reel_pack_default_settings(&defaults);
        settings = &defaults;
    }
    int st = check_settings(settings, err);
    if (st != REEL_OK) return st;
    if (report) memset(report, 0, sizeof *report);
    totals t;
    memset(&t, 0, sizeof t);
    t.t0 = reel__clock_ns();
    reel_dataset *ds = NULL;
    st = reel_dataset_create_from_path(&ds, source, err);
    if (st != REEL_OK) return st;
    reel__pack_ctx c;
    memset(&c, 0, sizeof c);
    c.s = settings;
    reel__store_params_from(&c.params, settings);
    reel__pack_entry *entries = NULL;
    int64_t *list = NULL;
    st = read_entries(ds, settings, &entries, &list, &c.n, err);
    c.entries = entries;
    c.list = list;
    reel__store_part o = { .jfd = -1, .sfd = -1 };
    int64_t begin = 0;
    if (st == REEL_OK)
        st = reel__store_part_open(&o, out_dir, settings->part_index, settings->part_count, &c.params, list, c.n,
                                   &begin, err);
    t.prog.videos_total = c.n;
    t.prog.videos_done = t.prog.videos_resumed = begin;
    if (st == REEL_OK && begin < c.n) st = build(&c, &o, begin, out_dir, &t, err);
    int cst = reel__store_part_close(&o, st == REEL_OK ? c.n : -1, err);
    if (st == REEL_OK) st = cst;
    if (st == REEL_OK && settings->progress && begin == c.n) {
        t.prog.elapsed = (double)(reel__clock_ns() - t.t0) / 1e9;
        settings->progress(settings->progress_opaque, &t.prog);
    }
    int merged = 0;
    if (st == REEL_OK && settings->part_count == 1) {
        st = reel_pack_merge(out_dir, err);
        merged = st == REEL_OK;
    }
    if (report) {
        report->videos = c.n;
        report->resumed = begin;
        report->failed = t.failed;
        report->packed = t.prog.videos_done - begin - t.failed;
        report->frames = t.frames;
        report->bytes = t.prog.bytes_written;
        report->seconds = (double)(reel__clock_ns() - t.t0) / 1e9;
        report->merged = merged;
    }
    free(list);
    for (size_t i = 0; entries && i < reel_dataset_get_size(ds); i++)
        if (entries[i].shown != entries[i].path) free((char *)entries[i].shown);
    free(entries);
    reel_dataset_destroy(&ds);
    return st;
}
