/* test_pipeline_loader.c: the batch loader end to end on synthetic videos
 * whose frames carry their own index: exact frames in every batch, layouts
 * and dtypes, determinism across thread counts, resume, sharding, epochs,
 * ordering, segments, metrics, trace, shutdown mid-epoch (and no leak after
 * it under valgrind). Failures and time limits: test_pipeline_failures.c. */
#define _GNU_SOURCE
#include "harness.h"

#include "reel/pipeline.h"
#include "core/json.h"
#include "pipeline/rng.h"
#include "pipeline/sampler_internal.h"
#include "loader_common.h"

#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* -------------------------------------------------------------- tests */

TEST(every_frame_in_every_batch_is_the_frame_the_sampler_chose)
{
    reel_dataset *ds = dataset_of_videos(2);
    reel_loader_settings s = readable_settings();
    s.sampler.clips_per_video = 2;
    s.transform.flip = REEL_FLIP_RANDOM;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    CHECK_EQ_INT(reel_loader_get_batches_per_epoch(l), (2 * NVID + 2) / 3);
    int seen[2 * NVID] = { 0 };
    int nb = 0, flipped = 0;
    for (;;) {
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        CHECK_EQ_INT(b->ndim, 5);
        CHECK_EQ_INT(b->shape[1], 4);
        CHECK_EQ_INT(b->shape[2], 60);
        CHECK_EQ_INT(b->shape[3], 80);
        CHECK_EQ_INT(b->shape[4], 3);
        CHECK_EQ_INT(b->index, nb);
        CHECK_EQ_INT(b->num_failed, 0);
        CHECK_EQ_INT(b->num_clips, b->num_samples * 2);
        CHECK(((uintptr_t)b->data & 4095) == 0);
        for (int64_t r = 0; r < b->num_clips; r++) {
            const reel_clip_info *c = &b->clips[r];
            CHECK_EQ_INT(c->position, b->position + r / 2);
            CHECK_EQ_INT(c->clip, r % 2);
            CHECK_EQ_INT(c->label, c->sample % NVID);
            CHECK_EQ_INT(b->labels[r], c->label);
            CHECK_EQ_STR(c->path, g_paths[c->sample % NVID]);
            if (c->clip == 0) seen[c->sample]++;
            flipped += c->flipped;
            /* the sampler's choice, recomputed from the frame table */
            reel_decoder *dec = NULL;
            CHECK_OK(reel_decoder_open(&dec, c->path, NULL, &err));
            const reel_video_info *info = reel_decoder_get_info(dec);
            int64_t n;
            reel_sampler_video in = { .table = reel_decoder_get_frame_table(dec, &n),
                                      .num_frames = 0,
                                      .time_base_num = info->time_base_num,
                                      .time_base_den = info->time_base_den,
                                      .average_fps = 0,
                                      .segment_start = 0,
                                      .segment_end = -1,
                                      .name = c->path };
            in.num_frames = n;
            reel_rng_key k = { s.seed, 0, (uint64_t)c->sample, REEL_RNG_SAMPLER, 0 };
            int64_t want[8];
            CHECK_OK(reel__sampler_run(&s.sampler, &in, &k, want, &err));
            reel_decoder_close(&dec);
            for (int t = 0; t < 4; t++) {
                CHECK_EQ_INT(c->frame_indices[t], want[c->clip * 4 + t]);
                CHECK(c->frame_indices[t] < g_frames[c->sample % NVID]);
                /* and the pixels are that frame */
                CHECK_EQ_INT(read_frame_index(b, r, t, c->flipped), c->frame_indices[t]);
            }
        }
        CHECK_OK(reel_loader_release(l, b));
        nb++;
    }
    CHECK_EQ_INT(nb, (2 * NVID + 2) / 3);
    for (int i = 0; i < 2 * NVID; i++) CHECK_EQ_INT(seen[i], 1); /* each sample once */
    CHECK(flipped > 0 && flipped < 4 * NVID);
    /* after the last epoch, NULL for ever */
    reel_batch *b = (reel_batch *)1;
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b == NULL);
    reel_loader_metrics m;
    CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
    CHECK_EQ_INT(m.clips, 4 * NVID);
    CHECK_EQ_INT(m.frames, 16 * NVID);
    CHECK_EQ_INT(m.successes, 2 * NVID);
    CHECK_EQ_INT(m.failures, 0);
    CHECK_NEAR(m.coverage, 1.0, 0);
    CHECK(m.amplification >= 1.0);
    CHECK(m.peak_rss_bytes > 0);
    reel_loader_destroy(&l);
    CHECK(l == NULL);
    reel_dataset_destroy(&ds);
}

