/* index.c: the store's byte formats (header, record entries, index file),
 * bounds-checked parsing of untrusted bytes (the open store that holds a
 * parsed index is store.c). */
#include "store/store_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


/* ---------------------------------------------------------------- little-endian */

/* One put/get pair per field kind; the layout tables below name a kind per
 * field, and the writer and the parser both expand the same table. */
static void put_u(uint8_t **p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) (*p)[i] = (uint8_t)(v >> (8 * i));
    *p += bytes;
}
static uint64_t get_u(const uint8_t **p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)(*p)[i] << (8 * i);
    *p += bytes;
    return v;
}
static void put_U32(uint8_t **p, uint32_t v)
{
    put_u(p, v, 4);
}
static void put_I32(uint8_t **p, int32_t v)
{
    put_u(p, (uint32_t)v, 4);
}
static void put_U64(uint8_t **p, uint64_t v)
{
    put_u(p, v, 8);
}
static void put_I64(uint8_t **p, int64_t v)
{
    put_u(p, (uint64_t)v, 8);
}
static void put_F64(uint8_t **p, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    put_u(p, v, 8);
}
static uint32_t get_U32(const uint8_t **p)
{
    return (uint32_t)get_u(p, 4);
}
static int32_t get_I32(const uint8_t **p)
{
    return (int32_t)get_U32(p);
}
static uint64_t get_U64(const uint8_t **p)
{
    return get_u(p, 8);
}
static int64_t get_I64(const uint8_t **p)
{
    return (int64_t)get_U64(p);
}
static double get_F64(const uint8_t **p)
{
    uint64_t v = get_U64(p);
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}
enum { SIZE_U32 = 4, SIZE_I32 = 4, SIZE_U64 = 8, SIZE_I64 = 8, SIZE_F64 = 8 };

/* ---------------------------------------------------------------- the layout, defined once */

/* The byte layouts of docs/STORE.md as tables of (kind, field), in file
 * order. Each is expanded into the writer, the parser and the size, so the
 * two directions cannot drift apart. */

/* The header's build settings (reel__store_params), from byte 24. */
#define STORE_PARAMS_FIELDS(F) \
    F(U32, format)             \
    F(U32, zstd_level)         \
    F(I32, short_side)         \
    F(I32, width)              \
    F(I32, height)             \
    F(I32, quality)            \
    F(I32, gop)                \
    F(I32, crf)                \
    F(I32, every)              \
    F(U32, part_count)         \
    F(F64, fps)                \
    F(U64, shard_size)         \
    F(I32, sampler)            \
    F(I32, min_frames)         \
    F(I32, max_frames)         \
    F(I32, frames)             \
    F(I32, frame_factor)       \
    F(I32, color)              \
    F(I32, dtype)              \
    F(I32, audio)              \
    F(I32, audio_rate)         \
    F(I32, audio_channels)     \
    F(I32, audio_stream)

/* A record entry's fixed fields (reel__store_rec), after the marker and the
 * entry size and before the three string lengths and the pixels (u16 kind,
 * u16 depth). */
#define STORE_REC_FIELDS(F)   \
    F(I64, sample)            \
    F(U32, part)              \
    F(U32, shard_seq)         \
    F(U64, offset)            \
    F(U64, length)            \
    F(U32, crc)               \
    F(I32, status)            \
    F(I64, label)             \
    F(I64, source_num_frames) \
    F(U32, num_frames)        \
    F(U32, width)             \
    F(U32, height)            \
    F(I32, tb_num)            \
    F(I32, tb_den)            \
    F(I32, fps_num)           \
    F(I32, fps_den)           \
    F(I64, source_size)       \
    F(I64, source_mtime_ns)   \
    F(F64, seg_start)         \
    F(F64, seg_end)

