/* bench_decoder.c: the decoder benchmark's measuring program (issue 2, §8).
 * Driven by bench/run_decoder.py; usable on its own:
 *
 *   bench_decoder FILE [--threads N] [--mode seq|random|even] [--count 10]
 *                 [--frames 3,17,200] [--repeat R] [--seed S]
 *                 [--output rgb|none] [--size WxH] [--chunk K] [--keep-open]
 *                 [--skip-nonref 0|1] [--check-keys 0|1]
 *   bench_decoder synth OUT --size WxH --frames N [--fps 25] [--gop G]
 *                 [--bframes 2] [--codec h264] [--seed S]
 *
 * Measuring: each of the R repeats opens the file (timed as "open"), runs the
 * workload once (timed as "decode") and closes it; --keep-open opens once and
 * runs the workload R times on the same decoder instead. Prints one JSON line
 * with best and median of both, frames/s over returned frames, and the
 * decoder's own statistics (frames decoded, amplification, seeks) from the
 * last repeat.
 *
 * Workloads:
 *   seq     every frame, in one reel_decoder_decode call whose visitor converts
 *           each frame into one reused buffer (streaming: what a user who
 *           reads a whole video gets, without holding it all in memory);
 *           --chunk K instead calls reel_decoder_get_range K frames at a time
 *   random  --count distinct frames drawn uniformly (--seed), one get_frames call
 *   even    --count frames at the centres of --count equal segments
 *           (the TSN / "uniform" sampler), one get_frames call
 *   --frames LIST overrides random/even with exactly these frames.
 * Output: rgb = RGB24 HWC at the native size, or at --size WxH (one fused
 * swscale pass, e.g. 224x224); none = decode only, the visitor touches
 * nothing (the work `ffmpeg -f null -` does).
 *
 * After timing, random/even RGB output is checked against the frame index
 * that the synthetic generator draws into every frame ("verified"; null when
 * the file does not carry the pattern). */
#define _POSIX_C_SOURCE 200809L
#include "reel/reel.h"
#include "synth.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_REPEAT 100

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double best_of(const double *v, int n)
{
    double b = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < b) b = v[i];
    return b;
}

static double median_of(const double *v, int n)
{
    double tmp[MAX_REPEAT];
    memcpy(tmp, v, (size_t)n * sizeof *tmp);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
    return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

/* splitmix64: a small, well-mixed, reproducible generator */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int parse_size(const char *v, int *w, int *h)
{
    char *end;
    long a = strtol(v, &end, 10);
    if (*end != 'x' && *end != 'X') return -1;
    long b = strtol(end + 1, &end, 10);
    if (*end || a <= 0 || b <= 0 || a > 65536 || b > 65536) return -1;
    *w = (int)a;
    *h = (int)b;
    return 0;
}

static int parse_int(const char *v, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) return -1;
    *out = (int)x;
    return 0;
}

/* ---- synth ---------------------------------------------------------------- */

static int cmd_synth(int argc, char **argv)
{
    reel_synth_params p;
    reel_synth_default_params(&p);
    int seed = 1;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (a[0] != '-' && !p.path) {
            p.path = a;
            continue;
        }
        if (!v)
            bad = 1;
        else if (!strcmp(a, "--size"))
            bad = parse_size(v, &p.width, &p.height);
        else if (!strcmp(a, "--frames"))
            bad = parse_int(v, 1, REEL_SYNTH_MAX_INDEX + 1L, &p.num_frames);
        else if (!strcmp(a, "--fps")) {
            bad = parse_int(v, 1, 1000, &p.fps_num);
            p.fps_den = 1;
        } else if (!strcmp(a, "--gop"))
            bad = parse_int(v, 1, 100000, &p.gop);
        else if (!strcmp(a, "--bframes"))
            bad = parse_int(v, 0, 16, &p.bframes);
        else if (!strcmp(a, "--codec"))
            p.codec = v;
        else if (!strcmp(a, "--seed")) {
            bad = parse_int(v, 0, 2147483647L, &seed);
            p.seed = (unsigned)seed;
        } else
            bad = 1;
        if (bad) {
            fprintf(stderr, "bench_decoder synth: bad option %s %s\n", a, v ? v : "");
            return 2;
        }
        i++;
    }
    if (!p.path) {
        fprintf(stderr, "usage: bench_decoder synth OUT --size WxH --frames N [--fps 25] [--gop G] "
                        "[--bframes 2] [--codec h264] [--seed S]\n");
        return 2;
    }
    reel_error err;
    reel_error_clear(&err);
    reel_set_ffmpeg_log_level(1); /* no encoder chatter */
    double t0 = now_s();
    if (reel_synth_write(&p, &err) != REEL_OK) {
        fprintf(stderr, "bench_decoder synth: %s\n", err.message);
        return 1;
    }
    printf("{\"synth\": \"%s\", \"codec\": \"%s\", \"width\": %d, \"height\": %d, \"frames\": %d, "
           "\"gop\": %d, \"bframes\": %d, \"seconds\": %.3f}\n",
           p.path, p.codec, p.width, p.height, p.num_frames, p.gop, p.bframes, now_s() - t0);
    return 0;
}

