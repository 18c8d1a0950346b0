/* test_frames_near.c: frames by timestamp with a tolerance (near.c): the
 * nearest pts, exact ties to the earlier frame, float32 timestamps, the
 * tolerance and its two policies, bad times, and reel_decode_near over
 * several decoders against reel_decoder_get_frames bit for bit. */
#include "testgen.h"

#define W 64
#define H 48

static const char *synth(const char *name, int fps, int n, int gop, int bframes, int vfr, double start, int w, int h)
{
    static char paths[8][4096];
    static int used;
    char *path = paths[used++ % 8];
    tg_path(path, sizeof paths[0], name);
    reel_synth_params p;
    tg_params(&p, path, "h264", w, h, n, gop, bframes);
    p.fps_num = fps;
    p.fps_den = 1;
    p.vfr = vfr;
    p.start_time = start;
    tg_synth(&p);
    return path;
}

static double tb_of(reel_decoder *d)
{
    const reel_video_info *in = reel_decoder_get_info(d);
    return (double)in->time_base_num / in->time_base_den;
}

static int64_t near_of(reel_decoder *d, double t, double *dist)
{
    int64_t ix = -1;
    reel_error err;
    int r = reel_decoder_get_index_near_time(d, t, &ix, dist, &err);
    CHECK_MSG(r == REEL_OK, "near %.17g: %d %s", t, r, err.message);
    return ix;
}

/* The nearest frame by brute force (long double), for times far from a tie. */
static int64_t brute_nearest(const reel_frame_entry *ft, int64_t n, double tb, double t)
{
    int64_t best = 0;
    long double bd = -1;
    for (int64_t i = 0; i < n; i++) {
        long double d = fabsl((long double)t - (long double)ft[i].pts * tb);
        if (bd < 0 || d < bd) {
            bd = d;
            best = i;
        }
    }
    return best;
}

TEST(nearest_frame_of_every_pts_and_around_it)
{
    const char *files[3] = { synth("near_cfr.mp4", 25, 40, 8, 2, 0, 0.0, W, H),
                             synth("near_vfr.mp4", 25, 40, 8, 0, 1, 0.0, W, H),
                             synth("near_start.mp4", 30, 30, 10, 2, 0, 1.25, W, H) };
    for (int k = 0; k < 3; k++) {
        reel_decoder *d = tg_open(files[k], NULL);
        int64_t n = 0;
        const reel_frame_entry *ft = reel_decoder_get_frame_table(d, &n);
        double tb = tb_of(d);
        CHECK(n >= 30);
        for (int64_t i = 0; i < n; i++) {
            double t = (double)ft[i].pts * tb, dist = -1;
            CHECK_EQ_INT(near_of(d, t, &dist), i);
            CHECK_NEAR(dist, 0.0, 1e-12);
            /* a quarter of the gap to each neighbour: still this frame */
            if (i > 0) {
                double before = t - 0.25 * (double)(ft[i].pts - ft[i - 1].pts) * tb;
                CHECK_EQ_INT(near_of(d, before, &dist), i);
                CHECK_NEAR(dist, 0.25 * (double)(ft[i].pts - ft[i - 1].pts) * tb, 1e-9);
            }
            if (i + 1 < n) CHECK_EQ_INT(near_of(d, t + 0.25 * (double)(ft[i + 1].pts - ft[i].pts) * tb, NULL), i);
        }
        /* outside the video: the first or the last frame, as far as it is */
        double dist = 0;
        CHECK_EQ_INT(near_of(d, (double)ft[0].pts * tb - 2.0, &dist), 0);
        CHECK_NEAR(dist, 2.0, 1e-9);
        CHECK_EQ_INT(near_of(d, (double)ft[n - 1].pts * tb + 100.0, &dist), n - 1);
        CHECK_NEAR(dist, 100.0, 1e-9);
        CHECK_EQ_INT(near_of(d, -1e300, NULL), 0);
        CHECK_EQ_INT(near_of(d, 1e300, NULL), n - 1);
        CHECK_EQ_INT(near_of(d, 1e-310, NULL), 0); /* a denormal */
        /* random times against brute force */
        uint64_t seed = 42;
        double end = (double)(ft[n - 1].pts + ft[n - 1].duration) * tb;
        for (int r = 0; r < 2000; r++) {
            double t = (double)tg_rand_below(&seed, 1 << 30) / (double)(1 << 30) * (end + 1.0) - 0.5;
            CHECK_EQ_INT(near_of(d, t, NULL), brute_nearest(ft, n, tb, t));
        }
        reel_decoder_close(&d);
    }
}

