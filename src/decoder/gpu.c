/* gpu.c: a decoder on a CUDA device (settings.device "cuda[:N]"): its
 * device and FFmpeg's CUDA device on the same primary context, NVDEC chosen
 * in get_format when FFmpeg offers it, and the frames of a get_frames call
 * queued for the conversion kernel (NVDEC surfaces as they are, CPU-decoded
 * pictures uploaded), counted, and launched in batches. */
#include "decoder/internal.h"
#include "cuda/device.h"

#include <stdio.h>
#include <string.h>

#include <libavutil/pixdesc.h>

/* Frames per launch: each holds its source (an NVDEC surface or an upload)
 * until the launch. */
#define GPU_BATCH 16

static enum AVPixelFormat get_format(AVCodecContext *avctx, const enum AVPixelFormat *fmts)
{
    reel_decoder *dec = avctx->opaque;
    for (const enum AVPixelFormat *p = fmts; *p != AV_PIX_FMT_NONE; p++)
        if (*p == AV_PIX_FMT_CUDA) {
            dec->gpu_asked_nvdec = 1;
            snprintf(dec->gpu_note, sizeof dec->gpu_note, "%s", "");
            return AV_PIX_FMT_CUDA;
        }
    const char *profile = avcodec_profile_name(avctx->codec_id, avctx->profile);
    if (dec->gpu_asked_nvdec) {
        /* FFmpeg's NVDEC did not start for this stream (a codec, profile or
         * size the GPU lacks) and asks again without it: what it logged
         * about that concerns no frame */
        snprintf(dec->gpu_note, sizeof dec->gpu_note,
                 "NVDEC did not start for %s%s%s %dx%d %s (FFmpeg's hwaccel failed); decoded on the CPU and uploaded",
                 avcodec_get_name(avctx->codec_id), profile ? " " : "", profile ? profile : "", avctx->coded_width,
                 avctx->coded_height,
                 av_get_pix_fmt_name(avctx->sw_pix_fmt) ? av_get_pix_fmt_name(avctx->sw_pix_fmt) : "");
        reel__log_mark(dec);
    } else {
        snprintf(dec->gpu_note, sizeof dec->gpu_note,
                 "FFmpeg offers no CUDA hwaccel for %s%s%s %s; decoded on the CPU and uploaded",
                 avcodec_get_name(avctx->codec_id), profile ? " " : "", profile ? profile : "",
                 av_get_pix_fmt_name(avctx->sw_pix_fmt) ? av_get_pix_fmt_name(avctx->sw_pix_fmt) : "");
    }
    return avcodec_default_get_format(avctx, fmts);
}

void reel__decoder_gpu_codec(const reel_decoder *dec, AVCodecContext *c, void *opaque)
{
    if (!dec->hw_device || opaque != dec) return; /* the main context only */
    c->hw_device_ctx = av_buffer_ref(dec->hw_device);
    if (c->hw_device_ctx) c->get_format = get_format;
}

void reel__decoder_gpu_close(reel_decoder *dec)
{
    snprintf(dec->gpu_device, sizeof dec->gpu_device, "cpu");
    reel__cuda_batch_free(&dec->batch);
    av_buffer_unref(&dec->hw_device);
    if (dec->cuda_home) /* lent: the loader's and its workers', closed by the loader */
        dec->cuda = NULL;
    else
        reel__cuda_close(&dec->cuda);
}

void reel__decoder_gpu_lend(reel_decoder *dec, reel__cuda *c)
{
    if (!dec->cuda_home || !dec->cuda || !c || dec->cuda == c) return;
    dec->cuda = c;
    reel__cuda_batch_set_device(dec->batch, c);
    reel__cuda_ffmpeg_device_stream(dec->hw_device, c);
}

int reel__decoder_gpu_open(reel_decoder *dec, reel_error *err)
{
    int index;
    reel_error e;
    reel_error_clear(&e);
    if (reel__device_parse(dec->settings.device, &index, &e) != REEL_OK || index < 0) return REEL_OK;
    int r = REEL_OK;
    if (dec->cuda_home) /* a GPU loader's: its device, a worker's lent per call */
        dec->cuda = dec->cuda_home;
    else
        r = reel__cuda_open(index, 0, &dec->cuda, &e);
    if (r == REEL_OK) snprintf(dec->gpu_device, sizeof dec->gpu_device, "cuda:%d", index);
    if (r == REEL_OK) r = reel__cuda_batch_new(dec->cuda, GPU_BATCH, &dec->batch, &e);
    if (r != REEL_OK) {
        reel__decoder_gpu_close(dec);
        if (dec->settings.device_fallback && *dec->settings.device_fallback) return REEL_OK; /* asked for: the CPU */
        return reel__error_set(err, r, "%s: %s (device_fallback=\"cpu\" decodes on the CPU instead)", dec->name,
                               e.message);
    }
    /* FFmpeg's CUDA device on the same primary context; its NVDEC is used
     * when its library is there (without it, FFmpeg's attempt would only log
     * errors against this decoder's frames) */
    AVBufferRef *hw = NULL;
    if (reel__cuda_ffmpeg_device(dec->cuda, &hw, &e) != REEL_OK)
        snprintf(dec->gpu_note, sizeof dec->gpu_note, "%.200s; decoded on the CPU and uploaded", e.message);
    else if (!reel__cuda_nvdec_library(dec->gpu_note, sizeof dec->gpu_note))
        av_buffer_unref(&hw);
    dec->hw_device = hw;
    return REEL_OK;
}

int reel__decoder_gpu_frame(reel_decoder *dec, const reel_frame *f, const reel_transform *t, uint64_t dst,
                            reel_error *err)
{
    int on = 0;
    int r = reel__cuda_batch_add(dec->batch, f->av, f->rotation, f->index, t, dst, &on, err);
    if (r != REEL_OK) return reel__decoder_gpu_failed(dec, r, err);
    if (on == 1) dec->gpu_nvdec++;
    if (on == 0) dec->gpu_uploaded++;
    return REEL_OK;
}

int reel__decoder_gpu_finish(reel_decoder *dec, int status, reel_error *err)
{
    if (status != REEL_OK) {
        reel__cuda_batch_drop(dec->batch);
        return status;
    }
    int r = reel__cuda_batch_launch(dec->batch, err);
    return r == REEL_OK ? r : reel__decoder_gpu_failed(dec, r, err);
}

int reel__decoder_gpu_failed(reel_decoder *dec, int status, reel_error *err)
{
    reel__cuda_batch_drop(dec->batch);
    if (err && strncmp(err->message, dec->name, strlen(dec->name))) {
        char msg[REEL_ERROR_MSG_SIZE];
        memcpy(msg, err->message, sizeof msg);
        snprintf(err->message, sizeof err->message, "%.255s: %.250s", dec->name, msg);
    }
    return status;
}

const char *reel_decoder_get_device(const reel_decoder *dec)
{
    return dec ? dec->gpu_device : NULL;
}

const char *reel_decoder_get_upload_reason(const reel_decoder *dec)
{
    return dec && dec->cuda ? dec->gpu_note : NULL;
}
