/* bench_gop_spawn.c: why GOP-parallel decoding in the loader keeps the
 * decoder's own per-call threads (issue 26, point 5): what a split sample
 * costs, and what starting its threads costs within that, against the
 * opening of its extra contexts (which any design pays: each context is a
 * demuxer and a codec of its own on the same file).
 *
 *   bench_gop_spawn [--size WxH] [--frames N] [--gop G] [--clip T] [--contexts K] [--iters I]
 *
 * Each sample, as in the loader, opens its own decoder, takes T frames
 * spread over the video (so several keyframe runs) and closes it:
 *   serial: gop_contexts 0, one context;
 *   split:  gop_contexts K, K contexts on K threads (K - 1 started per call);
 *   spawn:  pthread_create + pthread_join of K - 1 threads that do nothing;
 *   open:   one reel_decoder_open + close (what each extra context costs).
 * Prints a markdown table of medians, and spawn as a share of split. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reel/decoder.h"
#include "synth.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void *nothing(void *arg)
{
    return arg;
}

/* One sample as the loader decodes it: open, T frames, close. */
static int sample(const char *path, int contexts, const int64_t *idx, size_t t, void *buf, size_t cap, int *used)
{
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.threads = 1;
    s.gop_contexts = contexts;
    reel_decoder *dec = NULL;
    reel_error err;
    reel_decode_stats st;
    int r = reel_decoder_open(&dec, path, &s, &err);
    if (r == REEL_OK) r = reel_decoder_get_frames(dec, idx, t, NULL, buf, cap, &st, &err);
    if (r == REEL_OK && used) *used = st.gop_contexts;
    if (r != REEL_OK) fprintf(stderr, "bench_gop_spawn: %s\n", err.message);
    reel_decoder_close(&dec);
    return r;
}

int main(int argc, char **argv)
{
    int w = 340, h = 256, frames = 128, gop = 32, clip = 16, k = 2, iters = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--size") && sscanf(argv[i + 1], "%dx%d", &w, &h) == 2) continue;
        if (!strcmp(argv[i], "--frames"))
            frames = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--gop"))
            gop = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--clip"))
            clip = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--contexts"))
            k = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--iters"))
            iters = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "bench_gop_spawn: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (w < 32 || h < 32 || frames < 2 || gop < 1 || clip < 2 || clip > frames || k < 2 || k > 64 || iters < 1) {
        fprintf(stderr, "bench_gop_spawn: bad option values\n");
        return 2;
    }
    char path[64];
    snprintf(path, sizeof path, "/tmp/bench_gop_spawn_%ld.mp4", (long)getpid());
    reel_synth_params p;
    reel_synth_default_params(&p);
    p.path = path;
    p.width = w;
    p.height = h;
    p.num_frames = frames;
    p.gop = gop;
    reel_error err;
    if (reel_synth_write(&p, &err) != REEL_OK) {
        fprintf(stderr, "bench_gop_spawn: %s\n", err.message);
        return 1;
    }
    int64_t *idx = malloc((size_t)clip * sizeof *idx);
    size_t cap = (size_t)clip * 3 * (size_t)w * (size_t)h;
    void *buf = malloc(cap);
    double *ser = malloc((size_t)iters * sizeof(double)), *spl = malloc((size_t)iters * sizeof(double));
    double *spn = malloc((size_t)iters * sizeof(double)), *opn = malloc((size_t)iters * sizeof(double));
    if (!idx || !buf || !ser || !spl || !spn || !opn) return 1;
    for (int i = 0; i < clip; i++) idx[i] = (int64_t)i * (frames - 1) / (clip - 1);
    int used = 0, rc = 0;
    rc |= sample(path, 0, idx, (size_t)clip, buf, cap, NULL); /* warm the page cache */
    for (int it = 0; it < iters && rc == 0; it++) {
        double t0 = now();
        rc |= sample(path, 0, idx, (size_t)clip, buf, cap, NULL);
        double t1 = now();
        rc |= sample(path, k, idx, (size_t)clip, buf, cap, &used);
        double t2 = now();
        pthread_t th[64];
        for (int q = 1; q < k; q++) pthread_create(&th[q], NULL, nothing, NULL);
        for (int q = 1; q < k; q++) pthread_join(th[q], NULL);
        double t3 = now();
        reel_decoder *dec = NULL;
        reel_decoder_settings s;
        reel_decoder_default_settings(&s);
        s.threads = 1;
        s.gop_contexts = 0;
        rc |= reel_decoder_open(&dec, path, &s, &err);
        reel_decoder_close(&dec);
        double t4 = now();
        ser[it] = t1 - t0;
        spl[it] = t2 - t1;
        spn[it] = t3 - t2;
        opn[it] = t4 - t3;
    }
    unlink(path);
    if (rc != 0) return 1;
    double ms = 1e3, a = median(ser, iters), b = median(spl, iters), c = median(spn, iters), d = median(opn, iters);
    printf("| video | frames per sample | contexts used | serial sample (ms) | split sample (ms) | "
           "start and join %d threads (ms) | one context's open (ms) | threads / split | opens / split |\n",
           k - 1);
    printf("|---|---|---|---|---|---|---|---|---|\n");
    printf("| %dx%d, %d frames, GOP %d | %d | %d | %.2f | %.2f | %.4f | %.2f | %.3f%% | %.1f%% |\n", w, h, frames, gop,
           clip, used, a * ms, b * ms, c * ms, d * ms, 100 * c / b, 100 * d * (k - 1) / b);
    free(idx);
    free(buf);
    free(ser);
    free(spl);
    free(spn);
    free(opn);
    return 0;
}