TEST(layouts_and_dtypes_hold_the_same_pixels)
{
    reel_dataset *ds = dataset_of_videos(1);
    reel_loader_settings s = readable_settings();
    s.batch_size = 4;
    s.transform.crop = REEL_CROP_RANDOM; /* shared random choices, same seed */
    s.transform.crop_width = 64;
    s.transform.crop_height = 48;
    s.transform.flip = REEL_FLIP_RANDOM;
    reel_error err;
    reel_loader *ref = NULL;
    CHECK_OK(reel_loader_create(&ref, ds, &s, &err));
    reel_batch *rb = NULL;
    CHECK_OK(reel_loader_next(ref, &rb, &err));
    CHECK(rb != NULL);
    const int64_t R = rb->num_clips, T = 4, H = 48, W = 64;
    const float mean[3] = { 0.485f, 0.456f, 0.406f }, stdv[3] = { 0.229f, 0.224f, 0.225f };
    const int dtypes[4] = { REEL_DTYPE_UINT8, REEL_DTYPE_FLOAT32, REEL_DTYPE_FLOAT16, REEL_DTYPE_BFLOAT16 };
    for (int layout = 0; layout < 3; layout++)
        for (int di = 0; di < 4; di++) {
            reel_loader_settings s2 = s;
            s2.transform.layout = layout;
            s2.transform.pixels.dtype = dtypes[di];
            for (int c = 0; c < 3; c++) {
                s2.transform.pixels.mean[c] = mean[c];
                s2.transform.pixels.std[c] = stdv[c];
            }
            s2.decode_threads = 1 + layout;
            reel_loader *l = NULL;
            CHECK_OK(reel_loader_create(&l, ds, &s2, &err));
            reel_batch *b = NULL;
            CHECK_OK(reel_loader_next(l, &b, &err));
            CHECK(b != NULL);
            CHECK_EQ_INT(b->num_clips, R);
            CHECK_EQ_INT(b->dtype, dtypes[di]);
            for (int64_t r = 0; r < R; r++) {
                CHECK_EQ_INT(b->clips[r].crop_x, rb->clips[r].crop_x);
                CHECK_EQ_INT(b->clips[r].flipped, rb->clips[r].flipped);
            }
            /* compare every element with the uint8 HWC reference */
            double worst = 0;
            for (int64_t r = 0; r < R; r++)
                for (int64_t t = 0; t < T; t++)
                    for (int c = 0; c < 3; c++)
                        for (int64_t y = 0; y < H; y++)
                            for (int64_t x = 0; x < W; x++) {
                                int64_t ri = r * rb->strides[0] + t * rb->strides[1] + y * rb->strides[2] +
                                             x * rb->strides[3] + c;
                                double want = ((const uint8_t *)rb->data)[ri];
                                int64_t idx[5];
                                if (layout == REEL_BATCH_BTCHW) {
                                    idx[0] = r;
                                    idx[1] = t;
                                    idx[2] = c;
                                    idx[3] = y;
                                    idx[4] = x;
                                } else if (layout == REEL_BATCH_BCTHW) {
                                    idx[0] = r;
                                    idx[1] = c;
                                    idx[2] = t;
                                    idx[3] = y;
                                    idx[4] = x;
                                } else {
                                    idx[0] = r;
                                    idx[1] = t;
                                    idx[2] = y;
                                    idx[3] = x;
                                    idx[4] = c;
                                }
                                int64_t e = 0;
                                for (int d = 0; d < 5; d++) e += idx[d] * b->strides[d];
                                double got;
                                if (dtypes[di] == REEL_DTYPE_UINT8)
                                    got = ((const uint8_t *)b->data)[e];
                                else if (dtypes[di] == REEL_DTYPE_FLOAT32)
                                    got = ((const float *)b->data)[e];
                                else {
                                    uint16_t hv = ((const uint16_t *)b->data)[e];
                                    if (dtypes[di] == REEL_DTYPE_BFLOAT16) {
                                        uint32_t u = (uint32_t)hv << 16;
                                        float f;
                                        memcpy(&f, &u, 4);
                                        got = f;
                                    } else {
                                        int ex = (hv >> 10) & 31, man = hv & 1023;
                                        double v = ex == 0 ? ldexp(man, -24) : ldexp(1024 + man, ex - 25);
                                        got = (hv & 0x8000) ? -v : v;
                                    }
                                }
                                if (dtypes[di] != REEL_DTYPE_UINT8) got = (got * stdv[c] + mean[c]) * 255.0;
                                double d = fabs(got - want);
                                if (d > worst) worst = d;
                            }
            double tol = dtypes[di] == REEL_DTYPE_BFLOAT16 ? 3.0 : 1.01;
            CHECK_MSG(worst <= tol, "layout %d dtype %d: worst difference %g (of 255)", layout, dtypes[di], worst);
            CHECK_OK(reel_loader_release(l, b));
            reel_loader_destroy(&l);
        }
    CHECK_OK(reel_loader_release(ref, rb));
    reel_loader_destroy(&ref);
    reel_dataset_destroy(&ds);
}