/* One stored frame (reel__store_frame). */
#define STORE_FRAME_FIELDS(F) \
    F(U32, offset)            \
    F(U32, length)            \
    F(U32, crc)               \
    F(U32, flags)             \
    F(I64, source_index)      \
    F(I64, pts)               \
    F(I64, duration)

/* The audio block (version 3: a store packed with audio), after the fixed
 * fields and before the frames. */
#define STORE_REC_AUDIO_FIELDS(F) \
    F(U64, audio_offset)          \
    F(U64, audio_length)          \
    F(U32, audio_crc)             \
    F(I32, audio_status)          \
    F(I32, audio_rate)            \
    F(I32, audio_channels)        \
    F(I64, audio_first)           \
    F(I64, audio_samples)         \
    F(I64, audio_valid_lo)        \
    F(I64, audio_valid_hi)        \
    F(I64, a0_pts)                \
    F(I32, a0_tb_num)             \
    F(I32, a0_tb_den)             \
    F(I64, audio_stream_lo)       \
    F(I64, audio_stream_hi)       \
    F(U32, audio_n_spans)         \
    F(U32, audio_zero)

/* One span of the damage (version 3), after the audio block. */
#define STORE_SPAN_FIELDS(F) \
    F(I64, lo)               \
    F(I64, hi)               \
    F(I64, packets)

#define FIELD_SIZE(kind, name) +SIZE_##kind
#define FIELD_PUT(kind, name)  put_##kind(&q, from->name);
#define FIELD_GET(kind, name)  to->name = get_##kind(&q);

enum {
    HEADER_FIXED = 8 + 4 + 4 + 8 STORE_PARAMS_FIELDS(FIELD_SIZE),       /* magic, version, size, count */
    REC_FIXED = 4 + 4 STORE_REC_FIELDS(FIELD_SIZE) + 4 + 4 + 4 + 2 + 2, /* marker, size ... lengths, pixels */
    FRAME_FIXED = 0 STORE_FRAME_FIELDS(FIELD_SIZE),
    AUDIO_FIXED = 0 STORE_REC_AUDIO_FIELDS(FIELD_SIZE),
    SPAN_FIXED = 0 STORE_SPAN_FIELDS(FIELD_SIZE)
};
_Static_assert(HEADER_FIXED == 124, "docs/STORE.md: the header's fields end at byte 124");
_Static_assert(AUDIO_FIXED == 104, "docs/STORE.md: a version-3 entry's audio block is 104 bytes");
_Static_assert(SPAN_FIXED == 24, "docs/STORE.md: a damage span is 24 bytes");
_Static_assert(HEADER_FIXED <= REEL_STORE_HEADER_BYTES, "the header block holds its fields");
_Static_assert(REC_FIXED == 140, "docs/STORE.md: a record entry's frames start at byte 140");
_Static_assert(FRAME_FIXED == REEL_STORE_FRAME_BYTES, "docs/STORE.md: a stored frame is 40 bytes");

