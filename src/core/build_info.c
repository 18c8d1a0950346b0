/* build_info.c: what this copy of reel was built with and runs against
 * (reel_build_info): FFmpeg's version, configure line, licence, swresample,
 * audio decoders and hardware decoding, the CUDA kernel images libreel
 * carries, and the versions of libjpeg-turbo, zstd and libcurl with its TLS
 * library. */
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>
#include <jpeglib.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/hwcontext.h>
#include <libswresample/swresample.h>
#include <zstd.h>

#include "core/json.h"
#include "reel/common.h"

static void member(reel_buf *b, const char *key, const char *value, int last)
{
    reel__buf_json_string(b, key);
    reel__buf_puts(b, ": ");
    reel__buf_json_string(b, value);
    reel__buf_puts(b, last ? "" : ", ");
}

static void key(reel_buf *b, const char *name)
{
    reel__buf_json_string(b, name);
    reel__buf_puts(b, ": ");
}

/* The audio codecs reel's audio path (reel/audio.h) decodes, by FFmpeg's
 * codec name, each with the loaded libavcodec's decoder for it or null. */
static void audio_decoders(reel_buf *b)
{
    static const enum AVCodecID ids[] = {
        AV_CODEC_ID_AAC,       AV_CODEC_ID_MP3,       AV_CODEC_ID_OPUS,      AV_CODEC_ID_VORBIS,
        AV_CODEC_ID_FLAC,      AV_CODEC_ID_PCM_S16LE, AV_CODEC_ID_PCM_S16BE, AV_CODEC_ID_PCM_S24LE,
        AV_CODEC_ID_PCM_S32LE, AV_CODEC_ID_PCM_F32LE, AV_CODEC_ID_PCM_U8,
    };
    key(b, "audio_decoders");
    reel__buf_puts(b, "{");
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        const AVCodec *c = avcodec_find_decoder(ids[i]);
        key(b, avcodec_get_name(ids[i]));
        if (c)
            reel__buf_json_string(b, c->name);
        else
            reel__buf_puts(b, "null");
        reel__buf_puts(b, i + 1 < sizeof ids / sizeof ids[0] ? ", " : "");
    }
    reel__buf_puts(b, "}, ");
}

/* Hardware decoding in the loaded libavutil/libavcodec: "hwdevice_types"
 * (av_hwdevice_iterate_types: "cuda", "vaapi", ...) and "hwaccels": for each
 * device type, the decoders with a hardware configuration for it (CUDA's are
 * FFmpeg's nvdec hwaccels), e.g. {"cuda": ["av1", "h264", ...]}. */
static void hardware(reel_buf *b)
{
    key(b, "hwdevice_types");
    reel__buf_puts(b, "[");
    enum AVHWDeviceType t = AV_HWDEVICE_TYPE_NONE;
    const char *sep = "";
    while ((t = av_hwdevice_iterate_types(t)) != AV_HWDEVICE_TYPE_NONE) {
        reel__buf_puts(b, sep);
        reel__buf_json_string(b, av_hwdevice_get_type_name(t));
        sep = ", ";
    }
    reel__buf_puts(b, "], ");
    key(b, "hwaccels");
    reel__buf_puts(b, "{");
    const char *tsep = "";
    t = AV_HWDEVICE_TYPE_NONE;
    while ((t = av_hwdevice_iterate_types(t)) != AV_HWDEVICE_TYPE_NONE) {
        reel__buf_puts(b, tsep);
        key(b, av_hwdevice_get_type_name(t));
        reel__buf_puts(b, "[");
        sep = "";
        void *it = NULL;
        const AVCodec *c;
        while ((c = av_codec_iterate(&it))) {
            if (!av_codec_is_decoder(c)) continue;
            const AVCodecHWConfig *h;
            for (int i = 0; (h = avcodec_get_hw_config(c, i)); i++) {
                if (h->device_type != t || !(h->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX)) continue;
                reel__buf_puts(b, sep);
                reel__buf_json_string(b, c->name);
                sep = ", ";
                break;
            }
        }
        reel__buf_puts(b, "]");
        tsep = ", ";
    }
    reel__buf_puts(b, "}, ");
}

/* "cuda_kernels": the kernel images embedded under REEL_CUDA=ON, by name
 * (CMake's REEL_CUDA_IMAGES, e.g. ["sm_80", "sm_90", "compute_90"]); [] in a
 * build without them (the default: no CUDA compiler needed). */
static void cuda_kernels(reel_buf *b)
{
#ifdef REEL_CUDA_KERNEL_IMAGES
    const char *s = REEL_CUDA_KERNEL_IMAGES;
#else
    const char *s = "";
#endif
    key(b, "cuda_kernels");
    reel__buf_puts(b, "[");
    while (*s) {
        char name[32];
        size_t n = strcspn(s, ",");
        snprintf(name, sizeof name, "%.*s", (int)n, s);
        reel__buf_json_string(b, name);
        s += n;
        if (*s) s++;
        reel__buf_puts(b, *s ? ", " : "");
    }
    reel__buf_puts(b, "], ");
}

char *reel_build_info(void)
{
    const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
    reel_buf b;
    reel__buf_init(&b);
    reel__buf_puts(&b, "{");
    member(&b, "reel", reel_version(), 0);
    member(&b, "ffmpeg", av_version_info(), 0);
    member(&b, "ffmpeg_libraries", reel_ffmpeg_versions(), 0);
    member(&b, "ffmpeg_configuration", avcodec_configuration(), 0);
    member(&b, "ffmpeg_license", avcodec_license(), 0);
    char swr[32];
    unsigned v = swresample_version();
    snprintf(swr, sizeof swr, "%u.%u.%u", v >> 16, (v >> 8) & 255, v & 255);
    member(&b, "libswresample", swr, 0);
    audio_decoders(&b);
    hardware(&b);
    cuda_kernels(&b);
#ifdef LIBJPEG_TURBO_VERSION
#define REEL_JT_STR2(x) #x
#define REEL_JT_STR(x)  REEL_JT_STR2(x)
    member(&b, "libjpeg_turbo", REEL_JT_STR(LIBJPEG_TURBO_VERSION), 0); /* headers' version: the library has no call */
#endif
    member(&b, "zstd", ZSTD_versionString(), 0);
    member(&b, "libcurl", cv && cv->version ? cv->version : "", 0);
    member(&b, "tls", cv && cv->ssl_version ? cv->ssl_version : "", 1);
    reel__buf_puts(&b, "}");
    if (b.oom) {
        reel__buf_free(&b);
        return NULL;
    }
    return reel__buf_take(&b);
}
