/* error.c: status strings, error records, version strings, and the small
 * process-wide facts (core count) that every module needs. */
#include "core/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libswscale/swscale.h>

const char *reel_strerror(int status)
{
    switch (status) {
    case REEL_OK: return "success";
    case REEL_E_INVALID_ARG: return "invalid argument";
    case REEL_E_NOT_FOUND: return "file not found";
    case REEL_E_IO: return "input/output error";
    case REEL_E_NOT_VIDEO: return "not a video file";
    case REEL_E_NO_VIDEO_STREAM: return "no video stream";
    case REEL_E_UNSUPPORTED_CODEC: return "unsupported codec";
    case REEL_E_CORRUPT: return "corrupt or truncated data";
    case REEL_E_OUT_OF_RANGE: return "index or timestamp out of range";
    case REEL_E_NOMEM: return "out of memory";
    case REEL_E_INDEX_STALE: return "stale or invalid index file";
    case REEL_E_BUFFER_TOO_SMALL: return "output buffer too small";
    case REEL_E_TIMEOUT: return "time limit exceeded";
    case REEL_E_CANCELLED: return "cancelled";
    case REEL_E_EMPTY: return "empty dataset";
    case REEL_E_INTERNAL: return "internal error";
    case REEL_E_AGAIN: return "not ready yet, try again";
    case REEL_E_PERMISSION: return "permission denied";
    case REEL_E_NO_DATA: return "no sample could be loaded";
    case REEL_E_NO_AUDIO_STREAM: return "no audio stream";
    case REEL_E_FRAME_TIMESTAMP: return "no frame within the timestamp tolerance";
    case REEL_E_CUDA: return "CUDA unavailable or failed";
    default: return "unknown error";
    }
}

void reel_error_clear(reel_error *err)
{
    if (!err) return;
    err->status = REEL_OK;
    err->message[0] = '\0';
}

int reel__error_set(reel_error *err, int status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

int reel__status_from_av(int averr)
{
    switch (averr) {
    case AVERROR(ENOENT): return REEL_E_NOT_FOUND;
    case AVERROR(ENOMEM): return REEL_E_NOMEM;
    case AVERROR(EACCES):
    case AVERROR(EIO):
    case AVERROR(EISDIR): return REEL_E_IO;
    case AVERROR_INVALIDDATA: return REEL_E_CORRUPT;
    case AVERROR_EOF: return REEL_E_CORRUPT;
    case AVERROR_DECODER_NOT_FOUND: return REEL_E_UNSUPPORTED_CODEC;
    case AVERROR_PATCHWELCOME: return REEL_E_UNSUPPORTED_CODEC;
    case AVERROR_STREAM_NOT_FOUND: return REEL_E_NO_VIDEO_STREAM;
    case AVERROR(EINVAL): return REEL_E_INVALID_ARG;
    case AVERROR_EXIT: return REEL_E_CANCELLED; /* the interrupt callback */
    default: return averr < 0 ? REEL_E_IO : REEL_OK;
    }
}

const char *reel__av_err(int averr, char *buf, size_t size)
{
    if (av_strerror(averr, buf, size) < 0) snprintf(buf, size, "error %d", averr);
    return buf;
}

int reel__cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)n;
}

unsigned reel_version_api(void)
{
    return REEL_API_VERSION;
}

const char *reel_version(void)
{
#define REEL_STR2(x) #x
#define REEL_STR(x)  REEL_STR2(x)
    return REEL_STR(REEL_VERSION_MAJOR) "." REEL_STR(REEL_VERSION_MINOR) "." REEL_STR(REEL_VERSION_PATCH);
}

const char *reel_ffmpeg_versions(void)
{
    /* Built once from constants only: the runtime versions are immutable, so
     * a function-local static written on first use would be a data race.
     * Compose from the linked libraries' version numbers on each call into
     * a thread-local buffer instead. */
    static _Thread_local char buf[160];
    unsigned f = avformat_version(), c = avcodec_version(), u = avutil_version(), s = swscale_version();
    snprintf(buf, sizeof buf, "libavformat %u.%u.%u, libavcodec %u.%u.%u, libavutil %u.%u.%u, libswscale %u.%u.%u",
             f >> 16, (f >> 8) & 255, f & 255, c >> 16, (c >> 8) & 255, c & 255, u >> 16, (u >> 8) & 255, u & 255,
             s >> 16, (s >> 8) & 255, s & 255);
    return buf;
}

void reel_set_ffmpeg_log_level(int level)
{
    static const int map[] = { AV_LOG_QUIET, AV_LOG_ERROR, AV_LOG_WARNING, AV_LOG_INFO };
    if (level < 0) level = 0;
    if (level > 3) level = 3;
    av_log_set_level(map[level]);
}

void reel_free(void *ptr)
{
    free(ptr);
}
