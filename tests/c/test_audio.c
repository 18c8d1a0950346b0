/* test_audio.c: reel/audio.h against the ffmpeg CLI. Videos with audio are
 * made by the CLI; a clip's window comes from reel's frame table; its
 * samples must equal `ffmpeg -i F -map 0:a:0 -af aresample=async=1:
 * min_hard_comp=0 -f f32le -` cut at s(t) (and with a mono mix and a 16 kHz
 * resample after it), in any call order, with zeros and `valid` outside. */
#define _GNU_SOURCE /* popen */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio_damage_common.h"
#include "harness.h"
#include "reel/audio.h"
#include "reel/decoder.h"

static void need_ffmpeg(void)
{
    if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg CLI on PATH");
}

/* Runs a shell command; the test fails with its output when it fails. */
static void run(const char *cmd)
{
    char full[4096];
    snprintf(full, sizeof full, "%s >%s/cmd.log 2>&1", cmd, harness_tmpdir());
    CHECK_MSG(system(full) == 0, "failed: %s", cmd);
}

/* A 12 s 25 fps video (frame numbers drawn in) with `audio_args` as its
 * audio input and `codec_args` for it; returns its path. */
static const char *make(const char *name, const char *audio_in, const char *codec_args)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", harness_tmpdir(), name);
    char cmd[3000];
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -y -f lavfi -i testsrc2=size=64x48:rate=25:duration=12 %s "
             "-map 0:v -map 1:a -c:v libx264 -preset ultrafast -g 25 %s %s",
             audio_in, codec_args, path);
    run(cmd);
    return path;
}

/* The CLI's samples, interleaved float32; *n: samples per channel. */
static float *reference(const char *path, const char *extra_af, int channels, int64_t *n)
{
    char cmd[3000];
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -v error -i '%s' -map 0:a:0 -af 'aresample=async=1:min_hard_comp=0%s' -f f32le -", path,
             extra_af);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    size_t cap = 1 << 20, len = 0;
    float *buf = malloc(cap * sizeof(float));
    CHECK(buf != NULL);
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap * sizeof(float));
            CHECK(buf != NULL);
        }
        size_t got = fread(buf + len, sizeof(float), cap - len, p);
        if (got == 0) break;
        len += got;
    }
    CHECK_MSG(pclose(p) == 0, "ffmpeg failed: %s", cmd);
    *n = (int64_t)len / channels;
    return buf;
}

typedef struct clip_window {
    int64_t t0, t1; /* in the video's time base */
    int num, den;
} clip_window;

/* [min p_i, max(p_i + d_i)) of frames first .. first + count - 1. */
static clip_window window_of(reel_decoder *dec, int64_t first, int64_t count)
{
    int64_t nf = 0;
    const reel_frame_entry *t = reel_decoder_get_frame_table(dec, &nf);
    const reel_video_info *vi = reel_decoder_get_info(dec);
    clip_window w = { INT64_MAX, INT64_MIN, vi->time_base_num, vi->time_base_den };
    for (int64_t i = first; i < first + count && i < nf; i++) {
        if (t[i].pts < w.t0) w.t0 = t[i].pts;
        if (t[i].pts + t[i].duration > w.t1) w.t1 = t[i].pts + t[i].duration;
    }
    return w;
}

/* The window's samples against the reference: max |diff|; the first
 * sample and the count come from s(t) and must match the reference's
 * length where the window is inside it. */
static double compare(const float *got, const reel_audio_window *w, const float *ref, int64_t ref_n, int ch)
{
    double worst = 0;
    for (int c = 0; c < ch; c++)
        for (int64_t i = 0; i < w->num_samples; i++) {
            int64_t k = w->first_sample + i;
            float want = k >= 0 && k < ref_n ? ref[k * ch + c] : 0.0f;
            double d = fabs((double)got[c * w->num_samples + i] - (double)want);
            if (d > worst) worst = d;
        }
    return worst;
}

/* Every clip of 8 frames at these starts, first in order then in reverse
 * (the object keeps 4 s of history: without the cache, the reverse pass
 * restarts its decode, from a0 or a mark), then in a shuffled order: each
 * equal to the reference within tol; adjacent windows tile. cache_bytes:
 * the setting (-1: its default); *stats (may be NULL): what the object did. */
