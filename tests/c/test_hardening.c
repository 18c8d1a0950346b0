/* test_hardening.c: regressions for what fuzzing and a new user's probe found
 * (issue 10): the UBSan reproducers in ../shared/reliability open cleanly
 * (this file runs in the sanitizer tree too, where UB aborts), untrusted
 * sidecar counts and timestamps, and messages that name the real cause. */
#define _GNU_SOURCE
#include "harness.h"
#include "testgen.h"

#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/types.h>
#include <unistd.h>

static const char *reliability_dir(void)
{
    static char dir[1200];
    const char *v = harness_env("REEL_SHARED_VIDEOS", NULL);
    if (v)
        snprintf(dir, sizeof dir, "%s/../reliability", v);
    else
        snprintf(dir, sizeof dir, "%s/../../../shared/reliability", harness_tmpdir());
    return dir;
}

TEST(fuzzer_reproducers_open_without_undefined_behaviour)
{
    static const char *const files[] = { "open_mem_table57_nullptr_offset.mp4", "open_mem_open151_overflow.mp4" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", reliability_dir(), files[i]);
        if (!tg_file_exists(path)) harness_skip_needed("../shared/reliability reproducers not found");
        size_t n = 0;
        uint8_t *data = tg_read_file(path, &n);
        CHECK(data != NULL);
        reel_decoder *dec = NULL;
        reel_error err;
        reel_error_clear(&err);
        int st = reel_decoder_open_memory(&dec, data, n, files[i], NULL, &err);
        /* either a clear error naming the input or a usable decoder */
        if (st != REEL_OK) {
            CHECK_MSG(strstr(err.message, files[i]) != NULL, "message does not name the input: %s", err.message);
        } else {
            const reel_video_info *in = reel_decoder_get_info(dec);
            if (in->num_frames > 0) {
                int64_t idx[2] = { 0, in->num_frames - 1 };
                reel_transform t;
                reel_transform_default_settings(&t);
                t.width = 32;
                t.height = 32;
                uint8_t buf[2 * 32 * 32 * 3];
                reel_decoder_get_frames(dec, idx, 2, &t, buf, sizeof buf, NULL, &err);
            }
            reel_decoder_close(&dec);
        }
        free(data);
    }
}

/* A valid sidecar for a generated video; returns its path. */
static const char *video_with_sidecar(char *video, size_t vsize, char *side, size_t ssize, const char *name)
{
    snprintf(video, vsize, "%s/%s.mp4", harness_tmpdir(), name);
    reel_synth_params p;
    tg_params(&p, video, "h264", 96, 64, 30, 10, 2);
    tg_synth(&p);
    reel_decoder *dec = tg_open(video, NULL);
    snprintf(side, ssize, "%s.reelidx", video);
    CHECK_OK(reel_decoder_save_index(dec, side, NULL));
    reel_decoder_close(&dec);
    return side;
}