/* At 32 fps in mp4 the time base is 1/16384 and each midpoint between two
 * frames is a double exactly: a tie goes to the earlier frame, the next
 * double after it to the later one. */
TEST(exact_ties_go_to_the_earlier_frame)
{
    const char *path = synth("near_32.mp4", 32, 20, 5, 0, 0, 0.0, W, H);
    reel_decoder *d = tg_open(path, NULL);
    const reel_video_info *in = reel_decoder_get_info(d);
    if ((in->time_base_den & (in->time_base_den - 1)) != 0) harness_skip("time base is not a power of two");
    int64_t n = 0;
    const reel_frame_entry *ft = reel_decoder_get_frame_table(d, &n);
    double tb = tb_of(d);
    for (int64_t i = 0; i + 1 < n; i++) {
        double mid = (double)(ft[i].pts + ft[i + 1].pts) * tb / 2;
        CHECK((double)(ft[i].pts + ft[i + 1].pts) / 2 * tb == mid); /* exact */
        double dist = -1;
        CHECK_EQ_INT(near_of(d, mid, &dist), i);
        CHECK(dist == mid - (double)ft[i].pts * tb);
        CHECK_EQ_INT(near_of(d, nextafter(mid, INFINITY), NULL), i + 1);
        CHECK_EQ_INT(near_of(d, nextafter(mid, -INFINITY), NULL), i);
    }
    reel_decoder_close(&d);
}

/* LeRobot's timestamps: float32(i / fps). The nearest frame is i for every
 * i; the frame played at that time is often i - 1 (a float32 falls a hair
 * before the frame's start), which is why this call exists. */
TEST(float32_timestamps_give_their_frame)
{
    const int fps[2] = { 30, 15 };
    for (int k = 0; k < 2; k++) {
        char name[64];
        snprintf(name, sizeof name, "near_f32_%d.mp4", fps[k]);
        const char *path = synth(name, fps[k], 300, 2, 0, 0, 0.0, W, H);
        reel_decoder *d = tg_open(path, NULL);
        int64_t n = 0;
        reel_decoder_get_frame_table(d, &n);
        CHECK_EQ_INT(n, 300);
        int earlier = 0;
        for (int64_t i = 0; i < n; i++) {
            double t = (double)(float)((double)i / fps[k]), dist = 1;
            CHECK_EQ_INT(near_of(d, t, &dist), i);
            CHECK(dist < 1e-4);
            int64_t played = -1;
            reel_error err;
            if (reel_decoder_get_index_at_time(d, t, &played, &err) == REEL_OK && played == i - 1) earlier++;
        }
        CHECK_MSG(earlier > 0, "no float32 time fell before its frame: the test shows nothing");
        reel_decoder_close(&d);
    }
}

