/* bench_audio.c: where reel's audio time goes, per clip, in C (issue 28):
 * the clips of bench/run_audio.py read through reel_audio alone, in modes
 * that each leave out one stage, so that their differences are the stages.
 *
 *   python3 bench/run_audio.py --plan | build/bench_audio [--rounds 20] [--rate 16000] [--only MODE]
 *
 * The plan on stdin: one line a video, "PATH FIRST_FRAME ..." (the clips' first frames
 * at 25 fps, in their order; run_audio.py --plan prints it), each clip 16
 * frames, its window [s / 25, (s + 16) / 25) s.
 *
 * Modes, each a fresh reel_audio a video, its windows in order (process CPU
 * time over all of the plan's clips, the best of --rounds, the modes
 * interleaved round by round; --only: one of them):
 *   full     --rate mono with the cache (what VideoDecoder's audio does)
 *   native   the stream's rate, mono: the mix and the cache, no resample
 *   stereo   the stream's rate and channels: no mix, no resample
 *   sorted   full, the windows in time order
 *   windows  --rate mono, no cache, the windows in time order: one decode
 *            from a0 that resamples only each window and its 10 ms of
 *            warm-up (the least any exact reading of these windows pays)
 *   nocache  --rate mono, no cache, the windows in the plan's order (as the
 *            Loader reads a sample's clips: clip after clip)
 *   decode   --rate mono, no cache, one window at the latest clip's end (the
 *            floor: the open and the AAC decode from a0 any exact reading pays)
 *   open     the open alone
 * Prints one JSON line: ms per clip of each mode, best and median. */
#define _POSIX_C_SOURCE 200809L
#include "reel/reel.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_VIDEOS 64
#define MAX_CLIPS  64
#define FRAMES     16
#define FPS        25

typedef struct video {
    char path[1024];
    int starts[MAX_CLIPS];
    int n;
} video;

enum { FULL, NATIVE, STEREO, SORTED, WINDOWS, NOCACHE, DECODE, OPEN, N_MODES };
static const char *const mode_names[N_MODES] = { "full",    "native",  "stereo", "sorted",
                                                 "windows", "nocache", "decode", "open" };

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int read_plan(video *v, int max)
{
    char line[8192];
    int n = 0;
    while (n < max && fgets(line, sizeof line, stdin)) {
        char *save = NULL, *tok = strtok_r(line, " \t\n", &save);
        if (!tok) continue;
        snprintf(v[n].path, sizeof v[n].path, "%s", tok);
        v[n].n = 0;
        while ((tok = strtok_r(NULL, " \t\n", &save)) && v[n].n < MAX_CLIPS) v[n].starts[v[n].n++] = atoi(tok);
        n++;
    }
    return n;
}

static int cmp_int(const void *x, const void *y)
{
    const int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

/* One video's clips in `mode`; 0 or -1 (printed). */
static int run_video(const video *v, int mode, int rate, float *buf, size_t cap)
{
    reel_audio_settings s;
    reel_audio_default_settings(&s);
    s.channels = mode == STEREO ? 0 : 1;
    s.sample_rate = mode == NATIVE || mode == STEREO ? 0 : rate;
    if (mode == DECODE || mode == WINDOWS || mode == NOCACHE) s.cache_bytes = 0;
    reel_error err = { 0 };
    reel_audio *a = NULL;
    if (reel_audio_open(&a, v->path, &s, &err) != REEL_OK) {
        fprintf(stderr, "%s\n", err.message);
        return -1;
    }
    int st = REEL_OK;
    if (mode == DECODE) {
        int end = 0;
        for (int i = 0; i < v->n; i++)
            if (v->starts[i] + FRAMES > end) end = v->starts[i] + FRAMES;
        st = reel_audio_get_samples(a, end - 1, end, 1, FPS, buf, cap, NULL, &err);
    } else if (mode != OPEN) {
        int order[MAX_CLIPS];
        for (int i = 0; i < v->n; i++) order[i] = v->starts[i];
        if (mode == SORTED || mode == WINDOWS) qsort(order, (size_t)v->n, sizeof *order, cmp_int);
        for (int i = 0; i < v->n && st == REEL_OK; i++)
            st = reel_audio_get_samples(a, order[i], order[i] + FRAMES, 1, FPS, buf, cap, NULL, &err);
    }
    if (st != REEL_OK) fprintf(stderr, "%s\n", err.message);
    reel_audio_close(&a);
    return st == REEL_OK ? 0 : -1;
}

static int cmp_double(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    int rounds = 20, rate = 16000, only = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rate"))
            rate = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--only")) {
            for (int m = 0; m < N_MODES; m++)
                if (!strcmp(argv[i + 1], mode_names[m])) only = m;
            if (only < 0) {
                fprintf(stderr, "bench_audio: no mode %s\n", argv[i + 1]);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench_audio [--rounds R] [--rate HZ] [--only MODE] < PLAN\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > 1000) rounds = 20;
    static video v[MAX_VIDEOS];
    const int nv = read_plan(v, MAX_VIDEOS);
    int clips = 0;
    for (int i = 0; i < nv; i++) clips += v[i].n;
    if (nv == 0 || clips == 0) {
        fprintf(stderr, "bench_audio: no plan on stdin\n");
        return 2;
    }
    const size_t cap = (size_t)2 * 48000 * 2; /* a clip of 0.64 s at up to 96 kHz stereo, with room */
    float *buf = malloc(cap * sizeof(float));
    double *t = calloc((size_t)N_MODES * (size_t)rounds, sizeof(double));
    if (!buf || !t) return 1;
    for (int m = 0; m < N_MODES; m++) /* a first pass outside the clock */
        for (int i = 0; i < nv; i++)
            if (run_video(&v[i], m, rate, buf, cap) < 0) return 1;
    for (int r = 0; r < rounds; r++)
        for (int m = 0; m < N_MODES; m++) {
            if (only >= 0 && m != only) continue;
            const double t0 = cpu_s();
            for (int i = 0; i < nv; i++)
                if (run_video(&v[i], m, rate, buf, cap) < 0) return 1;
            t[m * rounds + r] = (cpu_s() - t0) * 1e3 / clips;
        }
    printf("{\"clips\": %d, \"rounds\": %d", clips, rounds);
    for (int m = 0; m < N_MODES; m++) {
        if (only >= 0 && m != only) continue;
        double *x = t + m * rounds;
        qsort(x, (size_t)rounds, sizeof *x, cmp_double);
        printf(", \"%s_ms\": {\"best\": %.4f, \"median\": %.4f}", mode_names[m], x[0], x[rounds / 2]);
    }
    printf("}\n");
    free(buf);
    free(t);
    return 0;
}
