/* open.c: opening a decoder from a path, memory or callbacks; stream and
 * codec selection; metadata; choosing where the frame table comes from
 * (sidecar, container index, packet scan). */
#include "decoder/decoder_for_loader.h"
#include "decoder/internal.h"
#include "cuda/device.h"
#include "decoder/open.h"
#include "core/hash.h"
#include "io/io_front.h"
#include "io/remote.h"

#include <libavutil/imgutils.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libavutil/display.h>
#include <libavutil/pixdesc.h>

#define REEL_IO_BUFFER_SIZE (64 * 1024)

void reel_decoder_default_settings(reel_decoder_settings *s)
{
    if (!s) return;
    memset(s, 0, sizeof *s);
    s->stream_index = -1;
    s->threads = 0;
    s->corrupt_policy = REEL_CORRUPT_FAIL;
    s->index_mode = REEL_INDEX_OFF;
    s->index_path = NULL;
    s->skip_nonref = 1;
    s->check_keyframes = 1;
    s->gop_contexts = REEL_GOP_CONTEXTS_AUTO;
}

/* The device setting, checked: "cpu" as ever; "cuda[:N]" is opened by the
 * decoder (gpu.c), or by the loader for its batch buffers (pipeline/
 * loader_gpu.c), which say why it cannot serve; device_fallback "cpu" turns
 * that into CPU decoding. */
static int device_check(const reel_decoder_settings *s, const char *who, const char *prefix, reel_error *err)
{
    int index;
    reel_error derr;
    int r = reel__device_parse(s->device, &index, &derr);
    if (r != REEL_OK) return reel__error_set(err, r, "%s: %sdevice: %s", who, prefix, derr.message);
    int fallback = s->device_fallback && *s->device_fallback;
    if (fallback && strcmp(s->device_fallback, "cpu"))
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: %sdevice_fallback \"%.32s\": expected \"cpu\" or none",
                               who, prefix, s->device_fallback);
    return REEL_OK;
}

int reel__decoder_settings_check(const reel_decoder_settings *s, const char *who, const char *prefix, reel_error *err)
{
    if (!s) return REEL_OK; /* the defaults */
    const struct {
        const char *name;
        int value, lo, hi;
    } rules[] = {
        { "stream_index", s->stream_index, -1, INT_MAX },
        { "threads", s->threads, 0, INT_MAX },
        { "corrupt_policy", (int)s->corrupt_policy, REEL_CORRUPT_FAIL, REEL_CORRUPT_SKIP },
        { "index_mode", (int)s->index_mode, REEL_INDEX_OFF, REEL_INDEX_READ_WRITE },
        { "skip_nonref", s->skip_nonref, 0, 1 },
        { "force_scan", s->force_scan, 0, 1 },
        { "check_keyframes", s->check_keyframes, 0, 1 },
        { "gop_contexts", s->gop_contexts, REEL_GOP_CONTEXTS_AUTO, INT_MAX },
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].value < rules[i].lo || rules[i].value > rules[i].hi) {
            if (rules[i].hi == INT_MAX)
                return reel__error_set(err, REEL_E_INVALID_ARG, "%s: %s%s must be >= %d (got %d)", who, prefix,
                                       rules[i].name, rules[i].lo, rules[i].value);
            return reel__error_set(err, REEL_E_INVALID_ARG, "%s: %s%s must be in [%d, %d] (got %d)", who, prefix,
                                   rules[i].name, rules[i].lo, rules[i].hi, rules[i].value);
        }
    return device_check(s, who, prefix, err);
}

/* ---- custom IO: memory and caller callbacks ---------------------------- */

typedef struct reel_mem_reader {
    const uint8_t *data;
    size_t size, pos;
} reel_mem_reader;

static int mem_read(void *opaque, uint8_t *buf, int size)
{
    reel_mem_reader *m = opaque;
    size_t left = m->size - m->pos;
    if (left == 0) return AVERROR_EOF;
    if ((size_t)size > left) size = (int)left;
    memcpy(buf, m->data + m->pos, (size_t)size);
    m->pos += (size_t)size;
    return size;
}

