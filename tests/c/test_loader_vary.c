/* test_loader_vary.c: the loader's variable batches (issue 18 §4): the fps
 * sampler and the pixel-budget size policy give each sample its own frame
 * count and size; each clip's frames are those of reel_sampler_run (read
 * back from the embedded indices), its size that of reel_size_policy_apply,
 * the padded batch holds the same pixels, the ring keeps to its byte budget,
 * and resume, sharding and the error policy work as on clips. */
#include "harness.h"
#include "loader_common.h"
#include "testgen.h"

#include "reel/pipeline.h"

#include <string.h>

/* fps 4 over 25 fps videos of 30..79 frames: 4..12 frames; a small pixel
 * budget so that the sizes differ with the frame count. */
static reel_loader_settings vary_settings(void)
{
    reel_loader_settings s = readable_settings();
    s.sampler.kind = REEL_SAMPLER_FPS;
    s.sampler.fps = 4;
    s.sampler.min_frames = 4;
    s.sampler.max_frames = 64;
    s.size_policy.kind = REEL_SIZE_PIXEL_BUDGET;
    s.size_policy.factor = 28;
    s.size_policy.min_pixels = 28 * 28 * 4;
    s.size_policy.total_pixels = 28 * 28 * 8 * 6;
    s.shuffle = 0;
    return s;
}

/* What the sampler and size policy give video i on their own. */
static void expected(const reel_loader_settings *s, int64_t sample, int64_t epoch, int64_t *idx, int64_t *n, int *w,
                     int *h)
{
    reel_decoder *dec = tg_open(g_paths[sample % NVID], NULL);
    int64_t nf = 0;
    const reel_video_info *vi = reel_decoder_get_info(dec);
    reel_sampler_video v = { .table = reel_decoder_get_frame_table(dec, &nf),
                             .time_base_num = vi->time_base_num,
                             .time_base_den = vi->time_base_den,
                             .average_fps = (double)vi->avg_fps_num / vi->avg_fps_den,
                             .segment_end = -1,
                             .name = "v" };
    v.num_frames = nf;
    reel_sampler_result r;
    CHECK_OK(reel_sampler_describe(&s->sampler, &v, &r, NULL));
    *n = r.num_frames;
    CHECK_OK(reel_sampler_run(&s->sampler, &v, s->seed, (uint64_t)epoch, (uint64_t)sample, idx, 256, NULL));
    CHECK_OK(reel_size_policy_apply(&s->size_policy, vi->width, vi->height, r.num_frames, s->sampler.frame_factor, w, h,
                                    NULL));
    reel_decoder_close(&dec);
}

/* Checks one clip of a variable batch against the sampler, the size policy
 * and its embedded indices. Returns its frame count. */
static int64_t check_clip(const reel_loader_settings *s, const reel_batch *b, int64_t i)
{
    const reel_clip_info *c = &b->clips[i];
    int64_t want[256], n = 0;
    int w = 0, h = 0;
    expected(s, c->sample, b->epoch, want, &n, &w, &h);
    CHECK_EQ_INT(c->num_frames, n);
    CHECK_EQ_INT(c->width, w);
    CHECK_EQ_INT(c->height, h);
    CHECK_EQ_INT(c->bytes, (int64_t)n * w * h * 3);
    for (int64_t t = 0; t < n; t++) {
        CHECK_EQ_INT(c->frame_indices[t], want[t]);
        const uint8_t *f = (const uint8_t *)c->data + (size_t)t * (size_t)w * h * 3;
        CHECK_EQ_INT(reel_synth_read_index(f, w, h, (int64_t)w * 3), want[t]);
    }
    return n;
}

