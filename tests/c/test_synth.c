/* test_synth.c: the test-video generator: the index pattern (round trip, blank,
 * noisy and damaged images), timing, errors, and real videos per codec and
 * container decoded by the ffmpeg CLI at full size and at a third of it. */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"
#include "synth/synth.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---------------------------------------------------------------- helpers */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void quiet(void)
{
    reel_set_ffmpeg_log_level(0);
    setenv("SVT_LOG", "1", 0); /* SVT-AV1 logs on its own otherwise */
}

static const char *tmp_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", harness_tmpdir(), name);
    return buf;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* path in single quotes for the shell. */
static void shell_quote(char *out, size_t size, const char *path)
{
    size_t o = 0;
    if (size < 3) {
        if (size) out[0] = '\0';
        return;
    }
    out[o++] = '\'';
    for (const char *p = path; *p && o + 5 < size; p++) {
        if (*p == '\'') {
            memcpy(out + o, "'\\''", 4);
            o += 4;
        } else {
            out[o++] = *p;
        }
    }
    out[o++] = '\'';
    out[o] = '\0';
}

static void params(reel_synth_params *p, const char *path, const char *codec, int w, int h, int n)
{
    reel_synth_default_params(p);
    p->path = path;
    p->codec = codec;
    p->width = w;
    p->height = h;
    p->num_frames = n;
    p->seed = 11;
}

/* Writes the video; skips when this FFmpeg build lacks the encoder. */
static void write_or_skip(const reel_synth_params *p)
{
    reel_error err;
    reel_error_clear(&err);
    int r = reel_synth_write(p, &err);
    if (r == REEL_E_UNSUPPORTED_CODEC) {
        char why[REEL_ERROR_MSG_SIZE + 32];
        snprintf(why, sizeof why, "cannot encode here: %s", err.message);
        harness_skip(why);
    }
    CHECK_MSG(r == REEL_OK, "reel_synth_write: %d %s", r, err.message);
    CHECK(file_exists(p->path));
}

/* Decodes `path` with the ffmpeg CLI to RGB24 (at out_w x out_h when given,
 * else w x h) and checks that frame i embeds index i and that there are n. */
static void check_decoded(const char *path, int w, int h, int64_t n, int out_w, int out_h)
{
    char q[4200], cmd[4600], vf[64] = "";
    int W = w, H = h;
    if (out_w > 0) {
        W = out_w;
        H = out_h;
        snprintf(vf, sizeof vf, "-vf scale=%d:%d ", W, H);
    }
    shell_quote(q, sizeof q, path);
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -v error -i %s -map 0:v:0 -vsync passthrough -enc_time_base:v -1 %s"
             "-f rawvideo -pix_fmt rgb24 -",
             q, vf);
    FILE *fp = popen(cmd, "r");
    CHECK_MSG(fp != NULL, "cannot run: %s", cmd);
    size_t fb = (size_t)W * (size_t)H * 3;
    uint8_t *buf = malloc(fb);
    CHECK(buf != NULL);
    int64_t i = 0, first_bad = -1, bad_read = 0, bad = 0;
    while (fread(buf, 1, fb, fp) == fb) {
        int64_t got = reel_synth_read_index(buf, W, H, (int64_t)W * 3);
        if (got != i) {
            if (first_bad < 0) {
                first_bad = i;
                bad_read = got;
            }
            bad++;
        }
        i++;
    }
    int st = pclose(fp);
    free(buf);
    CHECK_MSG(st == 0, "ffmpeg failed (status %d): %s", st, cmd);
    CHECK_MSG(bad == 0, "%s at %dx%d: %lld of %lld frames misread, first: frame %lld read as %lld", path, W, H,
              (long long)bad, (long long)i, (long long)first_bad, (long long)bad_read);
    CHECK_MSG(i == n, "%s at %dx%d: decoded %lld frames, wrote %lld", path, W, H, (long long)i, (long long)n);
}

