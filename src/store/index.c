/* index.c: the store's byte formats (header, record entries, index file),
 * bounds-checked parsing of untrusted bytes, and the open store: the index
 * read into memory with per-record frame tables and class names. */
#include "store/store_internal.h"
#include "io/io_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---------------------------------------------------------------- little-endian */

static void put32(uint8_t **p, uint32_t v)
{
    for (int i = 0; i < 4; i++) (*p)[i] = (uint8_t)(v >> (8 * i));
    *p += 4;
}
static void put64(uint8_t **p, uint64_t v)
{
    for (int i = 0; i < 8; i++) (*p)[i] = (uint8_t)(v >> (8 * i));
    *p += 8;
}
static void putf64(uint8_t **p, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    put64(p, v);
}
static uint32_t get32(const uint8_t **p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)(*p)[i] << (8 * i);
    *p += 4;
    return v;
}
static uint64_t get64(const uint8_t **p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)(*p)[i] << (8 * i);
    *p += 8;
    return v;
}
static double getf64(const uint8_t **p)
{
    uint64_t v = get64(p);
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}

/* ---------------------------------------------------------------- header */

void reel__store_params_from(reel__store_params *p, const reel_pack_settings *s)
{
    memset(p, 0, sizeof *p);
    p->format = (uint32_t)s->format;
    p->zstd_level = s->format == REEL_STORE_FORMAT_RAW ? (uint32_t)s->zstd_level : 0;
    p->short_side = s->width > 0 && s->height > 0 ? 0 : s->short_side;
    p->width = s->width > 0 && s->height > 0 ? s->width : 0;
    p->height = s->width > 0 && s->height > 0 ? s->height : 0;
    p->quality = s->format == REEL_STORE_FORMAT_JPEG ? s->quality : 0;
    p->gop = s->format == REEL_STORE_FORMAT_H264 ? s->gop : 0;
    p->crf = s->format == REEL_STORE_FORMAT_H264 ? s->crf : 0;
    p->every = s->fps > 0 ? 0 : (s->every > 1 ? s->every : 1);
    p->fps = s->fps > 0 ? s->fps : 0;
    p->part_count = (uint32_t)(s->part_count > 0 ? s->part_count : 1);
    p->shard_size = (uint64_t)s->shard_size;
}

void reel__store_header_write(uint8_t *out, const char *magic, const reel__store_params *p, uint64_t num_records)
{
    memset(out, 0, REEL_STORE_HEADER_BYTES);
    memcpy(out, magic, 8);
    uint8_t *q = out + 8;
    put32(&q, REEL_STORE_VERSION);
    put32(&q, REEL_STORE_HEADER_BYTES);
    put64(&q, num_records);
    put32(&q, p->format);
    put32(&q, p->zstd_level);
    put32(&q, (uint32_t)p->short_side);
    put32(&q, (uint32_t)p->width);
    put32(&q, (uint32_t)p->height);
    put32(&q, (uint32_t)p->quality);
    put32(&q, (uint32_t)p->gop);
    put32(&q, (uint32_t)p->crf);
    put32(&q, (uint32_t)p->every);
    put32(&q, p->part_count);
    putf64(&q, p->fps);
    put64(&q, p->shard_size);
    /* the rest is reserved (zero) */
}

