/* test_errors.c: every failure gives the right status and a message that
 * names the file; damaged files (truncated, overwritten, bit-flipped) never
 * crash, hang, or return a frame other than the one asked for; the CLI's
 * exit statuses. */
#include "testgen.h"

#include <limits.h>
#include <signal.h>

/* ---------------------------------------------------------------- watchdog */

/* A hang in a damaged-file test must not stall the whole run until ctest's
 * timeout: an alarm names the step and exits. */
static const char *volatile g_step = "";

static void on_alarm(int sig)
{
    (void)sig;
    static const char m[] = "\nHANG: no progress within the watchdog limit in step: ";
    ssize_t r = write(1, m, sizeof m - 1);
    r = write(1, (const char *)g_step, strlen((const char *)g_step));
    r = write(1, "\n", 1);
    (void)r;
    _exit(3);
}

static void watchdog(unsigned seconds)
{
    signal(SIGALRM, on_alarm);
    alarm(seconds);
}

/* ---------------------------------------------------------------- fixtures */

#define SRC_W 160
#define SRC_H 120
#define SRC_N 120

/* A good 120-frame H.264 video in `ext` (cached per process). mp4 is the
 * generator's own layout (moov at the end); "fs.mp4" is a copy remuxed with
 * the moov atom first (needs the ffmpeg CLI). */
static const char *source_video(const char *ext)
{
    static char paths[4][4096];
    static const char *exts[4] = { "mkv", "avi", "mp4", "fs.mp4" };
    int k = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(ext, exts[i])) k = i;
    CHECK(k >= 0);
    if (paths[k][0] && tg_file_exists(paths[k])) return paths[k];

    char name[64];
    snprintf(name, sizeof name, "src.%s", ext);
    if (k == 3) {
        if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg CLI to write a faststart mp4");
        const char *plain = source_video("mp4");
        char cmd[12288] = "ffmpeg -nostdin -v error -y -i ";
        tg_path(paths[k], sizeof paths[k], name);
        tg_shell_append_quoted(cmd, sizeof cmd, plain);
        strcat(cmd, " -c copy -movflags +faststart ");
        tg_shell_append_quoted(cmd, sizeof cmd, paths[k]);
        int rc = tg_system(cmd);
        CHECK_MSG(rc == 0, "ffmpeg faststart remux failed (%d): %s", rc, cmd);
        /* moov before mdat */
        size_t n;
        uint8_t *b = tg_read_file(paths[k], &n);
        uint8_t *moov = memmem(b, n, "moov", 4), *mdat = memmem(b, n, "mdat", 4);
        CHECK_MSG(moov && mdat && moov < mdat, "%s: moov is not before mdat", paths[k]);
        free(b);
        return paths[k];
    }
    reel_synth_params p;
    tg_path(paths[k], sizeof paths[k], name);
    tg_params(&p, paths[k], "h264", SRC_W, SRC_H, SRC_N, 16, 2);
    tg_synth(&p);
    return paths[k];
}

/* Writes the first `keep` bytes of src to dst. */
static void write_truncated(const char *src, const char *dst, size_t keep)
{
    size_t n;
    uint8_t *b = tg_read_file(src, &n);
    CHECK(keep <= n);
    tg_write_file(dst, b, keep);
    free(b);
}

/* The frame a synthetic 25 fps file embeds for table row i, from its pts. */
static int64_t expected_at(const reel_decoder *dec, int64_t i)
{
    int64_t n = 0;
    const reel_frame_entry *ft = reel_decoder_get_frame_table(dec, &n);
    return tg_index_of_pts(dec, ft[i].pts, 0.0, 25, 1);
}

/* Frames before this presentation index lie entirely before byte `dmg`:
 * the GOPs before the last keyframe whose packet starts at or before it
 * (closed GOPs, packets stored in decode order). */
static int64_t safe_limit(const reel_decoder *dec, int64_t dmg)
{
    int64_t n = 0, nk = 0, lim = 0;
    const reel_frame_entry *ft = reel_decoder_get_frame_table(dec, &n);
    const int64_t *keys = reel_decoder_get_keyframes(dec, &nk);
    for (int64_t k = 0; k < nk; k++)
        if (ft[keys[k]].pos >= 0 && ft[keys[k]].pos <= dmg) lim = keys[k];
    return lim;
}

/* First presentation index of the GOPs that begin after byte `end`: the
 * first keyframe stored past the damaged span (closed GOPs cannot reach
 * back into it). n if there is none. */
static int64_t clean_again_at(const reel_decoder *dec, int64_t end)
{
    int64_t n = 0, nk = 0;
    const reel_frame_entry *ft = reel_decoder_get_frame_table(dec, &n);
    const int64_t *keys = reel_decoder_get_keyframes(dec, &nk);
    for (int64_t k = 0; k < nk; k++)
        if (ft[keys[k]].pos > end) return keys[k];
    return n;
}

/* The battery for a damaged file that must still open, bytes [dmg, dmg_end)
 * damaged: frames of GOPs before the damage are exact; frames of GOPs after
 * it are exact, unreadable (-1) or REEL_E_CORRUPT, never another frame; in
 * the damaged GOPs themselves the codec may conceal with a neighbour's
 * pixels without noticing (FFmpeg does not flag concealment under frame
 * threading), so there only the status is checked. */
