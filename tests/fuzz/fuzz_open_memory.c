/* fuzz_open_memory.c: libFuzzer target: a video from memory, its metadata
 * and frame table, then the first, middle and last frames with a small
 * resize. Any crash, hang, leak or UB (ASan/UBSan) is a finding. */
#include <stdint.h>
#include <stdlib.h>

#include "reel/reel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        reel_set_ffmpeg_log_level(0);
        quiet = 1;
    }
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.threads = 1;
    s.corrupt_policy = REEL_CORRUPT_SKIP;
    reel_decoder *dec = NULL;
    reel_error err;
    if (reel_decoder_open_memory(&dec, data, size, "fuzz", &s, &err) != REEL_OK) return 0;
    const reel_video_info *in = reel_decoder_get_info(dec);
    int64_t n = 0;
    const reel_frame_entry *tab = reel_decoder_get_frame_table(dec, &n);
    volatile int64_t sink = 0;
    for (int64_t i = 0; i < n; i++) sink += tab[i].pts + tab[i].duration;
    (void)sink;
    if (in->num_frames > 0 && in->num_frames < 100000) {
        int64_t idx[3] = { 0, in->num_frames / 2, in->num_frames - 1 };
        reel_transform t;
        reel_transform_default_settings(&t);
        t.pixels.apply_rotation = 0;
        t.width = 16;
        t.height = 16;
        uint8_t out[3 * 16 * 16 * 3];
        reel_decoder_get_frames(dec, idx, 3, &t, out, sizeof out, NULL, &err);
    }
    reel_decoder_close(&dec);
    return 0;
}