/* Full size and a third of it (about 112x84 from 340x256). */
static void check_video(const reel_synth_params *p)
{
    check_decoded(p->path, p->width, p->height, p->num_frames, 0, 0);
    check_decoded(p->path, p->width, p->height, p->num_frames, p->width / 3, p->height / 3);
}

/* Runs ffprobe on the first video stream's frames (compact output); returns
 * the frame lines, one per frame in display order, as a malloc'd string. */
static char *probe_frames(const char *path, const char *entries)
{
    char q[4200], cmd[4600];
    shell_quote(q, sizeof q, path);
    snprintf(cmd, sizeof cmd, "ffprobe -v error -select_streams v:0 -show_entries frame=%s -of compact %s", entries, q);
    FILE *fp = popen(cmd, "r");
    CHECK(fp != NULL);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    CHECK(out != NULL);
    char line[1024];
    while (fgets(line, sizeof line, fp)) {
        if (strncmp(line, "frame|", 6) != 0) continue; /* side data lines */
        size_t l = strlen(line);
        if (len + l + 1 > cap) {
            cap *= 2;
            char *bigger = realloc(out, cap);
            CHECK(bigger != NULL);
            out = bigger;
        }
        memcpy(out + len, line, l);
        len += l;
    }
    out[len] = '\0';
    CHECK_MSG(pclose(fp) == 0, "ffprobe failed: %s", cmd);
    return out;
}

/* Keyframes exactly at 0, gop, 2*gop, ...; counts B-frames into *nb. */
static void check_gop(const char *path, int64_t n, int gop, int64_t *nb)
{
    char *s = probe_frames(path, "key_frame,pict_type");
    int64_t i = 0, b = 0;
    for (char *line = s; *line; i++) {
        char *end = strchr(line, '\n');
        if (end) *end = '\0';
        int key = strstr(line, "key_frame=1") != NULL;
        b += strstr(line, "pict_type=B") != NULL;
        CHECK_MSG(key == (i % gop == 0), "%s: frame %lld is %sa keyframe (gop %d)", path, (long long)i,
                  key ? "" : "not ", gop);
        line = end ? end + 1 : line + strlen(line);
    }
    free(s);
    CHECK_EQ_INT(i, n);
    if (nb) *nb = b;
}

/* Frame times from ffprobe against reel_synth_frame_time. */
static void check_times(const reel_synth_params *p, double tol)
{
    char *s = probe_frames(p->path, "pts_time");
    int64_t i = 0;
    for (char *line = s; *line; i++) {
        char *end = strchr(line, '\n');
        if (end) *end = '\0';
        const char *v = strstr(line, "pts_time=");
        CHECK_MSG(v != NULL, "no pts_time in '%s'", line);
        double t = atof(v + 9);
        double want = reel_synth_frame_time(p, i);
        CHECK_MSG(t - want <= tol && want - t <= tol, "%s: frame %lld at %.6f s, generated at %.6f s", p->path,
                  (long long)i, t, want);
        line = end ? end + 1 : line + strlen(line);
    }
    free(s);
    CHECK_EQ_INT(i, p->num_frames);
}

static char *probe_stream(const char *path, const char *entries)
{
    char q[4200], cmd[4600];
    shell_quote(q, sizeof q, path);
    snprintf(cmd, sizeof cmd, "ffprobe -v error -select_streams v:0 -show_entries stream=%s -of csv=p=0 %s", entries,
             q);
    FILE *fp = popen(cmd, "r");
    CHECK(fp != NULL);
    static char line[256];
    line[0] = '\0';
    if (!fgets(line, sizeof line, fp)) line[0] = '\0';
    pclose(fp);
    line[strcspn(line, "\r\n")] = '\0';
    return line;
}

static void need_ffmpeg(void)
{
    if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg/ffprobe CLI");
    quiet();
}

/* ---------------------------------------------------------------- the pattern */

