/* damage_common.h: what test_errors.c and test_damage_fuzz.c share: a
 * watchdog that names a hung step, the good source videos, and the check
 * that a damaged file never gives a wrong frame. Header-only, static. */
#ifndef REEL_TEST_DAMAGE_COMMON_H
#define REEL_TEST_DAMAGE_COMMON_H

#include "testgen.h"

#include <limits.h>
#include <signal.h>

/* ---------------------------------------------------------------- watchdog */

/* A hang in a damaged-file test must not stall the whole run until ctest's
 * timeout: an alarm names the step and exits. */
static const char *volatile g_step = "";

static TG_UNUSED void on_alarm(int sig)
{
    (void)sig;
    static const char m[] = "\nHANG: no progress within the watchdog limit in step: ";
    ssize_t r = write(1, m, sizeof m - 1);
    r = write(1, (const char *)g_step, strlen((const char *)g_step));
    r = write(1, "\n", 1);
    (void)r;
    _exit(3);
}

static TG_UNUSED void watchdog(unsigned seconds)
{
    signal(SIGALRM, on_alarm);
    alarm(seconds);
}

/* ---------------------------------------------------------------- fixtures */

#define SRC_W 160
#define SRC_H 120
#define SRC_N 120

/* A good 120-frame H.264 video in `ext` (cached per process). mp4 is the
 * generator's own layout (moov at the end); "fs.mp4" is a copy remuxed with
 * the moov atom first (needs the ffmpeg CLI). */
static TG_UNUSED const char *source_video(const char *ext)
{
    static char paths[4][4096];
    static const char *exts[4] = { "mkv", "avi", "mp4", "fs.mp4" };
    int k = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(ext, exts[i])) k = i;
    CHECK(k >= 0);
    if (paths[k][0] && tg_file_exists(paths[k])) return paths[k];

    char name[64];
    snprintf(name, sizeof name, "src.%s", ext);
    if (k == 3) {
        if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg CLI to write a faststart mp4");
        const char *plain = source_video("mp4");
        char cmd[12288] = "ffmpeg -nostdin -v error -y -i ";
        tg_path(paths[k], sizeof paths[k], name);
        tg_shell_append_quoted(cmd, sizeof cmd, plain);
        strcat(cmd, " -c copy -movflags +faststart ");
        tg_shell_append_quoted(cmd, sizeof cmd, paths[k]);
        int rc = tg_system(cmd);
        CHECK_MSG(rc == 0, "ffmpeg faststart remux failed (%d): %s", rc, cmd);
        /* moov before mdat */
        size_t n;
        uint8_t *b = tg_read_file(paths[k], &n);
        uint8_t *moov = memmem(b, n, "moov", 4), *mdat = memmem(b, n, "mdat", 4);
        CHECK_MSG(moov && mdat && moov < mdat, "%s: moov is not before mdat", paths[k]);
        free(b);
        return paths[k];
    }
    reel_synth_params p;
    tg_path(paths[k], sizeof paths[k], name);
    tg_params(&p, paths[k], "h264", SRC_W, SRC_H, SRC_N, 16, 2);
    tg_synth(&p);
    return paths[k];
}

/* Writes the first `keep` bytes of src to dst. */
static TG_UNUSED void write_truncated(const char *src, const char *dst, size_t keep)
{
    size_t n;
    uint8_t *b = tg_read_file(src, &n);
    CHECK(keep <= n);
    tg_write_file(dst, b, keep);
    free(b);
}

/* The frame a synthetic 25 fps file embeds for table row i, from its pts. */
static TG_UNUSED int64_t expected_at(const reel_decoder *dec, int64_t i)
{
    int64_t n = 0;
    const reel_frame_entry *ft = reel_decoder_get_frame_table(dec, &n);
    return tg_index_of_pts(dec, ft[i].pts, 0.0, 25, 1);
}

/* Frames before this presentation index lie entirely before byte `dmg`:
 * the GOPs before the last keyframe whose packet starts at or before it
 * (closed GOPs, packets stored in decode order). */
static TG_UNUSED int64_t safe_limit(const reel_decoder *dec, int64_t dmg)
{
    int64_t n = 0, nk = 0, lim = 0;
    const reel_frame_entry *ft = reel_decoder_get_frame_table(dec, &n);
    const int64_t *keys = reel_decoder_get_keyframes(dec, &nk);
    for (int64_t k = 0; k < nk; k++)
        if (ft[keys[k]].pos >= 0 && ft[keys[k]].pos <= dmg) lim = keys[k];
    return lim;
}

/* First presentation index of the GOPs that begin after byte `end`: the
 * first keyframe stored past the damaged span (closed GOPs cannot reach
 * back into it). n if there is none. */
static TG_UNUSED int64_t clean_again_at(const reel_decoder *dec, int64_t end)
{
    int64_t n = 0, nk = 0;
    const reel_frame_entry *ft = reel_decoder_get_frame_table(dec, &n);
    const int64_t *keys = reel_decoder_get_keyframes(dec, &nk);
    for (int64_t k = 0; k < nk; k++)
        if (ft[keys[k]].pos > end) return keys[k];
    return n;
}

/* The battery for a damaged file that must still open, bytes [dmg, dmg_end)
 * damaged: frames of GOPs before the damage are exact; frames of GOPs after
 * it are exact, unreadable (-1) or REEL_E_CORRUPT, never another frame; in
 * the damaged GOPs themselves the codec may conceal with a neighbour's
 * pixels without noticing (FFmpeg does not flag concealment under frame
 * threading), so there only the status is checked. */
