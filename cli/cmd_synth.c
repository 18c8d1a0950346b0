/* cmd_synth.c: `reel synth OUT [options]` writes one synthetic test video;
 * `reel synth --dataset DIR [options]` writes a Kinetics-like folder of them
 * (class folders, manifest.csv, optionally damaged files), in parallel. */
#define _POSIX_C_SOURCE 200809L

#include "cli.h"
#include "util.h"
#include "reel/reel.h"
#include "synth/synth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PATH_SIZE 4096
#define MAX_JOBS  64

static void usage(FILE *fp)
{
    fprintf(fp, "usage: reel synth OUT [options]\n"
                "       reel synth --dataset DIR [options] [--classes N] [--videos N] [--seconds S]\n"
                "                  [--corrupt K] [--jobs N]\n"
                "\n"
                "Writes synthetic videos whose frames carry their own index in a block\n"
                "pattern (read back by the tests and benchmarks). The container follows\n"
                "OUT's extension: .mp4 .mov .mkv .webm .avi.\n"
                "\n"
                "options:\n"
                "  --codec C      h264 (default), hevc, vp9, av1, mpeg4, mjpeg, vp8\n"
                "  --size WxH     frame size (default 320x240; dataset 340x256)\n"
                "  --frames N     number of frames (default 64; dataset: --seconds x fps)\n"
                "  --fps R        frame rate: 25 (default), 30000/1001, 29.97\n"
                "  --gop N        keyframe interval in frames (default 16; dataset 250)\n"
                "  --bframes N    max consecutive B-frames for h264/hevc/mpeg4 (default 2)\n"
                "  --vfr          variable frame durations (0.5x..1.5x nominal, seeded)\n"
                "  --10bit        10-bit samples (h264, hevc, vp9, av1)\n"
                "  --444          4:4:4 chroma (h264, hevc, vp9, av1, mjpeg)\n"
                "  --start S      time of the first frame in seconds (default 0)\n"
                "  --seed N       content and timing seed (default 1)\n"
                "\n"
                "dataset mode (DIR/<class>/<video>.mp4 and DIR/manifest.csv with\n"
                "path,label,start,end; path relative to DIR, start/end in seconds):\n"
                "  --dataset DIR  write the dataset into DIR (created if missing)\n"
                "  --classes N    number of class folders (default 4)\n"
                "  --videos N     number of videos, spread over the classes (default 64)\n"
                "  --seconds S    length of each video (default 10)\n"
                "  --corrupt K    also write K damaged files, listed in the manifest, in turn:\n"
                "                 a .mkv cut at half size, an .mp4 with bytes overwritten in\n"
                "                 the middle, an empty .mp4, a text file named .mp4 (.webm\n"
                "                 instead of .mp4 for vp8)\n"
                "  --jobs N       processes writing videos (default: CPU count)\n"
                "\n"
                "exit status: 0 ok, 1 runtime error, 2 bad usage\n");
}

static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...)
{
    fputs("reel synth: ", stderr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nrun 'reel synth --help' for the options\n", stderr);
    return 2;
}

typedef struct synth_opts {
    reel_synth_params p;
    const char *out;     /* single mode */
    const char *dataset; /* dataset mode */
    int classes, videos, corrupt, jobs;
    double seconds;
    int have_size, have_frames, have_gop;
} synth_opts;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_double(const char *s, double *v)
{
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (end == s || *end || errno || !(d >= 0.0 && d < 1e9)) return -1;
    *v = d;
    return 0;
}

static int parse_uint(const char *s, unsigned *v)
{
    char *end;
    if (!*s || *s == '-') return -1;
    errno = 0;
    unsigned long u = strtoul(s, &end, 10);
    if (end == s || *end || errno || u > 0xFFFFFFFFul) return -1;
    *v = (unsigned)u;
    return 0;
}

/* "25", "30000/1001" or "29.97" (to 1/1000). */
static int parse_fps(const char *s, int *num, int *den)
{
    int n, d;
    const char *slash = strchr(s, '/');
    if (slash) {
        char head[32];
        size_t len = (size_t)(slash - s);
        if (len == 0 || len >= sizeof head) return -1;
        memcpy(head, s, len);
        head[len] = '\0';
        if (cli_parse_int(head, &n) || cli_parse_int(slash + 1, &d)) return -1;
    } else {
        double f;
        if (parse_double(s, &f) || f > 1000.0) return -1;
        n = (int)(f * 1000.0 + 0.5);
        d = 1000;
        while (n % 10 == 0 && d % 10 == 0 && d > 1) {
            n /= 10;
            d /= 10;
        }
    }
    if (n <= 0 || d <= 0 || n > 1000000 || d > 1000000 || (double)n / d > 1000.0) return -1;
    *num = n;
    *den = d;
    return 0;
}

static int online_cpus(void)
{
#ifdef _SC_NPROCESSORS_ONLN
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n >= 1) return n > MAX_JOBS ? MAX_JOBS : (int)n;
#endif
    return 1;
}

