/* test_pipeline_failures.c: the loader when samples fail: bad files under
 * skip, replace and raise, per-sample time limits and the watchdog, the
 * drop policy, a timed next while the ring is held, min_coverage and the
 * bounded failure log. */
#define _GNU_SOURCE
#include "harness.h"

#include "reel/pipeline.h"
#include "core/json.h"
#include "pipeline/rng.h"
#include "pipeline/sampler_internal.h"
#include "loader_common.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A dataset with bad files among good ones. */
static reel_dataset *dataset_with_bad_files(char bad[3][1024])
{
    make_videos();
    snprintf(bad[0], 1024, "%s/missing.mp4", harness_tmpdir());
    snprintf(bad[1], 1024, "%s/garbage.mp4", harness_tmpdir());
    snprintf(bad[2], 1024, "%s/truncated.mp4", harness_tmpdir());
    FILE *f = fopen(bad[1], "wb");
    CHECK(f != NULL);
    for (int i = 0; i < 5000; i++) fputc((i * 7919) & 255, f);
    fclose(f);
    /* the first 40% of a real file */
    FILE *in = fopen(g_paths[NVID - 1], "rb");
    CHECK(in != NULL);
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    fseek(in, 0, SEEK_SET);
    char *buf = malloc((size_t)size);
    CHECK(fread(buf, 1, (size_t)size, in) == (size_t)size);
    fclose(in);
    f = fopen(bad[2], "wb");
    fwrite(buf, 1, (size_t)(size * 2 / 5), f);
    fclose(f);
    free(buf);
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create(&ds, &err));
    for (int i = 0; i < NVID; i++) {
        CHECK_OK(reel_dataset_add(ds, g_paths[i], i, 0, -1, &err));
        if (i % 3 == 1) CHECK_OK(reel_dataset_add(ds, bad[i / 3], 100 + i / 3, 0, -1, &err));
    }
    return ds; /* 8 good + 3 bad */
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

