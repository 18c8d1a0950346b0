/* batch.c: a decoder's frames on their way to the conversion kernel: each
 * decoded picture made a kernel source (an NVDEC surface referenced as is; a
 * CPU-decoded picture packed to NV12 / P010 in the device's pinned staging
 * and uploaded into its pool on its stream), planned, and launched
 * together, one launch per batch; and the FFmpeg CUDA device on the same
 * primary context for NVDEC. */
#include "cuda/device.h"
#include "cuda/device_parts.h"
#include "cuda/plan.h"
#include "core/error.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>
/* hwcontext_cuda.h includes cuda.h unless CUDA_VERSION is set: driver.h's
 * types stand in for it (no CUDA SDK at build time) */
#define CUDA_VERSION 11000
#include <libavutil/hwcontext_cuda.h>

struct reel__cuda_batch {
    reel__cuda *c;
    int max, n;
    reel__px_frame *frames;
    AVFrame **held; /* NVDEC surfaces referenced until the launch */
    int nheld;
    reel__cuda_taps taps;
    int taken;        /* staging or pool buffers of c in use since the last launch or drop */
    int64_t last_key; /* the frame added last in this batch, and its source */
    reel__cuda_src last_src;
};

int reel__cuda_batch_new(reel__cuda *c, int max_frames, reel__cuda_batch **out, reel_error *err)
{
    *out = NULL;
    if (max_frames < 1 || max_frames >= REEL__CUDA_STAGING_SLOTS) /* a staging slot per picture, one for the tables */
        return reel__error_set(err, REEL_E_INVALID_ARG, "CUDA: a batch of %d frames (1 to %d)", max_frames,
                               REEL__CUDA_STAGING_SLOTS - 1);
    reel__cuda_batch *b = calloc(1, sizeof *b);
    if (b) {
        b->frames = calloc((size_t)max_frames, sizeof *b->frames);
        b->held = calloc((size_t)max_frames, sizeof *b->held);
    }
    if (!b || !b->frames || !b->held) {
        if (b) {
            free(b->frames);
            free(b->held);
        }
        free(b);
        return reel__error_set(err, REEL_E_NOMEM, "CUDA: out of memory");
    }
    b->c = c;
    b->max = max_frames;
    b->last_key = -1;
    *out = b;
    return REEL_OK;
}

void reel__cuda_batch_drop(reel__cuda_batch *b)
{
    if (!b) return;
    for (int i = 0; i < b->nheld; i++) av_frame_free(&b->held[i]);
    b->nheld = 0;
    b->n = 0;
    b->last_key = -1;
    reel__cuda_taps_reset(&b->taps);
    if (!b->taken) return; /* c may be a loader worker's, busy with another decoder: not touched */
    reel_error e;
    reel__cuda_sync(b->c, &e); /* an upload queued before a failure may still read the staging */
    reel__cuda_buffers_release(b->c);
    b->taken = 0;
}

void reel__cuda_batch_set_device(reel__cuda_batch *b, reel__cuda *c)
{
    reel__cuda_batch_drop(b);
    b->c = c;
}

void reel__cuda_batch_free(reel__cuda_batch **pb)
{
    if (!pb || !*pb) return;
    reel__cuda_batch *b = *pb;
    reel__cuda_batch_drop(b);
    reel__cuda_taps_free(&b->taps);
    free(b->frames);
    free(b->held);
    free(b);
    *pb = NULL;
}

int reel__cuda_batch_launch(reel__cuda_batch *b, reel_error *err)
{
    b->taken = 1;
    int r = reel__cuda_convert(b->c, b->frames, b->n, &b->taps, err);
    reel__cuda_batch_drop(b);
    return r;
}

/* A host picture packed as NV12 (bits 8) or P010 (10), luma then chroma,
 * rows of y_pitch / uv_pitch bytes, into staging slot b->n of the device
 * (*host). */
