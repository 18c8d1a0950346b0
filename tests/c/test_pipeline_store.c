/* test_pipeline_store.c: the loader over packed stores (issue 7 §2-3). For
 * each format, every delivered clip frame equals its reference (raw: the
 * decoder's fused resize of the source video, bit for bit; jpeg:
 * tjDecompress2 of the stored JPEG; h264: the store reader decoding the
 * stored record, which test_store.c holds equal to the ffmpeg CLI), with its
 * source index checked through the embedded index and its label and path
 * from the store; sharding, exact resume and the shuffle window on a store;
 * skip/replace/raise over a store with a record that failed to pack and a
 * deleted shard, each failure named. */
#define _GNU_SOURCE
#include "harness.h"
#include "store_common.h"
#include "testgen.h"

#include "reel/store.h"

#include <math.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

enum { NV = 8, VW = 96, VH = 64, SS = 48, SW = 72, SH = 48, T = 4 };

/* A Kinetics-like folder of NV generated videos (frames carry their index). */
static const char *dataset(void)
{
    static const sc_videos v = { "ds", NV, VW, VH, 16, 2, 6, 1, 11 };
    return sc_dataset(&v);
}

static void pack(const char *src, const char *out, reel_store_format fmt, int64_t shard_size)
{
    reel_pack_settings s;
    reel_pack_default_settings(&s);
    s.format = fmt;
    s.short_side = SS;
    s.threads = 2;
    if (shard_size) s.shard_size = shard_size;
    sc_pack(src, out, &s);
}

/* Loader settings whose transform is the identity on stored frames. */
static void settings(reel_loader_settings *ls)
{
    reel_loader_default_settings(ls);
    ls->batch_size = 3;
    ls->seed = 5;
    ls->transform.resize = REEL_RESIZE_EXACT;
    ls->transform.resize_width = SW;
    ls->transform.resize_height = SH;
    ls->transform.crop = REEL_CROP_NONE;
    ls->transform.layout = REEL_BATCH_BTHWC;
    ls->sampler.frames_per_clip = T;
    ls->sampler.frame_stride = 2;
    ls->sampler.clips_per_video = 2;
    ls->decode_threads = 2;
}

/* A store of the test set packed as `fmt` under `name`, opened with a reader
 * and as a dataset. */
static const char *open_packed(const char *name, reel_store_format fmt, reel_store **s, reel_store_reader **rd,
                               reel_dataset **ds)
{
    const char *dir = sc_tmp(name);
    pack(dataset(), dir, fmt, 0);
    CHECK_OK(reel_store_open(s, dir, NULL));
    CHECK_OK(reel_store_reader_create(rd, *s, NULL, NULL));
    CHECK_OK(reel_dataset_create_from_path(ds, dir, NULL));
    return dir;
}

/* The converter transform a clip's frames got: its crop (source
 * coordinates), flip and output size; defaults otherwise. */
static void clip_transform(const reel_clip_info *ci, int ow, int oh, reel_transform *t)
{
    reel_transform_default_settings(t);
    t->crop_x = ci->crop_x;
    t->crop_y = ci->crop_y;
    t->crop_w = ci->crop_w;
    t->crop_h = ci->crop_h;
    t->width = ow;
    t->height = oh;
    t->flip_horizontal = ci->flipped;
}