/* ---- workloads ------------------------------------------------------------ */

typedef struct opts {
    const char *file;
    const char *mode;   /* seq | random | even */
    const char *frames; /* explicit list, or NULL */
    int threads, count, repeat, seed, chunk, keep_open, decode_only, skip_nonref, check_keys;
    int out_w, out_h; /* 0: native */
} opts;

typedef struct stream_sink {
    reel_converter *conv;
    const reel_transform *t;
    uint8_t *buf;
    size_t frame_bytes;
    reel_error *err;
} stream_sink;

static int visit_convert(void *opaque, const reel_frame *f, size_t pos)
{
    stream_sink *s = opaque;
    (void)pos;
    return reel_converter_run(s->conv, f, s->t, s->buf, s->frame_bytes, s->err);
}

static int visit_nothing(void *opaque, const reel_frame *f, size_t pos)
{
    (void)opaque;
    (void)f;
    (void)pos;
    return 0;
}

/* The frames of a random/even workload (sorted for printing; the decoder
 * sorts anyway). Returns the count, or -1. */
static int64_t pick_frames(const opts *o, int64_t nframes, int64_t **out)
{
    int64_t *v = NULL, n = 0;
    if (o->frames) {
        size_t cap = 16;
        v = malloc(cap * sizeof *v);
        const char *p = o->frames;
        while (v && *p) {
            char *end;
            long long x = strtoll(p, &end, 10);
            if (end == p) {
                free(v);
                return -1;
            }
            if (x < 0) x += nframes;
            if (x < 0 || x >= nframes) {
                free(v);
                return -1;
            }
            if ((size_t)n == cap) {
                int64_t *nv = realloc(v, (cap *= 2) * sizeof *v);
                if (!nv) {
                    free(v);
                    return -1;
                }
                v = nv;
            }
            v[n++] = x;
            p = *end == ',' ? end + 1 : end;
            if (*end && *end != ',') {
                free(v);
                return -1;
            }
        }
    } else {
        n = o->count < nframes ? o->count : nframes;
        v = malloc((size_t)(n ? n : 1) * sizeof *v);
        if (!v) return -1;
        if (!strcmp(o->mode, "even")) {
            for (int64_t i = 0; i < n; i++) v[i] = (2 * i + 1) * nframes / (2 * n);
        } else {
            /* distinct uniform draws: partial Fisher-Yates over [0, nframes) */
            int64_t *all = malloc((size_t)nframes * sizeof *all);
            if (!all) {
                free(v);
                return -1;
            }
            for (int64_t i = 0; i < nframes; i++) all[i] = i;
            uint64_t st = (uint64_t)o->seed * 0x2545F4914F6CDD1Dull + 1;
            for (int64_t i = 0; i < n; i++) {
                int64_t j = i + (int64_t)(rng_next(&st) % (uint64_t)(nframes - i));
                int64_t tmp = all[i];
                all[i] = all[j];
                all[j] = tmp;
                v[i] = all[i];
            }
            free(all);
        }
    }
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    *out = v;
    return n;
}

static void usage(FILE *fp)
{
    fprintf(fp, "usage: bench_decoder FILE [--threads N] [--mode seq|random|even] [--count 10]\n"
                "                     [--frames 3,17,200] [--repeat 3] [--seed 1]\n"
                "                     [--output rgb|none] [--size WxH] [--chunk K] [--keep-open]\n"
                "                     [--skip-nonref 0|1] [--check-keys 0|1]\n"
                "       bench_decoder synth OUT --size WxH --frames N [--fps 25] [--gop G]\n"
                "                     [--bframes 2] [--codec h264] [--seed S]\n"
                "Prints one JSON line. See the comment at the top of bench/bench_decoder.c.\n");
}