TEST(batches_are_identical_whatever_the_thread_count)
{
    reel_dataset *ds = dataset_of_videos(3);
    reel_loader_settings s = readable_settings();
    s.transform.crop = REEL_CROP_RANDOM_RESIZED;
    s.transform.crop_width = s.transform.crop_height = 48;
    s.transform.flip = REEL_FLIP_RANDOM;
    s.sampler.kind = REEL_SAMPLER_RANDOM_TIMES;
    s.sampler.clips_per_video = 2;
    s.batch_size = 5;
    s.epochs = 2;
    const int threads[3][3] = { { 1, 1, 1 }, { 2, 4, 1 }, { 3, 7, 2 } };
    uint64_t *ref = NULL;
    int nref = 0;
    for (int k = 0; k < 3; k++) {
        s.open_threads = threads[k][0];
        s.decode_threads = threads[k][1];
        s.collate_threads = threads[k][2];
        s.prefetch_batches = 2 + k;
        reel_loader *l = NULL;
        reel_error err;
        CHECK_OK(reel_loader_create(&l, ds, &s, &err));
        int n0, n1;
        uint64_t *e0 = run_epoch(l, 4, &n0);
        uint64_t *e1 = run_epoch(l, 4, &n1);
        CHECK_EQ_INT(n0, 5);
        CHECK_EQ_INT(n1, 5);
        CHECK(memcmp(e0, e1, 5 * sizeof *e0) != 0); /* epochs differ */
        uint64_t *all = malloc(10 * sizeof *all);
        memcpy(all, e0, 5 * sizeof *all);
        memcpy(all + 5, e1, 5 * sizeof *all);
        free(e0);
        free(e1);
        if (!ref) {
            ref = all;
            nref = 10;
        } else {
            for (int i = 0; i < nref; i++)
                CHECK_MSG(all[i] == ref[i], "threads %d/%d: batch %d differs", threads[k][0], threads[k][1], i);
            free(all);
        }
        reel_loader_destroy(&l);
    }
    free(ref);
    reel_dataset_destroy(&ds);
}

/* Restores the loader to (epoch, samples_seen) of its own order: its
 * checkpoint, moved. */
static int restore_at(reel_loader *l, int64_t epoch, int64_t seen, reel_error *err)
{
    reel_loader_checkpoint cp;
    CHECK_OK(reel_loader_get_checkpoint(l, &cp, NULL));
    cp.epoch = epoch;
    cp.samples_seen = seen;
    return reel_loader_restore_checkpoint(l, &cp, err);
}

