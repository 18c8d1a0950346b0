/* cmd_bench.c: `reel bench PATH|MANIFEST [options]`: runs the batch loader
 * over a dataset as a training loop would (the "model" does nothing), with a
 * live progress bar, then reports throughput, coverage, data time, memory,
 * per-stage load and the bottleneck, as text or one JSON object. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "util.h"
#include "reel/reel.h"
#include "reel/pipeline.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *fp)
{
    fprintf(fp, "usage: reel bench PATH|MANIFEST [options]\n"
                "Runs the batch loader over a dataset (a directory scanned for videos, the\n"
                "first folder level naming the class; or a .csv/.tsv/.jsonl manifest) and\n"
                "reports frames/s, coverage, data time, peak memory and the bottleneck.\n"
                "\n"
                "  --frames-per-clip N   frames per clip (8)\n"
                "  --clips-per-video N   clips per video (1)\n"
                "  --stride N            frames between clip frames (1)\n"
                "  --sampler KIND        random | regular | random-time | regular-time (random)\n"
                "  --size N              output N x N (224)\n"
                "  --short-side N        resize the short side to N before the crop (size * 8/7)\n"
                "  --crop KIND           center | random | resized (random)\n"
                "  --flip KIND           none | random (random)\n"
                "  --dtype T             uint8 | float32 | float16 | bfloat16 | uint16 (uint8)\n"
                "  --color C             rgb | gray (rgb)\n"
                "  --layout L            btchw | bcthw | bthwc (btchw)\n"
                "  --batch N             videos per batch (32)\n"
                "  --decode-threads N    decode threads, stage 2 (the core count)\n"
                "  --open-threads N      open/index threads (decode threads / 4)\n"
                "  --decoder-threads N   FFmpeg threads inside each decoder (1)\n"
                "  --prefetch N          batch buffers in the ring (auto)\n"
                "  --epochs N            epochs (1)\n"
                "  --limit N             use only the first N videos of the dataset\n"
                "  --seed N              shuffle/sampling seed (0)\n"
                "  --no-shuffle          keep the dataset order\n"
                "  --shuffle MODE        shards (default): a store is read shard by shard, shards\n"
                "                        in a shuffled order, records shuffled within each (videos:\n"
                "                        full); full: a full shuffle; none: = --no-shuffle\n"
                "  --shuffle-window W    quasi-random order for stores: blocks of W records in a\n"
                "                        shuffled order, shuffled within each block\n"
                "  --unordered           hand out batches as they are ready\n"
                "  --drop-last           drop a last, partial batch\n"
                "  --rank R --world W    run shard R of W\n"
                "  --on-error P          skip | replace | raise (skip); raise stops at the first bad file\n"
                "  --time-limit S        fail a sample after S seconds of work (off)\n"
                "  --index               read and write sidecar indexes (VIDEO.reelidx)\n"
                "  --json                print one JSON object instead of the report\n"
                "  --trace FILE          write a Chrome trace (Perfetto, chrome://tracing)\n"
                "  --progress / --no-progress   force the live progress bar on or off\n"
                "                        (default: on when stderr is a terminal)\n"
                "Exit status: 0 when the run completes (bad files only lower the coverage),\n"
                "1 on an empty dataset or a runtime error, 2 on bad arguments.\n");
}

static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int pick(const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcasecmp(v, names[i]) == 0) return i;
    return -1;
}

static void fmt_duration(char *buf, size_t n, double s)
{
    if (!(s >= 0) || s > 360000) {
        snprintf(buf, n, "--:--");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
    else
        snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

static void progress(reel_loader *l, int64_t done, int64_t total, double t0, int final)
{
    reel_loader_metrics m;
    reel_loader_get_metrics(l, &m, NULL);
    double el = now_s() - t0;
    double frac = total > 0 ? (double)done / (double)total : 0;
    if (frac > 1) frac = 1;
    char eta[32];
    fmt_duration(eta, sizeof eta, frac > 0 ? el * (1 - frac) / frac : -1);
    const int W = 28;
    int fill = (int)(frac * W);
    char bar[64];
    for (int i = 0; i < W; i++) bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
    bar[W] = '\0';
    fprintf(stderr, "\r[%s] %3.0f%% %lld/%lld batches  %.0f frames/s  coverage %.1f%%  ETA %s ", bar, frac * 100,
            (long long)done, (long long)total, el > 0 ? (double)m.frames / el : 0.0, m.coverage * 100, eta);
    if (final) fputc('\n', stderr);
    fflush(stderr);
}

static const char *advice(const char *bottleneck)
{
    if (strcmp(bottleneck, "decode") == 0)
        return "decoding and conversion: add --decode-threads, cores, or shorter GOPs";
    if (strcmp(bottleneck, "open") == 0) return "opening and indexing: add --open-threads, or use --index sidecars";
    if (strcmp(bottleneck, "network") == 0)
        return "waiting on remote requests: add --open-threads (I/O-bound), or pack a store next to the trainers";
    if (strcmp(bottleneck, "fetch") == 0)
        return "fetching from remote storage: add --open-threads (I/O-bound), or pack a store next to the trainers";
    if (strcmp(bottleneck, "collate") == 0) return "collation (moving rows after failures)";
    if (strcmp(bottleneck, "read") == 0)
        return "reading the store's shards: faster disk, page cache, or --open-threads";
    if (strcmp(bottleneck, "image decode") == 0)
        return "image decoding and conversion (store): add --decode-threads or cores, or pack at the output size";
    return "the consumer: the loader keeps up, data time is small";
}

static void report(const reel_loader_metrics *m, reel_loader *l, const char *path, size_t videos,
                   const reel_loader_settings *s, int interrupted)
{
    static const char *dtypes[] = { "uint8", "float32", "float16", "bfloat16", "uint16" };
    static const char *layouts[] = { "[B,T,C,H,W]", "[B,C,T,H,W]", "[B,T,H,W,C]" };
    printf("reel bench %s%s\n", path, interrupted ? "  (interrupted)" : "");
    printf("  dataset      %zu videos, %lld epoch(s), batch %d x %d clip(s) x %d frames, %dx%d %s %s\n", videos,
           (long long)s->epochs, s->batch_size, s->sampler.clips_per_video, s->sampler.frames_per_clip,
           s->transform.crop_width, s->transform.crop_height, dtypes[s->transform.pixels.dtype],
           layouts[s->transform.layout]);
    printf("  throughput   %lld frames, %lld clips, %lld batches in %.2f s: %.1f frames/s, %.1f clips/s\n",
           (long long)m->frames, (long long)m->clips, (long long)m->batches, m->seconds, m->frames_per_second,
           m->clips_per_second);
    printf("  coverage     %.2f%% (%lld of %lld attempts), %lld failed, %lld replaced\n", m->coverage * 100,
           (long long)m->successes, (long long)m->attempts, (long long)m->failures, (long long)m->replacements);
    if (!strcmp(m->stages[REEL_STAGE_DECODE].name, "image decode")) /* a packed store's source */
        printf("               of the sampled frames only: `reel pack --verify %s` checks every record of the store\n",
               path);
    printf("  data time    %.3f s waiting for batches, %.3f s between them (model time)\n", m->data_time_s,
           m->model_time_s);
    printf("  decoding     %lld frames decoded for %lld delivered: amplification %.2f\n", (long long)m->frames_decoded,
           (long long)m->frames_returned, m->amplification);
    printf("  memory       peak RSS %.1f MB, batch ring %.1f MB\n", m->peak_rss_bytes / 1048576.0,
           m->ring_bytes / 1048576.0);
    if (m->remote.requests > 0) {
        printf("  network      %lld requests (%lld retried, %lld failed) on %lld connections, %.1f MB fetched "
               "(%.2f of the objects' %.1f MB), latency p50 %.1f ms, p99 %.1f ms, fetch-ahead peak %.1f MB\n",
               (long long)m->remote.requests, (long long)m->remote.retries, (long long)m->remote.failures,
               (long long)m->remote.connections, m->remote.bytes_fetched / 1048576.0,
               m->remote.object_bytes > 0 ? (double)m->remote.bytes_fetched / (double)m->remote.object_bytes : 0.0,
               m->remote.object_bytes / 1048576.0, m->request_p50_s * 1e3, m->request_p99_s * 1e3,
               m->bytes_in_flight_peak / 1048576.0);
        for (int k = 0; k < 2; k++) {
            const int64_t *v = k ? m->remote.failures_by_cause : m->remote.retries_by_cause;
            int any = 0;
            for (int c = 0; c < REEL_REMOTE_CAUSE_COUNT; c++) {
                if (!v[c]) continue;
                if (!any) printf("  %-12s", k ? "failed" : "retried");
                printf("%s %s %lld", any ? "," : "", reel_remote_cause_name(c), (long long)v[c]);
                any = 1;
            }
            if (any) printf("\n");
        }
    }
    printf("  stages       %-12s %7s %6s %10s %6s\n", "", "threads", "busy", "queue avg", "cap");
    for (int i = 0; i < REEL_STAGE_COUNT; i++) {
        const reel_stage_metrics *st = &m->stages[i];
        printf("               %-12s %7d %5.0f%% %10.1f %6lld\n", st->name, st->threads, st->busy_fraction * 100,
               st->queue_depth_avg, (long long)st->queue_capacity);
    }
    printf("  bottleneck   %s: %s\n", m->bottleneck, advice(m->bottleneck));
    /* each distinct failure once, with how often it happened (epochs repeat
     * them); the log (at most failure_log_size records) is read once */
    int64_t nf = reel_loader_get_num_failures(l), shown = 0;
    reel_failure *fs = nf > 0 ? malloc((size_t)nf * sizeof *fs) : NULL;
    int64_t got = 0;
    for (int64_t i = 0; fs && i < nf; i++)
        if (reel_loader_get_failure(l, i, &fs[got], NULL) == REEL_OK) got++;
    for (int64_t i = 0; i < got; i++) {
        int64_t times = 1, seen_before = 0;
        for (int64_t j = 0; j < got && !seen_before; j++) {
            if (j == i || strcmp(fs[i].reason, fs[j].reason)) continue;
            if (j < i)
                seen_before = 1;
            else
                times++;
        }
        if (seen_before) continue;
        if (shown++ < 20) {
            if (times > 1)
                printf("  failed       %s (%lld times)\n", fs[i].reason, (long long)times);
            else
                printf("  failed       %s\n", fs[i].reason);
        }
    }
    free(fs);
    if (shown > 20)
        printf("  failed       ... and %lld more distinct failures (see --json)\n", (long long)(shown - 20));
}