TEST(bad_files_are_skipped_and_recorded)
{
    char bad[3][1024];
    reel_dataset *ds = dataset_with_bad_files(bad);
    reel_loader_settings s = readable_settings();
    s.batch_size = 4;
    s.epochs = 2;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    for (int e = 0; e < 2; e++) {
        int64_t rows = 0, failed = 0;
        int nb = 0;
        for (;;) {
            reel_batch *b;
            CHECK_OK(reel_loader_next(l, &b, &err));
            if (!b) break;
            nb++;
            rows += b->num_clips;
            failed += b->num_failed;
            CHECK_EQ_INT(b->num_clips, b->num_samples - b->num_failed);
            for (int64_t r = 0; r < b->num_clips; r++) {
                CHECK(b->clips[r].label < 100);
                CHECK_EQ_INT(read_frame_index(b, r, 0, 0), b->clips[r].frame_indices[0]);
                CHECK_EQ_INT(read_frame_index(b, r, 3, 0), b->clips[r].frame_indices[3]);
            }
            CHECK_OK(reel_loader_release(l, b));
        }
        CHECK_EQ_INT(nb, 3);
        CHECK_EQ_INT(rows, NVID);
        CHECK_EQ_INT(failed, 3);
    }
    CHECK_EQ_INT(reel_loader_get_num_failures(l), 6);
    int found[3] = { 0 };
    for (int64_t i = 0; i < 6; i++) {
        reel_failure f;
        memset(&f, 0xA5, sizeof f);
        CHECK_OK(reel_loader_get_failure(l, i, &f, &err));
        CHECK(all_zero(f.reserved, sizeof f.reserved)); /* common.h: outputs clear reserved */
        int which = -1;
        for (int k = 0; k < 3; k++)
            if (strcmp(f.path, bad[k]) == 0) which = k;
        CHECK_MSG(which >= 0, "unexpected failure %s", f.path);
        found[which]++;
        CHECK_MSG(strncmp(f.reason, f.path, strlen(f.path)) == 0, "reason \"%s\" does not name the file", f.reason);
        CHECK(f.status < 0);
        if (which == 0) CHECK_EQ_INT(f.status, REEL_E_NOT_FOUND);
    }
    for (int k = 0; k < 3; k++) CHECK_EQ_INT(found[k], 2);
    CHECK_STATUS(reel_loader_get_failure(l, 6, &(reel_failure){ 0 }, &err), REEL_E_OUT_OF_RANGE);
    reel_loader_metrics m;
    memset(&m, 0xA5, sizeof m);
    CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
    CHECK(all_zero(m.reserved, sizeof m.reserved) && all_zero(m.remote.reserved, sizeof m.remote.reserved));
    CHECK(all_zero(m.stages[REEL_STAGE_DECODE].reserved, sizeof m.stages[0].reserved));
    reel_loader_checkpoint cp;
    memset(&cp, 0xA5, sizeof cp);
    CHECK_OK(reel_loader_get_checkpoint(l, &cp, NULL));
    CHECK(all_zero(cp.reserved, sizeof cp.reserved));
    CHECK_EQ_INT(m.successes, 2 * NVID);
    CHECK_EQ_INT(m.failures, 6);
    CHECK_EQ_INT(m.attempts, 2 * NVID + 6);
    CHECK_NEAR(m.coverage, 16.0 / 22.0, 1e-12);
    char *json = NULL;
    CHECK_OK(reel_loader_get_metrics_json(l, &json, &err));
    CHECK(strstr(json, "\"failures\":[{\"path\":") != NULL);
    CHECK(strstr(json, "garbage.mp4") != NULL);
    CHECK(strstr(json, "truncated.mp4") != NULL);
    reel_free(json);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

TEST(bad_files_are_replaced_by_other_samples)
{
    char bad[3][1024];
    reel_dataset *ds = dataset_with_bad_files(bad);
    reel_loader_settings s = readable_settings();
    s.batch_size = 4;
    s.on_error = REEL_ON_ERROR_REPLACE;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    int64_t rows = 0, replaced = 0;
    for (;;) {
        reel_batch *b;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        CHECK_EQ_INT(b->num_clips, b->num_samples); /* full batches */
        for (int64_t r = 0; r < b->num_clips; r++) {
            const reel_clip_info *c = &b->clips[r];
            CHECK(c->label < 100);
            if (c->sample != c->requested) {
                replaced++;
                CHECK(c->attempt > 0);
            }
            CHECK_EQ_INT(read_frame_index(b, r, 0, 0), c->frame_indices[0]);
        }
        rows += b->num_clips;
        CHECK_OK(reel_loader_release(l, b));
    }
    CHECK_EQ_INT(rows, 11);
    CHECK_EQ_INT(replaced, 3);
    reel_loader_metrics m;
    CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
    CHECK(m.replacements >= 3);
    CHECK_EQ_INT(m.failures, m.replacements);
    CHECK(m.coverage < 1.0);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

TEST(bad_files_raise_when_asked)
{
    char bad[3][1024];
    reel_dataset *ds = dataset_with_bad_files(bad);
    reel_loader_settings s = readable_settings();
    s.batch_size = 2;
    s.shuffle = 0;
    s.on_error = REEL_ON_ERROR_RAISE;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    /* order: v0, v1, missing, v2, v3, v4, garbage, ... */
    reel_batch *b;
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b && b->num_clips == 2);
    CHECK_OK(reel_loader_release(l, b));
    reel_error_clear(&err);
    CHECK_STATUS(reel_loader_next(l, &b, &err), REEL_E_NOT_FOUND);
    CHECK(b == NULL);
    CHECK(strstr(err.message, "missing.mp4") != NULL);
    /* the raised failure names its sample without parsing the message */
    reel_failure f;
    CHECK_OK(reel_loader_get_raised_failure(l, &f, NULL));
    CHECK_EQ_STR(f.path, bad[0]);
    CHECK_EQ_STR(f.reason, err.message);
    CHECK_EQ_INT(f.status, REEL_E_NOT_FOUND);
    CHECK_EQ_INT(f.sample, 2);
    CHECK_EQ_INT(f.position, 2);
    CHECK_EQ_INT(f.epoch, 0);
    /* and it goes on with the next batch; that call raised nothing */
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b && b->index == 2);
    CHECK_STATUS(reel_loader_get_raised_failure(l, &f, NULL), REEL_E_NO_DATA);
    CHECK_OK(reel_loader_release(l, b));
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

TEST(time_limit_fails_slow_samples_without_stalling)
{
    reel_dataset *ds = dataset_of_videos(1);
    reel_loader_settings s = readable_settings();
    s.sample_time_limit = 1e-9;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    int nb = 0, st;
    for (;;) {
        reel_batch *b;
        st = reel_loader_next(l, &b, &err);
        if (st != REEL_OK || !b) break;
        CHECK_EQ_INT(b->num_clips, 0);
        nb++;
        CHECK_OK(reel_loader_release(l, b));
    }
    CHECK_EQ_INT(nb, 3);
    /* an epoch in which nothing loaded ends loudly, naming the cause */
    CHECK_EQ_INT(st, REEL_E_NO_DATA);
    CHECK_MSG(strstr(err.message, "no sample of epoch 0 could be loaded") && strstr(err.message, "time limit"), "%s",
              err.message);
    CHECK_EQ_INT(reel_loader_get_num_failures(l), NVID);
    int64_t timeouts = -1;
    CHECK_OK(reel_loader_get_failures_by_cause(l, REEL_E_TIMEOUT, &timeouts, NULL));
    CHECK_EQ_INT(timeouts, NVID);
    /* a status that is no failure is refused, naming the call */
    for (int bad = 0; bad < 2; bad++) {
        CHECK_STATUS(reel_loader_get_failures_by_cause(l, bad ? REEL_E_LAST - 1 : REEL_OK, &timeouts, &err),
                     REEL_E_INVALID_ARG);
        CHECK_MSG(strstr(err.message, "failures_by_cause") && strstr(err.message, "not a failure"), "%s", err.message);
    }
    reel_failure f;
    CHECK_OK(reel_loader_get_failure(l, 0, &f, &err));
    CHECK_EQ_INT(f.status, REEL_E_TIMEOUT);
    CHECK(strstr(f.reason, "time limit") != NULL);
    reel_loader_metrics m;
    CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
    CHECK_NEAR(m.coverage, 0, 0);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

TEST(drop_policy_fails_videos_too_short_for_a_clip)
{
    reel_dataset *ds = dataset_of_videos(1);
    reel_loader_settings s = readable_settings();
    s.sampler.frames_per_clip = 20;
    s.sampler.frame_stride = 3; /* span 58: videos of 30..51 frames are too short */
    s.sampler.policy = REEL_CLIP_DROP;
    s.batch_size = 8;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    reel_batch *b;
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b != NULL);
    int64_t want = 0;
    for (int i = 0; i < NVID; i++) want += g_frames[i] >= 58;
    CHECK_EQ_INT(b->num_clips, want);
    for (int64_t r = 0; r < b->num_clips; r++)
        CHECK_EQ_INT(read_frame_index(b, r, 19, 0), b->clips[r].frame_indices[19]);
    CHECK_OK(reel_loader_release(l, b));
    reel_failure f;
    CHECK_OK(reel_loader_get_failure(l, 0, &f, &err));
    CHECK_EQ_INT(f.status, REEL_E_OUT_OF_RANGE);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

TEST(watchdog_abandons_a_sample_stuck_in_a_long_decode)
{
    /* One long GOP: its last frame needs 500 frames of 640x360 decoded,
     * about a hundred times the work of a small sample here, while the limit
     * is a few small samples' worth (measured first, so sanitizer builds
     * scale alike). The visitor never runs before that frame, so only the
     * watchdog can keep the batch moving. */
    make_videos();
    double small_s;
    {
        reel_dataset *cal = dataset_of_videos(1);
        reel_loader_settings s = readable_settings();
        s.sampler.kind = REEL_SAMPLER_REGULAR_INDICES;
        s.sampler.frames_per_clip = 1;
        s.sampler.range_start = -1;
        reel_loader *l = NULL;
        reel_error err;
        CHECK_OK(reel_loader_create(&l, cal, &s, &err));
        int n;
        free(run_epoch(l, 1, &n));
        reel_loader_metrics m;
        CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
        small_s = (m.stages[REEL_STAGE_OPEN].busy_seconds + m.stages[REEL_STAGE_DECODE].busy_seconds) / NVID;
        reel_loader_destroy(&l);
        reel_dataset_destroy(&cal);
    }
    double limit = 8 * small_s < 0.05 ? 0.05 : 8 * small_s;
    char longv[1100];
    snprintf(longv, sizeof longv, "%s/long_gop.mp4", harness_tmpdir());
    reel_synth_params p;
    reel_synth_default_params(&p);
    p.path = longv;
    p.width = 640;
    p.height = 360;
    p.num_frames = 500;
    p.gop = 500;
    p.bframes = 0;
    reel_error err;
    CHECK_OK(reel_synth_write(&p, &err));
    /* how long the long decode takes here (FFmpeg is not instrumented by
     * sanitizers, our code is: the ratio varies by build) */
    double long_s;
    {
        reel_decoder *dec = NULL;
        reel_decoder_settings ds1;
        reel_decoder_default_settings(&ds1);
        ds1.threads = 1; /* as the loader's decoders */
        CHECK_OK(reel_decoder_open(&dec, longv, &ds1, &err));
        struct timespec a, b2;
        clock_gettime(CLOCK_MONOTONIC, &a);
        int64_t last = 499;
        reel_transform t;
        reel_transform_default_settings(&t);
        t.width = 64;
        t.height = 36;
        uint8_t px[64 * 36 * 3];
        CHECK_OK(reel_decoder_get_frames(dec, &last, 1, &t, px, sizeof px, NULL, &err));
        clock_gettime(CLOCK_MONOTONIC, &b2);
        long_s = (double)(b2.tv_sec - a.tv_sec) + (b2.tv_nsec - a.tv_nsec) / 1e9;
        reel_decoder_close(&dec);
    }
    if (limit * 3 > long_s)
        harness_skip("the long decode is too short against a small sample in this build to tell the watchdog apart");
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create(&ds, &err));
    CHECK_OK(reel_dataset_add(ds, g_paths[0], 0, 0, -1, &err));
    CHECK_OK(reel_dataset_add(ds, longv, 99, 0, -1, &err));
    CHECK_OK(reel_dataset_add(ds, g_paths[1], 1, 0, -1, &err));
    reel_loader_settings s = readable_settings();
    s.shuffle = 0;
    s.batch_size = 3;
    s.sampler.kind = REEL_SAMPLER_REGULAR_INDICES;
    s.sampler.frames_per_clip = 1;
    s.sampler.range_start = -1; /* the last frame */
    s.sample_time_limit = limit;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    reel_batch *b = NULL;
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b != NULL);
    CHECK_EQ_INT(b->num_failed, 1);
    CHECK_EQ_INT(b->num_clips, 2);
    for (int64_t r = 0; r < b->num_clips; r++) {
        CHECK(b->clips[r].label != 99);
        CHECK_EQ_INT(read_frame_index(b, r, 0, 0), b->clips[r].frame_indices[0]);
    }
    reel_failure f;
    CHECK_OK(reel_loader_get_failure(l, 0, &f, &err));
    CHECK_EQ_INT(f.status, REEL_E_TIMEOUT);
    CHECK_EQ_STR(f.path, longv);
    CHECK_MSG(strstr(f.reason, "abandoned") != NULL, "not abandoned by the watchdog: %s", f.reason);
    CHECK_OK(reel_loader_release(l, b));
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b == NULL);
    /* The abandoned sample's decoder is interrupted at its next packet, so
     * its worker comes back about when the watchdog gives up on it (limit
     * plus grace plus one watchdog period, 1.5 x limit), not after the whole
     * long decode (at least 3 x limit). Wait for it, then compare. */
    reel_loader_metrics m;
    for (int tries = 0; tries < 3000; tries++) {
        CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
        if (m.stages[REEL_STAGE_DECODE].items >= 3) break;
        struct timespec nap = { 0, 10000000 };
        nanosleep(&nap, NULL);
    }
    CHECK_EQ_INT(m.stages[REEL_STAGE_DECODE].items, 3);
    double busy = m.stages[REEL_STAGE_DECODE].busy_seconds;
    CHECK_MSG(busy < 0.8 * long_s,
              "decode stage busy %.3f s: the abandoned decode ran on (limit %.3f s, whole "
              "decode %.3f s)",
              busy, limit, long_s);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