/* Returns 0, or 2 after printing a usage error. */
static int parse_args(int argc, char **argv, synth_opts *o)
{
    reel_synth_default_params(&o->p);
    o->classes = 4;
    o->videos = 64;
    o->seconds = 10.0;
    o->corrupt = 0;
    o->jobs = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] == '\0') {
            if (o->out) return bad_usage("more than one output given ('%s')", a);
            o->out = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            if (i + 1 < argc && !o->out) o->out = argv[++i];
            if (i + 1 < argc) return bad_usage("unexpected argument '%s'", argv[i + 1]);
            break;
        }
        /* flags */
        if (!strcmp(a, "--vfr")) {
            o->p.vfr = 1;
            continue;
        }
        if (!strcmp(a, "--10bit")) {
            o->p.pix_fmt_10bit = 1;
            continue;
        }
        if (!strcmp(a, "--444")) {
            o->p.yuv444 = 1;
            continue;
        }
        /* options with a value: "--opt V" or "--opt=V" */
        char name[32];
        const char *val = NULL;
        const char *eq = strchr(a, '=');
        if (eq) {
            size_t len = (size_t)(eq - a);
            if (len >= sizeof name) return bad_usage("unknown option '%s'", a);
            memcpy(name, a, len);
            name[len] = '\0';
            val = eq + 1;
        } else {
            if (strlen(a) >= sizeof name) return bad_usage("unknown option '%s'", a);
            strcpy(name, a);
        }
        static const char *const with_value[] = { "--codec",   "--size",    "--frames",  "--fps",     "--gop",
                                                  "--bframes", "--start",   "--seed",    "--dataset", "--classes",
                                                  "--videos",  "--seconds", "--corrupt", "--jobs" };
        int known = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++) known |= !strcmp(name, with_value[k]);
        if (!known) return bad_usage("unknown option '%s'", a);
        if (!val) {
            if (i + 1 >= argc) return bad_usage("%s needs a value", name);
            val = argv[++i];
        }
        int iv;
        if (!strcmp(name, "--codec")) {
            o->p.codec = val;
        } else if (!strcmp(name, "--size")) {
            if (cli_parse_size(val, &o->p.width, &o->p.height) || o->p.width <= 0 || o->p.height <= 0)
                return bad_usage("bad --size '%s' (want WxH, e.g. 320x240)", val);
            o->have_size = 1;
        } else if (!strcmp(name, "--frames")) {
            if (cli_parse_int(val, &o->p.num_frames) || o->p.num_frames < 1)
                return bad_usage("bad --frames '%s' (want a count >= 1)", val);
            o->have_frames = 1;
        } else if (!strcmp(name, "--fps")) {
            if (parse_fps(val, &o->p.fps_num, &o->p.fps_den))
                return bad_usage("bad --fps '%s' (want e.g. 25, 30000/1001 or 29.97)", val);
        } else if (!strcmp(name, "--gop")) {
            if (cli_parse_int(val, &o->p.gop) || o->p.gop < 1)
                return bad_usage("bad --gop '%s' (want a frame count >= 1)", val);
            o->have_gop = 1;
        } else if (!strcmp(name, "--bframes")) {
            if (cli_parse_int(val, &o->p.bframes) || o->p.bframes > 16)
                return bad_usage("bad --bframes '%s' (want 0..16)", val);
        } else if (!strcmp(name, "--start")) {
            if (parse_double(val, &o->p.start_time) || o->p.start_time >= 1e6)
                return bad_usage("bad --start '%s' (want seconds >= 0)", val);
        } else if (!strcmp(name, "--seed")) {
            if (parse_uint(val, &o->p.seed)) return bad_usage("bad --seed '%s' (want 0..4294967295)", val);
        } else if (!strcmp(name, "--dataset")) {
            if (!*val) return bad_usage("%s needs a directory", name);
            o->dataset = val;
        } else if (!strcmp(name, "--classes")) {
            if (cli_parse_int(val, &o->classes) || o->classes < 1 || o->classes > 10000)
                return bad_usage("bad --classes '%s' (want 1..10000)", val);
        } else if (!strcmp(name, "--videos")) {
            if (cli_parse_int(val, &o->videos) || o->videos > 1000000)
                return bad_usage("bad --videos '%s' (want 0..1000000)", val);
        } else if (!strcmp(name, "--seconds")) {
            if (parse_double(val, &o->seconds) || o->seconds <= 0.0 || o->seconds > 1e5)
                return bad_usage("bad --seconds '%s' (want a length > 0)", val);
        } else if (!strcmp(name, "--corrupt")) {
            if (cli_parse_int(val, &o->corrupt) || o->corrupt > 100000)
                return bad_usage("bad --corrupt '%s' (want a count >= 0)", val);
        } else if (!strcmp(name, "--jobs")) {
            if (cli_parse_int(val, &iv) || iv < 1 || iv > MAX_JOBS)
                return bad_usage("bad --jobs '%s' (want 1..64)", val);
            o->jobs = iv;
        }
    }
    if (o->dataset && o->out) return bad_usage("give either OUT or --dataset DIR, not both ('%s')", o->out);
    if (!o->dataset && !o->out) return bad_usage("%s", "no output given (OUT or --dataset DIR)");
    if (o->dataset && o->videos + o->corrupt == 0)
        return bad_usage("%s", "--videos and --corrupt are both 0: nothing to write");
    return 0;
}

