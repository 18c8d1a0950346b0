/* read.c: reading a store: a per-thread reader that fetches only the bytes
 * of the wanted frames (through src/io, so shards may be remote), checks
 * their checksums, and decodes them (libjpeg-turbo, zstd, or reel's own
 * decoder for H.264 records) into RGB24 frames for a visitor; and verify. */
#include "store/store_internal.h"
#include "core/clock.h"
#include "core/frame.h"
#include "io/io_front.h"
#include "io/remote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <turbojpeg.h>
#include <zstd.h>

#include <libavutil/frame.h>

struct reel_store_reader {
    reel_store *store;
    reel_store_reader_settings s;
    reel__io *io; /* the open shard */
    char io_shard[32];
    tjhandle tj;
    reel__jpeg *jw; /* window decodes */
    AVFrame *view;  /* a window or a raw frame in place, not owned */
    ZSTD_DCtx *zd;
    AVFrame *rgb;   /* RGB24 picture handed to visitors */
    uint8_t *dense; /* a zstd frame's picture: dense RGB24 rows (w * 3 bytes), viewed by `view` */
    size_t dense_cap;
    reel__store_blob blob; /* bytes of the current read */
};

void reel_store_reader_default_settings(reel_store_reader_settings *s)
{
    if (!s) return;
    memset(s, 0, sizeof *s);
    s->decoder_threads = 1;
    s->verify = 1;
}

int reel_store_reader_create(reel_store_reader **out, reel_store *store, const reel_store_reader_settings *settings,
                             reel_error *err)
{
    if (!out || !store) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_store_reader_create: NULL argument");
    *out = NULL;
    reel_store_reader *r = calloc(1, sizeof *r);
    if (!r) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", store->dir);
    r->store = store;
    if (settings)
        r->s = *settings;
    else
        reel_store_reader_default_settings(&r->s);
    r->rgb = av_frame_alloc();
    r->view = av_frame_alloc();
    if (!r->rgb || !r->view) {
        av_frame_free(&r->rgb);
        av_frame_free(&r->view);
        free(r);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", store->dir);
    }
    *out = r;
    return REEL_OK;
}

void reel_store_reader_destroy(reel_store_reader **pr)
{
    if (!pr || !*pr) return;
    reel_store_reader *r = *pr;
    reel__io_close(&r->io);
    if (r->tj) tjDestroy(r->tj);
    reel__jpeg_destroy(&r->jw);
    av_frame_free(&r->view);
    ZSTD_freeDCtx(r->zd);
    av_frame_free(&r->rgb);
    free(r->dense);
    reel__store_blob_free(&r->blob);
    free(r);
    *pr = NULL;
}

void reel__store_reader_set_interrupt(reel_store_reader *r, int (*fn)(void *), void *opaque)
{
    r->s.interrupt = fn;
    r->s.interrupt_opaque = opaque;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1 << 16;
    while (c < need) c *= 2;
    uint8_t *b = realloc(*buf, c);
    if (!b) return -1;
    *buf = b;
    *cap = c;
    return 0;
}

static int interrupted(const reel_store_reader *r)
{
    return r->s.interrupt && r->s.interrupt(r->s.interrupt_opaque);
}

