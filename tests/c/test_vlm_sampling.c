/* test_vlm_sampling.c: the whole-video samplers (REEL_SAMPLER_FPS, _COUNT)
 * and the pixel-budget size policy, against values qwen-vl-utils 0.0.14
 * computes (smart_nframes, calculate_video_frame_range, torch.linspace,
 * smart_resize); the Python tests compare with the package itself. */
#include "harness.h"
#include "loader_common.h"
#include "testgen.h"

#include "reel/pipeline.h"
#include "decoder/internal.h" /* the GOP contexts a decoder keeps */

#include <math.h>

/* 300 frames at 30 fps, time base 1/15360 */
static reel_frame_entry *table_30fps(int64_t n)
{
    reel_frame_entry *t = calloc((size_t)n, sizeof *t);
    for (int64_t i = 0; i < n; i++) {
        t[i].pts = i * 512;
        t[i].duration = 512;
        t[i].pos = -1;
        t[i].decode_order = (int32_t)i;
    }
    return t;
}

static void check_run(const reel_sampler_settings *s, const reel_sampler_video *v, const int64_t *want, int64_t n,
                      double sample_fps)
{
    reel_sampler_result r;
    CHECK_OK(reel_sampler_describe(s, v, &r, NULL));
    CHECK_EQ_INT(r.num_frames, n);
    CHECK_NEAR(r.sample_fps, sample_fps, 1e-12);
    int64_t o[64];
    CHECK_OK(reel_sampler_run(s, v, 0, 0, 0, o, 64, NULL));
    for (int64_t i = 0; i < n; i++) CHECK_EQ_INT(o[i], want[i]);
    if (n > 1) CHECK_STATUS(reel_sampler_run(s, v, 0, 0, 0, o, (size_t)n - 1, NULL), REEL_E_BUFFER_TOO_SMALL);
}

/* A 300-frame, 30 fps video of frame table tab (time base 1/15360). */
static reel_sampler_video long_video(const reel_frame_entry *tab)
{
    reel_sampler_video v = { .table = tab, .num_frames = 300, .time_base_num = 1, .time_base_den = 15360 };
    v.average_fps = 30.0;
    v.segment_end = -1;
    v.name = "long.mp4";
    return v;
}

TEST(fps_sampler_is_qwen_smart_nframes)
{
    reel_frame_entry *tab = table_30fps(300);
    reel_sampler_video v = long_video(tab);
    reel_sampler_settings s;
    reel_sampler_default_settings(&s);
    CHECK_NEAR(s.fps, 2.0, 0);
    CHECK_EQ_INT(s.min_frames, 4);
    CHECK_EQ_INT(s.max_frames, 768);
    CHECK_EQ_INT(s.frame_factor, 2);
    s.kind = REEL_SAMPLER_FPS;
    /* {} -> 20 frames over 0..299, sample fps 2 */
    const int64_t d[20] = {
        0, 16, 31, 47, 63, 79, 94, 110, 126, 142, 157, 173, 189, 205, 220, 236, 252, 268, 283, 299
    };
    check_run(&s, &v, d, 20, 2.0);
    /* fps 1, video_start 1.5, video_end 7.2 */
    s.fps = 1.0;
    s.range_start = 1.5;
    s.range_end = 7.2;
    const int64_t r[4] = { 45, 102, 159, 216 };
    check_run(&s, &v, r, 4, 0.6976744186046512);
    /* fps 0.1 with min_frames 5 (ceil to 6) */
    s.range_start = s.range_end = 0;
    s.fps = 0.1;
    s.min_frames = 5;
    const int64_t m[6] = { 0, 60, 120, 179, 239, 299 };
    check_run(&s, &v, m, 6, 0.6);
    /* fps 4 with max_frames 11 (floor to 10) */
    s.fps = 4;
    s.min_frames = 4;
    s.max_frames = 11;
    const int64_t x[10] = { 0, 33, 66, 100, 133, 166, 199, 233, 266, 299 };
    check_run(&s, &v, x, 10, 1.0);
    /* the range is relative to the sample's segment */
    s.max_frames = 768;
    s.fps = 2;
    v.segment_start = 2.0; /* frame 60 on */
    reel_sampler_result res;
    CHECK_OK(reel_sampler_describe(&s, &v, &res, NULL));
    CHECK_EQ_INT(res.range_first, 60);
    CHECK_EQ_INT(res.range_frames, 240);
    CHECK_EQ_INT(res.num_frames, 16);
    v.segment_start = 0;
    /* errors: an empty range, too few frames, bad settings */
    reel_error err;
    reel_error_clear(&err);
    s.range_start = 5;
    s.range_end = 5;
    CHECK_STATUS(reel_sampler_describe(&s, &v, &res, &err), REEL_E_OUT_OF_RANGE);
    CHECK(strstr(err.message, "long.mp4: ") == err.message && strstr(err.message, "range"));
    s.range_start = s.range_end = 0;
    v.num_frames = 3; /* max(min_frames 4) > 3 frames -> floor(3) = 2 frames */
    const int64_t tiny[2] = { 0, 2 };
    check_run(&s, &v, tiny, 2, 2.0 / 3.0 * 30.0);
    v.num_frames = 1;
    CHECK_STATUS(reel_sampler_describe(&s, &v, &res, NULL), REEL_E_OUT_OF_RANGE);
    v.num_frames = 300;
    s.clips_per_video = 2;
    CHECK_STATUS(reel_sampler_describe(&s, &v, &res, NULL), REEL_E_INVALID_ARG);
    s.clips_per_video = 1;
    s.fps = 0;
    CHECK_STATUS(reel_sampler_describe(&s, &v, &res, NULL), REEL_E_INVALID_ARG);
    free(tab);
}

