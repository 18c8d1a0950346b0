/* real_common.h: what the real-video tests share (test_real_videos.c,
 * test_real_videos_pixels.c): the shared videos and their MANIFEST.tsv, reel's
 * side (open, frames), the ffmpeg CLI's side (frames through a select filter),
 * frame comparison that records every mismatch, and running a body once per
 * video. Header-only, static. */
#ifndef REEL_TEST_REAL_COMMON_H
#define REEL_TEST_REAL_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* popen, pclose, strtok_r */
#endif
#include "harness.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#if defined(__GNUC__)
#define HARNESS_UNUSED_FN __attribute__((unused))
#else
#define HARNESS_UNUSED_FN
/* Ticks of the stream time base in seconds. */
static HARNESS_UNUSED_FN double tb_seconds(const reel_video_info *info, double ticks)
{
    return ticks * (double)info->time_base_num / (double)info->time_base_den;
}

#endif

/* ================================================================ basics */

static HARNESS_UNUSED_FN void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    CHECK_MSG(p != NULL, "out of memory allocating %zu bytes", n);
    return p;
}

/* A growable string. */
typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf;

static HARNESS_UNUSED_FN void sb_printf(sbuf *b, const char *fmt, ...) HARNESS_PRINTF(2, 3);
static HARNESS_UNUSED_FN void sb_printf(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        size_t room = b->cap - b->len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        CHECK(n >= 0);
        if (b->s && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *s = realloc(b->s, cap);
        CHECK_MSG(s != NULL, "out of memory");
        b->s = s;
        b->cap = cap;
    }
}

static HARNESS_UNUSED_FN uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long n = ftell(f);
    CHECK(n >= 0);
    rewind(f);
    uint8_t *buf = xmalloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    CHECK_MSG(got == (size_t)n, "short read on %s", path);
    buf[n] = 0;
    *size = (size_t)n;
    return buf;
}

/* splitmix64: deterministic indices for every run. */
static HARNESS_UNUSED_FN uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static HARNESS_UNUSED_FN uint64_t seed_for(const char *name, uint64_t salt)
{
    uint64_t h = 1469598103934665603ull ^ salt; /* FNV-1a */
    for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return h;
}

static HARNESS_UNUSED_FN int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Sorted, de-duplicated copy of idx[0..n) (already resolved, >= 0). */
static HARNESS_UNUSED_FN int64_t *sorted_unique(const int64_t *idx, size_t n, size_t *n_out)
{
    int64_t *u = xmalloc(n * sizeof *u);
    memcpy(u, idx, n * sizeof *u);
    qsort(u, n, sizeof *u, cmp_i64);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || u[k - 1] != u[i]) u[k++] = u[i];
    *n_out = k;
    return u;
}