static int64_t mem_seek(void *opaque, int64_t offset, int whence)
{
    reel_mem_reader *m = opaque;
    int64_t base;
    switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return (int64_t)m->size;
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = (int64_t)m->pos; break;
    case SEEK_END: base = (int64_t)m->size; break;
    default: return AVERROR(EINVAL);
    }
    if (base + offset < 0 || base + offset > (int64_t)m->size) return AVERROR(EINVAL);
    m->pos = (size_t)(base + offset);
    return (int64_t)m->pos;
}

static int cb_read(void *opaque, uint8_t *buf, int size)
{
    reel_decoder *dec = opaque;
    if (reel__interrupted(dec)) return AVERROR_EXIT;
    int r = dec->io.read(dec->io.opaque, buf, size);
    if (r == 0) return AVERROR_EOF;
    if (r < 0) return AVERROR(EIO);
    return r;
}

static int64_t cb_seek(void *opaque, int64_t offset, int whence)
{
    reel_decoder *dec = opaque;
    int64_t r;
    if ((whence & ~AVSEEK_FORCE) == AVSEEK_SIZE)
        r = dec->io.seek(dec->io.opaque, 0, REEL_SEEK_SIZE);
    else
        r = dec->io.seek(dec->io.opaque, offset, whence & ~AVSEEK_FORCE);
    return r < 0 ? AVERROR(EIO) : r;
}

/* A remote object (src/io) as the decoder's reel_io callbacks. */
static int remote_read(void *opaque, uint8_t *buf, int size)
{
    reel_decoder *dec = opaque;
    size_t got = 0;
    int st = reel__io_read_at(dec->remote, dec->remote_pos, buf, (size_t)size, &got, &dec->remote_err);
    if (st != REEL_OK) return -1;
    dec->remote_pos += (int64_t)got;
    return (int)got;
}

static int64_t remote_seek(void *opaque, int64_t offset, int whence)
{
    reel_decoder *dec = opaque;
    int64_t size = reel__io_size(dec->remote);
    if (whence == REEL_SEEK_SIZE) return size;
    int64_t base = whence == SEEK_CUR ? dec->remote_pos : whence == SEEK_END ? size : 0;
    if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return -1;
    if (base + offset < 0 || base + offset > size) return -1;
    dec->remote_pos = base + offset;
    return dec->remote_pos;
}

/* ---- metadata ------------------------------------------------------------ */

static void copy_str(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

/* The display matrix's angle, degrees counter-clockwise (0 without one);
 * *has: whether the stream has a display matrix at all (may be NULL). */
static int display_rotation(const AVStream *st, int *has)
{
    const uint8_t *m = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, NULL);
    if (has) *has = m != NULL;
    if (!m) return 0;
    double r = av_display_rotation_get((const int32_t *)m);
    if (isnan(r)) return 0;
    return (int)lrint(r);
}

