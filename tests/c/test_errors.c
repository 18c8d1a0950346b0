/* test_errors.c: every failure gives the right status and a message that
 * names the file; damaged files (truncated, overwritten) never crash, hang,
 * or return a frame other than the one asked for; the CLI's exit statuses.
 * Bit flips at random: test_damage_fuzz.c. */
#include "damage_common.h"

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

/* The opens check their settings (the rules the loader applies to its
 * embedded decoder settings too), naming the field. */
TEST(bad_decoder_settings_are_invalid_arg)
{
    const char *src = source_video("mkv");
    static const char data[16] = "not read at all";
    reel_decoder *dec = NULL;
    reel_decoder_settings s;
    reel_error err;
    reel_decoder_default_settings(&s);
    s.threads = -2;
    CHECK_STATUS(reel_decoder_open(&dec, src, &s, &err), REEL_E_INVALID_ARG);
    CHECK(dec == NULL);
    TG_CHECK_MSG_HAS(err, "settings.threads must be >= 0 (got -2)");
    reel_decoder_default_settings(&s);
    s.gop_contexts = -2;
    CHECK_STATUS(reel_decoder_open_memory(&dec, data, sizeof data, "m", &s, &err), REEL_E_INVALID_ARG);
    TG_CHECK_MSG_HAS(err, "settings.gop_contexts must be >= -1");
    reel_decoder_default_settings(&s);
    s.corrupt_policy = (reel_corrupt_policy)2;
    CHECK_STATUS(reel_decoder_open(&dec, src, &s, &err), REEL_E_INVALID_ARG);
    TG_CHECK_MSG_HAS(err, "settings.corrupt_policy must be in [0, 1] (got 2)");
    reel_decoder_default_settings(&s);
    s.stream_index = -3;
    CHECK_STATUS(reel_decoder_open(&dec, src, &s, &err), REEL_E_INVALID_ARG);
    TG_CHECK_MSG_HAS(err, "settings.stream_index");
    reel_decoder_default_settings(&s);
    s.check_keyframes = 2;
    CHECK_STATUS(reel_decoder_open(&dec, src, &s, &err), REEL_E_INVALID_ARG);
    TG_CHECK_MSG_HAS(err, "settings.check_keyframes must be in [0, 1]");
    /* the documented range opens */
    reel_decoder_default_settings(&s);
    s.threads = 0;
    s.gop_contexts = REEL_GOP_CONTEXTS_AUTO;
    s.corrupt_policy = REEL_CORRUPT_SKIP;
    s.index_mode = REEL_INDEX_OFF;
    CHECK_OK(reel_decoder_open(&dec, src, &s, &err));
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
    bads[nb].pixels.dtype = 9;
    what[nb++] = "unknown dtype";
    bads[nb].layout = 5;
    what[nb++] = "unknown layout";
    bads[nb].pixels.filter = -1;
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
        CHECK_STATUS(reel_transform_get_output_size(&bads[k], SRC_W, SRC_H, NULL, NULL, &bytes, NULL),
                     REEL_E_INVALID_ARG);
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
    t.pixels.dtype = REEL_DTYPE_FLOAT32;
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
    EXPECT_INVALID(reel_decoder_get_index_at_time(NULL, 0.0, &ix, &err));
    EXPECT_INVALID(reel_decoder_get_index_at_time(dec, 0.0, NULL, &err));
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
    CHECK_STATUS(reel_frame_get_size(NULL, &fw, &fh, NULL), REEL_E_INVALID_ARG);
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
    CHECK_MSG(tg_contains(j, "\"rotation\": null"),
              "reel info --json: rotation of a video without a display matrix "
              "is not null: %s",
              j);
    CHECK_EQ_INT(json_int(j, "source_width"), SRC_W);
    CHECK_EQ_INT(json_int(j, "source_height"), SRC_H);
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