TEST(timed_next_times_out_while_the_ring_is_held_and_changes_nothing)
{
    reel_dataset *ds = dataset_of_videos(4);
    reel_loader_settings s = readable_settings();
    s.prefetch_batches = 2;
    reel_loader *l = NULL;
    reel_error err;
    /* the reference: the same epoch with plain next */
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    int n_ref;
    uint64_t *ref = run_epoch(l, s.sampler.frames_per_clip, &n_ref);
    reel_loader_destroy(&l);
    CHECK(n_ref >= 4);

    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    reel_batch *b = NULL;
    CHECK_STATUS(reel_loader_next_timed(l, &b, -1.0, &err), REEL_E_INVALID_ARG);
    CHECK_MSG(strstr(err.message, "timeout -1 s must be >= 0") != NULL, "%s", err.message);
    CHECK_STATUS(reel_loader_next_timed(l, &b, (double)NAN, &err), REEL_E_INVALID_ARG);
    CHECK_MSG(strstr(err.message, "timeout nan s must be >= 0") != NULL, "%s", err.message);
    reel_batch *held[2];
    CHECK_OK(reel_loader_next_timed(l, &held[0], 30.0, &err));
    CHECK_OK(reel_loader_next_timed(l, &held[1], 30.0, &err));
    CHECK(held[0] && held[1]);
    /* both ring buffers are out: nothing can be made, so a wait must end */
    for (int k = 0; k < 3; k++) {
        b = (reel_batch *)&err; /* overwritten with NULL */
        CHECK_STATUS(reel_loader_next_timed(l, &b, k == 0 ? 0.0 : 0.05, &err), REEL_E_AGAIN);
        CHECK(b == NULL);
        CHECK_MSG(strstr(err.message, "no batch within") != NULL, "message: %s", err.message);
    }
    int n = 0;
    uint64_t got[1024];
    got[n++] = batch_digest(held[0], s.sampler.frames_per_clip);
    got[n++] = batch_digest(held[1], s.sampler.frames_per_clip);
    CHECK_OK(reel_loader_release(l, held[0]));
    CHECK_OK(reel_loader_release(l, held[1]));
    for (;;) { /* the rest of the epoch: as if nothing had timed out */
        CHECK_OK(reel_loader_next_timed(l, &b, 30.0, &err));
        if (!b) break;
        CHECK(n < 1024);
        got[n++] = batch_digest(b, s.sampler.frames_per_clip);
        CHECK_OK(reel_loader_release(l, b));
    }
    CHECK_EQ_INT(n, n_ref);
    for (int i = 0; i < n; i++) CHECK_MSG(got[i] == ref[i], "batch %d differs after timeouts", i);
    reel_loader_metrics m;
    CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
    CHECK_EQ_INT(m.batches, n_ref);
    free(ref);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

/* Issue 10: a failed epoch is loud; min_coverage; the failure log keeps the
 * most recent failures and counts every cause; a callback sees them all. */
static void count_failure(void *opaque, const reel_failure *f)
{
    (void)f;
    ++*(int *)opaque;
}

TEST(min_coverage_and_a_bounded_failure_log)
{
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create(&ds, NULL));
    char bad[1200];
    make_videos();
    for (int i = 0; i < NVID; i++) {
        if (i % 2) {
            snprintf(bad, sizeof bad, "%s/missing%d.mp4", harness_tmpdir(), i);
            CHECK_OK(reel_dataset_add(ds, bad, 0, 0, -1, NULL));
        } else {
            CHECK_OK(reel_dataset_add(ds, g_paths[i], 0, 0, -1, NULL));
        }
    }
    reel_loader_settings s = readable_settings();
    s.min_coverage = 0.75;
    s.failure_log_size = 2;
    s.epochs = 3;
    int seen = 0;
    s.on_failure = count_failure;
    s.on_failure_opaque = &seen;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &s, NULL));
    int no_data = 0;
    for (int guard = 0; guard < 100; guard++) {
        reel_batch *b = NULL;
        reel_error err;
        reel_error_clear(&err);
        int st = reel_loader_next(l, &b, &err);
        if (st == REEL_E_NO_DATA) {
            no_data++;
            CHECK_MSG(strstr(err.message, "below min_coverage") && strstr(err.message, "missing"), "%s", err.message);
            continue;
        }
        CHECK_OK(st);
        if (!b) {
            if (reel_loader_get_batches_per_epoch(l) && no_data == 3) break;
            continue;
        }
        CHECK_OK(reel_loader_release(l, b));
    }
    CHECK_EQ_INT(no_data, 3);
    const int failed = 3 * (NVID / 2);
    CHECK_EQ_INT(seen, failed);
    CHECK_EQ_INT(reel_loader_get_num_failures(l), 2);
    int64_t not_found = -1;
    CHECK_OK(reel_loader_get_failures_by_cause(l, REEL_E_NOT_FOUND, &not_found, NULL));
    CHECK_EQ_INT(not_found, failed);
    reel_failure f;
    CHECK_OK(reel_loader_get_failure(l, 1, &f, NULL));
    CHECK_EQ_INT(f.epoch, 2); /* the most recent */
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