static void describe(const reel_synth_params *p, char *buf, size_t size)
{
    const char *c = p->codec;
    char bf[32] = "";
    if (!strcmp(c, "h264") || !strcmp(c, "hevc") || !strcmp(c, "h265") || !strcmp(c, "mpeg4"))
        snprintf(bf, sizeof bf, ", bframes %d", p->bframes);
    snprintf(buf, size, "%s %dx%d, %d frames at %d/%d fps, gop %d%s%s%s%s", c, p->width, p->height, p->num_frames,
             p->fps_num, p->fps_den, p->gop, bf, p->vfr ? ", vfr" : "", p->pix_fmt_10bit ? ", 10-bit" : "",
             p->yuv444 ? ", 4:4:4" : "");
}

/* ---------------------------------------------------------------- single video */

static int run_single(synth_opts *o)
{
    reel_error err;
    reel_error_clear(&err);
    o->p.path = o->out;
    double t0 = now_s();
    if (reel_synth_write(&o->p, &err) != REEL_OK) {
        fprintf(stderr, "reel synth: %s\n", err.message);
        return 1;
    }
    char what[256];
    describe(&o->p, what, sizeof what);
    if (o->p.start_time != 0.0)
        printf("reel synth: wrote %s (%s, start %g s) in %.2f s\n", o->out, what, o->p.start_time, now_s() - t0);
    else
        printf("reel synth: wrote %s (%s) in %.2f s\n", o->out, what, now_s() - t0);
    return 0;
}

/* ---------------------------------------------------------------- dataset */

static const char *const k_actions[] = {
    "juggling", "archery", "bowling", "surfing", "knitting", "skiing", "drumming", "yoga",
    "fencing",  "rowing",  "sailing", "welding", "boxing",   "diving", "golfing",  "hurdling",
};
#define NUM_ACTIONS (sizeof k_actions / sizeof k_actions[0])

/* "class_07_drumming": zero-padded so the folders sort in class order. */
static void class_name(int c, int classes, char *buf, size_t size)
{
    const char *action = k_actions[(size_t)c % NUM_ACTIONS];
    if (classes <= 100)
        snprintf(buf, size, "class_%02d_%s", c, action);
    else if (classes <= 1000)
        snprintf(buf, size, "class_%03d_%s", c, action);
    else
        snprintf(buf, size, "class_%05d_%s", c, action);
}