static void check_damaged(const char *path, int64_t dmg, int64_t dmg_end, int truncated)
{
    reel_decoder *dec = NULL;
    reel_decoder_settings s;
    reel_error err;
    reel_error_clear(&err);
    reel_decoder_default_settings(&s);
    s.corrupt_policy = REEL_CORRUPT_FAIL;

    g_step = path;
    int r = reel_decoder_open(&dec, path, &s, &err);
    CHECK_MSG(r == REEL_OK, "open(%s) of a damaged file that still holds frames failed: %d (%s) %s", path, r,
              reel_strerror(r), err.message);
    int64_t n = reel_decoder_get_info(dec)->num_frames;
    if (truncated)
        CHECK_MSG(n > 0 && n < SRC_N, "%s: truncated at byte %lld, table has %lld frames", path, (long long)dmg,
                  (long long)n);
    else
        CHECK_MSG(n > 0 && n <= SRC_N, "%s: %lld frames", path, (long long)n);
    int64_t safe = safe_limit(dec, dmg);
    int64_t clean = clean_again_at(dec, dmg_end);
    CHECK_MSG(safe > 0, "%s: no complete GOP before the damage at byte %lld", path, (long long)dmg);
    for (int64_t i = 0; i < safe; i++)
        CHECK_MSG(expected_at(dec, i) == i, "%s: table row %lld (before the damage) has the pts of frame %lld", path,
                  (long long)i, (long long)expected_at(dec, i));

    size_t fb = (size_t)SRC_W * SRC_H * 3;
    uint8_t *buf = malloc(fb * (size_t)n);
    int64_t *all = malloc((size_t)n * sizeof *all);
    CHECK(buf && all);

    /* every row on its own */
    for (int64_t i = 0; i < n; i++) {
        reel_error_clear(&err);
        r = reel_decoder_get_frames(dec, &i, 1, NULL, buf, fb, NULL, &err);
        if (r == REEL_OK) {
            int64_t got = tg_read_idx(buf, SRC_W, SRC_H);
            if (i < safe)
                CHECK_MSG(got == i, "%s: frame %lld (before the damage) embeds %lld", path, (long long)i,
                          (long long)got);
            else if (i >= clean)
                CHECK_MSG(got == expected_at(dec, i) || got == -1,
                          "%s: frame %lld (pts of frame %lld) returned REEL_OK with a frame embedding %lld", path,
                          (long long)i, (long long)expected_at(dec, i), (long long)got);
        } else {
            CHECK_MSG(r == REEL_E_CORRUPT, "%s: frame %lld: status %d (%s) %s, expected REEL_OK or REEL_E_CORRUPT",
                      path, (long long)i, r, reel_strerror(r), err.message);
            CHECK_MSG(i >= safe, "%s: frame %lld lies before the damage (first %lld frames) but failed: %s", path,
                      (long long)i, (long long)safe, err.message);
            TG_CHECK_MSG_HAS(err, path);
        }
    }
    /* the decoder still works after failures */
    int64_t zero = 0;
    CHECK_OK(reel_decoder_get_frames(dec, &zero, 1, NULL, buf, fb, NULL, &err));
    CHECK_EQ_INT(tg_read_idx(buf, SRC_W, SRC_H), 0);

    /* everything in one call, under both policies */
    for (int64_t i = 0; i < n; i++) all[i] = i;
    for (int pol = REEL_CORRUPT_FAIL; pol <= REEL_CORRUPT_SKIP; pol++) {
        reel_decoder *d2 = NULL;
        s.corrupt_policy = pol;
        r = reel_decoder_open(&d2, path, &s, &err);
        CHECK_MSG(r == REEL_OK, "open(%s, policy %d): %d %s", path, pol, r, err.message);
        reel_error_clear(&err);
        r = reel_decoder_get_frames(d2, all, (size_t)n, NULL, buf, fb * (size_t)n, NULL, &err);
        CHECK_MSG(r == REEL_OK || r == REEL_E_CORRUPT, "%s policy %d, all frames: status %d (%s) %s", path, pol, r,
                  reel_strerror(r), err.message);
        if (r != REEL_OK) TG_CHECK_MSG_HAS(err, path);
        if (r == REEL_OK && pol == REEL_CORRUPT_FAIL) {
            for (int64_t i = 0; i < n; i++) {
                int64_t got = tg_read_idx(buf + (size_t)i * fb, SRC_W, SRC_H);
                if (i < safe)
                    CHECK_MSG(got == i, "%s: all-frames call: frame %lld embeds %lld", path, (long long)i,
                              (long long)got);
                else if (i >= clean)
                    CHECK_MSG(got == expected_at(d2, i) || got == -1,
                              "%s: all-frames call returned REEL_OK, frame %lld (pts of %lld) embeds %lld", path,
                              (long long)i, (long long)expected_at(d2, i), (long long)got);
            }
        }
        /* under either policy, frames before the damage come back exact */
        if (safe > 0) {
            r = reel_decoder_get_frames(d2, all, (size_t)safe, NULL, buf, fb * (size_t)safe, NULL, &err);
            CHECK_MSG(r == REEL_OK, "%s policy %d: frames 0..%lld before the damage: %d %s", path, pol,
                      (long long)safe - 1, r, err.message);
            for (int64_t i = 0; i < safe; i++) CHECK_EQ_INT(tg_read_idx(buf + (size_t)i * fb, SRC_W, SRC_H), i);
        }
        reel_decoder_close(&d2);
    }
    free(all);
    free(buf);
    reel_decoder_close(&dec);
}

/* ---------------------------------------------------------------- open failures */

/* Opens `path`, expecting `status` and the path in the message. */
static void expect_open_fails(const char *path, int status)
{
    reel_decoder *dec = (reel_decoder *)&dec; /* must be reset to NULL */
    reel_error err;
    reel_error_clear(&err);
    int r = reel_decoder_open(&dec, path, NULL, &err);
    CHECK_MSG(r == status, "open(%s): %d (%s), expected %d (%s); message: %s", path, r, reel_strerror(r), status,
              reel_strerror(status), err.message);
    CHECK_EQ_INT(err.status, status);
    CHECK(dec == NULL);
    TG_CHECK_MSG_HAS(err, path);
    /* and with no error record: same status, no crash */
    CHECK_EQ_INT(reel_decoder_open(&dec, path, NULL, NULL), status);
    CHECK(dec == NULL);
}

TEST(missing_file_is_not_found)
{
    char path[4096];
    expect_open_fails(tg_path(path, sizeof path, "no-such-video.mp4"), REEL_E_NOT_FOUND);
    expect_open_fails(tg_path(path, sizeof path, "no-such-dir/video.mp4"), REEL_E_NOT_FOUND);
}

TEST(directory_is_io_error)
{
    char path[4096];
    tg_path(path, sizeof path, "a-directory.mp4");
    CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
    expect_open_fails(path, REEL_E_IO);
    expect_open_fails(harness_tmpdir(), REEL_E_IO);
}

TEST(zero_byte_file_is_not_video)
{
    char path[4096];
    tg_write_file(tg_path(path, sizeof path, "empty.mp4"), "", 0);
    expect_open_fails(path, REEL_E_NOT_VIDEO);
}

TEST(text_file_named_mp4_is_not_video)
{
    char path[4096];
    const char *text = "This is not a video.\nIt is a text file that someone named .mp4.\n"
                       "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n";
    tg_write_file(tg_path(path, sizeof path, "text.mp4"), text, strlen(text));
    expect_open_fails(path, REEL_E_NOT_VIDEO);
    tg_write_file(tg_path(path, sizeof path, "text.mkv"), text, strlen(text));
    expect_open_fails(path, REEL_E_NOT_VIDEO);
}

TEST(random_bytes_are_not_video)
{
    char path[4096];
    static const char *names[] = { "random.mp4", "random.mkv", "random.avi", "random.bin" };
    uint64_t rng = 12345;
    for (int k = 0; k < 4; k++) {
        size_t n = 1000 + (size_t)k * 20000;
        uint8_t *b = malloc(n);
        CHECK(b != NULL);
        for (size_t i = 0; i < n; i++) b[i] = (uint8_t)tg_rand(&rng);
        tg_write_file(tg_path(path, sizeof path, names[k]), b, n);
        free(b);
        expect_open_fails(path, REEL_E_NOT_VIDEO);
    }
}

TEST(audio_only_file_has_no_video_stream)
{
    if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg CLI to make an audio file");
    char path[4096], cmd[8192] = "ffmpeg -nostdin -v error -y -f lavfi -i sine=d=1 -c:a aac ";
    tg_path(path, sizeof path, "audio.m4a");
    tg_shell_append_quoted(cmd, sizeof cmd, path);
    int rc = tg_system(cmd);
    if (rc != 0) harness_skip("ffmpeg could not write an AAC file");
    expect_open_fails(path, REEL_E_NO_VIDEO_STREAM);
}

static void expect_stream_fails(const char *path, int stream)
{
    reel_decoder *dec = NULL;
    reel_decoder_settings s;
    reel_error err;
    reel_decoder_default_settings(&s);
    s.stream_index = stream;
    int r = reel_decoder_open(&dec, path, &s, &err);
    CHECK_MSG(r == REEL_E_NO_VIDEO_STREAM, "open(%s, stream %d): %d (%s) %s", path, stream, r, reel_strerror(r),
              err.message);
    CHECK(dec == NULL);
    TG_CHECK_MSG_HAS(err, path);
}