static void params_put(uint8_t **p, const reel__store_params *from)
{
    uint8_t *q = *p;
    STORE_PARAMS_FIELDS(FIELD_PUT)
    *p = q;
}
static void params_get(const uint8_t **p, reel__store_params *to)
{
    const uint8_t *q = *p;
    STORE_PARAMS_FIELDS(FIELD_GET)
    *p = q;
}
static void rec_put(uint8_t **p, const reel__store_rec *from)
{
    uint8_t *q = *p;
    STORE_REC_FIELDS(FIELD_PUT)
    *p = q;
}
static void rec_get(const uint8_t **p, reel__store_rec *to)
{
    const uint8_t *q = *p;
    STORE_REC_FIELDS(FIELD_GET)
    *p = q;
}
static void audio_put(uint8_t **p, const reel__store_rec *from)
{
    uint8_t *q = *p;
    STORE_REC_AUDIO_FIELDS(FIELD_PUT)
    *p = q;
}
static void audio_get(const uint8_t **p, reel__store_rec *to)
{
    const uint8_t *q = *p;
    STORE_REC_AUDIO_FIELDS(FIELD_GET)
    *p = q;
}
static void span_put(uint8_t **p, const reel__audio_span *from)
{
    uint8_t *q = *p;
    STORE_SPAN_FIELDS(FIELD_PUT)
    *p = q;
}
static void span_get(const uint8_t **p, reel__audio_span *to)
{
    const uint8_t *q = *p;
    STORE_SPAN_FIELDS(FIELD_GET)
    *p = q;
}
static void frame_put(uint8_t **p, const reel__store_frame *from)
{
    uint8_t *q = *p;
    STORE_FRAME_FIELDS(FIELD_PUT)
    *p = q;
}
static void frame_get(const uint8_t **p, reel__store_frame *to)
{
    const uint8_t *q = *p;
    STORE_FRAME_FIELDS(FIELD_GET)
    *p = q;
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
    const reel_sampler_settings *w = &s->sampler;
    const int sampled = w->kind != REEL_SAMPLER_NONE;
    p->every = s->fps > 0 || sampled ? 0 : (s->every > 1 ? s->every : 1);
    p->fps = s->fps > 0 ? s->fps : 0;
    /* On disk (store_for_pack.h) the sampler is its kind (0: none), the fps
     * field is the fps sampler's rate, and what the kind does not use is 0. */
    if (w->kind == REEL_SAMPLER_FPS) {
        p->sampler = REEL_SAMPLER_FPS;
        p->fps = w->fps;
        p->min_frames = w->min_frames;
        p->max_frames = w->max_frames;
        p->frame_factor = w->frame_factor;
    } else if (w->kind == REEL_SAMPLER_COUNT) {
        p->sampler = REEL_SAMPLER_COUNT;
        p->frames = w->frames_per_clip;
        p->frame_factor = w->frame_factor;
    }
    p->part_count = (uint32_t)(s->part_count > 0 ? s->part_count : 1);
    p->shard_size = (uint64_t)s->shard_size;
    p->color = s->color;
    p->dtype = s->dtype;
    if (s->audio) {
        p->audio = 1;
        p->audio_rate = s->audio->sample_rate;
        p->audio_channels = s->audio->channels;
        p->audio_stream = s->audio->stream_index;
    }
}

void reel__store_header_write(uint8_t *out, const char *magic, const reel__store_params *p, uint64_t num_records)
{
    memset(out, 0, REEL_STORE_HEADER_BYTES);
    memcpy(out, magic, 8);
    uint8_t *q = out + 8;
    put_U32(&q, p->audio ? REEL_STORE_VERSION_AUDIO : REEL_STORE_VERSION);
    put_U32(&q, REEL_STORE_HEADER_BYTES);
    put_U64(&q, num_records);
    params_put(&q, p);
    /* the rest is reserved (zero) */
}