/* The reference for stored frame `pos` of `record`, RGB24 SW x SH. */
static void reference(reel_store *s, reel_store_reader *rd, tjhandle tj, reel_store_format fmt, const char *dir,
                      int64_t record, int64_t pos, uint8_t *out)
{
    const size_t fb = (size_t)SW * SH * 3;
    reel_store_record rec;
    CHECK_OK(reel_store_get_record(s, record, &rec, NULL));
    if (fmt == REEL_STORE_FORMAT_RAW) {
        /* the video path: the decoder's fused resize */
        int64_t si = 0;
        CHECK_OK(reel_store_get_source_index(s, record, pos, &si, NULL));
        reel_decoder *dec = tg_open(rec.source_path, NULL);
        reel_transform t;
        reel_transform_default_settings(&t);
        t.width = SW;
        t.height = SH;
        uint8_t *b = tg_get(dec, &si, 1, &t, NULL);
        memcpy(out, b, fb);
        free(b);
        reel_decoder_close(&dec);
    } else if (fmt == REEL_STORE_FORMAT_JPEG) {
        int64_t off = 0, len = 0;
        CHECK_OK(reel_store_get_frame_bytes(s, record, pos, &off, &len, NULL));
        char shard[1300];
        snprintf(shard, sizeof shard, "%s/%s", dir, rec.shard);
        size_t sz = 0;
        uint8_t *bytes = tg_read_file(shard, &sz);
        CHECK(bytes && (size_t)(off + len) <= sz);
        CHECK(tjDecompress2(tj, bytes + off, (unsigned long)len, out, SW, SW * 3, SH, TJPF_RGB, 0) == 0);
        free(bytes);
    } else {
        sc_sink k = { out, fb, NULL, NULL, NULL };
        reel_error err;
        reel_error_clear(&err);
        int st = reel_store_reader_read(rd, record, &pos, 1, sc_sink_fn, &k, NULL, &err);
        CHECK_MSG(st == REEL_OK, "reader: %d %s", st, err.message);
    }
}

static void check_format(reel_store_format fmt, const char *name)
{
    reel_store *s = NULL;
    reel_store_reader *rd = NULL;
    reel_dataset *ds = NULL;
    const char *dir = open_packed(name, fmt, &s, &rd, &ds);
    tjhandle tj = tjInitDecompress();
    CHECK_EQ_INT(reel_dataset_get_size(ds), NV);
    reel_loader_settings ls;
    settings(&ls);
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &ls, NULL));
    const size_t fb = (size_t)SW * SH * 3;
    uint8_t *want = malloc(fb);
    reel_batch *b = NULL;
    reel_error err;
    int st;
    int64_t frames = 0;
    char *seen = calloc(NV, 1);
    double worst = 99;
    while ((st = reel_loader_next(l, &b, &err)) == REEL_OK && b) {
        for (int64_t c = 0; c < b->num_clips; c++) {
            const reel_clip_info *ci = &b->clips[c];
            reel_store_record rec;
            CHECK_OK(reel_store_get_record(s, ci->sample, &rec, NULL));
            CHECK_EQ_STR(ci->path, rec.source_path);
            CHECK_EQ_INT(ci->label, rec.label);
            seen[ci->sample] = 1;
            for (int t = 0; t < T; t++) {
                const uint8_t *img = (const uint8_t *)b->data + ((size_t)c * T + (size_t)t) * fb;
                int64_t idx = ci->frame_indices[t];
                /* the source frame the sampler chose, by its embedded index */
                CHECK_MSG(tg_read_idx(img, SW, SH) == idx, "%s frame %lld: embedded index %lld", rec.source_path,
                          (long long)idx, (long long)tg_read_idx(img, SW, SH));
                int64_t si = -1;
                CHECK_OK(reel_store_get_source_index(s, ci->sample, idx, &si, NULL)); /* every frame stored */
                CHECK_EQ_INT(si, idx);
                reference(s, rd, tj, fmt, dir, ci->sample, idx, want);
                CHECK_MSG(memcmp(img, want, fb) == 0, "%s frame %lld differs from the %s reference", rec.source_path,
                          (long long)idx, name);
                if (fmt == REEL_STORE_FORMAT_JPEG) {
                    /* and close to the video path: a wrong or shifted frame is
                     * 10-20 dB. The synthetic pattern's sharp saturated edges at
                     * 72x48 are JPEG's worst case (32.8 dB measured at Q90); the
                     * 38 dB of issue 7 is held on the real shared videos by
                     * test_store.c's jpeg_store_of_real_videos_is_within_38_db. */
                    reel_decoder *dec = tg_open(rec.source_path, NULL);
                    reel_transform tr;
                    reel_transform_default_settings(&tr);
                    tr.width = SW;
                    tr.height = SH;
                    uint8_t *v = tg_get(dec, &idx, 1, &tr, NULL);
                    double p = sc_psnr(img, v, fb);
                    if (p < worst) worst = p;
                    free(v);
                    reel_decoder_close(&dec);
                }
                frames++;
            }
        }
        reel_loader_release(l, b);
    }
    CHECK_MSG(st == REEL_OK, "%s", err.message);
    CHECK_EQ_INT(frames, NV * 2 * T);
    for (int i = 0; i < NV; i++) CHECK(seen[i]);
    if (fmt == REEL_STORE_FORMAT_JPEG) CHECK_MSG(worst >= 30.0, "jpeg store: worst PSNR %.2f dB", worst);
    /* the metrics name the store's stages */
    reel_loader_metrics m;
    CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
    CHECK_EQ_STR(m.stages[0].name, "read");
    CHECK_EQ_STR(m.stages[1].name, "image decode");
    CHECK_EQ_INT(m.failures, 0);
    free(seen);
    free(want);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
    tjDestroy(tj);
    reel_store_reader_destroy(&rd);
    reel_store_close(&s);
}

