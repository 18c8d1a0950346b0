/* synth.c: reel_synth_write and friends: picks the encoder, container and time
 * base for the parameters, encodes the rendered frames with libavcodec
 * (converted by libswscale) and muxes them with libavformat. */
#include "synth.h"
#include "synth_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

/* ---- tables ------------------------------------------------------------ */

typedef struct container_desc {
    const char *ext;    /* lower case, without the dot */
    const char *format; /* libavformat muxer name */
    int vfr_den;        /* time-base denominator for VFR; 0: no VFR possible */
    int is_mov;         /* mp4/mov family */
} container_desc;

static const container_desc k_containers[] = {
    { "mp4", "mp4", 90000, 1 },  { "mov", "mov", 90000, 1 }, { "mkv", "matroska", 1000, 0 },
    { "webm", "webm", 1000, 0 }, { "avi", "avi", 0, 0 },
};

#define MAX_ENCODERS 2

typedef struct codec_desc {
    const char *name;
    enum AVCodecID id;
    const char *encoders[MAX_ENCODERS]; /* tried in order */
} codec_desc;

static const codec_desc k_codecs[] = {
    { "h264", AV_CODEC_ID_H264, { "libx264", NULL } },  { "hevc", AV_CODEC_ID_HEVC, { "libx265", NULL } },
    { "vp9", AV_CODEC_ID_VP9, { "libvpx-vp9", NULL } }, { "av1", AV_CODEC_ID_AV1, { "libsvtav1", "libaom-av1" } },
    { "mpeg4", AV_CODEC_ID_MPEG4, { "mpeg4", NULL } },  { "mjpeg", AV_CODEC_ID_MJPEG, { "mjpeg", NULL } },
    { "vp8", AV_CODEC_ID_VP8, { "libvpx", NULL } },
};

#define MIN_SIZE      32
#define MAX_SIZE      16384
#define MAX_BFRAMES   16
#define MAX_K         1000  /* CFR stream time-base subdivisions tried, see cfr_subdivision */
#define MPEG4_MAX_DEN 65535 /* MPEG-4 part 2 stores the time base in 16 bits */

/* ---- errors ------------------------------------------------------------ */

/* Fills err (when not NULL) with status and "<path>: <reason>"; returns status. */
static int fail(reel_error *err, int status, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(reel_error *err, int status, const char *path, const char *fmt, ...)
{
    if (err) {
        int n = snprintf(err->message, sizeof err->message, "%s: ", path ? path : "(null)");
        if (n < 0) n = 0;
        if ((size_t)n < sizeof err->message) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err->message + n, sizeof err->message - (size_t)n, fmt, ap);
            va_end(ap);
        }
        err->status = status;
    }
    return status;
}

/* The reel status for an FFmpeg error code met while writing. */
static int status_of_averror(int e, int fallback)
{
    if (e == AVERROR(ENOMEM)) return REEL_E_NOMEM;
    if (e == AVERROR(EIO) || e == AVERROR(ENOSPC) || e == AVERROR(EACCES) || e == AVERROR(EPERM) ||
        e == AVERROR(ENOENT) || e == AVERROR(EROFS) || e == AVERROR(EISDIR) || e == AVERROR(ENOTDIR) ||
        e == AVERROR(EFBIG) || e == AVERROR(EDQUOT))
        return REEL_E_IO;
    return fallback;
}

static const char *averr_str(int e, char *buf, size_t size)
{
    if (av_strerror(e, buf, size) < 0) snprintf(buf, size, "error %d", e);
    return buf;
}

/* ---- parameters -------------------------------------------------------- */

void reel_synth_default_params(reel_synth_params *p)
{
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->path = NULL;
    p->codec = "h264";
    p->width = 320;
    p->height = 240;
    p->num_frames = 64;
    p->fps_num = 25;
    p->fps_den = 1;
    p->gop = 16;
    p->bframes = 2;
    p->vfr = 0;
    p->pix_fmt_10bit = 0;
    p->yuv444 = 0;
    p->start_time = 0.0;
    p->seed = 1;
}

static int ascii_ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        int ca = (*a >= 'A' && *a <= 'Z') ? *a + 32 : *a;
        int cb = (*b >= 'A' && *b <= 'Z') ? *b + 32 : *b;
        if (ca != cb) return 0;
    }
    return *a == *b;
}

