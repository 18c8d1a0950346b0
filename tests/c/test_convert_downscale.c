/* test_convert_downscale.c: large downscales (issue 25): 1080p and 4K 4:2:0
 * frames down to 28x28 and past swscale's cascade bound, every filter, fused
 * and after-RGB, equal to the ffmpeg CLI's pixels. The after-RGB path once
 * fed such a resize in slices, which swscale's cascaded context cannot take
 * (a SIGSEGV; convert.c, banded_scale_ok). */
#define _GNU_SOURCE /* popen, pclose */
#include "harness.h"
#include "testgen.h"

static const char *ff_flags(int filter)
{
    switch (filter) {
    case REEL_FILTER_BILINEAR: return "bilinear";
    case REEL_FILTER_AREA: return "area";
    case REEL_FILTER_BICUBIC: return "bicubic";
    case REEL_FILTER_NEAREST: return "neighbor";
    }
    return "?";
}

/* A 1-frame h264 4:2:0 video of w x h in the test's directory (made once). */
static const char *video(int w, int h)
{
    static char paths[2][1200];
    char *p = paths[w > 1920];
    if (p[0]) return p;
    char name[64];
    snprintf(name, sizeof name, "src_%dx%d.mp4", w, h);
    tg_path(p, sizeof paths[0], name);
    reel_synth_params sp;
    tg_params(&sp, p, "h264", w, h, 1, 1, 0);
    tg_synth(&sp);
    return p;
}

/* The frame through the ffmpeg CLI's -vf `filters`, as rgb24 of w x h. */
static uint8_t *ffmpeg_rgb(const char *path, const char *filters, int w, int h)
{
    char cmd[4096] = "ffmpeg -nostdin -hide_banner -v error -threads 2 -i ";
    tg_shell_append_quoted(cmd, sizeof cmd, path);
    size_t n = strlen(cmd);
    snprintf(cmd + n, sizeof cmd - n, " -vf '%s' -frames:v 1 -pix_fmt rgb24 -f rawvideo -", filters);
    size_t want = (size_t)w * h * 3, total = 0;
    uint8_t *buf = malloc(want);
    CHECK(buf != NULL);
    FILE *f = popen(cmd, "r");
    CHECK_MSG(f != NULL, "popen failed: %s", cmd);
    uint8_t sink[4096];
    for (;;) {
        size_t got = total < want ? fread(buf + total, 1, want - total, f) : fread(sink, 1, sizeof sink, f);
        if (!got) break;
        total += got;
    }
    int st = pclose(f);
    CHECK_MSG(st == 0 && total == want, "ffmpeg gave %zu bytes (want %zu), status %d: %s", total, want, st, cmd);
    return buf;
}

typedef struct size_case {
    int src_w, src_h, ow, oh;
} size_case;

/* reel's frame under every filter in both resize modes, each against
 * the ffmpeg CLI (fused: one scale from YUV; after RGB: format=rgb24, then
 * the scale). All of reel's frames are decoded first, so that on a machine
 * without the CLI the no-crash half still runs. */
static void check_sizes(const size_case *cases, size_t ncases)
{
    enum { NF = REEL_FILTER_NEAREST - REEL_FILTER_BILINEAR + 1, NM = 2, NMAX = 8 };
    static const int64_t idx[1] = { 0 };
    uint8_t *got[NMAX][NM][NF];
    CHECK(ncases <= NMAX);
    for (size_t k = 0; k < ncases; k++) {
        const size_case *c = &cases[k];
        reel_decoder *dec = tg_open(video(c->src_w, c->src_h), NULL);
        for (int m = 0; m < NM; m++)
            for (int fi = 0; fi < NF; fi++) {
                reel_transform t;
                reel_transform_default_settings(&t);
                t.width = c->ow;
                t.height = c->oh;
                t.pixels.filter = REEL_FILTER_BILINEAR + fi;
                t.pixels.convert_path = m ? REEL_CONVERT_PATH_AFTER_RGB : REEL_CONVERT_PATH_FUSED;
                int w = 0, h = 0;
                tg_frame_bytes(dec, &t, &w, &h);
                CHECK(w == c->ow && h == c->oh);
                got[k][m][fi] = tg_get(dec, idx, 1, &t, NULL);
            }
        reel_decoder_close(&dec);
    }
    if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg CLI to compare with");
    char bad[2048] = "";
    int nbad = 0;
    for (size_t k = 0; k < ncases; k++) {
        const size_case *c = &cases[k];
        size_t fb = (size_t)c->ow * c->oh * 3;
        for (int m = 0; m < NM; m++)
            for (int fi = 0; fi < NF; fi++) {
                char vf[160];
                snprintf(vf, sizeof vf, "%sscale=%d:%d:flags=%s", m ? "format=rgb24," : "", c->ow, c->oh,
                         ff_flags(REEL_FILTER_BILINEAR + fi));
                uint8_t *want = ffmpeg_rgb(video(c->src_w, c->src_h), vf, c->ow, c->oh);
                if (memcmp(got[k][m][fi], want, fb)) {
                    size_t n = strlen(bad);
                    snprintf(bad + n, sizeof bad - n, "\n  %dx%d -> %dx%d %s [-vf %s]", c->src_w, c->src_h, c->ow,
                             c->oh, m ? "after_rgb" : "fused", vf);
                    nbad++;
                }
                free(want);
                free(got[k][m][fi]);
            }
    }
    CHECK_MSG(nbad == 0, "%d conversions differ from the ffmpeg CLI's pixels:%s", nbad, bad);
}

/* 1080p: 28x28 is 68.6x across, past bicubic's cascade (64x): before the
 * fix, after-RGB bicubic crashed. 14x14 (137x) passes bilinear's (126.6x)
 * too; 32x32 (60x) is the largest bicubic ratio still converted in bands. */
TEST(hd_to_28x28_every_filter_matches_ffmpeg)
{
    static const size_case cases[] = {
        { 1920, 1080, 28, 28 },
        { 1920, 1080, 14, 14 },
        { 1920, 1080, 32, 32 },
    };
    check_sizes(cases, sizeof cases / sizeof cases[0]);
}

/* 4K: 28x28 is 137x across (bilinear and bicubic cascade); 15x8 is 256x
 * across and 270x down, past area's cascade (252x) too. */
TEST(uhd_to_28x28_every_filter_matches_ffmpeg)
{
    static const size_case cases[] = {
        { 3840, 2160, 28, 28 },
        { 3840, 2160, 15, 8 },
    };
    check_sizes(cases, sizeof cases / sizeof cases[0]);
}