int reel__store_header_parse(const uint8_t *in, size_t n, const char *magic, const char *name, reel__store_params *p,
                             uint64_t *num_records, reel_error *err)
{
    if (n < REEL_STORE_HEADER_BYTES || memcmp(in, magic, 8) != 0)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: not a reel store file (bad magic or too short)", name);
    const uint8_t *q = in + 8;
    uint32_t version = get32(&q), hbytes = get32(&q);
    if (version != REEL_STORE_VERSION)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: store format version %u; this reel reads version %d", name,
                               version, REEL_STORE_VERSION);
    if (hbytes != REEL_STORE_HEADER_BYTES)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: bad header size %u", name, hbytes);
    *num_records = get64(&q);
    memset(p, 0, sizeof *p);
    p->format = get32(&q);
    p->zstd_level = get32(&q);
    p->short_side = (int32_t)get32(&q);
    p->width = (int32_t)get32(&q);
    p->height = (int32_t)get32(&q);
    p->quality = (int32_t)get32(&q);
    p->gop = (int32_t)get32(&q);
    p->crf = (int32_t)get32(&q);
    p->every = (int32_t)get32(&q);
    p->part_count = get32(&q);
    p->fps = getf64(&q);
    p->shard_size = get64(&q);
    if (p->format < REEL_STORE_FORMAT_JPEG || p->format > REEL_STORE_FORMAT_H264 || p->part_count < 1 ||
        p->part_count > 1000000 || p->zstd_level > 22 || !(p->fps >= 0 && p->fps < 1e6) || p->every < 0)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: impossible build settings in the header", name);
    return REEL_OK;
}

/* ---------------------------------------------------------------- records */

enum { REC_FIXED = 4 + 4 + 8 + 4 + 4 + 8 + 8 + 4 + 4 + 8 + 8 + 4 + 4 + 4 + 16 + 8 + 8 + 8 + 8 + 16 };

static size_t slen(const char *s)
{
    return s ? strlen(s) : 0;
}

size_t reel__store_rec_size(const reel__store_rec *r)
{
    return REC_FIXED + (size_t)r->num_frames * REEL_STORE_FRAME_BYTES + slen(r->path) + slen(r->reason) +
           slen(r->class_name) + 4;
}

void reel__store_rec_write(uint8_t *out, const reel__store_rec *r)
{
    size_t total = reel__store_rec_size(r);
    uint8_t *q = out;
    put32(&q, REEL_STORE_REC_MAGIC);
    put32(&q, (uint32_t)total);
    put64(&q, (uint64_t)r->sample);
    put32(&q, r->part);
    put32(&q, r->shard_seq);
    put64(&q, r->offset);
    put64(&q, r->length);
    put32(&q, r->crc);
    put32(&q, (uint32_t)r->status);
    put64(&q, (uint64_t)r->label);
    put64(&q, (uint64_t)r->source_num_frames);
    put32(&q, r->num_frames);
    put32(&q, r->width);
    put32(&q, r->height);
    put32(&q, (uint32_t)r->tb_num);
    put32(&q, (uint32_t)r->tb_den);
    put32(&q, (uint32_t)r->fps_num);
    put32(&q, (uint32_t)r->fps_den);
    put64(&q, (uint64_t)r->source_size);
    put64(&q, (uint64_t)r->source_mtime_ns);
    putf64(&q, r->seg_start);
    putf64(&q, r->seg_end);
    put32(&q, (uint32_t)slen(r->path));
    put32(&q, (uint32_t)slen(r->reason));
    put32(&q, (uint32_t)slen(r->class_name));
    put32(&q, 0);
    for (uint32_t i = 0; i < r->num_frames; i++) {
        const reel__store_frame *f = &r->frames[i];
        put32(&q, f->offset);
        put32(&q, f->length);
        put32(&q, f->crc);
        put32(&q, f->flags);
        put64(&q, (uint64_t)f->source_index);
        put64(&q, (uint64_t)f->pts);
        put64(&q, (uint64_t)f->duration);
    }
    const char *strs[3] = { r->path, r->reason, r->class_name };
    for (int k = 0; k < 3; k++) {
        size_t l = slen(strs[k]);
        if (l) memcpy(q, strs[k], l);
        q += l;
    }
    put32(&q, reel__crc32(0, out, (size_t)(q - out)));
}

void reel__store_rec_free(reel__store_rec *r)
{
    if (!r) return;
    free(r->path);
    free(r->reason);
    free(r->class_name);
    free(r->frames);
    memset(r, 0, sizeof *r);
}