/* indexed by reel_dtype and reel_color */
static const char *const dtypes[] = { "uint8", "float32", "float16", "bfloat16", "uint16" };
static const char *const colors[] = { "rgb", "gray" };
static const char *const layouts[] = { "btchw", "bcthw", "bthwc" };

/* What the command line asks for. */
typedef struct bench_opts {
    reel_loader_settings s;
    const char *path, *trace;
    int json, show_progress;
    long long limit;
} bench_opts;

/* The command line as parsed so far. */
typedef struct bench_args {
    reel_loader_settings s;
    const char *path, *trace;
    int json, show_progress, size, short_side, index;
    long long limit;
} bench_args;

/* Options whose value is a number of their own kind or a word (--epochs,
 * --limit, --seed, --shuffle, --time-limit, --trace): 1 taken, 0 not one of
 * them, 2 a bad value (said on stderr). */
static int value_opt(bench_args *b, const char *a, const char *v)
{
    reel_loader_settings *s = &b->s;
    if (strcmp(a, "--epochs") == 0 || strcmp(a, "--limit") == 0 || strcmp(a, "--seed") == 0) {
        char *end;
        long long x = strtoll(v, &end, 10);
        if (end == v || *end || x < (strcmp(a, "--seed") == 0 ? 0 : 1)) {
            fprintf(stderr, "reel bench: bad value for %s: '%s'\n", a, v);
            return 2;
        }
        if (a[2] == 'e')
            s->epochs = x;
        else if (a[2] == 'l')
            b->limit = x;
        else
            s->seed = (uint64_t)x;
        return 1;
    }
    if (strcmp(a, "--shuffle") == 0) {
        if (strcmp(v, "full") == 0) {
            s->shuffle = 1;
            s->shuffle_window = REEL_SHUFFLE_WINDOW_FULL;
        } else if (strcmp(v, "shards") == 0) {
            s->shuffle = 1;
            s->shuffle_window = 0;
        } else if (strcmp(v, "none") == 0) {
            s->shuffle = 0;
        } else {
            fprintf(stderr, "reel bench: --shuffle takes shards, full or none, not '%s'\n", v);
            return 2;
        }
        return 1;
    }
    if (strcmp(a, "--time-limit") == 0) {
        char *end;
        double x = strtod(v, &end);
        if (end == v || *end || !(x > 0) || !isfinite(x)) {
            fprintf(stderr, "reel bench: bad value for %s: '%s'\n", a, v);
            return 2;
        }
        s->sample_time_limit = x;
        return 1;
    }
    if (strcmp(a, "--trace") == 0) {
        b->trace = v;
        return 1;
    }
    return 0;
}

