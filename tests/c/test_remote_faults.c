/* test_remote_faults.c: the loader over videos at URLs through a
 * fault-injecting proxy (latency, connection resets, 503 bursts, bodies cut
 * short, a server that stops answering), in C so that the sanitizer trees
 * (ASan+UBSan, TSan) run the remote paths under faults too. The servers
 * (nginx and tests/python/faultproxy.py) come from tests/python/serve_faults.py,
 * started on 127.0.0.1 by the test and stopped when it ends. */
#define _GNU_SOURCE
#include "harness.h"
#include "server_common.h"
#include "testgen.h"
#include "core/hash.h"

#include <time.h>

#define NVID 6

static char g_paths[NVID][1024];
static int g_made;

static void make_videos(void)
{
    if (g_made) return;
    for (int i = 0; i < NVID; i++) {
        snprintf(g_paths[i], sizeof g_paths[i], "%s/v%02d.mp4", harness_tmpdir(), i);
        reel_synth_params p;
        reel_synth_default_params(&p);
        p.path = g_paths[i];
        p.width = 160;
        p.height = 120;
        p.num_frames = 40 + 5 * i;
        p.gop = 10;
        p.seed = (unsigned)i + 7;
        tg_synth(&p);
    }
    g_made = 1;
}

/* ------------------------------------------------------------ the servers */

typedef test_server servers;

/* Starts nginx over the test's folder and the proxy in front of it; skips
 * when python3 or nginx is missing (make test installs both). */
/* ------------------------------------------------------------ the loader */

typedef struct run_result {
    uint64_t digest;
    int batches;
    int64_t clips;
    reel_loader_metrics m;
    int64_t failures;
    char first_failure[512];
    double seconds;
} run_result;

/* One epoch over the videos (local paths, or URLs under base), with the
 * remote settings given: the digest of every delivered batch. */