static void check_file_cached(const char *path, int rate, int channels, const char *extra_af, double tol,
                              int64_t cache_bytes, reel_audio_stats *stats)
{
    reel_error err;
    reel_decoder *dec = NULL;
    CHECK_OK(reel_decoder_open(&dec, path, NULL, &err));
    reel_audio_settings s;
    reel_audio_default_settings(&s);
    s.sample_rate = rate;
    s.channels = channels;
    if (cache_bytes >= 0) s.cache_bytes = cache_bytes;
    reel_audio *a = NULL;
    CHECK_OK(reel_audio_open(&a, path, &s, &err));
    const reel_audio_info *info = reel_audio_get_info(a);
    const int ch = info->channels;
    int64_t ref_n = 0;
    float *ref = reference(path, extra_af, ch, &ref_n);
    CHECK(ref_n > 0);
    const int64_t starts[] = { 0, 8, 16, 37, 50, 91, 150, 240, 262, 290 };
    const int shuffled[] = { 5, 9, 1, 7, 3, 0, 8, 2, 6, 4 };
    const int ns = (int)(sizeof starts / sizeof starts[0]);
    for (int pass = 0; pass < 3; pass++)
        for (int j = 0; j < ns; j++) {
            int64_t f0 = starts[pass == 0 ? j : pass == 1 ? ns - 1 - j : shuffled[j]];
            clip_window cw = window_of(dec, f0, 8);
            reel_audio_window w;
            CHECK_OK(reel_audio_get_window(a, cw.t0, cw.t1, cw.num, cw.den, &w, &err));
            size_t cnt = (size_t)w.num_samples * (size_t)ch;
            float *got = malloc(cnt * sizeof(float) + 1);
            CHECK(got != NULL);
            reel_audio_window w2;
            CHECK_OK(reel_audio_get_samples(a, cw.t0, cw.t1, cw.num, cw.den, got, cnt, &w2, &err));
            CHECK_EQ_INT(w2.first_sample, w.first_sample);
            CHECK_EQ_INT(w2.num_samples, w.num_samples);
            double d = compare(got, &w2, ref, ref_n, ch);
            CHECK_MSG(d <= tol, "%s, frames %lld..%lld (samples %lld + %lld): max |diff| %g > %g", path, (long long)f0,
                      (long long)f0 + 7, (long long)w2.first_sample, (long long)w2.num_samples, d, tol);
            if (w2.first_sample >= 0 && w2.first_sample + w2.num_samples <= ref_n) {
                CHECK_EQ_INT(w2.valid_lo, 0);
                CHECK_EQ_INT(w2.valid_hi, w2.num_samples);
            }
            free(got);
        }
    /* tiling: frames 0-7 then 8-15 end and begin on the same sample */
    clip_window c1 = window_of(dec, 0, 8), c2 = window_of(dec, 8, 8);
    reel_audio_window w1, w2;
    CHECK_OK(reel_audio_get_window(a, c1.t0, c1.t1, c1.num, c1.den, &w1, &err));
    CHECK_OK(reel_audio_get_window(a, c2.t0, c2.t1, c2.num, c2.den, &w2, &err));
    CHECK_EQ_INT(w1.first_sample + w1.num_samples, w2.first_sample);
    free(ref);
    if (stats) CHECK_OK(reel_audio_get_stats(a, stats, &err));
    reel_audio_close(&a);
    reel_decoder_close(&dec);
}

static void check_file(const char *path, int rate, int channels, const char *extra_af, double tol)
{
    check_file_cached(path, rate, channels, extra_af, tol, -1, NULL);
}

#define STEREO_IN "-f lavfi -i aevalsrc='0.5*sin(2*PI*440*t)+0.02*random(0)|0.3*sin(2*PI*660*t)':s=48000:d=12"

TEST(aac_48k_stereo_native_equals_the_cli)
{
    need_ffmpeg();
    const char *p = make("aac48.mp4", STEREO_IN, "-c:a aac -b:a 128k");
    check_file(p, 0, 0, "", 1e-6);
}