TEST(stream_index_not_video_or_missing)
{
    const char *src = source_video("mkv");
    expect_stream_fails(src, 1);
    expect_stream_fails(src, 7);
    expect_stream_fails(src, INT_MAX);
    reel_decoder *dec = NULL;
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.stream_index = 0;
    reel_error err;
    CHECK_OK(reel_decoder_open(&dec, src, &s, &err));
    CHECK_EQ_INT(reel_decoder_get_info(dec)->stream_index, 0);
    reel_decoder_close(&dec);

    if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg CLI to add an audio stream");
    char path[4096], cmd[12288] = "ffmpeg -nostdin -v error -y -f lavfi -i sine=d=2 -i ";
    tg_path(path, sizeof path, "with_audio.mkv");
    tg_shell_append_quoted(cmd, sizeof cmd, src);
    strcat(cmd, " -map 0:a -map 1:v -c:v copy -c:a aac ");
    tg_shell_append_quoted(cmd, sizeof cmd, path);
    CHECK_MSG(tg_system(cmd) == 0, "ffmpeg failed: %s", cmd);
    expect_stream_fails(path, 0); /* the audio stream */
    expect_stream_fails(path, 2);
    s.stream_index = 1;
    CHECK_OK(reel_decoder_open(&dec, path, &s, &err));
    CHECK_EQ_INT(reel_decoder_get_info(dec)->stream_index, 1);
    CHECK_EQ_INT(reel_decoder_get_info(dec)->has_audio, 1);
    CHECK_EQ_INT(reel_decoder_get_info(dec)->num_frames, SRC_N);
    reel_decoder_close(&dec);
    /* default: the video stream is found */
    CHECK_OK(reel_decoder_open(&dec, path, NULL, &err));
    CHECK_EQ_INT(reel_decoder_get_info(dec)->stream_index, 1);
    int64_t i = 77;
    uint8_t *b = tg_get(dec, &i, 1, NULL, NULL);
    CHECK_EQ_INT(tg_read_idx(b, SRC_W, SRC_H), 77);
    free(b);
    reel_decoder_close(&dec);
}

/* ---------------------------------------------------------------- call errors */

TEST(out_of_range_indices)
{
    const char *src = source_video("mkv");
    reel_decoder *dec = tg_open(src, NULL);
    const int64_t n = reel_decoder_get_info(dec)->num_frames;
    CHECK_EQ_INT(n, SRC_N);
    size_t fb = (size_t)SRC_W * SRC_H * 3;
    uint8_t *buf = malloc(fb * 3);
    CHECK(buf != NULL);
    const int64_t bad[] = { n, -n - 1, n + 1, 1000000, INT64_MAX, INT64_MIN, -INT64_MAX, INT64_MAX / 2 };
    reel_error err;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int64_t req[3] = { 3, bad[k], 5 };
        reel_error_clear(&err);
        int r = reel_decoder_get_frames(dec, req, 3, NULL, buf, fb * 3, NULL, &err);
        CHECK_MSG(r == REEL_E_OUT_OF_RANGE, "index %lld: %d (%s) %s", (long long)bad[k], r, reel_strerror(r),
                  err.message);
        TG_CHECK_MSG_HAS(err, src);
        /* the decoder still works */
        int64_t ok[2] = { bad[k] == n ? 9 : 2, -1 };
        CHECK_OK(reel_decoder_get_frames(dec, ok, 2, NULL, buf, fb * 2, NULL, &err));
        CHECK_EQ_INT(tg_read_idx(buf, SRC_W, SRC_H), ok[0]);
        CHECK_EQ_INT(tg_read_idx(buf + fb, SRC_W, SRC_H), n - 1);
    }
    /* the same through the other entry points */
    int64_t one = n;
    void *out = NULL;
    size_t out_size = 0;
    CHECK_STATUS(reel_decoder_get_frames_alloc(dec, &one, 1, NULL, &out, &out_size, NULL, &err), REEL_E_OUT_OF_RANGE);
    CHECK(out == NULL);
    reel_frame_fn never = NULL;
    (void)never;
    double t_bad[] = { -1.0, 1e9, (double)n / 25.0, NAN, INFINITY, -INFINITY };
    for (size_t k = 0; k < sizeof t_bad / sizeof t_bad[0]; k++) {
        int64_t ix = -7;
        reel_error_clear(&err);
        CHECK_STATUS(reel_decoder_get_frames_at_times(dec, &t_bad[k], 1, NULL, buf, fb, &ix, NULL, &err),
                     REEL_E_OUT_OF_RANGE);
        TG_CHECK_MSG_HAS(err, src);
    }
    size_t got = 99;
    CHECK_STATUS(reel_decoder_get_range(dec, n, n + 10, 1, NULL, buf, fb * 3, &got, NULL, &err), REEL_OK);
    CHECK_EQ_INT(got, 0);
    CHECK_STATUS(reel_decoder_get_range(dec, 0, 10, 0, NULL, buf, fb * 3, &got, NULL, &err), REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_decoder_get_range(dec, 0, 10, -2, NULL, buf, fb * 3, &got, NULL, &err), REEL_E_INVALID_ARG);
    int64_t last = -1;
    CHECK_OK(reel_decoder_get_frames(dec, &last, 1, NULL, buf, fb, NULL, &err));
    CHECK_EQ_INT(tg_read_idx(buf, SRC_W, SRC_H), n - 1);
    free(buf);
    reel_decoder_close(&dec);
}

TEST(bad_transforms_are_invalid_arg)
{
    const char *src = source_video("mkv");
    reel_decoder *dec = tg_open(src, NULL);
    size_t fb = (size_t)SRC_W * SRC_H * 3;
    uint8_t *buf = malloc(fb * 4 * 2);
    CHECK(buf != NULL);
    reel_error err;
    int64_t idx[2] = { 1, 50 };
    reel_transform bads[12];
    const char *what[12];
    int nb = 0;
    for (int k = 0; k < 12; k++) reel_transform_default_settings(&bads[k]);
    bads[nb].crop_x = 150;
    bads[nb].crop_w = 20;
    bads[nb].crop_h = 10;
    what[nb++] = "crop past the right edge";
    bads[nb].crop_y = 115;
    bads[nb].crop_w = 20;
    bads[nb].crop_h = 10;
    what[nb++] = "crop past the bottom";
    bads[nb].crop_x = -1;
    bads[nb].crop_w = 20;
    bads[nb].crop_h = 10;
    what[nb++] = "negative crop x";
    bads[nb].crop_w = -20;
    bads[nb].crop_h = 10;
    what[nb++] = "negative crop width";
    bads[nb].crop_w = 20;
    bads[nb].crop_h = 0;
    what[nb++] = "crop height 0 with width set";
    bads[nb].crop_w = 161;
    bads[nb].crop_h = 120;
    what[nb++] = "crop wider than the frame";
    bads[nb].width = -5;
    what[nb++] = "negative width";
    bads[nb].height = -1;
    bads[nb].width = 10;
    what[nb++] = "negative height";
    bads[nb].dtype = 9;
    what[nb++] = "unknown dtype";
    bads[nb].layout = 5;
    what[nb++] = "unknown layout";
    bads[nb].filter = -1;
    what[nb++] = "unknown filter";
    bads[nb].width = 100000;
    what[nb++] = "absurd width";
    for (int k = 0; k < nb; k++) {
        reel_error_clear(&err);
        int r = reel_decoder_get_frames(dec, idx, 2, &bads[k], buf, fb * 8, NULL, &err);
        CHECK_MSG(r == REEL_E_INVALID_ARG, "%s: get_frames %d (%s) %s", what[k], r, reel_strerror(r), err.message);
        TG_CHECK_MSG_HAS(err, src);
        size_t bytes = 0;
        reel_error_clear(&err);
        r = reel_decoder_get_output_size(dec, &bads[k], NULL, NULL, &bytes, &err);
        CHECK_MSG(r == REEL_E_INVALID_ARG, "%s: output_size %d", what[k], r);
        TG_CHECK_MSG_HAS(err, src);
        CHECK_STATUS(reel_transform_output_size(&bads[k], SRC_W, SRC_H, NULL, NULL, &bytes, NULL), REEL_E_INVALID_ARG);
        /* the decoder still works */
        CHECK_OK(reel_decoder_get_frames(dec, idx, 2, NULL, buf, fb * 2, NULL, &err));
        CHECK_EQ_INT(tg_read_idx(buf + fb, SRC_W, SRC_H), 50);
    }
    /* a crop touching the edges exactly is fine */
    reel_transform t;
    reel_transform_default_settings(&t);
    t.crop_x = 140;
    t.crop_y = 100;
    t.crop_w = 20;
    t.crop_h = 20;
    CHECK_OK(reel_decoder_get_frames(dec, idx, 2, &t, buf, fb * 2, NULL, &err));
    /* explicit strides are for reel_converter_run */
    reel_transform_default_settings(&t);
    t.stride_c = 1;
    t.stride_x = 3;
    t.stride_y = SRC_W * 3;
    CHECK_STATUS(reel_decoder_get_frames(dec, idx, 2, &t, buf, fb * 2, NULL, &err), REEL_E_INVALID_ARG);
    free(buf);
    reel_decoder_close(&dec);
}