TEST(resume_from_a_saved_checkpoint_gives_the_same_batches)
{
    reel_dataset *ds = dataset_of_videos(3); /* 24 samples, batches of 3 -> 8 per epoch */
    reel_loader_settings s = readable_settings();
    s.transform.flip = REEL_FLIP_RANDOM;
    s.epochs = 2;
    reel_error err;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    int n0, n1;
    uint64_t *e0 = run_epoch(l, 4, &n0);
    uint64_t *e1 = run_epoch(l, 4, &n1);
    CHECK_EQ_INT(n0, 8);
    CHECK_EQ_INT(n1, 8);
    reel_loader_destroy(&l);

    /* stop after 3 batches of epoch 1, save, resume in a new loader with other threads */
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    free(run_epoch(l, 4, &n0));
    reel_batch *b;
    for (int i = 0; i < 3; i++) {
        CHECK_OK(reel_loader_next(l, &b, &err));
        CHECK(b != NULL);
        CHECK(batch_digest(b, 4) == e1[i]);
        CHECK_OK(reel_loader_release(l, b));
    }
    reel_loader_checkpoint cp;
    CHECK_OK(reel_loader_get_checkpoint(l, &cp, NULL));
    CHECK_EQ_INT(cp.epoch, 1);
    CHECK_EQ_INT(cp.samples_seen, 9);
    reel_loader_destroy(&l);

    s.decode_threads = 1;
    s.open_threads = 1;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    CHECK_OK(reel_loader_restore_checkpoint(l, &cp, &err));
    int nr;
    uint64_t *rest = run_epoch(l, 4, &nr);
    CHECK_EQ_INT(nr, 5);
    for (int i = 0; i < nr; i++) CHECK_MSG(rest[i] == e1[3 + i], "resumed batch %d differs", i);
    free(rest);
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b == NULL); /* that was the last epoch */

    /* restore on a running loader, with a batch still held across it */
    CHECK_OK(restore_at(l, 0, 0, &err));
    reel_batch *held = NULL;
    CHECK_OK(reel_loader_next(l, &held, &err));
    CHECK(held && batch_digest(held, 4) == e0[0]);
    uint64_t held_digest = batch_digest(held, 4);
    CHECK_OK(restore_at(l, 0, 6, &err));
    uint64_t *tail = run_epoch(l, 4, &nr);
    CHECK_EQ_INT(nr, 6);
    for (int i = 0; i < nr; i++) CHECK(tail[i] == e0[2 + i]);
    free(tail);
    CHECK(batch_digest(held, 4) == held_digest); /* still valid, untouched */
    CHECK_OK(reel_loader_release(l, held));
    CHECK_STATUS(reel_loader_release(l, held), REEL_E_INVALID_ARG); /* twice */
    CHECK_STATUS(restore_at(l, 0, 99, &err), REEL_E_INVALID_ARG);
    reel_loader_destroy(&l);
    free(e0);
    free(e1);
    reel_dataset_destroy(&ds);
}

/* The consumer's position and the ring size come from the loader (the
 * binding keeps no copy of them): the epoch and the batches left follow
 * next(), a mid-epoch restore (fewer batches left) and the end of the run. */