TEST(aac_48k_stereo_to_16k_mono_equals_the_cli)
{
    need_ffmpeg();
    const char *p = make("aac48m.mp4", STEREO_IN, "-c:a aac -b:a 128k");
    check_file(p, 16000, 1, ",pan=mono|c0=0.5*c0+0.5*c1,aresample=16000", 1e-6);
}

TEST(the_cache_serves_any_order_from_one_decode_and_keeps_its_bound)
{
    need_ffmpeg();
    const char *p = make("aac48c.mp4", STEREO_IN, "-c:a aac -b:a 128k");
    const char *mono = ",pan=mono|c0=0.5*c0+0.5*c1,aresample=16000";
    reel_audio_stats on, off, small;
    check_file_cached(p, 16000, 1, mono, 1e-6, -1, &on); /* the default: 8 MiB hold all 12 s */
    CHECK_EQ_INT(on.windows, 30);                        /* three passes of 10 */
    CHECK_EQ_INT(on.runs_from_a0, 1);                    /* AAC decodes from a0 (its noise): once */
    CHECK_MSG(on.windows_cached >= 18, "%lld windows from the cache", (long long)on.windows_cached);
    CHECK(on.cache_peak_bytes > 0 && on.cache_peak_bytes <= ((int64_t)8 << 20));
    check_file_cached(p, 16000, 1, mono, 1e-6, 0, &off); /* none: the same samples, decoding again */
    CHECK_EQ_INT(off.windows_cached, 0);
    CHECK_EQ_INT(off.cache_peak_bytes, 0);
    CHECK_MSG(off.runs_from_a0 > 5, "%lld runs from a0 without the cache", (long long)off.runs_from_a0);
    /* 64 KiB: three blocks of 4096 samples and the one being filled; the
     * least used go, the samples stay the same */
    check_file_cached(p, 16000, 1, mono, 1e-6, 64 << 10, &small);
    CHECK_MSG(small.cache_peak_bytes > 0 && small.cache_peak_bytes <= (64 << 10), "peak %lld",
              (long long)small.cache_peak_bytes);
    CHECK(small.runs_from_a0 > 1);
    check_file_cached(p, 0, 0, "", 1e-6, 64 << 10, &small); /* native: two channels */
    CHECK(small.cache_peak_bytes > 0 && small.cache_peak_bytes <= (64 << 10));
    reel_audio_settings s;
    reel_audio_default_settings(&s);
    CHECK_EQ_INT(s.cache_bytes, (int64_t)8 << 20);
    s.cache_bytes = -1;
    reel_audio *a = NULL;
    reel_error err;
    CHECK_STATUS(reel_audio_open(&a, p, &s, &err), REEL_E_INVALID_ARG);
    CHECK_MSG(strstr(err.message, "cache_bytes"), "%s", err.message);
    CHECK_STATUS(reel_audio_get_stats(NULL, &on, &err), REEL_E_INVALID_ARG);
}

TEST(mp3_in_mp4_equals_the_cli)
{
    need_ffmpeg();
    const char *p = make("mp3.mp4", STEREO_IN, "-c:a libmp3lame -b:a 128k");
    check_file(p, 0, 0, "", 1e-6);
}

TEST(mp3_44k1_and_opus_to_16k_mono_restart_from_marks_and_equal_the_cli)
{
    need_ffmpeg();
    /* the reverse pass restarts at marks: the decoder 200 ms (Opus 1 s)
     * before, the resampler on a multiple of 441 (44.1k) or 3 (48k) */
    const char *p = make("mp3_441.mp4",
                         "-f lavfi -i aevalsrc='0.5*sin(2*PI*440*t)+0.02*random(0)|0.3*sin(2*PI*660*t)':s=44100:d=12",
                         "-c:a libmp3lame -b:a 128k");
    check_file(p, 16000, 1, ",pan=mono|c0=0.5*c0+0.5*c1,aresample=16000", 1e-6);
    check_file_cached(p, 16000, 1, ",pan=mono|c0=0.5*c0+0.5*c1,aresample=16000", 1e-6, 0, NULL); /* marks alone */
    p = make("opus16.mkv", STEREO_IN, "-c:a libopus -b:a 96k");
    check_file(p, 16000, 1, ",pan=mono|c0=0.5*c0+0.5*c1,aresample=16000", 1e-6);
    check_file(p, 22050, 0, ",aresample=22050", 1e-6);
}

