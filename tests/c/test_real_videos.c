/* test_real_videos.c: reel against real-world videos and FFmpeg itself.
 *
 * Every video in $REEL_SHARED_VIDEOS/MANIFEST.tsv is opened and checked
 * against the manifest (frame count, codec, size, rotation), and frames
 * fetched by reel are compared byte for byte with what the ffmpeg CLI makes
 * of the same file:
 *
 *   ffmpeg -noautorotate -i FILE -map 0:S -fps_mode passthrough
 *          -vf "select='eq(n\,K1)+eq(n\,K2)+...'[,FILTERS]"
 *          -pix_fmt rgb24 -f rawvideo -
 *
 * (select keeps only the frames a test needs, in index order, so nothing
 * big is ever held in memory). Further tests here cover timestamps; the
 * frame tables ffprobe published with torchcodec's test videos, torchcodec's
 * own reference frames (REFS.md), fused and after-RGB crop+resize against
 * ffmpeg's crop/scale filters, and rotation against ffmpeg's autorotate are
 * in test_real_videos_pixels.c; the helpers both use in real_common.h.
 *
 * Tests that iterate over several videos run each one as a nested body and
 * report every failing video at the end, so one bad file does not hide
 * another. Nothing is printed on success; on failure the details go to
 * stderr and the summary into the test's failure message.
 *
 * REEL_TEST_VERBOSE=1 prints one line per video with its time (stderr).
 *
 * Needs the shared videos (skips when $REEL_SHARED_VIDEOS has no
 * MANIFEST.tsv) and, for most tests, the ffmpeg CLI (skips without it). */
#include "real_common.h"

static void body_metadata(void)
{
    const mf_row *m = manifest_row(g_cur_file);
    reel_decoder *dec = open_video(m->file, -1, 2);
    const reel_video_info *info = reel_decoder_get_info(dec);
    CHECK_MSG(info->num_frames == m->nb_frames, "num_frames %lld, manifest nb_frames %lld", (long long)info->num_frames,
              (long long)m->nb_frames);
    CHECK_MSG(!strcmp(info->codec, m->codec), "codec \"%s\", manifest \"%s\"", info->codec, m->codec);
    /* the manifest has ffprobe's stream size: reel's source size; width x
     * height is the size after the display rotation (decoder.h) */
    CHECK_MSG(info->source_width == m->width && info->source_height == m->height, "source size %dx%d, manifest %dx%d",
              info->source_width, info->source_height, m->width, m->height);
    const int quarter = m->rotation == 90 || m->rotation == 270;
    CHECK_MSG(info->width == (quarter ? m->height : m->width) && info->height == (quarter ? m->width : m->height),
              "display size %dx%d, manifest %dx%d rotated %d", info->width, info->height, m->width, m->height,
              m->rotation);
    CHECK_MSG(info->has_rotation || info->rotation == 0, "rotation %d without a display matrix", info->rotation);
    /* Same angle modulo 360: the manifest has ffprobe's value (e.g. -90);
     * decoder.h documents 0/90/180/270. Either spelling passes here. */
    CHECK_MSG(norm_rotation(info->rotation) == m->rotation, "rotation %d, manifest %d (as 0..359)", info->rotation,
              m->rotation);
    int64_t count = 0;
    const reel_frame_entry *tab = reel_decoder_get_frame_table(dec, &count);
    CHECK_MSG(tab != NULL && count == info->num_frames, "frame table has %lld rows, want %lld", (long long)count,
              (long long)info->num_frames);
    reel_decoder_close(&dec);
}

TEST(manifest_metadata_matches)
{
    size_t n;
    const char **names = manifest_names(&n);
    reel_set_ffmpeg_log_level(0);
    for_each_video(names, n, body_metadata, "metadata");
}

/* av1-1-b8-03-sizeup.ivf is 352x288 for frames 0-9 and 1280x720 for 10-19.
 * Asked for no resize, reel rescales frames of another size to the stream's
 * size in one bicubic YUV->RGB24 pass, which is what the plain ffmpeg CLI
 * does (ffmpeg 5.1 rebuilds its filter graph at the size change and appends
 * a bicubic scale to the output size). So all 20 frames are compared with
 * the plain command, no filter. */

