/* encode.c: the store's frame encoders: JPEG (libjpeg-turbo), raw RGB24
 * (optionally zstd per frame), and short-GOP H.264 (libx264 through
 * libavcodec, in Matroska written to memory). All deterministic. */
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <turbojpeg.h>
#include <zstd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>

int reel__bytes_reserve(reel__bytes *b, size_t extra)
{
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->len + extra) cap *= 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

void reel__bytes_free(reel__bytes *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

struct reel__encoder {
    reel__store_params p;
    int w, h;
    size_t pixel_bytes; /* of the record's pixels (reel__store_pixel_bytes) */
    tjhandle tj;
    ZSTD_CCtx *zc;
    /* H264 */
    AVCodecContext *cc;
    struct SwsContext *sws;
    AVFrame *yuv;
    AVPacket *pkt;
    uint8_t **pkts; /* encoded packets of the record, in decode order */
    size_t *pkt_len;
    int64_t *pkt_pts, *pkt_dts;
    int *pkt_key;
    size_t npkt, pkt_alloc;
    int64_t sent;
};

int reel__encoder_create(reel__encoder **out, const reel__store_params *p, reel_error *err)
{
    reel__encoder *e = calloc(1, sizeof *e);
    if (!e) return reel__error_set(err, REEL_E_NOMEM, "store encoder: out of memory");
    e->p = *p;
    if (p->format == REEL_STORE_FORMAT_JPEG) {
        e->tj = tjInitCompress();
        if (!e->tj) {
            free(e);
            return reel__error_set(err, REEL_E_INTERNAL, "store encoder: libjpeg-turbo: %s", tjGetErrorStr());
        }
    } else if (p->format == REEL_STORE_FORMAT_RAW && p->zstd_level > 0) {
        e->zc = ZSTD_createCCtx();
        if (!e->zc) {
            free(e);
            return reel__error_set(err, REEL_E_NOMEM, "store encoder: zstd: out of memory");
        }
    }
    *out = e;
    return REEL_OK;
}

static void h264_reset(reel__encoder *e)
{
    avcodec_free_context(&e->cc);
    sws_freeContext(e->sws);
    e->sws = NULL;
    av_frame_free(&e->yuv);
    av_packet_free(&e->pkt);
    for (size_t i = 0; i < e->npkt; i++) free(e->pkts[i]);
    e->npkt = 0;
    e->sent = 0;
}

void reel__encoder_destroy(reel__encoder **pe)
{
    if (!pe || !*pe) return;
    reel__encoder *e = *pe;
    if (e->tj) tjDestroy(e->tj);
    ZSTD_freeCCtx(e->zc);
    h264_reset(e);
    free(e->pkts);
    free(e->pkt_len);
    free(e->pkt_pts);
    free(e->pkt_dts);
    free(e->pkt_key);
    free(e);
    *pe = NULL;
}

int reel__encoder_h264_check(const char *name, reel_error *err)
{
    if (avcodec_find_encoder_by_name("libx264")) return REEL_OK;
    /* The wheel's FFmpeg is LGPL: libx264 (GPL) cannot be bundled in it. */
    return reel__error_set(err, REEL_E_UNSUPPORTED_CODEC,
                           "%s: the h264 store format needs FFmpeg's libx264 encoder, which this FFmpeg (%s) does "
                           "not have (the reel wheel's FFmpeg is LGPL-only); use --format jpeg or raw, or build "
                           "reel from source against a system FFmpeg that has libx264 (Debian/Ubuntu: apt-get "
                           "install libavcodec-dev, then pip install . in reel's source tree)",
                           name, av_version_info());
}

static int h264_begin(reel__encoder *e, const char *name, reel_error *err)
{
    int st = reel__encoder_h264_check(name, err);
    if (st != REEL_OK) return st;
    const AVCodec *codec = avcodec_find_encoder_by_name("libx264");
    e->cc = avcodec_alloc_context3(codec);
    e->yuv = av_frame_alloc();
    e->pkt = av_packet_alloc();
    if (!e->cc || !e->yuv || !e->pkt) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    /* 4:2:0 needs even sizes; odd ones are stored 4:4:4 */
    enum AVPixelFormat pf = (e->w % 2 || e->h % 2) ? AV_PIX_FMT_YUV444P : AV_PIX_FMT_YUV420P;
    e->cc->width = e->w;
    e->cc->height = e->h;
    e->cc->pix_fmt = pf;
    e->cc->time_base = (AVRational){ 1, 25 };
    e->cc->framerate = (AVRational){ 25, 1 };
    e->cc->gop_size = e->p.gop > 0 ? e->p.gop : 8;
    e->cc->keyint_min = e->cc->gop_size;
    e->cc->max_b_frames = 0;
    e->cc->thread_count = 1; /* deterministic output */
    e->cc->colorspace = AVCOL_SPC_SMPTE170M;
    e->cc->color_range = AVCOL_RANGE_MPEG;
    e->cc->color_primaries = AVCOL_PRI_SMPTE170M;
    e->cc->color_trc = AVCOL_TRC_SMPTE170M;
    e->cc->flags |= AV_CODEC_FLAG_BITEXACT | AV_CODEC_FLAG_GLOBAL_HEADER;
    av_opt_set(e->cc->priv_data, "preset", "fast", 0);
    av_opt_set_double(e->cc->priv_data, "crf", e->p.crf > 0 ? e->p.crf : 18, 0);
    av_opt_set(e->cc->priv_data, "x264-params", "scenecut=0:open-gop=0", 0);
    int r = avcodec_open2(e->cc, codec, NULL);
    if (r < 0) return reel__error_set(err, REEL_E_INTERNAL, "%s: cannot open libx264 (%d)", name, r);
    e->yuv->format = pf;
    e->yuv->width = e->w;
    e->yuv->height = e->h;
    if (av_frame_get_buffer(e->yuv, 0) < 0) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    e->sws = sws_getContext(e->w, e->h, AV_PIX_FMT_RGB24, e->w, e->h, pf,
                            SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT | SWS_BITEXACT, NULL, NULL, NULL);
    if (!e->sws) return reel__error_set(err, REEL_E_NOMEM, "%s: cannot set up RGB->YUV", name);
    const int *coefs = sws_getCoefficients(SWS_CS_ITU601);
    sws_setColorspaceDetails(e->sws, coefs, 1, coefs, 0, 0, 1 << 16, 1 << 16);
    return REEL_OK;
}

int reel__encoder_begin(reel__encoder *e, int w, int h, int pixels, const char *name, reel_error *err)
{
    if (e->p.format != REEL_STORE_FORMAT_RAW && pixels != REEL__STORE_PIX_RGB24)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: %s records hold 8-bit RGB; gray and 16-bit need raw", name,
                               e->p.format == REEL_STORE_FORMAT_JPEG ? "jpeg" : "h264");
    e->w = w;
    e->h = h;
    e->pixel_bytes = reel__store_pixel_bytes(pixels);
    if (e->p.format != REEL_STORE_FORMAT_H264) return REEL_OK;
    h264_reset(e);
    return h264_begin(e, name, err);
}