/* mkdir -p; returns 0 or -1 with errno set. */
static int make_dirs(const char *path)
{
    char tmp[PATH_SIZE];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(tmp, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (tmp[i] != '/' && tmp[i] != '\0') continue;
        char saved = tmp[i];
        tmp[i] = '\0';
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
        tmp[i] = saved;
    }
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* Video v of the dataset: class, relative path, parameters. */
typedef struct dataset_item {
    int cls;
    char rel[PATH_SIZE / 2];
} dataset_item;

static const char *dataset_ext(const char *codec)
{
    return (!strcmp(codec, "vp8")) ? "webm" : "mp4"; /* .mp4 cannot hold VP8 */
}

static void video_item(const synth_opts *o, int v, dataset_item *it)
{
    char cname[128];
    it->cls = v % o->classes;
    class_name(it->cls, o->classes, cname, sizeof cname);
    snprintf(it->rel, sizeof it->rel, "%s/video_%05d.%s", cname, v, dataset_ext(o->p.codec));
}

static void corrupt_item(const synth_opts *o, int k, dataset_item *it)
{
    static const char *const kinds[] = { "truncated", "garbled", "empty", "text" };
    char cname[128];
    it->cls = k % o->classes;
    class_name(it->cls, o->classes, cname, sizeof cname);
    /* The truncated one is Matroska: an .mp4 written in one pass keeps its index
     * at the end, so cut in half it would not open at all (like the text file);
     * a cut .mkv opens and ends early, which is the case worth showing. */
    snprintf(it->rel, sizeof it->rel, "%s/corrupt_%03d_%s.%s", cname, k, kinds[k % 4],
             k % 4 == 0 ? "mkv" : dataset_ext(o->p.codec));
}

static int join_path(char *buf, size_t size, const char *dir, const char *rel)
{
    int n = snprintf(buf, size, "%s/%s", dir, rel);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Parameters of dataset video v (seed, path filled by the caller). */
static reel_synth_params video_params(const synth_opts *o, int v, const char *path)
{
    reel_synth_params p = o->p;
    p.path = path;
    p.seed = o->p.seed * 1000003u + (unsigned)v;
    return p;
}

/* Writes dataset videos v = first, first + step, ... (below o->videos);
 * returns 0 or 1. */
static int write_videos(const synth_opts *o, int first, int step)
{
    for (int v = first; v < o->videos; v += step) {
        dataset_item it;
        char path[PATH_SIZE];
        reel_error err;
        reel_error_clear(&err);
        video_item(o, v, &it);
        if (join_path(path, sizeof path, o->dataset, it.rel)) {
            fprintf(stderr, "reel synth: %s/%s: path too long\n", o->dataset, it.rel);
            return 1;
        }
        reel_synth_params p = video_params(o, v, path);
        if (reel_synth_write(&p, &err) != REEL_OK) {
            fprintf(stderr, "reel synth: %s\n", err.message);
            return 1;
        }
    }
    return 0;
}

/* Writes videos first.. over `jobs` worker processes (one process: here);
 * returns 0 or 1. The output does not depend on the number of jobs. */
static int write_videos_parallel(const synth_opts *o, int first, int jobs)
{
    if (jobs <= 1) return write_videos(o, first, 1);
    pid_t pids[MAX_JOBS];
    int started = 0, failed = 0;
    fflush(stdout);
    fflush(stderr);
    for (int j = 0; j < jobs; j++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "reel synth: %s: cannot start a worker process: %s\n", o->dataset, strerror(errno));
            failed = 1;
            break;
        }
        if (pid == 0) {
            int rc = write_videos(o, first + j, jobs);
            fflush(stderr);
            _exit(rc);
        }
        pids[started++] = pid;
    }
    for (int j = 0; j < started; j++) {
        int status = 0;
        while (waitpid(pids[j], &status, 0) < 0) {
            if (errno != EINTR) {
                status = 1;
                break;
            }
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (WIFSIGNALED(status))
                fprintf(stderr, "reel synth: %s: a worker process died (signal %d)\n", o->dataset, WTERMSIG(status));
            failed = 1;
        }
    }
    return failed;
}

static int io_fail(const char *path, const char *what)
{
    fprintf(stderr, "reel synth: %s: %s: %s\n", path, what, strerror(errno));
    return 1;
}

/* Writes damaged file k: a truncated video, a video with bytes overwritten in
 * the middle, an empty file, or a text file. Returns 0 or 1. */
static int write_corrupt(const synth_opts *o, int k, const char *path)
{
    int kind = k % 4;
    if (kind == 0 || kind == 1) {
        reel_error err;
        reel_error_clear(&err);
        reel_synth_params p = video_params(o, o->videos + k, path);
        if (reel_synth_write(&p, &err) != REEL_OK) {
            fprintf(stderr, "reel synth: %s\n", err.message);
            return 1;
        }
        struct stat st;
        if (stat(path, &st) != 0) return io_fail(path, "cannot stat");
        off_t size = st.st_size;
        if (kind == 0) {
            if (truncate(path, size / 2) != 0) return io_fail(path, "cannot truncate");
            return 0;
        }
        /* overwrite size/8 bytes (at least 256) from the middle with seeded noise */
        off_t len = size / 8 < 256 ? 256 : size / 8;
        off_t at = size / 2;
        if (at + len > size) len = size - at;
        FILE *fp = fopen(path, "r+b");
        if (!fp) return io_fail(path, "cannot open");
        if (fseeko(fp, at, SEEK_SET) != 0) {
            fclose(fp);
            return io_fail(path, "cannot seek");
        }
        uint64_t x = 0x243F6A8885A308D3ull ^ (uint64_t)k;
        for (off_t i = 0; i < len; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (fputc((int)(x & 0xFF), fp) == EOF) {
                fclose(fp);
                return io_fail(path, "cannot write");
            }
        }
        if (fclose(fp) != 0) return io_fail(path, "cannot write");
        return 0;
    }
    FILE *fp = fopen(path, "wb");
    if (!fp) return io_fail(path, "cannot create");
    if (kind == 3)
        fputs("This is not a video. reel synth --corrupt wrote this text file with an .mp4\n"
              "name to show how a loader treats a file that is not a media container.\n",
              fp);
    if (fclose(fp) != 0) return io_fail(path, "cannot write");
    return 0;
}

