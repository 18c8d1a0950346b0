/* test_pipeline_memory.c: the loader's memory stays flat over a long run:
 * 2,400 samples (three epochs of 800), resident set size read after every
 * batch; peak RSS stays within the batch ring plus per-thread decoder
 * state. */
#define _GNU_SOURCE
#include "harness.h"

#include "reel/pipeline.h"
#include "testgen.h"

#include <stdio.h>

static int64_t rss_now(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %lld kB", &kb) == 1) break;
    fclose(f);
    return kb < 0 ? -1 : (int64_t)kb * 1024;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t median(const int64_t *v, int n)
{
    int64_t tmp[512];
    memcpy(tmp, v, (size_t)n * sizeof *v);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_i64);
    return tmp[n / 2];
}

TEST(rss_is_flat_over_2400_samples)
{
    if (rss_now() < 0) harness_skip("no /proc/self/status");
    enum { NV = 8, REPS = 100, EPOCHS = 3 };
    char paths[NV][1024];
    for (int i = 0; i < NV; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/m%02d.mp4", harness_tmpdir(), i);
        reel_synth_params p;
        reel_synth_default_params(&p);
        p.path = paths[i];
        p.width = 128;
        p.height = 96;
        p.num_frames = 40 + 5 * i;
        p.gop = 10;
        p.seed = (unsigned)i + 7;
        tg_synth(&p); /* skips when this FFmpeg cannot encode it */
    }
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create(&ds, &err));
    /* a missing file now and then keeps the failure path exercised */
    char missing[1100];
    snprintf(missing, sizeof missing, "%s/missing.mp4", harness_tmpdir());
    for (int r = 0; r < REPS; r++) {
        for (int i = 0; i < NV; i++) CHECK_OK(reel_dataset_add(ds, paths[i], i, 0, -1, &err));
        if (r % 25 == 0) CHECK_OK(reel_dataset_add(ds, missing, 0, 0, -1, &err));
    }
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    s.sampler.frames_per_clip = 4;
    s.transform.short_side = 112;
    s.transform.crop = REEL_CROP_RANDOM;
    s.transform.crop_width = s.transform.crop_height = 96;
    s.transform.flip = REEL_FLIP_RANDOM;
    s.transform.pixels.dtype = REEL_DTYPE_FLOAT16;
    s.batch_size = 16;
    s.epochs = EPOCHS;
    s.decode_threads = 4;
    s.open_threads = 2;
    s.on_error = REEL_ON_ERROR_SKIP;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));

    enum { MAXS = 512 };
    int64_t samples[MAXS];
    int ns = 0, nb = 0;
    int64_t clips = 0;
    for (int e = 0; e < EPOCHS; e++) {
        for (;;) {
            reel_batch *b;
            CHECK_OK(reel_loader_next(l, &b, &err));
            if (!b) break;
            clips += b->num_clips;
            CHECK_OK(reel_loader_release(l, b));
            nb++;
            if (ns < MAXS) samples[ns++] = rss_now();
        }
    }
    CHECK_EQ_INT(clips, (int64_t)NV * REPS * EPOCHS);
    CHECK(ns >= 20);
    reel_loader_metrics m;
    CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
    CHECK_EQ_INT(m.successes, (int64_t)NV * REPS * EPOCHS);
    CHECK_EQ_INT(m.failures, 4 * EPOCHS);
    CHECK_EQ_INT(reel_loader_get_num_failures(l), 4 * EPOCHS);
    if (harness_env("REEL_TEST_VERBOSE", NULL)) {
        fprintf(stderr, "ring %lld bytes, peak RSS %lld; RSS after every batch (MB):", (long long)m.ring_bytes,
                (long long)m.peak_rss_bytes);
        for (int i = 0; i < ns; i++) fprintf(stderr, " %.1f", samples[i] / 1048576.0);
        fprintf(stderr, "\n");
    }
    if (!UNDER_SANITIZER) {
        /* After warm-up (the first fifth) RSS wobbles with the allocator but
         * must not grow: the median of the last fifth stays within a few MB
         * of the median of the second fifth, and no spike goes far above. */
        int w = ns / 5;
        int64_t base = median(samples + w, w), late = median(samples + ns - w, w), hi = 0;
        for (int i = w; i < ns; i++) hi = samples[i] > hi ? samples[i] : hi;
        const int64_t slack = 12 << 20;
        CHECK_MSG(late <= base + slack, "RSS grew from %lld to %lld bytes", (long long)base, (long long)late);
        CHECK_MSG(hi <= base + 3 * slack, "RSS peaked at %lld after settling at %lld", (long long)hi, (long long)base);
        /* the ring plus per-thread decoder state: a few tens of MB here */
        CHECK_MSG(m.peak_rss_bytes < m.ring_bytes + (int64_t)(200 << 20), "peak RSS %lld, ring %lld",
                  (long long)m.peak_rss_bytes, (long long)m.ring_bytes);
    }
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

