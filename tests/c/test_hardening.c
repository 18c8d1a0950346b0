/* test_hardening.c: regressions for what fuzzing and a new user's probe found
 * (issue 10): the UBSan reproducers in ../shared/reliability open cleanly
 * (this file runs in the sanitizer tree too, where UB aborts), untrusted
 * sidecar counts and timestamps, and messages that name the real cause. */
#define _GNU_SOURCE
#include "harness.h"
#include "testgen.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static const char *reliability_dir(void)
{
    static char dir[1200];
    const char *v = harness_env("REEL_SHARED_VIDEOS", NULL);
    if (v) snprintf(dir, sizeof dir, "%s/../reliability", v);
    else snprintf(dir, sizeof dir, "%s/../../../shared/reliability", harness_tmpdir());
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
            const reel_video_info *in = reel_decoder_info(dec);
            if (in->num_frames > 0) {
                int64_t idx[2] = { 0, in->num_frames - 1 };
                reel_transform t;
                reel_transform_default(&t);
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
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 0x100000001b3ULL; }
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
    CHECK_EQ_INT(reel_decoder_info(dec)->num_frames, 30);
    CHECK(reel_decoder_info(dec)->index_source != REEL_INDEX_FROM_SIDECAR);
    reel_decoder_close(&dec);
}

TEST(a_sidecar_with_impossible_timestamps_is_stale)
{
    char video[1200], side[1300];
    video_with_sidecar(video, sizeof video, side, sizeof side, "bigpts");
    reel_decoder *ref = tg_open(video, NULL);
    const int64_t first_pts = reel_decoder_info(ref)->start_pts;
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
    CHECK_EQ_INT(reel_decoder_info(dec)->num_frames, 30);
    CHECK_EQ_INT(reel_decoder_info(dec)->start_pts, first_pts);
    CHECK(reel_decoder_info(dec)->index_source != REEL_INDEX_FROM_SIDECAR);
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
