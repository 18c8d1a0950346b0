/* test_loader_vary_store.c: variable batches over packed stores (issue 18
 * §4): a store packed with the fps sampler is read record by record with the
 * loader's fps sampler, each sample the video path's frames (source frame
 * indices equal reel_sampler_run over the video; embedded indices) and each
 * frame libjpeg-turbo's decode of the stored JPEG; a store packed with a
 * stride reports source frame indices, not record positions; settings a store
 * cannot serve as the video path would are refused by name. */
#define _GNU_SOURCE
#include "harness.h"
#include "store_common.h"
#include "testgen.h"

#include "reel/store.h"

#include <turbojpeg.h>

enum { NV = 4, SW = 84, SH = 56 };

static const char *dataset(void)
{
    static const sc_videos v = { "vary", NV, 96, 64, 30, 7, 8, 1, 21 };
    return sc_dataset(&v);
}

static void pack_settings(reel_pack_settings *s, reel_store_format fmt)
{
    reel_pack_default_settings(s);
    s->format = fmt;
    s->width = SW;
    s->height = SH;
    s->threads = 2;
}

static void fps_sampler(reel_sampler_settings *s)
{
    s->kind = REEL_SAMPLER_FPS;
    s->clips_per_video = 1;
    s->fps = 7;
    s->min_frames = 4;
    s->max_frames = 12;
    s->frame_factor = 2;
}

/* Loader settings that deliver the stored frames as they are (the stored
 * size, no crop), in BTHWC, one epoch. */
static void stored_as_is(reel_loader_settings *ls, int batch_size)
{
    ls->transform.resize = REEL_RESIZE_EXACT;
    ls->transform.resize_width = SW;
    ls->transform.resize_height = SH;
    ls->transform.crop = REEL_CROP_NONE;
    ls->transform.layout = REEL_BATCH_BTHWC;
    ls->batch_size = batch_size;
    ls->epochs = 1;
}

/* The fps sampler's frames of the source video (the video path's plan). */
static int64_t video_plan(const char *path, const reel_sampler_settings *ss, int64_t *out, size_t cap)
{
    reel_decoder *dec = tg_open(path, NULL);
    reel_sampler_video v;
    memset(&v, 0, sizeof v);
    v.table = reel_decoder_get_frame_table(dec, &v.num_frames);
    const reel_video_info *vi = reel_decoder_get_info(dec);
    v.time_base_num = vi->time_base_num;
    v.time_base_den = vi->time_base_den;
    v.segment_end = -1;
    reel_sampler_result r;
    CHECK_OK(reel_sampler_describe(ss, &v, &r, NULL));
    CHECK((size_t)r.num_frames <= cap);
    CHECK_OK(reel_sampler_run(ss, &v, 0, 0, 0, out, cap, NULL));
    reel_decoder_close(&dec);
    return r.num_frames;
}