TEST(loader_over_a_raw_store_equals_the_video_path_bit_for_bit)
{
    check_format(REEL_STORE_FORMAT_RAW, "raw");
}

TEST(loader_over_a_jpeg_store_equals_libjpeg_turbo_decoding_the_stored_jpeg)
{
    check_format(REEL_STORE_FORMAT_JPEG, "jpeg");
}

TEST(loader_over_an_h264_store_equals_the_decoder_over_the_stored_record)
{
    check_format(REEL_STORE_FORMAT_H264, "h264");
}

/* ------------------------------------------------ cropped (window) decode */

/* With a crop, the loader decodes a JPEG only over the crop's iMCU columns
 * and rows (raw: copies only the crop's bytes). Every delivered frame must
 * equal the whole decode (the reader, no window) put through the converter
 * with the clip's own crop, flip and output: random crops with flips to
 * uint8, and random-resized crops (a resize inside the window) to
 * normalised float32. */
static void check_window(reel_store_format fmt, const char *name, int resized)
{
    reel_store *s = NULL;
    reel_store_reader *rd = NULL;
    reel_dataset *ds = NULL;
    open_packed(name, fmt, &s, &rd, &ds);
    reel_loader_settings ls;
    settings(&ls);
    ls.transform.resize = REEL_RESIZE_SHORT_SIDE;
    ls.transform.short_side = SS; /* the stored size: no resize but the crop's */
    ls.transform.crop = resized ? REEL_CROP_RANDOM_RESIZED : REEL_CROP_RANDOM;
    ls.transform.crop_width = resized ? 32 : 40;
    ls.transform.crop_height = resized ? 32 : 26;
    ls.transform.flip = REEL_FLIP_RANDOM;
    ls.transform.layout = REEL_BATCH_BTCHW;
    if (resized) {
        ls.transform.pixels.dtype = REEL_DTYPE_FLOAT32;
        for (int c = 0; c < 3; c++) {
            ls.transform.pixels.mean[c] = 0.45f;
            ls.transform.pixels.std[c] = 0.225f;
        }
    }
    ls.epochs = 2;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &ls, NULL));
    const int ow = ls.transform.crop_width, oh = ls.transform.crop_height;
    const size_t fb = (size_t)ow * oh * 3 * (resized ? 4 : 1);
    uint8_t *want = malloc(fb);
    reel_batch *b = NULL;
    reel_error err;
    int st;
    int64_t frames = 0, narrow = 0, flipped = 0;
    for (int epoch = 0; epoch < 2; epoch++) {
        while ((st = reel_loader_next(l, &b, &err)) == REEL_OK && b) {
            for (int64_t c = 0; c < b->num_clips; c++) {
                const reel_clip_info *ci = &b->clips[c];
                reel_transform t;
                clip_transform(ci, ow, oh, &t);
                t.pixels.dtype = ls.transform.pixels.dtype;
                t.layout = REEL_LAYOUT_CHW;
                memcpy(t.pixels.mean, ls.transform.pixels.mean, sizeof t.pixels.mean);
                memcpy(t.pixels.std, ls.transform.pixels.std, sizeof t.pixels.std);
                narrow += ci->crop_w + 16 < SW;
                flipped += ci->flipped;
                for (int k = 0; k < T; k++) {
                    const uint8_t *img = (const uint8_t *)b->data + ((size_t)c * T + (size_t)k) * fb;
                    int64_t idx = ci->frame_indices[k];
                    sc_sink x = { want, fb, &t, NULL, NULL };
                    CHECK_OK(reel_store_reader_read(rd, ci->sample, &idx, 1, sc_sink_fn, &x, NULL, NULL));
                    CHECK_MSG(memcmp(img, want, fb) == 0,
                              "%s store, %s frame %lld, crop %d,%d %dx%d%s: differs from the whole decode", name,
                              ci->path, (long long)idx, ci->crop_x, ci->crop_y, ci->crop_w, ci->crop_h,
                              ci->flipped ? " flipped" : "");
                    frames++;
                }
            }
            reel_loader_release(l, b);
        }
        CHECK_MSG(st == REEL_OK, "%s", err.message);
    }
    CHECK_EQ_INT(frames, 2 * NV * 2 * T);
    CHECK(narrow > 0);  /* some windows skipped whole iMCU columns */
    CHECK(flipped > 0); /* and some clips were mirrored */
    free(want);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
    reel_store_reader_destroy(&rd);
    reel_store_close(&s);
}