static int fail(const char *what, const reel_error *err)
{
    fprintf(stderr, "bench_decoder: %s: %s\n", what, err->message);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "synth")) return cmd_synth(argc, argv);

    opts o = { .mode = "seq", .threads = 0, .count = 10, .repeat = 3, .seed = 1, .skip_nonref = 1, .check_keys = 1 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--keep-open")) {
            o.keep_open = 1;
            continue;
        }
        if (a[0] != '-' && !o.file) {
            o.file = a;
            continue;
        }
        if (!v)
            bad = 1;
        else if (!strcmp(a, "--threads"))
            bad = parse_int(v, 0, 256, &o.threads);
        else if (!strcmp(a, "--mode")) {
            o.mode = v;
            bad = strcmp(v, "seq") && strcmp(v, "random") && strcmp(v, "even");
        } else if (!strcmp(a, "--count"))
            bad = parse_int(v, 1, 1000000, &o.count);
        else if (!strcmp(a, "--frames"))
            o.frames = v;
        else if (!strcmp(a, "--repeat"))
            bad = parse_int(v, 1, MAX_REPEAT, &o.repeat);
        else if (!strcmp(a, "--seed"))
            bad = parse_int(v, 0, 2147483647L, &o.seed);
        else if (!strcmp(a, "--chunk"))
            bad = parse_int(v, 0, 1000000, &o.chunk);
        else if (!strcmp(a, "--skip-nonref"))
            bad = parse_int(v, 0, 1, &o.skip_nonref);
        else if (!strcmp(a, "--check-keys"))
            bad = parse_int(v, 0, 1, &o.check_keys);
        else if (!strcmp(a, "--size"))
            bad = parse_size(v, &o.out_w, &o.out_h);
        else if (!strcmp(a, "--output")) {
            bad = strcmp(v, "rgb") && strcmp(v, "none");
            o.decode_only = !strcmp(v, "none");
        } else
            bad = 1;
        if (bad) {
            fprintf(stderr, "bench_decoder: bad option %s %s\n", a, v ? v : "");
            usage(stderr);
            return 2;
        }
        i++;
    }
    if (!o.file) {
        usage(stderr);
        return 2;
    }
    if (o.decode_only && o.chunk) {
        fprintf(stderr, "bench_decoder: --chunk goes through get_range, which always converts (use --output rgb)\n");
        return 2;
    }
    int seq = !strcmp(o.mode, "seq");
    if (seq && o.frames) {
        fprintf(stderr, "bench_decoder: --frames is for --mode random/even\n");
        return 2;
    }

    reel_set_ffmpeg_log_level(1);
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.threads = o.threads;
    s.skip_nonref = o.skip_nonref;
    s.check_keyframes = o.check_keys;
    reel_transform t;
    reel_transform_default_settings(&t);
    t.pixels.apply_rotation = 0; /* as stored: this bench times decoding, not rotation */
    t.width = o.out_w;
    t.height = o.out_h;

    reel_error err;
    reel_error_clear(&err);
    reel_decoder *dec = NULL;
    double open_s[MAX_REPEAT], dec_s[MAX_REPEAT], tot_s[MAX_REPEAT], cpu[MAX_REPEAT];
    reel_decode_stats st, st_sum;
    memset(&st, 0, sizeof st);
    int64_t *frames = NULL, nwant = 0, nframes = 0, returned = 0, calls = 0;
    int out_w = 0, out_h = 0, src_w = 0, src_h = 0;
    size_t fb = 0;
    uint8_t *buf = NULL;
    reel_converter *conv = NULL;
    int rc = 0;
    if (reel_converter_create(&conv, &err) != REEL_OK) return fail("converter", &err);

    for (int r = 0; r < o.repeat; r++) {
        double t0 = now_s();
        if (!dec && reel_decoder_open(&dec, o.file, &s, &err) != REEL_OK) {
            rc = fail("open", &err);
            goto out;
        }
        double t1 = now_s();
        open_s[r] = (o.keep_open && r > 0) ? open_s[0] : t1 - t0;

        if (!buf) { /* first repeat: sizes and frame list (untimed) */
            const reel_video_info *info = reel_decoder_get_info(dec);
            nframes = info->num_frames;
            src_w = info->source_width;
            src_h = info->source_height;
            if (reel_decoder_get_output_size(dec, &t, &out_w, &out_h, &fb, &err) != REEL_OK) {
                rc = fail("size", &err);
                goto out;
            }
            if (!seq) {
                nwant = pick_frames(&o, nframes, &frames);
                if (nwant < 0) {
                    fprintf(stderr, "bench_decoder: bad --frames list\n");
                    rc = 2;
                    goto out;
                }
            }
            size_t nbuf = seq ? (size_t)(o.chunk ? o.chunk : 1) : (size_t)(nwant ? nwant : 1);
            buf = malloc(nbuf * fb);
            if (!buf) {
                fprintf(stderr, "bench_decoder: out of memory\n");
                rc = 1;
                goto out;
            }
            memset(buf, 0, nbuf * fb); /* fault the pages in before timing */
            t1 = now_s();              /* keep the setup out of the decode time */
        }

        memset(&st_sum, 0, sizeof st_sum);
        returned = 0;
        calls = 0;
        double c0 = cpu_s();
        int e = REEL_OK;
        if (seq && o.chunk) {
            for (int64_t i = 0; i < nframes && e == REEL_OK; i += o.chunk) {
                size_t got = 0;
                e = reel_decoder_get_range(dec, i, i + o.chunk, 1, &t, buf, (size_t)o.chunk * fb, &got, &st, &err);
                st_sum.frames_requested += st.frames_requested;
                st_sum.frames_returned += st.frames_returned;
                st_sum.frames_decoded += st.frames_decoded;
                st_sum.frames_skipped += st.frames_skipped;
                st_sum.packets_read += st.packets_read;
                st_sum.seeks += st.seeks;
                calls++;
            }
            st = st_sum;
            st.amplification = st.frames_returned ? (double)st.frames_decoded / (double)st.frames_returned : 0.0;
        } else if (seq) {
            int64_t *all = malloc((size_t)(nframes ? nframes : 1) * sizeof *all);
            if (!all) {
                fprintf(stderr, "bench_decoder: out of memory\n");
                rc = 1;
                goto out;
            }
            for (int64_t i = 0; i < nframes; i++) all[i] = i;
            stream_sink sk = { conv, &t, buf, fb, &err };
            e = reel_decoder_decode(dec, all, (size_t)nframes, o.decode_only ? visit_nothing : visit_convert, &sk, &st,
                                    &err);
            free(all);
            calls = 1;
        } else if (o.decode_only) {
            e = reel_decoder_decode(dec, frames, (size_t)nwant, visit_nothing, NULL, &st, &err);
            calls = 1;
        } else {
            e = reel_decoder_get_frames(dec, frames, (size_t)nwant, &t, buf, (size_t)nwant * fb, &st, &err);
            calls = 1;
        }
        double t2 = now_s();
        cpu[r] = cpu_s() - c0;
        if (e != REEL_OK) {
            rc = fail("decode", &err);
            goto out;
        }
        returned = st.frames_returned;
        dec_s[r] = t2 - t1;
        tot_s[r] = open_s[r] + dec_s[r];
        if (!o.keep_open) reel_decoder_close(&dec);
    }

    /* correctness: every returned frame shows its own index */
    int verified = -1; /* -1: not checked */
    if (!seq && !o.decode_only) {
        verified = 1;
        for (int64_t i = 0; i < nwant; i++) {
            int64_t got = reel_synth_read_index(buf + (size_t)i * fb, out_w, out_h, (int64_t)out_w * 3);
            if (got < 0) {
                verified = -1;
                break;
            } /* not a synthetic video */
            if (got != frames[i]) {
                fprintf(stderr, "bench_decoder: frame %lld came back showing index %lld\n", (long long)frames[i],
                        (long long)got);
                verified = 0;
            }
        }
    }

    double ob = best_of(open_s, o.repeat), om = median_of(open_s, o.repeat);
    double db = best_of(dec_s, o.repeat), dm = median_of(dec_s, o.repeat);
    double tb = best_of(tot_s, o.repeat), tm = median_of(tot_s, o.repeat);
    double cb = best_of(cpu, o.repeat);
    printf("{\"file\": \"%s\", \"width\": %d, \"height\": %d, \"num_frames\": %lld, \"threads\": %d, "
           "\"mode\": \"%s\", \"output\": \"%s\", \"out_width\": %d, \"out_height\": %d, "
           "\"chunk\": %d, \"keep_open\": %s, \"skip_nonref\": %d, \"repeat\": %d, \"calls\": %lld, \"frames\": [",
           o.file, src_w, src_h, (long long)nframes, o.threads, o.mode, o.decode_only ? "none" : "rgb", out_w, out_h,
           o.chunk, o.keep_open ? "true" : "false", o.skip_nonref, o.repeat, (long long)calls);
    for (int64_t i = 0; i < nwant; i++) printf("%s%lld", i ? ", " : "", (long long)frames[i]);
    printf("], \"frames_requested\": %lld, \"frames_returned\": %lld, \"frames_decoded\": %lld, "
           "\"frames_skipped\": %lld, \"packets_read\": %lld, \"seeks\": %lld, \"amplification\": %.4f, "
           "\"open_s_best\": %.6f, \"open_s_median\": %.6f, \"decode_s_best\": %.6f, \"decode_s_median\": %.6f, "
           "\"total_s_best\": %.6f, \"total_s_median\": %.6f, \"decode_cpu_s_best\": %.6f, "
           "\"fps_best\": %.3f, \"fps_median\": %.3f, \"verified\": %s}\n",
           (long long)st.frames_requested, (long long)returned, (long long)st.frames_decoded,
           (long long)st.frames_skipped, (long long)st.packets_read, (long long)st.seeks, st.amplification, ob, om, db,
           dm, tb, tm, cb, db > 0 ? (double)returned / db : 0.0, dm > 0 ? (double)returned / dm : 0.0,
           verified < 0 ? "null"
           : verified   ? "true"
                        : "false");
    if (verified == 0) rc = 1;
out:
    reel_decoder_close(&dec);
    reel_converter_destroy(&conv);
    free(buf);
    free(frames);
    return rc;
}