TEST(fps_store_samples_are_the_video_paths_frames_decoded_by_libjpeg_turbo)
{
    reel_pack_settings ps;
    pack_settings(&ps, REEL_STORE_FORMAT_JPEG);
    ps.sampler.kind = REEL_SAMPLER_FPS;
    ps.sampler.fps = 7;
    ps.sampler.max_frames = 12;
    const char *dir = sc_tmp("fps_jpeg");
    sc_pack(dataset(), dir, &ps);
    reel_store *s = NULL;
    reel_dataset *ds = NULL;
    CHECK_OK(reel_store_open(&s, dir, NULL));
    CHECK_OK(reel_dataset_create_from_path(&ds, dir, NULL));
    reel_loader_settings ls;
    reel_loader_default_settings(&ls);
    fps_sampler(&ls.sampler);
    stored_as_is(&ls, 3);
    ls.decode_threads = 2;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_MSG(reel_loader_create(&l, ds, &ls, &err) == REEL_OK, "%s", err.message);
    tjhandle tj = tjInitDecompress();
    const size_t fb = (size_t)SW * SH * 3;
    uint8_t *want = malloc(fb);
    int64_t plan[64];
    int seen = 0, lengths = 0;
    reel_batch *b;
    while (reel_loader_next(l, &b, &err) == REEL_OK && b) {
        CHECK(b->variable);
        for (int64_t c = 0; c < b->num_clips; c++) {
            const reel_clip_info *ci = &b->clips[c];
            reel_store_record rec;
            CHECK_OK(reel_store_get_record(s, ci->sample, &rec, NULL));
            int64_t n = video_plan(rec.source_path, &ls.sampler, plan, 64);
            CHECK_EQ_INT(ci->num_frames, n); /* the whole record: the video path's count, not resampled */
            CHECK_EQ_INT(ci->width, SW);
            CHECK_EQ_INT(ci->height, SH);
            lengths |= 1 << (n & 15);
            char shard[1300];
            snprintf(shard, sizeof shard, "%s/%s", dir, rec.shard);
            size_t sz = 0;
            uint8_t *bytes = tg_read_file(shard, &sz);
            CHECK(bytes != NULL);
            for (int t = 0; t < ci->num_frames; t++) {
                const uint8_t *img = (const uint8_t *)ci->data + (size_t)t * fb;
                CHECK_EQ_INT(ci->frame_indices[t], plan[t]);                  /* source frame indices */
                CHECK_EQ_INT(tg_read_idx(img, SW, SH), ci->frame_indices[t]); /* and those frames */
                int64_t off = 0, len = 0;
                CHECK_OK(reel_store_get_frame_bytes(s, ci->sample, t, &off, &len, NULL));
                CHECK(tjDecompress2(tj, bytes + off, (unsigned long)len, want, SW, SW * 3, SH, TJPF_RGB, 0) == 0);
                CHECK_MSG(memcmp(img, want, fb) == 0, "%s frame %d differs from tjDecompress2", rec.source_path, t);
            }
            free(bytes);
            seen++;
        }
        reel_loader_release(l, b);
    }
    CHECK_EQ_INT(seen, NV);
    CHECK(lengths & (lengths - 1)); /* the samples do differ in length */
    free(want);
    tjDestroy(tj);
    reel_loader_destroy(&l);

    /* another fps than the store's, a sampling range, a pixel budget on a
     * store packed at a fixed size: refused, naming the store and why */
    reel_loader_settings bad = ls;
    bad.sampler.fps = 2;
    CHECK_EQ_INT(reel_loader_create(&l, ds, &bad, &err), REEL_E_INVALID_ARG);
    CHECK(strstr(err.message, "fps_jpeg") && strstr(err.message, "fps 7") && strstr(err.message, "fps 2"));
    bad = ls;
    bad.sampler.range_start = 0.5;
    CHECK_EQ_INT(reel_loader_create(&l, ds, &bad, &err), REEL_E_INVALID_ARG);
    CHECK(strstr(err.message, "video_start") != NULL);
    bad = ls;
    reel_size_policy_default_settings(&bad.size_policy);
    CHECK_EQ_INT(reel_loader_create(&l, ds, &bad, &err), REEL_E_INVALID_ARG);
    CHECK(strstr(err.message, "fps_jpeg") && strstr(err.message, "at 84x56") && strstr(err.message, "--size source"));
    bad.size_policy.width = 56; /* resized_width/height: no picture size needed */
    bad.size_policy.height = 28;
    CHECK_OK(reel_loader_create(&l, ds, &bad, &err));
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
    reel_store_close(&s);
}

TEST(a_strided_store_reports_source_frame_indices)
{
    reel_pack_settings ps;
    pack_settings(&ps, REEL_STORE_FORMAT_RAW);
    ps.every = 3;
    const char *dir = sc_tmp("every3");
    sc_pack(dataset(), dir, &ps);
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create_from_path(&ds, dir, NULL));
    reel_loader_settings ls;
    reel_loader_default_settings(&ls);
    ls.sampler.frames_per_clip = 4;
    ls.sampler.clips_per_video = 2;
    stored_as_is(&ls, 2);
    reel_loader *l = NULL;
    reel_error err;
    CHECK_MSG(reel_loader_create(&l, ds, &ls, &err) == REEL_OK, "%s", err.message);
    int64_t frames = 0, beyond = 0;
    reel_batch *b;
    while (reel_loader_next(l, &b, &err) == REEL_OK && b) {
        for (int64_t c = 0; c < b->num_clips; c++)
            for (int t = 0; t < 4; t++) {
                const uint8_t *img = (const uint8_t *)b->data + ((size_t)c * 4 + (size_t)t) * SW * SH * 3;
                int64_t idx = b->clips[c].frame_indices[t];
                CHECK_EQ_INT(idx % 3, 0);                    /* frame i is source frame i */
                CHECK_EQ_INT(tg_read_idx(img, SW, SH), idx); /* the embedded index agrees */
                beyond += idx >= 12;                         /* not record positions 0..11 */
                frames++;
            }
        reel_loader_release(l, b);
    }
    CHECK_EQ_INT(frames, NV * 8);
    CHECK(beyond > 0);
    reel_loader_destroy(&l);
    /* the fps sampler picks from every frame: a strided store lacks them */
    fps_sampler(&ls.sampler);
    CHECK_EQ_INT(reel_loader_create(&l, ds, &ls, &err), REEL_E_INVALID_ARG);
    CHECK(strstr(err.message, "every3") && strstr(err.message, "every 3"));
    reel_dataset_destroy(&ds);
}