static int keep_packets(reel__encoder *e, const char *name, reel_error *err)
{
    for (;;) {
        int r = avcodec_receive_packet(e->cc, e->pkt);
        if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return REEL_OK;
        if (r < 0) return reel__error_set(err, REEL_E_INTERNAL, "%s: H.264 encoding failed (%d)", name, r);
        if (e->npkt == e->pkt_alloc) {
            size_t na = e->pkt_alloc ? e->pkt_alloc * 2 : 64;
            uint8_t **a = realloc(e->pkts, na * sizeof *a);
            if (a) e->pkts = a;
            size_t *l = realloc(e->pkt_len, na * sizeof *l);
            if (l) e->pkt_len = l;
            int64_t *pp = realloc(e->pkt_pts, na * sizeof *pp);
            if (pp) e->pkt_pts = pp;
            int64_t *pd = realloc(e->pkt_dts, na * sizeof *pd);
            if (pd) e->pkt_dts = pd;
            int *k = realloc(e->pkt_key, na * sizeof *k);
            if (k) e->pkt_key = k;
            if (!a || !l || !pp || !pd || !k) {
                av_packet_unref(e->pkt);
                return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
            }
            e->pkt_alloc = na;
        }
        uint8_t *d = malloc((size_t)e->pkt->size);
        if (!d) {
            av_packet_unref(e->pkt);
            return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
        }
        memcpy(d, e->pkt->data, (size_t)e->pkt->size);
        e->pkts[e->npkt] = d;
        e->pkt_len[e->npkt] = (size_t)e->pkt->size;
        e->pkt_pts[e->npkt] = e->pkt->pts;
        e->pkt_dts[e->npkt] = e->pkt->dts;
        e->pkt_key[e->npkt] = (e->pkt->flags & AV_PKT_FLAG_KEY) != 0;
        e->npkt++;
        av_packet_unref(e->pkt);
    }
}