static void run_loader(const char *base, const reel_remote_settings *rs, double time_limit, run_result *out)
{
    make_videos();
    memset(out, 0, sizeof *out);
    reel_error err;
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create(&ds, &err));
    for (int i = 0; i < NVID; i++) {
        char url[1400];
        if (base)
            snprintf(url, sizeof url, "%s/v%02d.mp4", base, i);
        else
            snprintf(url, sizeof url, "%s", g_paths[i]);
        CHECK_OK(reel_dataset_add(ds, url, i, 0, -1, &err));
    }
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    s.transform.resize = REEL_RESIZE_EXACT;
    s.transform.resize_width = 64;
    s.transform.resize_height = 48;
    s.transform.crop = REEL_CROP_NONE;
    s.sampler.frames_per_clip = 4;
    s.batch_size = 2;
    s.seed = 9;
    s.decode_threads = 2;
    s.open_threads = base ? 4 : 1;
    s.on_error = REEL_ON_ERROR_SKIP;
    s.sample_time_limit = time_limit;
    s.decoder.remote = rs;
    reel_loader *l = NULL;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    uint64_t h = REEL_FNV_OFFSET;
    for (;;) {
        reel_batch *bt = NULL;
        int st = reel_loader_next(l, &bt, &err);
        if (st != REEL_OK || !bt) break;
        h = reel__fnv1a(h, bt->data, bt->bytes);
        for (int64_t r = 0; r < bt->num_clips; r++) {
            h = reel__fnv1a(h, &bt->clips[r].sample, sizeof bt->clips[r].sample);
            h = reel__fnv1a(h, bt->clips[r].frame_indices, 4 * sizeof *bt->clips[r].frame_indices);
        }
        out->batches++;
        out->clips += bt->num_clips;
        CHECK_OK(reel_loader_release(l, bt));
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    out->seconds = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    out->digest = h;
    reel_loader_get_metrics(l, &out->m, NULL);
    out->failures = reel_loader_get_num_failures(l);
    reel_failure f;
    if (out->failures > 0 && reel_loader_get_failure(l, 0, &f, &err) == REEL_OK)
        snprintf(out->first_failure, sizeof out->first_failure, "%s", f.reason);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

/* ------------------------------------------------------------ tests */

/* Range requests in small pieces, as for large objects: many requests per
 * video, so that every kind of fault meets some. */
static reel_remote_settings small_reads(int max_retries)
{
    reel_remote_settings rs;
    reel_remote_default_settings(&rs);
    rs.whole_object_max = 0;
    rs.readahead_min = 4096;
    rs.readahead_max = 16384;
    rs.max_retries = max_retries;
    return rs;
}

TEST(faults_with_retries_deliver_every_clip_exactly)
{
    run_result local, remote;
    run_loader(NULL, NULL, 0, &local);
    CHECK_EQ_INT(local.failures, 0);
    servers sv;
    test_server_start_faults(&sv);
    test_server_command(&sv, "set latency 0.02", NULL, 0);
    test_server_command(&sv, "set reset_every 7", NULL, 0);
    test_server_command(&sv, "set burst_every 11", NULL, 0);
    test_server_command(&sv, "set cut_every 13", NULL, 0);
    reel_remote_settings rs = small_reads(8);
    rs.request_timeout = 10;
    run_loader(sv.base, &rs, 0, &remote);
    char counts[512];
    test_server_command(&sv, "counts", counts, sizeof counts);
    test_server_stop(&sv);
    CHECK_MSG(remote.failures == 0, "%lld failures, first: %s", (long long)remote.failures, remote.first_failure);
    CHECK_EQ_INT(remote.batches, local.batches);
    CHECK_EQ_INT(remote.clips, NVID);
    CHECK_MSG(remote.digest == local.digest, "the batches over URLs differ from the local ones");
    CHECK(remote.m.remote.retries > 0);
    CHECK_EQ_INT(remote.m.remote.failures, 0);
    CHECK(remote.m.remote.retries_by_cause[REEL_REMOTE_CAUSE_CONNECTION] > 0);
    CHECK(remote.m.remote.retries_by_cause[REEL_REMOTE_CAUSE_SERVER] > 0);
    CHECK(remote.m.remote.retries_by_cause[REEL_REMOTE_CAUSE_SHORT_BODY] > 0);
    CHECK(remote.m.remote.requests >= NVID * 2);
    CHECK_MSG(!strstr(counts, "reset=0") && !strstr(counts, "503=0") && !strstr(counts, "cut=0"),
              "not every fault happened: %s", counts);
}

TEST(a_100_ms_latency_delivers_every_clip_exactly)
{
    run_result local, remote;
    run_loader(NULL, NULL, 0, &local);
    servers sv;
    test_server_start_faults(&sv);
    test_server_command(&sv, "set latency 0.1", NULL, 0);
    reel_remote_settings rs = small_reads(5);
    run_loader(sv.base, &rs, 0, &remote);
    test_server_stop(&sv);
    CHECK_MSG(remote.failures == 0, "%lld failures, first: %s", (long long)remote.failures, remote.first_failure);
    CHECK_MSG(remote.digest == local.digest, "the batches over URLs differ from the local ones");
    CHECK_EQ_INT(remote.m.remote.retries, 0);
    /* every request waited the 100 ms: the median says so */
    CHECK_MSG(remote.m.request_p50_s >= 0.09, "p50 %.3f s", remote.m.request_p50_s);
    CHECK_MSG(strcmp(remote.m.stages[0].name, "fetch") == 0, "stage 1 is '%s'", remote.m.stages[0].name);
}

TEST(faults_without_retries_are_named_failures)
{
    servers sv;
    test_server_start_faults(&sv);
    test_server_command(&sv, "set reset_every 2", NULL, 0);
    reel_remote_settings rs = small_reads(0);
    run_result r;
    run_loader(sv.base, &rs, 0, &r);
    test_server_stop(&sv);
    CHECK(r.failures > 0);
    CHECK_EQ_INT(r.m.remote.retries, 0);
    CHECK(r.m.remote.failures > 0);
    /* "<url>: <cause> (after 1 try)" */
    CHECK_MSG(strstr(r.first_failure, "http://127.0.0.1:") && strstr(r.first_failure, ".mp4") &&
                  strstr(r.first_failure, "after 1 try"),
              "failure: %s", r.first_failure);
}

TEST(a_server_that_stops_answering_ends_in_the_time_limit)
{
    servers sv;
    test_server_start_faults(&sv);
    test_server_command(&sv, "set stall 1", NULL, 0);
    reel_remote_settings rs;
    reel_remote_default_settings(&rs);
    rs.request_timeout = 30; /* the per-sample limit ends it first */
    rs.max_retries = 0;
    run_result r;
    run_loader(sv.base, &rs, 0.5, &r);
    test_server_stop(&sv);
    CHECK_EQ_INT(r.failures, NVID);
    CHECK_EQ_INT(r.clips, 0);
    /* each sample ended by its 0.5 s limit (the watchdog), never by the
     * 30 s request timeout ("Timeout was reached"), and nothing retried */
    CHECK_MSG(strstr(r.first_failure, "time limit"), "failure: %s", r.first_failure);
    CHECK_EQ_INT(r.m.remote.failures, 0); /* cancelled, not timed out */
    CHECK_EQ_INT(r.m.remote.retries, 0);
}