/* Opens the record's shard (kept open for the next read of the same shard). */
static int open_shard(reel_store_reader *r, int64_t record, reel_error *err)
{
    const char *name = r->store->shard_names[record];
    if (r->io && !strcmp(r->io_shard, name)) return REEL_OK;
    reel__io_close(&r->io);
    char path[4200];
    if (reel__store_join(path, sizeof path, r->store->dir, name) != 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: path too long", r->store->dir);
    reel__io_options o;
    reel__io_default_options(&o);
    o.interrupt = r->s.interrupt;
    o.interrupt_opaque = r->s.interrupt_opaque;
    o.remote = r->s.remote;
    reel_error e;
    int st = reel__io_open(&r->io, path, &o, &e);
    if (st != REEL_OK)
        return reel__error_set(err, st, "%s: shard %s (record of %s): %s", r->store->dir, name,
                               r->store->recs[record].path,
                               st == REEL_E_NOT_FOUND ? "the shard is missing" : e.message);
    snprintf(r->io_shard, sizeof r->io_shard, "%s", name);
    return REEL_OK;
}

/* Reads `len` bytes at `off` of the record into b->data + at. */
static int read_bytes(reel_store_reader *r, int64_t record, uint64_t off, size_t len, size_t at, reel__store_blob *b,
                      reel_store_read_stats *stats, reel_error *err)
{
    const reel__store_rec *rec = &r->store->recs[record];
    int st = open_shard(r, record, err);
    if (st != REEL_OK) return st;
    /* the record's span inside the shard, before any buffer is sized by it
     * (the index bounds it by the build's shard size; this is the file's) */
    const int64_t size = reel__io_size(r->io);
    if (off > rec->length || len > rec->length - off ||
        (size >= 0 && (rec->offset + off + len > (uint64_t)size || rec->offset + off + len < rec->offset)))
        return reel__error_set(err, REEL_E_CORRUPT,
                               "%s: shard %s: record of %s: the shard is truncated (bytes %llu to %llu of a record "
                               "at %llu wanted, the shard has %lld)",
                               r->store->dir, r->io_shard, rec->path, (unsigned long long)off,
                               (unsigned long long)(off + len), (unsigned long long)rec->offset, (long long)size);
    if (grow(&b->data, &b->cap, at + len + 64) != 0) /* padding: swscale may read a little past a raw frame */
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", rec->path);
    int64_t t0 = reel__clock_ns();
    reel_error e;
    reel_remote_stats before, after;
    reel__remote_stats(r->io, &before);
    st = reel__io_read_exact(r->io, (int64_t)(rec->offset + off), b->data + at, len, &e);
    if (stats) {
        stats->bytes_read += (int64_t)len;
        stats->read_seconds += (double)(reel__clock_ns() - t0) / 1e9;
        reel__remote_stats(r->io, &after); /* what this read asked of the server */
        reel__remote_stats_delta(&stats->remote, &after, &before);
    }
    if (st == REEL_E_CORRUPT)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: shard %s: record of %s: the shard is truncated", r->store->dir,
                               r->io_shard, rec->path);
    if (st != REEL_OK)
        return reel__error_set(err, st, "%s: shard %s: record of %s: %s", r->store->dir, r->io_shard, rec->path,
                               e.message);
    return REEL_OK;
}

/* The pixel format of a record's frames (REEL__STORE_PIX_*): what the
 * converter is handed, as a decoded frame of that format would be. */
static int pixel_format(const reel__store_rec *rec)
{
    switch (rec->pixels) {
    case REEL__STORE_PIX_GRAY8: return AV_PIX_FMT_GRAY8;
    case REEL__STORE_PIX_RGB48: return AV_PIX_FMT_RGB48LE;
    case REEL__STORE_PIX_GRAY16:
        return rec->depth == 9    ? AV_PIX_FMT_GRAY9LE
               : rec->depth == 10 ? AV_PIX_FMT_GRAY10LE
               : rec->depth == 12 ? AV_PIX_FMT_GRAY12LE
               : rec->depth == 14 ? AV_PIX_FMT_GRAY14LE
                                  : AV_PIX_FMT_GRAY16LE;
    default: return AV_PIX_FMT_RGB24;
    }
}

static int picture(reel_store_reader *r, int w, int h, int fmt, const char *name, reel_error *err)
{
    if (r->rgb->data[0] && r->rgb->width == w && r->rgb->height == h && r->rgb->format == fmt) return REEL_OK;
    av_frame_unref(r->rgb);
    r->rgb->format = fmt;
    r->rgb->width = w;
    r->rgb->height = h;
    if (av_frame_get_buffer(r->rgb, 64) < 0) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    return REEL_OK;
}

/* Decodes stored frame `pos` (its bytes at src) into *out: the whole
 * picture (r->rgb), or with `want` = {x, y, w, h, d} a window that holds
 * that part (JPEG: decoded only there, scaled by 1/d; raw: only those bytes
 * copied, d ignored). */