TEST(aac_44k1_late_by_a_quarter_second_equals_the_cli)
{
    need_ffmpeg();
    /* the audio input starts 0.25 s after the video: an empty edit */
    const char *p =
        make("late.mp4", "-itsoffset 0.25 -f lavfi -i aevalsrc='0.5*sin(2*PI*440*t)|0.4*sin(2*PI*550*t)':s=44100:d=11",
             "-c:a aac");
    reel_audio *a = NULL;
    reel_error err;
    CHECK_OK(reel_audio_open(&a, p, NULL, &err));
    CHECK_MSG(reel_audio_get_info(a)->start_seconds > 0.2, "a0 %.4f s", reel_audio_get_info(a)->start_seconds);
    reel_audio_close(&a);
    check_file(p, 0, 0, "", 1e-6);
}

TEST(opus_in_matroska_equals_the_cli)
{
    need_ffmpeg();
    const char *p = make("opus.mkv", STEREO_IN, "-c:a libopus -b:a 96k");
    check_file(p, 0, 0, "", 1e-6);
}

TEST(a_window_before_a0_and_past_the_end_is_zeros_with_valid_saying_so)
{
    need_ffmpeg();
    const char *p = make("edges.mp4", STEREO_IN, "-c:a aac");
    reel_audio *a = NULL;
    reel_error err;
    CHECK_OK(reel_audio_open(&a, p, NULL, &err));
    const int r = reel_audio_get_info(a)->sample_rate;
    float *buf = malloc((size_t)r * 2 * sizeof(float) * 2);
    CHECK(buf != NULL);
    reel_audio_window w;
    /* 1000 s to 1001 s: far past the end */
    CHECK_OK(reel_audio_get_samples(a, 1000, 1001, 1, 1, buf, (size_t)r * 4, &w, &err));
    CHECK_EQ_INT(w.num_samples, r);
    CHECK_EQ_INT(w.valid_lo, w.valid_hi);
    for (int64_t i = 0; i < 2 * w.num_samples; i++) CHECK(buf[i] == 0.0f);
    /* -0.5 s to 0.5 s: half before a0 (a0 is about 0 here) */
    CHECK_OK(reel_audio_get_samples(a, -1, 1, 1, 2, buf, (size_t)r * 4, &w, &err));
    CHECK_EQ_INT(w.num_samples, r);
    CHECK(w.valid_lo > 0 && w.valid_hi == w.num_samples);
    for (int64_t i = 0; i < w.valid_lo; i++) CHECK(buf[i] == 0.0f);
    CHECK_STATUS(reel_audio_get_samples(a, 0, 1, 1, 1, buf, 10, &w, &err), REEL_E_BUFFER_TOO_SMALL);
    CHECK_STATUS(reel_audio_get_window(a, 2, 1, 1, 1, &w, &err), REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_audio_get_window(a, 0, 1, 0, 1, &w, &err), REEL_E_INVALID_ARG);
    free(buf);
    reel_audio_close(&a);
}

