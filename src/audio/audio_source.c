/* audio_source.c: the audio object's bytes: src/io (a file or an http(s)/s3
 * object, read by byte ranges) under an AVIOContext, the container opened
 * over it (at reel_audio_open, whose decoder the first decode from a0 goes
 * on with, and again for each later decode from a0, its header then from
 * the bytes kept), and a remote mp4's plan: its audio packets' byte ranges,
 * fetched coalesced, never the other streams' bytes between. */
#include <libavutil/mathematics.h>
#include <libavutil/mem.h>
#include <libavutil/pixfmt.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "io/io_front.h"

#define KEPT_MAX   ((int64_t)16 << 20) /* the most header bytes kept for the reopens */
#define KEPT_SPANS 4096                /* and spans (a fragmented mp4's moofs: one each) */
#define WALK_FIRST 4096                /* the first fetch at a box the header walk seeks to */

/* The kept span holding `pos`, or NULL. */
static const reel__audio_kept *kept_at(const reel_audio *a, int64_t pos)
{
    for (size_t i = 0; i < a->n_kept; i++)
        if (pos >= a->kept[i].pos && pos - a->kept[i].pos < (int64_t)a->kept[i].len) return &a->kept[i];
    return NULL;
}

/* Keeps [pos, pos + n), read by the first open: appended to the span it
 * continues, else a span of its own; past the limits nothing more is kept
 * (the reopen then reads those bytes again). */
static void keep(reel_audio *a, int64_t pos, const uint8_t *buf, size_t n)
{
    int64_t total = 0;
    for (size_t i = 0; i < a->n_kept; i++) total += (int64_t)a->kept[i].len;
    reel__audio_kept *k = NULL;
    for (size_t i = 0; i < a->n_kept && !k; i++)
        if (a->kept[i].pos + (int64_t)a->kept[i].len == pos) k = &a->kept[i];
    if (total + (int64_t)n > KEPT_MAX || (!k && a->n_kept == KEPT_SPANS)) {
        a->keeping = 0;
        return;
    }
    if (!k && a->n_kept == a->kept_cap) {
        size_t cap = a->kept_cap ? 2 * a->kept_cap : 8;
        reel__audio_kept *g = realloc(a->kept, cap * sizeof *g);
        if (!g) {
            a->keeping = 0;
            return;
        }
        a->kept = g;
        a->kept_cap = cap;
    }
    if (!k) {
        k = &a->kept[a->n_kept++];
        *k = (reel__audio_kept){ pos, 0, NULL };
    }
    uint8_t *d = realloc(k->data, k->len + n);
    if (!d) {
        a->keeping = 0;
        return;
    }
    memcpy(d + k->len, buf, n);
    k->data = d;
    k->len += n;
}

/* The run holding `pos` (index), or -1. */
static ptrdiff_t run_at(const reel_audio *a, int64_t pos)
{
    size_t lo = 0, hi = a->n_runs; /* the first run whose start is past pos: hi */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->runs[mid].pos <= pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && pos < a->runs[lo - 1].end ? (ptrdiff_t)lo - 1 : -1;
}

/* The last time (microseconds, as the runs' ts) whose packets the call in
 * progress may need: the window's end and a second more (the decoder's
 * delay), or while the streams are probed (no stream chosen yet) the
 * probe's 5 s and a second; a run past it is not fetched with the ones
 * before it. */
static int64_t need_until(const reel_audio *a)
{
    int64_t first = INT64_MAX;
    for (size_t i = 0; i < a->n_runs && i < 64; i++) /* ascending by pos: the earliest packets are among the first */
        if (a->runs[i].ts < first) first = a->runs[i].ts;
    const int64_t rate = a->info.sample_rate > 0 ? a->info.sample_rate : 1;
    const __int128 t = (__int128)first +
                       (a->stream < 0 ? 6 * (__int128)AV_TIME_BASE
                                      : (__int128)(a->win_hi > 0 ? a->win_hi : 0) * AV_TIME_BASE / rate + AV_TIME_BASE);
    return t > INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)t;
}

/* The end of the request for run r read from `from`: the runs after it
 * closer than gap_max, up to fetch_max bytes and the window's need. */
static int64_t fetch_end(const reel_audio *a, size_t r, int64_t from)
{
    const int64_t until = need_until(a);
    int64_t end = a->runs[r].end;
    for (size_t i = r + 1; i < a->n_runs; i++) {
        const reel__audio_run_span *n = &a->runs[i];
        if (n->pos - end > a->gap_max || n->end - from > a->fetch_max || n->ts > until) break;
        end = n->end;
    }
    return end;
}

