/* test_convert_depth.c: gray and uint16 output (issue 29 point 4) against
 * the ffmpeg CLI, code for code: a 12-bit gray HEVC (x265 lossless, as
 * LeRobot stores depth) and a 16-bit gray FFV1 give their codes; 10- and
 * 12-bit YUV give ffmpeg's rgb48le; 8-bit video gives ffmpeg's gray; float
 * dtypes are the codes over the largest code; sizes and bad colors. */
#define _GNU_SOURCE /* popen, pclose */
#include "harness.h"
#include "testgen.h"

#include <math.h>

#include "convert/convert_internal.h"

/* A video made by the ffmpeg CLI from lavfi's testsrc2 (made once per
 * name): `fmt` its pixel format, `codec` the encoder and its options. */
static const char *cli_video(const char *name, const char *fmt, const char *codec)
{
    static char paths[8][1200];
    static const char *names[8];
    for (int i = 0; i < 8; i++)
        if (names[i] && !strcmp(names[i], name)) return paths[i];
    if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg CLI to make the deep videos with");
    int k = 0;
    while (names[k]) k++;
    CHECK(k < 8);
    tg_path(paths[k], sizeof paths[k], name);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -hide_banner -v error -y -f lavfi -i testsrc2=s=96x64:r=10:d=0.5,format=%s -c:v %s "
             "-pix_fmt %s ",
             fmt, codec, fmt);
    tg_shell_append_quoted(cmd, sizeof cmd, paths[k]);
    int st = tg_system(cmd);
    if (st != 0) {
        char why[512];
        snprintf(why, sizeof why, "this ffmpeg cannot encode %s with %s", fmt, codec);
        harness_skip(why);
    }
    names[k] = name;
    return paths[k];
}

/* Frame 0 through the ffmpeg CLI (-vf `filters` if not NULL) as raw `pix`,
 * exactly `want` bytes. */
static uint8_t *ffmpeg_raw(const char *path, const char *filters, const char *pix, size_t want)
{
    char cmd[4096] = "ffmpeg -nostdin -hide_banner -v error -threads 1 -i ";
    tg_shell_append_quoted(cmd, sizeof cmd, path);
    size_t n = strlen(cmd);
    if (filters) n += (size_t)snprintf(cmd + n, sizeof cmd - n, " -vf '%s'", filters);
    snprintf(cmd + n, sizeof cmd - n, " -frames:v 1 -pix_fmt %s -f rawvideo -", pix);
    uint8_t *buf = malloc(want + 1);
    CHECK(buf != NULL);
    FILE *f = popen(cmd, "r");
    CHECK_MSG(f != NULL, "popen failed: %s", cmd);
    size_t total = 0;
    for (;;) {
        size_t got = fread(buf + (total < want ? total : want), 1, total < want ? want - total : 1, f);
        if (!got) break;
        total += got;
    }
    int st = pclose(f);
    CHECK_MSG(st == 0 && total == want, "ffmpeg gave %zu bytes (want %zu), status %d: %s", total, want, st, cmd);
    return buf;
}

/* Frame 0 of `path` under t; *bytes its size. */
static uint8_t *reel_frame0(const char *path, const reel_transform *t, size_t *bytes)
{
    static const int64_t idx[1] = { 0 };
    reel_decoder *dec = tg_open(path, NULL);
    *bytes = tg_frame_bytes(dec, t, NULL, NULL);
    uint8_t *got = tg_get(dec, idx, 1, t, NULL);
    reel_decoder_close(&dec);
    return got;
}

static void transform(reel_transform *t, reel_color color, reel_dtype dtype, int w, int h)
{
    reel_transform_default_settings(t);
    t->pixels.color = color;
    t->pixels.dtype = dtype;
    t->width = w;
    t->height = h;
}

static void check_equal(const uint8_t *got, const uint8_t *want, size_t n, const char *what)
{
    size_t bad = 0, first = n;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i] && !bad++) first = i;
    CHECK_MSG(bad == 0, "%s: %zu of %zu bytes differ from the ffmpeg CLI's, the first at byte %zu", what, bad, n,
              first);
}

static const char *gray12(void)
{
    return cli_video("gray12_x265.mp4", "gray12le", "libx265 -x265-params lossless=1:log-level=error");
}