/* Random access by index: first, last, ~8 random, repeated and unsorted. */
static void body_frames_by_index(void)
{
    const mf_row *m = manifest_row(g_cur_file);
    int sizeup = !strcmp(m->file, "av1-1-b8-03-sizeup.ivf");
    need_ffmpeg();
    reel_decoder *dec = open_video(m->file, -1, g_cur_threads);
    const reel_video_info *info = reel_decoder_get_info(dec);
    int64_t n = info->num_frames;
    CHECK_MSG(n == m->nb_frames, "num_frames %lld, manifest %lld", (long long)n, (long long)m->nb_frames);

    int64_t req[64];
    size_t nreq = 0;
    if (sizeup) {
        /* every frame (the size changes at 10), shuffled, with repeats */
        static const int64_t order[] = { 19, 0, 10, 9,  3,  11, -1, 5,  1,  2,  4, 6,
                                         7,  8, 12, 13, 14, 15, 16, 17, 18, 10, 9, -20 };
        CHECK_EQ_INT(n, 20);
        for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) req[nreq++] = order[i];
    } else {
        uint64_t s = seed_for(m->file, (uint64_t)g_cur_threads);
        int64_t r[8];
        for (int i = 0; i < 8; i++) r[i] = (int64_t)(rng_next(&s) % (uint64_t)n);
        int64_t pat[] = { r[3], 0,    r[1], r[3], -1,   r[2], r[1], r[0],
                          r[4], r[5], r[7], -1,   r[6], 0,    r[2], n >= 2 ? -2 : 0,
                          -n };
        for (size_t i = 0; i < sizeof pat / sizeof pat[0]; i++) req[nreq++] = pat[i];
    }
    int64_t resolved[64];
    for (size_t i = 0; i < nreq; i++) resolved[i] = req[i] < 0 ? req[i] + n : req[i];

    reel_transform t;
    reel_transform_default_settings(&t);
    t.pixels.apply_rotation = 0; /* the stream's pixels, as ffmpeg -noautorotate */
    int w, h;
    size_t fb;
    uint8_t *got = reel_frames(dec, req, nreq, &t, &w, &h, &fb);
    CHECK_MSG(w == info->source_width && h == info->source_height && fb == (size_t)w * h * 3,
              "output %dx%d (%zu bytes), stream %dx%d", w, h, fb, info->source_width, info->source_height);

    size_t nu;
    int64_t *u = sorted_unique(resolved, nreq, &nu);
    /* all frames wanted: no select (its frame counter restarts when ffmpeg
     * rebuilds the filter graph at a mid-stream size change) */
    ff_job j = { .file = m->file,
                 .stream = info->stream_index,
                 .threads = g_cur_threads,
                 .idx = (int64_t)nu == n ? NULL : u,
                 .n_idx = nu,
                 .n_frames = nu,
                 .filters = NULL,
                 .out_w = w,
                 .out_h = h };
    uint8_t *want = ffmpeg_frames(&j);
    char what[64];
    snprintf(what, sizeof what, "by-index (threads %d)", g_cur_threads);
    cmp_state cs = { 0 };
    for (size_t i = 0; i < nreq; i++)
        check_frame(&cs, what, m->file, resolved[i], i, got + i * fb, want + find_pos(u, nu, resolved[i]) * fb, w, h);
    cmp_finish(&cs);
    free(want);
    free(u);
    free(got);
    reel_decoder_close(&dec);
}

TEST(frames_by_index_match_ffmpeg)
{
    size_t n;
    const char **names = manifest_names(&n);
    need_ffmpeg();
    reel_set_ffmpeg_log_level(0);
    g_cur_threads = 2;
    for_each_video(names, n, body_frames_by_index, "frames by index, 2 threads");
}

TEST(frames_by_index_match_ffmpeg_one_thread)
{
    static const char *const names[] = { "interlaced_crop.mp4" }; /* open GOP, B-frames */
    (void)videos_dir();
    need_ffmpeg();
    reel_set_ffmpeg_log_level(0);
    g_cur_threads = 1;
    for_each_video(names, 1, body_frames_by_index, "frames by index, 1 thread");
    g_cur_threads = 2;
}

/* Every GOP entered cold: for each keyframe K after the first, a fresh
 * decoder asks for K, the middle of its GOP and the GOP's last frame, so the
 * decode starts with a seek to K. Each frame must equal ffmpeg's decode from
 * the start of the file. Catches keyframes that are not clean starting
 * points (cockatoo.mp4: decoding from its IDRs at 76 and 145 gives errors,
 * some unflagged under frame threading): reel must notice and decode
 * through them from an earlier keyframe. */