TEST(no_audio_is_named_or_zeros_and_audio_alone_is_refused)
{
    need_ffmpeg();
    char path[1024], cmd[2048];
    snprintf(path, sizeof path, "%s/silent.mp4", harness_tmpdir());
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -y -f lavfi -i testsrc2=size=64x48:rate=25:duration=1 -c:v libx264 -preset ultrafast %s",
             path);
    run(cmd);
    reel_audio *a = NULL;
    reel_error err;
    CHECK_STATUS(reel_audio_open(&a, path, NULL, &err), REEL_E_NO_AUDIO_STREAM);
    CHECK_MSG(strstr(err.message, "silent.mp4") && strstr(err.message, "no audio stream"), "%s", err.message);
    reel_audio_settings s;
    reel_audio_default_settings(&s);
    s.missing = REEL_AUDIO_MISSING_ZEROS;
    CHECK_STATUS(reel_audio_open(&a, path, &s, &err), REEL_E_INVALID_ARG); /* zeros at what rate? */
    s.sample_rate = 16000;
    CHECK_OK(reel_audio_open(&a, path, &s, &err));
    float buf[16000];
    reel_audio_window w;
    for (int i = 0; i < 16000; i++) buf[i] = 1.0f;
    CHECK_OK(reel_audio_get_samples(a, 0, 1, 1, 1, buf, 16000, &w, &err));
    CHECK_EQ_INT(w.num_samples, 16000);
    CHECK_EQ_INT(w.valid_hi - w.valid_lo, 0);
    for (int i = 0; i < 16000; i++) CHECK(buf[i] == 0.0f);
    reel_audio_close(&a);

    snprintf(path, sizeof path, "%s/alone.m4a", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -y -f lavfi -i sine=d=1 -c:a aac %s", path);
    run(cmd);
    CHECK_STATUS(reel_audio_open(&a, path, NULL, &err), REEL_E_NO_VIDEO_STREAM);
    CHECK_MSG(strstr(err.message, "alone.m4a") && strstr(err.message, "audio-only"), "%s", err.message);
    s.sample_rate = 2000000;
    CHECK_STATUS(reel_audio_open(&a, path, &s, &err), REEL_E_INVALID_ARG);
    s.sample_rate = 0;
    s.channels = 2;
    CHECK_STATUS(reel_audio_open(&a, path, &s, &err), REEL_E_INVALID_ARG);
    snprintf(path, sizeof path, "%s/missing.mp4", harness_tmpdir());
    CHECK_STATUS(reel_audio_open(&a, path, NULL, &err), REEL_E_NOT_FOUND);
}

/* ---- damage: the corrupt policy ------------------------------------------- */

/* One object of `path` at rate/channels under `policy`. */
static reel_audio *open_policy(const char *path, int rate, int channels, reel_corrupt_policy policy)
{
    reel_audio_settings s;
    reel_audio_default_settings(&s);
    s.sample_rate = rate;
    s.channels = channels;
    s.corrupt_policy = policy;
    reel_audio *a = NULL;
    reel_error err;
    CHECK_OK(reel_audio_open(&a, path, &s, &err));
    return a;
}

/* The window [t0, t1) x num/den s of `a` (REEL_CORRUPT_SKIP) against the
 * whole stream's window `all` (samples `whole`): the same samples, and the
 * whole's damage seen from it. */
static void check_damaged_clip(reel_audio *a, int64_t t0, int64_t t1, int num, int den, const reel_audio_window *all,
                               const float *whole)
{
    static float part[2 * 48000];
    reel_audio_window w;
    reel_error err;
    const int ch = reel_audio_get_info(a)->channels;
    CHECK_OK(reel_audio_get_samples(a, t0, t1, num, den, part, sizeof part / sizeof *part, &w, &err));
    const int64_t off = w.first_sample - all->first_sample;
    CHECK(off >= 0 && off + w.num_samples <= all->num_samples);
    for (int c = 0; c < ch; c++)
        CHECK(memcmp(part + (size_t)c * (size_t)w.num_samples,
                     whole + (size_t)c * (size_t)all->num_samples + (size_t)off,
                     (size_t)w.num_samples * sizeof(float)) == 0);
    const int64_t m0 = all->missing_lo - off > 0 ? all->missing_lo - off : 0;
    const int64_t m1 = all->missing_hi - off < w.num_samples ? all->missing_hi - off : w.num_samples;
    CHECK_MSG(w.missing == (m1 > m0 ? m1 - m0 : 0), "window at %lld: missing %lld, the whole's %lld",
              (long long)w.first_sample, (long long)w.missing, (long long)(m1 > m0 ? m1 - m0 : 0));
    CHECK_EQ_INT(w.corrupt_packets, m1 > m0 ? 1 : 0);
    if (m1 > m0) {
        CHECK_EQ_INT(w.missing_lo, m0);
        CHECK_EQ_INT(w.missing_hi, m1);
        CHECK(w.valid_hi <= m0 || w.valid_lo >= m1);
        CHECK_EQ_INT(w.valid_hi - w.valid_lo, m0 >= w.num_samples - m1 ? m0 : w.num_samples - m1);
    } else {
        CHECK_EQ_INT(w.valid_hi - w.valid_lo, w.num_samples);
    }
}