/* Flags without a value: 1 taken, 0 not a flag. */
static int flag_opt(bench_args *b, const char *a)
{
    if (strcmp(a, "--json") == 0)
        b->json = 1;
    else if (strcmp(a, "--no-shuffle") == 0)
        b->s.shuffle = 0;
    else if (strcmp(a, "--unordered") == 0)
        b->s.ordered = 0;
    else if (strcmp(a, "--drop-last") == 0)
        b->s.drop_last = 1;
    else if (strcmp(a, "--index") == 0)
        b->index = 1;
    else if (strcmp(a, "--progress") == 0)
        b->show_progress = 1;
    else if (strcmp(a, "--no-progress") == 0)
        b->show_progress = 0;
    else
        return 0;
    return 1;
}

/* Takes argv[*i] (and its value, moving *i past it): -1 to go on, else the
 * exit code (0 after --help, 2 on a bad argument). */
static int parse_one(bench_args *b, int argc, char **argv, int *i)
{
    static const char *const samplers[] = { "random", "regular", "random-time", "regular-time" };
    static const char *const crops[] = { "none", "center", "random", "resized" };
    static const char *const flips[] = { "none", "always", "random" };
    static const char *const policies[] = { "skip", "replace", "raise" };
    reel_loader_settings *s = &b->s;
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    int iv = 0, k;
#define NEED_VALUE()                                              \
    do {                                                          \
        if (!v) {                                                 \
            fprintf(stderr, "reel bench: %s needs a value\n", a); \
            return 2;                                             \
        }                                                         \
        (*i)++;                                                   \
    } while (0)
#define INT_OPT(name, dst, lo)                                             \
    if (strcmp(a, name) == 0) {                                            \
        NEED_VALUE();                                                      \
        if (cli_parse_int(v, &iv) != 0 || iv < (lo)) {                     \
            fprintf(stderr, "reel bench: bad value for %s: '%s'\n", a, v); \
            return 2;                                                      \
        }                                                                  \
        dst = iv;                                                          \
        return -1;                                                         \
    }
#define ENUM_OPT(name, dst, table)                                         \
    if (strcmp(a, name) == 0) {                                            \
        NEED_VALUE();                                                      \
        k = pick(v, table, (int)(sizeof table / sizeof table[0]));         \
        if (k < 0) {                                                       \
            fprintf(stderr, "reel bench: bad value for %s: '%s'\n", a, v); \
            return 2;                                                      \
        }                                                                  \
        dst = k;                                                           \
        return -1;                                                         \
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
        usage(stdout);
        return 0;
    }
    INT_OPT("--frames-per-clip", s->sampler.frames_per_clip, 1)
    INT_OPT("--clips-per-video", s->sampler.clips_per_video, 1)
    INT_OPT("--stride", s->sampler.frame_stride, 1)
    INT_OPT("--size", b->size, 1)
    INT_OPT("--short-side", b->short_side, 1)
    INT_OPT("--batch", s->batch_size, 1)
    INT_OPT("--decode-threads", s->decode_threads, 1)
    INT_OPT("--open-threads", s->open_threads, 1)
    INT_OPT("--decoder-threads", s->decoder.threads, 1)
    INT_OPT("--prefetch", s->prefetch_batches, 1)
    INT_OPT("--rank", s->rank, 0)
    INT_OPT("--world", s->world_size, 1)
    INT_OPT("--shuffle-window", s->shuffle_window, 0)
    ENUM_OPT("--sampler", s->sampler.kind, samplers)
    ENUM_OPT("--crop", s->transform.crop, crops)
    ENUM_OPT("--flip", s->transform.flip, flips)
    ENUM_OPT("--dtype", s->transform.pixels.dtype, dtypes)
    ENUM_OPT("--color", s->transform.pixels.color, colors)
    ENUM_OPT("--layout", s->transform.layout, layouts)
    ENUM_OPT("--on-error", s->on_error, policies)
#undef INT_OPT
#undef ENUM_OPT
    if (!strcmp(a, "--epochs") || !strcmp(a, "--limit") || !strcmp(a, "--seed") || !strcmp(a, "--shuffle") ||
        !strcmp(a, "--time-limit") || !strcmp(a, "--trace")) {
        NEED_VALUE();
        return value_opt(b, a, v) == 2 ? 2 : -1;
    }
#undef NEED_VALUE
    if (flag_opt(b, a)) return -1;
    if (a[0] == '-' && a[1]) {
        fprintf(stderr, "reel bench: unknown option '%s'\n", a);
        usage(stderr);
        return 2;
    }
    if (b->path) {
        fprintf(stderr, "reel bench: one dataset only ('%s' and '%s')\n", b->path, a);
        return 2;
    }
    b->path = a;
    return -1;
}

