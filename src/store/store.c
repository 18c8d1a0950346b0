/* store.c: the open store: its index (index.c parses it) read into memory
 * through src/io, per-record frame tables and class names, and the getters
 * of reel/store.h over them. */
#include "store/store_internal.h"
#include "io/io_front.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void reel_store_close(reel_store **ps)
{
    if (!ps || !*ps) return;
    reel_store *s = *ps;
    for (int64_t i = 0; i < s->nrec; i++) {
        reel__store_rec_free(&s->recs[i]);
        if (s->tables) free(s->tables[i]);
    }
    free(s->recs);
    free(s->tables);
    free(s->shard_names);
    for (int64_t i = 0; i < s->nclasses; i++) free(s->classes[i]);
    free(s->classes);
    free(s->dir);
    free(s);
    *ps = NULL;
}

static int build_tables(reel_store *s, const char *name, reel_error *err)
{
    s->tables = calloc(s->nrec ? (size_t)s->nrec : 1, sizeof *s->tables);
    s->shard_names = calloc(s->nrec ? (size_t)s->nrec : 1, sizeof *s->shard_names);
    if (!s->tables || !s->shard_names) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    int max_shard = -1;
    for (int64_t i = 0; i < s->nrec; i++) {
        const reel__store_rec *r = &s->recs[i];
        s->nframes += r->num_frames;
        s->bytes += (int64_t)r->length;
        if (r->status != REEL_OK) s->nfailed++;
        if ((int)r->shard_seq > max_shard) max_shard = (int)r->shard_seq;
        reel__store_shard_name(s->shard_names[i], sizeof s->shard_names[i], r->part, r->shard_seq);
        reel_frame_entry *t = calloc(r->num_frames ? r->num_frames : 1, sizeof *t);
        if (!t) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
        for (uint32_t k = 0; k < r->num_frames; k++) {
            t[k].pts = r->frames[k].pts;
            t[k].duration = r->frames[k].duration;
            t[k].pos = -1;
            t[k].flags = (int32_t)r->frames[k].flags;
            t[k].decode_order = (int32_t)k;
        }
        s->tables[i] = t;
    }
    s->nshards = max_shard + 1;
    /* class names: sorted, unique; labels were assigned from the same order */
    char **names = malloc((size_t)(s->nrec ? s->nrec : 1) * sizeof *names);
    if (!names) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    int64_t k = 0;
    for (int64_t i = 0; i < s->nrec; i++)
        if (s->recs[i].class_name[0]) names[k++] = s->recs[i].class_name;
    qsort(names, (size_t)k, sizeof *names, cmp_str);
    s->classes = calloc((size_t)(k ? k : 1), sizeof *s->classes);
    if (!s->classes) {
        free(names);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    }
    for (int64_t i = 0; i < k; i++) {
        if (s->nclasses > 0 && !strcmp(s->classes[s->nclasses - 1], names[i])) continue;
        s->classes[s->nclasses] = strdup(names[i]);
        if (!s->classes[s->nclasses]) {
            free(names);
            return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
        }
        s->nclasses++;
    }
    free(names);
    return REEL_OK;
}