TEST(too_small_buffer)
{
    const char *src = source_video("mkv");
    reel_decoder *dec = tg_open(src, NULL);
    size_t fb = (size_t)SRC_W * SRC_H * 3;
    uint8_t *buf = malloc(fb * 3);
    CHECK(buf != NULL);
    memset(buf, 0xAB, fb * 3);
    reel_error err;
    int64_t idx[3] = { 0, 10, 20 };
    size_t sizes[] = { 0, 1, fb - 1, fb, 3 * fb - 1 };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        reel_error_clear(&err);
        int r = reel_decoder_get_frames(dec, idx, 3, NULL, buf, sizes[k], NULL, &err);
        CHECK_MSG(r == REEL_E_BUFFER_TOO_SMALL, "dst_size %zu: %d (%s)", sizes[k], r, reel_strerror(r));
        TG_CHECK_MSG_HAS(err, src);
    }
    /* nothing was written into the too-small buffer */
    for (size_t i = 0; i < fb * 3; i++) CHECK_MSG(buf[i] == 0xAB, "byte %zu written by a failed call", i);
    /* float32 needs 4x */
    reel_transform t;
    reel_transform_default_settings(&t);
    t.dtype = REEL_DTYPE_FLOAT32;
    CHECK_STATUS(reel_decoder_get_frames(dec, idx, 1, &t, buf, fb * 3, NULL, &err), REEL_E_BUFFER_TOO_SMALL);
    double times[2] = { 0.0, 1.0 };
    CHECK_STATUS(reel_decoder_get_frames_at_times(dec, times, 2, NULL, buf, fb, NULL, NULL, &err),
                 REEL_E_BUFFER_TOO_SMALL);
    size_t got = 0;
    CHECK_STATUS(reel_decoder_get_range(dec, 0, 10, 1, NULL, buf, fb * 3, &got, NULL, &err), REEL_E_BUFFER_TOO_SMALL);
    CHECK_OK(reel_decoder_get_frames(dec, idx, 3, NULL, buf, fb * 3, NULL, &err));
    CHECK_EQ_INT(tg_read_idx(buf + 2 * fb, SRC_W, SRC_H), 20);
    free(buf);
    reel_decoder_close(&dec);
}

static int visit_nothing(void *o, const reel_frame *f, size_t pos)
{
    (void)o;
    (void)f;
    (void)pos;
    return 0;
}

TEST(null_arguments_are_invalid_arg)
{
    const char *src = source_video("mkv");
    reel_decoder *dec = tg_open(src, NULL);
    reel_error err;
    size_t fb = (size_t)SRC_W * SRC_H * 3;
    uint8_t *buf = malloc(fb * 2);
    CHECK(buf != NULL);
    int64_t idx[2] = { 0, 1 };
    int64_t ix = 0;
    void *out = NULL;
    size_t out_size = 0, got = 0;
    double t0 = 0.0;

    /* every case runs; the failures are listed together at the end */
    char fails[4096] = "";
    int nfail = 0;
#define EXPECT_INVALID(call)                                                                                        \
    do {                                                                                                            \
        reel_error_clear(&err);                                                                                     \
        int r_ = (call);                                                                                            \
        if (r_ != REEL_E_INVALID_ARG || err.status != REEL_E_INVALID_ARG || !err.message[0]) {                      \
            size_t l_ = strlen(fails);                                                                              \
            snprintf(fails + l_, sizeof fails - l_, "\n        %s -> %d (%s) \"%s\"", #call, r_, reel_strerror(r_), \
                     err.message);                                                                                  \
            nfail++;                                                                                                \
        }                                                                                                           \
    } while (0)

    reel_decoder *d2 = NULL;
    EXPECT_INVALID(reel_decoder_open(NULL, src, NULL, &err));
    EXPECT_INVALID(reel_decoder_open(&d2, NULL, NULL, &err));
    EXPECT_INVALID(reel_decoder_open(&d2, "", NULL, &err));
    CHECK(d2 == NULL);
    EXPECT_INVALID(reel_decoder_open_memory(NULL, buf, 100, "x", NULL, &err));
    EXPECT_INVALID(reel_decoder_open_memory(&d2, NULL, 100, "x", NULL, &err));
    EXPECT_INVALID(reel_decoder_open_io(NULL, NULL, "x", NULL, &err));
    EXPECT_INVALID(reel_decoder_open_io(&d2, NULL, "x", NULL, &err));
    CHECK(d2 == NULL);

    EXPECT_INVALID(reel_decoder_get_frames(NULL, idx, 2, NULL, buf, fb * 2, NULL, &err));
    EXPECT_INVALID(reel_decoder_get_frames(dec, NULL, 2, NULL, buf, fb * 2, NULL, &err));
    EXPECT_INVALID(reel_decoder_get_frames(dec, idx, 2, NULL, NULL, fb * 2, NULL, &err));
    EXPECT_INVALID(reel_decoder_get_frames_alloc(NULL, idx, 2, NULL, &out, &out_size, NULL, &err));
    EXPECT_INVALID(reel_decoder_get_frames_alloc(dec, NULL, 2, NULL, &out, &out_size, NULL, &err));
    EXPECT_INVALID(reel_decoder_get_frames_alloc(dec, idx, 2, NULL, NULL, &out_size, NULL, &err));
    EXPECT_INVALID(reel_decoder_get_frames_at_times(NULL, &t0, 1, NULL, buf, fb, NULL, NULL, &err));
    EXPECT_INVALID(reel_decoder_get_frames_at_times(dec, NULL, 1, NULL, buf, fb, NULL, NULL, &err));
    EXPECT_INVALID(reel_decoder_get_frames_at_times(dec, &t0, 1, NULL, NULL, fb, NULL, NULL, &err));
    EXPECT_INVALID(reel_decoder_get_range(NULL, 0, 2, 1, NULL, buf, fb * 2, &got, NULL, &err));
    EXPECT_INVALID(reel_decoder_get_range(dec, 0, 2, 1, NULL, NULL, fb * 2, &got, NULL, &err));
    EXPECT_INVALID(reel_decoder_decode(NULL, idx, 2, visit_nothing, NULL, NULL, &err));
    EXPECT_INVALID(reel_decoder_decode(dec, NULL, 2, visit_nothing, NULL, NULL, &err));
    EXPECT_INVALID(reel_decoder_decode(dec, idx, 2, NULL, NULL, NULL, &err));
    EXPECT_INVALID(reel_decoder_index_at_time(NULL, 0.0, &ix, &err));
    EXPECT_INVALID(reel_decoder_index_at_time(dec, 0.0, NULL, &err));
    EXPECT_INVALID(reel_decoder_get_output_size(NULL, NULL, NULL, NULL, NULL, &err));
    EXPECT_INVALID(reel_decoder_save_index(NULL, NULL, &err));
    EXPECT_INVALID(reel_converter_create(NULL, &err));
    reel_converter *conv = NULL;
    CHECK_OK(reel_converter_create(&conv, &err));
    EXPECT_INVALID(reel_converter_run(conv, NULL, NULL, buf, fb, &err));
    EXPECT_INVALID(reel_converter_run(NULL, NULL, NULL, buf, fb, &err));
    reel_converter_destroy(&conv);
    CHECK(conv == NULL);
    reel_converter_destroy(&conv);
    reel_converter_destroy(NULL);
#undef EXPECT_INVALID
    CHECK_MSG(nfail == 0, "%d NULL-argument calls did not give REEL_E_INVALID_ARG with a message:%s", nfail, fails);

    /* n == 0 with NULL pointers is a valid empty request */
    reel_decode_stats st;
    CHECK_OK(reel_decoder_get_frames(dec, NULL, 0, NULL, NULL, 0, &st, &err));
    CHECK_EQ_INT(st.frames_requested, 0);
    CHECK_OK(reel_decoder_decode(dec, NULL, 0, visit_nothing, NULL, NULL, &err));

    /* no error record: no crash, same status */
    CHECK_EQ_INT(reel_decoder_get_frames(NULL, idx, 2, NULL, buf, fb * 2, NULL, NULL), REEL_E_INVALID_ARG);
    CHECK_EQ_INT(reel_decoder_open(NULL, src, NULL, NULL), REEL_E_INVALID_ARG);
    int64_t far = 1 << 20;
    CHECK_EQ_INT(reel_decoder_get_frames(dec, &far, 1, NULL, buf, fb, NULL, NULL), REEL_E_OUT_OF_RANGE);
    CHECK_EQ_INT(reel_decoder_get_frames(dec, idx, 2, NULL, buf, 1, NULL, NULL), REEL_E_BUFFER_TOO_SMALL);

    /* accessors on NULL */
    CHECK(reel_decoder_get_info(NULL) == NULL);
    CHECK(reel_decoder_get_name(NULL) == NULL);
    int64_t cnt = 5;
    CHECK(reel_decoder_get_frame_table(NULL, &cnt) == NULL);
    CHECK_EQ_INT(cnt, 0);
    cnt = 5;
    CHECK(reel_decoder_get_keyframes(NULL, &cnt) == NULL);
    CHECK_EQ_INT(cnt, 0);
    CHECK(reel_decoder_get_frame_table(dec, NULL) != NULL);
    CHECK_EQ_INT(reel_frame_get_index(NULL), -1);
    int fw = 1, fh = 1;
    reel_frame_get_size(NULL, &fw, &fh);
    CHECK_EQ_INT(fw, 0);
    reel_decoder_close(NULL);
    reel_decoder *none = NULL;
    reel_decoder_close(&none);
    reel_error_clear(NULL);
    reel_free(NULL);
    reel_decoder_default_settings(NULL);
    reel_transform_default_settings(NULL);

    /* still works */
    CHECK_OK(reel_decoder_get_frames(dec, idx, 2, NULL, buf, fb * 2, NULL, &err));
    CHECK_EQ_INT(tg_read_idx(buf + fb, SRC_W, SRC_H), 1);
    free(buf);
    reel_decoder_close(&dec);
}