static void body_keyframe_starts(void)
{
    const mf_row *m = manifest_row(g_cur_file);
    need_ffmpeg();
    if (!strcmp(m->file, "av1-1-b8-03-sizeup.ivf"))
        harness_skip("its second keyframe changes the frame size (every frame is checked by index)");
    reel_decoder *dec = open_video(m->file, -1, g_cur_threads);
    const reel_video_info *info = reel_decoder_get_info(dec);
    int64_t nk = 0, n = info->num_frames;
    const int64_t *keys = reel_decoder_get_keyframes(dec, &nk);
    if (nk < 2) {
        reel_decoder_close(&dec);
        harness_skip("one keyframe: no GOP to enter cold");
    }
    int64_t *req = xmalloc((size_t)nk * 3 * sizeof *req);
    size_t nreq = 0;
    size_t first_of[1024];
    int64_t step = nk > 12 ? (nk + 11) / 12 : 1; /* at most 12 GOPs per video (ffmpeg select grows long) */
    size_t ngop = 0;
    for (int64_t k = 1; k < nk && ngop < 1024; k += step) {
        int64_t a = keys[k], b = (k + 1 < nk ? keys[k + 1] : n) - 1;
        first_of[ngop++] = nreq;
        req[nreq++] = a;
        if (b > a) req[nreq++] = a + (b - a) / 2;
        if (b > a + 1) req[nreq++] = b;
    }
    first_of[ngop] = nreq;
    const int stream = info->stream_index, width = info->source_width, height = info->source_height;
    reel_decoder_close(&dec); /* info and keys belong to it */

    size_t nu = 0;
    int64_t *u = sorted_unique(req, nreq, &nu);
    ff_job j = { .file = m->file,
                 .stream = stream,
                 .threads = 2,
                 .idx = u,
                 .n_idx = nu,
                 .n_frames = nu,
                 .out_w = width,
                 .out_h = height };
    uint8_t *want = ffmpeg_frames(&j);
    char what[64];
    snprintf(what, sizeof what, "cold GOP entry (threads %d)", g_cur_threads);
    cmp_state cs = { 0 };
    int64_t restarts = 0;
    for (size_t g = 0; g < ngop; g++) {
        reel_decoder *d = open_video(m->file, -1, g_cur_threads);
        size_t cnt = first_of[g + 1] - first_of[g];
        int w, h;
        size_t fb;
        reel_error err;
        reel_error_clear(&err);
        reel_transform t; /* every video of the manifest: the stream's pixels, as ffmpeg -noautorotate */
        reel_transform_default_settings(&t);
        t.pixels.apply_rotation = 0;
        CHECK_OK(reel_decoder_get_output_size(d, &t, &w, &h, &fb, &err));
        uint8_t *got = xmalloc(cnt * fb);
        reel_decode_stats st;
        int r = reel_decoder_get_frames(d, req + first_of[g], cnt, &t, got, cnt * fb, &st, &err);
        CHECK_MSG(r == REEL_OK, "frames from keyframe %lld: %d %s", (long long)req[first_of[g]], r, err.message);
        restarts += st.key_restarts;
        for (size_t i = 0; i < cnt; i++) {
            int64_t f = req[first_of[g] + i];
            check_frame(&cs, what, m->file, f, i, got + i * fb, want + find_pos(u, nu, f) * fb, w, h);
        }
        free(got);
        reel_decoder_close(&d);
    }
    cmp_finish(&cs);
    if (!strcmp(m->file, "cockatoo.mp4"))
        CHECK_MSG(restarts > 0, "cockatoo.mp4's IDRs at 76 and 145 are not clean starting points, yet no restart");
    free(want);
    free(u);
    free(req);
}

TEST(cold_gop_entry_matches_ffmpeg_from_the_start)
{
    size_t n;
    const char **names = manifest_names(&n);
    need_ffmpeg();
    reel_set_ffmpeg_log_level(0);
    for (int threads = 1; threads <= 2; threads++) {
        g_cur_threads = threads;
        for_each_video(names, n, body_keyframe_starts,
                       threads == 1 ? "cold GOP entry, 1 thread" : "cold GOP entry, 2 threads");
    }
    g_cur_threads = 2;
}