static int decode_image(reel_store_reader *r, int64_t record, int64_t pos, const uint8_t *src, const int *want,
                        reel_frame *out, reel_error *err)
{
    const reel__store_rec *rec = &r->store->recs[record];
    const reel__store_frame *f = &rec->frames[pos];
    const int w = (int)rec->width, h = (int)rec->height;
    const int format = r->store->params.format;
    if (r->s.verify && reel__crc32(0, src, f->length) != f->crc)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: shard %s: %s: checksum mismatch in stored frame %lld",
                               r->store->dir, r->store->shard_names[record], rec->path, (long long)pos);
    const int fmt = pixel_format(rec);
    const size_t pb = reel__store_pixel_bytes(rec->pixels);
    const size_t raw = (size_t)w * (size_t)h * pb;
    if (format != REEL_STORE_FORMAT_JPEG && r->store->params.zstd_level == 0 && f->length != raw)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: shard %s: %s: stored frame %lld has %u bytes, not %zu",
                               r->store->dir, r->store->shard_names[record], rec->path, (long long)pos, f->length, raw);
    if (want && (format == REEL_STORE_FORMAT_JPEG || r->store->params.zstd_level == 0)) {
        int win[4] = { want[0], want[1], want[2], want[3] };
        const uint8_t *pix;
        int stride;
        if (format == REEL_STORE_FORMAT_JPEG) {
            char why[256];
            if (!r->jw && reel__jpeg_create(&r->jw) != 0)
                return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", rec->path);
            if (reel__jpeg_decode_window(r->jw, src, f->length, w, h, want[4], win, &pix, &stride, why, sizeof why) !=
                0)
                return reel__error_set(err, REEL_E_CORRUPT, "%s: shard %s: %s: stored frame %lld: %s", r->store->dir,
                                       r->store->shard_names[record], rec->path, (long long)pos, why);
            av_frame_unref(r->view);
            r->view->data[0] = (uint8_t *)pix;
            r->view->linesize[0] = stride;
        } else {
            int st = picture(r, win[2], win[3], fmt, rec->path, err);
            if (st != REEL_OK) return st;
            for (int y = 0; y < win[3]; y++)
                memcpy(r->rgb->data[0] + (size_t)y * (size_t)r->rgb->linesize[0],
                       src + ((size_t)(win[1] + y) * (size_t)w + (size_t)win[0]) * pb, (size_t)win[2] * pb);
            av_frame_unref(r->view);
            r->view->data[0] = r->rgb->data[0];
            r->view->linesize[0] = r->rgb->linesize[0];
        }
        r->view->format = format == REEL_STORE_FORMAT_JPEG ? AV_PIX_FMT_RGB24 : fmt;
        r->view->width = win[2];
        r->view->height = win[3];
        reel__frame_wrap(out, r->view, pos, f->pts, 0);
        out->scale = format == REEL_STORE_FORMAT_JPEG ? want[4] : 1;
        out->win_x = win[0];
        out->win_y = win[1];
        out->full_w = w;
        out->full_h = h;
        return REEL_OK;
    }
    if (format == REEL_STORE_FORMAT_JPEG) {
        if (!r->tj && !(r->tj = tjInitDecompress()))
            return reel__error_set(err, REEL_E_INTERNAL, "%s: libjpeg-turbo: %s", rec->path, tjGetErrorStr());
        int jw = 0, jh = 0, sub = 0, cs = 0;
        if (tjDecompressHeader3(r->tj, src, f->length, &jw, &jh, &sub, &cs) != 0 || jw != w || jh != h)
            return reel__error_set(err, REEL_E_CORRUPT, "%s: shard %s: %s: stored frame %lld is not a %dx%d JPEG",
                                   r->store->dir, r->store->shard_names[record], rec->path, (long long)pos, w, h);
        int st = picture(r, w, h, AV_PIX_FMT_RGB24, rec->path, err);
        if (st != REEL_OK) return st;
        reel__frame_wrap(out, r->rgb, pos, f->pts, 0);
        /* flags 0: libjpeg-turbo's default decode (fancy upsampling, islow DCT) */
        if (tjDecompress2(r->tj, src, f->length, r->rgb->data[0], w, r->rgb->linesize[0], h, TJPF_RGB, 0) != 0 &&
            tjGetErrorCode(r->tj) == TJERR_FATAL)
            return reel__error_set(err, REEL_E_CORRUPT, "%s: shard %s: %s: stored frame %lld: %s", r->store->dir,
                                   r->store->shard_names[record], rec->path, (long long)pos, tjGetErrorStr2(r->tj));
        return REEL_OK;
    }
    if (r->store->params.zstd_level > 0) {
        /* A zstd frame holds the picture's rows back to back (w * pb bytes
         * each), and an AVFrame's rows are padded to 64 bytes: decompress in
         * one call into a dense picture of the reader's and hand the
         * visitor a view of it (the converter takes any row stride). The
         * frame's own content size must be the picture's before anything
         * is allocated for it. */
        unsigned long long cs = ZSTD_getFrameContentSize(src, f->length);
        if (cs != (unsigned long long)raw)
            return reel__error_set(err, REEL_E_CORRUPT,
                                   "%s: shard %s: %s: stored frame %lld: not a zstd frame of a %dx%d picture",
                                   r->store->dir, r->store->shard_names[record], rec->path, (long long)pos, w, h);
        if (!r->zd && !(r->zd = ZSTD_createDCtx()))
            return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", rec->path);
        if (grow(&r->dense, &r->dense_cap, raw + 64) != 0) /* padding: swscale may read past the last row */
            return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", rec->path);
        size_t z = ZSTD_decompressDCtx(r->zd, r->dense, raw, src, f->length);
        if (ZSTD_isError(z) || z != raw)
            return reel__error_set(err, REEL_E_CORRUPT, "%s: shard %s: %s: stored frame %lld: zstd: %s", r->store->dir,
                                   r->store->shard_names[record], rec->path, (long long)pos,
                                   ZSTD_isError(z) ? ZSTD_getErrorName(z) : "wrong size");
        av_frame_unref(r->view);
        r->view->data[0] = r->dense;
        r->view->linesize[0] = (int)((size_t)w * pb);
        r->view->format = fmt;
        r->view->width = w;
        r->view->height = h;
        reel__frame_wrap(out, r->view, pos, f->pts, 0);
        return REEL_OK;
    }
    int st = picture(r, w, h, fmt, rec->path, err);
    if (st != REEL_OK) return st;
    reel__frame_wrap(out, r->rgb, pos, f->pts, 0);
    for (int y = 0; y < h; y++)
        memcpy(r->rgb->data[0] + (size_t)y * (size_t)r->rgb->linesize[0], src + (size_t)y * w * pb, (size_t)w * pb);
    return REEL_OK;
}