TEST(the_consumer_position_and_ring_size_are_the_loaders)
{
    reel_dataset *ds = dataset_of_videos(1); /* 8 samples, batches of 3 -> 3 per epoch */
    reel_loader_settings s = readable_settings();
    s.epochs = 2;
    s.first_epoch = 5;
    s.prefetch_batches = 2;
    reel_error err;
    reel_loader *l = NULL;
    CHECK_EQ_INT((int)reel_loader_get_ring_size(NULL), 0);
    CHECK_EQ_INT(reel_loader_get_batches_left(NULL), 0);
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    CHECK_EQ_INT((int)reel_loader_get_ring_size(l), 2);
    CHECK_EQ_INT(reel_loader_get_epoch(l), 5);
    CHECK_EQ_INT(reel_loader_get_batches_left(l), 3);
    reel_batch *b = NULL;
    for (int i = 0; i < 3; i++) {
        CHECK_OK(reel_loader_next(l, &b, &err));
        CHECK(b != NULL);
        CHECK_OK(reel_loader_release(l, b));
        CHECK_EQ_INT(reel_loader_get_batches_left(l), 2 - i);
        CHECK_EQ_INT(reel_loader_get_epoch(l), 5);
    }
    CHECK_OK(reel_loader_next(l, &b, &err)); /* the end of epoch 5 */
    CHECK(b == NULL);
    CHECK_EQ_INT(reel_loader_get_epoch(l), 6);
    CHECK_EQ_INT(reel_loader_get_batches_left(l), 3);
    /* mid-epoch: 4 of epoch 6's 8 samples seen, 2 batches left (3 + 1) */
    CHECK_OK(restore_at(l, 6, 4, &err));
    CHECK_EQ_INT(reel_loader_get_epoch(l), 6);
    CHECK_EQ_INT(reel_loader_get_batches_left(l), 2);
    int n = 0;
    for (;;) {
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        n++;
        CHECK_OK(reel_loader_release(l, b));
    }
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(reel_loader_get_epoch(l), 7); /* one past the last */
    CHECK_EQ_INT(reel_loader_get_batches_left(l), 0);
    CHECK_EQ_INT((int)reel_loader_get_ring_size(l), 2);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

/* Digest of one row of a batch: its pixels and what it says. */
static uint64_t row_digest(const reel_batch *b, int64_t r, int T)
{
    const reel_clip_info *c = &b->clips[r];
    uint64_t h = fnv(1469598103934665603ull, (const uint8_t *)b->data + r * b->strides[0], (size_t)b->strides[0]);
    h = fnv(h, &c->sample, sizeof c->sample);
    h = fnv(h, &c->clip, sizeof c->clip);
    h = fnv(h, &c->flipped, sizeof c->flipped);
    h = fnv(h, &c->crop_x, 4 * sizeof c->crop_x);
    return fnv(h, c->frame_indices, (size_t)T * sizeof *c->frame_indices);
}

TEST(a_list_of_samples_at_a_first_epoch_decodes_what_the_whole_loader_does)
{
    reel_dataset *ds = dataset_of_videos(3); /* 24 samples */
    reel_loader_settings s = readable_settings();
    s.transform.crop = REEL_CROP_RANDOM;
    s.transform.crop_width = 64;
    s.transform.crop_height = 48;
    s.transform.flip = REEL_FLIP_RANDOM;
    s.epochs = 2;
    reel_error err;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    uint64_t want[24] = { 0 };
    reel_batch *b = NULL;
    for (int e = 0; e < 2; e++)
        for (;;) {
            CHECK_OK(reel_loader_next(l, &b, &err));
            if (!b) break;
            for (int64_t r = 0; r < b->num_clips; r++)
                if (e == 1) want[b->clips[r].sample] = row_digest(b, r, 4);
            CHECK_OK(reel_loader_release(l, b));
        }
    reel_loader_destroy(&l);

    /* epoch 1 only, five chosen samples (one twice), in the list's order */
    const int64_t list[5] = { 17, 3, 3, 22, 9 };
    s.samples = list;
    s.num_samples = 5;
    s.first_epoch = 1;
    s.epochs = 1;
    s.batch_size = 2;
    s.decode_threads = 1;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    int got = 0;
    for (;;) {
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        CHECK_EQ_INT(b->epoch, 1);
        for (int64_t r = 0; r < b->num_clips; r++, got++) {
            CHECK(got < 5);
            CHECK_EQ_INT(b->clips[r].sample, list[got]);
            CHECK_MSG(row_digest(b, r, 4) == want[list[got]], "sample %lld differs", (long long)list[got]);
        }
        CHECK_OK(reel_loader_release(l, b));
    }
    CHECK_EQ_INT(got, 5);
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b == NULL); /* that was the only epoch */
    reel_loader_destroy(&l);

    /* refusals */
    const int64_t bad[2] = { 0, 24 };
    s.samples = bad;
    s.num_samples = 2;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);
    CHECK(strstr(err.message, "samples[1] = 24") != NULL);
    s.num_samples = 0;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);
    s.samples = NULL;
    s.first_epoch = -1;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);

    /* videos are read as one block */
    int64_t *starts = NULL;
    size_t nb = 0;
    CHECK_OK(reel_dataset_get_read_blocks(ds, &starts, &nb, &err));
    CHECK_EQ_INT(nb, 1);
    CHECK(starts[0] == 0 && starts[1] == 24);
    reel_free(starts);
    reel_dataset_destroy(&ds);
}