/* ---------------------------------------------------------------- damaged files */

TEST(truncated_files_open_and_never_return_a_wrong_frame)
{
    watchdog(120);
    static const char *exts[] = { "mkv", "avi", "fs.mp4" };
    static const double fracs[] = { 0.5, 0.75 };
    for (int e = 0; e < 3; e++) {
        if (e == 2 && !harness_have_ffmpeg()) {
            printf("      note: no ffmpeg CLI, the faststart mp4 case is not run\n");
            continue;
        }
        const char *src = source_video(exts[e]);
        int64_t size = tg_file_size(src);
        for (int f = 0; f < 2; f++) {
            char name[64], path[4096];
            snprintf(name, sizeof name, "trunc%02d.%s", (int)(fracs[f] * 100), exts[e]);
            tg_path(path, sizeof path, name);
            int64_t keep = (int64_t)(size * fracs[f]);
            write_truncated(src, path, (size_t)keep);
            check_damaged(path, keep, keep, 1);
        }
    }
    alarm(0);
}

TEST(garbage_in_the_middle)
{
    watchdog(120);
    static const char *exts[] = { "mkv", "avi", "fs.mp4" };
    for (int e = 0; e < 3; e++) {
        if (e == 2 && !harness_have_ffmpeg()) {
            printf("      note: no ffmpeg CLI, the faststart mp4 case is not run\n");
            continue;
        }
        const char *src = source_video(exts[e]);
        size_t n;
        uint8_t *b = tg_read_file(src, &n);
        size_t at = n / 2 - 2048;
        uint64_t rng = 99 + (uint64_t)e;
        for (size_t i = at; i < at + 4096 && i < n; i++) {
            uint8_t x = (uint8_t)tg_rand(&rng);
            b[i] ^= x ? x : 0x5A;
        }
        char name[64], path[4096];
        snprintf(name, sizeof name, "garbage.%s", exts[e]);
        tg_path(path, sizeof path, name);
        tg_write_file(path, b, n);
        free(b);
        check_damaged(path, (int64_t)at, (int64_t)(at + 4096), 0);
    }
    alarm(0);
}

TEST(truncated_mp4_without_moov_fails_to_open)
{
    const char *src = source_video("mp4");
    int64_t size = tg_file_size(src);
    /* the generator writes moov at the end */
    size_t n;
    uint8_t *b = tg_read_file(src, &n);
    uint8_t *moov = memmem(b, n, "moov", 4), *mdat = memmem(b, n, "mdat", 4);
    CHECK_MSG(moov && mdat && mdat < moov, "%s: expected mdat before moov", src);
    int64_t moov_at = moov - b - 4;
    free(b);
    const int64_t cuts[] = { size / 2, size * 3 / 4, moov_at, moov_at + 40 };
    for (int k = 0; k < 4; k++) {
        char name[64], path[4096];
        snprintf(name, sizeof name, "nomoov%d.mp4", k);
        tg_path(path, sizeof path, name);
        write_truncated(src, path, (size_t)cuts[k]);
        reel_decoder *dec = NULL;
        reel_error err;
        reel_error_clear(&err);
        int r = reel_decoder_open(&dec, path, NULL, &err);
        CHECK_MSG(r == REEL_E_NOT_VIDEO || r == REEL_E_CORRUPT,
                  "mp4 cut at byte %lld of %lld (moov at %lld): open gave %d (%s) %s", (long long)cuts[k],
                  (long long)size, (long long)moov_at, r, reel_strerror(r), err.message);
        CHECK(dec == NULL);
        TG_CHECK_MSG_HAS(err, path);
    }
}

/* The last bytes of moov (trailing metadata, after the sample tables) cut
 * off: FFmpeg still reads every sample. reel may refuse the file, but if it
 * opens it, the table must be complete and every frame exact. The same
 * for a long GOP, where losing the first packets loses a whole GOP. */