/* A damaged packet in the middle of `path`: FAIL names the file, the
 * packet's time and the codec's reason; SKIP gives the CLI's samples with
 * the gap as zeros, reported missing (starting at the packet's own sample,
 * one packet), valid the longest clean run; clips asked forward and in
 * reverse give the same samples and the same report. */
static void check_damage(const char *path, int rate, int channels, const char *extra_af, int exact_start)
{
    const packet_at k = damage_audio_packet(path, 1, 2);
    reel_error err;
    static float whole[2 * 48000 * 13];
    reel_audio_window w;
    /* FAIL: named */
    reel_audio *a = open_policy(path, rate, channels, REEL_CORRUPT_FAIL);
    const reel_audio_info *info = reel_audio_get_info(a);
    const double at = (double)k.pts * info->time_base_num / info->time_base_den;
    CHECK_OK(reel_audio_get_samples(a, 0, 1, 1, 1, whole, sizeof whole / sizeof *whole, &w, &err)); /* before */
    CHECK_EQ_INT(w.missing, 0);
    CHECK_STATUS(reel_audio_get_samples(a, 0, 13, 1, 1, whole, sizeof whole / sizeof *whole, &w, &err), REEL_E_CORRUPT);
    const char *t = strstr(err.message, "corrupt audio packet at ");
    CHECK_MSG(strstr(err.message, path) && t, "%s", err.message);
    CHECK_MSG(fabs(strtod(t + strlen("corrupt audio packet at "), NULL) - at) < 1e-6, "%s (the packet is at %f s)",
              err.message, at);
    CHECK_MSG(strlen(strstr(t, " s: ")) > 4, "no reason: %s", err.message);
    reel_audio_close(&a);
    /* SKIP: the whole stream against the CLI */
    a = open_policy(path, rate, channels, REEL_CORRUPT_SKIP);
    info = reel_audio_get_info(a);
    const int ch = info->channels;
    const int tn = info->time_base_num, td = info->time_base_den; /* info dies with its object */
    int64_t ref_n = 0;
    float *ref = reference(path, extra_af, ch, &ref_n);
    CHECK_OK(reel_audio_get_samples(a, 0, 13, 1, 1, whole, sizeof whole / sizeof *whole, &w, &err));
    const reel_audio_window all = w;
    CHECK_EQ_INT(all.corrupt_packets, 1);
    CHECK_MSG(all.missing > 0 && all.missing == all.missing_hi - all.missing_lo, "missing %lld in [%lld, %lld)",
              (long long)all.missing, (long long)all.missing_lo, (long long)all.missing_hi);
    int64_t own = 0; /* the dropped packet's own first sample on the output grid */
    CHECK_OK(reel_audio_sample_at(k.pts, info->time_base_num, info->time_base_den, info->start_pts, info->time_base_num,
                                  info->time_base_den, info->sample_rate, &own, &err));
    if (exact_start)
        CHECK_EQ_INT(all.first_sample + all.missing_lo, own);
    else /* resampled: the span reaches back over the filter */
        CHECK(all.first_sample + all.missing_lo < own && all.first_sample + all.missing_hi > own);
    const int64_t end = ref_n - all.first_sample; /* the stream's end in the window */
    CHECK_EQ_INT(all.valid_lo == 0 ? all.valid_hi : all.valid_lo,
                 all.missing_lo >= end - all.missing_hi ? all.missing_lo : all.missing_hi);
    CHECK_EQ_INT(all.valid_lo == 0 ? 0 : end, all.valid_lo == 0 ? 0 : all.valid_hi);
    for (int c = 0; c < ch; c++)
        for (int64_t i = 0; i < all.num_samples; i++) {
            const int64_t g = all.first_sample + i;
            const float got = whole[(size_t)c * (size_t)all.num_samples + (size_t)i];
            const float want = g >= 0 && g < ref_n ? ref[g * ch + c] : 0.0f;
            if (i >= all.missing_lo && i < all.missing_hi) {
                CHECK_MSG(exact_start ? got == 0.0f : fabsf(got - want) <= 1e-6f, "sample %lld in the gap: %g",
                          (long long)g, got);
            } else {
                CHECK_MSG(fabsf(got - want) <= 1e-6f, "sample %lld of channel %d: %g, the CLI %g", (long long)g, c, got,
                          want);
            }
        }
    reel_audio_close(&a);
    /* clips of 0.5 s around the damage, forward then in reverse on a fresh
     * object with a jump to the end before each (a restart from a0, or
     * from a mark near the damage), each against the whole window's cut
     * and report */
    for (int pass = 0; pass < 2; pass++) {
        a = open_policy(path, rate, channels, REEL_CORRUPT_SKIP);
        for (int j = 0; j < 8; j++) {
            const int64_t c0 = (int64_t)(at * 4) - 3 + (pass ? 7 - j : j); /* quarter seconds */
            static float far[2 * 48000];
            if (pass) CHECK_OK(reel_audio_get_samples(a, 46, 47, 1, 4, far, sizeof far / sizeof *far, &w, &err));
            check_damaged_clip(a, c0, c0 + 2, 1, 4, &all, whole);
        }
        reel_audio_close(&a);
    }
    /* a first window that ends 1.5 ms before the packet: resampled, the
     * gap's span reaches back into it (by 2 ms at 48 -> 16 kHz), and it is
     * reported though the output it needs was out before the gap was met */
    a = open_policy(path, rate, channels, REEL_CORRUPT_SKIP);
    const int64_t ms = td / (1000 * (int64_t)tn) > 0 ? td / (1000 * (int64_t)tn) : 1;
    check_damaged_clip(a, k.pts - 100 * ms, k.pts - 3 * ms / 2, tn, td, &all, whole);
    reel_audio_close(&a);
    free(ref);
}