/* ---------------------------------------------------------------- fetch, then decode */

void reel__store_blob_free(reel__store_blob *b)
{
    if (!b) return;
    free(b->data);
    free(b->u);
    free(b->at);
    memset(b, 0, sizeof *b);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int check_request(const reel_store_reader *r, int64_t record, const int64_t *positions, size_t n,
                         reel_error *err)
{
    reel_store *s = r->store;
    if (record < 0 || record >= s->nrec)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: record %lld of %lld", s->dir, (long long)record,
                               (long long)s->nrec);
    const reel__store_rec *rec = &s->recs[record];
    if (rec->status != REEL_OK)
        return reel__error_set(err, rec->status, "%s: %s: not in the store: %s", s->dir, rec->path, rec->reason);
    for (size_t i = 0; i < n; i++)
        if (positions[i] < 0 || positions[i] >= (int64_t)rec->num_frames)
            return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: stored frame %lld of %u", rec->path,
                                   (long long)positions[i], rec->num_frames);
    return REEL_OK;
}

int reel__store_fetch(reel_store_reader *r, int64_t record, const int64_t *positions, size_t n, reel__store_blob *b,
                      reel_store_read_stats *stats, reel_error *err)
{
    if (!r || !b || (!positions && n)) return reel__error_set(err, REEL_E_INVALID_ARG, "store fetch: NULL argument");
    int st = check_request(r, record, positions, n, err);
    if (st != REEL_OK) return st;
    const reel__store_rec *rec = &r->store->recs[record];
    b->record = record;
    b->len = 0;
    b->m = 0;
    b->whole = 0;
    if (n == 0) return REEL_OK;
    if (interrupted(r)) return reel__error_set(err, REEL_E_CANCELLED, "%s: cancelled", rec->path);
    if (r->store->params.format == REEL_STORE_FORMAT_H264) {
        b->whole = 1;
        st = read_bytes(r, record, 0, (size_t)rec->length, 0, b, stats, err);
        if (st == REEL_OK && r->s.verify && reel__crc32(0, b->data, (size_t)rec->length) != rec->crc)
            st = reel__error_set(err, REEL_E_CORRUPT, "%s: shard %s: %s: record checksum mismatch", r->store->dir,
                                 r->store->shard_names[record], rec->path);
        /* the stream is the record before its audio (the record's tail) */
        if (st == REEL_OK) b->len = (size_t)(rec->audio_length ? rec->audio_offset : rec->length);
        return st;
    }
    /* the distinct wanted frames, ascending */
    if (b->ucap < n) {
        int64_t *u = realloc(b->u, n * sizeof *u);
        uint64_t *at = u ? realloc(b->at, n * sizeof *at) : NULL;
        if (u) b->u = u;
        if (at) b->at = at;
        if (!u || !at) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", rec->path);
        b->ucap = n;
    }
    memcpy(b->u, positions, n * sizeof *positions);
    qsort(b->u, n, sizeof *b->u, cmp_i64);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || b->u[i] != b->u[m - 1]) b->u[m++] = b->u[i];
    b->m = m;
    const reel__store_frame *fr = rec->frames;
    /* the span of the wanted frames (the index keeps frames in stored
     * order, so these are the first's start and the last's end; min and max
     * hold whatever the order) */
    uint64_t lo = UINT64_MAX, hi = 0, want = 0;
    for (size_t i = 0; i < m; i++) {
        const reel__store_frame *f = &fr[b->u[i]];
        if (f->offset < lo) lo = f->offset;
        if ((uint64_t)f->offset + f->length > hi) hi = (uint64_t)f->offset + f->length;
        want += f->length;
    }
    if (hi - lo <= 2 * want + (1u << 18)) {
        /* close together: one sequential read of the span */
        st = read_bytes(r, record, lo, (size_t)(hi - lo), 0, b, stats, err);
        for (size_t i = 0; i < m; i++) b->at[i] = fr[b->u[i]].offset - lo;
        b->len = (size_t)(hi - lo);
    } else {
        /* scattered: one read per frame, packed one after another */
        size_t at = 0;
        for (size_t i = 0; st == REEL_OK && i < m; i++) {
            st = read_bytes(r, record, fr[b->u[i]].offset, fr[b->u[i]].length, at, b, stats, err);
            b->at[i] = at;
            at += fr[b->u[i]].length;
        }
        b->len = at;
    }
    return st;
}