static HARNESS_UNUSED_FN size_t find_pos(const int64_t *u, size_t n, int64_t v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (u[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    CHECK_MSG(lo < n && u[lo] == v, "internal: index %lld not in the set", (long long)v);
    return lo;
}

/* ================================================================ locations */

static HARNESS_UNUSED_FN const char *videos_dir(void)
{
    static char dir[4096];
    static char why[4400];
    const char *d = harness_env("REEL_SHARED_VIDEOS", NULL);
    if (d) {
        snprintf(dir, sizeof dir, "%s", d);
    } else {
        /* Unset (a hand build): <repo>/../shared/videos, found from this file. */
        const char *slash = strrchr(__FILE__, '/');
        if (slash && __FILE__[0] == '/')
            snprintf(dir, sizeof dir, "%.*s/../../../shared/videos", (int)(slash - __FILE__), __FILE__);
        else
            snprintf(dir, sizeof dir, "../shared/videos");
    }
    char manifest[4200];
    snprintf(manifest, sizeof manifest, "%s/MANIFEST.tsv", dir);
    if (access(manifest, R_OK) != 0) {
        snprintf(why, sizeof why,
                 "shared videos not found (no %s); set REEL_SHARED_VIDEOS to the "
                 "shared/videos directory",
                 manifest);
        harness_skip_needed(why);
    }
    return dir;
}

static HARNESS_UNUSED_FN void vpath(char *buf, size_t size, const char *file)
{
    int n = snprintf(buf, size, "%s/%s", videos_dir(), file);
    CHECK_MSG(n > 0 && (size_t)n < size, "path too long for %s", file);
}

static HARNESS_UNUSED_FN void need_ffmpeg(void)
{
    if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg/ffprobe CLI on PATH");
}

/* ================================================================ manifest */

typedef struct mf_row {
    char file[160];
    char codec[32];
    int width, height;
    int64_t nb_frames;
    int rotation; /* normalised to 0..359 */
} mf_row;

static HARNESS_UNUSED_FN mf_row g_rows[128];

static HARNESS_UNUSED_FN int norm_rotation(int r)
{
    return ((r % 360) + 360) % 360;
}
static HARNESS_UNUSED_FN int g_nrows = -1;

/* Splits one TSV line in place; returns the number of fields. */
static HARNESS_UNUSED_FN int split_tabs(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        fields[n++] = p;
        char *t = strchr(p, '\t');
        if (!t) break;
        *t = '\0';
        p = t + 1;
    }
    return n;
}

static HARNESS_UNUSED_FN void load_manifest(void)
{
    if (g_nrows >= 0) return;
    char path[4200];
    vpath(path, sizeof path, "MANIFEST.tsv");
    size_t size;
    char *text = (char *)read_file(path, &size);
    char *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    CHECK_MSG(line != NULL, "%s is empty", path);
    char *f[64];
    int nf = split_tabs(line, f, 64);
    int c_file = -1, c_codec = -1, c_w = -1, c_h = -1, c_nb = -1, c_rot = -1;
    for (int i = 0; i < nf; i++) {
        char *s = f[i];
        s[strcspn(s, "\r")] = 0;
        if (!strcmp(s, "file"))
            c_file = i;
        else if (!strcmp(s, "codec"))
            c_codec = i;
        else if (!strcmp(s, "width"))
            c_w = i;
        else if (!strcmp(s, "height"))
            c_h = i;
        else if (!strcmp(s, "nb_frames"))
            c_nb = i;
        else if (!strcmp(s, "rotation"))
            c_rot = i;
    }
    CHECK_MSG(c_file >= 0 && c_codec >= 0 && c_w >= 0 && c_h >= 0 && c_nb >= 0 && c_rot >= 0,
              "%s: missing one of the columns file/codec/width/height/nb_frames/rotation", path);
    int n = 0;
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        line[strcspn(line, "\r")] = 0;
        if (!*line) continue;
        nf = split_tabs(line, f, 64);
        CHECK_MSG(nf > c_rot && nf > c_nb && nf > c_codec, "%s: short row '%s'", path, f[0]);
        CHECK_MSG(n < (int)(sizeof g_rows / sizeof g_rows[0]), "%s: too many rows", path);
        mf_row *r = &g_rows[n++];
        snprintf(r->file, sizeof r->file, "%s", f[c_file]);
        snprintf(r->codec, sizeof r->codec, "%s", f[c_codec]);
        r->width = atoi(f[c_w]);
        r->height = atoi(f[c_h]);
        r->nb_frames = atoll(f[c_nb]);
        r->rotation = norm_rotation(atoi(f[c_rot]));
        CHECK_MSG(r->width > 0 && r->height > 0 && r->nb_frames > 0, "%s: bad width/height/nb_frames for %s", path,
                  r->file);
    }
    free(text);
    CHECK_MSG(n > 0, "%s lists no videos", path);
    g_nrows = n;
}

static HARNESS_UNUSED_FN const mf_row *manifest_row(const char *file)
{
    load_manifest();
    for (int i = 0; i < g_nrows; i++)
        if (!strcmp(g_rows[i].file, file)) return &g_rows[i];
    FAIL("%s is not listed in MANIFEST.tsv", file);
}

/* ================================================================ reel side */

static HARNESS_UNUSED_FN reel_decoder *open_video(const char *file, int stream, int threads)
{
    char path[4200];
    vpath(path, sizeof path, file);
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.stream_index = stream;
    s.threads = threads;
    reel_decoder *dec = NULL;
    reel_error err;
    reel_error_clear(&err);
    int r = reel_decoder_open(&dec, path, &s, &err);
    CHECK_MSG(r == REEL_OK && dec != NULL, "open %s (stream %d, threads %d): %d %s", file, stream, threads, r,
              err.message);
    return dec;
}