TEST(jpeg_store_random_crops_decode_a_window_equal_to_the_whole_decode)
{
    check_window(REEL_STORE_FORMAT_JPEG, "jpeg-crop", 0);
}

TEST(jpeg_store_random_resized_crops_to_float_equal_the_whole_decode)
{
    check_window(REEL_STORE_FORMAT_JPEG, "jpeg-rrc", 1);
}

TEST(raw_store_random_crops_copy_a_window_equal_to_the_whole_frame)
{
    check_window(REEL_STORE_FORMAT_RAW, "raw-crop", 0);
}

/* Where a crop is at least twice its output, the JPEG is decoded scaled by
 * 1/2 (1/4, 1/8) in the IDCT. Here a center crop of 48x48 stored pixels to
 * 24x24 is exactly libjpeg-turbo's own 1/2-scaled decode of the stored JPEG
 * (tjDecompress2 at half size), cropped, with no resize after it; and it
 * is not what a whole decode plus a bilinear resize gives (so the scaled
 * path ran), though close to it. */
TEST(jpeg_store_halves_in_the_idct_when_the_crop_is_twice_the_output)
{
    reel_store *s = NULL;
    reel_store_reader *rd = NULL;
    reel_dataset *ds = NULL;
    const char *dir = open_packed("jpeg-dct", REEL_STORE_FORMAT_JPEG, &s, &rd, &ds);
    reel_loader_settings ls;
    settings(&ls);
    enum { O = 24 };
    ls.transform.resize = REEL_RESIZE_SHORT_SIDE;
    ls.transform.short_side = O; /* half the stored 48 */
    ls.transform.crop = REEL_CROP_CENTER;
    ls.transform.crop_width = ls.transform.crop_height = O;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &ls, NULL));
    tjhandle tj = tjInitDecompress();
    const size_t fb = (size_t)O * O * 3;
    const int HW = (SW + 1) / 2, HH = (SH + 1) / 2;
    uint8_t *half = malloc((size_t)HW * HH * 3), *resized = malloc(fb);
    reel_batch *b = NULL;
    reel_error err;
    int st;
    int64_t frames = 0, differ = 0;
    double worst = 99;
    while ((st = reel_loader_next(l, &b, &err)) == REEL_OK && b) {
        for (int64_t c = 0; c < b->num_clips; c++) {
            const reel_clip_info *ci = &b->clips[c];
            CHECK_EQ_INT(ci->crop_w, 2 * O);
            CHECK_EQ_INT(ci->crop_h, 2 * O);
            reel_store_record rec;
            CHECK_OK(reel_store_get_record(s, ci->sample, &rec, NULL));
            char shard[1300];
            snprintf(shard, sizeof shard, "%s/%s", dir, rec.shard);
            size_t sz = 0;
            uint8_t *bytes = tg_read_file(shard, &sz);
            CHECK(bytes != NULL);
            for (int k = 0; k < T; k++) {
                const uint8_t *img = (const uint8_t *)b->data + ((size_t)c * T + (size_t)k) * fb;
                int64_t idx = ci->frame_indices[k], off = 0, len = 0;
                CHECK_OK(reel_store_get_frame_bytes(s, ci->sample, idx, &off, &len, NULL));
                CHECK(tjDecompress2(tj, bytes + off, (unsigned long)len, half, HW, HW * 3, HH, TJPF_RGB, 0) == 0);
                for (int y = 0; y < O; y++)
                    CHECK_MSG(memcmp(img + (size_t)y * O * 3,
                                     half + ((size_t)(ci->crop_y / 2 + y) * HW + (size_t)(ci->crop_x / 2)) * 3,
                                     (size_t)O * 3) == 0,
                              "%s frame %lld row %d differs from libjpeg-turbo's 1/2-scaled decode", ci->path,
                              (long long)idx, y);
                reel_transform t;
                clip_transform(ci, O, O, &t); /* center crops are never flipped here */
                sc_sink x = { resized, fb, &t, NULL, NULL };
                CHECK_OK(reel_store_reader_read(rd, ci->sample, &idx, 1, sc_sink_fn, &x, NULL, NULL));
                differ += memcmp(img, resized, fb) != 0;
                double p = sc_psnr(img, resized, fb);
                if (p < worst) worst = p;
                frames++;
            }
            free(bytes);
        }
        reel_loader_release(l, b);
    }
    CHECK_MSG(st == REEL_OK, "%s", err.message);
    CHECK_EQ_INT(frames, NV * 2 * T);
    CHECK(differ > 0);
    CHECK_MSG(worst >= 25.0, "1/2-scaled decode against whole decode + bilinear: worst %.2f dB", worst);
    printf("      1/2 IDCT scaling against whole decode + bilinear resize: worst PSNR %.2f dB\n", worst);
    free(half);
    free(resized);
    tjDestroy(tj);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
    reel_store_reader_destroy(&rd);
    reel_store_close(&s);
}