int reel_store_open(reel_store **out, const char *dir, reel_error *err)
{
    if (!out || !dir || !*dir) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_store_open: NULL argument");
    *out = NULL;
    char path[4096];
    if (reel__store_join(path, sizeof path, dir, REEL_STORE_INDEX_NAME) != 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: path too long", dir);
    reel__io *io = NULL;
    int st = reel__io_open(&io, path, NULL, err);
    if (st != REEL_OK) return st;
    char name[600];
    snprintf(name, sizeof name, "%s", reel__io_name(io));
    int64_t size = reel__io_size(io);
    if (size > ((int64_t)1 << 34)) {
        reel__io_close(&io);
        return reel__error_set(err, REEL_E_CORRUPT, "%s: an index of %lld bytes is not plausible", name,
                               (long long)size);
    }
    uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
    if (!buf) {
        reel__io_close(&io);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    }
    st = reel__io_read_exact(io, 0, buf, (size_t)size, err);
    reel__io_close(&io);
    reel_store *s = calloc(1, sizeof *s);
    if (st == REEL_OK && !s) st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    if (st == REEL_OK) st = reel__store_index_parse(buf, (size_t)size, name, &s->params, &s->recs, &s->nrec, err);
    free(buf);
    if (st == REEL_OK && !(s->dir = strdup(dir))) st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    if (st == REEL_OK) st = build_tables(s, name, err);
    if (st != REEL_OK) {
        reel_store_close(&s);
        return st;
    }
    *out = s;
    return REEL_OK;
}

int reel_store_get_info(const reel_store *s, reel_store_info *info, reel_error *err)
{
    if (!info) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_store_get_info: info is NULL");
    memset(info, 0, sizeof *info);
    if (!s) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_store_get_info: store is NULL");
    info->format = (reel_store_format)s->params.format;
    info->version = s->params.audio ? REEL_STORE_VERSION_AUDIO : REEL_STORE_VERSION;
    info->num_records = s->nrec;
    info->num_frames = s->nframes;
    info->num_failed = s->nfailed;
    info->num_classes = s->nclasses;
    info->bytes = s->bytes;
    info->num_shards = s->nshards;
    info->short_side = s->params.short_side;
    info->width = s->params.width;
    info->height = s->params.height;
    info->quality = s->params.quality;
    info->zstd_level = (int)s->params.zstd_level;
    info->gop = s->params.gop;
    info->every = s->params.every;
    /* the on-disk sampler fields (reel__store_params_from) as settings */
    const reel__store_params *p = &s->params;
    memset(&info->sampler, 0, sizeof info->sampler);
    info->sampler.kind = p->sampler == 0 ? REEL_SAMPLER_NONE : (reel_sampler_kind)p->sampler;
    info->fps = p->sampler == REEL_SAMPLER_FPS ? 0 : p->fps;
    if (p->sampler == REEL_SAMPLER_FPS) {
        info->sampler.fps = p->fps;
        info->sampler.min_frames = p->min_frames;
        info->sampler.max_frames = p->max_frames;
    }
    if (p->sampler == REEL_SAMPLER_COUNT) info->sampler.frames_per_clip = p->frames;
    if (p->sampler != 0) info->sampler.frame_factor = p->frame_factor;
    info->color = (reel_color)p->color;
    info->dtype = (reel_dtype)p->dtype;
    info->audio = p->audio;
    info->audio_sample_rate = p->audio_rate;
    info->audio_channels = p->audio_channels;
    info->audio_stream_index = p->audio_stream;
    return REEL_OK;
}

int reel_store_get_record(const reel_store *s, int64_t i, reel_store_record *o, reel_error *err)
{
    if (!s || !o) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_store_get_record: NULL argument");
    if (i < 0 || i >= s->nrec)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: record %lld of %lld", s->dir, (long long)i,
                               (long long)s->nrec);
    const reel__store_rec *r = &s->recs[i];
    memset(o, 0, sizeof *o);
    o->source_path = r->path;
    o->label = r->label;
    o->class_name = r->class_name;
    o->status = r->status;
    o->reason = r->reason;
    o->num_frames = r->num_frames;
    o->width = (int)r->width;
    o->height = (int)r->height;
    o->time_base_num = r->tb_num;
    o->time_base_den = r->tb_den;
    o->avg_fps_num = r->fps_num;
    o->avg_fps_den = r->fps_den;
    o->source_num_frames = r->source_num_frames;
    o->segment_start = r->seg_start;
    o->segment_end = r->seg_end;
    o->source_size = r->source_size;
    o->source_mtime_ns = r->source_mtime_ns;
    o->shard = s->shard_names[i];
    o->offset = (int64_t)r->offset;
    o->length = (int64_t)r->length;
    o->channels = r->pixels == REEL__STORE_PIX_GRAY8 || r->pixels == REEL__STORE_PIX_GRAY16 ? 1 : 3;
    o->bit_depth = r->pixels == REEL__STORE_PIX_GRAY16 ? r->depth : r->pixels == REEL__STORE_PIX_RGB48 ? 16 : 8;
    o->audio_status = r->audio_status;
    o->audio_sample_rate = r->audio_rate;
    o->audio_channels = r->audio_channels;
    o->audio_first_sample = r->audio_first;
    o->audio_samples = r->audio_samples;
    o->audio_valid_lo = r->audio_valid_lo;
    o->audio_valid_hi = r->audio_valid_hi;
    o->audio_start_pts = r->a0_pts;
    o->audio_time_base_num = r->a0_tb_num;
    o->audio_time_base_den = r->a0_tb_den;
    if (r->audio_n_spans) { /* the stored window's damage, as reel_audio says it */
        reel_audio_window w;
        memset(&w, 0, sizeof w);
        w.valid_lo = r->audio_stream_lo;
        w.valid_hi = r->audio_stream_hi;
        reel__audio_damage_of(r->audio_spans, r->audio_n_spans, r->audio_first, r->audio_first + r->audio_samples, &w);
        o->audio_missing = w.missing;
        o->audio_missing_lo = w.missing_lo;
        o->audio_missing_hi = w.missing_hi;
        o->audio_corrupt_packets = w.corrupt_packets;
    }
    return REEL_OK;
}

