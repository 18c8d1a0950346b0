/* test_remote_audio_share.c: reel_decoder_open_audio over a URL shares the
 * decoder's bytes: a small object (fetched whole) costs the audio no
 * request; read by small ranges, the decoder on one thread and its audio on
 * another at once give the local file's frames and samples (TSan checks the
 * shared object's lock); the handles close in either order; a local
 * decoder's audio opens its path; a caller's-bytes decoder is refused by
 * name. nginx comes from tests/python/serve_faults.py (no faults set). */
#define _GNU_SOURCE
#include "harness.h"
#include "reel/reel.h"
#include "server_common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FRAMES  250 /* 10 s at 25 fps */
#define WINDOWS 8

static char g_path[1024];

/* A 10 s 25 fps 160x120 H.264 video with 48 kHz AAC, in the test's folder. */
static void make_video(void)
{
    if (g_path[0]) return;
    if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg CLI on PATH");
    snprintf(g_path, sizeof g_path, "%s/av.mp4", harness_tmpdir());
    char cmd[3000];
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -y -f lavfi -i testsrc2=size=160x120:rate=25:duration=10 -f lavfi -i "
             "sine=f=440:r=48000:d=10 -map 0:v -map 1:a -c:v libx264 -preset ultrafast -g 25 -c:a aac '%s' "
             ">%s/cmd.log 2>&1",
             g_path, harness_tmpdir());
    CHECK_MSG(system(cmd) == 0, "ffmpeg failed (see %s/cmd.log)", harness_tmpdir());
}

/* Window w of WINDOWS: 1 s at w s, in the 1/25 s time base. */
static void window_of(int w, int64_t *t0, int64_t *t1)
{
    *t0 = (int64_t)w * 25;
    *t1 = *t0 + 25;
}

typedef struct job {
    reel_decoder *dec;
    reel_audio *audio;
    float *samples[WINDOWS]; /* the audio thread's, or the reference */
    size_t count;
    uint64_t frames_sum; /* the decoder thread's frames, hashed */
    int status;
    char message[512];
} job;

/* Every 5th frame, in pieces, prefetched first (as the loader's stage 1). */
static void *decode_all(void *arg)
{
    job *j = arg;
    const size_t bytes = (size_t)10 * 160 * 120 * 3; /* ten RGB frames (the default transform) */
    uint8_t *buf = malloc(bytes);
    reel_error err;
    uint64_t sum = 0;
    if (!buf) j->status = REEL_E_NOMEM;
    for (int64_t base = 0; base < FRAMES && j->status == REEL_OK; base += 50) {
        int64_t idx[10];
        for (int i = 0; i < 10; i++) idx[i] = base + 5 * i;
        j->status = reel_decoder_prefetch(j->dec, idx, 10, &err);
        if (j->status == REEL_OK) j->status = reel_decoder_get_frames(j->dec, idx, 10, NULL, buf, bytes, NULL, &err);
        for (size_t i = 0; i < bytes && j->status == REEL_OK; i++) sum = sum * 1099511628211ULL + buf[i];
    }
    if (j->status != REEL_OK) snprintf(j->message, sizeof j->message, "%s", err.message);
    j->frames_sum = sum;
    free(buf);
    return NULL;
}

static void *read_audio(void *arg)
{
    job *j = arg;
    reel_error err;
    for (int w = 0; w < WINDOWS && j->status == REEL_OK; w++) {
        int64_t t0, t1;
        window_of(w, &t0, &t1);
        j->status = reel_audio_get_samples(j->audio, t0, t1, 1, 25, j->samples[w], j->count, NULL, &err);
    }
    if (j->status != REEL_OK) snprintf(j->message, sizeof j->message, "%s", err.message);
    return NULL;
}

static void job_init(job *j)
{
    memset(j, 0, sizeof *j);
    j->count = 48000; /* 1 s, mono */
    for (int w = 0; w < WINDOWS; w++) CHECK((j->samples[w] = calloc(j->count, sizeof(float))) != NULL);
}

static void job_free(job *j)
{
    for (int w = 0; w < WINDOWS; w++) free(j->samples[w]);
}

static void audio_settings(reel_audio_settings *as)
{
    reel_audio_default_settings(as);
    as->channels = 1;
}

/* The local file's frames and samples, through reel_decoder_open_audio of
 * a local decoder (its path opened again). */
static void reference(job *ref)
{
    job_init(ref);
    reel_error err;
    reel_audio_settings as;
    audio_settings(&as);
    CHECK_OK(reel_decoder_open(&ref->dec, g_path, NULL, &err));
    CHECK_OK(reel_decoder_open_audio(ref->dec, &as, &ref->audio, &err));
    reel_remote_stats rs;
    CHECK_OK(reel_audio_get_remote_stats(ref->audio, &rs, &err));
    CHECK_EQ_INT(rs.requests, 0);
    decode_all(ref);
    read_audio(ref);
    CHECK_MSG(ref->status == REEL_OK, "%s", ref->message);
    reel_audio_close(&ref->audio);
    reel_decoder_close(&ref->dec);
}

static void same_samples(const job *a, const job *b)
{
    for (int w = 0; w < WINDOWS; w++)
        CHECK_MSG(memcmp(a->samples[w], b->samples[w], a->count * sizeof(float)) == 0, "window %d differs", w);
}

/* The test video, its samples and frames read from the file (ref), and
 * the server that gives it at url (with `query` after its path). */
static void serve(job *ref, test_server *sv, char *url, size_t n, const char *query)
{
    make_video();
    reference(ref);
    test_server_start_faults(sv);
    snprintf(url, n, "%s/av.mp4%s", sv->base, query);
}