TEST(synth_pattern_round_trip)
{
    static const int sizes[][2] = { { 320, 240 }, { 340, 256 }, { 112, 84 },    { 98, 66 },
                                    { 33, 22 },   { 28, 16 },   { 1920, 1080 }, { 64, 480 } };
    uint64_t rng = 42;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int w = sizes[s][0], h = sizes[s][1];
        int64_t stride = (int64_t)w * 3 + 7; /* rows need not be packed */
        uint8_t *img = malloc((size_t)stride * (size_t)h);
        CHECK(img != NULL);
        for (int k = 0; k < 300; k++) {
            int64_t idx = k < 100   ? k
                          : k < 102 ? REEL_SYNTH_MAX_INDEX - (k - 100)
                                    : (int64_t)(rng_next(&rng) % (REEL_SYNTH_MAX_INDEX + 1));
            reel_synth_draw_pattern(img, w, h, stride, idx);
            CHECK_MSG(reel_synth_read_index(img, w, h, stride) == idx, "%dx%d: index %lld misread as %lld", w, h,
                      (long long)idx, (long long)reel_synth_read_index(img, w, h, stride));
        }
        free(img);
    }
    /* indexes wrap at REEL_SYNTH_MAX_INDEX + 1 */
    uint8_t img[64 * 32 * 3];
    reel_synth_draw_pattern(img, 64, 32, 64 * 3, (int64_t)REEL_SYNTH_MAX_INDEX + 6);
    CHECK_EQ_INT(reel_synth_read_index(img, 64, 32, 64 * 3), 5);
}

TEST(synth_pattern_rejects_blank_and_garbage)
{
    enum { W = 320, H = 240 };
    static uint8_t img[W * H * 3];
    /* uniform images, the all-black and all-white cell patterns among them */
    static const int levels[] = { 0, 16, 64, 128, 200, 235, 255 };
    for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
        memset(img, levels[l], sizeof img);
        CHECK_MSG(reel_synth_read_index(img, W, H, W * 3) == -1, "uniform %d read as an index", levels[l]);
    }
    /* pixel noise: every cell averages out near 128 */
    uint64_t rng = 7;
    for (size_t i = 0; i < sizeof img; i++) img[i] = (uint8_t)rng_next(&rng);
    CHECK_EQ_INT(reel_synth_read_index(img, W, H, W * 3), -1);
    /* blocky noise (black/white blocks about the size of the cells, on and
     * off their grid): the check bits must reject nearly all of them */
    int accepted = 0;
    for (int trial = 0; trial < 2000; trial++) {
        int bs = 8 + (int)(rng_next(&rng) % 32);
        for (int by = 0; by < H; by += bs)
            for (int bx = 0; bx < W; bx += bs) {
                uint8_t v = (rng_next(&rng) & 1) ? 255 : 0;
                for (int y = by; y < by + bs && y < H; y++)
                    memset(img + ((size_t)y * W + bx) * 3, v, (size_t)(bx + bs <= W ? bs : W - bx) * 3);
            }
        accepted += reel_synth_read_index(img, W, H, W * 3) >= 0;
    }
    CHECK_MSG(accepted <= 40, "%d of 2000 random block images read as an index", accepted);
    /* too small, or bad arguments */
    CHECK_EQ_INT(reel_synth_read_index(img, 20, 10, 60), -1);
    CHECK_EQ_INT(reel_synth_read_index(NULL, W, H, W * 3), -1);
    CHECK_EQ_INT(reel_synth_read_index(img, W, H, 10), -1);
}