/* ------------------------------------------------ order, shards, resume */

typedef struct epoch_run {
    uint8_t *bytes;
    size_t len;
    int64_t samples[NV * 4];
    int64_t nsamples;
} epoch_run;

/* Batches of one epoch (after a restore to `cp`), `stop_after` of them at
 * most (-1: all); the checkpoint after them in *cp_out. */
static void run(reel_dataset *ds, const reel_loader_settings *ls, const reel_loader_checkpoint *cp, int64_t stop_after,
                epoch_run *out, reel_loader_checkpoint *cp_out)
{
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, ls, NULL));
    if (cp) CHECK_OK(reel_loader_restore_checkpoint(l, cp, NULL));
    memset(out, 0, sizeof *out);
    reel_batch *b = NULL;
    reel_error err;
    int st;
    int64_t nb = 0;
    while ((st = reel_loader_next(l, &b, &err)) == REEL_OK && b) {
        out->bytes = realloc(out->bytes, out->len + b->bytes);
        memcpy(out->bytes + out->len, b->data, b->bytes);
        out->len += b->bytes;
        for (int64_t c = 0; c < b->num_clips; c += ls->sampler.clips_per_video)
            out->samples[out->nsamples++] = b->clips[c].sample;
        reel_loader_release(l, b);
        if (++nb == stop_after) break;
    }
    CHECK_MSG(st == REEL_OK, "%s", err.message);
    if (cp_out) CHECK_OK(reel_loader_get_checkpoint(l, cp_out, NULL));
    reel_loader_destroy(&l);
}