static char *take_str(const uint8_t *p, uint32_t n)
{
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    if (n) memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

int reel__store_rec_parse(const uint8_t *in, size_t n, const char *name, reel__store_rec *r, size_t *used,
                          reel_error *err)
{
    memset(r, 0, sizeof *r);
    if (n < REC_FIXED + 4)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: truncated record entry (%zu bytes left)", name, n);
    const uint8_t *q = in;
    uint32_t magic = get32(&q), total = get32(&q);
    if (magic != REEL_STORE_REC_MAGIC)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: bad record entry (no marker)", name);
    if (total < REC_FIXED + 4 || total > n)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: record entry of %u bytes does not fit (%zu left)", name, total,
                               n);
    const uint8_t *end = in + total - 4;
    const uint8_t *cq = end;
    uint32_t crc = get32(&cq);
    if (crc != reel__crc32(0, in, total - 4))
        return reel__error_set(err, REEL_E_CORRUPT, "%s: record entry checksum mismatch", name);
    r->sample = (int64_t)get64(&q);
    r->part = get32(&q);
    r->shard_seq = get32(&q);
    r->offset = get64(&q);
    r->length = get64(&q);
    r->crc = get32(&q);
    r->status = (int32_t)get32(&q);
    r->label = (int64_t)get64(&q);
    r->source_num_frames = (int64_t)get64(&q);
    r->num_frames = get32(&q);
    r->width = get32(&q);
    r->height = get32(&q);
    r->tb_num = (int32_t)get32(&q);
    r->tb_den = (int32_t)get32(&q);
    r->fps_num = (int32_t)get32(&q);
    r->fps_den = (int32_t)get32(&q);
    r->source_size = (int64_t)get64(&q);
    r->source_mtime_ns = (int64_t)get64(&q);
    r->seg_start = getf64(&q);
    r->seg_end = getf64(&q);
    uint32_t lp = get32(&q), lr = get32(&q), lc = get32(&q);
    (void)get32(&q);
    uint64_t need = (uint64_t)r->num_frames * REEL_STORE_FRAME_BYTES + (uint64_t)lp + lr + lc;
    if (need != (uint64_t)(end - q))
        return reel__error_set(err, REEL_E_CORRUPT, "%s: record entry lengths do not add up", name);
    if (r->sample < 0 || r->status > 0 || r->status < -1000 || r->width > 65536 || r->height > 65536 ||
        r->offset > (UINT64_C(1) << 62) || r->length > (UINT64_C(1) << 40) ||
        (r->status == REEL_OK && (r->tb_num <= 0 || r->tb_den <= 0 || r->width == 0 || r->height == 0)))
        return reel__error_set(err, REEL_E_CORRUPT, "%s: impossible values in a record entry", name);
    if (r->num_frames) {
        r->frames = malloc((size_t)r->num_frames * sizeof *r->frames);
        if (!r->frames) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    }
    for (uint32_t i = 0; i < r->num_frames; i++) {
        reel__store_frame *f = &r->frames[i];
        f->offset = get32(&q);
        f->length = get32(&q);
        f->crc = get32(&q);
        f->flags = get32(&q);
        f->source_index = (int64_t)get64(&q);
        f->pts = (int64_t)get64(&q);
        f->duration = (int64_t)get64(&q);
        if ((uint64_t)f->offset + f->length > r->length || f->source_index < 0 ||
            (i > 0 && f->source_index <= r->frames[i - 1].source_index)) {
            reel__store_rec_free(r);
            return reel__error_set(err, REEL_E_CORRUPT, "%s: impossible frame %u in a record entry", name, i);
        }
    }
    r->path = take_str(q, lp);
    q += lp;
    r->reason = take_str(q, lr);
    q += lr;
    r->class_name = take_str(q, lc);
    if (!r->path || !r->reason || !r->class_name) {
        reel__store_rec_free(r);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    }
    *used = total;
    return REEL_OK;
}