static void fill_info(reel_decoder *dec)
{
    reel_video_info *in = &dec->info;
    const AVCodecParameters *par = dec->st->codecpar;
    const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get((enum AVPixelFormat)par->format);
    const reel_table *t = &dec->table;

    memset(in, 0, sizeof *in);
    copy_str(in->codec, sizeof in->codec, avcodec_get_name(par->codec_id));
    copy_str(in->profile, sizeof in->profile, avcodec_profile_name(par->codec_id, par->profile));
    copy_str(in->pix_fmt, sizeof in->pix_fmt, desc ? desc->name : "unknown");
    copy_str(in->container, sizeof in->container, dec->fmt->iformat->name);
    copy_str(in->color_space, sizeof in->color_space, av_color_space_name(par->color_space));
    copy_str(in->color_range, sizeof in->color_range, av_color_range_name(par->color_range));
    copy_str(in->color_primaries, sizeof in->color_primaries, av_color_primaries_name(par->color_primaries));
    in->source_width = par->width;
    in->source_height = par->height;
    in->bit_depth = desc ? desc->comp[0].depth : 8;
    in->rotation = display_rotation(dec->st, &in->has_rotation);
    /* the size of the frames returned with the rotation applied: only right
     * angles are applied (dec->rotation), and 90 or 270 swap the sides */
    int quarter = ((in->rotation % 360) + 360) % 360;
    int swap = quarter == 90 || quarter == 270;
    in->width = swap ? par->height : par->width;
    in->height = swap ? par->width : par->height;
    in->sar_num = par->sample_aspect_ratio.num;
    in->sar_den = par->sample_aspect_ratio.den ? par->sample_aspect_ratio.den : 1;
    in->rate_num = dec->st->r_frame_rate.num;
    in->rate_den = dec->st->r_frame_rate.den;
    in->time_base_num = dec->st->time_base.num;
    in->time_base_den = dec->st->time_base.den;
    in->stream_index = dec->stream_index;
    in->num_streams = (int)dec->fmt->nb_streams;
    for (unsigned i = 0; i < dec->fmt->nb_streams; i++)
        if (dec->fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) in->has_audio = 1;
    in->num_frames = t->n;
    in->num_keyframes = t->n_keyframes;
    in->index_source = t->source;
    /* the stream's rate, as torchcodec's bit_rate; the container's (all its
     * streams) only when the stream states none */
    in->container_bit_rate = dec->fmt->bit_rate > 0 ? dec->fmt->bit_rate : 0;
    in->bit_rate = par->bit_rate > 0 ? par->bit_rate : in->container_bit_rate;
    in->file_size = dec->file_size;

    double tb = av_q2d(dec->st->time_base);
    if (t->n > 0) {
        const reel_frame_entry *last = &t->frames[t->n - 1];
        int64_t span = last->pts + last->duration - t->frames[0].pts;
        in->start_pts = t->frames[0].pts;
        in->start_time = (double)t->frames[0].pts * tb;
        in->duration = (double)span * tb;
        if (dec->st->avg_frame_rate.num > 0 && dec->st->avg_frame_rate.den > 0) {
            in->avg_fps_num = dec->st->avg_frame_rate.num;
            in->avg_fps_den = dec->st->avg_frame_rate.den;
        } else if (span > 0) {
            /* checked: span and the time base come from the file */
            int64_t num, den;
            if (!__builtin_mul_overflow(t->n, (int64_t)dec->st->time_base.den, &num) &&
                !__builtin_mul_overflow(span, (int64_t)dec->st->time_base.num, &den))
                av_reduce(&in->avg_fps_num, &in->avg_fps_den, num, den, 1 << 30);
        }
    }
}

/* ---- open ---------------------------------------------------------------- */

/* 1 when a file FFmpeg could not open starts like an MP4/MOV (an ftyp, mdat,
 * free, wide or skip box first): then what is missing is the index. */
static int looks_like_mp4(const reel_decoder *dec)
{
    if (!dec->is_file) return 0;
    FILE *f = fopen(dec->name, "rb");
    if (!f) return 0;
    unsigned char b[8];
    int ok = fread(b, 1, 8, f) == 8;
    fclose(f);
    if (!ok) return 0;
    static const char *const boxes[] = { "ftyp", "mdat", "free", "wide", "skip" };
    for (size_t i = 0; i < sizeof boxes / sizeof boxes[0]; i++)
        if (!memcmp(b + 4, boxes[i], 4)) return 1;
    return 0;
}

static int pick_stream(reel_decoder *dec, reel_error *err)
{
    AVFormatContext *fmt = dec->fmt;
    int want = dec->settings.stream_index;
    if (want >= 0) {
        if ((unsigned)want >= fmt->nb_streams)
            return reel__error_set(err, REEL_E_NO_VIDEO_STREAM, "%s: stream %d does not exist (file has %u streams)",
                                   dec->name, want, fmt->nb_streams);
        if (fmt->streams[want]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO ||
            (fmt->streams[want]->disposition & AV_DISPOSITION_ATTACHED_PIC))
            return reel__error_set(err, REEL_E_NO_VIDEO_STREAM, "%s: stream %d is not a video stream", dec->name, want);
        dec->stream_index = want;
    } else {
        int idx = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
        if (idx == AVERROR_DECODER_NOT_FOUND) {
            /* a video stream exists but nothing decodes it: report the codec */
            for (unsigned i = 0; i < fmt->nb_streams; i++)
                if (fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO) {
                    idx = (int)i;
                    break;
                }
        }
        if (fmt->nb_streams == 0)
            return reel__error_set(err, REEL_E_CORRUPT, "%s: no streams could be read (damaged or truncated header)",
                                   dec->name);
        if (idx < 0 || (fmt->streams[idx]->disposition & AV_DISPOSITION_ATTACHED_PIC))
            return reel__error_set(err, REEL_E_NO_VIDEO_STREAM, "%s: no video stream", dec->name);
        dec->stream_index = idx;
    }
    dec->st = fmt->streams[dec->stream_index];
    for (unsigned i = 0; i < fmt->nb_streams; i++)
        if ((int)i != dec->stream_index) fmt->streams[i]->discard = AVDISCARD_ALL;
    return REEL_OK;
}