TEST(shards_are_disjoint_cover_the_dataset_and_have_equal_batch_counts)
{
    reel_dataset *ds = dataset_of_videos(2); /* 16 samples over 3 ranks: 6 each, 2 padded */
    reel_loader_settings s = readable_settings();
    s.world_size = 3;
    s.batch_size = 4;
    int count[2 * NVID] = { 0 };
    int padded = 0;
    for (int rank = 0; rank < 3; rank++) {
        s.rank = rank;
        reel_loader *l = NULL;
        reel_error err;
        CHECK_OK(reel_loader_create(&l, ds, &s, &err));
        CHECK_EQ_INT(reel_loader_get_batches_per_epoch(l), 2);
        int nb = 0;
        int64_t rows = 0;
        for (;;) {
            reel_batch *b;
            CHECK_OK(reel_loader_next(l, &b, &err));
            if (!b) break;
            nb++;
            rows += b->num_clips;
            for (int64_t r = 0; r < b->num_clips; r++) {
                if (b->clips[r].padded)
                    padded++;
                else
                    count[b->clips[r].sample]++;
                CHECK_EQ_INT(read_frame_index(b, r, 0, 0), b->clips[r].frame_indices[0]);
            }
            CHECK_OK(reel_loader_release(l, b));
        }
        CHECK_EQ_INT(nb, 2);
        CHECK_EQ_INT(rows, 6);
        reel_loader_destroy(&l);
    }
    for (int i = 0; i < 2 * NVID; i++) CHECK_EQ_INT(count[i], 1);
    CHECK_EQ_INT(padded, 2);
    reel_dataset_destroy(&ds);
}

TEST(unordered_mode_delivers_every_batch_once)
{
    reel_dataset *ds = dataset_of_videos(4);
    reel_loader_settings s = readable_settings();
    s.ordered = 0;
    s.batch_size = 2;
    s.decode_threads = 4;
    s.epochs = 2;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    for (int e = 0; e < 2; e++) {
        int seen_batch[16] = { 0 }, seen_pos[32] = { 0 };
        for (;;) {
            reel_batch *b;
            CHECK_OK(reel_loader_next(l, &b, &err));
            if (!b) break;
            CHECK_EQ_INT(b->epoch, e);
            CHECK(b->index >= 0 && b->index < 16);
            seen_batch[b->index]++;
            for (int64_t r = 0; r < b->num_clips; r++) seen_pos[b->clips[r].position]++;
            CHECK_OK(reel_loader_release(l, b));
        }
        for (int i = 0; i < 16; i++) CHECK_EQ_INT(seen_batch[i], 1);
        for (int i = 0; i < 32; i++) CHECK_EQ_INT(seen_pos[i], 1);
        reel_loader_checkpoint cp;
        CHECK_OK(reel_loader_get_checkpoint(l, &cp, NULL));
        CHECK_EQ_INT(cp.epoch, e + 1);
        CHECK_EQ_INT(cp.samples_seen, 0);
    }
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

TEST(segments_and_time_samplers_stay_inside_the_segment)
{
    make_videos();
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create(&ds, &err));
    /* v07 has 79 frames at 25 fps: [1.0 s, 2.0 s) is frames 25..49 */
    for (int i = 0; i < 6; i++) CHECK_OK(reel_dataset_add(ds, g_paths[NVID - 1], 0, 1.0, 2.0, &err));
    reel_loader_settings s = readable_settings();
    s.sampler.kind = REEL_SAMPLER_RANDOM_TIMES;
    s.sampler.frames_per_clip = 3;
    s.sampler.clips_per_video = 2;
    s.sampler.seconds_between_frames = 0.2;
    s.batch_size = 6;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    reel_batch *b;
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b && b->num_clips == 12);
    for (int64_t r = 0; r < b->num_clips; r++) {
        const reel_clip_info *c = &b->clips[r];
        for (int t = 0; t < 3; t++) {
            CHECK(c->frame_indices[t] >= 25 && c->frame_indices[t] < 50);
            CHECK_EQ_INT(read_frame_index(b, r, t, 0), c->frame_indices[t]);
            /* pts in seconds agrees with the frame index at 25 fps */
            double sec = (double)c->pts[t] * c->time_base_num / c->time_base_den;
            CHECK_NEAR(sec * 25.0, (double)c->frame_indices[t], 0.01);
        }
        CHECK_EQ_INT(c->frame_indices[1] - c->frame_indices[0], 5);
    }
    CHECK_OK(reel_loader_release(l, b));
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