TEST(gray12_uint16_is_the_source_codes_as_ffmpeg_gray12le)
{
    reel_transform t;
    transform(&t, REEL_COLOR_GRAY, REEL_DTYPE_UINT16, 0, 0);
    size_t n;
    uint8_t *got = reel_frame0(gray12(), &t, &n);
    CHECK_EQ_INT(n, 96 * 64 * 2);
    uint8_t *want = ffmpeg_raw(gray12(), NULL, "gray12le", n);
    check_equal(got, want, n, "gray12 -> uint16");
    uint16_t top = 0;
    for (size_t i = 0; i < n / 2; i++) {
        uint16_t v;
        memcpy(&v, got + 2 * i, 2);
        if (v > top) top = v;
    }
    CHECK_MSG(top > 255 && top <= 4095, "12-bit codes, the largest %u", top);
    /* float32: the codes over 4095; float16: the same, rounded to half */
    reel_transform tf;
    transform(&tf, REEL_COLOR_GRAY, REEL_DTYPE_FLOAT32, 0, 0);
    size_t nf;
    float *f = (float *)reel_frame0(gray12(), &tf, &nf);
    CHECK_EQ_INT(nf, 96 * 64 * 4);
    transform(&tf, REEL_COLOR_GRAY, REEL_DTYPE_FLOAT16, 0, 0);
    uint16_t *h = (uint16_t *)reel_frame0(gray12(), &tf, &nf);
    for (size_t i = 0; i < n / 2; i++) {
        uint16_t v;
        memcpy(&v, want + 2 * i, 2);
        CHECK_MSG(f[i] == (float)v / 4095.0f, "float32 %zu: %.9g, not %u / 4095", i, f[i], v);
        CHECK_MSG(h[i] == reel__f32_to_f16((float)v / 4095.0f), "float16 %zu", i);
    }
    free(got);
    free(want);
    free(f);
    free(h);
}

TEST(gray12_resized_keeps_its_range_and_uint8_is_ffmpeg_gray)
{
    /* resized in 12 bits without a range change: the CLI with its range kept */
    for (int path = 0; path < 2; path++) {
        reel_transform t;
        transform(&t, REEL_COLOR_GRAY, REEL_DTYPE_UINT16, 40, 30);
        t.pixels.convert_path = path ? REEL_CONVERT_PATH_AFTER_RGB : REEL_CONVERT_PATH_FUSED;
        size_t n;
        uint8_t *got = reel_frame0(gray12(), &t, &n);
        uint8_t *want = ffmpeg_raw(gray12(), "scale=40:30:flags=bilinear:in_range=tv:out_range=tv", "gray12le", n);
        check_equal(got, want, n, path ? "gray12 resized after a full-size picture" : "gray12 resized, fused");
        free(got);
        free(want);
    }
    reel_transform t;
    transform(&t, REEL_COLOR_GRAY, REEL_DTYPE_UINT8, 0, 0);
    size_t n;
    uint8_t *got = reel_frame0(gray12(), &t, &n);
    CHECK_EQ_INT(n, 96 * 64);
    uint8_t *want = ffmpeg_raw(gray12(), NULL, "gray", n);
    check_equal(got, want, n, "gray12 -> gray (uint8)");
    free(got);
    free(want);
}

TEST(gray16_ffv1_gives_its_codes)
{
    const char *v = cli_video("gray16_ffv1.mkv", "gray16le", "ffv1");
    reel_transform t;
    transform(&t, REEL_COLOR_GRAY, REEL_DTYPE_UINT16, 0, 0);
    size_t n;
    uint8_t *got = reel_frame0(v, &t, &n);
    uint8_t *want = ffmpeg_raw(v, NULL, "gray16le", n);
    check_equal(got, want, n, "gray16 -> uint16");
    free(want);
    transform(&t, REEL_COLOR_GRAY, REEL_DTYPE_FLOAT32, 0, 0);
    size_t nf;
    float *f = (float *)reel_frame0(v, &t, &nf);
    for (size_t i = 0; i < n / 2; i++) {
        uint16_t c;
        memcpy(&c, got + 2 * i, 2);
        CHECK_MSG(f[i] == (float)c / 65535.0f, "float32 %zu: %.9g, not %u / 65535", i, f[i], c);
    }
    free(got);
    free(f);
}

/* 10- and 12-bit 4:2:0: RGB as ffmpeg's rgb48le, whole and resized (fused:
 * one scale; after RGB: rgb48le first), and gray as gray10le/gray12le. */