int reel__codec_context(const reel_decoder *dec, int threads, void *opaque, AVCodecContext **out, int *opening)
{
    *opening = 0;
    AVCodecContext *c = avcodec_alloc_context3(dec->codec);
    if (!c) return AVERROR(ENOMEM);
    int r = avcodec_parameters_to_context(c, dec->st->codecpar);
    if (r >= 0) {
        c->opaque = opaque; /* before open: frame threads copy it (log.c routes by it) */
        c->pkt_timebase = dec->st->time_base;
        c->thread_count = threads;
        c->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
        reel__decoder_gpu_codec(dec, c, opaque);
        *opening = 1;
        r = avcodec_open2(c, dec->codec, NULL);
    }
    if (r < 0) avcodec_free_context(&c);
    *out = c;
    return r < 0 ? r : 0;
}

static int open_codec(reel_decoder *dec, reel_error *err)
{
    const AVCodecParameters *par = dec->st->codecpar;
    char eb[128];
    dec->codec = avcodec_find_decoder(par->codec_id);
    if (!dec->codec)
        return reel__error_set(err, REEL_E_UNSUPPORTED_CODEC, "%s: decoder for %s not in this build (FFmpeg %s)",
                               dec->name, avcodec_get_name(par->codec_id), av_version_info());
    int threads = dec->settings.threads;
    if (threads <= 0) {
        /* FFmpeg's own default elsewhere is often one thread, which makes
         * decoding needlessly slow; use every core, capped where frame
         * threading stops paying off and only adds latency. */
        threads = reel__cpu_count();
        if (threads > 16) threads = 16;
    }
    if (dec->hw_device) threads = 1; /* NVDEC: the GPU decodes; frame threads would only hold more surfaces */
    int opening = 0;
    int r = reel__codec_context(dec, threads, dec, &dec->avctx, &opening);
    if (r < 0 && !opening)
        return reel__error_set(err, reel__status_from_av(r), "%s: bad codec parameters: %s", dec->name,
                               reel__av_err(r, eb, sizeof eb));
    if (r < 0)
        return reel__error_set(
            err, reel__status_from_av(r) == REEL_E_IO ? REEL_E_UNSUPPORTED_CODEC : reel__status_from_av(r),
            "%s: cannot open %s decoder: %s", dec->name, dec->codec->name, reel__av_err(r, eb, sizeof eb));
    return REEL_OK;
}

static int build_table(reel_decoder *dec, reel_error *err)
{
    int mode = dec->settings.index_mode;
    if ((dec->is_file || dec->remote_sidecar) && mode != REEL_INDEX_OFF) {
        if (reel__sidecar_load(dec, dec->index_path) == REEL_OK) return REEL_OK;
    }
    int r = dec->settings.force_scan ? REEL_E_INDEX_STALE : reel__table_from_container(dec);
    if (r != REEL_OK) {
        r = reel__table_scan(dec, err);
        if (r != REEL_OK) return r;
    }
    r = reel__table_finish(dec, err);
    if (r != REEL_OK) return r;
    if ((dec->is_file || dec->remote_sidecar) && mode == REEL_INDEX_READ_WRITE && !dec->table.damaged) {
        reel_error werr;
        /* A sidecar that cannot be written (read-only dataset) is not an
         * error for decoding: the table in memory is exact either way. */
        (void)reel__sidecar_save(dec, dec->index_path, &werr);
    }
    return REEL_OK;
}