/* Any 1, 2 or 3 wrong cells are detected, never misread as another index. */
TEST(synth_pattern_detects_wrong_cells)
{
    enum { W = 140, H = 80, ROWS = REEL_SYNTH_PATTERN_ROWS, COLS = REEL_SYNTH_PATTERN_COLS };
    enum { CELLS = ROWS * COLS };
    static uint8_t img[W * H * 3];
    const int cw = W / COLS, ch = H / 8; /* 10 x 10 cells */
    static const int64_t idxs[] = { 0, 1, 2, 77, 1000, 65535, 65536, 524287, REEL_SYNTH_MAX_INDEX };
    uint64_t rng = 3;
    for (size_t t = 0; t < sizeof idxs / sizeof idxs[0]; t++) {
        for (int a = 0; a < CELLS; a++) {
            for (int b = a; b < CELLS; b++) {
                int c = (int)(rng_next(&rng) % CELLS);
                for (int nflip = 1; nflip <= 3; nflip++) {
                    if (nflip >= 2 && b == a) continue;
                    if (nflip == 3 && (c == a || c == b)) continue;
                    if (nflip == 1 && b != a) continue;
                    reel_synth_draw_pattern(img, W, H, W * 3, idxs[t]);
                    int cells[3] = { a, b, c };
                    for (int f = 0; f < nflip; f++) {
                        int r = cells[f] / COLS, col = cells[f] % COLS;
                        for (int y = r * ch; y < (r + 1) * ch; y++)
                            for (int x = col * cw; x < (col + 1) * cw; x++)
                                for (int k = 0; k < 3; k++) img[((size_t)y * W + x) * 3 + k] ^= 0xFF;
                    }
                    int64_t got = reel_synth_read_index(img, W, H, W * 3);
                    CHECK_MSG(got == -1, "index %lld with cells %d,%d,%d (%d flipped) read as %lld", (long long)idxs[t],
                              a, b, c, nflip, (long long)got);
                }
            }
        }
    }
}

/* ---------------------------------------------------------------- timing, errors */

TEST(synth_frame_times)
{
    reel_synth_params p;
    params(&p, "x.mp4", "h264", 320, 240, 100);
    CHECK_NEAR(reel_synth_frame_time(&p, 0), 0.0, 1e-12);
    CHECK_NEAR(reel_synth_frame_time(&p, 10), 0.4, 1e-12);
    CHECK_NEAR(reel_synth_frame_time(&p, 100), 4.0, 1e-12); /* the end */
    CHECK(reel_synth_frame_time(&p, 101) < 0);
    CHECK(reel_synth_frame_time(&p, -1) < 0);
    CHECK(reel_synth_frame_time(NULL, 0) < 0);

    p.fps_num = 30000;
    p.fps_den = 1001;
    p.start_time = 1.0;
    CHECK_NEAR(reel_synth_frame_time(&p, 0), 1.0, 1e-12);
    CHECK_NEAR(reel_synth_frame_time(&p, 30), 1.0 + 30 * 1001.0 / 30000, 1e-12);
    p.start_time = 0.123;
    CHECK_NEAR(reel_synth_frame_time(&p, 0), 0.123, 1e-12);

    /* VFR: durations in [0.5, 1.5] x 1/25 (to the tick), varied, seeded */
    p.fps_num = 25;
    p.fps_den = 1;
    p.start_time = 0.5;
    p.vfr = 1;
    double prev = reel_synth_frame_time(&p, 0), mn = 1, mx = 0;
    CHECK_NEAR(prev, 0.5, 1e-12);
    for (int i = 1; i <= 100; i++) {
        double t = reel_synth_frame_time(&p, i), d = t - prev;
        CHECK_MSG(d >= 0.02 - 1e-5 && d <= 0.06 + 1e-5, "frame %d lasts %.6f s", i - 1, d);
        if (d < mn) mn = d;
        if (d > mx) mx = d;
        prev = t;
    }
    CHECK(mx - mn > 0.02);
    double t50 = reel_synth_frame_time(&p, 50);
    p.seed++;
    CHECK(reel_synth_frame_time(&p, 50) != t50);
    p.seed--;
    CHECK_NEAR(reel_synth_frame_time(&p, 50), t50, 0.0);
    p.path = "x.avi";
    CHECK(reel_synth_frame_time(&p, 0) < 0); /* no VFR in AVI */
}