TEST(fps_sampler_and_pixel_budget_give_each_sample_its_own_shape)
{
    reel_dataset *ds = dataset_of_videos(1);
    reel_loader_settings s = vary_settings();
    reel_loader *l = NULL;
    reel_error err;
    reel_error_clear(&err);
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    int seen = 0, lengths[64] = { 0 }, widths[4096] = { 0 };
    int64_t frames = 0;
    for (;;) {
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        CHECK(b->variable == 1);
        CHECK(b->data == NULL);
        for (int64_t i = 0; i < b->num_clips; i++) {
            int64_t n = check_clip(&s, b, i);
            frames += n;
            CHECK(n <= b->shape[1] && b->clips[i].height <= b->shape[2] && b->clips[i].width <= b->shape[3]);
            lengths[n] = 1;
            widths[b->clips[i].width] = 1;
            seen++;
        }
        CHECK_OK(reel_loader_release(l, b));
    }
    CHECK_EQ_INT(seen, NVID);
    int nl = 0, nw = 0;
    for (int i = 0; i < 64; i++) nl += lengths[i];
    for (int i = 0; i < 4096; i++) nw += widths[i];
    CHECK(nl >= 3); /* the lengths and sizes do differ */
    CHECK(nw >= 2);
    reel_loader_metrics m;
    CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
    CHECK_EQ_INT(m.frames, frames);
    CHECK(m.ring_bytes > 0);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

/* pad: one zero-padded tensor of the largest shape, holding each clip. */
TEST(padded_batches_hold_the_clips_and_zeros)
{
    reel_dataset *ds = dataset_of_videos(1);
    reel_loader_settings s = vary_settings();
    s.pad = 1;
    s.transform.layout = REEL_BATCH_BTCHW;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    for (;;) {
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        CHECK(b->data != NULL);
        const int64_t T = b->shape[1], H = b->shape[3], W = b->shape[4];
        CHECK_EQ_INT(b->bytes, b->num_clips * T * 3 * H * W);
        for (int64_t i = 0; i < b->num_clips; i++) {
            const reel_clip_info *c = &b->clips[i];
            const uint8_t *row = (const uint8_t *)b->data + i * b->strides[0];
            for (int64_t t = 0; t < T; t++)
                for (int ch = 0; ch < 3; ch++)
                    for (int64_t y = 0; y < H; y++) {
                        const uint8_t *p = row + t * b->strides[1] + ch * b->strides[2] + y * b->strides[3];
                        for (int64_t x = 0; x < W; x++) {
                            int inside = t < c->num_frames && y < c->height && x < c->width;
                            uint8_t want =
                                inside ? ((const uint8_t *)c->data)[((t * 3 + ch) * c->height + y) * c->width + x] : 0;
                            if (p[x] != want)
                                CHECK_MSG(0, "clip %lld t %lld c %d y %lld x %lld", (long long)i, (long long)t, ch,
                                          (long long)y, (long long)x);
                        }
                    }
        }
        CHECK_OK(reel_loader_release(l, b));
    }
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

/* Samples of one epoch (or its first max_batches batches), each clip checked. */
static int collect(reel_loader *l, const reel_loader_settings *s, int64_t *samples, int max_batches)
{
    int n = 0, batches = 0;
    reel_error err;
    for (;;) {
        if (max_batches && batches == max_batches) break;
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        for (int64_t i = 0; i < b->num_clips; i++) {
            CHECK(n < 64);
            samples[n++] = b->clips[i].sample;
            check_clip(s, b, i);
        }
        CHECK_OK(reel_loader_release(l, b));
        batches++;
    }
    return n;
}

/* A checkpoint taken mid-epoch resumes with exactly the samples not yet
 * seen, each with its frames and size, on another batch size; two ranks
 * read disjoint halves. */
TEST(variable_batches_resume_and_shard)
{
    reel_dataset *ds = dataset_of_videos(1);
    reel_loader_settings s = vary_settings();
    s.shuffle = 1;
    s.batch_size = 2;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    int64_t all[64], head[64], tail[64];
    int n = collect(l, &s, all, 0);
    CHECK_EQ_INT(n, NVID);
    reel_loader_destroy(&l);

    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    int nh = collect(l, &s, head, 2);
    CHECK_EQ_INT(nh, 4);
    reel_loader_checkpoint cp;
    CHECK_OK(reel_loader_get_checkpoint(l, &cp, NULL));
    CHECK_EQ_INT(cp.samples_seen, 4);
    reel_loader_destroy(&l);
    reel_loader_settings s3 = s;
    s3.batch_size = 3;
    CHECK_OK(reel_loader_create(&l, ds, &s3, &err));
    CHECK_OK(reel_loader_restore_checkpoint(l, &cp, &err));
    int nt = collect(l, &s3, tail, 0);
    CHECK_EQ_INT(nt, NVID - 4);
    for (int i = 0; i < nh; i++) CHECK_EQ_INT(head[i], all[i]);
    for (int i = 0; i < nt; i++) CHECK_EQ_INT(tail[i], all[4 + i]);
    reel_loader_destroy(&l);

    /* two ranks: disjoint, together the epoch */
    int hit[NVID] = { 0 };
    for (int r = 0; r < 2; r++) {
        reel_loader_settings sr = s;
        sr.world_size = 2;
        sr.rank = r;
        CHECK_OK(reel_loader_create(&l, ds, &sr, &err));
        int64_t got[64];
        int k = collect(l, &sr, got, 0);
        CHECK_EQ_INT(k, NVID / 2);
        for (int i = 0; i < k; i++) hit[got[i]]++;
        reel_loader_destroy(&l);
    }
    for (int i = 0; i < NVID; i++) CHECK_EQ_INT(hit[i], 1);
    reel_dataset_destroy(&ds);
}

/* A video that cannot be opened: skipped (a shorter batch, a failure
 * record) or replaced by another sample with its own shape. */
TEST(variable_batches_apply_the_error_policy)
{
    make_videos();
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create(&ds, &err));
    char missing[1100];
    snprintf(missing, sizeof missing, "%s/missing.mp4", harness_tmpdir());
    for (int i = 0; i < 3; i++) CHECK_OK(reel_dataset_add(ds, g_paths[i], i, 0, -1, &err));
    CHECK_OK(reel_dataset_add(ds, missing, 9, 0, -1, &err));
    reel_loader_settings s = vary_settings();
    s.batch_size = 4;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    reel_batch *b = NULL;
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b != NULL);
    CHECK_EQ_INT(b->num_clips, 3);
    CHECK_EQ_INT(b->num_failed, 1);
    for (int64_t i = 0; i < b->num_clips; i++) check_clip(&s, b, i);
    CHECK_OK(reel_loader_release(l, b));
    CHECK_EQ_INT(reel_loader_get_num_failures(l), 1);
    reel_failure f;
    CHECK_OK(reel_loader_get_failure(l, 0, &f, &err));
    CHECK(strstr(f.reason, "missing.mp4") != NULL);
    reel_loader_destroy(&l);

    s.on_error = REEL_ON_ERROR_REPLACE;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK_EQ_INT(b->num_clips, 4);
    for (int64_t i = 0; i < b->num_clips; i++) {
        CHECK(b->clips[i].sample != 3);
        check_clip(&s, b, i);
    }
    CHECK_EQ_INT(b->clips[3].requested, 3);
    CHECK_OK(reel_loader_release(l, b));
    reel_loader_destroy(&l);

    s.on_error = REEL_ON_ERROR_RAISE;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    CHECK(reel_loader_next(l, &b, &err) != REEL_OK);
    CHECK(strstr(err.message, "missing.mp4") != NULL);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

/* The ring keeps to its byte budget: batches are planned only while those
 * in flight hold less (one batch over it at most), and the memory of free
 * buffers beyond it is given back. */
TEST(variable_ring_keeps_to_its_byte_budget)
{
    reel_dataset *ds = dataset_of_videos(4);
    reel_loader_settings s = vary_settings();
    s.batch_size = 1;
    s.prefetch_batches = 8;
    s.decode_threads = 2;
    s.ring_bytes = 300000; /* about one sample */
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    int n = 0;
    for (;;) {
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        reel_loader_metrics m;
        CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
        /* this batch, one in flight beyond the budget, and the budget */
        CHECK_MSG(m.ring_bytes <= 2 * 700000 + s.ring_bytes, "ring %lld", (long long)m.ring_bytes);
        n++;
        check_clip(&s, b, 0);
        CHECK_OK(reel_loader_release(l, b));
    }
    CHECK_EQ_INT(n, 4 * NVID);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

/* Settings the variable loader refuses, by name. */
TEST(variable_settings_are_checked)
{
    reel_dataset *ds = dataset_of_videos(1);
    reel_loader *l = NULL;
    reel_error err;
    reel_loader_settings s = vary_settings();
    s.transform.crop = REEL_CROP_CENTER;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);
    CHECK(strstr(err.message, "crop") != NULL);
    s = vary_settings();
    s.pad = 2;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);
    s = vary_settings();
    s.size_policy.kind = REEL_SIZE_FIXED;
    s.sampler.kind = REEL_SAMPLER_RANDOM_INDICES;
    s.size_policy.width = 10;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);
    /* the fps sampler on a fixed size: variable lengths, the transform's size */
    s = vary_settings();
    s.size_policy.kind = REEL_SIZE_FIXED;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    reel_batch *b = NULL;
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b->variable);
    CHECK_EQ_INT(b->clips[0].width, 80);
    CHECK_EQ_INT(b->clips[0].height, 60);
    CHECK_OK(reel_loader_release(l, b));
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