int reel__store_header_parse(const uint8_t *in, size_t n, const char *magic, const char *name, reel__store_params *p,
                             uint64_t *num_records, reel_error *err)
{
    if (n < REEL_STORE_HEADER_BYTES || memcmp(in, magic, 8) != 0)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: not a reel store file (bad magic or too short)", name);
    const uint8_t *q = in + 8;
    uint32_t version = get_U32(&q), hbytes = get_U32(&q);
    if (version != REEL_STORE_VERSION && version != REEL_STORE_VERSION_AUDIO)
        return reel__error_set(err, REEL_E_CORRUPT,
                               "%s: store format version %u; this reel reads versions %d and %d (a "
                               "store packed with --audio by an older reel, version 2: pack it again)",
                               name, version, REEL_STORE_VERSION, REEL_STORE_VERSION_AUDIO);
    if (hbytes != REEL_STORE_HEADER_BYTES)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: bad header size %u", name, hbytes);
    *num_records = get_U64(&q);
    memset(p, 0, sizeof *p);
    params_get(&q, p);
    if (p->format < REEL_STORE_FORMAT_JPEG || p->format > REEL_STORE_FORMAT_H264 || p->part_count < 1 ||
        p->part_count > 1000000 || p->zstd_level > 22 || !(p->fps >= 0 && p->fps < 1e6) || p->every < 0 ||
        p->shard_size < REEL_STORE_ALIGN ||
        (p->sampler != 0 && p->sampler != REEL_SAMPLER_FPS && p->sampler != REEL_SAMPLER_COUNT) || p->min_frames < 0 ||
        p->max_frames < 0 || p->frames < 0 || p->frame_factor < 0 ||
        (p->color != REEL_COLOR_RGB && p->color != REEL_COLOR_GRAY) ||
        (p->dtype != REEL_DTYPE_UINT8 && p->dtype != REEL_DTYPE_UINT16) ||
        (p->format != REEL_STORE_FORMAT_RAW && (p->color != REEL_COLOR_RGB || p->dtype != REEL_DTYPE_UINT8)))
        return reel__error_set(err, REEL_E_CORRUPT, "%s: impossible build settings in the header", name);
    /* version 3 is version 1 with audio; a version-1 header's audio fields
     * are its reserved zeros */
    if ((version == REEL_STORE_VERSION_AUDIO) != (p->audio == 1) || (p->audio != 0 && p->audio != 1) ||
        (!p->audio && (p->audio_rate || p->audio_channels || p->audio_stream)) || p->audio_rate < 0 ||
        p->audio_rate > 1000000 || p->audio_channels < 0 || p->audio_channels > 1 || p->audio_stream < -1)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: impossible audio settings in a version %u header", name,
                               version);
    return REEL_OK;
}

/* ---------------------------------------------------------------- records */

static size_t slen(const char *s)
{
    return s ? strlen(s) : 0;
}

size_t reel__store_rec_size(const reel__store_rec *r)
{
    return REC_FIXED + (r->audio ? AUDIO_FIXED + (size_t)r->audio_n_spans * SPAN_FIXED : 0) +
           (size_t)r->num_frames * REEL_STORE_FRAME_BYTES + slen(r->path) + slen(r->reason) + slen(r->class_name) + 4;
}

void reel__store_rec_write(uint8_t *out, const reel__store_rec *r)
{
    size_t total = reel__store_rec_size(r);
    uint8_t *q = out;
    put_U32(&q, REEL_STORE_REC_MAGIC);
    put_U32(&q, (uint32_t)total);
    rec_put(&q, r);
    put_U32(&q, (uint32_t)slen(r->path));
    put_U32(&q, (uint32_t)slen(r->reason));
    put_U32(&q, (uint32_t)slen(r->class_name));
    put_u(&q, r->pixels, 2);
    put_u(&q, r->depth, 2);
    if (r->audio) audio_put(&q, r);
    for (uint32_t i = 0; r->audio && i < r->audio_n_spans; i++) span_put(&q, &r->audio_spans[i]);
    for (uint32_t i = 0; i < r->num_frames; i++) frame_put(&q, &r->frames[i]);
    const char *strs[3] = { r->path, r->reason, r->class_name };
    for (int k = 0; k < 3; k++) {
        size_t l = slen(strs[k]);
        if (l) memcpy(q, strs[k], l);
        q += l;
    }
    put_U32(&q, reel__crc32(0, out, (size_t)(q - out)));
}