int reel__store_index_parse(const uint8_t *in, size_t n, const char *name, reel__store_params *p,
                            reel__store_rec **recs, int64_t *nrec, reel_error *err)
{
    *recs = NULL;
    *nrec = 0;
    uint64_t count = 0;
    int st = reel__store_header_parse(in, n, REEL_STORE_MAGIC, name, p, &count, err);
    if (st != REEL_OK) return st;
    if (n < REEL_STORE_HEADER_BYTES + 4) return reel__error_set(err, REEL_E_CORRUPT, "%s: truncated index", name);
    const uint8_t *tail = in + n - 4;
    uint32_t crc = get32(&tail);
    if (crc != reel__crc32(0, in, n - 4))
        return reel__error_set(err, REEL_E_CORRUPT, "%s: index checksum mismatch (damaged or truncated)", name);
    /* every entry takes at least REC_FIXED + 4 bytes: bounds the count */
    if (count > (n - REEL_STORE_HEADER_BYTES) / (REC_FIXED + 4))
        return reel__error_set(err, REEL_E_CORRUPT, "%s: %" PRIu64 " records cannot fit in %zu bytes", name, count, n);
    reel__store_rec *r = calloc(count ? (size_t)count : 1, sizeof *r);
    if (!r) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    size_t off = REEL_STORE_HEADER_BYTES;
    for (uint64_t i = 0; i < count; i++) {
        size_t used = 0;
        st = reel__store_rec_parse(in + off, n - 4 - off, name, &r[i], &used, err);
        if (st != REEL_OK) {
            for (uint64_t k = 0; k < i; k++) reel__store_rec_free(&r[k]);
            free(r);
            return st;
        }
        if (i > 0 && r[i].sample <= r[i - 1].sample) {
            for (uint64_t k = 0; k <= i; k++) reel__store_rec_free(&r[k]);
            free(r);
            return reel__error_set(err, REEL_E_CORRUPT, "%s: records out of order", name);
        }
        off += used;
    }
    if (off != n - 4) {
        for (uint64_t k = 0; k < count; k++) reel__store_rec_free(&r[k]);
        free(r);
        return reel__error_set(err, REEL_E_CORRUPT, "%s: %zu unexpected bytes after the records", name, n - 4 - off);
    }
    *recs = r;
    *nrec = (int64_t)count;
    return REEL_OK;
}

void reel__store_shard_name(char *out, size_t size, uint32_t part, uint32_t seq)
{
    snprintf(out, size, "shard-%05u-%05u.bin", part, seq);
}

int reel__store_join(char *out, size_t size, const char *dir, const char *name)
{
    size_t l = strlen(dir);
    int n = snprintf(out, size, "%s%s%s", dir, l && dir[l - 1] == '/' ? "" : "/", name);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* ---------------------------------------------------------------- the open store */

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

void reel_store_get_info(const reel_store *s, reel_store_info *info)
{
    if (!info) return;
    memset(info, 0, sizeof *info);
    if (!s) return;
    info->format = (reel_store_format)s->params.format;
    info->version = REEL_STORE_VERSION;
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
    info->fps = s->params.fps;
    info->every = s->params.every;
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
    return REEL_OK;
}

const reel_frame_entry *reel_store_get_frame_table(const reel_store *s, int64_t record, int64_t *n)
{
    if (n) *n = 0;
    if (!s || record < 0 || record >= s->nrec) return NULL;
    if (n) *n = s->recs[record].num_frames;
    return s->tables[record];
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
    if (s->params.format == REEL_STORE_FORMAT_H264) {
        *offset = (int64_t)r->offset;
        *length = (int64_t)r->length;
    } else {
        *offset = (int64_t)r->offset + r->frames[pos].offset;
        *length = r->frames[pos].length;
    }
    return REEL_OK;
}

const char *reel_store_get_class_name(const reel_store *s, int64_t label)
{
    if (!s || label < 0 || label >= s->nclasses) return NULL;
    return s->classes[label];
}