static reel_decoder *open_with_sidecar(const char *video)
{
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.index_mode = REEL_INDEX_READ;
    reel_decoder *dec = NULL;
    reel_error err;
    reel_error_clear(&err);
    int st = reel_decoder_open(&dec, video, &s, &err);
    CHECK_MSG(st == REEL_OK, "%s", err.message);
    return dec;
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

enum { SIDE_HDR = 64, SIDE_N = 48, SIDE_SUM = 56, SIDE_ROW = 40 };

TEST(a_sidecar_with_a_huge_row_count_is_stale_not_an_allocation)
{
    char video[1200], side[1300];
    video_with_sidecar(video, sizeof video, side, sizeof side, "bign");
    size_t n = 0;
    uint8_t *b = tg_read_file(side, &n);
    CHECK(b && n > SIDE_HDR);
    int64_t huge = (int64_t)1 << 29; /* x 40 bytes = 21 GB if believed */
    memcpy(b + SIDE_N, &huge, 8);
    tg_write_file(side, b, n);
    free(b);
    reel_decoder *dec = open_with_sidecar(video);
    CHECK_EQ_INT(reel_decoder_get_info(dec)->num_frames, 30);
    CHECK(reel_decoder_get_info(dec)->index_source != REEL_INDEX_FROM_SIDECAR);
    reel_decoder_close(&dec);
}

TEST(a_sidecar_with_impossible_timestamps_is_stale)
{
    char video[1200], side[1300];
    video_with_sidecar(video, sizeof video, side, sizeof side, "bigpts");
    reel_decoder *ref = tg_open(video, NULL);
    const int64_t first_pts = reel_decoder_get_info(ref)->start_pts;
    reel_decoder_close(&ref);
    size_t n = 0;
    uint8_t *b = tg_read_file(side, &n);
    CHECK(b && n >= SIDE_HDR + 2 * SIDE_ROW);
    /* pts far apart: the gap between them overflows int64 */
    int64_t lo = -((int64_t)1 << 62), hi = (int64_t)1 << 62;
    memcpy(b + SIDE_HDR, &lo, 8);
    memcpy(b + SIDE_HDR + SIDE_ROW, &hi, 8);
    uint64_t sum = fnv1a(b + SIDE_HDR, n - SIDE_HDR);
    memcpy(b + SIDE_SUM, &sum, 8);
    tg_write_file(side, b, n);
    free(b);
    reel_decoder *dec = open_with_sidecar(video);
    CHECK_EQ_INT(reel_decoder_get_info(dec)->num_frames, 30);
    CHECK_EQ_INT(reel_decoder_get_info(dec)->start_pts, first_pts);
    CHECK(reel_decoder_get_info(dec)->index_source != REEL_INDEX_FROM_SIDECAR);
    reel_decoder_close(&dec);
}

TEST(a_fifo_is_not_a_regular_file)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/pipe.mp4", harness_tmpdir());
    CHECK_EQ_INT(mkfifo(path, 0600), 0);
    reel_decoder *dec = NULL;
    reel_error err;
    reel_error_clear(&err);
    CHECK_STATUS(reel_decoder_open(&dec, path, NULL, &err), REEL_E_IO);
    CHECK_MSG(strstr(err.message, path) && strstr(err.message, "not a regular file"), "%s", err.message);
    unlink(path);
}

TEST(an_mp4_cut_before_its_moov_says_the_index_is_missing)
{
    char video[1200], cut[1300];
    snprintf(video, sizeof video, "%s/late_moov.mp4", harness_tmpdir());
    reel_synth_params p;
    tg_params(&p, video, "h264", 96, 64, 30, 10, 2);
    tg_synth(&p); /* the generator writes moov at the end */
    size_t n = 0;
    uint8_t *b = tg_read_file(video, &n);
    CHECK(b && n > 2000);
    snprintf(cut, sizeof cut, "%s/late_moov_cut.mp4", harness_tmpdir());
    tg_write_file(cut, b, n / 2);
    free(b);
    reel_decoder *dec = NULL;
    reel_error err;
    reel_error_clear(&err);
    int st = reel_decoder_open(&dec, cut, NULL, &err);
    CHECK(st != REEL_OK);
    CHECK_MSG(strstr(err.message, cut) && strstr(err.message, "moov"), "%s", err.message);
}

/* Damage in a keyframe's slice header that FFmpeg may only log: a cold entry
 * into that GOP under REEL_CORRUPT_FAIL either fails or returns exactly the
 * frames a decode from the start gives, never other pixels in silence
 * (issue 10: the decoder's FFmpeg error messages count as damage). */