/* H264 records: decoded by reel's decoder from memory; the visitor sees the
 * source pts. */
typedef struct h264_visit {
    const reel__store_rec *rec;
    reel_frame_fn fn;
    void *opaque;
} h264_visit;

static int h264_fn(void *opaque, const reel_frame *frame, size_t pos)
{
    h264_visit *v = opaque;
    reel_frame f = *frame;
    int64_t k = frame->index;
    if (k >= 0 && k < (int64_t)v->rec->num_frames) f.pts = v->rec->frames[k].pts;
    return v->fn(v->opaque, &f, pos);
}

static int decode_h264(reel_store_reader *r, int64_t record, const reel__store_blob *b, const int64_t *positions,
                       size_t n, reel_frame_fn fn, void *opaque, reel_store_read_stats *stats, reel_error *err)
{
    const reel__store_rec *rec = &r->store->recs[record];
    reel_decoder_settings ds;
    reel_decoder_default_settings(&ds);
    ds.threads = r->s.decoder_threads > 0 ? r->s.decoder_threads : 1;
    ds.gop_contexts = 0; /* the reader's caller owns the cores */
    ds.interrupt = r->s.interrupt;
    ds.interrupt_opaque = r->s.interrupt_opaque;
    reel_decoder *dec = NULL;
    int64_t t0 = reel__clock_ns();
    int st = reel_decoder_open_memory(&dec, b->data, b->len, rec->path, &ds, err);
    if (st == REEL_OK) {
        const reel_video_info *info = reel_decoder_get_info(dec);
        if (info->num_frames != (int64_t)rec->num_frames)
            st = reel__error_set(
                err, REEL_E_CORRUPT, "%s: shard %s: %s: the stored stream has %lld frames, the index %u", r->store->dir,
                r->store->shard_names[record], rec->path, (long long)info->num_frames, rec->num_frames);
    }
    if (st == REEL_OK) {
        h264_visit v = { rec, fn, opaque };
        reel_decode_stats ds2;
        memset(&ds2, 0, sizeof ds2);
        st = reel_decoder_decode(dec, positions, n, h264_fn, &v, &ds2, err);
        if (stats) {
            stats->frames_decoded += ds2.frames_decoded;
            stats->frames_returned += ds2.frames_returned;
        }
    }
    reel_decoder_close(&dec);
    if (stats) stats->decode_seconds += (double)(reel__clock_ns() - t0) / 1e9;
    return st;
}

typedef struct req {
    int64_t pos;
    size_t i;
} req;