/* A loopback port nothing listens on: bound, then closed. */
static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    socklen_t len = sizeof a;
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* A URL's credentials and query string are redacted once, when its dataset
 * entry is made, and every failure record, message and trace line names the
 * entry by that: a refused connection to a signed URL leaks no secret. The
 * seam names stage 1 "fetch" for input at URLs. */
TEST(failures_of_signed_urls_name_them_redacted)
{
    const int port = closed_port();
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create(&ds, NULL));
    char url[512];
    for (int i = 0; i < 2; i++) {
        snprintf(url, sizeof url, "http://user:pa55word@127.0.0.1:%d/v%d.mp4?X-Amz-Signature=s3cr3t", port, i);
        CHECK_OK(reel_dataset_add(ds, url, 0, 0, -1, NULL));
    }
    reel_loader_settings s = readable_settings();
    reel_remote_settings rs;
    reel_remote_default_settings(&rs);
    rs.max_retries = 0;
    rs.connect_timeout = 5;
    s.decoder.remote = &rs;
    s.trace = 1;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &s, NULL));
    reel_error err;
    reel_error_clear(&err);
    int st = REEL_OK;
    for (int guard = 0; guard < 10 && st == REEL_OK; guard++) {
        reel_batch *b = NULL;
        st = reel_loader_next(l, &b, &err);
        if (b) {
            CHECK_EQ_INT(b->num_clips, 0);
            CHECK_OK(reel_loader_release(l, b));
        }
    }
    CHECK_EQ_INT(st, REEL_E_NO_DATA);
    CHECK_MSG(!strstr(err.message, "pa55word") && !strstr(err.message, "s3cr3t"), "%s", err.message);
    CHECK_EQ_INT(reel_loader_get_num_failures(l), 2);
    for (int i = 0; i < 2; i++) {
        reel_failure f;
        CHECK_OK(reel_loader_get_failure(l, i, &f, NULL));
        CHECK_MSG(strstr(f.path, "127.0.0.1") && !strstr(f.path, "pa55word") && !strstr(f.path, "s3cr3t"), "path %s",
                  f.path);
        CHECK_MSG(strstr(f.reason, "127.0.0.1") && !strstr(f.reason, "pa55word") && !strstr(f.reason, "s3cr3t"),
                  "reason %s", f.reason);
    }
    reel_loader_metrics m;
    CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
    CHECK_EQ_STR(m.stages[REEL_STAGE_OPEN].name, "fetch");
    char trace[1200];
    snprintf(trace, sizeof trace, "%s/signed_trace.json", harness_tmpdir());
    CHECK_OK(reel_loader_write_trace(l, trace, NULL));
    FILE *t = fopen(trace, "rb");
    CHECK(t != NULL);
    char buf[65536];
    size_t got = fread(buf, 1, sizeof buf - 1, t);
    fclose(t);
    buf[got] = '\0';
    CHECK_MSG(strstr(buf, "127.0.0.1") && !strstr(buf, "pa55word") && !strstr(buf, "s3cr3t"), "trace: %.300s", buf);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}
