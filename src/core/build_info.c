/* build_info.c: what this copy of reel was built with and runs against
 * (reel_build_info): FFmpeg's version, configure line and licence, and the
 * versions of libjpeg-turbo, zstd and libcurl with its TLS library. */
#include <stdio.h>

#include <curl/curl.h>
#include <jpeglib.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
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