TEST(a_small_object_s_audio_reads_the_bytes_its_decoder_fetched)
{
    job ref;
    test_server sv;
    char url[1400];
    serve(&ref, &sv, url, sizeof url, "?token=never-shown");
    reel_error err;
    job j;
    job_init(&j);
    CHECK_OK(reel_decoder_open(&j.dec, url, NULL, &err)); /* the defaults: whole under 16 MiB */
    reel_audio_settings as;
    audio_settings(&as);
    as.remote = NULL;
    CHECK_OK(reel_decoder_open_audio(j.dec, &as, &j.audio, &err));
    read_audio(&j);
    decode_all(&j);
    CHECK_MSG(j.status == REEL_OK, "%s", j.message);
    reel_remote_stats audio, video;
    CHECK_OK(reel_audio_get_remote_stats(j.audio, &audio, &err));
    CHECK_OK(reel_decoder_get_remote_stats(j.dec, &video, &err));
    reel_audio_close(&j.audio);
    reel_decoder_close(&j.dec);
    test_server_stop(&sv);
    same_samples(&j, &ref);
    CHECK_EQ_INT((long long)j.frames_sum, (long long)ref.frames_sum);
    CHECK_EQ_INT(audio.requests, 0);
    CHECK_EQ_INT(audio.bytes_fetched, 0);
    CHECK_EQ_INT(video.bytes_fetched, video.object_bytes); /* the object, once */
    job_free(&j);
    job_free(&ref);
}

TEST(by_small_ranges_the_decoder_and_its_audio_on_two_threads_give_the_file)
{
    job ref;
    test_server sv;
    char url[1400];
    serve(&ref, &sv, url, sizeof url, "");
    reel_remote_settings rs;
    reel_remote_default_settings(&rs);
    rs.whole_object_max = 0;
    rs.readahead_min = 4096; /* the decoder holds little: the audio fetches on its own, over one connection */
    rs.readahead_max = 65536;
    reel_decoder_settings ds;
    reel_decoder_default_settings(&ds);
    ds.remote = &rs;
    reel_audio_settings as;
    audio_settings(&as);
    for (int order = 0; order < 2; order++) {
        reel_error err;
        job j;
        job_init(&j);
        CHECK_OK(reel_decoder_open(&j.dec, url, &ds, &err));
        CHECK_OK(reel_decoder_open_audio(j.dec, &as, &j.audio, &err));
        job a = j; /* the audio thread's view of the same handles */
        pthread_t td, ta;
        CHECK_EQ_INT(pthread_create(&td, NULL, decode_all, &j), 0);
        CHECK_EQ_INT(pthread_create(&ta, NULL, read_audio, &a), 0);
        pthread_join(td, NULL);
        pthread_join(ta, NULL);
        CHECK_MSG(j.status == REEL_OK, "%s", j.message);
        CHECK_MSG(a.status == REEL_OK, "%s", a.message);
        same_samples(&a, &ref);
        CHECK_EQ_INT((long long)j.frames_sum, (long long)ref.frames_sum);
        reel_remote_stats audio;
        CHECK_OK(reel_audio_get_remote_stats(j.audio, &audio, &err));
        CHECK_MSG(audio.requests > 0 && audio.object_bytes == 0, "the audio's own requests: %lld",
                  (long long)audio.requests);
        if (order == 0) { /* the decoder first: the audio reads on, fetching on its own */
            reel_decoder_close(&j.dec);
            for (int w = 0; w < WINDOWS; w++) memset(a.samples[w], 0, a.count * sizeof(float));
            CHECK_OK(reel_audio_get_samples(j.audio, 0, 25, 1, 25, a.samples[0], a.count, NULL, &err));
            CHECK(memcmp(a.samples[0], ref.samples[0], a.count * sizeof(float)) == 0);
            reel_audio_close(&j.audio);
        } else { /* the audio first: the decoder decodes on */
            reel_audio_close(&j.audio);
            j.status = REEL_OK;
            decode_all(&j);
            CHECK_MSG(j.status == REEL_OK, "%s", j.message);
            CHECK_EQ_INT((long long)j.frames_sum, (long long)ref.frames_sum);
            reel_decoder_close(&j.dec);
        }
        job_free(&j);
    }
    test_server_stop(&sv);
    job_free(&ref);
}

static int mem_read(void *opaque, uint8_t *buf, int size)
{
    FILE *f = opaque;
    return (int)fread(buf, 1, (size_t)size, f);
}

static int64_t mem_seek(void *opaque, int64_t offset, int whence)
{
    FILE *f = opaque;
    if (whence == REEL_SEEK_SIZE) {
        long at = ftell(f);
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, at, SEEK_SET);
        return n;
    }
    return fseek(f, (long)offset, whence) == 0 ? ftell(f) : -1;
}

TEST(a_decoder_of_a_caller_s_bytes_has_no_path_for_its_audio)
{
    make_video();
    FILE *f = fopen(g_path, "rb");
    CHECK(f != NULL);
    reel_io io;
    memset(&io, 0, sizeof io);
    io.opaque = f;
    io.read = mem_read;
    io.seek = mem_seek;
    reel_decoder *dec = NULL;
    reel_audio *a = (reel_audio *)1;
    reel_error err;
    CHECK_OK(reel_decoder_open_io(&dec, &io, "caller-bytes.mp4", NULL, &err));
    CHECK_STATUS(reel_decoder_open_audio(dec, NULL, &a, &err), REEL_E_INVALID_ARG);
    CHECK(a == NULL);
    CHECK_MSG(strstr(err.message, "caller-bytes.mp4") && strstr(err.message, "reel_audio_open"), "message: %s",
              err.message);
    CHECK_STATUS(reel_decoder_open_audio(NULL, NULL, &a, &err), REEL_E_INVALID_ARG);
    reel_decoder_close(&dec);
    fclose(f);
}