static const container_desc *container_for(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash : path, '.');
    if (!dot) return NULL;
    for (size_t i = 0; i < sizeof k_containers / sizeof k_containers[0]; i++)
        if (ascii_ieq(dot + 1, k_containers[i].ext)) return &k_containers[i];
    return NULL;
}

static const codec_desc *codec_for(const char *name)
{
    if (ascii_ieq(name, "h265"))
        name = "hevc";
    else if (ascii_ieq(name, "avc"))
        name = "h264";
    for (size_t i = 0; i < sizeof k_codecs / sizeof k_codecs[0]; i++)
        if (ascii_ieq(name, k_codecs[i].name)) return &k_codecs[i];
    return NULL;
}

/* Checks everything that does not need FFmpeg. */
static int validate(const reel_synth_params *p, const container_desc **cont, const codec_desc **codec, reel_error *err)
{
    const char *path = p->path;
    if (!path || !*path) return fail(err, REEL_E_INVALID_ARG, "(synth)", "no output path given");
    if (!p->codec || !*p->codec) return fail(err, REEL_E_INVALID_ARG, path, "no codec given");
    *cont = container_for(path);
    if (!*cont)
        return fail(err, REEL_E_INVALID_ARG, path, "unknown container extension (use .mp4, .mov, .mkv, .webm or .avi)");
    *codec = codec_for(p->codec);
    if (!*codec)
        return fail(err, REEL_E_UNSUPPORTED_CODEC, path,
                    "unknown codec '%s' (use h264, hevc, vp9, av1, mpeg4, mjpeg or vp8)", p->codec);
    if (p->width < MIN_SIZE || p->height < MIN_SIZE || p->width > MAX_SIZE || p->height > MAX_SIZE)
        return fail(err, REEL_E_INVALID_ARG, path, "size %dx%d out of range (%d..%d per side)", p->width, p->height,
                    MIN_SIZE, MAX_SIZE);
    if (p->num_frames < 1 || p->num_frames > REEL_SYNTH_MAX_INDEX + 1)
        return fail(err, REEL_E_INVALID_ARG, path, "frame count %d out of range (1..%d)", p->num_frames,
                    REEL_SYNTH_MAX_INDEX + 1);
    if (p->fps_num <= 0 || p->fps_den <= 0 || p->fps_num > 1000000 || p->fps_den > 1000000 ||
        p->fps_num / p->fps_den > 1000)
        return fail(err, REEL_E_INVALID_ARG, path, "bad frame rate %d/%d", p->fps_num, p->fps_den);
    if (p->gop < 1) return fail(err, REEL_E_INVALID_ARG, path, "gop must be >= 1 (got %d)", p->gop);
    if (p->bframes < 0 || p->bframes > MAX_BFRAMES)
        return fail(err, REEL_E_INVALID_ARG, path, "bframes %d out of range (0..%d)", p->bframes, MAX_BFRAMES);
    if (!(p->start_time >= 0.0 && p->start_time < 1e6))
        return fail(err, REEL_E_INVALID_ARG, path, "start time %g s out of range (0..1e6)", p->start_time);
    if (p->vfr && !(*cont)->vfr_den)
        return fail(err, REEL_E_INVALID_ARG, path, "variable frame rate is not possible in .%s", (*cont)->ext);
    if (!(*cont)->vfr_den && p->start_time != 0.0)
        return fail(err, REEL_E_INVALID_ARG, path, "a non-zero start time is not possible in .%s", (*cont)->ext);
    return REEL_OK;
}

/* ---- timing ------------------------------------------------------------ */

/* The encoder sees frames from pts 0 in enc_tb (CFR: 1/fps, so the codec's
 * own timing info says the nominal rate); the start time is added to every
 * packet at muxing, in the stream's time base, which is asked to be
 * start_tb so the start is exact. */
typedef struct timing {
    AVRational enc_tb; /* encoder time base */
    int64_t step;      /* CFR: frame duration in enc_tb (1) */
    int vfr;
    double nominal; /* VFR: nominal frame duration in enc_tb */
    uint64_t seed;
    AVRational start_tb; /* requested stream time base; start_time is exact in it */
    int64_t start;       /* start_time in start_tb */
} timing;

static int64_t round_pos(double v)
{
    return (int64_t)(v + 0.5);
}

/* The k of the CFR time base fps_den/(fps_num*k): the first of k = 1..MAX_K,
 * then k = fps_den * (1..MAX_K) (a tick of 1/(fps_num*m) s, exact for whole
 * milliseconds at 30000/1001), that stores start_time exactly; else the finest
 * of the first series (start_time rounded to it). */