static int cmp_req(const void *a, const void *b)
{
    const req *x = a, *y = b;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

int reel__store_decode(reel_store_reader *r, const reel__store_blob *b, const int64_t *positions, size_t n,
                       reel_frame_fn fn, reel__window_fn window, void *opaque, reel_store_read_stats *stats,
                       reel_error *err)
{
    if (!r || !b || !fn || (!positions && n))
        return reel__error_set(err, REEL_E_INVALID_ARG, "store decode: NULL argument");
    const int64_t record = b->record;
    int st = check_request(r, record, positions, n, err);
    if (st != REEL_OK || n == 0) return st;
    const reel__store_rec *rec = &r->store->recs[record];
    if (b->whole) return decode_h264(r, record, b, positions, n, fn, opaque, stats, err);
    req *q = malloc(n * sizeof *q);
    if (!q) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", rec->path);
    for (size_t i = 0; i < n; i++) {
        q[i].pos = positions[i];
        q[i].i = i;
    }
    qsort(q, n, sizeof *q, cmp_req);
    size_t k = 0; /* index into the fetched frames */
    for (size_t i = 0; st == REEL_OK && i < n;) {
        int64_t pos = q[i].pos;
        while (k < b->m && b->u[k] < pos) k++;
        if (k == b->m || b->u[k] != pos) {
            st = reel__error_set(err, REEL_E_INTERNAL, "%s: stored frame %lld was not fetched", rec->path,
                                 (long long)pos);
            break;
        }
        /* the union of the windows this frame's requests need, and the
         * largest JPEG DCT scaling 1/d that keeps every crop at least as
         * large as its output (so the resize after it only shrinks) */
        int want[5], whole = !window || rec->width == 0;
        want[4] = 8;
        for (size_t j = i; !whole && j < n && q[j].pos == pos; j++) {
            int v[6];
            if (!window(opaque, q[j].i, (int)rec->width, (int)rec->height, v)) {
                whole = 1;
                continue;
            }
            while (want[4] > 1 && (v[2] / want[4] < v[4] || v[3] / want[4] < v[5])) want[4] /= 2;
            if (j == i) {
                memcpy(want, v, 4 * sizeof *want);
            } else {
                int x1 = want[0] + want[2] > v[0] + v[2] ? want[0] + want[2] : v[0] + v[2];
                int y1 = want[1] + want[3] > v[1] + v[3] ? want[1] + want[3] : v[1] + v[3];
                want[0] = want[0] < v[0] ? want[0] : v[0];
                want[1] = want[1] < v[1] ? want[1] : v[1];
                want[2] = x1 - want[0];
                want[3] = y1 - want[1];
            }
        }
        if (!whole && (want[0] < 0 || want[1] < 0 || want[2] <= 0 || want[3] <= 0 ||
                       want[0] + want[2] > (int)rec->width || want[1] + want[3] > (int)rec->height))
            whole = 1; /* not a window of this picture: let the converter report it */
        if (!whole && want[2] == (int)rec->width && want[3] == (int)rec->height && want[4] == 1) whole = 1;
        reel_frame f;
        int64_t t0 = reel__clock_ns();
        st = decode_image(r, record, pos, b->data + b->at[k], whole ? NULL : want, &f, err);
        if (stats) {
            stats->decode_seconds += (double)(reel__clock_ns() - t0) / 1e9;
            stats->frames_decoded++;
            stats->frames_returned++;
        }
        if (st != REEL_OK) break;
        for (; i < n && q[i].pos == pos; i++) {
            int v = fn(opaque, &f, q[i].i);
            if (v != 0) {
                st = v < 0 ? v : reel__error_set(err, REEL_E_CANCELLED, "%s: stopped by the visitor", rec->path);
                break;
            }
        }
        if (st == REEL_OK && interrupted(r)) st = reel__error_set(err, REEL_E_CANCELLED, "%s: cancelled", rec->path);
    }
    free(q);
    return st;
}

int reel_store_reader_read(reel_store_reader *r, int64_t record, const int64_t *positions, size_t n, reel_frame_fn fn,
                           void *opaque, reel_store_read_stats *stats, reel_error *err)
{
    if (!r || (!positions && n) || !fn)
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_store_reader_read: NULL argument");
    int st = reel__store_fetch(r, record, positions, n, &r->blob, stats, err);
    if (st == REEL_OK) st = reel__store_decode(r, &r->blob, positions, n, fn, NULL, opaque, stats, err);
    return st;
}

int reel_store_reader_read_source(reel_store_reader *r, int64_t record, const int64_t *source_indices, size_t n,
                                  reel_frame_fn fn, void *opaque, reel_store_read_stats *stats, reel_error *err)
{
    if (!r || (!source_indices && n))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_store_reader_read_source: NULL argument");
    reel_store *s = r->store;
    if (record < 0 || record >= s->nrec)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: record %lld of %lld", s->dir, (long long)record,
                               (long long)s->nrec);
    const reel__store_rec *rec = &s->recs[record];
    int64_t *pos = malloc((n ? n : 1) * sizeof *pos);
    if (!pos) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", rec->path);
    for (size_t i = 0; i < n; i++) {
        /* exact match by binary search: a frame that was not stored is an
         * error, never the nearest stored one */
        int64_t lo = 0, hi = rec->num_frames;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (rec->frames[mid].source_index < source_indices[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo >= (int64_t)rec->num_frames || rec->frames[lo].source_index != source_indices[i]) {
            free(pos);
            return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: source frame %lld is not in the store", rec->path,
                                   (long long)source_indices[i]);
        }
        pos[i] = lo;
    }
    int st = reel_store_reader_read(r, record, pos, n, fn, opaque, stats, err);
    free(pos);
    return st;
}