TEST(damaged_keyframes_never_give_silently_different_frames)
{
    char src[1200];
    snprintf(src, sizeof src, "%s/idr.mp4", harness_tmpdir());
    reel_synth_params p;
    tg_params(&p, src, "h264", 160, 120, 60, 10, 2);
    tg_synth(&p);
    reel_decoder *d0 = tg_open(src, NULL);
    int64_t n = 0;
    const reel_frame_entry *tab = reel_decoder_get_frame_table(d0, &n);
    CHECK(n == 60);
    /* the keyframe packet of frame 20 and the next packet in the file */
    int64_t key = 20, kpos = tab[key].pos, next = -1;
    for (int64_t i = 0; i < n; i++)
        if (tab[i].pos > kpos && (next < 0 || tab[i].pos < next)) next = tab[i].pos;
    reel_decoder_close(&d0);
    CHECK(kpos > 0 && next > kpos + 24);
    size_t size = 0;
    uint8_t *orig = tg_read_file(src, &size);
    const size_t fb = 160 * 120 * 3;
    uint8_t *ref = malloc(fb * 60), *got = malloc(fb * 10);
    CHECK(orig && ref && got);
    int checked = 0, failed_loudly = 0;
    static const int offsets[] = { 5, 6, 7, 8, 9, 11, 14, 20 };
    for (size_t k = 0; k < sizeof offsets / sizeof offsets[0]; k++) {
        for (int bit = 0; bit < 8; bit += 3) {
            char path[1300];
            snprintf(path, sizeof path, "%s/idr_%zu_%d.mp4", harness_tmpdir(), k, bit);
            uint8_t *b = malloc(size);
            memcpy(b, orig, size);
            b[kpos + offsets[k]] ^= (uint8_t)(1u << bit);
            tg_write_file(path, b, size);
            free(b);
            /* the reference: every frame, decoded from the start on one thread */
            reel_decoder_settings s;
            reel_decoder_default_settings(&s);
            s.threads = 1;
            s.corrupt_policy = REEL_CORRUPT_SKIP;
            reel_decoder *d = NULL;
            reel_error err;
            if (reel_decoder_open(&d, path, &s, &err) != REEL_OK) continue;
            int64_t all[60];
            for (int i = 0; i < 60; i++) all[i] = i;
            int r = reel_decoder_get_frames(d, all, 60, NULL, ref, fb * 60, NULL, &err);
            reel_decoder_close(&d);
            if (r != REEL_OK) continue;
            for (int threads = 1; threads <= 2; threads++) {
                /* Both thread counts are held to it: FFmpeg 5.1's frame
                 * threads may conceal a damaged keyframe without flagging or
                 * logging it, and reel catches that by comparing the keyframe
                 * with its decode alone (then goes on single-threaded) */
                s.threads = threads;
                s.corrupt_policy = REEL_CORRUPT_FAIL;
                CHECK_OK(reel_decoder_open(&d, path, &s, &err));
                int64_t gop[10];
                for (int i = 0; i < 10; i++) gop[i] = key + i;
                reel_error_clear(&err);
                r = reel_decoder_get_frames(d, gop, 10, NULL, got, fb * 10, NULL, &err);
                reel_decoder_close(&d);
                if (r != REEL_OK) {
                    CHECK_MSG(r == REEL_E_CORRUPT, "%s: status %d %s", path, r, err.message);
                    failed_loudly++;
                    continue;
                }
                int same = 1;
                for (int i = 0; i < 10; i++)
                    if (memcmp(got + (size_t)i * fb, ref + (size_t)(key + i) * fb, fb) != 0) same = 0;
                CHECK_MSG(same,
                          "%s (%d threads): a frame of the damaged GOP came back different from a decode "
                          "from the start, with no error",
                          path, threads);
                checked++;
            }
        }
    }
    printf("      %d cold entries equal to the decode from the start, %d failed loudly (1 and 2 threads)\n", checked,
           failed_loudly);
    CHECK(checked + failed_loudly > 0);
    free(orig);
    free(ref);
    free(got);
}

/* A file cut inside its last packet: that packet is not a frame (ffmpeg
 * decodes one fewer), so num_frames agrees with what can be decoded. */
TEST(a_last_packet_cut_by_truncation_is_not_counted)
{
    if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg CLI to write a faststart mp4");
    char src[1200], fs[1300], cut[1300], cmd[4200];
    snprintf(src, sizeof src, "%s/tail.mp4", harness_tmpdir());
    reel_synth_params p;
    tg_params(&p, src, "h264", 160, 120, 40, 10, 2);
    tg_synth(&p);
    snprintf(fs, sizeof fs, "%s/tail_fs.mp4", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -v error -y -i '%s' -c copy -movflags +faststart '%s'", src, fs);
    CHECK_EQ_INT(tg_system(cmd), 0);
    size_t n = 0;
    uint8_t *b = tg_read_file(fs, &n);
    CHECK(b && n > 2000);
    snprintf(cut, sizeof cut, "%s/tail_cut.mp4", harness_tmpdir());
    tg_write_file(cut, b, n - 700);
    free(b);
    /* what ffmpeg decodes */
    snprintf(cmd, sizeof cmd,
             "ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 '%s' "
             "2>/dev/null",
             cut);
    FILE *pp = popen(cmd, "r");
    CHECK(pp != NULL);
    long long want = -1;
    CHECK(fscanf(pp, "%lld", &want) == 1);
    pclose(pp);
    CHECK(want > 0 && want < 40);
    reel_decoder *dec = tg_open(cut, NULL);
    CHECK_EQ_INT(reel_decoder_get_info(dec)->num_frames, want);
    reel_decoder_close(&dec);
}

/* A 10 GB sparse file (all zeros): a quick, clear failure, never a scan of
 * 10 GB or an allocation of its size. */
TEST(a_sparse_10_gb_file_fails_clearly)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/sparse.mp4", harness_tmpdir());
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    fclose(f);
    CHECK_EQ_INT(truncate(path, (off_t)10 << 30), 0);
    reel_decoder *dec = NULL;
    reel_error err;
    reel_error_clear(&err);
    int st = reel_decoder_open(&dec, path, NULL, &err);
    CHECK_MSG(st == REEL_E_NOT_VIDEO || st == REEL_E_CORRUPT, "status %d: %s", st, err.message);
    CHECK(strstr(err.message, path) != NULL);
    unlink(path);
}