TEST(count_sampler_rounds_half_to_even)
{
    reel_frame_entry *tab = table_30fps(300);
    reel_sampler_video v = long_video(tab);
    reel_sampler_settings s;
    reel_sampler_default_settings(&s);
    s.kind = REEL_SAMPLER_COUNT;
    s.frames_per_clip = 7; /* round(3.5) = 4 -> 8 frames */
    const int64_t e[8] = { 0, 43, 85, 128, 171, 214, 256, 299 };
    check_run(&s, &v, e, 8, 0.8);
    s.frames_per_clip = 5; /* round(2.5) = 2 -> 4 frames: half to even */
    reel_sampler_result r;
    CHECK_OK(reel_sampler_describe(&s, &v, &r, NULL));
    CHECK_EQ_INT(r.num_frames, 4);
    s.frames_per_clip = 302; /* more than the video has */
    CHECK_STATUS(reel_sampler_describe(&s, &v, &r, NULL), REEL_E_OUT_OF_RANGE);
    free(tab);
}

/* The loader takes the count sampler (one fixed-shape clip per video, its
 * frames those of reel_sampler_run, read back from the pixels); the fps one,
 * whose length differs per video, makes variable batches
 * (test_loader_vary.c). */
TEST(loader_runs_the_count_sampler)
{
    reel_dataset *ds = dataset_of_videos(1);
    reel_loader_settings ls = readable_settings();
    ls.sampler.kind = REEL_SAMPLER_COUNT;
    ls.sampler.frame_stride = 1;
    ls.sampler.frames_per_clip = 5; /* round(2.5) = 2 -> 4 frames */
    ls.shuffle = 0;
    reel_loader *l = NULL;
    reel_error err;
    reel_error_clear(&err);
    CHECK_OK(reel_loader_create(&l, ds, &ls, &err));
    int seen = 0;
    for (;;) {
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        CHECK_EQ_INT(b->shape[1], 4);
        for (int64_t r = 0; r < b->num_clips; r++) {
            int64_t n = g_frames[b->clips[r].sample];
            for (int t = 0; t < 4; t++) {
                /* linspace(0, n - 1, 4) rounded half to even */
                double x = (double)(n - 1) * t / 3.0;
                int64_t want = (int64_t)nearbyint(x);
                CHECK_EQ_INT(b->clips[r].frame_indices[t], want);
                CHECK_EQ_INT(read_frame_index(b, r, t, b->clips[r].flipped), want);
            }
            seen++;
        }
        CHECK_OK(reel_loader_release(l, b));
    }
    CHECK_EQ_INT(seen, NVID);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

TEST(size_policy_is_qwen_smart_resize)
{
    reel_size_policy p;
    reel_size_policy_default_settings(&p);
    CHECK_EQ_INT(p.kind, REEL_SIZE_PIXEL_BUDGET);
    CHECK_EQ_INT(p.factor, 28);
    int w = 0, h = 0;
    CHECK_OK(reel_size_policy_apply(&p, 1280, 720, 20, 2, &w, &h, NULL));
    CHECK_EQ_INT(h, 560);
    CHECK_EQ_INT(w, 1008);
    /* the frame factor is the caller's (the sampler's): 20 frames of a
     * 4e6-pixel budget, 2 or 4 to a temporal patch, share 4e5 or 8e5 pixels
     * a frame (the latter capped at 768 tokens) */
    p.total_pixels = 4000000;
    int w4 = 0, h4 = 0;
    CHECK_OK(reel_size_policy_apply(&p, 1280, 720, 20, 2, &w, &h, NULL));
    CHECK_OK(reel_size_policy_apply(&p, 1280, 720, 20, 4, &w4, &h4, NULL));
    CHECK_EQ_INT(h, 448);
    CHECK_EQ_INT(w, 840);
    CHECK_EQ_INT(h4, 560);
    CHECK_EQ_INT(w4, 1008);
    reel_error ferr;
    reel_error_clear(&ferr);
    CHECK_STATUS(reel_size_policy_apply(&p, 1280, 720, 20, 0, &w, &h, &ferr), REEL_E_INVALID_ARG);
    CHECK_MSG(tg_contains(ferr.message, "frame_factor 0"), "%s", ferr.message);
    p.total_pixels = 200000; /* 20 frames share it: the floor int(min * 1.05) wins */
    CHECK_OK(reel_size_policy_apply(&p, 1280, 720, 20, 2, &w, &h, NULL));
    CHECK_EQ_INT(h, 224);
    CHECK_EQ_INT(w, 420);
    p.total_pixels = 0;
    p.min_pixels = 1000000; /* scaled up and ceiled */
    CHECK_OK(reel_size_policy_apply(&p, 320, 240, 20, 2, &w, &h, NULL));
    CHECK_EQ_INT(h, 868);
    CHECK_EQ_INT(w, 1176);
    p.min_pixels = 0;
    p.max_pixels = 50000; /* below min_pixels: refused as qwen asserts */
    reel_error err;
    reel_error_clear(&err);
    CHECK_STATUS(reel_size_policy_apply(&p, 1920, 1080, 20, 2, &w, &h, &err), REEL_E_INVALID_ARG);
    CHECK(strstr(err.message, "max_pixels") != NULL);
    p.max_pixels = 0;
    p.width = 99; /* resized_width / resized_height: the image bounds */
    p.height = 101;
    CHECK_OK(reel_size_policy_apply(&p, 1920, 1080, 20, 2, &w, &h, NULL));
    CHECK_EQ_INT(h, 112);
    CHECK_EQ_INT(w, 112);
    for (int alone = 0; alone < 2; alone++) { /* one without the other is refused, naming both */
        p.width = alone ? 0 : 99;
        p.height = alone ? 101 : 0;
        CHECK_STATUS(reel_size_policy_apply(&p, 1920, 1080, 20, 2, &w, &h, &err), REEL_E_INVALID_ARG);
        CHECK_MSG(strstr(err.message, "resized_width") && strstr(err.message, "resized_height") &&
                      strstr(err.message, "both or neither"),
                  "%s", err.message);
    }
    p.width = p.height = 0;
    /* smart_resize itself: an extreme ratio and the 200 limit */
    CHECK_OK(reel_size_smart_resize(3000, 15, 28, 128 * 784, 768 * 784, &w, &h, NULL));
    CHECK_EQ_INT(h, 28);
    CHECK_EQ_INT(w, 4480);
    CHECK_STATUS(reel_size_smart_resize(3000, 10, 28, 0, 1e9, &w, &h, NULL), REEL_E_INVALID_ARG);
    /* fixed */
    p.kind = REEL_SIZE_FIXED;
    p.width = 64;
    p.height = 48;
    CHECK_OK(reel_size_policy_apply(&p, 1920, 1080, 20, 2, &w, &h, NULL));
    CHECK_EQ_INT(w, 64);
    CHECK_EQ_INT(h, 48);
}

/* A negative resized size is no size: refused by name (it was taken as "not
 * given" and the budget used), as is a negative or non-finite pixel count. */
TEST(size_policy_refuses_negative_sizes_and_pixel_counts_by_name)
{
    reel_size_policy p;
    reel_size_policy_default_settings(&p);
    int w = 0, h = 0;
    reel_error err;
    reel_error_clear(&err);
    p.width = 56;
    p.height = -28;
    CHECK_STATUS(reel_size_policy_apply(&p, 1280, 720, 20, 2, &w, &h, &err), REEL_E_INVALID_ARG);
    CHECK(tg_contains(err.message, "resized_height -28"));
    p.width = -1;
    p.height = 0;
    CHECK_STATUS(reel_size_policy_apply(&p, 1280, 720, 20, 2, &w, &h, &err), REEL_E_INVALID_ARG);
    CHECK(tg_contains(err.message, "resized_width -1"));
    p.width = p.height = 0;
    CHECK_OK(reel_size_policy_apply(&p, 1280, 720, 20, 2, &w, &h, &err)); /* 0: from the budget */
    const char *names[3] = { "min_pixels", "max_pixels", "total_pixels" };
    for (int i = 0; i < 3; i++) {
        const double bad[2] = { -5, NAN };
        for (int j = 0; j < 2; j++) {
            reel_size_policy q = p;
            double *field = i == 0 ? &q.min_pixels : i == 1 ? &q.max_pixels : &q.total_pixels;
            *field = bad[j];
            CHECK_STATUS(reel_size_policy_apply(&q, 1280, 720, 20, 2, &w, &h, &err), REEL_E_INVALID_ARG);
            CHECK_MSG(tg_contains(err.message, names[i]), "%s", err.message);
        }
    }
}

/* The GOP-parallel tests' video (150 frames of 96x64, a keyframe every 12,
 * `bframes` B-frames) and request: frames over many keyframe runs, with
 * repeats, a negative index and in no order. */
static const int64_t gop_idx[] = { 140, 5, 5, 61, -1, 0, 33, 100, 99, 61, 12, 13 };

static void gop_video(char *path, size_t cap, const char *name, int bframes)
{
    tg_path(path, cap, name);
    reel_synth_params p;
    tg_params(&p, path, "h264", 96, 64, 150, 12, bframes);
    tg_synth(&p);
}

/* GOP-parallel decoding (gop_contexts): the frames of a call spread over
 * several keyframe runs come out equal to the serial decode, with repeats,
 * negative indices and any order, on 2, 3 and 64 contexts; the other
 * contexts are opened once and kept for the next call; a call inside one
 * run and a memory input decode as usual. */
TEST(gop_parallel_get_frames_equals_serial)
{
    char path[1024];
    gop_video(path, sizeof path, "gop.mp4", 2);
    const int64_t *idx = gop_idx;
    const size_t n = sizeof gop_idx / sizeof *gop_idx;
    reel_transform t;
    reel_transform_default_settings(&t);
    reel_error err;
    reel_decoder_settings two;
    reel_decoder_default_settings(&two);
    two.threads = 2;      /* frame threads: each keyframe is probed once per context that seeks to it */
    two.gop_contexts = 0; /* off: the serial reference */
    reel_decoder *serial = NULL;
    CHECK_OK(reel_decoder_open(&serial, path, &two, &err));
    size_t fb;
    CHECK_OK(reel_decoder_get_output_size(serial, &t, NULL, NULL, &fb, &err));
    uint8_t *want = malloc(fb * n), *got = malloc(fb * n);
    reel_decode_stats ss, ps;
    CHECK_OK(reel_decoder_get_frames(serial, idx, n, &t, want, fb * n, &ss, &err));
    const int contexts[] = { 2, 3, 64 };
    for (int c = 0; c < 3; c++) {
        reel_decoder_settings s = two;
        s.gop_contexts = contexts[c];
        reel_decoder *par = NULL;
        CHECK_OK(reel_decoder_open(&par, path, &s, &err));
        memset(got, 0, fb * n);
        CHECK_OK(reel_decoder_get_frames(par, idx, n, &t, got, fb * n, &ps, &err));
        CHECK(memcmp(got, want, fb * n) == 0);
        for (size_t i = 0; i < n; i++)
            CHECK_EQ_INT(reel_synth_read_index(got + i * fb, 96, 64, 96 * 3), idx[i] < 0 ? 150 + idx[i] : idx[i]);
        CHECK_EQ_INT(ps.frames_requested, (int64_t)n);
        CHECK_EQ_INT(ps.frames_returned, ss.frames_returned);
        CHECK_EQ_INT(ss.gop_contexts, 1);
        CHECK(ps.gop_contexts >= 2 && ps.gop_contexts <= contexts[c]);
        /* the other contexts decode on one codec thread, without probes (how
         * many runs each takes from the shared cursor depends on timing;
         * that the parallel path ran is gop_open below) */
        CHECK(ps.keys_probed <= ss.keys_probed);
        /* the other contexts stay open: the next call uses the same ones */
        const int open1 = par->gop_open;
        const reel_decoder *first = par->gop_ctx[0];
        CHECK(open1 >= 1 && open1 <= contexts[c] - 1);
        /* every context but the last to finish gave its pictures back when
         * it found no run left: its codec is a fresh one that has put out no
         * frame */
        int holding = par->avctx->frame_number != 0;
        for (int q = 0; q < open1; q++) holding += par->gop_ctx[q]->avctx->frame_number != 0;
        CHECK_MSG(holding <= 1, "%d of %d contexts still hold decoded pictures", holding, open1 + 1);
        memset(got, 0, fb * n);
        CHECK_OK(reel_decoder_get_frames(par, idx, n, &t, got, fb * n, &ps, &err));
        CHECK(memcmp(got, want, fb * n) == 0);
        CHECK_EQ_INT(par->gop_open, open1);
        CHECK(par->gop_ctx[0] == first);
        /* one run: decoded as usual */
        const int64_t near[] = { 24, 26, 25 };
        CHECK_OK(reel_decoder_get_frames(par, near, 3, &t, got, fb * 3, &ps, &err));
        CHECK_EQ_INT(reel_synth_read_index(got + 2 * fb, 96, 64, 96 * 3), 25);
        /* that serial call left frames in the decoder's cache, from its codec's
         * pool; a parallel call replaces that codec and may serve from them */
        memset(got, 0, fb * n);
        CHECK_OK(reel_decoder_get_frames(par, idx, n, &t, got, fb * n, &ps, &err));
        CHECK(memcmp(got, want, fb * n) == 0);
        const int64_t again[] = { 26, 27 };
        CHECK_OK(reel_decoder_get_frames(par, again, 2, &t, got, fb * 2, &ps, &err));
        CHECK_EQ_INT(reel_synth_read_index(got + fb, 96, 64, 96 * 3), 27);
        /* out of range: the serial path's error */
        const int64_t bad[] = { 3, 150 };
        CHECK_STATUS(reel_decoder_get_frames(par, bad, 2, &t, got, fb * 2, NULL, &err), REEL_E_OUT_OF_RANGE);
        reel_decoder_close(&par);
    }
    free(want);
    free(got);
    reel_decoder_close(&serial);
}

/* The loader's BCTHW sample (reel__decoder_get_frames_cthw): channel after
 * channel over the call, [3][n][H][W], equal to the CHW frames transposed,
 * with repeats (a frame asked for twice is copied plane by plane), serial
 * and on 2 GOP-parallel contexts; an HWC layout is refused. */
/* The defaults use the cores: a decoder with default settings splits a call
 * of several keyframe runs over up to the core count of contexts (frames as
 * the serial decoder's), and a call inside one run decodes on one context. */
TEST(default_settings_decode_gop_parallel_up_to_the_core_count)
{
    char path[1024];
    gop_video(path, sizeof path, "gop_default.mp4", 2);
    const size_t n = sizeof gop_idx / sizeof *gop_idx;
    reel_transform t;
    reel_transform_default_settings(&t);
    reel_error err;
    reel_decoder_settings def, off;
    reel_decoder_default_settings(&def);
    CHECK_EQ_INT(def.gop_contexts, REEL_GOP_CONTEXTS_AUTO);
    off = def;
    off.gop_contexts = 0;
    reel_decoder *a = NULL, *b = NULL;
    CHECK_OK(reel_decoder_open(&a, path, &def, &err));
    CHECK_OK(reel_decoder_open(&b, path, &off, &err));
    size_t fb;
    CHECK_OK(reel_decoder_get_output_size(a, &t, NULL, NULL, &fb, &err));
    uint8_t *got = malloc(fb * n), *want = malloc(fb * n);
    reel_decode_stats as, bs;
    CHECK_OK(reel_decoder_get_frames(a, gop_idx, n, &t, got, fb * n, &as, &err));
    CHECK_OK(reel_decoder_get_frames(b, gop_idx, n, &t, want, fb * n, &bs, &err));
    CHECK(memcmp(got, want, fb * n) == 0);
    const int cores = reel__cpu_count();
    CHECK_EQ_INT(bs.gop_contexts, 1);
    if (cores >= 2)
        CHECK_MSG(as.gop_contexts >= 2 && as.gop_contexts <= cores, "%lld contexts on %d cores",
                  (long long)as.gop_contexts, cores);
    else
        CHECK_EQ_INT(as.gop_contexts, 1);
    const int64_t one[] = { 1, 2 }; /* one run */
    CHECK_OK(reel_decoder_get_frames(a, one, 2, &t, got, fb * 2, &as, &err));
    CHECK_EQ_INT(as.gop_contexts, 1);
    free(got);
    free(want);
    reel_decoder_close(&a);
    reel_decoder_close(&b);
}

TEST(channel_major_output_is_the_planar_frames_transposed)
{
    char path[1024];
    gop_video(path, sizeof path, "cthw.mp4", 3);
    const int64_t *idx = gop_idx;
    const size_t n = sizeof gop_idx / sizeof *gop_idx;
    reel_transform t;
    reel_transform_default_settings(&t);
    t.layout = REEL_LAYOUT_CHW;
    t.width = 48;
    t.height = 32;
    reel_error err;
    for (int contexts = 0; contexts <= 2; contexts += 2) {
        reel_decoder_settings s;
        reel_decoder_default_settings(&s);
        s.gop_contexts = contexts;
        reel_decoder *dec = NULL;
        CHECK_OK(reel_decoder_open(&dec, path, &s, &err));
        size_t fb;
        CHECK_OK(reel_decoder_get_output_size(dec, &t, NULL, NULL, &fb, &err));
        const size_t plane = fb / 3;
        uint8_t *chw = malloc(fb * n), *cthw = malloc(fb * n);
        CHECK_OK(reel_decoder_get_frames(dec, idx, n, &t, chw, fb * n, NULL, &err));
        memset(cthw, 0xAB, fb * n);
        CHECK_OK(reel__decoder_get_frames_cthw(dec, idx, n, &t, cthw, fb * n, NULL, &err));
        if (contexts) CHECK(dec->gop_open >= 1); /* the parallel path ran */
        int same = 1;
        for (size_t i = 0; i < n && same; i++)
            for (size_t c = 0; c < 3 && same; c++)
                same = memcmp(cthw + (c * n + i) * plane, chw + (i * 3 + c) * plane, plane) == 0;
        CHECK_MSG(same, "contexts %d: [C][T][H][W] is not the CHW frames transposed", contexts);
        reel_transform hwc = t;
        hwc.layout = REEL_LAYOUT_HWC;
        CHECK_STATUS(reel__decoder_get_frames_cthw(dec, idx, n, &hwc, cthw, fb * n, NULL, &err), REEL_E_INVALID_ARG);
        CHECK(strstr(err.message, "layout CHW") != NULL);
        free(chw);
        free(cthw);
        reel_decoder_close(&dec);
    }
}

/* GOP-parallel contexts take keyframe runs one at a time from a shared
 * cursor: every frame lands in its slot, and splitting the plan costs no
 * decoding or seek that the serial plan does not make (each run is its own
 * seek in both; the contexts drain instead of keeping a warm tail). */
TEST(gop_parallel_runs_cost_what_the_serial_plan_costs)
{
    char path[1024];
    tg_path(path, sizeof path, "gop_runs.mp4");
    reel_synth_params p;
    tg_params(&p, path, "h264", 64, 48, 240, 10, 2);
    tg_synth(&p);
    int64_t idx[60];
    const size_t n = sizeof idx / sizeof *idx;
    for (size_t i = 0; i < n; i++) idx[i] = (int64_t)((i * 97) % 240); /* spread over every GOP, out of order */
    reel_transform t;
    reel_transform_default_settings(&t);
    reel_error err;
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.threads = 1;
    reel_decoder *serial = NULL;
    CHECK_OK(reel_decoder_open(&serial, path, &s, &err));
    size_t fb;
    CHECK_OK(reel_decoder_get_output_size(serial, &t, NULL, NULL, &fb, &err));
    uint8_t *want = malloc(fb * n), *got = malloc(fb * n);
    reel_decode_stats ss, ps;
    CHECK_OK(reel_decoder_get_frames(serial, idx, n, &t, want, fb * n, &ss, &err));
    for (int contexts = 2; contexts <= 5; contexts++) {
        reel_decoder_settings ps_settings = s;
        ps_settings.gop_contexts = contexts;
        reel_decoder *par = NULL;
        CHECK_OK(reel_decoder_open(&par, path, &ps_settings, &err));
        memset(got, 0, fb * n);
        CHECK_OK(reel_decoder_get_frames(par, idx, n, &t, got, fb * n, &ps, &err));
        CHECK(memcmp(got, want, fb * n) == 0);
        for (size_t i = 0; i < n; i++) CHECK_EQ_INT(reel_synth_read_index(got + i * fb, 64, 48, 64 * 3), idx[i]);
        CHECK_EQ_INT(par->gop_open, contexts - 1);
        CHECK_EQ_INT(ps.frames_returned, ss.frames_returned);
        CHECK(ps.frames_decoded <= ss.frames_decoded);
        CHECK(ps.seeks <= ss.seeks);
        /* no context keeps frames past its runs (each would pin a codec
         * buffer for the rest of the call) */
        for (int q = 0; q < contexts; q++) {
            const reel_decoder *x = q ? par->gop_ctx[q - 1] : par;
            for (int i = 0; i < REEL_FRAME_CACHE; i++) CHECK_EQ_INT(x->cache_index[i], -1);
        }
        reel_decoder_close(&par);
    }
    free(want);
    free(got);
    reel_decoder_close(&serial);
}

/* reel.vlm's float32 CHW output (0-255, divisor 1) is the uint8 output
 * widened, element for element, also where the rows are widened in SIMD
 * chunks (widen.c): a width of two 256-pixel chunks plus a 9-pixel tail,
 * flipped and not, and a non-trivial normalisation beside it. */
static float widen_ref(uint8_t v, float scale, float mean, float sd)
{
    volatile float x = (float)v / scale; /* float rounding at each step */
    x = x - mean;
    return x / sd;
}

TEST(float32_chw_output_is_the_uint8_output_widened)
{
    char path[1024];
    tg_path(path, sizeof path, "widen.mp4");
    reel_synth_params p;
    tg_params(&p, path, "h264", 160, 120, 8, 4, 0);
    tg_synth(&p);
    reel_decoder *d = tg_open(path, NULL);
    const int64_t idx[] = { 0, 5, 7 };
    const int ow = 2 * 256 + 9, oh = 30;
    const float norms[2][7] = { { 1.0f, 0, 0, 0, 1, 1, 1 },
                                { 255.0f, 0.485f, 0.456f, 0.406f, 0.229f, 0.224f, 0.225f } };
    for (int flip = 0; flip <= 1; flip++)
        for (int ni = 0; ni < 2; ni++) {
            reel_transform t;
            reel_transform_default_settings(&t);
            t.width = ow;
            t.height = oh;
            t.layout = REEL_LAYOUT_CHW;
            t.flip_horizontal = flip;
            t.pixels.filter = REEL_FILTER_BICUBIC;
            t.pixels.convert_path = REEL_CONVERT_PATH_AFTER_RGB;
            uint8_t *u8 = tg_get(d, idx, 3, &t, NULL);
            t.pixels.dtype = REEL_DTYPE_FLOAT32;
            t.pixels.divisor = norms[ni][0];
            for (int c = 0; c < 3; c++) {
                t.pixels.mean[c] = norms[ni][1 + c];
                t.pixels.std[c] = norms[ni][4 + c];
            }
            float *f32 = (float *)tg_get(d, idx, 3, &t, NULL);
            size_t bad = 0, total = (size_t)3 * 3 * ow * oh;
            for (size_t i = 0; i < total; i++) {
                int c = (int)(i / ((size_t)ow * oh) % 3);
                float want = widen_ref(u8[i], t.pixels.divisor, t.pixels.mean[c], t.pixels.std[c]);
                bad += memcmp(&want, &f32[i], sizeof want) != 0;
            }
            CHECK_MSG(bad == 0, "flip %d norm %d: %zu of %zu float32 values differ from uint8 widened", flip, ni, bad,
                      total);
            free(u8);
            free(f32);
        }
    reel_decoder_close(&d);
}