TEST(a_corrupt_aac_packet_is_named_or_dropped_as_missing_zeros_like_the_cli)
{
    need_ffmpeg();
    check_damage(make("bad_aac.mp4", STEREO_IN, "-c:a aac -b:a 128k"), 0, 0, "", 1);
}

TEST(a_corrupt_aac_packet_resampled_to_16k_mono_is_reported_over_the_filter)
{
    need_ffmpeg();
    check_damage(make("bad_aac16.mp4", STEREO_IN, "-c:a aac -b:a 128k"), 16000, 1,
                 ",pan=mono|c0=0.5*c0+0.5*c1,aresample=16000", 0);
}

TEST(a_corrupt_mp3_packet_is_named_or_dropped_as_missing_zeros_like_the_cli)
{
    need_ffmpeg();
    check_damage(make("bad_mp3.mp4", "-f lavfi -i aevalsrc='0.5*sin(2*PI*440*t)|0.3*sin(2*PI*660*t)':s=44100:d=12",
                      "-c:a libmp3lame -b:a 128k"),
                 0, 0, "", 1);
}

TEST(truncated_audio_is_named_and_what_comes_before_the_cut_still_decodes)
{
    need_ffmpeg();
    char full[1024], cut[1024], cmd[6000];
    snprintf(full, sizeof full, "%s/whole.mp4", harness_tmpdir());
    snprintf(cut, sizeof cut, "%s/cut.mp4", harness_tmpdir());
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -y -f lavfi -i testsrc2=size=160x120:rate=25:duration=4 -f lavfi -i "
             "sine=f=440:sample_rate=48000:d=4 -map 0:v -map 1:a -c:v libx264 -preset ultrafast -c:a aac "
             "-movflags +faststart %s",
             full);
    run(cmd);
    snprintf(cmd, sizeof cmd, "cp %s %s", full, cut);
    run(cmd);
    struct stat sb;
    CHECK(stat(full, &sb) == 0);
    CHECK(truncate(cut, sb.st_size * 6 / 10) == 0);
    reel_audio *a = NULL;
    reel_error err;
    CHECK_OK(reel_audio_open(&a, cut, NULL, &err)); /* the index is whole (faststart); the samples are cut */
    static float buf[48000 * 4];
    reel_audio_window w;
    CHECK_OK(reel_audio_get_samples(a, 0, 1, 1, 1, buf, 48000, &w, &err)); /* before the cut */
    CHECK_EQ_INT(w.valid_hi, 48000);
    CHECK_STATUS(reel_audio_get_samples(a, 0, 4, 1, 1, buf, 48000 * 4, &w, &err), REEL_E_CORRUPT);
    CHECK_MSG(strstr(err.message, "cut.mp4") && strstr(err.message, "corrupt audio packet at "), "%s", err.message);
    reel_audio_close(&a);
    /* SKIP: the packet cut in two is dropped; valid ends at the cut, where
     * the CLI's samples end, and every sample before it is the CLI's */
    a = open_policy(cut, 0, 0, REEL_CORRUPT_SKIP);
    int64_t ref_n = 0;
    float *ref = reference(cut, "", 1, &ref_n);
    CHECK(ref_n > 48000 && ref_n < 48000 * 3);
    CHECK_OK(reel_audio_get_samples(a, 0, 4, 1, 1, buf, 48000 * 4, &w, &err));
    CHECK_EQ_INT(w.valid_lo, 0);
    CHECK_EQ_INT(w.valid_hi, ref_n);
    CHECK_EQ_INT(w.corrupt_packets, 1);
    CHECK_EQ_INT(w.missing, 0); /* nothing after it: the stream ends there */
    CHECK(compare(buf, &w, ref, ref_n, 1) <= 1e-6);
    free(ref);
    reel_audio_close(&a);
}