typedef struct mutator {
    char (*paths)[1200];
    int n;
    const char *spare; /* a valid video to copy in */
    volatile int stop;
    int ops;
} mutator;

/* Deletes, truncates and replaces videos while the loader reads them
 * (bounded: at most 400 changes, a few ms apart). */
static void *mutate(void *arg)
{
    mutator *m = arg;
    uint64_t rng = 12345;
    while (!m->stop && m->ops < 400) {
        int i = (int)tg_rand_below(&rng, m->n);
        int what = (int)tg_rand_below(&rng, 3);
        if (what == 0)
            unlink(m->paths[i]);
        else if (what == 1) {
            if (truncate(m->paths[i], 1000) != 0) {}
        } else
            tg_copy_file(m->spare, m->paths[i]);
        m->ops++;
        struct timespec ts = { 0, 3 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* Files deleted, cut and replaced under a running loader: no crash, and every
 * epoch accounts exactly for its samples (loaded + failed = planned). */
TEST(files_changing_under_the_loader_are_accounted_exactly)
{
    enum { NV = 12, EPOCHS = 6 };
    static char paths[NV][1200];
    char spare[1200];
    snprintf(spare, sizeof spare, "%s/spare.mp4", harness_tmpdir());
    reel_synth_params p;
    tg_params(&p, spare, "h264", 64, 48, 20, 10, 0);
    tg_synth(&p);
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create(&ds, NULL));
    for (int i = 0; i < NV; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/mut%02d.mp4", harness_tmpdir(), i);
        tg_copy_file(spare, paths[i]);
        CHECK_OK(reel_dataset_add(ds, paths[i], i % 3, 0, -1, NULL));
    }
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    s.batch_size = 4;
    s.epochs = EPOCHS;
    s.sampler.frames_per_clip = 4;
    s.transform.resize = REEL_RESIZE_EXACT;
    s.transform.resize_width = 32;
    s.transform.resize_height = 32;
    s.transform.crop = REEL_CROP_NONE;
    s.decode_threads = 2;
    s.decoder.index_mode = REEL_INDEX_OFF;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &s, NULL));
    mutator m = { paths, NV, spare, 0, 0 };
    pthread_t tid;
    CHECK_EQ_INT(pthread_create(&tid, NULL, mutate, &m), 0);
    int64_t samples = 0, loaded = 0, failed = 0, epochs = 0;
    for (int guard = 0; guard < 10000 && epochs < EPOCHS; guard++) {
        reel_batch *b = NULL;
        reel_error err;
        reel_error_clear(&err);
        int st = reel_loader_next(l, &b, &err);
        if (st == REEL_E_NO_DATA) {
            epochs++;
            continue;
        } /* an epoch in which nothing loaded: loud, and counted */
        CHECK_MSG(st == REEL_OK, "status %d: %s", st, err.message);
        if (!b) {
            epochs++;
            continue;
        }
        samples += b->num_samples;
        failed += b->num_failed;
        loaded += b->num_clips; /* one clip per sample */
        CHECK_EQ_INT(b->num_clips, b->num_samples - b->num_failed);
        CHECK_OK(reel_loader_release(l, b));
    }
    m.stop = 1;
    pthread_join(tid, NULL);
    CHECK_EQ_INT(epochs, EPOCHS);
    CHECK_EQ_INT(samples, (int64_t)NV * EPOCHS);
    CHECK_EQ_INT(loaded + failed, samples);
    reel_loader_metrics met;
    CHECK_OK(reel_loader_get_metrics(l, &met, NULL));
    CHECK_EQ_INT(met.failures, failed);
    printf("      %d changes during %d epochs: %lld loaded, %lld failed\n", m.ops, EPOCHS, (long long)loaded,
           (long long)failed);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}