TEST(a_store_shards_resumes_exactly_and_reads_in_shuffle_windows)
{
    const char *dir = sc_tmp("order");
    pack(dataset(), dir, REEL_STORE_FORMAT_JPEG, 0);
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create_from_path(&ds, dir, NULL));
    reel_loader_settings ls;
    settings(&ls);
    ls.batch_size = 2;
    ls.shuffle_window = 4;
    ls.seed = 9;
    /* one rank: the epoch reads the store one window of 4 records at a time,
     * in a shuffled order, and differs from the full shuffle */
    epoch_run full;
    run(ds, &ls, NULL, -1, &full, NULL);
    CHECK_EQ_INT(full.nsamples, NV);
    for (int64_t i = 0; i < NV; i++) CHECK_EQ_INT(full.samples[i] / 4, full.samples[i - i % 4] / 4);
    int in_order = 1;
    for (int64_t i = 0; i < NV; i++) in_order &= full.samples[i] == i;
    CHECK(!in_order);
    /* exact resume: stop after 2 batches, restore in a new loader */
    epoch_run head, tail;
    reel_loader_checkpoint cp;
    run(ds, &ls, NULL, 2, &head, &cp);
    CHECK_EQ_INT(cp.samples_seen, 4);
    run(ds, &ls, &cp, -1, &tail, NULL);
    CHECK_EQ_INT(head.len + tail.len, full.len);
    CHECK(memcmp(head.bytes, full.bytes, head.len) == 0);
    CHECK_MSG(memcmp(tail.bytes, full.bytes + head.len, tail.len) == 0, "resumed batches differ");
    free(head.bytes);
    free(tail.bytes);
    /* three ranks (padded): disjoint shares that cover the store */
    int count[NV] = { 0 };
    for (int r = 0; r < 3; r++) {
        reel_loader_settings lr = ls;
        lr.rank = r;
        lr.world_size = 3;
        epoch_run e;
        run(ds, &lr, NULL, -1, &e, NULL);
        CHECK_EQ_INT(e.nsamples, 3); /* ceil(8 / 3) */
        for (int64_t i = 0; i < e.nsamples; i++) count[e.samples[i]]++;
        free(e.bytes);
    }
    int64_t covered = 0, twice = 0;
    for (int i = 0; i < NV; i++) {
        CHECK(count[i] >= 1);
        covered += count[i];
        twice += count[i] > 1;
    }
    CHECK_EQ_INT(covered, 9);
    CHECK_EQ_INT(twice, 1); /* the one padding sample */
    free(full.bytes);
    reel_dataset_destroy(&ds);
}

/* Changes of shard along an epoch's samples (store records = dataset order). */
static int shard_changes(const reel_store *st, const epoch_run *e)
{
    int changes = 0;
    char prev[64] = "";
    for (int64_t i = 0; i < e->nsamples; i++) {
        reel_store_record r;
        CHECK_OK(reel_store_get_record(st, e->samples[i], &r, NULL));
        if (i && strcmp(prev, r.shard) != 0) changes++;
        snprintf(prev, sizeof prev, "%s", r.shard);
    }
    return changes;
}