TEST(mp4_with_truncated_trailing_metadata)
{
    for (int k = 0; k < 2; k++) {
        char srcp[4096], path[4096];
        const char *src;
        int64_t nf = SRC_N;
        if (k == 0) {
            src = source_video("mp4");
        } else {
            reel_synth_params p;
            tg_path(srcp, sizeof srcp, "long_gop.mp4");
            tg_params(&p, srcp, "h264", SRC_W, SRC_H, 300, 250, 3);
            tg_synth(&p);
            src = srcp;
            nf = 300;
        }
        int64_t size = tg_file_size(src);
        tg_path(path, sizeof path, k ? "cut16_long.mp4" : "cut16.mp4");
        write_truncated(src, path, (size_t)(size - 16));
        reel_decoder *dec = NULL;
        reel_error err;
        reel_error_clear(&err);
        int r = reel_decoder_open(&dec, path, NULL, &err);
        if (r != REEL_OK) {
            CHECK_MSG(r == REEL_E_NOT_VIDEO || r == REEL_E_CORRUPT, "%s: open gave %d (%s) %s", path, r,
                      reel_strerror(r), err.message);
            TG_CHECK_MSG_HAS(err, path);
            continue;
        }
        int64_t n = reel_decoder_get_info(dec)->num_frames;
        CHECK_MSG(n == nf,
                  "%s (sample tables intact, ffprobe reads %lld packets): opened with %lld frames, "
                  "index_source %d",
                  path, (long long)nf, (long long)n, reel_decoder_get_info(dec)->index_source);
        size_t fb = (size_t)SRC_W * SRC_H * 3, got = 0;
        uint8_t *buf = malloc(fb * (size_t)n);
        CHECK(buf != NULL);
        CHECK_OK(reel_decoder_get_range(dec, 0, n, 1, NULL, buf, fb * (size_t)n, &got, NULL, &err));
        for (int64_t i = 0; i < n; i++)
            CHECK_MSG(tg_read_idx(buf + (size_t)i * fb, SRC_W, SRC_H) == i, "%s: frame %lld embeds %lld", path,
                      (long long)i, (long long)tg_read_idx(buf + (size_t)i * fb, SRC_W, SRC_H));
        free(buf);
        reel_decoder_close(&dec);
    }
}

/* ---------------------------------------------------------------- fuzzing */

/* Byte range of the top-level mdat payload of an mp4, or 0 if none. */
static int mdat_range(const uint8_t *b, size_t n, size_t *start, size_t *end)
{
    size_t off = 0;
    while (off + 8 <= n) {
        uint64_t sz =
            ((uint64_t)b[off] << 24) | ((uint64_t)b[off + 1] << 16) | ((uint64_t)b[off + 2] << 8) | b[off + 3];
        size_t hdr = 8;
        if (sz == 1 && off + 16 <= n) {
            sz = 0;
            for (int i = 0; i < 8; i++) sz = (sz << 8) | b[off + 8 + i];
            hdr = 16;
        }
        if (sz == 0) sz = n - off;
        if (sz < hdr) return 0;
        if (!memcmp(b + off + 4, "mdat", 4)) {
            *start = off + hdr;
            *end = off + sz < n ? off + sz : n;
            return 1;
        }
        off += sz;
    }
    return 0;
}

/* Outcome of decoding one damaged copy. */
typedef struct fuzz_result {
    int opened, ok; /* open succeeded; get_range returned REEL_OK */
    int wrong;      /* REEL_OK frames embedding another frame's index */
    int64_t first_frame, first_embeds;
    int64_t corrupt_packets;
    int64_t num_frames; /* rows in the frame table */
} fuzz_result;

/* Opens a damaged copy under `policy` and decodes every frame in one call.
 * Statuses must be reel statuses and failures must name the file; a frame
 * returned under REEL_OK is counted wrong when it embeds a valid index
 * other than its own. strict: only sample payloads were damaged, so the
 * file must open and keep all nominal_n frames. */
/* Is frame i in a GOP that holds a damaged byte? Samples of this mp4 lie
 * back to back in mdat, so the sample holding byte b is the one with the
 * largest position <= b. A GOP runs from a keyframe to the next one in
 * decode order (closed GOPs: damage cannot reach past them). */
static int frame_in_damaged_gop(const reel_frame_entry *ft, int64_t n, int64_t i, const size_t *flips, int nflips)
{
    int64_t *pos = malloc((size_t)n * sizeof *pos);
    int *key = malloc((size_t)n * sizeof *key);
    CHECK(pos && key);
    for (int64_t f = 0; f < n; f++) {
        pos[ft[f].decode_order] = ft[f].pos;
        key[ft[f].decode_order] = (ft[f].flags & REEL_FRAME_KEY) != 0;
    }
    int64_t d = ft[i].decode_order, g0 = d, g1 = d;
    while (g0 > 0 && !key[g0]) g0--;
    while (g1 + 1 < n && !key[g1 + 1]) g1++;
    int hit = 0;
    for (int k = 0; k < nflips && !hit; k++) {
        int64_t holder = -1, best = -1;
        for (int64_t x = 0; x < n; x++)
            if (pos[x] <= (int64_t)flips[k] && pos[x] > best) {
                best = pos[x];
                holder = x;
            }
        hit = holder >= g0 && holder <= g1;
    }
    free(pos);
    free(key);
    return hit;
}

static fuzz_result fuzz_one_at(const char *path, int policy, int strict, const size_t *flips, int nflips, int iter);

static fuzz_result fuzz_one(const char *path, int policy, int strict, int64_t nominal_n, int iter)
{
    (void)nominal_n;
    return fuzz_one_at(path, policy, strict, NULL, 0, iter);
}

/* flips: the damaged byte offsets when known (then a wrong frame counts
 * only outside the damaged GOPs: inside them the codec may conceal with a
 * neighbour's pixels without noticing, which no decoder can rule out). */
static fuzz_result fuzz_one_at(const char *path, int policy, int strict, const size_t *flips, int nflips, int iter)
{
    fuzz_result fr = { 0, 0, 0, -1, -1, 0, -1 };
    reel_decoder *dec = NULL;
    reel_decoder_settings s;
    reel_error err;
    reel_error_clear(&err);
    reel_decoder_default_settings(&s);
    s.corrupt_policy = policy;
    int r = reel_decoder_open(&dec, path, &s, &err);
    CHECK_MSG(tg_is_reel_status(r), "iteration %d policy %d: open returned %d, not a reel status", iter, policy, r);
    if (r != REEL_OK) {
        CHECK_MSG(!strict, "iteration %d policy %d: open failed (%d %s) although only sample data was damaged", iter,
                  policy, r, err.message);
        CHECK(dec == NULL);
        TG_CHECK_MSG_HAS(err, path);
        return fr;
    }
    fr.opened = 1;
    const reel_video_info *in = reel_decoder_get_info(dec);
    int64_t n = in->num_frames;
    fr.num_frames = n;
    /* strict: a table with fewer rows shifts every later index; the frames
     * then embed other indices and are counted below */
    (void)strict;
    int w = in->width, h = in->height;
    if (w <= 0 || h <= 0 || w > 4096 || h > 4096 || n <= 0 || n > 100000) {
        reel_decoder_close(&dec);
        return fr;
    }
    size_t fb = (size_t)w * h * 3, got = 0;
    uint8_t *buf = malloc(fb * (size_t)n);
    CHECK(buf != NULL);
    reel_decode_stats st;
    reel_error_clear(&err);
    r = reel_decoder_get_range(dec, 0, n, 1, NULL, buf, fb * (size_t)n, &got, &st, &err);
    CHECK_MSG(tg_is_reel_status(r), "iteration %d policy %d: get_range returned %d", iter, policy, r);
    if (r == REEL_OK) {
        fr.ok = 1;
        fr.corrupt_packets = st.corrupt_packets;
        CHECK_EQ_INT(got, n);
        for (int64_t i = 0; i < n; i++) {
            int64_t e = tg_read_idx(buf + (size_t)i * fb, w, h);
            if (e == i) continue;
            if (nflips) {
                /* outside the damaged GOPs every frame must be exactly itself */
                int64_t nt;
                const reel_frame_entry *ft = reel_decoder_get_frame_table(dec, &nt);
                if (frame_in_damaged_gop(ft, nt, i, flips, nflips)) continue;
            } else if (e == -1) {
                continue;
            }
            if (!fr.wrong++) {
                fr.first_frame = i;
                fr.first_embeds = e;
            }
        }
    } else {
        TG_CHECK_MSG_HAS(err, path);
    }
    /* a request after a failure still runs */
    int64_t zero = 0;
    r = reel_decoder_get_frames(dec, &zero, 1, NULL, buf, fb, NULL, &err);
    CHECK(tg_is_reel_status(r));
    free(buf);
    reel_decoder_close(&dec);
    return fr;
}