/* ---------------------------------------------------------------- audio */

int reel_store_reader_read_audio(reel_store_reader *r, int64_t record, float *dst, size_t dst_count,
                                 reel_audio_window *w, reel_error *err)
{
    if (!r) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_store_reader_read_audio: NULL argument");
    reel_store *s = r->store;
    if (!s->params.audio)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: a store packed without --audio holds no audio", s->dir);
    int st = check_request(r, record, NULL, 0, err);
    if (st != REEL_OK) return st;
    const reel__store_rec *rec = &s->recs[record];
    if (rec->audio_status != REEL_OK)
        return reel__error_set(err, rec->audio_status, "%s: %s", rec->path,
                               rec->audio_status == REEL_E_NO_AUDIO_STREAM ? "no audio stream" : rec->reason);
    const size_t n = (size_t)rec->audio_channels * (size_t)rec->audio_samples;
    if (n && !dst) return reel__error_set(err, REEL_E_INVALID_ARG, "%s: audio: NULL output", rec->path);
    if (dst_count < n)
        return reel__error_set(err, REEL_E_BUFFER_TOO_SMALL, "%s: stored audio needs %zu floats, got %zu", rec->path, n,
                               dst_count);
    if (n) {
        if (interrupted(r)) return reel__error_set(err, REEL_E_CANCELLED, "%s: cancelled", rec->path);
        st = read_bytes(r, record, rec->audio_offset, (size_t)rec->audio_length, 0, &r->blob, NULL, err);
        if (st != REEL_OK) return st;
        const uint8_t *p = r->blob.data;
        if (r->s.verify && reel__crc32(0, p, (size_t)rec->audio_length) != rec->audio_crc)
            return reel__error_set(err, REEL_E_CORRUPT, "%s: shard %s: %s: checksum mismatch in the stored audio",
                                   s->dir, s->shard_names[record], rec->path);
        for (size_t i = 0; i < n; i++, p += 4) { /* little-endian float32 */
            uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            memcpy(&dst[i], &v, sizeof v);
        }
    }
    if (w) {
        memset(w, 0, sizeof *w);
        w->first_sample = rec->audio_first;
        w->num_samples = rec->audio_samples;
        w->valid_lo = rec->audio_valid_lo;
        w->valid_hi = rec->audio_valid_hi;
        if (rec->audio_n_spans) {
            w->valid_lo = rec->audio_stream_lo;
            w->valid_hi = rec->audio_stream_hi;
            reel__audio_damage_of(rec->audio_spans, rec->audio_n_spans, rec->audio_first,
                                  rec->audio_first + rec->audio_samples, w);
        }
    }
    return REEL_OK;
}

/* ---------------------------------------------------------------- verify */

static int count_fn(void *opaque, const reel_frame *f, size_t pos)
{
    (void)f;
    (void)pos;
    ++*(int64_t *)opaque;
    return 0;
}

typedef struct shard_end {
    uint32_t part, seq;
    uint64_t end;   /* where its last record ends */
    int64_t record; /* that record */
} shard_end;

static int cmp_shard_end(const void *x, const void *y)
{
    const shard_end *a = x, *b = y;
    if (a->part != b->part) return a->part < b->part ? -1 : 1;
    if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
    return a->end < b->end ? -1 : a->end > b->end;
}

/* Bytes past the last record of each shard that holds records. A shard is
 * its records one after another and nothing else (the builder truncates a
 * resumed shard after its last journaled record), so anything after the
 * last one was appended, or the shard replaced by another file: damage, even
 * though every record still reads. Counted in rep, the first one named. */