TEST(synth_rejects_bad_params)
{
    char dir[4200], path[4300];
    reel_synth_params p;
    reel_error err;
    quiet();
    tmp_path(path, sizeof path, "bad.mp4");

    params(&p, path, "h264", 320, 240, 10);
    p.path = NULL;
    reel_error_clear(&err);
    CHECK_STATUS(reel_synth_write(&p, &err), REEL_E_INVALID_ARG);
    CHECK_EQ_INT(err.status, REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_synth_write(NULL, NULL), REEL_E_INVALID_ARG);

    struct {
        const char *file, *codec;
        int w, h, n, vfr, bit10, y444;
        double start;
        int status;
    } cases[] = {
        { "bad.xyz", "h264", 320, 240, 10, 0, 0, 0, 0.0, REEL_E_INVALID_ARG },
        { "bad", "h264", 320, 240, 10, 0, 0, 0, 0.0, REEL_E_INVALID_ARG },
        { "bad.mp4", "h263x", 320, 240, 10, 0, 0, 0, 0.0, REEL_E_UNSUPPORTED_CODEC },
        { "bad.mp4", "h264", 16, 240, 10, 0, 0, 0, 0.0, REEL_E_INVALID_ARG },
        { "bad.mp4", "h264", 320, 240, 0, 0, 0, 0, 0.0, REEL_E_INVALID_ARG },
        { "bad.mp4", "h264", 320, 240, 10, 0, 0, 0, -1.0, REEL_E_INVALID_ARG },
        { "bad.avi", "mpeg4", 320, 240, 10, 1, 0, 0, 0.0, REEL_E_INVALID_ARG },
        { "bad.avi", "mpeg4", 320, 240, 10, 0, 0, 0, 2.0, REEL_E_INVALID_ARG },
        { "bad.mp4", "h264", 99, 67, 10, 0, 0, 0, 0.0, REEL_E_INVALID_ARG }, /* odd 4:2:0 */
        { "bad.mkv", "hevc", 320, 241, 10, 0, 0, 0, 0.0, REEL_E_INVALID_ARG },
        { "bad.avi", "mjpeg", 320, 240, 10, 0, 1, 0, 0.0, REEL_E_UNSUPPORTED_CODEC },
        { "bad.avi", "mpeg4", 320, 240, 10, 0, 0, 1, 0.0, REEL_E_UNSUPPORTED_CODEC },
        { "bad.webm", "vp8", 320, 240, 10, 0, 1, 0, 0.0, REEL_E_UNSUPPORTED_CODEC },
        { "bad.webm", "h264", 320, 240, 10, 0, 0, 0, 0.0, REEL_E_UNSUPPORTED_CODEC },
        { "bad.mp4", "vp8", 320, 240, 10, 0, 0, 0, 0.0, REEL_E_UNSUPPORTED_CODEC },
        { "bad.mov", "vp9", 320, 240, 10, 0, 0, 0, 0.0, REEL_E_UNSUPPORTED_CODEC },
        { "bad.avi", "hevc", 320, 240, 10, 0, 0, 0, 0.0, REEL_E_UNSUPPORTED_CODEC },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tmp_path(path, sizeof path, cases[i].file);
        params(&p, path, cases[i].codec, cases[i].w, cases[i].h, cases[i].n);
        p.vfr = cases[i].vfr;
        p.pix_fmt_10bit = cases[i].bit10;
        p.yuv444 = cases[i].y444;
        p.start_time = cases[i].start;
        reel_error_clear(&err);
        int r = reel_synth_write(&p, &err);
        if (r == REEL_E_UNSUPPORTED_CODEC && strstr(err.message, "encoder in this FFmpeg build"))
            continue; /* an FFmpeg build without this encoder cannot get further */
        CHECK_MSG(r == cases[i].status, "case %zu (%s %s): status %d, want %d (%s)", i, cases[i].file, cases[i].codec,
                  r, cases[i].status, err.message);
        CHECK_EQ_INT(err.status, r);
        CHECK_MSG(strncmp(err.message, path, strlen(path)) == 0 && strstr(err.message, ": "),
                  "case %zu: message \"%s\" does not start with the path", i, err.message);
        CHECK_MSG(!file_exists(path), "case %zu: %s left behind", i, path);
    }
    /* an unwritable place: REEL_E_IO, nothing created */
    snprintf(dir, sizeof dir, "%s/no/such/dir", harness_tmpdir());
    snprintf(path, sizeof path, "%s/x.mp4", dir);
    params(&p, path, "h264", 64, 64, 4);
    reel_error_clear(&err);
    CHECK_STATUS(reel_synth_write(&p, &err), REEL_E_IO);
    CHECK(strstr(err.message, path) == err.message);
}