int reel__encoder_add(reel__encoder *e, const uint8_t *rgb, size_t stride, int64_t first, int n,
                      reel__store_frame *frames, reel__bytes *out, const char *name, reel_error *err)
{
    const size_t raw = (size_t)e->w * (size_t)e->h * e->pixel_bytes;
    for (int i = 0; i < n; i++) {
        const uint8_t *img = rgb + (size_t)i * stride;
        reel__store_frame *f = &frames[first + i];
        f->flags = 1; /* REEL_FRAME_KEY: every JPEG/RAW frame stands alone */
        if (e->p.format == REEL_STORE_FORMAT_JPEG) {
            unsigned char *jpg = NULL;
            unsigned long jlen = 0;
            if (tjCompress2(e->tj, img, e->w, e->w * 3, e->h, TJPF_RGB, &jpg, &jlen, TJSAMP_420,
                            e->p.quality > 0 ? e->p.quality : 90, 0) != 0) {
                int st =
                    reel__error_set(err, REEL_E_INTERNAL, "%s: JPEG encoding failed: %s", name, tjGetErrorStr2(e->tj));
                tjFree(jpg);
                return st;
            }
            if (reel__bytes_reserve(out, jlen) != 0) {
                tjFree(jpg);
                return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
            }
            f->offset = (uint32_t)out->len;
            f->length = (uint32_t)jlen;
            memcpy(out->data + out->len, jpg, jlen);
            out->len += jlen;
            tjFree(jpg);
        } else if (e->p.format == REEL_STORE_FORMAT_RAW) {
            if (e->zc) {
                size_t bound = ZSTD_compressBound(raw);
                if (reel__bytes_reserve(out, bound) != 0)
                    return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
                size_t z = ZSTD_compressCCtx(e->zc, out->data + out->len, bound, img, raw, (int)e->p.zstd_level);
                if (ZSTD_isError(z))
                    return reel__error_set(err, REEL_E_INTERNAL, "%s: zstd: %s", name, ZSTD_getErrorName(z));
                f->offset = (uint32_t)out->len;
                f->length = (uint32_t)z;
                out->len += z;
            } else {
                if (reel__bytes_reserve(out, raw) != 0)
                    return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
                f->offset = (uint32_t)out->len;
                f->length = (uint32_t)raw;
                memcpy(out->data + out->len, img, raw);
                out->len += raw;
            }
        } else {
            const uint8_t *src[1] = { img };
            int ls[1] = { (int)(e->w * 3) };
            if (av_frame_make_writable(e->yuv) < 0)
                return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
            sws_scale(e->sws, src, ls, 0, e->h, e->yuv->data, e->yuv->linesize);
            e->yuv->pts = e->sent++;
            int r = avcodec_send_frame(e->cc, e->yuv);
            if (r < 0) return reel__error_set(err, REEL_E_INTERNAL, "%s: H.264 encoding failed (%d)", name, r);
            int st = keep_packets(e, name, err);
            if (st != REEL_OK) return st;
            f->offset = 0;
            f->length = 0;
            f->flags = 0;
            continue;
        }
        f->crc = reel__crc32(0, out->data + f->offset, f->length);
    }
    return REEL_OK;
}