static int open_common(reel_decoder *dec, reel_error *err)
{
    char eb[128];
    int r;
    AVDictionary *opts = NULL;
    dec->fmt = avformat_alloc_context();
    if (!dec->fmt) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dec->name);
    dec->fmt->opaque = dec; /* log.c routes the container's lines by it (never by dec->fmt, which this thread writes) */
    if (dec->avio) {
        dec->fmt->pb = dec->avio;
        dec->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    }
    /* FFmpeg polls this in its protocols' blocking reads (file, and later
     * network input), so an interrupt cuts into a read that would block */
    dec->fmt->interrupt_callback.callback = dec->settings.interrupt;
    dec->fmt->interrupt_callback.opaque = dec->settings.interrupt_opaque;
    if (reel__interrupted(dec))
        return reel__error_set(err, REEL_E_CANCELLED, "%s: interrupted while opening", dec->name);
    reel__log_opening(dec);
    r = avformat_open_input(&dec->fmt, dec->is_file ? dec->name : NULL, NULL, &opts);
    reel__log_opening(NULL);
    av_dict_free(&opts);
    if (r < 0) {
        int st = reel__status_from_av(r);
        if (st == REEL_E_CANCELLED || reel__interrupted(dec))
            return reel__error_set(err, REEL_E_CANCELLED, "%s: interrupted while opening", dec->name);
        if ((st = reel__remote_failure(dec, err)) != 0) return st;
        st = reel__status_from_av(r);
        if (st == REEL_E_CORRUPT) st = REEL_E_NOT_VIDEO;
        if (st == REEL_E_NOT_VIDEO && looks_like_mp4(dec))
            return reel__error_set(err, st, "%s: truncated or incomplete MP4/MOV: the index (moov) is missing",
                                   dec->name);
        if (st == REEL_E_NOT_VIDEO)
            return reel__error_set(err, st, "%s: not a video file (no known container format recognised)", dec->name);
        return reel__error_set(err, st, "%s: cannot open: %s", dec->name, reel__av_err(r, eb, sizeof eb));
    }
    reel__log_opening(dec);
    r = avformat_find_stream_info(dec->fmt, NULL);
    reel__log_opening(NULL);
    if (r < 0 && (r == AVERROR_EXIT || reel__interrupted(dec)))
        return reel__error_set(err, REEL_E_CANCELLED, "%s: interrupted while opening", dec->name);
    if (r < 0 && reel__remote_failure(dec, err)) return err ? err->status : REEL_E_IO;
    if (r < 0)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: cannot read stream information: %s", dec->name,
                               reel__av_err(r, eb, sizeof eb));
    if ((r = pick_stream(dec, err)) != REEL_OK) return r;
    if (dec->st->codecpar->width <= 0 || dec->st->codecpar->height <= 0)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: video stream %d has no frame size (damaged header?)",
                               dec->name, dec->stream_index);
    if ((r = reel__decoder_gpu_open(dec, err)) != REEL_OK) return r;
    if ((r = open_codec(dec, err)) != REEL_OK) return r;
    {
        int ccw = display_rotation(dec->st, NULL);
        dec->rotation = ((-ccw % 360) + 360) % 360;
        if (dec->rotation % 90) dec->rotation = 0; /* only right angles are applied */
    }
    /* Reorder depth for count matching: what the stream says, plus margin
     * for decoders that discover deeper reordering as they go. */
    dec->reorder_depth = FFMAX(dec->st->codecpar->video_delay, dec->avctx->has_b_frames) + 2;
    if ((r = build_table(dec, err)) != REEL_OK) return r;
    if (dec->table.n == 0)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: no decodable video frames%s", dec->name,
                               dec->table.damaged ? " (file damaged before the first keyframe)" : "");
    fill_info(dec);
    dec->pkt = av_packet_alloc();
    dec->frame = av_frame_alloc();
    if (!dec->pkt || !dec->frame) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dec->name);
    if ((r = reel_converter_create(&dec->conv, err)) != REEL_OK) return r;
    dec->next_decode = -1;
    return REEL_OK;
}

static reel_decoder *alloc_decoder(const char *name, const reel_decoder_settings *s)
{
    reel_decoder *dec = calloc(1, sizeof *dec);
    if (!dec) return NULL;
    if (s)
        dec->settings = *s;
    else
        reel_decoder_default_settings(&dec->settings);
    dec->name = strdup(name ? name : "<memory>");
    dec->file_size = -1;
    snprintf(dec->gpu_device, sizeof dec->gpu_device, "cpu");
    for (int i = 0; i < REEL_FRAME_CACHE; i++) dec->cache_index[i] = -1;
    if (!dec->name) {
        free(dec);
        return NULL;
    }
    reel__log_register(dec);
    return dec;
}

static int finish_open(reel_decoder **out, reel_decoder *dec, reel_error *err)
{
    int r = open_common(dec, err);
    if (r != REEL_OK) {
        reel_decoder_close(&dec);
        return r;
    }
    *out = dec;
    return REEL_OK;
}