/* reel_audio_settings.interrupt: what it stops fails with REEL_E_CANCELLED,
 * and the object then gives the samples an uninterrupted one gives. */
static int stop_when_set(void *opaque)
{
    return *(const int *)opaque;
}

TEST(an_interrupt_stops_the_open_and_the_decode_and_the_object_goes_on)
{
    need_ffmpeg();
    const char *p = make("interrupt.mp4", STEREO_IN, "-c:a aac");
    int stop = 1;
    reel_audio_settings s;
    reel_audio_default_settings(&s);
    s.interrupt = stop_when_set;
    s.interrupt_opaque = &stop;
    reel_audio *a = NULL, *plain = NULL;
    reel_error err;
    CHECK_STATUS(reel_audio_open(&a, p, &s, &err), REEL_E_CANCELLED);
    CHECK(a == NULL);
    CHECK_MSG(strstr(err.message, "interrupt.mp4") && strstr(err.message, "interrupted"), "%s", err.message);
    stop = 0;
    CHECK_OK(reel_audio_open(&a, p, &s, &err));
    CHECK_OK(reel_audio_open(&plain, p, NULL, &err));
    const size_t n = (size_t)reel_audio_get_info(a)->sample_rate * 2; /* 1 s, stereo */
    float *want = calloc(n, sizeof *want), *got = calloc(n, sizeof *got);
    CHECK(want && got);
    reel_audio_window w;
    CHECK_OK(reel_audio_get_samples(plain, 5, 6, 1, 1, want, n, &w, &err));
    CHECK_EQ_INT(w.valid_hi - w.valid_lo, (int64_t)n / 2);
    stop = 1; /* between packets, from a0 to 5 s */
    CHECK_STATUS(reel_audio_get_samples(a, 5, 6, 1, 1, got, n, &w, &err), REEL_E_CANCELLED);
    CHECK_MSG(strstr(err.message, "interrupt.mp4") && strstr(err.message, "interrupted"), "%s", err.message);
    stop = 0;
    CHECK_OK(reel_audio_get_samples(a, 5, 6, 1, 1, got, n, &w, &err));
    CHECK(memcmp(got, want, n * sizeof *got) == 0);
    free(want);
    free(got);
    reel_audio_close(&a);
    reel_audio_close(&plain);
}
