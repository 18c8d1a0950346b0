/* audio_source.c: the audio object's bytes: src/io (a file or an http(s)/s3
 * object, read by byte ranges) under an AVIOContext, and the container
 * opened over it, first at reel_audio_open and again for a decode from a0. */
#include <libavutil/mem.h>

#include "audio/audio_internal.h"
#include "io/io_front.h"

static int io_read(void *opaque, uint8_t *buf, int size)
{
    reel_audio *a = opaque;
    size_t got = 0;
    if (reel__io_read_at(a->io, a->io_pos, buf, (size_t)size, &got, &a->io_err) != REEL_OK) return AVERROR(EIO);
    a->io_pos += (int64_t)got;
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
    return avformat_open_input(&a->fmt, a->name, NULL, NULL); /* frees fmt on failure */
}

/* Back to the stream's first packet: the container opened afresh. A seek
 * to the start is not the same for every demuxer (mp4's seek to time 0
 * lands after AAC's priming packet, which the decode needs), and the CLI
 * that the samples are held to reads from the first byte. */
int reel__audio_reopen(reel_audio *a, reel_error *err)
{
    avformat_close_input(&a->fmt);
    reel_error_clear(&a->io_err);
    int r = reel__audio_open_container(a);
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