TEST(a_store_is_shuffled_shard_by_shard_by_default)
{
    /* shards of about 3 records: the largest record decides */
    const char *probe = sc_tmp("order-probe");
    pack(dataset(), probe, REEL_STORE_FORMAT_JPEG, 0);
    reel_store *st = NULL;
    CHECK_OK(reel_store_open(&st, probe, NULL));
    int64_t biggest = 0;
    for (int64_t i = 0; i < NV; i++) {
        reel_store_record r;
        CHECK_OK(reel_store_get_record(st, i, &r, NULL));
        if (r.length > biggest) biggest = r.length;
    }
    reel_store_close(&st);
    const char *dir = sc_tmp("order-shards");
    pack(dataset(), dir, REEL_STORE_FORMAT_JPEG, (3 * biggest + 4095) / 4096 * 4096);
    CHECK_OK(reel_store_open(&st, dir, NULL));
    reel_store_info info;
    reel_store_get_info(st, &info, NULL);
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create_from_path(&ds, dir, NULL));
    reel_loader_settings ls;
    settings(&ls);
    ls.batch_size = 2;
    int fuller = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        ls.seed = seed;
        ls.shuffle_window = 0; /* the default: shard by shard */
        epoch_run e;
        run(ds, &ls, NULL, -1, &e, NULL);
        CHECK_EQ_INT(e.nsamples, NV);
        int seen[NV] = { 0 };
        for (int64_t i = 0; i < NV; i++) seen[e.samples[i]]++;
        for (int i = 0; i < NV; i++) CHECK_EQ_INT(seen[i], 1);
        /* each shard is read once, as one run of its records */
        CHECK_EQ_INT(shard_changes(st, &e), info.num_shards - 1);
        free(e.bytes);
        ls.shuffle_window = REEL_SHUFFLE_WINDOW_FULL;
        run(ds, &ls, NULL, -1, &e, NULL);
        fuller += shard_changes(st, &e) > info.num_shards - 1;
        free(e.bytes);
    }
    CHECK(info.num_shards >= 3);
    CHECK(fuller > 0); /* the full shuffle does jump between shards */
    /* the read blocks are the shards: one run of records each */
    int64_t *starts = NULL;
    size_t nb = 0;
    CHECK_OK(reel_dataset_get_read_blocks(ds, &starts, &nb, NULL));
    CHECK_EQ_INT(nb, info.num_shards);
    CHECK(starts[0] == 0 && starts[nb] == NV);
    for (size_t b = 0; b < nb; b++) {
        reel_store_record first, last;
        CHECK_OK(reel_store_get_record(st, starts[b], &first, NULL));
        CHECK_OK(reel_store_get_record(st, starts[b + 1] - 1, &last, NULL));
        CHECK(strcmp(first.shard, last.shard) == 0);
        if (b > 0) {
            reel_store_record prev;
            CHECK_OK(reel_store_get_record(st, starts[b] - 1, &prev, NULL));
            CHECK(strcmp(prev.shard, first.shard) != 0);
        }
    }
    reel_free(starts);
    ls.shuffle_window = -2;
    reel_loader *l = NULL;
    CHECK_STATUS(reel_loader_create(&l, ds, &ls, NULL), REEL_E_INVALID_ARG);
    reel_store_close(&st);
    reel_dataset_destroy(&ds);
}

/* ---------------------------------------------------------- error policy */

/* A store of the NV videos plus one that failed to pack, one record per
 * shard, with the shard of one good record deleted. */
static const char *damaged_store(char *gone_video, size_t size)
{
    static char dir[1100];
    static char gone[1200];
    static int made;
    if (made) {
        snprintf(gone_video, size, "%s", gone);
        return dir;
    }
    char bad[1200];
    sc_copy_dir(dataset(), sc_tmp("dsbad"));
    snprintf(bad, sizeof bad, "%s/bowling/broken.mp4", sc_tmp("dsbad"));
    tg_write_file(bad, "this is not a video", 19);
    snprintf(dir, sizeof dir, "%s", sc_tmp("damaged"));
    pack(sc_tmp("dsbad"), dir, REEL_STORE_FORMAT_JPEG, 4096);
    reel_store *s = NULL;
    CHECK_OK(reel_store_open(&s, dir, NULL));
    reel_store_record rec;
    CHECK_OK(reel_store_get_record(s, 2, &rec, NULL));
    CHECK_EQ_INT(rec.status, REEL_OK);
    char shard[1300];
    snprintf(shard, sizeof shard, "%s/%s", dir, rec.shard);
    snprintf(gone, sizeof gone, "%s", rec.source_path);
    CHECK_EQ_INT(unlink(shard), 0);
    reel_store_close(&s);
    made = 1;
    snprintf(gone_video, size, "%s", gone);
    return dir;
}