TEST(shutdown_mid_epoch_joins_and_frees)
{
    reel_dataset *ds = dataset_of_videos(8);
    reel_loader_settings s = readable_settings();
    s.decode_threads = 4;
    s.batch_size = 2;
    for (int round = 0; round < 5; round++) {
        reel_loader *l = NULL;
        reel_error err;
        CHECK_OK(reel_loader_create(&l, ds, &s, &err));
        reel_batch *b = NULL;
        if (round > 0) {
            CHECK_OK(reel_loader_next(l, &b, &err));
            CHECK(b != NULL);
        }
        if (round == 2) CHECK_OK(reel_loader_release(l, b));
        if (round == 3) usleep(20000); /* threads deep in their work */
        reel_loader_destroy(&l);       /* with a batch still held in rounds 1, 3, 4 */
        CHECK(l == NULL);
    }
    reel_loader_destroy(NULL);
    reel_dataset_destroy(&ds);
}

TEST(bad_settings_and_empty_datasets_are_refused)
{
    reel_dataset *ds = dataset_of_videos(1);
    reel_loader_settings s = readable_settings();
    reel_loader *l = NULL;
    reel_error err;
    s.batch_size = 0;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);
    CHECK(l == NULL);
    s = readable_settings();
    s.transform.crop = REEL_CROP_NONE;
    s.transform.resize = REEL_RESIZE_SHORT_SIDE;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);
    s = readable_settings();
    s.rank = 1;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);
    /* the embedded decoder settings, by the decoder's own rules, named by their path */
    s = readable_settings();
    s.decoder.threads = -1;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);
    CHECK_MSG(strstr(err.message, "loader: decoder.threads must be >= 0") != NULL, "%s", err.message);
    s = readable_settings();
    s.decoder.corrupt_policy = (reel_corrupt_policy)7;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);
    CHECK_MSG(strstr(err.message, "decoder.corrupt_policy must be in [0, 1] (got 7)") != NULL, "%s", err.message);
    s = readable_settings();
    s.decoder.index_mode = (reel_index_mode)3;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);
    CHECK_MSG(strstr(err.message, "decoder.index_mode") != NULL, "%s", err.message);
    s = readable_settings();
    s.decoder.index_path = "/tmp/one.reelidx"; /* one sidecar for every video: refused, not ignored */
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);
    CHECK_MSG(strstr(err.message, "decoder.index_path") != NULL, "%s", err.message);
    CHECK(l == NULL);
    s = readable_settings();
    s.batch_size = 100;
    s.drop_last = 1;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_EMPTY);
    reel_dataset *empty = NULL;
    CHECK_OK(reel_dataset_create(&empty, &err));
    s = readable_settings();
    CHECK_STATUS(reel_loader_create(&l, empty, &s, &err), REEL_E_EMPTY);
    reel_dataset_destroy(&empty);
    /* a loader freezes its dataset */
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    CHECK_STATUS(reel_dataset_add(ds, g_paths[0], 0, 0, -1, &err), REEL_E_INVALID_ARG);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

static int g_trace_members;
static int count_member(void *op, const char *key, const reel_json_value *v)
{
    (void)op;
    (void)v;
    if (strcmp(key, "traceEvents") == 0) g_trace_members++;
    return 0;
}