static int64_t cfr_subdivision(const reel_synth_params *p, int64_t max_den)
{
    int64_t best = 1;
    for (int pass = 0; pass < 2; pass++) {
        const int64_t unit = pass == 0 ? 1 : p->fps_den;
        for (int64_t m = 1; m <= MAX_K; m++) {
            const int64_t k = unit * m;
            if ((int64_t)p->fps_num * k > max_den) break;
            double ticks = p->start_time * (double)p->fps_num * (double)k / p->fps_den;
            double frac = ticks - (double)round_pos(ticks);
            if (frac < 1e-7 && frac > -1e-7) return k;
            if (pass == 0) best = k;
        }
    }
    return best;
}

/* Picks the time base: VFR uses the container's fine one; CFR uses
 * fps_den/(fps_num*k) with the smallest k that stores start_time exactly. */
static void pick_timing(const reel_synth_params *p, const container_desc *cont, const codec_desc *codec, timing *t)
{
    const int64_t max_den = codec->id == AV_CODEC_ID_MPEG4 ? MPEG4_MAX_DEN : INT32_MAX;
    memset(t, 0, sizeof *t);
    t->vfr = p->vfr;
    t->seed = reel__synth_mix64((uint64_t)p->seed ^ 0x5646522D73796E74ull);
    if (p->vfr) {
        int den = cont->vfr_den;
        if (den > max_den) den = 60000;
        t->enc_tb = (AVRational){ 1, den };
        t->start_tb = t->enc_tb;
        t->start = round_pos(p->start_time * den);
        t->nominal = (double)den * p->fps_den / p->fps_num;
        return;
    }
    av_reduce(&t->enc_tb.num, &t->enc_tb.den, p->fps_den, p->fps_num, INT32_MAX);
    t->step = 1;
    const int64_t k = cfr_subdivision(p, INT32_MAX); /* stream only: no codec limit */
    av_reduce(&t->start_tb.num, &t->start_tb.den, p->fps_den, (int64_t)p->fps_num * k, INT32_MAX);
    t->start = round_pos(p->start_time * (double)p->fps_num * (double)k / p->fps_den);
}