static int run_dataset(synth_opts *o)
{
    double t0 = now_s();
    char path[PATH_SIZE];
    if (!o->have_size) {
        o->p.width = 340;
        o->p.height = 256;
    }
    if (!o->have_gop) o->p.gop = 250;
    if (!o->have_frames) {
        double n = o->seconds * o->p.fps_num / o->p.fps_den + 0.5;
        if (n < 1.0 || n > (double)REEL_SYNTH_MAX_INDEX + 1) {
            fprintf(stderr, "reel synth: %s: %g s at %d/%d fps is out of range (1..%d frames)\n", o->dataset,
                    o->seconds, o->p.fps_num, o->p.fps_den, REEL_SYNTH_MAX_INDEX + 1);
            return 1;
        }
        o->p.num_frames = (int)n;
    }

    if (make_dirs(o->dataset) != 0) return io_fail(o->dataset, "cannot create the directory");
    for (int c = 0; c < o->classes && c < o->videos + o->corrupt; c++) {
        char cname[128];
        class_name(c, o->classes, cname, sizeof cname);
        if (join_path(path, sizeof path, o->dataset, cname) || make_dirs(path) != 0)
            return io_fail(path, "cannot create the class directory");
    }

    /* Video 0 first, alone: a problem with the parameters (codec, container,
     * size) is reported once, before any worker starts. */
    int jobs = o->jobs ? o->jobs : online_cpus();
    if (jobs > o->videos - 1) jobs = o->videos - 1;
    if (o->videos > 0 && write_videos(o, 0, o->videos) != 0) return 1;
    if (o->videos > 1 && write_videos_parallel(o, 1, jobs) != 0) return 1;
    for (int k = 0; k < o->corrupt; k++) {
        dataset_item it;
        corrupt_item(o, k, &it);
        if (join_path(path, sizeof path, o->dataset, it.rel)) {
            fprintf(stderr, "reel synth: %s/%s: path too long\n", o->dataset, it.rel);
            return 1;
        }
        if (write_corrupt(o, k, path) != 0) return 1;
    }

    /* manifest.csv: every video, then the damaged files (with the times an
     * intact file would have). Written last, so it only lists what exists. */
    if (join_path(path, sizeof path, o->dataset, "manifest.csv")) return io_fail(o->dataset, "path too long");
    FILE *fp = fopen(path, "w");
    if (!fp) return io_fail(path, "cannot create");
    fputs("path,label,start,end\n", fp);
    for (int v = 0; v < o->videos + o->corrupt; v++) {
        dataset_item it;
        char cname[128];
        if (v < o->videos)
            video_item(o, v, &it);
        else
            corrupt_item(o, v - o->videos, &it);
        class_name(it.cls, o->classes, cname, sizeof cname);
        reel_synth_params p = video_params(o, v, it.rel);
        double start = reel_synth_frame_time(&p, 0);
        double end = reel_synth_frame_time(&p, p.num_frames);
        fprintf(fp, "%s,%s,%.6f,%.6f\n", it.rel, cname, start, end);
    }
    int bad = ferror(fp);
    if (fclose(fp) != 0 || bad) return io_fail(path, "cannot write");

    char what[256];
    describe(&o->p, what, sizeof what);
    printf("reel synth: wrote %d videos (%s) in %d classes", o->videos, what, o->classes);
    if (o->corrupt) printf(" + %d damaged files", o->corrupt);
    printf(" to %s (manifest.csv) in %.2f s, %d process%s\n", o->dataset, now_s() - t0, jobs < 1 ? 1 : jobs,
           jobs > 1 ? "es" : "");
    return 0;
}

int reel_cli_synth(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--")) break;
    }
    synth_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;

    /* Keep the encoders' banners off the terminal: FFmpeg's log at errors
     * only, and SVT-AV1's own log likewise unless the user chose a level. */
    reel_set_ffmpeg_log_level(1);
    setenv("SVT_LOG", "1", 0);

    return o.dataset ? run_dataset(&o) : run_single(&o);
}