/* ---------------------------------------------------------------- the CLI */

/* Runs `$REEL_CLI synth ARGS` with stdout+stderr to `log`; returns the exit status. */
static int run_cli(const char *args, const char *log)
{
    const char *cli = harness_env("REEL_CLI", NULL);
    char qc[4200], ql[4200], cmd[9000];
    shell_quote(qc, sizeof qc, cli);
    shell_quote(ql, sizeof ql, log);
    snprintf(cmd, sizeof cmd, "%s synth %s > %s 2>&1", qc, args, ql);
    int st = system(cmd);
    return st >= 0 && (st & 0x7f) == 0 ? (st >> 8) & 0xff : -1;
}

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    CHECK_MSG(fp != NULL, "cannot open %s", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return buf;
}

TEST(synth_cli_single_dataset_and_exit_codes)
{
    const char *cli = harness_env("REEL_CLI", NULL);
    struct stat st;
    if (!cli || stat(cli, &st) != 0) harness_skip("no reel CLI (REEL_CLI)");
    char dir[4200], qd[4300], args[9000], log[4300], path[4600];
    tmp_path(log, sizeof log, "cli.log");

    /* one video */
    tmp_path(path, sizeof path, "cli one.mkv"); /* a space in the name */
    shell_quote(qd, sizeof qd, path);
    snprintf(args, sizeof args, "%s --codec mpeg4 --size 96x64 --frames 12 --fps 30000/1001 --start 1", qd);
    CHECK_EQ_INT(run_cli(args, log), 0);
    CHECK_MSG(strstr(slurp(log), "reel synth: wrote ") == slurp(log), "output: %s", slurp(log));
    CHECK(file_exists(path));

    /* a dataset with every kind of damaged file */
    tmp_path(dir, sizeof dir, "cli_ds");
    shell_quote(qd, sizeof qd, dir);
    snprintf(args, sizeof args,
             "--dataset %s --classes 2 --videos 3 --seconds 0.4 --size 96x64 --fps 25 --corrupt 4 --jobs 2", qd);
    CHECK_EQ_INT(run_cli(args, log), 0);
    snprintf(path, sizeof path, "%s/manifest.csv", dir);
    const char *m = slurp(path);
    CHECK_MSG(strncmp(m, "path,label,start,end\n", 21) == 0, "manifest: %s", m);
    static const char *rows[] = {
        "class_00_juggling/video_00000.mp4,class_00_juggling,0.000000,0.400000\n",
        "class_01_archery/video_00001.mp4,class_01_archery,0.000000,0.400000\n",
        "class_00_juggling/video_00002.mp4,class_00_juggling,0.000000,0.400000\n",
        "class_00_juggling/corrupt_000_truncated.mkv,class_00_juggling,",
        "class_01_archery/corrupt_001_garbled.mp4,class_01_archery,",
        "class_00_juggling/corrupt_002_empty.mp4,class_00_juggling,",
        "class_01_archery/corrupt_003_text.mp4,class_01_archery,",
    };
    int lines = 0;
    for (const char *c = m; *c; c++) lines += *c == '\n';
    CHECK_EQ_INT(lines, 1 + 7);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        CHECK_MSG(strstr(m, rows[i]) != NULL, "manifest lacks \"%s\":\n%s", rows[i], m);
        char rel[256];
        snprintf(rel, sizeof rel, "%s", rows[i]);
        rel[strcspn(rel, ",")] = '\0';
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        CHECK_MSG(stat(path, &st) == 0, "%s missing", path);
        if (strstr(rel, "empty"))
            CHECK_EQ_INT(st.st_size, 0);
        else
            CHECK(st.st_size > 0);
    }
    /* the intact videos decode to their frames */
    if (harness_have_ffmpeg()) {
        snprintf(path, sizeof path, "%s/class_01_archery/video_00001.mp4", dir);
        check_decoded(path, 96, 64, 10, 0, 0);
    }

    /* bad usage: 2; runtime error: 1 with "reel synth: <path>: <reason>" */
    CHECK_EQ_INT(run_cli("", log), 2);
    CHECK_EQ_INT(run_cli("x.mp4 --frames", log), 2);
    CHECK_EQ_INT(run_cli("x.mp4 --size 10", log), 2);
    CHECK_EQ_INT(run_cli("x.mp4 --no-such-option", log), 2);
    CHECK_EQ_INT(run_cli("--help", log), 0);
    snprintf(path, sizeof path, "%s/no/such/dir/x.mp4", harness_tmpdir());
    shell_quote(qd, sizeof qd, path);
    snprintf(args, sizeof args, "%s --frames 2", qd);
    CHECK_EQ_INT(run_cli(args, log), 1);
    char want[4800];
    snprintf(want, sizeof want, "reel synth: %s: ", path);
    CHECK_MSG(strncmp(slurp(log), want, strlen(want)) == 0, "stderr: %s", slurp(log));
}