/* Runs an epoch with `policy`; returns clips delivered, the first error of
 * a raise in *raised. */
static int64_t policy_epoch(int policy, reel_loader **lout, reel_dataset **dsout, reel_error *raised)
{
    char gone[1200];
    const char *dir = damaged_store(gone, sizeof gone);
    CHECK_OK(reel_dataset_create_from_path(dsout, dir, NULL));
    CHECK_EQ_INT(reel_dataset_get_size(*dsout), NV + 1); /* the failed record is an entry */
    reel_loader_settings ls;
    settings(&ls);
    ls.on_error = policy;
    ls.batch_size = 3;
    CHECK_OK(reel_loader_create(lout, *dsout, &ls, NULL));
    reel_batch *b = NULL;
    reel_error err;
    int64_t clips = 0;
    reel_error_clear(raised);
    for (;;) {
        int st = reel_loader_next(*lout, &b, &err);
        if (st != REEL_OK) {
            CHECK_EQ_INT(policy, REEL_ON_ERROR_RAISE);
            if (raised->status == REEL_OK) *raised = err;
            continue; /* the batch after a raised one still comes */
        }
        if (!b) break;
        clips += b->num_clips;
        reel_loader_release(*lout, b);
    }
    return clips;
}

static void check_named(const reel_failure *f, const char *gone)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s", sc_tmp("damaged"));
    if (strstr(f->path, "broken.mp4")) {
        CHECK_EQ_INT(f->status, REEL_E_NOT_VIDEO);
        CHECK_MSG(strstr(f->reason, "broken.mp4") && strstr(f->reason, dir) && strstr(f->reason, "not in the store"),
                  "failed-to-pack record not named: %s", f->reason);
    } else {
        CHECK_EQ_STR(f->path, gone);
        CHECK_MSG(strstr(f->reason, gone) && strstr(f->reason, dir) && strstr(f->reason, ".bin") &&
                      strstr(f->reason, "missing"),
                  "deleted shard not named (store, shard, video, reason): %s", f->reason);
    }
}

TEST(skip_replace_and_raise_over_a_damaged_store_name_each_failure)
{
    char gone[1200];
    damaged_store(gone, sizeof gone);
    reel_loader *l = NULL;
    reel_dataset *ds = NULL;
    reel_error raised;
    reel_failure f;

    /* skip: everything else delivered, two named failures */
    int64_t clips = policy_epoch(REEL_ON_ERROR_SKIP, &l, &ds, &raised);
    CHECK_EQ_INT(clips, (NV - 1) * 2);
    CHECK_EQ_INT(reel_loader_get_num_failures(l), 2);
    for (int64_t i = 0; i < 2; i++) {
        CHECK_OK(reel_loader_get_failure(l, i, &f, NULL));
        check_named(&f, gone);
    }
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);

    /* replace: every batch full */
    clips = policy_epoch(REEL_ON_ERROR_REPLACE, &l, &ds, &raised);
    CHECK_EQ_INT(clips, (NV + 1) * 2);
    reel_loader_metrics m;
    CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
    CHECK(m.replacements >= 2);
    CHECK(reel_loader_get_num_failures(l) >= 2);
    for (int64_t i = 0; i < reel_loader_get_num_failures(l); i++) {
        CHECK_OK(reel_loader_get_failure(l, i, &f, NULL));
        check_named(&f, gone);
    }
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);

    /* raise: next() returns the named failure; the other batches come */
    clips = policy_epoch(REEL_ON_ERROR_RAISE, &l, &ds, &raised);
    CHECK(raised.status == REEL_E_NOT_VIDEO || raised.status == REEL_E_NOT_FOUND);
    CHECK_MSG(strstr(raised.message, sc_tmp("damaged")) != NULL, "raised error does not name the store: %s",
              raised.message);
    CHECK(clips < (NV - 1) * 2 + 1);
    CHECK(clips > 0);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}