/* reel_decoder_get_frames into a fresh buffer; also reports the geometry. */
static HARNESS_UNUSED_FN uint8_t *reel_frames(reel_decoder *dec, const int64_t *idx, size_t n, const reel_transform *t,
                                              int *w, int *h, size_t *fb)
{
    reel_error err;
    reel_error_clear(&err);
    int r = reel_decoder_get_output_size(dec, t, w, h, fb, &err);
    CHECK_MSG(r == REEL_OK, "%s: reel_decoder_get_output_size: %s", reel_decoder_get_name(dec), err.message);
    uint8_t *buf = xmalloc(n * *fb);
    r = reel_decoder_get_frames(dec, idx, n, t, buf, n * *fb, NULL, &err);
    CHECK_MSG(r == REEL_OK, "%s: reel_decoder_get_frames (%zu frames): %d %s", reel_decoder_get_name(dec), n, r,
              err.message);
    return buf;
}

/* Frame comparison over a batch: every mismatch is recorded, and
 * cmp_finish() fails naming all mismatching frames and describing the first
 * (first differing byte, count, largest difference). */
typedef struct cmp_state {
    size_t checked, nbad;
    char first[1024];
    sbuf bad;
} cmp_state;

static HARNESS_UNUSED_FN void check_frame(cmp_state *cs, const char *what, const char *file, int64_t index, size_t pos,
                                          const uint8_t *got, const uint8_t *want, int w, int h)
{
    size_t n = (size_t)w * (size_t)h * 3;
    cs->checked++;
    if (memcmp(got, want, n) == 0) return;
    size_t first = 0, ndiff = 0;
    int maxd = 0;
    for (size_t i = n; i-- > 0;) {
        if (got[i] != want[i]) {
            first = i;
            ndiff++;
            int d = abs((int)got[i] - (int)want[i]);
            if (d > maxd) maxd = d;
        }
    }
    size_t px = first / 3;
    if (cs->nbad++ == 0)
        snprintf(cs->first, sizeof cs->first,
                 "%s: %s frame %lld (request position %zu, %dx%d): %zu of %zu bytes differ, "
                 "first at byte %zu (y=%zu x=%zu c=%zu): reel %u, ffmpeg/ref %u; max |diff| %d",
                 file, what, (long long)index, pos, w, h, ndiff, n, first, px / (size_t)w, px % (size_t)w, first % 3,
                 got[first], want[first], maxd);
    sb_printf(&cs->bad, "%s%lld", cs->nbad > 1 ? "," : "", (long long)index);
}

static HARNESS_UNUSED_FN void cmp_finish(cmp_state *cs)
{
    if (cs->nbad)
        FAIL("%zu of %zu frames differ (frames %.300s). First: %s", cs->nbad, cs->checked, cs->bad.s, cs->first);
    free(cs->bad.s);
    memset(cs, 0, sizeof *cs);
}

/* ================================================================ ffmpeg side */

typedef struct ff_job {
    const char *file;   /* inside the videos dir */
    int stream;         /* absolute stream index for -map 0:S */
    int autorotate;     /* 0: -noautorotate */
    int threads;        /* ffmpeg decoder threads */
    const int64_t *idx; /* sorted unique frame indices; NULL: use `select` */
    size_t n_idx;
    const char *select;  /* a select expression when idx is NULL (NULL: all) */
    size_t n_frames;     /* frames expected on stdout */
    const char *filters; /* after select, NULL for none */
    int out_w, out_h;    /* rgb24 output size */
} ff_job;

static HARNESS_UNUSED_FN void shell_quote(sbuf *b, const char *s)
{
    sb_printf(b, "'");
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            sb_printf(b, "'\\''");
        else
            sb_printf(b, "%c", *p);
    }
    sb_printf(b, "'");
}