/* Tally of one policy over all iterations. */
typedef struct fuzz_tally {
    int runs, opened, ok, bad_iters, bad_frames;
    char first[3][200];
} fuzz_tally;

static void tally(fuzz_tally *t, const fuzz_result *fr, int iter, const char *what)
{
    t->runs++;
    t->opened += fr->opened;
    t->ok += fr->ok;
    if (fr->wrong) {
        if (t->bad_iters < 3)
            snprintf(t->first[t->bad_iters], sizeof t->first[0],
                     "iteration %d%s: frame %lld embeds %lld (%d wrong frames, corrupt_packets %lld, "
                     "table rows %lld)",
                     iter, what, (long long)fr->first_frame, (long long)fr->first_embeds, fr->wrong,
                     (long long)fr->corrupt_packets, (long long)fr->num_frames);
        t->bad_iters++;
        t->bad_frames += fr->wrong;
    }
}

static void tally_print(const fuzz_tally *t, const char *policy)
{
    printf("      %s: %d runs, %d opened, %d REEL_OK, %d with a wrong frame (%d frames)\n", policy, t->runs, t->opened,
           t->ok, t->bad_iters, t->bad_frames);
    for (int k = 0; k < t->bad_iters && k < 3; k++) printf("        %s\n", t->first[k]);
}

/* 200 copies of a small mp4 with bytes flipped inside the sample data
 * (mdat) only: the frame table (moov) is intact, so under either policy
 * damage stays inside the GOPs that hold it: every frame of an undamaged
 * GOP comes back as exactly itself (a shifted index would break this). */
TEST(fuzz_flipped_bytes)
{
    char src[4096], path[4096];
    reel_synth_params p;
    tg_path(src, sizeof src, "fuzz_src.mp4");
    tg_params(&p, src, "h264", 64, 48, 24, 8, 2);
    tg_synth(&p);
    size_t n;
    uint8_t *orig = tg_read_file(src, &n);
    size_t ms = 0, me = 0;
    CHECK_MSG(mdat_range(orig, n, &ms, &me) && me > ms, "%s: no mdat", src);
    uint8_t *b = malloc(n);
    CHECK(b != NULL);
    tg_path(path, sizeof path, "fuzz.mp4");
    uint64_t rng = 20240601;
    fuzz_tally tf, ts;
    memset(&tf, 0, sizeof tf);
    memset(&ts, 0, sizeof ts);
    watchdog(240);
    for (int it = 0; it < 200; it++) {
        static char step[64];
        snprintf(step, sizeof step, "fuzz_flipped_bytes iteration %d", it);
        g_step = step;
        memcpy(b, orig, n);
        int flips = 1 + (int)tg_rand_below(&rng, 8);
        size_t where[8];
        for (int k = 0; k < flips; k++) {
            size_t at = ms + (size_t)tg_rand_below(&rng, (int64_t)(me - ms));
            uint8_t x = (uint8_t)tg_rand(&rng);
            b[at] ^= x ? x : 1;
            where[k] = at;
        }
        tg_write_file(path, b, n);
        for (int pol = REEL_CORRUPT_FAIL; pol <= REEL_CORRUPT_SKIP; pol++) {
            fuzz_tally *t = pol == REEL_CORRUPT_FAIL ? &tf : &ts;
            fuzz_result fr = fuzz_one_at(path, pol, 1, where, flips, it);
            if (fr.wrong && t->bad_iters < 3) {
                /* keep the first offenders for REEL_KEEP_TMP=1 */
                char keep[4096], name[64];
                snprintf(name, sizeof name, "fuzz_wrong_%s_%03d.mp4", pol ? "skip" : "fail", it);
                tg_copy_file(path, tg_path(keep, sizeof keep, name));
            }
            tally(t, &fr, it, "");
        }
    }
    alarm(0);
    free(b);
    free(orig);
    if (tf.bad_iters || ts.bad_iters) {
        tally_print(&tf, "REEL_CORRUPT_FAIL");
        tally_print(&ts, "REEL_CORRUPT_SKIP");
    }
    CHECK_MSG(tf.bad_iters == 0,
              "REEL_CORRUPT_FAIL: %d of 200 damaged copies returned REEL_OK with a frame "
              "outside the damaged GOPs that is not itself; first: %s",
              tf.bad_iters, tf.first[0]);
    CHECK_MSG(ts.bad_iters == 0,
              "REEL_CORRUPT_SKIP: %d of 200 damaged copies returned REEL_OK with a frame "
              "outside the damaged GOPs that is not itself; first: %s",
              ts.bad_iters, ts.first[0]);
}

/* Flips anywhere (headers, indexes, timestamps too) in mkv, avi and mp4:
 * any status may come back, but no crash, no hang, and only reel statuses.
 * Wrong frames are reported, not asserted: damaged timestamps legitimately
 * reorder the table. */
TEST(fuzz_flipped_bytes_anywhere)
{
    static const char *exts[] = { "mkv", "avi", "mp4" };
    char src[3][4096], path[4096];
    uint8_t *orig[3];
    size_t n[3];
    for (int e = 0; e < 3; e++) {
        char name[32];
        reel_synth_params p;
        snprintf(name, sizeof name, "fuzz_any.%s", exts[e]);
        tg_path(src[e], sizeof src[e], name);
        tg_params(&p, src[e], "h264", 64, 48, 24, 8, 2);
        tg_synth(&p);
        orig[e] = tg_read_file(src[e], &n[e]);
    }
    uint64_t rng = 777;
    fuzz_tally t[3][2];
    memset(t, 0, sizeof t);
    watchdog(240);
    for (int it = 0; it < 150; it++) {
        static char step[64];
        int e = it % 3;
        snprintf(step, sizeof step, "fuzz_flipped_bytes_anywhere iteration %d (%s)", it, exts[e]);
        g_step = step;
        uint8_t *b = malloc(n[e]);
        CHECK(b != NULL);
        memcpy(b, orig[e], n[e]);
        int flips = 1 + (int)tg_rand_below(&rng, 6);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)tg_rand_below(&rng, (int64_t)n[e]);
            uint8_t x = (uint8_t)tg_rand(&rng);
            b[at] ^= x ? x : 0x80;
        }
        char name[32];
        snprintf(name, sizeof name, "fuzz_any_copy.%s", exts[e]);
        tg_path(path, sizeof path, name);
        tg_write_file(path, b, n[e]);
        free(b);
        for (int pol = 0; pol < 2; pol++) {
            fuzz_result fr = fuzz_one(path, pol, 0, 24, it);
            tally(&t[e][pol], &fr, it, "");
        }
    }
    alarm(0);
    for (int e = 0; e < 3; e++)
        for (int pol = 0; pol < 2; pol++)
            if (t[e][pol].bad_iters) {
                char label[64];
                snprintf(label, sizeof label, "note: .%s %s", exts[e], pol ? "SKIP" : "FAIL");
                tally_print(&t[e][pol], label);
            }
    for (int e = 0; e < 3; e++) free(orig[e]);
}