TEST(metrics_json_and_chrome_trace)
{
    reel_dataset *ds = dataset_of_videos(2);
    reel_loader_settings s = readable_settings();
    s.trace = 1;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    int n;
    free(run_epoch(l, 4, &n));
    reel_loader_metrics m;
    CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
    CHECK(m.seconds > 0);
    CHECK(m.frames_per_second > 0);
    CHECK(m.data_time_s > 0);
    CHECK(m.ring_bytes > 0);
    CHECK_EQ_STR(m.stages[REEL_STAGE_DECODE].name, "decode");
    CHECK_EQ_INT(m.stages[REEL_STAGE_DECODE].threads, 3);
    CHECK_EQ_INT(m.stages[REEL_STAGE_DECODE].items, 2 * NVID);
    CHECK_EQ_INT(m.stages[REEL_STAGE_OPEN].items, 2 * NVID);
    CHECK_EQ_INT(m.stages[REEL_STAGE_COLLATE].items, n);
    CHECK(m.stages[REEL_STAGE_DECODE].busy_fraction > 0 && m.stages[REEL_STAGE_DECODE].busy_fraction <= 1);
    CHECK(m.bottleneck != NULL);
    char *json = NULL;
    CHECK_OK(reel_loader_get_metrics_json(l, &json, &err));
    const char *fields[] = { "\"frames\":",
                             "\"clips\":",
                             "\"seconds\":",
                             "\"frames_per_second\":",
                             "\"coverage\":",
                             "\"data_time_s\":",
                             "\"peak_rss_bytes\":",
                             "\"failures\":[]",
                             "\"stages\":[",
                             "\"bottleneck\":",
                             "\"decode_amplification\":" };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        CHECK_MSG(strstr(json, fields[i]) != NULL, "no %s in %s", fields[i], json);
    CHECK_EQ_INT(reel__json_object_each(json, strlen(json), count_member, NULL, NULL), 0); /* valid JSON */
    reel_free(json);

    char path[1100];
    snprintf(path, sizeof path, "%s/trace.json", harness_tmpdir());
    CHECK_OK(reel_loader_write_trace(l, path, &err));
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    CHECK(fread(text, 1, (size_t)size, f) == (size_t)size);
    text[size] = '\0';
    fclose(f);
    g_trace_members = 0;
    CHECK_EQ_INT(reel__json_object_each(text, (size_t)size, count_member, NULL, NULL), 0);
    CHECK_EQ_INT(g_trace_members, 1);
    CHECK(strstr(text, "\"name\":\"decode-2\"") != NULL);
    CHECK(strstr(text, "\"name\":\"open-0\"") != NULL);
    CHECK(strstr(text, "\"name\":\"consumer\"") != NULL);
    CHECK(strstr(text, "\"name\":\"decode\",\"cat\":\"reel\",\"ph\":\"X\"") != NULL);
    CHECK(strstr(text, "v00.mp4") != NULL);
    free(text);
    CHECK_STATUS(reel_loader_write_trace(l, "/nonexistent-dir/x.json", &err), REEL_E_IO);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

typedef struct release_job {
    reel_loader *l;
    reel_batch *b;
    int status;
} release_job;

static void *release_main(void *arg)
{
    release_job *j = arg;
    j->status = reel_loader_release(j->l, j->b);
    return NULL;
}

TEST(release_from_another_thread)
{
    reel_dataset *ds = dataset_of_videos(2);
    reel_loader_settings s = readable_settings();
    s.prefetch_batches = 2;
    s.batch_size = 2;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    int n = 0;
    reel_batch *prev = NULL;
    /* hold two buffers at once (the whole ring), hand the older back from
     * another thread, and keep going */
    for (;;) {
        reel_batch *b;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        n++;
        if (prev) {
            release_job j = { l, prev, -1 };
            pthread_t t;
            CHECK(pthread_create(&t, NULL, release_main, &j) == 0);
            pthread_join(t, NULL);
            CHECK_OK(j.status);
        }
        prev = b;
    }
    CHECK_OK(reel_loader_release(l, prev));
    CHECK_EQ_INT(n, NVID);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

TEST(no_leak_under_valgrind_after_a_shutdown_mid_epoch)
{
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define REEL_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(REEL_TEST_SANITIZED)
    harness_skip("valgrind does not run sanitized binaries");
#endif
    if (harness_env("REEL_SKIP_VALGRIND", NULL)) harness_skip("REEL_SKIP_VALGRIND is set");
    if (system("valgrind --version >/dev/null 2>&1") != 0) harness_skip("no valgrind");
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) harness_skip("cannot find the test binary");
    self[n] = '\0';
    make_videos(); /* written here, so the child only decodes */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", g_paths[0]);
    *strrchr(dir, '/') = '\0';
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "REEL_PIPELINE_VIDEOS='%s' valgrind -q --leak-check=full --show-leak-kinds=definite,indirect "
             "--errors-for-leak-kinds=definite,indirect --error-exitcode=9 '%s' shutdown_mid_epoch_joins_and_frees "
             ">/dev/null 2>&1",
             dir, self);
    int st = system(cmd);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "valgrind found leaks or errors (exit %d); rerun: %s",
              WIFEXITED(st) ? WEXITSTATUS(st) : -1, cmd);
}