/* ---------------------------------------------------------------- real videos */

TEST(synth_h264_mp4_gop16_bframes)
{
    char path[4300];
    reel_synth_params p;
    need_ffmpeg();
    params(&p, tmp_path(path, sizeof path, "h264_gop16.mp4"), "h264", 320, 240, 100);
    p.gop = 16;
    p.bframes = 2;
    write_or_skip(&p);
    check_video(&p);
    int64_t nb = 0;
    check_gop(path, p.num_frames, 16, &nb);
    CHECK_MSG(nb >= 30, "only %lld B-frames in 100 frames with bframes 2", (long long)nb);
    check_times(&p, 1e-6);
}

TEST(synth_mpeg4_avi_bframes)
{
    char path[4300];
    reel_synth_params p;
    need_ffmpeg();
    params(&p, tmp_path(path, sizeof path, "mpeg4.avi"), "mpeg4", 320, 240, 60);
    p.gop = 12;
    p.bframes = 2;
    write_or_skip(&p);
    check_video(&p);
    int64_t nb = 0;
    check_gop(path, p.num_frames, 12, &nb);
    CHECK(nb > 0);
}

TEST(synth_mjpeg_avi)
{
    char path[4300];
    reel_synth_params p;
    need_ffmpeg();
    params(&p, tmp_path(path, sizeof path, "mjpeg.avi"), "mjpeg", 322, 182, 40);
    write_or_skip(&p);
    check_video(&p);
    check_gop(path, p.num_frames, 1, NULL); /* every frame a keyframe */
}

TEST(synth_vp9_webm)
{
    char path[4300];
    reel_synth_params p;
    need_ffmpeg();
    params(&p, tmp_path(path, sizeof path, "vp9.webm"), "vp9", 320, 240, 50);
    write_or_skip(&p);
    check_video(&p);
    check_gop(path, p.num_frames, p.gop, NULL);
}

TEST(synth_hevc_mkv_bframes)
{
    char path[4300];
    reel_synth_params p;
    need_ffmpeg();
    params(&p, tmp_path(path, sizeof path, "hevc.mkv"), "hevc", 320, 240, 50);
    p.bframes = 3;
    write_or_skip(&p);
    check_video(&p);
    int64_t nb = 0;
    check_gop(path, p.num_frames, p.gop, &nb);
    CHECK(nb > 0);
    check_times(&p, 0.0011);
}