TEST(deep_yuv_uint16_is_ffmpeg_rgb48le)
{
    static const struct {
        const char *name, *fmt, *gray;
    } cases[] = {
        { "yuv10_x265.mp4", "yuv420p10le", "gray10le" },
        { "yuv12_x265.mp4", "yuv420p12le", "gray12le" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *v = cli_video(cases[k].name, cases[k].fmt, "libx265 -x265-params log-level=error");
        static const char *const vf[3] = { NULL, "scale=40:30:flags=bilinear",
                                           "format=rgb48le,scale=40:30:flags=area" };
        for (int m = 0; m < 3; m++) {
            reel_transform t;
            transform(&t, REEL_COLOR_RGB, REEL_DTYPE_UINT16, m ? 40 : 0, m ? 30 : 0);
            t.layout = REEL_LAYOUT_HWC;
            if (m == 2) {
                t.pixels.convert_path = REEL_CONVERT_PATH_AFTER_RGB;
                t.pixels.filter = REEL_FILTER_AREA;
            }
            size_t n;
            uint8_t *got = reel_frame0(v, &t, &n);
            CHECK_EQ_INT(n, (size_t)(m ? 40 * 30 : 96 * 64) * 6);
            uint8_t *want = ffmpeg_raw(v, vf[m], "rgb48le", n);
            char what[128];
            snprintf(what, sizeof what, "%s -> rgb48 %s", cases[k].fmt, vf[m] ? vf[m] : "");
            check_equal(got, want, n, what);
            free(got);
            free(want);
        }
        reel_transform t;
        transform(&t, REEL_COLOR_GRAY, REEL_DTYPE_UINT16, 0, 0);
        size_t n;
        uint8_t *got = reel_frame0(v, &t, &n);
        uint8_t *want = ffmpeg_raw(v, NULL, cases[k].gray, n);
        check_equal(got, want, n, cases[k].gray);
        free(got);
        free(want);
    }
}

/* 8-bit video: gray is ffmpeg's -pix_fmt gray (whole, cropped and resized
 * in one pass), uint16 gray its 8-bit codes widened, uint16 RGB rgb48le. */
TEST(eight_bit_gray_is_ffmpeg_gray)
{
    const char *v = cli_video("yuv8_x264.mp4", "yuv420p", "libx264 -qp 0");
    reel_transform t;
    transform(&t, REEL_COLOR_GRAY, REEL_DTYPE_UINT8, 0, 0);
    size_t n;
    uint8_t *got = reel_frame0(v, &t, &n);
    CHECK_EQ_INT(n, 96 * 64);
    uint8_t *want = ffmpeg_raw(v, NULL, "gray", n);
    check_equal(got, want, n, "yuv420p -> gray");
    transform(&t, REEL_COLOR_GRAY, REEL_DTYPE_UINT16, 0, 0);
    size_t n16;
    uint16_t *wide = (uint16_t *)reel_frame0(v, &t, &n16);
    for (size_t i = 0; i < n; i++) CHECK_MSG(wide[i] == want[i], "uint16 gray %zu: %u, not %u", i, wide[i], want[i]);
    free(got);
    free(want);
    free(wide);

    transform(&t, REEL_COLOR_GRAY, REEL_DTYPE_UINT8, 32, 24);
    t.crop_x = 10;
    t.crop_y = 6;
    t.crop_w = 64;
    t.crop_h = 48;
    got = reel_frame0(v, &t, &n);
    want = ffmpeg_raw(v, "crop=64:48:10:6:exact=1,scale=32:24:flags=bilinear", "gray", n);
    check_equal(got, want, n, "yuv420p cropped and resized -> gray");
    free(got);
    free(want);

    transform(&t, REEL_COLOR_RGB, REEL_DTYPE_UINT16, 0, 0);
    t.layout = REEL_LAYOUT_HWC;
    got = reel_frame0(v, &t, &n);
    want = ffmpeg_raw(v, NULL, "rgb48le", n);
    check_equal(got, want, n, "yuv420p -> rgb48");
    free(got);
    free(want);
}

/* Flip mirrors the codes; both layouts write the same bytes. */
TEST(gray_flip_and_strides)
{
    reel_transform t;
    transform(&t, REEL_COLOR_GRAY, REEL_DTYPE_UINT16, 0, 0);
    size_t n;
    uint16_t *plain = (uint16_t *)reel_frame0(gray12(), &t, &n);
    t.flip_horizontal = 1;
    uint16_t *flip = (uint16_t *)reel_frame0(gray12(), &t, &n);
    for (int y = 0; y < 64; y++)
        for (int x = 0; x < 96; x++) CHECK(flip[y * 96 + x] == plain[y * 96 + 95 - x]);
    /* one channel: HWC and CHW are the same bytes */
    t.flip_horizontal = 0;
    t.layout = REEL_LAYOUT_HWC;
    uint16_t *hwc = (uint16_t *)reel_frame0(gray12(), &t, &n);
    CHECK(!memcmp(hwc, plain, n));
    free(plain);
    free(flip);
    free(hwc);
}

TEST(sizes_and_bad_colors)
{
    reel_transform t;
    transform(&t, REEL_COLOR_GRAY, REEL_DTYPE_UINT16, 0, 0);
    int w, h;
    size_t bytes;
    reel_error err;
    CHECK_OK(reel_transform_get_output_size(&t, 96, 64, &w, &h, &bytes, &err));
    CHECK_EQ_INT(bytes, 96 * 64 * 2);
    t.pixels.color = REEL_COLOR_RGB;
    CHECK_OK(reel_transform_get_output_size(&t, 96, 64, &w, &h, &bytes, &err));
    CHECK_EQ_INT(bytes, 96 * 64 * 6);
    t.pixels.color = (reel_color)7;
    CHECK_STATUS(reel_transform_get_output_size(&t, 96, 64, &w, &h, &bytes, &err), REEL_E_INVALID_ARG);
    CHECK(tg_contains(err.message, "color 7"));
    reel_pixel_settings p;
    reel_pixel_default_settings(&p);
    CHECK_EQ_INT(p.color, REEL_COLOR_RGB);
    CHECK_EQ_INT(reel__dtype_size(REEL_DTYPE_UINT16), 2);
    CHECK_EQ_INT(reel__color_channels(REEL_COLOR_GRAY), 1);
}