/* Runs ffmpeg and returns n_frames rgb24 frames of out_w x out_h. */
static HARNESS_UNUSED_FN uint8_t *ffmpeg_frames(const ff_job *j)
{
    char path[4200], errpath[4200];
    vpath(path, sizeof path, j->file);
    snprintf(errpath, sizeof errpath, "%s/ffmpeg_stderr.txt", harness_tmpdir());

    sbuf vf = { 0 };
    if (j->idx) {
        sb_printf(&vf, "select='");
        for (size_t i = 0; i < j->n_idx; i++) sb_printf(&vf, "%seq(n\\,%lld)", i ? "+" : "", (long long)j->idx[i]);
        sb_printf(&vf, "'");
    } else if (j->select) {
        sb_printf(&vf, "select='%s'", j->select);
    }
    if (j->filters) sb_printf(&vf, "%s%s", vf.len ? "," : "", j->filters);

    sbuf cmd = { 0 };
    sb_printf(&cmd, "ffmpeg -nostdin -hide_banner -v error %s-threads %d -i ", j->autorotate ? "" : "-noautorotate ",
              j->threads > 0 ? j->threads : 2);
    shell_quote(&cmd, path);
    sb_printf(&cmd, " -map 0:%d -fps_mode passthrough", j->stream);
    if (vf.len) sb_printf(&cmd, " -vf \"%s\"", vf.s);
    if (j->idx || j->select) sb_printf(&cmd, " -frames:v %zu", j->n_frames);
    sb_printf(&cmd, " -pix_fmt rgb24 -f rawvideo - 2>");
    shell_quote(&cmd, errpath);
    free(vf.s);

    size_t fb = (size_t)j->out_w * (size_t)j->out_h * 3;
    size_t want = fb * j->n_frames;
    uint8_t *buf = xmalloc(want);
    FILE *p = popen(cmd.s, "r");
    CHECK_MSG(p != NULL, "popen failed: %s", cmd.s);
    size_t total = 0;
    uint8_t sink[65536];
    for (;;) {
        size_t got;
        if (total < want)
            got = fread(buf + total, 1, want - total, p);
        else
            got = fread(sink, 1, sizeof sink, p);
        if (got == 0) break;
        total += got;
    }
    int st = pclose(p);
    if (st != 0 || total != want) {
        char msg[1200] = "";
        FILE *e = fopen(errpath, "r");
        if (e) {
            size_t k = fread(msg, 1, sizeof msg - 1, e);
            msg[k] = 0;
            fclose(e);
        }
        FAIL("ffmpeg gave %zu bytes (want %zu = %zu frames of %dx%d), status %d\n"
             "  command: %.1500s\n  stderr: %s",
             total, want, j->n_frames, j->out_w, j->out_h, st, cmd.s, msg);
    }
    free(cmd.s);
    return buf;
}

/* ================================================================ 1. manifest */

static HARNESS_UNUSED_FN const char *g_cur_file;
static HARNESS_UNUSED_FN int g_cur_threads = 2;

/* Runs body once per name; fails at the end listing every failing name. */
static HARNESS_UNUSED_FN void for_each_video(const char *const *names, size_t n, void (*body)(void), const char *what)
{
    sbuf fails = { 0 };
    size_t nfail = 0, nskip = 0;
    char skipmsg[512] = "";
    char **skips = calloc(n ? n : 1, sizeof *skips);
    CHECK(skips != NULL);
    int verbose = harness_env("REEL_TEST_VERBOSE", NULL) != NULL;
    for (size_t i = 0; i < n; i++) {
        char msg[4096];
        g_cur_file = names[i];
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int r = harness_run_nested(body, msg, sizeof msg);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (verbose)
            fprintf(stderr, "  [%s] %-34s %s %.3f s\n", what, names[i],
                    r == HARNESS_PASS   ? "pass"
                    : r == HARNESS_SKIP ? "skip"
                                        : "FAIL",
                    (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
        if (r == HARNESS_FAIL) {
            fprintf(stderr, "  [%s] %s FAILED: %s\n", what, names[i], msg);
            sb_printf(&fails, "\n    %s: %.700s", names[i], msg);
            nfail++;
        } else if (r == HARNESS_SKIP) {
            snprintf(skipmsg, sizeof skipmsg, "%.500s", msg);
            nskip++;
            skips[i] = strdup(msg);
        }
    }
    /* Every video skipped (e.g. no shared videos): the test is one skip.
     * Otherwise each skipped video is counted (and checked in strict mode). */
    for (size_t i = 0; i < n; i++) {
        if (skips[i] && nskip < n && !harness_nested_skip(names[i], skips[i])) {
            sb_printf(&fails, "\n    %s: skipped, and strict mode does not allow it: %.600s", names[i], skips[i]);
            nfail++;
        }
        free(skips[i]);
    }
    free(skips);
    if (nskip == n && n > 0) harness_skip(skipmsg);
    if (nfail) FAIL("%s: %zu of %zu videos failed:%s", what, nfail, n, fails.s);
    free(fails.s);
}

static HARNESS_UNUSED_FN const char **manifest_names(size_t *n)
{
    load_manifest();
    static const char *names[128];
    for (int i = 0; i < g_nrows; i++) names[i] = g_rows[i].file;
    *n = (size_t)g_nrows;
    return names;
}

/* Ticks of the stream time base in seconds. */
static HARNESS_UNUSED_FN double tb_seconds(const reel_video_info *info, double ticks)
{
    return ticks * (double)info->time_base_num / (double)info->time_base_den;
}

#endif