/* Checks the whole and derives the settings that depend on several options. */
static int finish_args(bench_args *b, bench_opts *o)
{
    reel_loader_settings *s = &b->s;
    if (!b->path) {
        fprintf(stderr, "reel bench: no dataset given\n");
        usage(stderr);
        return 2;
    }
    if (s->rank >= s->world_size) {
        fprintf(stderr, "reel bench: --rank %d must be below --world %d\n", s->rank, s->world_size);
        return 2;
    }
    if (s->transform.crop == REEL_CROP_NONE) {
        s->transform.resize = REEL_RESIZE_EXACT;
        s->transform.resize_width = s->transform.resize_height = b->size;
    } else {
        s->transform.resize = REEL_RESIZE_SHORT_SIDE;
        s->transform.short_side = b->short_side ? b->short_side : (b->size * 8 + 6) / 7;
    }
    s->transform.crop_width = s->transform.crop_height = b->size;
    if (b->index) s->decoder.index_mode = REEL_INDEX_READ_WRITE;
    if (b->trace) s->trace = 1;
    if (s->open_threads == 0 && s->decode_threads > 0)
        s->open_threads = s->decode_threads / 4 > 1 ? s->decode_threads / 4 : 1;
    o->s = *s;
    o->path = b->path;
    o->trace = b->trace;
    o->json = b->json;
    o->show_progress = b->show_progress < 0 ? isatty(2) : b->show_progress;
    o->limit = b->limit;
    return -1;
}