/* get_range(0, n, 3) against ffmpeg's every third frame. */
static void body_range(void)
{
    const mf_row *m = manifest_row(g_cur_file);
    reel_decoder *dec = open_video(m->file, -1, 2);
    const reel_video_info *info = reel_decoder_get_info(dec);
    int64_t n = info->num_frames;
    int w, h;
    size_t fb;
    reel_error err;
    reel_error_clear(&err);
    CHECK_OK(reel_decoder_get_output_size(dec, NULL, &w, &h, &fb, &err));
    size_t expect = (size_t)((n + 2) / 3);
    uint8_t *got = xmalloc(expect * fb);
    size_t nout = 0;
    int r = reel_decoder_get_range(dec, 0, n, 3, NULL, got, expect * fb, &nout, NULL, &err);
    CHECK_MSG(r == REEL_OK, "get_range(0, %lld, 3): %d %s", (long long)n, r, err.message);
    CHECK_EQ_INT(nout, expect);
    ff_job j = { .file = m->file,
                 .stream = info->stream_index,
                 .threads = 2,
                 .select = "not(mod(n\\,3))",
                 .n_frames = expect,
                 .out_w = w,
                 .out_h = h };
    uint8_t *want = ffmpeg_frames(&j);
    cmp_state cs = { 0 };
    for (size_t i = 0; i < expect; i++)
        check_frame(&cs, "get_range(0,n,3)", m->file, (int64_t)(3 * i), i, got + i * fb, want + i * fb, w, h);
    cmp_finish(&cs);
    free(want);
    free(got);
    reel_decoder_close(&dec);
}

TEST(range_step3_matches_ffmpeg)
{
    static const char *const names[] = { "carphone_pristine.mp4", "foreman_hevc.mp4", "xmp480qt.mov",
                                         "interlaced_crop.mp4" };
    (void)videos_dir();
    need_ffmpeg();
    reel_set_ffmpeg_log_level(0);
    for_each_video(names, sizeof names / sizeof names[0], body_range, "get_range");
}

/* ================================================================ 2. timestamps */


static void body_times(void)
{
    const mf_row *m = manifest_row(g_cur_file);
    reel_decoder *dec = open_video(m->file, -1, 2);
    const reel_video_info *info = reel_decoder_get_info(dec);
    int64_t n = 0;
    const reel_frame_entry *tab = reel_decoder_get_frame_table(dec, &n);
    CHECK(tab != NULL && n == info->num_frames && n > 0);

    /* first, last and 6 random frames with a positive duration */
    uint64_t s = seed_for(m->file, 77);
    int64_t pick[8];
    size_t np = 0;
    for (int tries = 0; np < 8 && tries < 1000; tries++) {
        int64_t i = tries == 0 ? 0 : tries == 1 ? n - 1 : (int64_t)(rng_next(&s) % (uint64_t)n);
        /* a positive duration whose middle lies before the next frame */
        if (tab[i].duration > 0 && (i + 1 == n || 2 * tab[i].pts + tab[i].duration < 2 * tab[i + 1].pts))
            pick[np++] = i;
    }
    double times[16];
    int64_t want_idx[16], got_idx[16];
    size_t nt = 0;
    for (size_t k = 0; k < np; k++) {
        int64_t i = pick[k];
        CHECK_MSG(tab[i].duration > 0, "frame %lld has duration %lld", (long long)i, (long long)tab[i].duration);
        times[nt] = tb_seconds(info, (double)tab[i].pts + 0.5 * (double)tab[i].duration);
        want_idx[nt++] = i;
        times[nt] = tb_seconds(info, (double)tab[i].pts);
        want_idx[nt++] = i;
    }
    int w, h;
    size_t fb;
    reel_error err;
    reel_error_clear(&err);
    CHECK_OK(reel_decoder_get_output_size(dec, NULL, &w, &h, &fb, &err));
    uint8_t *got = xmalloc(nt * fb);
    for (size_t k = 0; k < nt; k++) got_idx[k] = -12345;
    int r = reel_decoder_get_frames_at_times(dec, times, nt, NULL, got, nt * fb, got_idx, NULL, &err);
    CHECK_MSG(r == REEL_OK, "get_frames_at_times: %d %s", r, err.message);
    for (size_t k = 0; k < nt; k++)
        CHECK_MSG(got_idx[k] == want_idx[k],
                  "t=%.9f s (%s of frame %lld: pts %lld dur %lld, tb %d/%d) resolved to frame %lld", times[k],
                  k % 2 ? "start" : "middle", (long long)want_idx[k], (long long)tab[want_idx[k]].pts,
                  (long long)tab[want_idx[k]].duration, info->time_base_num, info->time_base_den,
                  (long long)got_idx[k]);
    uint8_t *byidx = reel_frames(dec, want_idx, nt, NULL, &w, &h, &fb);
    cmp_state cs = { 0 };
    for (size_t k = 0; k < nt; k++)
        check_frame(&cs, "at-time vs by-index", m->file, want_idx[k], k, got + k * fb, byidx + k * fb, w, h);
    cmp_finish(&cs);
    free(byidx);

    /* out of range: before frame 0, exactly at the end, after the end */
    double before = tb_seconds(info, (double)tab[0].pts) - 0.25;
    double end = tb_seconds(info, (double)(tab[n - 1].pts + tab[n - 1].duration));
    double bad[3] = { before, end, end + 1.0 };
    for (int k = 0; k < 3; k++) {
        int64_t idx = -1;
        reel_error_clear(&err);
        r = reel_decoder_get_frames_at_times(dec, &bad[k], 1, NULL, got, fb, &idx, NULL, &err);
        CHECK_MSG(r == REEL_E_OUT_OF_RANGE,
                  "get_frames_at_times(%.9f s) (%s) returned %d (%s), want REEL_E_OUT_OF_RANGE", bad[k],
                  k == 0 ? "before the first frame" : "at/after the end", r, reel_strerror(r));
        r = reel_decoder_get_index_at_time(dec, bad[k], &idx, &err);
        CHECK_MSG(r == REEL_E_OUT_OF_RANGE, "index_at_time(%.9f s) returned %d, index %lld", bad[k], r, (long long)idx);
    }
    free(got);
    reel_decoder_close(&dec);
}