TEST(tolerance_raise_and_flag)
{
    const char *path = synth("near_tol.mp4", 25, 30, 6, 2, 0, 0.0, W, H);
    reel_decoder *d = tg_open(path, NULL);
    size_t fb = tg_frame_bytes(d, NULL, NULL, NULL);
    int64_t n = 0;
    const reel_frame_entry *ft = reel_decoder_get_frame_table(d, &n);
    double tb = tb_of(d);
    double t[5] = { (double)ft[3].pts * tb + 5e-5, (double)ft[10].pts * tb, (double)ft[7].pts * tb + 2e-4, -0.5,
                    (double)ft[n - 1].pts * tb + 0.03 };
    uint8_t *buf = malloc(5 * fb);
    int64_t idx[5] = { -1, -1, -1, -1, -1 };
    double dist[5];
    uint8_t within[5];
    reel_error err;
    /* raise (the default): the first violation, named; nothing decoded */
    reel_decode_stats st;
    memset(&st, 0, sizeof st);
    CHECK_STATUS(reel_decoder_get_frames_near(d, t, 5, NULL, NULL, buf, 5 * fb, idx, dist, within, &st, &err),
                 REEL_E_FRAME_TIMESTAMP);
    TG_CHECK_MSG_HAS(err, path);
    TG_CHECK_MSG_HAS(err, "frame 7");
    TG_CHECK_MSG_HAS(err, "time 2 of 5");
    char want[64];
    snprintf(want, sizeof want, "%.9f s", t[2]);
    TG_CHECK_MSG_HAS(err, want);
    snprintf(want, sizeof want, "at %.9f s", (double)ft[7].pts * tb);
    TG_CHECK_MSG_HAS(err, want);
    CHECK_EQ_INT(st.frames_decoded, 0);
    /* flag: the nearest frames, decoded, with their flags */
    reel_near_settings s;
    reel_near_default_settings(&s);
    CHECK_NEAR(s.tolerance_s, 1e-4, 0);
    s.on_violation = REEL_NEAR_FLAG;
    CHECK_OK(reel_decoder_get_frames_near(d, t, 5, &s, NULL, buf, 5 * fb, idx, dist, within, NULL, &err));
    const int64_t want_idx[5] = { 3, 10, 7, 0, n - 1 };
    const uint8_t want_within[5] = { 1, 1, 0, 0, 0 };
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(idx[i], want_idx[i]);
        CHECK_EQ_INT(within[i], want_within[i]);
        CHECK_EQ_INT(tg_read_idx(buf + (size_t)i * fb, W, H), want_idx[i]);
    }
    CHECK_NEAR(dist[0], 5e-5, 1e-9);
    CHECK_NEAR(dist[2], 2e-4, 1e-9);
    CHECK_NEAR(dist[3], 0.5, 1e-9);
    /* a wider tolerance takes them in; +inf takes anything; 0 only exact pts */
    s.on_violation = REEL_NEAR_RAISE;
    s.tolerance_s = 3e-4;
    CHECK_STATUS(reel_decoder_get_frames_near(d, t, 5, &s, NULL, buf, 5 * fb, idx, NULL, NULL, NULL, &err),
                 REEL_E_FRAME_TIMESTAMP);
    TG_CHECK_MSG_HAS(err, "time 3 of 5");
    CHECK_OK(reel_decoder_get_frames_near(d, t, 3, &s, NULL, buf, 3 * fb, idx, NULL, NULL, NULL, &err));
    s.tolerance_s = INFINITY;
    CHECK_OK(reel_decoder_get_frames_near(d, t, 5, &s, NULL, buf, 5 * fb, idx, NULL, within, NULL, &err));
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(within[i], 1);
    s.tolerance_s = 1e-12; /* t[1] is the double nearest a pts */
    CHECK_OK(reel_decoder_get_frames_near(d, &t[1], 1, &s, NULL, buf, fb, idx, NULL, within, NULL, &err));
    s.tolerance_s = 0;
    CHECK_STATUS(reel_decoder_get_frames_near(d, &t[0], 1, &s, NULL, buf, fb, idx, NULL, NULL, NULL, &err),
                 REEL_E_FRAME_TIMESTAMP);
    double zero = (double)ft[0].pts * tb; /* 0: exact */
    CHECK_OK(reel_decoder_get_frames_near(d, &zero, 1, &s, NULL, buf, fb, idx, NULL, within, NULL, &err));
    /* bad settings and times: named, in both policies */
    const double bad_tol[2] = { -1e-4, NAN };
    for (int i = 0; i < 2; i++) {
        s.tolerance_s = bad_tol[i];
        CHECK_STATUS(reel_decoder_get_frames_near(d, t, 1, &s, NULL, buf, fb, idx, NULL, NULL, NULL, &err),
                     REEL_E_INVALID_ARG);
        TG_CHECK_MSG_HAS(err, "settings.tolerance_s");
    }
    reel_near_default_settings(&s);
    s.on_violation = (reel_near_violation)7;
    CHECK_STATUS(reel_decoder_get_frames_near(d, t, 1, &s, NULL, buf, fb, idx, NULL, NULL, NULL, &err),
                 REEL_E_INVALID_ARG);
    TG_CHECK_MSG_HAS(err, "settings.on_violation");
    for (int pol = 0; pol < 2; pol++) {
        reel_near_default_settings(&s);
        s.on_violation = pol ? REEL_NEAR_FLAG : REEL_NEAR_RAISE;
        const double nonfinite[3] = { NAN, INFINITY, -INFINITY };
        for (int i = 0; i < 3; i++) {
            double tt[2] = { t[1], nonfinite[i] };
            CHECK_STATUS(reel_decoder_get_frames_near(d, tt, 2, &s, NULL, buf, 2 * fb, idx, NULL, NULL, NULL, &err),
                         REEL_E_INVALID_ARG);
            TG_CHECK_MSG_HAS(err, path);
            TG_CHECK_MSG_HAS(err, "not a finite number");
            TG_CHECK_MSG_HAS(err, "time 1 of 2");
        }
    }
    CHECK_STATUS(reel_decoder_get_frames_near(d, t, 2, NULL, NULL, buf, fb, idx, NULL, NULL, NULL, &err),
                 REEL_E_BUFFER_TOO_SMALL);
    CHECK_STATUS(reel_decoder_get_frames_near(NULL, t, 1, NULL, NULL, buf, fb, idx, NULL, NULL, NULL, &err),
                 REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_decoder_get_index_near_time(d, 0.0, NULL, NULL, &err), REEL_E_INVALID_ARG);
    free(buf);
    reel_decoder_close(&d);
}