/* Parses the command line into *o: -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, bench_opts *o)
{
    bench_args b;
    memset(&b, 0, sizeof b);
    reel_loader_default_settings(&b.s);
    b.s.transform.crop = REEL_CROP_RANDOM;
    b.s.transform.flip = REEL_FLIP_RANDOM;
    b.show_progress = -1;
    b.size = 224;
    for (int i = 1; i < argc; i++) {
        int r = parse_one(&b, argc, argv, &i);
        if (r >= 0) return r;
    }
    return finish_args(&b, o);
}

/* The dataset at o->path, cut to its first o->limit entries: 0, or 1 after
 * saying why. */
static int open_dataset(const bench_opts *o, reel_dataset **out, size_t *nvideos)
{
    const long long limit = o->limit;
    reel_error err;
    reel_error_clear(&err);
    reel_dataset *full = NULL, *ds = NULL;
    int st = reel_dataset_create_from_path(&full, o->path, &err);
    if (st != REEL_OK) {
        fprintf(stderr, "reel bench: %s\n", err.message);
        return 1;
    }
    size_t videos = reel_dataset_get_size(full);
    if (limit > 0 && (size_t)limit < videos) {
        /* the first N entries, labels as in the full dataset */
        st = reel_dataset_create(&ds, &err);
        for (size_t i = 0; st == REEL_OK && i < (size_t)limit; i++) {
            reel_sample e;
            st = reel_dataset_get(full, i, &e, &err);
            if (st == REEL_OK) st = reel_dataset_add(ds, e.path, e.label, e.start, e.end, &err);
        }
        if (st != REEL_OK) {
            fprintf(stderr, "reel bench: %s\n", err.message);
            reel_dataset_destroy(&ds);
            reel_dataset_destroy(&full);
            return 1;
        }
        videos = (size_t)limit;
    } else {
        ds = full;
        full = NULL;
    }
    reel_dataset_destroy(&full);
    *out = ds;
    *nvideos = videos;
    return 0;
}