void reel__store_rec_free(reel__store_rec *r)
{
    if (!r) return;
    free(r->path);
    free(r->reason);
    free(r->class_name);
    free(r->frames);
    free(r->audio_spans);
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

/* The stored frames of a parsed entry lie inside its record, one after
 * another in stored order (the writer appends them so), with increasing
 * source indices: the reader computes each frame's place in a fetched span
 * from these offsets, so an out-of-order or overlapping frame is refused
 * here rather than read out of bounds there. */
static int check_frames(const reel__store_rec *r, const char *name, reel_error *err)
{
    uint64_t end = 0;
    for (uint32_t i = 0; i < r->num_frames; i++) {
        const reel__store_frame *f = &r->frames[i];
        if ((uint64_t)f->offset + f->length > r->length)
            return reel__error_set(err, REEL_E_CORRUPT,
                                   "%s: the entry of %s: stored frame %u (bytes %u to %llu) lies outside its record "
                                   "of %llu bytes",
                                   name, r->path, i, f->offset, (unsigned long long)f->offset + f->length,
                                   (unsigned long long)r->length);
        if (f->offset < end)
            return reel__error_set(err, REEL_E_CORRUPT,
                                   "%s: the entry of %s: stored frame %u starts at byte %u, before the end of frame %u "
                                   "(%llu): frames out of order or overlapping",
                                   name, r->path, i, f->offset, i - 1, (unsigned long long)end);
        if (f->source_index < 0 || (i > 0 && f->source_index <= r->frames[i - 1].source_index))
            return reel__error_set(err, REEL_E_CORRUPT,
                                   "%s: the entry of %s: stored frame %u has source index %lld, not after the last",
                                   name, r->path, i, (long long)f->source_index);
        end = (uint64_t)f->offset + f->length;
    }
    return REEL_OK;
}

/* The damage spans: ascending, each touching the window, its packets
 * counted; and the valid range they give the window is the stored one. */
static int spans_possible(const reel__store_rec *r)
{
    const int64_t lo = r->audio_first, hi = lo + r->audio_samples;
    for (uint32_t i = 0; i < r->audio_n_spans; i++) {
        const reel__audio_span *p = &r->audio_spans[i];
        if (p->lo > p->hi || p->packets < 1 || p->lo < lo - ((int64_t)1 << 40) || p->hi > hi + ((int64_t)1 << 40) ||
            (i && p->lo < r->audio_spans[i - 1].lo))
            return 0;
        if (p->hi > p->lo ? p->hi <= lo || p->lo >= hi : p->lo < lo || p->lo >= hi) return 0;
    }
    reel_audio_window w;
    memset(&w, 0, sizeof w);
    w.valid_lo = r->audio_stream_lo;
    w.valid_hi = r->audio_stream_hi;
    reel__audio_damage_of(r->audio_spans, r->audio_n_spans, lo, hi, &w);
    return w.valid_lo == r->audio_valid_lo && w.valid_hi == r->audio_valid_hi;
}

/* A version-3 entry's audio block: the samples' bytes are the record's
 * tail, after its frames, exactly channels x samples float32; the valid
 * range inside the window; nothing for a failed record or a video whose
 * audio is missing or failed. */
static int check_audio(const reel__store_rec *r, const char *name, reel_error *err)
{
    uint64_t frames_end = 0;
    for (uint32_t i = 0; i < r->num_frames; i++)
        if ((uint64_t)r->frames[i].offset + r->frames[i].length > frames_end)
            frames_end = (uint64_t)r->frames[i].offset + r->frames[i].length;
    int ok;
    if (r->status == REEL_OK && r->audio_status == REEL_OK)
        ok = r->audio_channels >= 1 && r->audio_channels <= 64 && r->audio_rate >= 1 && r->audio_rate <= 1000000 &&
             r->a0_tb_num > 0 && r->a0_tb_den > 0 && r->audio_samples >= 0 && r->audio_samples <= INT32_MAX &&
             r->audio_length == (uint64_t)r->audio_channels * (uint64_t)r->audio_samples * 4 &&
             r->audio_offset >= frames_end && r->audio_offset <= r->length &&
             r->audio_length == r->length - r->audio_offset && r->audio_valid_lo >= 0 &&
             r->audio_valid_lo <= r->audio_valid_hi && r->audio_valid_hi <= r->audio_samples &&
             r->audio_stream_lo >= 0 && r->audio_stream_lo <= r->audio_stream_hi &&
             r->audio_stream_hi <= r->audio_samples && r->audio_zero == 0 && spans_possible(r);
    else
        ok = r->audio_status <= 0 && r->audio_status > -1000 && (r->status == REEL_OK || r->audio_status == REEL_OK) &&
             r->audio_channels == 0 && r->audio_samples == 0 && r->audio_length == 0 && r->audio_offset == 0 &&
             r->audio_crc == 0 && r->audio_valid_lo == 0 && r->audio_valid_hi == 0 && r->audio_stream_lo == 0 &&
             r->audio_stream_hi == 0 && r->audio_n_spans == 0 && r->audio_zero == 0;
    if (!ok) return reel__error_set(err, REEL_E_CORRUPT, "%s: the entry of %s: impossible audio values", name, r->path);
    return REEL_OK;
}

int reel__store_rec_parse(const uint8_t *in, size_t n, const char *name, int audio, reel__store_rec *r, size_t *used,
                          reel_error *err)
{
    memset(r, 0, sizeof *r);
    if (n < REC_FIXED + 4)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: truncated record entry (%zu bytes left)", name, n);
    const uint8_t *q = in;
    uint32_t magic = get_U32(&q), total = get_U32(&q);
    if (magic != REEL_STORE_REC_MAGIC)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: bad record entry (no marker)", name);
    if (total < REC_FIXED + 4 || total > n)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: record entry of %u bytes does not fit (%zu left)", name, total,
                               n);
    const uint8_t *end = in + total - 4;
    const uint8_t *cq = end;
    uint32_t crc = get_U32(&cq);
    if (crc != reel__crc32(0, in, total - 4))
        return reel__error_set(err, REEL_E_CORRUPT, "%s: record entry checksum mismatch", name);
    rec_get(&q, r);
    uint32_t lp = get_U32(&q), lr = get_U32(&q), lc = get_U32(&q);
    r->pixels = (uint16_t)get_u(&q, 2);
    r->depth = (uint16_t)get_u(&q, 2);
    if (audio) {
        if (end - q < AUDIO_FIXED) {
            memset(r, 0, sizeof *r);
            return reel__error_set(err, REEL_E_CORRUPT, "%s: record entry too short for its audio block", name);
        }
        audio_get(&q, r);
        r->audio = 1;
        const uint32_t ns = r->audio_n_spans;
        r->audio_n_spans = 0; /* until they are read */
        if ((uint64_t)(end - q) < (uint64_t)ns * SPAN_FIXED) {
            memset(r, 0, sizeof *r);
            return reel__error_set(err, REEL_E_CORRUPT, "%s: record entry too short for its audio damage", name);
        }
        if (ns && !(r->audio_spans = malloc((size_t)ns * sizeof *r->audio_spans))) {
            memset(r, 0, sizeof *r);
            return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
        }
        for (uint32_t i = 0; i < ns; i++) span_get(&q, &r->audio_spans[i]);
        r->audio_n_spans = ns;
    }
    uint64_t need = (uint64_t)r->num_frames * REEL_STORE_FRAME_BYTES + (uint64_t)lp + lr + lc;
    if (need != (uint64_t)(end - q)) {
        reel__store_rec_free(r);
        return reel__error_set(err, REEL_E_CORRUPT, "%s: record entry lengths do not add up", name);
    }
    const uint8_t *strs = q + (size_t)r->num_frames * REEL_STORE_FRAME_BYTES;
    r->frames = NULL;
    r->path = take_str(strs, lp);
    r->reason = take_str(strs + lp, lr);
    r->class_name = take_str(strs + lp + lr, lc);
    if (r->num_frames) r->frames = malloc((size_t)r->num_frames * sizeof *r->frames);
    if (!r->path || !r->reason || !r->class_name || (r->num_frames && !r->frames)) {
        reel__store_rec_free(r);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    }
    for (uint32_t i = 0; i < r->num_frames; i++) frame_get(&q, &r->frames[i]);
    int st = REEL_OK;
    if (r->sample < 0 || r->status > 0 || r->status < -1000 || r->width > 65536 || r->height > 65536 ||
        r->offset > (UINT64_C(1) << 62) || r->length > (UINT64_C(1) << 40) ||
        (r->status == REEL_OK && (r->tb_num <= 0 || r->tb_den <= 0 || r->width == 0 || r->height == 0)) ||
        (r->status != REEL_OK && (r->length != 0 || r->num_frames != 0)) || !reel__store_pixel_bytes(r->pixels) ||
        (r->pixels == REEL__STORE_PIX_GRAY16 ? r->depth < 9 || r->depth > 16 : r->depth != 0))
        st = reel__error_set(err, REEL_E_CORRUPT, "%s: the entry of %s: impossible values", name, r->path);
    if (st == REEL_OK) st = check_frames(r, name, err);
    if (st == REEL_OK && audio) st = check_audio(r, name, err);
    if (st != REEL_OK) {
        reel__store_rec_free(r);
        return st;
    }
    *used = total;
    return REEL_OK;
}