/* Any order and repeats, in request order, the pixels of the frames named. */
TEST(unsorted_and_repeated_times_in_request_order)
{
    const char *path = synth("near_order.mp4", 25, 50, 10, 2, 1, 0.0, W, H);
    reel_decoder *d = tg_open(path, NULL);
    int64_t n = 0;
    const reel_frame_entry *ft = reel_decoder_get_frame_table(d, &n);
    double tb = tb_of(d);
    const int64_t want[8] = { 41, 3, 3, 27, 0, 49, 12, 41 };
    double t[8];
    for (int i = 0; i < 8; i++) t[i] = (double)ft[want[i]].pts * tb + (i % 2 ? -3e-5 : 3e-5);
    size_t fb = tg_frame_bytes(d, NULL, NULL, NULL);
    uint8_t *buf = malloc(8 * fb);
    int64_t idx[8];
    reel_error err;
    CHECK_OK(reel_decoder_get_frames_near(d, t, 8, NULL, NULL, buf, 8 * fb, idx, NULL, NULL, NULL, &err));
    uint8_t *ref = tg_get(d, want, 8, NULL, NULL);
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_INT(idx[i], want[i]);
        CHECK_EQ_INT(tg_read_idx(buf + (size_t)i * fb, W, H), want[i]);
    }
    CHECK(memcmp(buf, ref, 8 * fb) == 0);
    free(ref);
    free(buf);
    reel_decoder_close(&d);
}

/* Three cameras of different sizes and rates, one of them asked twice (one
 * plan for both jobs) and once more with another transform: every job's
 * output equals reel_decoder_get_frames of its indices, bit for bit, at
 * every thread count. */
TEST(decode_near_equals_get_frames_per_camera)
{
    const char *cam[3] = { synth("near_cam0.mp4", 30, 90, 2, 0, 0, 0.0, 96, 64),
                           synth("near_cam1.mp4", 15, 45, 4, 2, 0, 0.0, 64, 48),
                           synth("near_cam2.mp4", 30, 90, 10, 2, 1, 0.0, 48, 32) };
    reel_decoder *d[3];
    for (int c = 0; c < 3; c++) d[c] = tg_open(cam[c], NULL);
    reel_transform small;
    reel_transform_default_settings(&small);
    small.width = 32;
    small.height = 24;
    small.layout = REEL_LAYOUT_CHW;
    enum { JOBS = 5, T = 6 };
    const int dec_of[JOBS] = { 0, 1, 2, 0, 0 };
    const reel_transform *tr_of[JOBS] = { NULL, NULL, NULL, NULL, &small };
    double times[JOBS][T];
    uint64_t seed = 9;
    for (int j = 0; j < JOBS; j++)
        for (int i = 0; i < T; i++) /* float32 times of frames of the first 1.4 s, any order */
            times[j][i] = (double)(float)((double)tg_rand_below(&seed, 42) / 30.0);
    for (int threads = 1; threads <= 4; threads++) {
        reel_near_job jobs[JOBS];
        memset(jobs, 0, sizeof jobs);
        int64_t idx[JOBS][T];
        uint8_t within[JOBS][T];
        size_t fb[JOBS];
        for (int j = 0; j < JOBS; j++) {
            fb[j] = tg_frame_bytes(d[dec_of[j]], tr_of[j], NULL, NULL);
            jobs[j].decoder = d[dec_of[j]];
            jobs[j].seconds = times[j];
            jobs[j].n = T;
            jobs[j].transform = tr_of[j];
            jobs[j].dst = malloc(T * fb[j]);
            jobs[j].dst_size = T * fb[j];
            jobs[j].indices_out = idx[j];
            jobs[j].within_out = within[j];
        }
        reel_near_settings s;
        reel_near_default_settings(&s);
        s.threads = threads;
        s.on_violation = REEL_NEAR_FLAG; /* camera 1 runs at 15 fps: some times fall between its frames */
        reel_error err;
        size_t failed = 99;
        CHECK_OK(reel_decode_near(jobs, JOBS, &s, &failed, &err));
        CHECK_EQ_INT(failed, JOBS);
        int flagged = 0;
        for (int j = 0; j < JOBS; j++) {
            reel_decoder *dj = d[dec_of[j]];
            for (int i = 0; i < T; i++) {
                double dist;
                CHECK_EQ_INT(idx[j][i], near_of(dj, times[j][i], &dist));
                CHECK_EQ_INT(within[j][i], dist <= 1e-4);
                flagged += !within[j][i];
            }
            uint8_t *ref = tg_get(dj, idx[j], T, tr_of[j], NULL);
            CHECK_MSG(memcmp(ref, jobs[j].dst, T * fb[j]) == 0, "job %d differs at %d threads", j, threads);
            free(ref);
            free(jobs[j].dst);
        }
        CHECK(flagged > 0);
    }
    for (int c = 0; c < 3; c++) reel_decoder_close(&d[c]);
}