/* 1 when the 4 bytes name a box whose bytes the walk skips (media data,
 * free space): the walk reads its header alone. */
static int skipped_box(const uint8_t *t)
{
    return !memcmp(t, "mdat", 4) || !memcmp(t, "free", 4) || !memcmp(t, "skip", 4) || !memcmp(t, "wide", 4);
}

/* 1 when the 4 bytes name a top-level box the demuxer reads whole (the
 * header's tables); other bytes at a seek (an unknown box, or no box
 * header: a read inside one) are read on as they come. */
static int whole_box(const uint8_t *t)
{
    static const char names[][5] = { "moov", "moof", "sidx", "ssix", "mfra", "meta", "uuid", "emsg", "prft", "styp" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!memcmp(t, names[i], 4)) return 1;
    return 0;
}

/* While a remote mp4/mov's header is read (a->walking: the demuxer walks
 * its top-level boxes; a fragmented file's moof, then its mdat skipped,
 * and so on to the end), a read of bytes not held fetches only what the
 * walk needs, not readahead's span (readahead_min, 256 KiB: a fragment or
 * two each time, the file about once, and again at each reopen): at a
 * seek, WALK_FIRST bytes (a moof and the next box's header), and the rest
 * of the box that starts there when the walk reads it whole (whole_box: a
 * moov at the end, up to readahead_max); reads that run on, twice the
 * last fetch. */
static int walk_fetch(reel_audio *a, int64_t pos)
{
    const int64_t total = reel__io_size(a->io);
    if (pos >= total || reel__io_is_held(a->io, pos, 1)) return REEL_OK;
    const int on = pos == a->walk_end;
    int64_t len = on && 2 * a->walk_len > WALK_FIRST ? 2 * a->walk_len : WALK_FIRST;
    if (len > a->fetch_max) len = a->fetch_max > WALK_FIRST ? a->fetch_max : WALK_FIRST;
    if (len > total - pos) len = total - pos;
    reel__io_range r = { pos, len };
    if (reel__io_will_read(a->io, &r, 1, &a->io_err) != REEL_OK) return AVERROR(EIO);
    uint8_t h[16];
    size_t got = 0;
    if (!on && reel__io_read_at(a->io, pos, h, sizeof h, &got, &a->io_err) == REEL_OK && got >= 8 &&
        whole_box(h + 4)) { /* the box that starts here, when the demuxer reads it whole */
        const uint32_t s32 = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
        int64_t box = s32 == 0 ? total - pos : (int64_t)s32;
        if (s32 == 1 && got >= 16) {
            box = 0;
            for (int i = 8; i < 16; i++) box = box << 8 | h[i];
        }
        if (box > len && box <= total - pos) {
            r.length = box < a->fetch_max ? box : a->fetch_max;
            if (r.length > len && reel__io_will_read(a->io, &r, 1, &a->io_err) != REEL_OK) return AVERROR(EIO);
            if (r.length > len) len = r.length;
        }
    }
    a->walk_len = len;
    return REEL_OK;
}

static int io_read(void *opaque, uint8_t *buf, int size)
{
    reel_audio *a = opaque;
    const int64_t pos = a->io_pos;
    size_t got = 0;
    const reel__audio_kept *k = a->keeping ? NULL : kept_at(a, pos);
    if (k) { /* the header again (a reopen): from memory */
        got = k->len - (size_t)(pos - k->pos) < (size_t)size ? k->len - (size_t)(pos - k->pos) : (size_t)size;
        memcpy(buf, k->data + (pos - k->pos), got);
        a->io_pos += (int64_t)got;
        return (int)got;
    }
    ptrdiff_t r = a->n_runs ? run_at(a, pos) : -1;
    if (r >= 0) { /* an audio packet: its run and the runs near it in one request, never the bytes past them */
        int64_t end = a->runs[r].end;
        if (!reel__io_is_held(a->io, pos, (end - pos < size ? end - pos : size))) {
            end = fetch_end(a, (size_t)r, pos);
            reel__io_range want = { pos, end - pos };
            if (reel__io_will_read(a->io, &want, 1, &a->io_err) != REEL_OK) return AVERROR(EIO);
        }
        if (end - pos < size) size = (int)(end - pos);
    } else if (a->walking && walk_fetch(a, pos) != REEL_OK) {
        return AVERROR(EIO);
    }
    if (reel__io_read_at(a->io, pos, buf, (size_t)size, &got, &a->io_err) != REEL_OK) return AVERROR(EIO);
    if (a->keeping && got) keep(a, pos, buf, got);
    a->io_pos += (int64_t)got;
    a->walk_end = pos + (int64_t)got;
    return got ? (int)got : AVERROR_EOF;
}

