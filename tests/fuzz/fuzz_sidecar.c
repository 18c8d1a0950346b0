/* fuzz_sidecar.c: libFuzzer target: the sidecar index reader. The input is
 * the bytes of VIDEO.reelidx next to a valid generated video (made once at
 * start-up); opening with REEL_INDEX_READ parses them. A bad sidecar must
 * be stale (the table rebuilt), never trusted wrongly or crash. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reel/reel.h"
#include "synth/synth.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_video[256], g_side[300];
static int64_t g_frames;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    reel_set_ffmpeg_log_level(0);
    const char *dir = getenv("REEL_FUZZ_VIDEO");
    if (dir && *dir) {
        snprintf(g_video, sizeof g_video, "%s", dir);
    } else {
        snprintf(g_video, sizeof g_video, "/tmp/reel-fuzz-sidecar-%d.mp4", (int)getpid());
        reel_synth_params p;
        reel_synth_default_params(&p);
        p.path = g_video;
        p.width = 64;
        p.height = 48;
        p.num_frames = 24;
        p.gop = 8;
        if (reel_synth_write(&p, NULL) != REEL_OK) abort();
    }
    snprintf(g_side, sizeof g_side, "%s.fuzz.reelidx", g_video);
    reel_decoder *dec = NULL;
    if (reel_decoder_open(&dec, g_video, NULL, NULL) != REEL_OK) abort();
    g_frames = reel_decoder_get_info(dec)->num_frames;
    reel_decoder_close(&dec);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(g_side, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.threads = 1;
    s.index_mode = REEL_INDEX_READ;
    s.index_path = g_side;
    reel_decoder *dec = NULL;
    reel_error err;
    if (reel_decoder_open(&dec, g_video, &s, &err) != REEL_OK) abort(); /* the video itself is fine */
    if (reel_decoder_get_info(dec)->num_frames != g_frames) abort();    /* a sidecar never changes the count */
    int64_t idx = g_frames - 1;
    uint8_t out[64 * 48 * 3];
    if (reel_decoder_get_frames(dec, &idx, 1, NULL, out, sizeof out, NULL, &err) != REEL_OK) abort();
    reel_decoder_close(&dec);
    return 0;
}