/* ---------------------------------------------------------------- the CLI */

/* REEL_CLI, or skip. */
static const char *cli_path(void)
{
    const char *cli = harness_env("REEL_CLI", NULL);
    if (!cli) harness_skip("REEL_CLI is not set");
    if (access(cli, X_OK) != 0) {
        static char why[4200];
        snprintf(why, sizeof why, "REEL_CLI=%s is not an executable (CLI not built?)", cli);
        harness_skip(why);
    }
    return cli;
}

/* Runs `cli args...` (args already quoted) with stdout/stderr to files. */
static int run_cli(const char *cli, const char *args, const char *out, const char *errf)
{
    char cmd[16384] = "";
    tg_shell_append_quoted(cmd, sizeof cmd, cli);
    strcat(cmd, " ");
    strncat(cmd, args, sizeof cmd - strlen(cmd) - 1);
    strcat(cmd, " >");
    tg_shell_append_quoted(cmd, sizeof cmd, out);
    strcat(cmd, " 2>");
    tg_shell_append_quoted(cmd, sizeof cmd, errf);
    strcat(cmd, " </dev/null");
    return tg_system(cmd);
}

static char *slurp(const char *path)
{
    size_t n;
    uint8_t *b = tg_read_file(path, &n);
    b[n] = 0;
    return (char *)b;
}

/* The integer after "key": in a JSON text, or LLONG_MIN. */
static long long json_int(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(json, pat);
    if (!p) return LLONG_MIN;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p != ':') return LLONG_MIN;
    p++;
    char *end;
    long long v = strtoll(p, &end, 10);
    return end == p ? LLONG_MIN : v;
}

TEST(cli_exit_statuses_and_info_json)
{
    const char *cli = cli_path();
    char out[4096], errf[4096], missing[4096], args[12288];
    tg_path(out, sizeof out, "cli.out");
    tg_path(errf, sizeof errf, "cli.err");
    tg_path(missing, sizeof missing, "missing.mp4");

    /* a missing file: exit 1, the path on stderr */
    args[0] = 0;
    strcat(args, "frames ");
    tg_shell_append_quoted(args, sizeof args, missing);
    strcat(args, " --at 0 --raw /dev/null");
    int rc = run_cli(cli, args, out, errf);
    char *e = slurp(errf);
    CHECK_MSG(rc == 1, "reel %s: exit %d, expected 1; stderr: %s", args, rc, e);
    CHECK_MSG(tg_contains(e, missing), "reel %s: stderr does not name the file: %s", args, e);
    free(e);

    /* bad usage: exit 2 */
    const char *src = source_video("mkv");
    static const char *bad[] = { "frames", "frames --no-such-option", "frames SRC --no-such-option", "info",
                                 "no-such-command" };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        args[0] = 0;
        const char *s = strstr(bad[k], "SRC");
        if (s) {
            strncat(args, bad[k], (size_t)(s - bad[k]));
            tg_shell_append_quoted(args, sizeof args, src);
            strcat(args, s + 3);
        } else {
            strcat(args, bad[k]);
        }
        rc = run_cli(cli, args, out, errf);
        e = slurp(errf);
        CHECK_MSG(rc == 2, "reel %s: exit %d, expected 2 (usage); stderr: %s", args, rc, e);
        CHECK_MSG(e[0] != '\0', "reel %s: nothing on stderr", args);
        free(e);
    }

    /* info --json */
    args[0] = 0;
    strcat(args, "info --json ");
    tg_shell_append_quoted(args, sizeof args, src);
    rc = run_cli(cli, args, out, errf);
    char *j = slurp(out);
    e = slurp(errf);
    CHECK_MSG(rc == 0, "reel %s: exit %d; stderr: %s", args, rc, e);
    static const char *fields[] = { "path",     "codec",      "width",     "height",   "fps",
                                    "duration", "num_frames", "keyframes", "rotation", "pix_fmt" };
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        char pat[64];
        snprintf(pat, sizeof pat, "\"%s\"", fields[k]);
        CHECK_MSG(tg_contains(j, pat), "reel info --json: no field %s in: %s", pat, j);
    }
    CHECK_MSG(tg_contains(j, src), "reel info --json does not hold the path: %s", j);
    CHECK_MSG(tg_contains(j, "\"h264\""), "reel info --json: codec is not \"h264\": %s", j);
    CHECK_MSG(tg_contains(j, "\"yuv420p\""), "reel info --json: pix_fmt is not \"yuv420p\": %s", j);
    CHECK_EQ_INT(json_int(j, "width"), SRC_W);
    CHECK_EQ_INT(json_int(j, "height"), SRC_H);
    CHECK_EQ_INT(json_int(j, "num_frames"), SRC_N);
    CHECK_EQ_INT(json_int(j, "rotation"), 0);
    const char *first = strchr(j, '{'), *last = strrchr(j, '}');
    CHECK_MSG(first && last && first < last, "reel info --json: not a JSON object: %s", j);
    free(j);
    free(e);

    /* frames that exist: exit 0, the right frames in request order */
    char raw[4096];
    tg_path(raw, sizeof raw, "cli.rgb");
    args[0] = 0;
    strcat(args, "frames ");
    tg_shell_append_quoted(args, sizeof args, src);
    strcat(args, " --at 3,-1,3,77 --raw ");
    tg_shell_append_quoted(args, sizeof args, raw);
    rc = run_cli(cli, args, out, errf);
    e = slurp(errf);
    CHECK_MSG(rc == 0, "reel %s: exit %d; stderr: %s", args, rc, e);
    free(e);
    {
        size_t fb = (size_t)SRC_W * SRC_H * 3, n;
        uint8_t *b = tg_read_file(raw, &n);
        CHECK_EQ_INT(n, 4 * fb);
        const int64_t want[4] = { 3, SRC_N - 1, 3, 77 };
        for (int k = 0; k < 4; k++) CHECK_EQ_INT(tg_read_idx(b + k * fb, SRC_W, SRC_H), want[k]);
        free(b);
    }
    /* an index past the end: exit 1, the path on stderr */
    args[0] = 0;
    strcat(args, "frames ");
    tg_shell_append_quoted(args, sizeof args, src);
    strcat(args, " --at 5000 --raw /dev/null");
    rc = run_cli(cli, args, out, errf);
    e = slurp(errf);
    CHECK_MSG(rc == 1, "reel %s: exit %d, expected 1; stderr: %s", args, rc, e);
    CHECK_MSG(tg_contains(e, src), "reel %s: stderr does not name the file: %s", args, e);
    free(e);

    /* info on a missing file: exit 1, path on stderr */
    args[0] = 0;
    strcat(args, "info --json ");
    tg_shell_append_quoted(args, sizeof args, missing);
    rc = run_cli(cli, args, out, errf);
    e = slurp(errf);
    CHECK_MSG(rc == 1, "reel %s: exit %d, expected 1; stderr: %s", args, rc, e);
    CHECK_MSG(tg_contains(e, missing), "reel %s: stderr does not name the file: %s", args, e);
    free(e);
}
