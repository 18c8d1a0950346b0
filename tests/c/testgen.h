/* testgen.h: header-only helpers shared by the decoder tests
 * (test_generated.c, test_errors.c, test_api.c): generating synthetic
 * videos into harness_tmpdir(), reading the embedded frame index back,
 * files, a deterministic RNG, running the CLI. Everything is static so each
 * test binary gets its own copy; nothing here needs linking. */
#ifndef REEL_TESTGEN_H
#define REEL_TESTGEN_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "reel/reel.h"
#include "synth/synth.h"

#if defined(__GNUC__)
#define TG_UNUSED __attribute__((unused))
#else
#define TG_UNUSED
#endif

/* FFmpeg's log (and the encoders' banners) would bury the test output.
 * REEL_TEST_FFMPEG_LOG=N (0..3) keeps a level for debugging. */
__attribute__((constructor)) static void tg_quiet_ffmpeg(void)
{
    const char *v = getenv("REEL_TEST_FFMPEG_LOG");
    reel_set_ffmpeg_log_level(v && *v ? atoi(v) : 0);
}

/* ---------------------------------------------------------------- strings, paths */

/* buf = harness_tmpdir()/name; returns buf. */
static TG_UNUSED const char *tg_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", harness_tmpdir(), name);
    return buf;
}

static TG_UNUSED int tg_contains(const char *s, const char *sub)
{
    return s && sub && strstr(s, sub) != NULL;
}

/* The error record names the file. */
#define TG_CHECK_MSG_HAS(err, text) \
    CHECK_MSG(tg_contains((err).message, (text)), "error message \"%s\" does not contain \"%s\"", (err).message, (text))

/* A reel status code (OK or one of the closed set of negatives). */
static TG_UNUSED int tg_is_reel_status(int s)
{
    return s <= 0 && s >= REEL_E_INTERNAL;
}

/* ---------------------------------------------------------------- RNG */

/* splitmix64: fixed seeds make every "random" test reproducible. */
static TG_UNUSED uint64_t tg_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static TG_UNUSED int64_t tg_rand_below(uint64_t *state, int64_t n)
{
    return n > 0 ? (int64_t)(tg_rand(state) % (uint64_t)n) : 0;
}

/* ---------------------------------------------------------------- files */

static TG_UNUSED int64_t tg_file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

static TG_UNUSED int tg_file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Whole file into a malloc'd buffer (fails the test if unreadable). */
static TG_UNUSED uint8_t *tg_read_file(const char *path, size_t *size)
{
    FILE *fp = fopen(path, "rb");
    CHECK_MSG(fp != NULL, "cannot open %s: %s", path, strerror(errno));
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    CHECK_MSG(n >= 0, "cannot size %s", path);
    uint8_t *buf = malloc((size_t)n + 1);
    CHECK(buf != NULL);
    size_t got = fread(buf, 1, (size_t)n, fp);
    fclose(fp);
    CHECK_MSG(got == (size_t)n, "short read of %s", path);
    *size = (size_t)n;
    return buf;
}

static TG_UNUSED void tg_write_file(const char *path, const void *data, size_t size)
{
    FILE *fp = fopen(path, "wb");
    CHECK_MSG(fp != NULL, "cannot create %s: %s", path, strerror(errno));
    size_t put = size ? fwrite(data, 1, size, fp) : 0;
    int closed = fclose(fp);
    CHECK_MSG(put == size && closed == 0, "cannot write %s", path);
}

static TG_UNUSED void tg_copy_file(const char *from, const char *to)
{
    size_t n;
    uint8_t *b = tg_read_file(from, &n);
    tg_write_file(to, b, n);
    free(b);
}

/* ---------------------------------------------------------------- shell */

/* Appends s to buf single-quoted for /bin/sh. */
static TG_UNUSED void tg_shell_append_quoted(char *buf, size_t size, const char *s)
{
    size_t n = strlen(buf);
    if (n + 1 < size) buf[n++] = '\'';
    for (; *s && n + 5 < size; s++) {
        if (*s == '\'') {
            memcpy(buf + n, "'\\''", 4);
            n += 4;
        } else
            buf[n++] = *s;
    }
    if (n + 1 < size) buf[n++] = '\'';
    buf[n < size ? n : size - 1] = '\0';
}

/* Runs a shell command; returns its exit status, 128+signal if killed,
 * -1 if it could not run. */