int reel_store_get_frame_table(const reel_store *s, int64_t record, const reel_frame_entry **table, int64_t *n,
                               reel_error *err)
{
    if (!s || !table || !n)
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_store_get_frame_table: NULL argument");
    if (record < 0 || record >= s->nrec)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: record %lld of %lld", s->dir, (long long)record,
                               (long long)s->nrec);
    *n = s->recs[record].num_frames;
    *table = s->tables[record];
    return REEL_OK;
}

int reel_store_get_source_index(const reel_store *s, int64_t record, int64_t pos, int64_t *index, reel_error *err)
{
    if (!s || !index) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_store_get_source_index: NULL argument");
    if (record < 0 || record >= s->nrec)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: record %lld of %lld", s->dir, (long long)record,
                               (long long)s->nrec);
    const reel__store_rec *r = &s->recs[record];
    if (pos < 0 || pos >= (int64_t)r->num_frames)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: stored frame %lld of %u", r->path, (long long)pos,
                               r->num_frames);
    *index = r->frames[pos].source_index;
    return REEL_OK;
}

int reel_store_get_frame_bytes(const reel_store *s, int64_t record, int64_t pos, int64_t *offset, int64_t *length,
                               reel_error *err)
{
    if (!s || !offset || !length)
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_store_get_frame_bytes: NULL argument");
    if (record < 0 || record >= s->nrec)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: record %lld of %lld", s->dir, (long long)record,
                               (long long)s->nrec);
    const reel__store_rec *r = &s->recs[record];
    if (pos < 0 || pos >= (int64_t)r->num_frames)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: stored frame %lld of %u", r->path, (long long)pos,
                               r->num_frames);
    if (s->params.format == REEL_STORE_FORMAT_H264) { /* the stream: the record before its audio */
        *offset = (int64_t)r->offset;
        *length = (int64_t)(r->audio_length ? r->audio_offset : r->length);
    } else {
        *offset = (int64_t)r->offset + r->frames[pos].offset;
        *length = r->frames[pos].length;
    }
    return REEL_OK;
}

int reel_store_get_class_name(const reel_store *s, int64_t label, const char **name, reel_error *err)
{
    if (!s || !name) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_store_get_class_name: NULL argument");
    if (label < 0 || label >= s->nclasses)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: label %lld of %lld class names", s->dir, (long long)label,
                               (long long)s->nclasses);
    *name = s->classes[label];
    return REEL_OK;
}

const char *reel__store_audio_clip_fail(const reel_store *s, int64_t record, int64_t lo, int64_t hi, size_t *len)
{
    const reel__store_rec *r = &s->recs[record];
    const char *line = r->reason ? r->reason : "";
    for (uint32_t i = 0; i < r->audio_n_spans && *line; i++) {
        const char *nl = strchr(line, '\n');
        if (reel__audio_span_touches(&r->audio_spans[i], lo, hi)) {
            *len = nl ? (size_t)(nl - line) : strlen(line);
            return line;
        }
        line = nl ? nl + 1 : "";
    }
    return NULL;
}

void reel__store_audio_clip_damage(const reel_store *s, int64_t record, int64_t lo, int64_t hi, reel_audio_window *w)
{
    const reel__store_rec *r = &s->recs[record];
    const int64_t n = hi - lo, b = r->audio_first + r->audio_stream_lo - lo,
                  e = r->audio_first + r->audio_stream_hi - lo;
    w->valid_lo = b < 0 ? 0 : b > n ? n : b;
    w->valid_hi = e < w->valid_lo ? w->valid_lo : e > n ? n : e;
    reel__audio_damage_of(r->audio_spans, r->audio_n_spans, lo, hi, w);
}