/* Every job is checked before anything is decoded: a violation in the last
 * job fails the call naming its file, and the first camera decoded nothing. */
TEST(decode_near_refuses_before_decoding)
{
    const char *a = synth("near_ja.mp4", 25, 30, 5, 0, 0, 0.0, W, H);
    const char *b = synth("near_jb.mp4", 25, 30, 5, 0, 0, 0.0, W, H);
    reel_decoder *da = tg_open(a, NULL), *db = tg_open(b, NULL);
    size_t fb = tg_frame_bytes(da, NULL, NULL, NULL);
    double ta[2] = { 0.0, 0.4 }, tb[2] = { 0.2, 0.21 };
    uint8_t *buf = malloc(4 * fb);
    reel_near_job jobs[2];
    memset(jobs, 0, sizeof jobs);
    jobs[0] = (reel_near_job){ .decoder = da, .seconds = ta, .n = 2, .dst = buf, .dst_size = 2 * fb };
    jobs[1] = (reel_near_job){ .decoder = db, .seconds = tb, .n = 2, .dst = buf + 2 * fb, .dst_size = 2 * fb };
    reel_error err;
    memset(buf, 0xEE, 4 * fb);
    size_t failed = 99;
    CHECK_STATUS(reel_decode_near(jobs, 2, NULL, &failed, &err), REEL_E_FRAME_TIMESTAMP);
    CHECK_EQ_INT(failed, 1);
    TG_CHECK_MSG_HAS(err, b);
    TG_CHECK_MSG_HAS(err, "0.210000000 s");
    for (size_t i = 0; i < 4 * fb; i++) CHECK_MSG(buf[i] == 0xEE, "byte %zu of the output was written", i);
    /* bad jobs and settings */
    jobs[1].dst_size = fb;
    tb[1] = 0.24;
    CHECK_STATUS(reel_decode_near(jobs, 2, NULL, NULL, &err), REEL_E_BUFFER_TOO_SMALL);
    TG_CHECK_MSG_HAS(err, b);
    jobs[1].decoder = NULL;
    CHECK_STATUS(reel_decode_near(jobs, 2, NULL, NULL, &err), REEL_E_INVALID_ARG);
    TG_CHECK_MSG_HAS(err, "job 1");
    reel_near_settings s;
    reel_near_default_settings(&s);
    s.threads = -2;
    CHECK_STATUS(reel_decode_near(jobs, 1, &s, &failed, &err), REEL_E_INVALID_ARG);
    CHECK_EQ_INT(failed, 1);
    TG_CHECK_MSG_HAS(err, "settings.threads");
    CHECK_OK(reel_decode_near(jobs, 0, NULL, NULL, &err));
    CHECK_STATUS(reel_decode_near(NULL, 1, NULL, NULL, &err), REEL_E_INVALID_ARG);
    free(buf);
    reel_decoder_close(&da);
    reel_decoder_close(&db);
}

/* The memory estimate counts the table and the pictures, and grows with
 * the GOP-parallel contexts a call opened. */
TEST(memory_estimate)
{
    const char *path = synth("near_mem.mp4", 25, 60, 5, 0, 0, 0.0, 160, 120);
    reel_decoder_settings ds;
    reel_decoder_default_settings(&ds);
    ds.threads = 1;
    ds.gop_contexts = 3;
    reel_decoder *d = tg_open(path, &ds);
    int64_t before = reel_decoder_get_memory(d);
    CHECK(before >= 60 * (int64_t)sizeof(reel_frame_entry) + 160 * 120 * 3 / 2);
    CHECK_EQ_INT(reel_decoder_get_memory(NULL), 0);
    const int64_t idx[4] = { 1, 12, 31, 52 };
    free(tg_get(d, idx, 4, NULL, NULL));
    CHECK(reel_decoder_get_memory(d) > before + 160 * 120);
    reel_decoder_close(&d);
}