/* The soak of issue 10: 200 epochs of a small set with two files that always
 * fail. Every epoch's accounting is exact (loaded + failed = planned, the
 * failures the bad files), the failure list stays bounded while the counts
 * cover the whole run, and RSS is flat from the 20th epoch to the 200th. */
TEST(a_200_epoch_soak_keeps_exact_accounts_and_flat_memory)
{
    if (rss_now() < 0) harness_skip("no /proc/self/status");
    enum { NV = 6, NB = 2, EPOCHS = 200 };
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create(&ds, &err));
    for (int i = 0; i < NV; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/soak%d.mp4", harness_tmpdir(), i);
        reel_synth_params p;
        tg_params(&p, path, "h264", 48, 32, 12, 4, 2);
        p.seed = (unsigned)i + 3;
        tg_synth(&p);
        CHECK_OK(reel_dataset_add(ds, path, i, 0, -1, &err));
    }
    for (int i = 0; i < NB; i++) {
        char bad[1024];
        snprintf(bad, sizeof bad, "%s/soak-missing%d.mp4", harness_tmpdir(), i);
        CHECK_OK(reel_dataset_add(ds, bad, 0, 0, -1, &err));
    }
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    s.sampler.frames_per_clip = 2;
    s.transform.short_side = 32;
    s.transform.crop_width = s.transform.crop_height = 32;
    s.batch_size = 4;
    s.epochs = EPOCHS;
    s.decode_threads = 2;
    s.failure_log_size = 50;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    int64_t rss_early = 0, rss_late_max = 0;
    for (int e = 0; e < EPOCHS; e++) {
        int64_t loaded = 0, failed = 0;
        reel_batch *b;
        int st;
        while ((st = reel_loader_next(l, &b, &err)) == REEL_OK && b) {
            loaded += b->num_clips;
            failed += b->num_failed;
            CHECK_EQ_INT(b->num_samples, b->num_clips + b->num_failed);
            reel_loader_release(l, b);
        }
        CHECK_MSG(st == REEL_OK, "epoch %d: %s", e, err.message);
        CHECK_EQ_INT(loaded, NV);
        CHECK_EQ_INT(failed, NB);
        int64_t r = rss_now();
        if (e == 19) rss_early = r;
        if (e >= 20 && r > rss_late_max) rss_late_max = r;
    }
    reel_loader_metrics m;
    CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
    CHECK_EQ_INT(m.successes, (int64_t)NV * EPOCHS);
    CHECK_EQ_INT(m.failures, (int64_t)NB * EPOCHS);
    int64_t not_found = -1;
    CHECK_OK(reel_loader_get_failures_by_cause(l, REEL_E_NOT_FOUND, &not_found, NULL));
    CHECK_EQ_INT(not_found, (int64_t)NB * EPOCHS);
    CHECK_EQ_INT(reel_loader_get_num_failures(l), 50); /* the most recent, bounded */
    if (!UNDER_SANITIZER)
        CHECK_MSG(rss_late_max <= rss_early + (8 << 20), "RSS grew from %lld (epoch 20) to %lld", (long long)rss_early,
                  (long long)rss_late_max);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}