/* ---------------------------------------------------------------- the index */

typedef struct part_key {
    uint32_t part;
    int64_t i;
} part_key;

static int cmp_part_key(const void *x, const void *y)
{
    const part_key *a = x, *b = y;
    if (a->part != b->part) return a->part < b->part ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i; /* records are sorted by sample: index order is sample order */
}

/* What the index says about each record's bytes must be possible before
 * any read trusts it (the shard's real size is checked by the reader, which
 * knows it once the shard is open): a raw frame holds exactly one picture;
 * a record starts on a 4 KiB boundary and, unless it opens its shard, ends
 * within the build's shard size (the writer starts a new shard otherwise);
 * and the records of one part lie in its shards in dataset order, one after
 * another, never overlapping. `order` holds the records sorted by (part,
 * sample). */
static int check_record_spans(const reel__store_params *p, const reel__store_rec *r, const part_key *order,
                              int64_t count, const char *name, reel_error *err)
{
    const uint64_t raw = p->format == REEL_STORE_FORMAT_RAW && p->zstd_level == 0 ? 1 : 0;
    for (int64_t i = 0; i < count; i++) {
        const reel__store_rec *a = &r[i];
        if (a->part >= p->part_count)
            return reel__error_set(err, REEL_E_CORRUPT, "%s: record %lld (%s): part %u of a build of %u parts", name,
                                   (long long)i, a->path, a->part, p->part_count);
        if (a->length == 0) continue;
        if (a->offset % REEL_STORE_ALIGN != 0 || (a->offset > 0 && a->offset + a->length > p->shard_size))
            return reel__error_set(err, REEL_E_CORRUPT,
                                   "%s: record %lld (%s): bytes %llu to %llu cannot lie in a shard of this build "
                                   "(records start at multiples of %d and end within %llu bytes)",
                                   name, (long long)i, a->path, (unsigned long long)a->offset,
                                   (unsigned long long)(a->offset + a->length), REEL_STORE_ALIGN,
                                   (unsigned long long)p->shard_size);
        if (p->format != REEL_STORE_FORMAT_RAW && a->pixels != REEL__STORE_PIX_RGB24)
            return reel__error_set(err, REEL_E_CORRUPT, "%s: record %lld (%s): pixels of kind %u in a %s store", name,
                                   (long long)i, a->path, a->pixels,
                                   p->format == REEL_STORE_FORMAT_JPEG ? "jpeg" : "h264");
        const uint64_t pb = reel__store_pixel_bytes(a->pixels);
        for (uint32_t k = 0; raw && k < a->num_frames; k++)
            if (a->frames[k].length != (uint64_t)a->width * a->height * pb)
                return reel__error_set(err, REEL_E_CORRUPT,
                                       "%s: record %lld (%s): raw stored frame %u has %u bytes, not %ux%u pixels of "
                                       "%u bytes",
                                       name, (long long)i, a->path, k, a->frames[k].length, a->width, a->height,
                                       (unsigned)pb);
    }
    const reel__store_rec *prev = NULL;
    int64_t prev_i = -1;
    for (int64_t k = 0; k < count; k++) {
        const reel__store_rec *a = &r[order[k].i];
        if (a->length == 0) continue;
        if (prev && prev->part == a->part &&
            (a->shard_seq < prev->shard_seq ||
             (a->shard_seq == prev->shard_seq && a->offset < prev->offset + prev->length)))
            return reel__error_set(err, REEL_E_CORRUPT,
                                   "%s: record %lld (%s): shard %u bytes %llu to %llu overlap or come before record "
                                   "%lld (%s, shard %u bytes %llu to %llu), which precedes it in its part",
                                   name, (long long)order[k].i, a->path, a->shard_seq, (unsigned long long)a->offset,
                                   (unsigned long long)(a->offset + a->length), (long long)prev_i, prev->path,
                                   prev->shard_seq, (unsigned long long)prev->offset,
                                   (unsigned long long)(prev->offset + prev->length));
        prev = a;
        prev_i = order[k].i;
    }
    return REEL_OK;
}