static int verify_shard_ends(reel_store_reader *r, reel_store_verify_report *rep, reel_error *err)
{
    const reel_store *s = r->store;
    shard_end *e = malloc((size_t)(s->nrec ? s->nrec : 1) * sizeof *e);
    if (!e) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", s->dir);
    size_t n = 0;
    for (int64_t i = 0; i < s->nrec; i++)
        if (s->recs[i].status == REEL_OK && s->recs[i].length > 0)
            e[n++] = (shard_end){ s->recs[i].part, s->recs[i].shard_seq, s->recs[i].offset + s->recs[i].length, i };
    qsort(e, n, sizeof *e, cmp_shard_end);
    int st = REEL_OK;
    for (size_t i = 0; i < n && st == REEL_OK; i++) {
        if (i + 1 < n && e[i + 1].part == e[i].part && e[i + 1].seq == e[i].seq) continue; /* not the last */
        rep->shards++;
        reel_error oe;
        int os = open_shard(r, e[i].record, &oe);
        if (os != REEL_OK) {
            if (os == REEL_E_NOMEM || os == REEL_E_CANCELLED) st = reel__error_set(err, os, "%s", oe.message);
            continue; /* a missing shard: its records were counted as damaged already */
        }
        const int64_t size = reel__io_size(r->io);
        if (size < 0 || (uint64_t)size <= e[i].end) continue;
        rep->bad_shards++;
        rep->bytes_past_records += size - (int64_t)e[i].end;
        if (!rep->bad && rep->bad_shards == 1)
            snprintf(rep->first_problem, sizeof rep->first_problem,
                     "%s: shard %s: %lld bytes past its last record (the record of %s ends at byte %llu of %lld): "
                     "bytes were appended or the shard replaced",
                     s->dir, s->shard_names[e[i].record], (long long)(size - (int64_t)e[i].end),
                     s->recs[e[i].record].path, (unsigned long long)e[i].end, (long long)size);
    }
    free(e);
    return st;
}

int reel_store_verify(const char *dir, reel_store_verify_report *rep, reel_error *err)
{
    reel_store_verify_report local;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    reel_store *s = NULL;
    int st = reel_store_open(&s, dir, err);
    if (st != REEL_OK) {
        snprintf(rep->first_problem, sizeof rep->first_problem, "%s", err ? err->message : "cannot open");
        return st;
    }
    reel_store_reader *r = NULL;
    st = reel_store_reader_create(&r, s, NULL, err);
    int64_t *pos = NULL;
    for (int64_t i = 0; st == REEL_OK && i < s->nrec; i++) {
        const reel__store_rec *rec = &s->recs[i];
        rep->records++;
        if (rec->status != REEL_OK) {
            rep->failed_to_pack++;
            continue;
        }
        reel_error e;
        reel_error_clear(&e);
        /* the whole record's checksum, then every frame decoded */
        int rs = read_bytes(r, i, 0, (size_t)rec->length, 0, &r->blob, NULL, &e);
        if (rs == REEL_OK && reel__crc32(0, r->blob.data, (size_t)rec->length) != rec->crc)
            rs = reel__error_set(&e, REEL_E_CORRUPT, "%s: shard %s: %s: record checksum mismatch", s->dir,
                                 s->shard_names[i], rec->path);
        if (rs == REEL_OK) {
            int64_t *np = realloc(pos, (rec->num_frames ? rec->num_frames : 1) * sizeof *np);
            if (!np) {
                st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dir);
                break;
            }
            pos = np;
            for (uint32_t k = 0; k < rec->num_frames; k++) pos[k] = k;
            int64_t got = 0;
            rs = reel_store_reader_read(r, i, pos, rec->num_frames, count_fn, &got, NULL, &e);
            if (rs == REEL_OK && got != (int64_t)rec->num_frames)
                rs = reel__error_set(&e, REEL_E_CORRUPT, "%s: %s: %lld of %u frames decoded", s->dir, rec->path,
                                     (long long)got, rec->num_frames);
        }
        if (rs != REEL_OK) {
            if (rs == REEL_E_NOMEM || rs == REEL_E_CANCELLED) {
                st = rs;
                if (err) *err = e;
                break;
            }
            if (!rep->bad) snprintf(rep->first_problem, sizeof rep->first_problem, "%s", e.message);
            rep->bad++;
        } else {
            rep->frames += rec->num_frames;
            rep->bytes += (int64_t)rec->length;
        }
    }
    free(pos);
    if (st == REEL_OK) st = verify_shard_ends(r, rep, err);
    reel_store_reader_destroy(&r);
    reel_store_close(&s);
    if (st == REEL_OK && rep->bad)
        st = reel__error_set(err, REEL_E_CORRUPT, "%s: %lld of %lld records are damaged%s; first: %s", dir,
                             (long long)rep->bad, (long long)rep->records,
                             rep->bad_shards ? ", and shards hold bytes past their last record" : "",
                             rep->first_problem);
    else if (st == REEL_OK && rep->bad_shards)
        st = reel__error_set(err, REEL_E_CORRUPT,
                             "%s: %lld of %lld shards hold bytes past their last record (%lld bytes; every record "
                             "reads and checks); first: %s",
                             dir, (long long)rep->bad_shards, (long long)rep->shards,
                             (long long)rep->bytes_past_records, rep->first_problem);
    return st;
}