/* Matroska written to memory: the record of an H264 store. */
static int h264_mux(reel__encoder *e, reel__bytes *out, const char *name, reel_error *err)
{
    AVFormatContext *fc = NULL;
    uint8_t *buf = NULL;
    int st = REEL_OK;
    if (avformat_alloc_output_context2(&fc, NULL, "matroska", NULL) < 0 || !fc)
        return reel__error_set(err, REEL_E_INTERNAL, "%s: no Matroska muxer", name);
    fc->flags |= AVFMT_FLAG_BITEXACT;
    AVStream *vs = avformat_new_stream(fc, NULL);
    if (!vs || avcodec_parameters_from_context(vs->codecpar, e->cc) < 0 || avio_open_dyn_buf(&fc->pb) < 0) {
        st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
        goto done;
    }
    vs->time_base = e->cc->time_base;
    if (avformat_write_header(fc, NULL) < 0) {
        st = reel__error_set(err, REEL_E_INTERNAL, "%s: Matroska header", name);
        goto done;
    }
    for (size_t i = 0; i < e->npkt && st == REEL_OK; i++) {
        AVPacket *p = e->pkt;
        if (av_new_packet(p, (int)e->pkt_len[i]) < 0) {
            st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
            break;
        }
        memcpy(p->data, e->pkts[i], e->pkt_len[i]);
        p->pts = e->pkt_pts[i];
        p->dts = e->pkt_dts[i];
        p->duration = 1;
        p->flags = e->pkt_key[i] ? AV_PKT_FLAG_KEY : 0;
        p->stream_index = 0;
        av_packet_rescale_ts(p, e->cc->time_base, vs->time_base);
        if (av_write_frame(fc, p) < 0) st = reel__error_set(err, REEL_E_INTERNAL, "%s: Matroska packet", name);
        av_packet_unref(p);
    }
    if (st == REEL_OK && av_write_trailer(fc) < 0)
        st = reel__error_set(err, REEL_E_INTERNAL, "%s: Matroska trailer", name);
done:
    if (fc && fc->pb) {
        int len = avio_close_dyn_buf(fc->pb, &buf);
        fc->pb = NULL;
        if (st == REEL_OK) {
            if (reel__bytes_reserve(out, (size_t)len) != 0) {
                st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
            } else {
                memcpy(out->data + out->len, buf, (size_t)len);
                out->len += (size_t)len;
            }
        }
        av_free(buf);
    }
    avformat_free_context(fc);
    return st;
}

int reel__encoder_end(reel__encoder *e, reel__store_frame *frames, int64_t nframes, reel__bytes *out, const char *name,
                      reel_error *err)
{
    (void)frames;
    (void)nframes;
    if (e->p.format != REEL_STORE_FORMAT_H264) return REEL_OK;
    int r = avcodec_send_frame(e->cc, NULL);
    if (r < 0) return reel__error_set(err, REEL_E_INTERNAL, "%s: H.264 flush failed (%d)", name, r);
    int st = keep_packets(e, name, err);
    if (st != REEL_OK) return st;
    if ((int64_t)e->npkt != nframes)
        return reel__error_set(err, REEL_E_INTERNAL, "%s: H.264 encoder gave %zu packets for %lld frames", name,
                               e->npkt, (long long)nframes);
    for (int64_t i = 0; i < nframes; i++) frames[i].flags = 0;
    for (size_t i = 0; i < e->npkt; i++)
        if (e->pkt_key[i] && e->pkt_pts[i] >= 0 && e->pkt_pts[i] < nframes) frames[e->pkt_pts[i]].flags = 1;
    return h264_mux(e, out, name, err);
}