/* Loader-side GOP-parallel decoding (issue 18 §3): a long video in a batch
 * of one, with a decode thread that would idle, is split over decoder
 * contexts by keyframe runs; its frames, pts and pixels equal the serial
 * decode's (one decode thread: never split), in every layout. BCTHW's
 * channel-major sample is also checked element by element against BTCHW's,
 * so a split that wrote planes to the wrong place would fail even if the
 * serial path shared the mistake. */
TEST(idle_decode_threads_split_a_long_sample_over_gop_contexts)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/long.mp4", harness_tmpdir());
    reel_synth_params p;
    reel_synth_default_params(&p);
    p.path = path;
    p.width = 192;
    p.height = 108;
    p.num_frames = 400;
    p.gop = 25;
    p.seed = 11;
    tg_synth(&p);
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create(&ds, &err));
    for (int i = 0; i < 3; i++) CHECK_OK(reel_dataset_add(ds, path, i, 0, -1, &err));
    const reel_batch_layout layouts[3] = { REEL_BATCH_BTCHW, REEL_BATCH_BCTHW, REEL_BATCH_BTHWC };
    uint8_t *tchw[3] = { NULL, NULL, NULL }; /* BTCHW's samples, serial */
    for (int li = 0; li < 3; li++) {
        uint8_t *first[3] = { NULL, NULL, NULL };
        size_t bytes[3] = { 0 };
        for (int threads = 1; threads <= 2; threads++) {
            reel_loader_settings s = vary_settings();
            s.sampler.fps = 3;
            s.batch_size = 1;
            s.prefetch_batches = 1;
            s.open_threads = 1;
            s.decode_threads = threads;
            s.transform.layout = layouts[li];
            reel_loader *l = NULL;
            CHECK_OK(reel_loader_create(&l, ds, &s, &err));
            for (int k = 0; k < 3; k++) {
                reel_batch *b = NULL;
                CHECK_OK(reel_loader_next(l, &b, &err));
                CHECK(b != NULL && b->num_clips == 1);
                const reel_clip_info *c = &b->clips[0];
                CHECK_EQ_INT(c->num_frames, 48); /* 400 frames at 25 fps, 3 a second */
                for (int t = 0; t < c->num_frames; t++) CHECK_EQ_INT(c->pts[t], c->frame_indices[t] * 512);
                if (threads == 1) {
                    bytes[k] = c->bytes;
                    first[k] = malloc(c->bytes);
                    memcpy(first[k], c->data, c->bytes);
                } else {
                    CHECK_EQ_INT(c->bytes, bytes[k]);
                    CHECK(memcmp(first[k], c->data, c->bytes) == 0);
                }
                if (layouts[li] == REEL_BATCH_BCTHW && threads == 2) {
                    /* [C][T][H][W] against BTCHW's [T][C][H][W] */
                    const size_t T = (size_t)c->num_frames, HW = (size_t)c->width * (size_t)c->height;
                    int same = 1;
                    for (size_t t = 0; t < T && same; t++)
                        for (size_t ch = 0; ch < 3 && same; ch++)
                            same = memcmp((const uint8_t *)c->data + (ch * T + t) * HW, tchw[k] + (t * 3 + ch) * HW,
                                          HW) == 0;
                    CHECK(same);
                }
                CHECK_OK(reel_loader_release(l, b));
            }
            reel_loader_metrics m;
            CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
            if (threads == 1)
                CHECK_EQ_INT(m.gop_split_samples, 0);
            else
                CHECK(m.gop_split_samples >= 1);
            reel_loader_destroy(&l);
        }
        for (int k = 0; k < 3; k++) {
            if (layouts[li] == REEL_BATCH_BTCHW)
                tchw[k] = first[k];
            else
                free(first[k]);
        }
    }
    for (int k = 0; k < 3; k++) free(tchw[k]);
    reel_dataset_destroy(&ds);
}