/* http(s):// and s3:// videos: read through src/io with the decoder's own
 * AVIOContext (not FFmpeg's network protocols): range requests into a block
 * cache, retries, the interrupt; messages name the redacted URL. */
static int open_remote(reel_decoder **out, const char *url, const reel_decoder_settings *s, struct reel__cuda *lend,
                       reel_error *err)
{
    reel_decoder_settings def;
    if (!s) {
        reel_decoder_default_settings(&def);
        s = &def;
    }
    reel__io_options o;
    reel__io_default_options(&o);
    o.interrupt = s->interrupt;
    o.interrupt_opaque = s->interrupt_opaque;
    o.remote = s->remote;
    o.tally = s->remote_stats;
    reel__io *io = NULL;
    int st = reel__io_open_as(&io, url, 1, &o, err); /* the caller decided: remote */
    if (st != REEL_OK) return st;
    char name[512];
    snprintf(name, sizeof name, "%s", reel__io_name(io));
    reel_decoder_settings rs = *s;
    /* no sidecar next to a remote object; one in the index cache when there
     * is a cache and the object has a version (ETag or Last-Modified) to
     * tell a changed object from the indexed one */
    char sidecar[4200] = "";
    const char *cache = s->index_cache_dir ? s->index_cache_dir : getenv("REEL_INDEX_CACHE");
    if (s->index_mode != REEL_INDEX_OFF && s->index_path && io->version) {
        snprintf(sidecar, sizeof sidecar, "%s", s->index_path); /* the caller's own path */
    } else if (s->index_mode != REEL_INDEX_OFF && cache && *cache && io->version) {
        uint64_t h = reel__fnv1a(REEL_FNV_OFFSET, url, strcspn(url, "?#"));
        if (snprintf(sidecar, sizeof sidecar, "%s/%016llx.reelidx", cache, (unsigned long long)h) >=
            (int)sizeof sidecar)
            sidecar[0] = '\0';
        if (sidecar[0] && mkdir(cache, 0755) != 0 && errno != EEXIST) sidecar[0] = '\0';
    }
    if (!sidecar[0]) rs.index_mode = REEL_INDEX_OFF;
    rs.index_path = NULL;
    reel_decoder *dec = alloc_decoder(name, &rs);
    if (!dec) {
        reel__io_close(&io);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    }
    dec->cuda_home = lend;
    if (sidecar[0]) {
        if (!(dec->index_path = strdup(sidecar))) {
            reel__io_close(&io);
            reel_decoder_close(&dec);
            return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
        }
        dec->settings.index_path = dec->index_path;
        dec->remote_sidecar = 1;
        dec->file_mtime_ns = (int64_t)io->version; /* the sidecar's check: size and this */
    }
    if (!(dec->open_url = strdup(url))) {
        reel__io_close(&io);
        reel_decoder_close(&dec);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    }
    dec->remote = io;
    dec->io.opaque = dec;
    dec->io.read = remote_read;
    dec->io.seek = remote_seek;
    dec->file_size = reel__io_size(io);
    uint8_t *buf = av_malloc(REEL_IO_BUFFER_SIZE);
    if (!buf) {
        reel_decoder_close(&dec);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    }
    dec->avio = avio_alloc_context(buf, REEL_IO_BUFFER_SIZE, 0, dec, cb_read, NULL, cb_seek);
    if (!dec->avio) {
        av_free(buf);
        reel_decoder_close(&dec);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    }
    st = finish_open(out, dec, err);
    return st;
}

const char *reel__decoder_source(const reel_decoder *dec, struct reel__io **remote, const char **path)
{
    *remote = dec->remote;
    *path = dec->is_file ? dec->name : NULL;
    return dec->name;
}

/* The public entry takes a bare path, so it is the one place (for a path
 * that comes from no dataset entry) that asks whether it is remote. */
int reel_decoder_open(reel_decoder **out, const char *path, const reel_decoder_settings *s, reel_error *err)
{
    return reel__decoder_open_as(out, path, path ? reel__io_is_remote(path) : 0, s, NULL, err);
}

