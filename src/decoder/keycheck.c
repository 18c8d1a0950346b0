/* keycheck.c: whether a keyframe is a clean place to start decoding: the
 * probe that decodes it alone on a single-threaded codec, the hash of its
 * picture that frame threads must reproduce, and damaged-frame flags. */
#include "decoder/internal.h"
#include "core/hash.h"

#include <stdlib.h>
#include <string.h>

#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>

/* dec->key_state, allocated on first use; NULL when out of memory. */
uint8_t *reel__key_state(reel_decoder *dec)
{
    if (!dec->key_state) dec->key_state = calloc((size_t)dec->table.n_decode, 1);
    return dec->key_state;
}

int reel__frame_is_corrupt(const AVFrame *f)
{
    return (f->flags & AV_FRAME_FLAG_CORRUPT) || f->decode_error_flags;
}

/* A hash of a decoded picture's visible bytes, plane by plane (FNV-1a over
 * 64-bit words, eight times fewer steps than bytewise for a keyframe, then
 * the row tail byte by byte). */
uint64_t reel__picture_hash(const AVFrame *f)
{
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f->format);
    uint64_t h = REEL_FNV_OFFSET;
    if (!d) return h;
    for (int p = 0; p < 4 && f->data[p]; p++) {
        int w = av_image_get_linesize(f->format, f->width, p);
        int rows = (p == 1 || p == 2) ? AV_CEIL_RSHIFT(f->height, d->log2_chroma_h) : f->height;
        if (w <= 0) continue;
        for (int y = 0; y < rows; y++) {
            const uint8_t *row = f->data[p] + (ptrdiff_t)y * f->linesize[p];
            int x = 0;
            for (; x + 8 <= w; x += 8) {
                uint64_t v;
                memcpy(&v, row + x, 8);
                h = (h ^ v) * 0x100000001b3ULL;
            }
            h = reel__fnv1a(h, row + x, (size_t)(w - x));
        }
    }
    return h ? h : 1;
}

/* Decodes keyframe packet `pkt` alone on a single-threaded codec. Returns 1
 * if it comes out without errors, 0 if not; 1 too if no probe codec can be
 * had (decoding then goes on as without the check). *hash: the picture's. */
int reel__key_decodes_alone(reel_decoder *dec, const AVPacket *pkt, uint64_t *hash)
{
    int opening;
    if (!dec->probe && reel__codec_context(dec, 1, (void *)&dec->probe_log_errors, &dec->probe, &opening) < 0) return 1;
    const int64_t logged = atomic_load(&dec->probe_log_errors);
    AVCodecContext *c = dec->probe;
    int clean = 1, got = 0;
    if (avcodec_send_packet(c, pkt) < 0) clean = 0;
    avcodec_send_packet(c, NULL); /* drain: the keyframe comes out even behind a reorder delay */
    for (;;) {
        int e = avcodec_receive_frame(c, dec->frame);
        if (e == AVERROR_EOF || e == AVERROR(EAGAIN)) break;
        if (e < 0) {
            clean = 0;
            break;
        }
        if (reel__frame_is_corrupt(dec->frame)) clean = 0;
        if (!got && hash) *hash = reel__picture_hash(dec->frame);
        got++;
        av_frame_unref(dec->frame);
    }
    avcodec_flush_buffers(c);
    /* damage FFmpeg only logged counts too (log.c) */
    if (atomic_load(&dec->probe_log_errors) != logged) clean = 0;
    return clean && got > 0;
}