static int64_t io_seek(void *opaque, int64_t offset, int whence)
{
    reel_audio *a = opaque;
    const int64_t size = reel__io_size(a->io);
    whence &= ~AVSEEK_FORCE;
    if (whence == AVSEEK_SIZE) return size;
    int64_t base = whence == SEEK_CUR ? a->io_pos : whence == SEEK_END ? size : 0;
    if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return AVERROR(EINVAL);
    if (base + offset < 0 || base + offset > size) return AVERROR(EINVAL);
    a->io_pos = base + offset;
    return a->io_pos;
}

/* Opens the container over the AVIOContext, from its first byte. */
int reel__audio_open_container(reel_audio *a)
{
    if (avio_seek(a->avio, 0, SEEK_SET) < 0) return AVERROR(EIO);
    a->fmt = avformat_alloc_context();
    if (!a->fmt) return AVERROR(ENOMEM);
    a->fmt->pb = a->avio;
    a->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    a->fmt->opaque = a; /* its log lines name the file (decoder/log.h) */
    /* the caller's interrupt, where libavformat polls one (its reads come
     * through io_read, whose remote fetches poll it themselves) */
    a->fmt->interrupt_callback.callback = a->s.interrupt;
    a->fmt->interrupt_callback.opaque = a->s.interrupt_opaque;
    a->walking = a->boxes; /* walk_fetch */
    a->walk_end = -1;
    int r = avformat_open_input(&a->fmt, a->name, NULL, NULL); /* frees fmt on failure */
    a->walking = 0;
    return r;
}

/* A remote object whose first bytes are an mp4/mov box (held already: the
 * open's first request brought them) is read by walk_fetch while its
 * header is. */
void reel__audio_boxes(reel_audio *a)
{
    uint8_t h[8];
    size_t got = 0;
    reel_error e;
    a->boxes = a->remote && reel__io_is_held(a->io, 0, 8) && reel__io_read_at(a->io, 0, h, 8, &got, &e) == REEL_OK &&
               got == 8 && (!memcmp(h + 4, "ftyp", 4) || !memcmp(h + 4, "moov", 4) || skipped_box(h + 4));
}

/* Back to the stream's first packet: the container opened afresh. A seek
 * to the start is not the same for every demuxer (mp4's seek to time 0
 * lands after AAC's priming packet, which the decode needs), and the CLI
 * that the samples are held to reads from the first byte. */
int reel__audio_reopen(reel_audio *a, reel_error *err)
{
    avformat_close_input(&a->fmt);
    reel_error_clear(&a->io_err);
    a->avio->direct = 0; /* the header read as at the first open: from the kept bytes */
    int r = reel__audio_open_container(a);
    a->avio->direct = a->n_runs > 0;
    if (r < 0 || (unsigned)a->stream >= a->fmt->nb_streams ||
        a->fmt->streams[a->stream]->codecpar->codec_id != a->par->codec_id) {
        char eb[AV_ERROR_MAX_STRING_SIZE] = "its streams changed";
        if (r < 0) av_strerror(r, eb, sizeof eb);
        if (r < 0 && a->io_err.status != REEL_OK)
            return reel__error_set(err, a->io_err.status, "%s", a->io_err.message);
        return reel__error_set(err, r < 0 ? reel__status_from_av(r) : REEL_E_CORRUPT, "%s: cannot reopen: %s", a->name,
                               eb);
    }
    reel__audio_discard_others(a);
    return REEL_OK;
}

/* The demuxer skips the other streams' packets (mp4: without reading their
 * bytes), as the ffmpeg CLI does for the streams it does not map. */
void reel__audio_discard_others(reel_audio *a)
{
    for (unsigned i = 0; i < a->fmt->nb_streams; i++)
        if ((int)i != a->stream) a->fmt->streams[i]->discard = AVDISCARD_ALL;
}

AVIOContext *reel__audio_avio(reel_audio *a, unsigned char *buf, int size)
{
    return avio_alloc_context(buf, size, 0, a, io_read, NULL, io_seek);
}

static int by_pos(const void *x, const void *y)
{
    const reel__audio_run_span *p = x, *q = y;
    return p->pos < q->pos ? -1 : p->pos > q->pos;
}