int reel__decoder_open_as(reel_decoder **out, const char *path, int remote, const reel_decoder_settings *s,
                          struct reel__cuda *lend, reel_error *err)
{
    if (!out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_open: out is NULL");
    *out = NULL;
    if (!path || !*path) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_open: empty path");
    int bad = reel__decoder_settings_check(s, "reel_decoder_open", "settings.", err);
    if (bad != REEL_OK) return bad;
    if (remote) return open_remote(out, path, s, lend, err);
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return reel__error_set(err, REEL_E_NOT_FOUND, "%s: no such file", path);
        return reel__error_set(err, REEL_E_IO, "%s: cannot access: %s", path, strerror(errno));
    }
    if (S_ISDIR(sb.st_mode)) return reel__error_set(err, REEL_E_IO, "%s: is a directory, not a video file", path);
    if (!S_ISREG(sb.st_mode))
        return reel__error_set(err, REEL_E_IO, "%s: not a regular file (a FIFO, socket or device)", path);
    if (sb.st_size == 0) return reel__error_set(err, REEL_E_NOT_VIDEO, "%s: not a video file (empty, 0 bytes)", path);
    reel_decoder *dec = alloc_decoder(path, s);
    if (!dec) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
    dec->cuda_home = lend;
    dec->is_file = 1;
    dec->file_size = (int64_t)sb.st_size;
    dec->file_mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
    if (dec->settings.index_path) {
        dec->index_path = strdup(dec->settings.index_path);
    } else {
        size_t n = strlen(path) + 9;
        dec->index_path = malloc(n);
        if (dec->index_path) snprintf(dec->index_path, n, "%s.reelidx", path);
    }
    if (!dec->index_path) {
        reel_decoder_close(&dec);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
    }
    dec->settings.index_path = dec->index_path;
    return finish_open(out, dec, err);
}