static TG_UNUSED int tg_system(const char *cmd)
{
    int st = system(cmd);
    if (st == -1) return -1;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

/* ---------------------------------------------------------------- synth */

/* Default synth parameters with the common fields set. */
static TG_UNUSED void tg_params(reel_synth_params *p, const char *path, const char *codec, int w, int h, int n, int gop,
                                int bframes)
{
    reel_synth_default_params(p);
    p->path = path;
    p->codec = codec;
    p->width = w;
    p->height = h;
    p->num_frames = n;
    p->gop = gop;
    p->bframes = bframes;
    p->seed = 7;
}

/* Writes the video; skips the test when this FFmpeg build cannot encode it
 * (REEL_E_UNSUPPORTED_CODEC), fails it on any other error. */
static TG_UNUSED void tg_synth(const reel_synth_params *p)
{
    reel_error err;
    reel_error_clear(&err);
    int r = reel_synth_write(p, &err);
    if (r == REEL_E_UNSUPPORTED_CODEC) {
        char why[REEL_ERROR_MSG_SIZE + 64];
        snprintf(why, sizeof why, "cannot generate this video here: %s", err.message);
        harness_skip(why);
    }
    CHECK_MSG(r == REEL_OK, "reel_synth_write(%s) failed: %d %s", p->path ? p->path : "?", r, err.message);
}

/* Opens, skipping when FFmpeg has no decoder for the codec. */
static TG_UNUSED reel_decoder *tg_open(const char *path, const reel_decoder_settings *s)
{
    reel_decoder *dec = NULL;
    reel_error err;
    reel_error_clear(&err);
    int r = reel_decoder_open(&dec, path, s, &err);
    if (r == REEL_E_UNSUPPORTED_CODEC) {
        char why[REEL_ERROR_MSG_SIZE + 64];
        snprintf(why, sizeof why, "no decoder here: %s", err.message);
        harness_skip(why);
    }
    CHECK_MSG(r == REEL_OK, "reel_decoder_open(%s) failed: %d (%s) %s", path, r, reel_strerror(r), err.message);
    CHECK(dec != NULL);
    return dec;
}

/* ---------------------------------------------------------------- frames */

/* Index embedded in an RGB24 HWC frame of w x h. */
static TG_UNUSED int64_t tg_read_idx(const uint8_t *rgb, int w, int h)
{
    return reel_synth_read_index(rgb, w, h, (int64_t)w * 3);
}

/* Bytes of one frame under t (NULL: RGB24 at source size). */
static TG_UNUSED size_t tg_frame_bytes(reel_decoder *dec, const reel_transform *t, int *w, int *h)
{
    size_t fb = 0;
    reel_error err;
    int r = reel_decoder_get_output_size(dec, t, w, h, &fb, &err);
    CHECK_MSG(r == REEL_OK, "reel_decoder_get_output_size: %d %s", r, err.message);
    return fb;
}

/* get_frames into a fresh buffer (free with free()); fails the test on error. */
static TG_UNUSED uint8_t *tg_get(reel_decoder *dec, const int64_t *idx, size_t n, const reel_transform *t,
                                 reel_decode_stats *stats)
{
    size_t fb = tg_frame_bytes(dec, t, NULL, NULL);
    uint8_t *buf = malloc(fb * (n ? n : 1));
    CHECK(buf != NULL);
    reel_error err;
    reel_error_clear(&err);
    int r = reel_decoder_get_frames(dec, idx, n, t, buf, fb * n, stats, &err);
    CHECK_MSG(r == REEL_OK, "reel_decoder_get_frames(%s, %zu frames) failed: %d (%s) %s", reel_decoder_get_name(dec), n,
              r, reel_strerror(r), err.message);
    return buf;
}

/* Index a CFR synthetic video embeds in the frame whose table pts is `pts`:
 * (time - start) * fps, rounded. Independent of the frame's table position,
 * so it stays right where damage removed frames from the table. */
static TG_UNUSED int64_t tg_index_of_pts(const reel_decoder *dec, int64_t pts, double start_time, int fps_num,
                                         int fps_den)
{
    const reel_video_info *in = reel_decoder_get_info(dec);
    double t = (double)pts * in->time_base_num / in->time_base_den;
    return (int64_t)llround((t - start_time) * fps_num / fps_den);
}

#endif /* REEL_TESTGEN_H */