/* Duration of frame i in enc_tb. */
static int64_t frame_duration(const timing *t, int64_t i)
{
    if (!t->vfr) return t->step;
    uint64_t h = reel__synth_mix64(t->seed + (uint64_t)i);
    double u = (double)(h >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
    int64_t d = round_pos(t->nominal * (0.5 + u));
    return d < 1 ? 1 : d;
}

double reel_synth_frame_time(const reel_synth_params *p, int64_t i)
{
    const container_desc *cont;
    const codec_desc *codec;
    timing t;
    if (!p || validate(p, &cont, &codec, NULL) != REEL_OK || i < 0 || i > p->num_frames) return -1.0;
    pick_timing(p, cont, codec, &t);
    int64_t pts = 0;
    for (int64_t j = 0; j < i; j++) pts += frame_duration(&t, j);
    return (double)t.start * t.start_tb.num / t.start_tb.den + (double)pts * t.enc_tb.num / t.enc_tb.den;
}

/* ---- encoder setup ----------------------------------------------------- */

static int has_pix_fmt(const AVCodec *enc, enum AVPixelFormat fmt)
{
    if (!enc->pix_fmts) return 1; /* unknown: let avcodec_open2 decide */
    for (const enum AVPixelFormat *f = enc->pix_fmts; *f != AV_PIX_FMT_NONE; f++)
        if (*f == fmt) return 1;
    return 0;
}

static enum AVPixelFormat wanted_pix_fmt(const reel_synth_params *p, const codec_desc *codec)
{
    if (codec->id == AV_CODEC_ID_MJPEG)
        return p->pix_fmt_10bit ? AV_PIX_FMT_NONE : (p->yuv444 ? AV_PIX_FMT_YUVJ444P : AV_PIX_FMT_YUVJ420P);
    if (p->pix_fmt_10bit) return p->yuv444 ? AV_PIX_FMT_YUV444P10LE : AV_PIX_FMT_YUV420P10LE;
    return p->yuv444 ? AV_PIX_FMT_YUV444P : AV_PIX_FMT_YUV420P;
}

static const char *pix_fmt_label(const reel_synth_params *p)
{
    if (p->pix_fmt_10bit) return p->yuv444 ? "10-bit 4:4:4" : "10-bit 4:2:0";
    return p->yuv444 ? "4:4:4" : "4:2:0";
}

/* Can this encoder take these parameters at all (checked before opening it,
 * so a known refusal neither prints the library's complaint nor needs a try)?
 * Returns 0 if so, else a status and `why`. */
static int encoder_fits(const char *name, const reel_synth_params *p, char *why, size_t size)
{
    const int odd = (p->width | p->height) & 1;
    /* SVT-AV1 refuses sources under 64 pixels a side and odd 4:2:0 sizes. */
    if (!strcmp(name, "libsvtav1") && (p->width < 64 || p->height < 64 || odd)) {
        snprintf(why, size, "libsvtav1 needs an even size of at least 64x64 (got %dx%d)", p->width, p->height);
        return REEL_E_INVALID_ARG;
    }
    /* x264 and x265 need whole chroma samples: even sizes unless 4:4:4. */
    if ((!strcmp(name, "libx264") || !strcmp(name, "libx265")) && odd && !p->yuv444) {
        snprintf(why, size, "%s needs an even width and height for 4:2:0 (got %dx%d; 4:4:4 allows odd)", name, p->width,
                 p->height);
        return REEL_E_INVALID_ARG;
    }
    return REEL_OK;
}

/* Fills the codec context and the private options for one encoder. */
static int configure(AVCodecContext *c, const char *enc, const reel_synth_params *p, const timing *t,
                     enum AVPixelFormat fmt, AVDictionary **opts)
{
    char buf[256];
    int r = 0;
    const int mjpeg_range = fmt == AV_PIX_FMT_YUVJ420P || fmt == AV_PIX_FMT_YUVJ444P;

    c->width = p->width;
    c->height = p->height;
    c->pix_fmt = fmt;
    c->time_base = t->enc_tb;
    c->framerate = (AVRational){ p->fps_num, p->fps_den };
    c->sample_aspect_ratio = (AVRational){ 1, 1 };
    c->gop_size = p->gop;
    c->keyint_min = p->gop;
    c->max_b_frames = 0;
    c->thread_count = 1; /* deterministic output */
    c->flags |= AV_CODEC_FLAG_BITEXACT;
    c->color_range = mjpeg_range ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
    c->colorspace = AVCOL_SPC_SMPTE170M; /* BT.601, as swscale converts */
    c->color_primaries = AVCOL_PRI_SMPTE170M;
    c->color_trc = AVCOL_TRC_SMPTE170M;

    if (!strcmp(enc, "libx264")) {
        c->max_b_frames = p->bframes;
        snprintf(buf, sizeof buf, "keyint=%d:min-keyint=%d:scenecut=0:bframes=%d:b-adapt=0:open-gop=0", p->gop, p->gop,
                 p->bframes);
        r |= av_dict_set(opts, "preset", "superfast", 0);
        r |= av_dict_set(opts, "forced-idr", "1", 0);
        r |= av_dict_set(opts, "x264-params", buf, 0);
    } else if (!strcmp(enc, "libx265")) {
        c->max_b_frames = p->bframes;
        snprintf(buf, sizeof buf,
                 "log-level=error:keyint=%d:min-keyint=%d:scenecut=0:bframes=%d:b-adapt=0:"
                 "open-gop=0:pools=none:frame-threads=1:info=0",
                 p->gop, p->gop, p->bframes);
        r |= av_dict_set(opts, "preset", "ultrafast", 0);
        r |= av_dict_set(opts, "forced-idr", "1", 0);
        r |= av_dict_set(opts, "x265-params", buf, 0);
    } else if (!strcmp(enc, "libvpx-vp9")) {
        c->bit_rate = 0;
        r |= av_dict_set(opts, "deadline", "realtime", 0);
        r |= av_dict_set(opts, "cpu-used", "8", 0);
        r |= av_dict_set(opts, "crf", "32", 0);
        r |= av_dict_set(opts, "row-mt", "0", 0);
    } else if (!strcmp(enc, "libvpx")) {
        int64_t rate = (int64_t)p->width * p->height * p->fps_num / p->fps_den / 2;
        c->bit_rate = rate < 200000 ? 200000 : rate;
        r |= av_dict_set(opts, "deadline", "realtime", 0);
        /* negative: a fixed speed; libvpx's VP8 adapts a positive one to the
         * wall-clock time, which makes the output differ run to run */
        r |= av_dict_set(opts, "cpu-used", "-8", 0);
        r |= av_dict_set(opts, "crf", "30", 0);
    } else if (!strcmp(enc, "libsvtav1")) {
        r |= av_dict_set(opts, "preset", "12", 0);
        r |= av_dict_set(opts, "crf", "35", 0);
    } else if (!strcmp(enc, "libaom-av1")) {
        c->bit_rate = 0;
        r |= av_dict_set(opts, "usage", "realtime", 0);
        r |= av_dict_set(opts, "cpu-used", "8", 0);
        r |= av_dict_set(opts, "crf", "35", 0);
        r |= av_dict_set(opts, "row-mt", "0", 0);
    } else if (!strcmp(enc, "mpeg4")) {
        c->max_b_frames = p->bframes;
        c->flags |= AV_CODEC_FLAG_QSCALE;
        c->global_quality = FF_QP2LAMBDA * 3;
        r |= av_dict_set(opts, "sc_threshold", "1000000000", 0);
        r |= av_dict_set(opts, "mpv_flags", "+strict_gop", 0);
    } else if (!strcmp(enc, "mjpeg")) {
        c->flags |= AV_CODEC_FLAG_QSCALE;
        c->global_quality = FF_QP2LAMBDA * 3;
    }
    return r < 0 ? AVERROR(ENOMEM) : 0;
}

/* ---- the writer -------------------------------------------------------- */

typedef struct writer {
    const reel_synth_params *p;
    const char *path;
    AVFormatContext *oc;
    AVStream *st;
    AVCodecContext *enc;
    const char *enc_name;
    struct SwsContext *sws;
    AVFrame *frame;
    AVPacket *pkt;
    uint8_t *rgb;
    int *scratch;         /* for the renderer */
    int64_t *pts;         /* pts of every frame in the encoder time base */
    int64_t *dur;         /* and its duration */
    int64_t start_offset; /* start_time in the stream time base, added to every packet */
    int64_t frames_sent;  /* frames the encoder accepted */
    int enc_flushed;      /* the encoder has been sent its end of stream */
    int file_opened;      /* w->oc->pb is open */
    int file_created;     /* the output file was created (remove it on failure) */
} writer;

/* Ends the stream of an encoder that was opened but not flushed (error
 * paths), dropping its output. SVT-AV1 1.4 hangs in avcodec_free_context
 * without an end of stream, and hangs on an end of stream that follows no
 * frame, so a black frame goes first when none was sent. */
static void drain_encoder(writer *w)
{
    if (!w->enc || w->enc_flushed) return;
    w->enc_flushed = 1;
    AVPacket *pkt = av_packet_alloc();
    AVFrame *blank = NULL;
    if (!pkt) return;
    if (!w->frames_sent) {
        blank = av_frame_alloc();
        if (blank) {
            blank->format = w->enc->pix_fmt;
            blank->width = w->enc->width;
            blank->height = w->enc->height;
            blank->pts = 0;
            if (av_frame_get_buffer(blank, 0) >= 0) {
                ptrdiff_t ls[4];
                for (int i = 0; i < 4; i++) ls[i] = blank->linesize[i];
                av_image_fill_black(blank->data, ls, w->enc->pix_fmt, w->enc->color_range, blank->width, blank->height);
                if (avcodec_send_frame(w->enc, blank) >= 0)
                    while (avcodec_receive_packet(w->enc, pkt) >= 0) av_packet_unref(pkt);
            }
            av_frame_free(&blank);
        }
    }
    if (avcodec_send_frame(w->enc, NULL) >= 0)
        while (avcodec_receive_packet(w->enc, pkt) >= 0) av_packet_unref(pkt);
    av_packet_free(&pkt);
}

static void writer_free(writer *w)
{
    drain_encoder(w);
    if (w->oc) {
        if (w->file_opened) avio_closep(&w->oc->pb);
        avformat_free_context(w->oc);
        w->oc = NULL;
    }
    avcodec_free_context(&w->enc);
    sws_freeContext(w->sws);
    w->sws = NULL;
    av_frame_free(&w->frame);
    av_packet_free(&w->pkt);
    free(w->rgb);
    free(w->scratch);
    free(w->pts);
    free(w->dur);
    w->rgb = NULL;
    w->scratch = NULL;
    w->pts = w->dur = NULL;
}

/* Opens the first encoder in the codec's list that exists, can do the pixel
 * format and accepts the settings. */
static int open_encoder(writer *w, const codec_desc *codec, const timing *t, int global_header, reel_error *err)
{
    const reel_synth_params *p = w->p;
    enum AVPixelFormat fmt = wanted_pix_fmt(p, codec);
    char tried[160] = "", why[256] = "", ebuf[AV_ERROR_MAX_STRING_SIZE];
    int any_encoder = 0, any_fmt = 0, last_status = REEL_E_UNSUPPORTED_CODEC;

    for (int i = 0; i < MAX_ENCODERS && codec->encoders[i]; i++) {
        const char *name = codec->encoders[i];
        const AVCodec *enc = avcodec_find_encoder_by_name(name);
        size_t len = strlen(tried);
        snprintf(tried + len, sizeof tried - len, "%s%s", len ? ", " : "", name);
        if (!enc) continue;
        any_encoder = 1;
        if (fmt == AV_PIX_FMT_NONE || !has_pix_fmt(enc, fmt)) continue;
        any_fmt = 1;
        int fit = encoder_fits(name, p, why, sizeof why);
        if (fit != REEL_OK) {
            last_status = fit;
            continue;
        }

        AVDictionary *opts = NULL;
        AVCodecContext *c = avcodec_alloc_context3(enc);
        if (!c) return fail(err, REEL_E_NOMEM, w->path, "out of memory allocating the encoder");
        int ret = configure(c, name, p, t, fmt, &opts);
        if (global_header) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
        if (ret >= 0) ret = avcodec_open2(c, enc, &opts);
        av_dict_free(&opts);
        if (ret >= 0) {
            w->enc = c;
            w->enc_name = name;
            return REEL_OK;
        }
        avcodec_free_context(&c);
        last_status = ret == AVERROR(ENOMEM) ? REEL_E_NOMEM : REEL_E_UNSUPPORTED_CODEC;
        snprintf(why, sizeof why, "encoder %s refused %dx%d %s: %s", name, p->width, p->height, pix_fmt_label(p),
                 averr_str(ret, ebuf, sizeof ebuf));
    }
    if (!any_encoder)
        return fail(err, REEL_E_UNSUPPORTED_CODEC, w->path, "no %s encoder in this FFmpeg build (looked for %s)",
                    codec->name, tried);
    if (!any_fmt)
        return fail(err, REEL_E_UNSUPPORTED_CODEC, w->path, "%s cannot be encoded as %s here (tried %s)", codec->name,
                    pix_fmt_label(p), tried);
    return fail(err, last_status, w->path, "%s", why);
}

/* Index of the frame with this pts (pts[] is increasing), or -1. */
static int64_t find_pts(const writer *w, int64_t pts)
{
    int64_t lo = 0, hi = w->p->num_frames - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (w->pts[mid] == pts) return mid;
        if (w->pts[mid] < pts)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Sends one frame (NULL: flush) and writes every packet that comes out. */
static int encode_and_write(writer *w, AVFrame *frame, reel_error *err)
{
    char ebuf[AV_ERROR_MAX_STRING_SIZE];
    int ret = avcodec_send_frame(w->enc, frame);
    if (!frame)
        w->enc_flushed = 1;
    else if (ret >= 0)
        w->frames_sent++;
    if (ret < 0)
        return fail(err, status_of_averror(ret, REEL_E_INTERNAL), w->path, "encoder %s failed: %s", w->enc_name,
                    averr_str(ret, ebuf, sizeof ebuf));
    for (;;) {
        ret = avcodec_receive_packet(w->enc, w->pkt);
        if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return REEL_OK;
        if (ret < 0)
            return fail(err, status_of_averror(ret, REEL_E_INTERNAL), w->path, "encoder %s failed: %s", w->enc_name,
                        averr_str(ret, ebuf, sizeof ebuf));
        if (w->pkt->pts != AV_NOPTS_VALUE) {
            int64_t i = find_pts(w, w->pkt->pts);
            if (i >= 0) w->pkt->duration = w->dur[i];
        }
        w->pkt->stream_index = w->st->index;
        av_packet_rescale_ts(w->pkt, w->enc->time_base, w->st->time_base);
        if (w->pkt->pts != AV_NOPTS_VALUE) w->pkt->pts += w->start_offset;
        if (w->pkt->dts != AV_NOPTS_VALUE) w->pkt->dts += w->start_offset;
        ret = av_interleaved_write_frame(w->oc, w->pkt); /* takes the packet's data */
        av_packet_unref(w->pkt);
        if (ret < 0)
            return fail(err, status_of_averror(ret, REEL_E_IO), w->path, "writing a packet failed: %s",
                        averr_str(ret, ebuf, sizeof ebuf));
    }
}

/* The buffers of a write: the RGB canvas (rows of *stride bytes), the
 * encoder frame, the converter to the encoder's format, the timestamps. */
static int alloc_buffers(writer *w, int64_t *stride, reel_error *err)
{
    const reel_synth_params *p = w->p;
    const int W = p->width, H = p->height;
    /* swscale's SIMD reads a little past the end of a line: pad the rows,
     * and zero the padding so it is defined. */
    const int64_t rgb_stride = ((int64_t)W * 3 + 63) & ~(int64_t)63;
    *stride = rgb_stride;
    w->rgb = calloc((size_t)rgb_stride * (size_t)H + 64, 1);
    w->scratch = malloc(sizeof *w->scratch * REEL__SYNTH_SCRATCH(W, H));
    w->pts = malloc(sizeof *w->pts * (size_t)p->num_frames);
    w->dur = malloc(sizeof *w->dur * (size_t)p->num_frames);
    w->frame = av_frame_alloc();
    w->pkt = av_packet_alloc();
    if (!w->rgb || !w->scratch || !w->pts || !w->dur || !w->frame || !w->pkt)
        return fail(err, REEL_E_NOMEM, w->path, "out of memory");
    w->frame->format = w->enc->pix_fmt;
    w->frame->width = W;
    w->frame->height = H;
    w->frame->color_range = w->enc->color_range;
    w->frame->colorspace = w->enc->colorspace;
    w->frame->color_primaries = w->enc->color_primaries;
    w->frame->color_trc = w->enc->color_trc;
    w->frame->sample_aspect_ratio = w->enc->sample_aspect_ratio;
    int ret = av_frame_get_buffer(w->frame, 0);
    if (ret < 0) return fail(err, REEL_E_NOMEM, w->path, "out of memory for a frame");

    w->sws = sws_getContext(W, H, AV_PIX_FMT_RGB24, W, H, w->enc->pix_fmt, SWS_BILINEAR, NULL, NULL, NULL);
    if (!w->sws)
        return fail(err, REEL_E_INTERNAL, w->path, "swscale cannot convert rgb24 to %s",
                    av_get_pix_fmt_name(w->enc->pix_fmt));
    {
        const int *coefs = sws_getCoefficients(SWS_CS_ITU601);
        int full = w->enc->color_range == AVCOL_RANGE_JPEG;
        sws_setColorspaceDetails(w->sws, coefs, 1, coefs, full, 0, 1 << 16, 1 << 16);
    }

    return REEL_OK;
}

static int write_all(writer *w, const container_desc *cont, const codec_desc *codec, reel_error *err)
{
    const reel_synth_params *p = w->p;
    char ebuf[AV_ERROR_MAX_STRING_SIZE];
    timing t;
    int ret, rc;

    pick_timing(p, cont, codec, &t);

    ret = avformat_alloc_output_context2(&w->oc, NULL, cont->format, w->path);
    if (ret < 0 || !w->oc)
        return fail(err, ret == AVERROR(ENOMEM) ? REEL_E_NOMEM : REEL_E_UNSUPPORTED_CODEC, w->path,
                    "no %s muxer in this FFmpeg build", cont->format);
    w->oc->flags |= AVFMT_FLAG_BITEXACT;
    /* avformat_query_codec answers yes for these, but the mov muxer refuses
     * them in its header (checked here so no encoder is started for nothing). */
    const int mov_refuses =
        !strcmp(cont->format, "mov") &&
        (codec->id == AV_CODEC_ID_VP8 || codec->id == AV_CODEC_ID_VP9 || codec->id == AV_CODEC_ID_AV1);
    if (mov_refuses || avformat_query_codec(w->oc->oformat, codec->id, FF_COMPLIANCE_NORMAL) == 0)
        return fail(err, REEL_E_UNSUPPORTED_CODEC, w->path, "a .%s file cannot hold %s video", cont->ext, codec->name);

    if (!(w->oc->oformat->flags & AVFMT_NOFILE)) {
        ret = avio_open(&w->oc->pb, w->path, AVIO_FLAG_WRITE);
        if (ret < 0)
            return fail(err, status_of_averror(ret, REEL_E_IO), w->path, "cannot create: %s",
                        averr_str(ret, ebuf, sizeof ebuf));
        w->file_opened = 1;
        w->file_created = 1;
    }
    rc = open_encoder(w, codec, &t, (w->oc->oformat->flags & AVFMT_GLOBALHEADER) != 0, err);
    if (rc != REEL_OK) return rc;

    w->st = avformat_new_stream(w->oc, NULL);
    if (!w->st) return fail(err, REEL_E_NOMEM, w->path, "out of memory adding the stream");
    ret = avcodec_parameters_from_context(w->st->codecpar, w->enc);
    if (ret < 0) return fail(err, REEL_E_NOMEM, w->path, "out of memory copying codec parameters");
    if (codec->id == AV_CODEC_ID_HEVC && cont->is_mov)
        w->st->codecpar->codec_tag = MKTAG('h', 'v', 'c', '1'); /* what players expect */
    w->st->time_base = t.start_tb;
    if (!p->vfr) {
        w->st->avg_frame_rate = w->enc->framerate;
        w->st->r_frame_rate = w->enc->framerate;
    }
    w->st->sample_aspect_ratio = w->enc->sample_aspect_ratio;

    ret = avformat_write_header(w->oc, NULL);
    if (ret < 0)
        return fail(err, status_of_averror(ret, REEL_E_UNSUPPORTED_CODEC), w->path,
                    "cannot write a .%s header for %s (%s): %s", cont->ext, codec->name, w->enc_name,
                    averr_str(ret, ebuf, sizeof ebuf));

    /* Buffers: the RGB canvas, the encoder frame, the converter, the timestamps. */
    const int W = p->width, H = p->height;
    int64_t rgb_stride = 0;
    rc = alloc_buffers(w, &rgb_stride, err);
    if (rc != REEL_OK) return rc;

    /* the muxer may have picked another stream time base: the start in it */
    w->start_offset = av_rescale_q_rnd(t.start, t.start_tb, w->st->time_base, AV_ROUND_NEAR_INF | AV_ROUND_PASS_MINMAX);
    int64_t pts = 0;
    for (int64_t i = 0; i < p->num_frames; i++) {
        w->pts[i] = pts;
        w->dur[i] = frame_duration(&t, i);
        pts += w->dur[i];
    }

    for (int64_t i = 0; i < p->num_frames; i++) {
        reel__synth_render(w->rgb, W, H, rgb_stride, i, p->seed, w->scratch);
        ret = av_frame_make_writable(w->frame);
        if (ret < 0) return fail(err, REEL_E_NOMEM, w->path, "out of memory for a frame");
        const uint8_t *src[4] = { w->rgb, NULL, NULL, NULL };
        const int src_stride[4] = { (int)rgb_stride, 0, 0, 0 };
        sws_scale(w->sws, src, src_stride, 0, H, w->frame->data, w->frame->linesize);
        w->frame->pts = w->pts[i];
#if LIBAVUTIL_VERSION_INT >= AV_VERSION_INT(57, 43, 100)
        w->frame->duration = w->dur[i];
#else
        w->frame->pkt_duration = w->dur[i];
#endif
        /* Keyframes exactly every gop frames, whatever the encoder would pick. */
        w->frame->pict_type = (i % p->gop == 0) ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
        rc = encode_and_write(w, w->frame, err);
        if (rc != REEL_OK) return rc;
    }
    rc = encode_and_write(w, NULL, err);
    if (rc != REEL_OK) return rc;

    ret = av_write_trailer(w->oc);
    if (ret < 0)
        return fail(err, status_of_averror(ret, REEL_E_IO), w->path, "writing the trailer failed: %s",
                    averr_str(ret, ebuf, sizeof ebuf));
    if (w->file_opened) {
        ret = avio_closep(&w->oc->pb);
        w->file_opened = 0;
        if (ret < 0) return fail(err, REEL_E_IO, w->path, "closing failed: %s", averr_str(ret, ebuf, sizeof ebuf));
    }
    return REEL_OK;
}

int reel_synth_write(const reel_synth_params *p, reel_error *err)
{
    const container_desc *cont;
    const codec_desc *codec;
    if (!p) return fail(err, REEL_E_INVALID_ARG, "(synth)", "no parameters given");
    int rc = validate(p, &cont, &codec, err);
    if (rc != REEL_OK) return rc;

    writer w;
    memset(&w, 0, sizeof w);
    w.p = p;
    w.path = p->path;
    rc = write_all(&w, cont, codec, err);
    writer_free(&w);
    if (rc != REEL_OK && w.file_created) remove(p->path); /* no half-written videos left behind */
    return rc;
}