static TG_UNUSED void check_damaged(const char *path, int64_t dmg, int64_t dmg_end, int truncated)
{
    reel_decoder *dec = NULL;
    reel_decoder_settings s;
    reel_error err;
    reel_error_clear(&err);
    reel_decoder_default_settings(&s);
    s.corrupt_policy = REEL_CORRUPT_FAIL;

    g_step = path;
    int r = reel_decoder_open(&dec, path, &s, &err);
    CHECK_MSG(r == REEL_OK, "open(%s) of a damaged file that still holds frames failed: %d (%s) %s", path, r,
              reel_strerror(r), err.message);
    int64_t n = reel_decoder_get_info(dec)->num_frames;
    if (truncated)
        CHECK_MSG(n > 0 && n < SRC_N, "%s: truncated at byte %lld, table has %lld frames", path, (long long)dmg,
                  (long long)n);
    else
        CHECK_MSG(n > 0 && n <= SRC_N, "%s: %lld frames", path, (long long)n);
    int64_t safe = safe_limit(dec, dmg);
    int64_t clean = clean_again_at(dec, dmg_end);
    CHECK_MSG(safe > 0, "%s: no complete GOP before the damage at byte %lld", path, (long long)dmg);
    for (int64_t i = 0; i < safe; i++)
        CHECK_MSG(expected_at(dec, i) == i, "%s: table row %lld (before the damage) has the pts of frame %lld", path,
                  (long long)i, (long long)expected_at(dec, i));

    size_t fb = (size_t)SRC_W * SRC_H * 3;
    uint8_t *buf = malloc(fb * (size_t)n);
    int64_t *all = malloc((size_t)n * sizeof *all);
    CHECK(buf && all);

    /* every row on its own */
    for (int64_t i = 0; i < n; i++) {
        reel_error_clear(&err);
        r = reel_decoder_get_frames(dec, &i, 1, NULL, buf, fb, NULL, &err);
        if (r == REEL_OK) {
            int64_t got = tg_read_idx(buf, SRC_W, SRC_H);
            if (i < safe)
                CHECK_MSG(got == i, "%s: frame %lld (before the damage) embeds %lld", path, (long long)i,
                          (long long)got);
            else if (i >= clean)
                CHECK_MSG(got == expected_at(dec, i) || got == -1,
                          "%s: frame %lld (pts of frame %lld) returned REEL_OK with a frame embedding %lld", path,
                          (long long)i, (long long)expected_at(dec, i), (long long)got);
        } else {
            CHECK_MSG(r == REEL_E_CORRUPT, "%s: frame %lld: status %d (%s) %s, expected REEL_OK or REEL_E_CORRUPT",
                      path, (long long)i, r, reel_strerror(r), err.message);
            CHECK_MSG(i >= safe, "%s: frame %lld lies before the damage (first %lld frames) but failed: %s", path,
                      (long long)i, (long long)safe, err.message);
            TG_CHECK_MSG_HAS(err, path);
        }
    }
    /* the decoder still works after failures */
    int64_t zero = 0;
    CHECK_OK(reel_decoder_get_frames(dec, &zero, 1, NULL, buf, fb, NULL, &err));
    CHECK_EQ_INT(tg_read_idx(buf, SRC_W, SRC_H), 0);

    /* everything in one call, under both policies */
    for (int64_t i = 0; i < n; i++) all[i] = i;
    for (int pol = REEL_CORRUPT_FAIL; pol <= REEL_CORRUPT_SKIP; pol++) {
        reel_decoder *d2 = NULL;
        s.corrupt_policy = pol;
        r = reel_decoder_open(&d2, path, &s, &err);
        CHECK_MSG(r == REEL_OK, "open(%s, policy %d): %d %s", path, pol, r, err.message);
        reel_error_clear(&err);
        r = reel_decoder_get_frames(d2, all, (size_t)n, NULL, buf, fb * (size_t)n, NULL, &err);
        CHECK_MSG(r == REEL_OK || r == REEL_E_CORRUPT, "%s policy %d, all frames: status %d (%s) %s", path, pol, r,
                  reel_strerror(r), err.message);
        if (r != REEL_OK) TG_CHECK_MSG_HAS(err, path);
        if (r == REEL_OK && pol == REEL_CORRUPT_FAIL) {
            for (int64_t i = 0; i < n; i++) {
                int64_t got = tg_read_idx(buf + (size_t)i * fb, SRC_W, SRC_H);
                if (i < safe)
                    CHECK_MSG(got == i, "%s: all-frames call: frame %lld embeds %lld", path, (long long)i,
                              (long long)got);
                else if (i >= clean)
                    CHECK_MSG(got == expected_at(d2, i) || got == -1,
                              "%s: all-frames call returned REEL_OK, frame %lld (pts of %lld) embeds %lld", path,
                              (long long)i, (long long)expected_at(d2, i), (long long)got);
            }
        }
        /* under either policy, frames before the damage come back exact */
        if (safe > 0) {
            r = reel_decoder_get_frames(d2, all, (size_t)safe, NULL, buf, fb * (size_t)safe, NULL, &err);
            CHECK_MSG(r == REEL_OK, "%s policy %d: frames 0..%lld before the damage: %d %s", path, pol,
                      (long long)safe - 1, r, err.message);
            for (int64_t i = 0; i < safe; i++) CHECK_EQ_INT(tg_read_idx(buf + (size_t)i * fb, SRC_W, SRC_H), i);
        }
        reel_decoder_close(&d2);
    }
    free(all);
    free(buf);
    reel_decoder_close(&dec);
}

#endif