static void free_recs(reel__store_rec *r, int64_t n)
{
    for (int64_t k = 0; k < n; k++) reel__store_rec_free(&r[k]);
    free(r);
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
    uint32_t crc = get_U32(&tail);
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
        st = reel__store_rec_parse(in + off, n - 4 - off, name, p->audio, &r[i], &used, err);
        if (st != REEL_OK) {
            free_recs(r, (int64_t)i);
            if (st == REEL_E_CORRUPT && err) {
                char why[REEL_ERROR_MSG_SIZE];
                snprintf(why, sizeof why, "%s", err->message);
                reel__error_set(err, st, "%s (record %" PRIu64 " of %" PRIu64 ")", why, i, count);
            }
            return st;
        }
        if (i > 0 && r[i].sample <= r[i - 1].sample) {
            free_recs(r, (int64_t)i + 1);
            return reel__error_set(err, REEL_E_CORRUPT, "%s: records out of order (record %" PRIu64 ")", name, i);
        }
        off += used;
    }
    if (off != n - 4) {
        free_recs(r, (int64_t)count);
        return reel__error_set(err, REEL_E_CORRUPT, "%s: %zu unexpected bytes after the records", name, n - 4 - off);
    }
    part_key *keys = malloc((count ? (size_t)count : 1) * sizeof *keys);
    if (!keys) st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    for (uint64_t i = 0; st == REEL_OK && i < count; i++) keys[i] = (part_key){ r[i].part, (int64_t)i };
    if (st == REEL_OK) qsort(keys, (size_t)count, sizeof *keys, cmp_part_key);
    if (st == REEL_OK) st = check_record_spans(p, r, keys, (int64_t)count, name, err);
    free(keys);
    if (st != REEL_OK) {
        free_recs(r, (int64_t)count);
        return st;
    }
    *recs = r;
    *nrec = (int64_t)count;
    return REEL_OK;
}

void reel__store_shard_name(char *out, size_t size, uint32_t part, uint32_t seq)
{
    snprintf(out, size, "shard-%05u-%05u.bin", part, seq);
}

int reel__store_dir_has_index(const char *dir)
{
    char idx[4200];
    struct stat sb;
    return reel__store_join(idx, sizeof idx, dir, REEL_STORE_INDEX_NAME) == 0 && stat(idx, &sb) == 0;
}

int reel__store_join(char *out, size_t size, const char *dir, const char *name)
{
    size_t l = strlen(dir);
    int n = snprintf(out, size, "%s%s%s", dir, l && dir[l - 1] == '/' ? "" : "/", name);
    return n > 0 && (size_t)n < size ? 0 : -1;
}