TEST(synth_hevc_10bit_mp4)
{
    char path[4300];
    reel_synth_params p;
    need_ffmpeg();
    params(&p, tmp_path(path, sizeof path, "hevc10.mp4"), "hevc", 320, 240, 40);
    p.pix_fmt_10bit = 1;
    write_or_skip(&p);
    check_video(&p);
    CHECK_EQ_STR(probe_stream(path, "codec_name,pix_fmt"), "hevc,yuv420p10le");
}

TEST(synth_vfr_mp4_and_mkv)
{
    char path[4300];
    reel_synth_params p;
    need_ffmpeg();
    params(&p, tmp_path(path, sizeof path, "vfr.mp4"), "h264", 320, 240, 80);
    p.vfr = 1;
    p.start_time = 0.75;
    write_or_skip(&p);
    check_video(&p);
    check_times(&p, 2e-5); /* 1/90000 s ticks */
    check_gop(path, p.num_frames, p.gop, NULL);

    params(&p, tmp_path(path, sizeof path, "vfr.mkv"), "h264", 160, 120, 60);
    p.vfr = 1;
    p.bframes = 3;
    write_or_skip(&p);
    check_video(&p);
    check_times(&p, 0.0011); /* Matroska: milliseconds */
}

TEST(synth_start_time_ntsc_rate)
{
    char path[4300];
    reel_synth_params p;
    need_ffmpeg();
    params(&p, tmp_path(path, sizeof path, "ntsc_start.mp4"), "h264", 160, 120, 45);
    p.fps_num = 30000;
    p.fps_den = 1001;
    p.start_time = 1.0;
    write_or_skip(&p);
    check_video(&p);
    check_times(&p, 1e-5);
}

TEST(synth_av1_and_vp8)
{
    char path[4300];
    reel_synth_params p;
    need_ffmpeg();
    params(&p, tmp_path(path, sizeof path, "av1.mkv"), "av1", 320, 240, 40);
    write_or_skip(&p);
    check_video(&p);
    check_gop(path, p.num_frames, p.gop, NULL);

    params(&p, tmp_path(path, sizeof path, "vp8.webm"), "vp8", 320, 240, 40);
    write_or_skip(&p);
    check_video(&p);
}

TEST(synth_odd_sizes)
{
    char path[4300];
    reel_synth_params p;
    need_ffmpeg();
    params(&p, tmp_path(path, sizeof path, "h264_98x66.mp4"), "h264", 98, 66, 30);
    write_or_skip(&p);
    check_decoded(path, 98, 66, 30, 0, 0);

    params(&p, tmp_path(path, sizeof path, "h264_444_97x75.mkv"), "h264", 97, 75, 30);
    p.yuv444 = 1;
    write_or_skip(&p);
    check_decoded(path, 97, 75, 30, 0, 0);
    CHECK_EQ_STR(probe_stream(path, "width,height,pix_fmt"), "97,75,yuv444p");

    params(&p, tmp_path(path, sizeof path, "vp9_99x67.webm"), "vp9", 99, 67, 30);
    write_or_skip(&p);
    check_decoded(path, 99, 67, 30, 0, 0);
}

TEST(synth_is_deterministic)
{
    char a[4300], b[4300];
    reel_synth_params p;
    quiet();
    params(&p, tmp_path(a, sizeof a, "det_a.mp4"), "h264", 160, 120, 40);
    write_or_skip(&p);
    p.path = tmp_path(b, sizeof b, "det_b.mp4");
    write_or_skip(&p);
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    CHECK(fa && fb);
    int ca, cb;
    long pos = 0;
    do {
        ca = fgetc(fa);
        cb = fgetc(fb);
        CHECK_MSG(ca == cb, "the two files differ at byte %ld", pos);
        pos++;
    } while (ca != EOF);
    fclose(fa);
    fclose(fb);
    CHECK(pos > 1000);
}