/* mp4/mov's index holds every packet (edit lists flag, not drop, the
 * discarded ones): their ranges are the bytes a decode reads. Matroska's
 * cues name clusters only, and other containers nothing: no plan there,
 * their reads go on as before (the readahead of src/io). Before the stream
 * is chosen (a->stream < 0, the probe): the audio stream that will be
 * chosen, where that is known, the other streams discarded; after: the
 * stream's. */
int reel__audio_plan(reel_audio *a, reel_error *err)
{
    if (!a->remote || strcmp(a->fmt->iformat->name, "mov,mp4,m4a,3gp,3g2,mj2") != 0) return REEL_OK;
    /* the probe reads one audio stream alone only when the choice is made
     * already: the caller's stream_index, or the file's one audio stream
     * (among several, av_find_best_stream weighs the frames the probe
     * counted of each, which must be those a local file's probe counts) */
    int probe = -1;
    for (unsigned s = 0; a->stream < 0 && s < a->fmt->nb_streams; s++) {
        if (a->fmt->streams[s]->codecpar->codec_type != AVMEDIA_TYPE_AUDIO) continue;
        if (a->s.stream_index >= 0 ? (int)s != a->s.stream_index : probe >= 0) {
            if (a->s.stream_index < 0) return REEL_OK; /* a second one */
            continue;
        }
        probe = (int)s;
    }
    const int want = a->stream >= 0 ? a->stream : probe;
    if (want < 0) return REEL_OK;
    free(a->runs);
    a->runs = NULL;
    a->n_runs = 0;
    size_t n = 0;
    for (unsigned s = 0; s < a->fmt->nb_streams; s++) {
        AVStream *st = a->fmt->streams[s];
        int mine = (int)s == want;
        if (!mine) st->discard = AVDISCARD_ALL;
        /* a discarded video stream gets no packet: the probe would wait for
         * its pixel format and its first timestamp until its 5 s were read
         * (and warn); this object never decodes it, so its format is marked
         * known and the probe waits for no first timestamp (max_ts_probe:
         * the packets it reads for one, and the other streams have theirs
         * from their first packet) */
        if (!mine && a->stream < 0 && st->codecpar->codec_type == AVMEDIA_TYPE_VIDEO && st->codecpar->width > 0 &&
            st->codecpar->format < 0)
            st->codecpar->format = AV_PIX_FMT_YUV420P;
        if (mine) n += (size_t)avformat_index_get_entries_count(st);
    }
    if (a->stream < 0) a->fmt->max_ts_probe = 0;
    if (n == 0) return REEL_OK;
    reel__audio_run_span *r = malloc(n * sizeof *r);
    if (!r) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", a->name);
    size_t k = 0;
    for (unsigned s = 0; s < a->fmt->nb_streams; s++) {
        AVStream *st = a->fmt->streams[s];
        if (st->discard == AVDISCARD_ALL) continue;
        const int c = avformat_index_get_entries_count(st);
        for (int i = 0; i < c && k < n; i++) {
            const AVIndexEntry *e = avformat_index_get_entry(st, i);
            if (e && e->pos >= 0 && e->size > 0)
                r[k++] = (reel__audio_run_span){ e->pos, e->pos + e->size,
                                                 av_rescale_q(e->timestamp, st->time_base, AV_TIME_BASE_Q) };
        }
    }
    qsort(r, k, sizeof *r, by_pos);
    size_t m = 0; /* merged: runs that touch or overlap become one */
    for (size_t i = 0; i < k; i++) {
        if (m && r[i].pos <= r[m - 1].end) {
            if (r[i].end > r[m - 1].end) r[m - 1].end = r[i].end;
            if (r[i].ts < r[m - 1].ts) r[m - 1].ts = r[i].ts;
        } else {
            r[m++] = r[i];
        }
    }
    if (!m) {
        free(r);
        return REEL_OK;
    }
    a->runs = r;
    a->n_runs = m;
    /* every seek reaches io_seek and a packet is read by its size: avio
     * neither reads through a short gap (the other streams' bytes) nor
     * fills its buffer past the packet */
    a->avio->direct = 1;
    return REEL_OK;
}

void reel__audio_source_free(reel_audio *a)
{
    free(a->runs);
    a->runs = NULL;
    a->n_runs = 0;
    for (size_t i = 0; i < a->n_kept; i++) free(a->kept[i].data);
    free(a->kept);
    a->kept = NULL;
    a->n_kept = a->kept_cap = 0;
}