static int pack_host(reel__cuda_batch *b, const AVFrame *f, reel__cuda_src *s, uint8_t **host, size_t *bytes,
                     reel_error *err)
{
    const int fmt = f->format;
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(fmt);
    int bits, semi;
    switch (fmt) {
    case AV_PIX_FMT_YUV420P:
    case AV_PIX_FMT_YUVJ420P: bits = 8, semi = 0; break;
    case AV_PIX_FMT_NV12: bits = 8, semi = 1; break;
    case AV_PIX_FMT_YUV420P10LE: bits = 10, semi = 0; break;
    case AV_PIX_FMT_P010LE: bits = 10, semi = 1; break;
    default:
        return reel__error_set(err, REEL_E_CUDA,
                               "CUDA conversion: %s pictures are not done on the GPU (8- and 10-bit 4:2:0 only)",
                               d ? d->name : "unknown");
    }
    const int es = bits == 8 ? 1 : 2, w = f->width, h = f->height, cw = (w + 1) / 2, ch = (h + 1) / 2;
    s->bits = bits;
    s->y_pitch = (w * es + 63) / 64 * 64;
    s->uv_pitch = (cw * 2 * es + 63) / 64 * 64;
    size_t need = (size_t)s->y_pitch * (size_t)h + (size_t)s->uv_pitch * (size_t)ch;
    b->taken = 1;
    int st = reel__cuda_staging(b->c, b->n, need, (void **)host, err);
    if (st != REEL_OK) return st;
    uint8_t *y = *host, *uv = *host + (size_t)s->y_pitch * (size_t)h;
    for (int r = 0; r < h; r++) {
        const uint8_t *src = f->data[0] + (ptrdiff_t)r * f->linesize[0];
        uint16_t *o16 = (uint16_t *)(y + (size_t)r * s->y_pitch);
        if (es == 1 || semi)
            memcpy(y + (size_t)r * s->y_pitch, src, (size_t)w * es);
        else
            for (int x = 0; x < w; x++) o16[x] = (uint16_t)(((const uint16_t *)src)[x] << 6);
    }
    for (int r = 0; r < ch; r++) {
        uint8_t *o = uv + (size_t)r * s->uv_pitch;
        if (semi) {
            memcpy(o, f->data[1] + (ptrdiff_t)r * f->linesize[1], (size_t)cw * 2 * es);
            continue;
        }
        const uint8_t *u = f->data[1] + (ptrdiff_t)r * f->linesize[1], *v = f->data[2] + (ptrdiff_t)r * f->linesize[2];
        if (es == 1) {
            for (int x = 0; x < cw; x++) {
                o[2 * x] = u[x];
                o[2 * x + 1] = v[x];
            }
        } else {
            uint16_t *o16 = (uint16_t *)o;
            for (int x = 0; x < cw; x++) {
                o16[2 * x] = (uint16_t)(((const uint16_t *)u)[x] << 6);
                o16[2 * x + 1] = (uint16_t)(((const uint16_t *)v)[x] << 6);
            }
        }
    }
    *bytes = need;
    return REEL_OK;
}