/* Runs the epochs (stopping at Ctrl-C) with a progress line: 0, or 1. */
static int run_epochs(reel_loader *l, const bench_opts *o)
{
    const reel_loader_settings s = o->s;
    const int show_progress = o->show_progress;
    reel_error err;
    reel_error_clear(&err);
    int st;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);

    const int64_t per_epoch = reel_loader_get_batches_per_epoch(l);
    const int64_t total = per_epoch * s.epochs;
    int64_t done = 0;
    double t0 = now_s(), last = 0;
    int rc = 0;
    for (int64_t e = 0; e < s.epochs && !g_interrupted && rc == 0; e++) {
        for (;;) {
            reel_batch *b = NULL;
            st = reel_loader_next(l, &b, &err);
            if (st != REEL_OK) {
                if (show_progress) fputc('\n', stderr);
                fprintf(stderr, "reel bench: %s\n", err.message);
                rc = 1;
                break;
            }
            if (!b) break;
            done++;
            reel_loader_release(l, b);
            double t = now_s();
            if (show_progress && t - last > 0.1) {
                progress(l, done, total, t0, 0);
                last = t;
            }
            if (g_interrupted) break;
        }
    }
    if (show_progress) progress(l, done, total, t0, 1);
    sigaction(SIGINT, &old, NULL);
    return rc;
}

/* The trace file, and the report (text or JSON): 0, or 1. */
static int print_results(reel_loader *l, const bench_opts *o, size_t videos)
{
    const reel_loader_settings s = o->s;
    const char *path = o->path, *trace = o->trace;
    const int json = o->json;
    int rc = 0;
    reel_error err;
    reel_error_clear(&err);
    reel_loader_metrics m;
    reel_loader_get_metrics(l, &m, NULL);
    if (trace) {
        if (reel_loader_write_trace(l, trace, &err) != REEL_OK) {
            fprintf(stderr, "reel bench: %s\n", err.message);
            rc = 1;
        } else if (!json) {
            fprintf(stderr, "reel bench: trace written to %s\n", trace);
        }
    }
    if (json) {
        char *mj = NULL;
        if (reel_loader_get_metrics_json(l, &mj, &err) != REEL_OK) {
            fprintf(stderr, "reel bench: %s\n", err.message);
            rc = 1;
        } else {
            printf("{\"path\":");
            cli_json_str(stdout, path);
            printf(",\"videos\":%zu,\"epochs\":%lld,\"batch_size\":%d,\"clips_per_video\":%d,\"frames_per_clip\":%d,"
                   "\"width\":%d,\"height\":%d,\"dtype\":\"%s\",\"layout\":\"%s\",\"decode_threads\":%d,"
                   "\"open_threads\":%d,\"interrupted\":%s,",
                   videos, (long long)s.epochs, s.batch_size, s.sampler.clips_per_video, s.sampler.frames_per_clip,
                   s.transform.crop_width, s.transform.crop_height, dtypes[s.transform.pixels.dtype],
                   layouts[s.transform.layout], m.stages[REEL_STAGE_DECODE].threads, m.stages[REEL_STAGE_OPEN].threads,
                   g_interrupted ? "true" : "false");
            fputs(mj + 1, stdout); /* the metrics object's members */
            fputc('\n', stdout);
            reel_free(mj);
        }
    } else {
        report(&m, l, path, videos, &s, g_interrupted);
    }
    return rc;
}

int reel_cli_bench(int argc, char **argv)
{
    /* failures are reported by the loader's own records; FFmpeg's log would
     * only scramble the progress bar (REEL_FFMPEG_LOG=1..3 brings it back) */
    reel_set_ffmpeg_log_level(getenv("REEL_FFMPEG_LOG") ? atoi(getenv("REEL_FFMPEG_LOG")) : 0);
    bench_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) return rc;
    reel_dataset *ds = NULL;
    size_t videos = 0;
    if (open_dataset(&o, &ds, &videos) != 0) return 1;
    reel_loader *l = NULL;
    reel_error err;
    reel_error_clear(&err);
    int st = reel_loader_create(&l, ds, &o.s, &err);
    if (st != REEL_OK) {
        fprintf(stderr, "reel bench: %s\n", err.message);
        reel_dataset_destroy(&ds);
        return st == REEL_E_INVALID_ARG ? 2 : 1;
    }
    rc = run_epochs(l, &o);
    if (print_results(l, &o, videos) != 0) rc = 1;
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
    if (g_interrupted && rc == 0) rc = 1; /* interrupted: the report covers what ran */
    return rc;
}