int reel_decoder_open_memory(reel_decoder **out, const void *data, size_t size, const char *name,
                             const reel_decoder_settings *s, reel_error *err)
{
    const char *nm = name ? name : "<memory>";
    if (!out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_open_memory: out is NULL");
    *out = NULL;
    int bad = reel__decoder_settings_check(s, "reel_decoder_open_memory", "settings.", err);
    if (bad != REEL_OK) return bad;
    if (!data) return reel__error_set(err, REEL_E_INVALID_ARG, "%s: data is NULL", nm);
    if (size == 0) return reel__error_set(err, REEL_E_NOT_VIDEO, "%s: not a video (empty buffer)", nm);
    reel_decoder *dec = alloc_decoder(nm, s);
    if (!dec) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", nm);
    dec->mem = calloc(1, sizeof *dec->mem);
    uint8_t *buf = av_malloc(REEL_IO_BUFFER_SIZE);
    if (!dec->mem || !buf) {
        av_free(buf);
        reel_decoder_close(&dec);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", nm);
    }
    dec->mem->data = data;
    dec->mem->size = size;
    dec->file_size = (int64_t)size;
    dec->avio = avio_alloc_context(buf, REEL_IO_BUFFER_SIZE, 0, dec->mem, mem_read, NULL, mem_seek);
    if (!dec->avio) {
        av_free(buf);
        reel_decoder_close(&dec);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", nm);
    }
    return finish_open(out, dec, err);
}

int reel_decoder_open_io(reel_decoder **out, const reel_io *io, const char *name, const reel_decoder_settings *s,
                         reel_error *err)
{
    const char *nm = name ? name : "<io>";
    if (!out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_open_io: out is NULL");
    *out = NULL;
    int bad = reel__decoder_settings_check(s, "reel_decoder_open_io", "settings.", err);
    if (bad != REEL_OK) return bad;
    if (!io || !io->read) return reel__error_set(err, REEL_E_INVALID_ARG, "%s: reel_io needs a read callback", nm);
    if (!io->seek)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: reel_io needs a seek callback (random access requires seeking)", nm);
    reel_decoder *dec = alloc_decoder(nm, s);
    if (!dec) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", nm);
    dec->io = *io;
    int64_t sz = io->seek(io->opaque, 0, REEL_SEEK_SIZE);
    dec->file_size = sz >= 0 ? sz : -1;
    uint8_t *buf = av_malloc(REEL_IO_BUFFER_SIZE);
    if (!buf) {
        reel_decoder_close(&dec);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", nm);
    }
    dec->avio = avio_alloc_context(buf, REEL_IO_BUFFER_SIZE, 0, dec, cb_read, NULL, cb_seek);
    if (!dec->avio) {
        av_free(buf);
        reel_decoder_close(&dec);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", nm);
    }
    return finish_open(out, dec, err);
}

void reel_decoder_close(reel_decoder **pdec)
{
    if (!pdec || !*pdec) return;
    reel_decoder *dec = *pdec;
    for (int i = 0; i < dec->gop_open; i++) reel_decoder_close(&dec->gop_ctx[i]);
    reel__log_unregister(dec);
    reel_converter_destroy(&dec->conv);
    for (int i = 0; i < REEL_FRAME_CACHE; i++) av_frame_free(&dec->cache[i]);
    av_packet_free(&dec->pkt);
    av_frame_free(&dec->frame);
    free(dec->key_state);
    free(dec->key_hash);
    avcodec_free_context(&dec->probe);
    avcodec_free_context(&dec->avctx);
    avformat_close_input(&dec->fmt);
    reel__decoder_gpu_close(dec);
    if (dec->avio) {
        av_freep(&dec->avio->buffer);
        avio_context_free(&dec->avio);
    }
    free(dec->mem);
    reel__io_close(&dec->remote);
    reel__table_free(&dec->table);
    free(dec->index_path);
    free(dec->name);
    free(dec->open_url);
    free(dec);
    *pdec = NULL;
}

const reel_video_info *reel_decoder_get_info(const reel_decoder *dec)
{
    return dec ? &dec->info : NULL;
}

/* One context's share of reel_decoder_get_memory: its table and arrays, and
 * the pictures its codecs may hold. */
static int64_t memory_of(const reel_decoder *dec)
{
    const reel_table *t = &dec->table;
    int64_t bytes = (int64_t)sizeof *dec + t->n * (int64_t)(sizeof(reel_frame_entry) + sizeof(int64_t)) +
                    t->n_decode * (int64_t)(4 * sizeof(int64_t) + 1) + t->n_keyframes * (int64_t)sizeof(int64_t);
    if (dec->key_state) bytes += t->n_decode;
    if (dec->key_hash) bytes += t->n_decode * (int64_t)sizeof(uint64_t);
    const AVCodecParameters *par = dec->st ? dec->st->codecpar : NULL;
    int size = par ? av_image_get_buffer_size((enum AVPixelFormat)par->format, par->width, par->height, 32) : 0;
    if (size > 0) {
        /* a codec's reference pictures and the frames reel keeps for a next
         * call (REEL_FRAME_CACHE), one in flight per frame thread, the
         * keyframe probe's one */
        int threads = dec->avctx && dec->avctx->thread_count > 0 ? dec->avctx->thread_count : 1;
        bytes += (int64_t)size * (REEL_FRAME_CACHE + threads + (dec->probe ? 1 : 0));
    }
    return bytes;
}

int64_t reel_decoder_get_memory(const reel_decoder *dec)
{
    if (!dec) return 0;
    int64_t bytes = memory_of(dec);
    for (int i = 0; i < dec->gop_open; i++) bytes += memory_of(dec->gop_ctx[i]);
    return bytes;
}

const char *reel_decoder_get_name(const reel_decoder *dec)
{
    return dec ? dec->name : NULL;
}

const reel_frame_entry *reel_decoder_get_frame_table(const reel_decoder *dec, int64_t *count)
{
    if (count) *count = dec ? dec->table.n : 0;
    return dec ? dec->table.frames : NULL;
}

const int64_t *reel_decoder_get_keyframes(const reel_decoder *dec, int64_t *count)
{
    if (count) *count = dec ? dec->table.n_keyframes : 0;
    return dec ? dec->table.keyframes : NULL;
}

int reel_decoder_save_index(const reel_decoder *dec, const char *path, reel_error *err)
{
    if (!dec) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_save_index: decoder is NULL");
    if (!path) path = dec->index_path;
    if (!path)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: no index path (decoder not opened from a file)",
                               dec->name);
    return reel__sidecar_save(dec, path, err);
}

int reel_decoder_get_remote_stats(const reel_decoder *dec, reel_remote_stats *out, reel_error *err)
{
    if (!out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_remote_stats: NULL argument");
    memset(out, 0, sizeof *out);
    if (!dec) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_remote_stats: decoder is NULL");
    reel__remote_stats(dec->remote, out);
    for (int i = 0; i < dec->gop_open; i++) { /* GOP-parallel decoding's other contexts */
        reel_remote_stats more;
        reel__remote_stats(dec->gop_ctx[i]->remote, &more);
        reel_remote_stats_add(out, &more);
    }
    return REEL_OK;
}