int reel__cuda_batch_add(reel__cuda_batch *b, const AVFrame *f, int rotation, int64_t key, const reel_transform *t,
                         uint64_t dst, int *on_device, reel_error *err)
{
    *on_device = 0;
    if (b->n == b->max) {
        int r = reel__cuda_batch_launch(b, err);
        if (r != REEL_OK) return r;
    }
    reel__cuda_src s;
    if (key >= 0 && key == b->last_key) {
        s = b->last_src; /* the same picture again, in this batch: already there */
        *on_device = -1;
    } else {
        memset(&s, 0, sizeof s);
        s.width = f->width;
        s.height = f->height;
        s.colorspace = f->colorspace;
        s.rotation = rotation;
        if (f->format == AV_PIX_FMT_CUDA) { /* an NVDEC surface: NV12 or P010 in device memory */
            const AVHWFramesContext *fc = f->hw_frames_ctx ? (const AVHWFramesContext *)f->hw_frames_ctx->data : NULL;
            int sw = fc ? fc->sw_format : AV_PIX_FMT_NONE;
            if (sw != AV_PIX_FMT_NV12 && sw != AV_PIX_FMT_P010LE && sw != AV_PIX_FMT_P016LE)
                return reel__error_set(err, REEL_E_CUDA, "CUDA conversion: NVDEC surfaces of %s are not done",
                                       av_get_pix_fmt_name(sw) ? av_get_pix_fmt_name(sw) : "unknown format");
            s.bits = sw == AV_PIX_FMT_NV12 ? 8 : 10;
            s.y = f->data[0];
            s.uv = f->data[1];
            s.y_pitch = f->linesize[0];
            s.uv_pitch = f->linesize[1];
            s.full_range = reel__convert_full_range(f->color_range, sw);
            AVFrame *ref = av_frame_clone(f);
            if (!ref) return reel__error_set(err, REEL_E_NOMEM, "CUDA: out of memory");
            b->held[b->nheld++] = ref;
            *on_device = 1;
        } else {
            size_t bytes = 0;
            uint8_t *host = NULL;
            s.full_range = reel__convert_full_range(f->color_range, f->format);
            int r = pack_host(b, f, &s, &host, &bytes, err);
            uint64_t p = 0;
            if (r == REEL_OK) r = reel__cuda_buffer(b->c, bytes, &p, err);
            if (r == REEL_OK) r = reel__cuda_upload_async(b->c, p, host, bytes, err); /* the launch waits for it */
            if (r != REEL_OK) return r;
            s.y = (const uint8_t *)(uintptr_t)p;
            s.uv = s.y + (size_t)s.y_pitch * (size_t)f->height;
        }
    }
    int r = reel__cuda_plan_frame(&b->taps, &s, t, (void *)(uintptr_t)dst, &b->frames[b->n], err);
    if (r != REEL_OK) return r;
    b->n++;
    b->last_key = key;
    b->last_src = s;
    return REEL_OK;
}

int reel__cuda_nvdec_library(char *why, size_t size)
{
    void *lib = dlopen("libnvcuvid.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib) {
        dlclose(lib);
        return 1;
    }
    const char *e = dlerror();
    snprintf(why, size,
             "no libnvcuvid.so.1, NVDEC's library (a driver mounted without the video capability: "
             "NVIDIA_DRIVER_CAPABILITIES=video): %s",
             e ? e : "dlopen failed");
    return 0;
}

void reel__cuda_ffmpeg_device_stream(AVBufferRef *hw, reel__cuda *c)
{
    /* FFmpeg's NVDEC reads the device's stream at each surface it maps and
     * copies: from now on, c's */
    if (hw) ((AVCUDADeviceContext *)((AVHWDeviceContext *)hw->data)->hwctx)->stream = reel__cuda_stream(c);
}

int reel__cuda_ffmpeg_device(reel__cuda *c, AVBufferRef **out, reel_error *err)
{
    /* FFmpeg's device made over reel's own primary context and stream (not
     * av_hwdevice_ctx_create's, which refuses a primary context another
     * user made active with other flags, as PyTorch does): NVDEC's copies
     * of its surfaces then run on the stream the kernel reads them on */
    *out = av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_CUDA);
    if (!*out) return reel__error_set(err, REEL_E_NOMEM, "CUDA: out of memory");
    AVCUDADeviceContext *hw = ((AVHWDeviceContext *)(*out)->data)->hwctx;
    hw->cuda_ctx = reel__cuda_context(c);
    hw->stream = reel__cuda_stream(c);
    int r = av_hwdevice_ctx_init(*out);
    if (r < 0) {
        av_buffer_unref(out);
        char eb[128];
        av_strerror(r, eb, sizeof eb);
        return reel__error_set(err, REEL_E_CUDA, "CUDA: FFmpeg's CUDA device on %s cannot be made: %s",
                               reel__cuda_name(c), eb);
    }
    return REEL_OK;
}