TEST(times_resolve_to_containing_frame)
{
    static const char *const names[] = {
        "nasa_13013.mp4", "test_non_zero_start.mp4",   "fire2.mp4",    "no_duration.webm",   "big_buck_bunny_0_30.webm",
        "karma.mp4",      "vp8_video_with_alpha.webm", "MVI_4823.AVI", "interlaced_crop.mp4"
    };
    (void)videos_dir();
    reel_set_ffmpeg_log_level(0);
    for_each_video(names, sizeof names / sizeof names[0], body_times, "timestamps");
}

/* index_at_time for the start and middle of every frame of every video whose
 * frames do not overlap (pure table work, no decoding). */
static void body_every_time(void)
{
    const mf_row *m = manifest_row(g_cur_file);
    reel_decoder *dec = open_video(m->file, -1, 2);
    const reel_video_info *info = reel_decoder_get_info(dec);
    int64_t n = 0;
    const reel_frame_entry *tab = reel_decoder_get_frame_table(dec, &n);
    CHECK(tab != NULL && n > 0);
    reel_error err;
    for (int64_t i = 0; i < n; i++) {
        if (i + 1 < n)
            CHECK_MSG(tab[i].pts < tab[i + 1].pts, "frame table not strictly increasing at %lld: pts %lld then %lld",
                      (long long)i, (long long)tab[i].pts, (long long)tab[i + 1].pts);
        CHECK_MSG(tab[i].duration > 0, "frame %lld has duration %lld", (long long)i, (long long)tab[i].duration);
        /* Container durations may overlap the next frame (Matroska rounds
         * them); the middle is only unambiguous before the next pts. */
        double mid = (double)tab[i].pts + 0.5 * (double)tab[i].duration;
        int mid_ok = i + 1 == n || mid < (double)tab[i + 1].pts;
        double ts[2] = { tb_seconds(info, (double)tab[i].pts), tb_seconds(info, mid) };
        for (int k = 0; k < 1 + mid_ok; k++) {
            int64_t idx = -1;
            reel_error_clear(&err);
            int r = reel_decoder_get_index_at_time(dec, ts[k], &idx, &err);
            CHECK_MSG(r == REEL_OK && idx == i,
                      "index_at_time(%.9f s = %s of frame %lld, pts %lld dur %lld tb %d/%d) "
                      "gave status %d index %lld %s",
                      ts[k], k ? "middle" : "start", (long long)i, (long long)tab[i].pts, (long long)tab[i].duration,
                      info->time_base_num, info->time_base_den, r, (long long)idx, err.message);
        }
    }
    reel_decoder_close(&dec);
}

TEST(index_at_time_every_frame)
{
    size_t n;
    const char **names = manifest_names(&n);
    reel_set_ffmpeg_log_level(0);
    for_each_video(names, n, body_every_time, "index_at_time, every frame");
}
