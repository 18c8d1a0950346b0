/* test_real_videos.c: reel against real-world videos and FFmpeg itself.
 *
 * Every video in $REEL_SHARED_VIDEOS/MANIFEST.tsv is opened and checked
 * against the manifest (frame count, codec, size, rotation), and frames
 * fetched by reel are compared byte for byte with what the ffmpeg CLI makes
 * of the same file:
 *
 *   ffmpeg -noautorotate -i FILE -map 0:S -fps_mode passthrough
 *          -vf "select='eq(n\,K1)+eq(n\,K2)+...'[,FILTERS]"
 *          -pix_fmt rgb24 -f rawvideo -
 *
 * (select keeps only the frames a test needs, in index order, so nothing
 * big is ever held in memory). Further tests cover timestamps, the frame
 * tables ffprobe published with torchcodec's test videos, torchcodec's own
 * reference frames (REFS.md), fused and after-RGB crop+resize against
 * ffmpeg's crop/scale filters, and rotation against ffmpeg's autorotate.
 *
 * Tests that iterate over several videos run each one as a nested body and
 * report every failing video at the end, so one bad file does not hide
 * another. Nothing is printed on success; on failure the details go to
 * stderr and the summary into the test's failure message.
 *
 * REEL_TEST_VERBOSE=1 prints one line per video with its time (stderr).
 *
 * Needs the shared videos (skips when $REEL_SHARED_VIDEOS has no
 * MANIFEST.tsv) and, for most tests, the ffmpeg CLI (skips without it). */
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

/* ================================================================ basics */

static void *xmalloc(size_t n)
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

static void sb_printf(sbuf *b, const char *fmt, ...) HARNESS_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...)
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

static uint8_t *read_file(const char *path, size_t *size)
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
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t seed_for(const char *name, uint64_t salt)
{
    uint64_t h = 1469598103934665603ull ^ salt; /* FNV-1a */
    for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return h;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Sorted, de-duplicated copy of idx[0..n) (already resolved, >= 0). */
static int64_t *sorted_unique(const int64_t *idx, size_t n, size_t *n_out)
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

static size_t find_pos(const int64_t *u, size_t n, int64_t v)
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

static const char *videos_dir(void)
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

static void vpath(char *buf, size_t size, const char *file)
{
    int n = snprintf(buf, size, "%s/%s", videos_dir(), file);
    CHECK_MSG(n > 0 && (size_t)n < size, "path too long for %s", file);
}

static void need_ffmpeg(void)
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

static mf_row g_rows[128];

static int norm_rotation(int r)
{
    return ((r % 360) + 360) % 360;
}
static int g_nrows = -1;

/* Splits one TSV line in place; returns the number of fields. */
static int split_tabs(char *line, char **fields, int max)
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

static void load_manifest(void)
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

static const mf_row *manifest_row(const char *file)
{
    load_manifest();
    for (int i = 0; i < g_nrows; i++)
        if (!strcmp(g_rows[i].file, file)) return &g_rows[i];
    FAIL("%s is not listed in MANIFEST.tsv", file);
}

/* ================================================================ reel side */

static reel_decoder *open_video(const char *file, int stream, int threads)
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
static uint8_t *reel_frames(reel_decoder *dec, const int64_t *idx, size_t n, const reel_transform *t, int *w, int *h,
                            size_t *fb)
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

static void check_frame(cmp_state *cs, const char *what, const char *file, int64_t index, size_t pos,
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

static void cmp_finish(cmp_state *cs)
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

static void shell_quote(sbuf *b, const char *s)
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
static uint8_t *ffmpeg_frames(const ff_job *j)
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

static const char *g_cur_file;
static int g_cur_threads = 2;

/* Runs body once per name; fails at the end listing every failing name. */
static void for_each_video(const char *const *names, size_t n, void (*body)(void), const char *what)
{
    sbuf fails = { 0 };
    size_t nfail = 0, nskip = 0;
    char skipmsg[512] = "";
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
        }
    }
    if (nskip == n && n > 0) harness_skip(skipmsg);
    if (nfail) FAIL("%s: %zu of %zu videos failed:%s", what, nfail, n, fails.s);
    free(fails.s);
}

static const char **manifest_names(size_t *n)
{
    load_manifest();
    static const char *names[128];
    for (int i = 0; i < g_nrows; i++) names[i] = g_rows[i].file;
    *n = (size_t)g_nrows;
    return names;
}

static void body_metadata(void)
{
    const mf_row *m = manifest_row(g_cur_file);
    reel_decoder *dec = open_video(m->file, -1, 2);
    const reel_video_info *info = reel_decoder_get_info(dec);
    CHECK_MSG(info->num_frames == m->nb_frames, "num_frames %lld, manifest nb_frames %lld", (long long)info->num_frames,
              (long long)m->nb_frames);
    CHECK_MSG(!strcmp(info->codec, m->codec), "codec \"%s\", manifest \"%s\"", info->codec, m->codec);
    CHECK_MSG(info->width == m->width && info->height == m->height, "size %dx%d, manifest %dx%d", info->width,
              info->height, m->width, m->height);
    /* Same angle modulo 360: the manifest has ffprobe's value (e.g. -90);
     * decoder.h documents 0/90/180/270. Either spelling passes here. */
    CHECK_MSG(norm_rotation(info->rotation) == m->rotation, "rotation %d, manifest %d (as 0..359)", info->rotation,
              m->rotation);
    int64_t count = 0;
    const reel_frame_entry *tab = reel_decoder_get_frame_table(dec, &count);
    CHECK_MSG(tab != NULL && count == info->num_frames, "frame table has %lld rows, want %lld", (long long)count,
              (long long)info->num_frames);
    reel_decoder_close(&dec);
}

TEST(manifest_metadata_matches)
{
    size_t n;
    const char **names = manifest_names(&n);
    reel_set_ffmpeg_log_level(0);
    for_each_video(names, n, body_metadata, "metadata");
}

/* av1-1-b8-03-sizeup.ivf is 352x288 for frames 0-9 and 1280x720 for 10-19.
 * Asked for no resize, reel rescales frames of another size to the stream's
 * size in one bicubic YUV->RGB24 pass, which is what the plain ffmpeg CLI
 * does (ffmpeg 5.1 rebuilds its filter graph at the size change and appends
 * a bicubic scale to the output size). So all 20 frames are compared with
 * the plain command, no filter. */

/* Random access by index: first, last, ~8 random, repeated and unsorted. */
static void body_frames_by_index(void)
{
    const mf_row *m = manifest_row(g_cur_file);
    int sizeup = !strcmp(m->file, "av1-1-b8-03-sizeup.ivf");
    need_ffmpeg();
    reel_decoder *dec = open_video(m->file, -1, g_cur_threads);
    const reel_video_info *info = reel_decoder_get_info(dec);
    int64_t n = info->num_frames;
    CHECK_MSG(n == m->nb_frames, "num_frames %lld, manifest %lld", (long long)n, (long long)m->nb_frames);

    int64_t req[64];
    size_t nreq = 0;
    if (sizeup) {
        /* every frame (the size changes at 10), shuffled, with repeats */
        static const int64_t order[] = { 19, 0, 10, 9,  3,  11, -1, 5,  1,  2,  4, 6,
                                         7,  8, 12, 13, 14, 15, 16, 17, 18, 10, 9, -20 };
        CHECK_EQ_INT(n, 20);
        for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) req[nreq++] = order[i];
    } else {
        uint64_t s = seed_for(m->file, (uint64_t)g_cur_threads);
        int64_t r[8];
        for (int i = 0; i < 8; i++) r[i] = (int64_t)(rng_next(&s) % (uint64_t)n);
        int64_t pat[] = { r[3], 0,    r[1], r[3], -1,   r[2], r[1], r[0],
                          r[4], r[5], r[7], -1,   r[6], 0,    r[2], n >= 2 ? -2 : 0,
                          -n };
        for (size_t i = 0; i < sizeof pat / sizeof pat[0]; i++) req[nreq++] = pat[i];
    }
    int64_t resolved[64];
    for (size_t i = 0; i < nreq; i++) resolved[i] = req[i] < 0 ? req[i] + n : req[i];

    reel_transform t;
    reel_transform_default_settings(&t);
    int w, h;
    size_t fb;
    uint8_t *got = reel_frames(dec, req, nreq, &t, &w, &h, &fb);
    CHECK_MSG(w == info->width && h == info->height && fb == (size_t)w * h * 3,
              "output %dx%d (%zu bytes), stream %dx%d", w, h, fb, info->width, info->height);

    size_t nu;
    int64_t *u = sorted_unique(resolved, nreq, &nu);
    /* all frames wanted: no select (its frame counter restarts when ffmpeg
     * rebuilds the filter graph at a mid-stream size change) */
    ff_job j = { .file = m->file,
                 .stream = info->stream_index,
                 .threads = g_cur_threads,
                 .idx = (int64_t)nu == n ? NULL : u,
                 .n_idx = nu,
                 .n_frames = nu,
                 .filters = NULL,
                 .out_w = w,
                 .out_h = h };
    uint8_t *want = ffmpeg_frames(&j);
    char what[64];
    snprintf(what, sizeof what, "by-index (threads %d)", g_cur_threads);
    cmp_state cs = { 0 };
    for (size_t i = 0; i < nreq; i++)
        check_frame(&cs, what, m->file, resolved[i], i, got + i * fb, want + find_pos(u, nu, resolved[i]) * fb, w, h);
    cmp_finish(&cs);
    free(want);
    free(u);
    free(got);
    reel_decoder_close(&dec);
}

TEST(frames_by_index_match_ffmpeg)
{
    size_t n;
    const char **names = manifest_names(&n);
    need_ffmpeg();
    reel_set_ffmpeg_log_level(0);
    g_cur_threads = 2;
    for_each_video(names, n, body_frames_by_index, "frames by index, 2 threads");
}

TEST(frames_by_index_match_ffmpeg_one_thread)
{
    static const char *const names[] = { "interlaced_crop.mp4" }; /* open GOP, B-frames */
    (void)videos_dir();
    need_ffmpeg();
    reel_set_ffmpeg_log_level(0);
    g_cur_threads = 1;
    for_each_video(names, 1, body_frames_by_index, "frames by index, 1 thread");
    g_cur_threads = 2;
}

/* Every GOP entered cold: for each keyframe K after the first, a fresh
 * decoder asks for K, the middle of its GOP and the GOP's last frame, so the
 * decode starts with a seek to K. Each frame must equal ffmpeg's decode from
 * the start of the file. Catches keyframes that are not clean starting
 * points (cockatoo.mp4: decoding from its IDRs at 76 and 145 gives errors,
 * some unflagged under frame threading): reel must notice and decode
 * through them from an earlier keyframe. */
static void body_keyframe_starts(void)
{
    const mf_row *m = manifest_row(g_cur_file);
    need_ffmpeg();
    if (!strcmp(m->file, "av1-1-b8-03-sizeup.ivf"))
        harness_skip("its second keyframe changes the frame size (every frame is checked by index)");
    reel_decoder *dec = open_video(m->file, -1, g_cur_threads);
    const reel_video_info *info = reel_decoder_get_info(dec);
    int64_t nk = 0, n = info->num_frames;
    const int64_t *keys = reel_decoder_get_keyframes(dec, &nk);
    if (nk < 2) {
        reel_decoder_close(&dec);
        harness_skip("one keyframe: no GOP to enter cold");
    }
    int64_t *req = xmalloc((size_t)nk * 3 * sizeof *req);
    size_t nreq = 0;
    size_t first_of[1024];
    int64_t step = nk > 12 ? (nk + 11) / 12 : 1; /* at most 12 GOPs per video (ffmpeg select grows long) */
    size_t ngop = 0;
    for (int64_t k = 1; k < nk && ngop < 1024; k += step) {
        int64_t a = keys[k], b = (k + 1 < nk ? keys[k + 1] : n) - 1;
        first_of[ngop++] = nreq;
        req[nreq++] = a;
        if (b > a) req[nreq++] = a + (b - a) / 2;
        if (b > a + 1) req[nreq++] = b;
    }
    first_of[ngop] = nreq;
    const int stream = info->stream_index, width = info->width, height = info->height;
    reel_decoder_close(&dec); /* info and keys belong to it */

    size_t nu = 0;
    int64_t *u = sorted_unique(req, nreq, &nu);
    ff_job j = { .file = m->file,
                 .stream = stream,
                 .threads = 2,
                 .idx = u,
                 .n_idx = nu,
                 .n_frames = nu,
                 .out_w = width,
                 .out_h = height };
    uint8_t *want = ffmpeg_frames(&j);
    char what[64];
    snprintf(what, sizeof what, "cold GOP entry (threads %d)", g_cur_threads);
    cmp_state cs = { 0 };
    int64_t restarts = 0;
    for (size_t g = 0; g < ngop; g++) {
        reel_decoder *d = open_video(m->file, -1, g_cur_threads);
        size_t cnt = first_of[g + 1] - first_of[g];
        int w, h;
        size_t fb;
        reel_error err;
        reel_error_clear(&err);
        CHECK_OK(reel_decoder_get_output_size(d, NULL, &w, &h, &fb, &err));
        uint8_t *got = xmalloc(cnt * fb);
        reel_decode_stats st;
        int r = reel_decoder_get_frames(d, req + first_of[g], cnt, NULL, got, cnt * fb, &st, &err);
        CHECK_MSG(r == REEL_OK, "frames from keyframe %lld: %d %s", (long long)req[first_of[g]], r, err.message);
        restarts += st.key_restarts;
        for (size_t i = 0; i < cnt; i++) {
            int64_t f = req[first_of[g] + i];
            check_frame(&cs, what, m->file, f, i, got + i * fb, want + find_pos(u, nu, f) * fb, w, h);
        }
        free(got);
        reel_decoder_close(&d);
    }
    cmp_finish(&cs);
    if (!strcmp(m->file, "cockatoo.mp4"))
        CHECK_MSG(restarts > 0, "cockatoo.mp4's IDRs at 76 and 145 are not clean starting points, yet no restart");
    free(want);
    free(u);
    free(req);
}

TEST(cold_gop_entry_matches_ffmpeg_from_the_start)
{
    size_t n;
    const char **names = manifest_names(&n);
    need_ffmpeg();
    reel_set_ffmpeg_log_level(0);
    for (int threads = 1; threads <= 2; threads++) {
        g_cur_threads = threads;
        for_each_video(names, n, body_keyframe_starts,
                       threads == 1 ? "cold GOP entry, 1 thread" : "cold GOP entry, 2 threads");
    }
    g_cur_threads = 2;
}

/* get_range(0, n, 3) against ffmpeg's every third frame. */
static void body_range(void)
{
    const mf_row *m = manifest_row(g_cur_file);
    reel_decoder *dec = open_video(m->file, -1, 2);
    const reel_video_info *info = reel_decoder_get_info(dec);
    int64_t n = info->num_frames;
    int w, h;
    size_t fb;
    reel_error err;
    reel_error_clear(&err);
    CHECK_OK(reel_decoder_get_output_size(dec, NULL, &w, &h, &fb, &err));
    size_t expect = (size_t)((n + 2) / 3);
    uint8_t *got = xmalloc(expect * fb);
    size_t nout = 0;
    int r = reel_decoder_get_range(dec, 0, n, 3, NULL, got, expect * fb, &nout, NULL, &err);
    CHECK_MSG(r == REEL_OK, "get_range(0, %lld, 3): %d %s", (long long)n, r, err.message);
    CHECK_EQ_INT(nout, expect);
    ff_job j = { .file = m->file,
                 .stream = info->stream_index,
                 .threads = 2,
                 .select = "not(mod(n\\,3))",
                 .n_frames = expect,
                 .out_w = w,
                 .out_h = h };
    uint8_t *want = ffmpeg_frames(&j);
    cmp_state cs = { 0 };
    for (size_t i = 0; i < expect; i++)
        check_frame(&cs, "get_range(0,n,3)", m->file, (int64_t)(3 * i), i, got + i * fb, want + i * fb, w, h);
    cmp_finish(&cs);
    free(want);
    free(got);
    reel_decoder_close(&dec);
}

TEST(range_step3_matches_ffmpeg)
{
    static const char *const names[] = { "carphone_pristine.mp4", "foreman_hevc.mp4", "xmp480qt.mov",
                                         "interlaced_crop.mp4" };
    (void)videos_dir();
    need_ffmpeg();
    reel_set_ffmpeg_log_level(0);
    for_each_video(names, sizeof names / sizeof names[0], body_range, "get_range");
}

/* ================================================================ 2. timestamps */

static double tb_seconds(const reel_video_info *info, double ticks)
{
    return ticks * (double)info->time_base_num / (double)info->time_base_den;
}

static void body_times(void)
{
    const mf_row *m = manifest_row(g_cur_file);
    reel_decoder *dec = open_video(m->file, -1, 2);
    const reel_video_info *info = reel_decoder_get_info(dec);
    int64_t n = 0;
    const reel_frame_entry *tab = reel_decoder_get_frame_table(dec, &n);
    CHECK(tab != NULL && n == info->num_frames && n > 0);

    /* first, last and 6 random frames with a positive duration */
    uint64_t s = seed_for(m->file, 77);
    int64_t pick[8];
    size_t np = 0;
    for (int tries = 0; np < 8 && tries < 1000; tries++) {
        int64_t i = tries == 0 ? 0 : tries == 1 ? n - 1 : (int64_t)(rng_next(&s) % (uint64_t)n);
        /* a positive duration whose middle lies before the next frame */
        if (tab[i].duration > 0 && (i + 1 == n || 2 * tab[i].pts + tab[i].duration < 2 * tab[i + 1].pts))
            pick[np++] = i;
    }
    double times[16];
    int64_t want_idx[16], got_idx[16];
    size_t nt = 0;
    for (size_t k = 0; k < np; k++) {
        int64_t i = pick[k];
        CHECK_MSG(tab[i].duration > 0, "frame %lld has duration %lld", (long long)i, (long long)tab[i].duration);
        times[nt] = tb_seconds(info, (double)tab[i].pts + 0.5 * (double)tab[i].duration);
        want_idx[nt++] = i;
        times[nt] = tb_seconds(info, (double)tab[i].pts);
        want_idx[nt++] = i;
    }
    int w, h;
    size_t fb;
    reel_error err;
    reel_error_clear(&err);
    CHECK_OK(reel_decoder_get_output_size(dec, NULL, &w, &h, &fb, &err));
    uint8_t *got = xmalloc(nt * fb);
    for (size_t k = 0; k < nt; k++) got_idx[k] = -12345;
    int r = reel_decoder_get_frames_at_times(dec, times, nt, NULL, got, nt * fb, got_idx, NULL, &err);
    CHECK_MSG(r == REEL_OK, "get_frames_at_times: %d %s", r, err.message);
    for (size_t k = 0; k < nt; k++)
        CHECK_MSG(got_idx[k] == want_idx[k],
                  "t=%.9f s (%s of frame %lld: pts %lld dur %lld, tb %d/%d) resolved to frame %lld", times[k],
                  k % 2 ? "start" : "middle", (long long)want_idx[k], (long long)tab[want_idx[k]].pts,
                  (long long)tab[want_idx[k]].duration, info->time_base_num, info->time_base_den,
                  (long long)got_idx[k]);
    uint8_t *byidx = reel_frames(dec, want_idx, nt, NULL, &w, &h, &fb);
    cmp_state cs = { 0 };
    for (size_t k = 0; k < nt; k++)
        check_frame(&cs, "at-time vs by-index", m->file, want_idx[k], k, got + k * fb, byidx + k * fb, w, h);
    cmp_finish(&cs);
    free(byidx);

    /* out of range: before frame 0, exactly at the end, after the end */
    double before = tb_seconds(info, (double)tab[0].pts) - 0.25;
    double end = tb_seconds(info, (double)(tab[n - 1].pts + tab[n - 1].duration));
    double bad[3] = { before, end, end + 1.0 };
    for (int k = 0; k < 3; k++) {
        int64_t idx = -1;
        reel_error_clear(&err);
        r = reel_decoder_get_frames_at_times(dec, &bad[k], 1, NULL, got, fb, &idx, NULL, &err);
        CHECK_MSG(r == REEL_E_OUT_OF_RANGE,
                  "get_frames_at_times(%.9f s) (%s) returned %d (%s), want REEL_E_OUT_OF_RANGE", bad[k],
                  k == 0 ? "before the first frame" : "at/after the end", r, reel_strerror(r));
        r = reel_decoder_index_at_time(dec, bad[k], &idx, &err);
        CHECK_MSG(r == REEL_E_OUT_OF_RANGE, "index_at_time(%.9f s) returned %d, index %lld", bad[k], r, (long long)idx);
    }
    free(got);
    reel_decoder_close(&dec);
}

TEST(times_resolve_to_containing_frame)
{
    static const char *const names[] = {
        "nasa_13013.mp4", "test_non_zero_start.mp4",   "fire2.mp4",    "no_duration.webm",   "big_buck_bunny_0_30.webm",
        "karma.mp4",      "vp8_video_with_alpha.webm", "MVI_4823.AVI", "interlaced_crop.mp4"
    };
    (void)videos_dir();
    reel_set_ffmpeg_log_level(0);
    for_each_video(names, sizeof names / sizeof names[0], body_times, "timestamps");
}

/* index_at_time for the start and middle of every frame of every video whose
 * frames do not overlap (pure table work, no decoding). */
static void body_every_time(void)
{
    const mf_row *m = manifest_row(g_cur_file);
    reel_decoder *dec = open_video(m->file, -1, 2);
    const reel_video_info *info = reel_decoder_get_info(dec);
    int64_t n = 0;
    const reel_frame_entry *tab = reel_decoder_get_frame_table(dec, &n);
    CHECK(tab != NULL && n > 0);
    reel_error err;
    for (int64_t i = 0; i < n; i++) {
        if (i + 1 < n)
            CHECK_MSG(tab[i].pts < tab[i + 1].pts, "frame table not strictly increasing at %lld: pts %lld then %lld",
                      (long long)i, (long long)tab[i].pts, (long long)tab[i + 1].pts);
        CHECK_MSG(tab[i].duration > 0, "frame %lld has duration %lld", (long long)i, (long long)tab[i].duration);
        /* Container durations may overlap the next frame (Matroska rounds
         * them); the middle is only unambiguous before the next pts. */
        double mid = (double)tab[i].pts + 0.5 * (double)tab[i].duration;
        int mid_ok = i + 1 == n || mid < (double)tab[i + 1].pts;
        double ts[2] = { tb_seconds(info, (double)tab[i].pts), tb_seconds(info, mid) };
        for (int k = 0; k < 1 + mid_ok; k++) {
            int64_t idx = -1;
            reel_error_clear(&err);
            int r = reel_decoder_index_at_time(dec, ts[k], &idx, &err);
            CHECK_MSG(r == REEL_OK && idx == i,
                      "index_at_time(%.9f s = %s of frame %lld, pts %lld dur %lld tb %d/%d) "
                      "gave status %d index %lld %s",
                      ts[k], k ? "middle" : "start", (long long)i, (long long)tab[i].pts, (long long)tab[i].duration,
                      info->time_base_num, info->time_base_den, r, (long long)idx, err.message);
        }
    }
    reel_decoder_close(&dec);
}

TEST(index_at_time_every_frame)
{
    size_t n;
    const char **names = manifest_names(&n);
    reel_set_ffmpeg_log_level(0);
    for_each_video(names, n, body_every_time, "index_at_time, every frame");
}

/* ================================================================ 3. torchcodec refs */

static uint32_t rd16(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8);
}
static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* The bytes of the member "<name>/data/0" of a torch.save zip archive
 * (stored, not compressed). Returns a pointer into `zip`. */
static const uint8_t *pt_tensor_data(const char *path, const uint8_t *zip, size_t size, size_t *len)
{
    CHECK_MSG(size >= 22, "%s: too small for a zip archive", path);
    size_t eocd = (size_t)-1;
    size_t lowest = size > 22 + 65535 ? size - 22 - 65535 : 0;
    for (size_t i = size - 22 + 1; i-- > lowest;)
        if (rd32(zip + i) == 0x06054b50u) {
            eocd = i;
            break;
        }
    CHECK_MSG(eocd != (size_t)-1, "%s: no zip end-of-central-directory record", path);
    uint32_t entries = rd16(zip + eocd + 10);
    uint32_t cd_size = rd32(zip + eocd + 12), cd_off = rd32(zip + eocd + 16);
    CHECK_MSG(cd_off != 0xFFFFFFFFu && entries != 0xFFFF, "%s: zip64 archives not supported", path);
    CHECK_MSG((size_t)cd_off + cd_size <= size, "%s: central directory out of bounds", path);
    size_t p = cd_off;
    for (uint32_t e = 0; e < entries; e++) {
        CHECK_MSG(p + 46 <= size && rd32(zip + p) == 0x02014b50u, "%s: bad central directory entry %u", path, e);
        uint32_t method = rd16(zip + p + 10);
        uint32_t csize = rd32(zip + p + 20), usize = rd32(zip + p + 24);
        uint32_t nlen = rd16(zip + p + 28), xlen = rd16(zip + p + 30), clen = rd16(zip + p + 32);
        uint32_t loff = rd32(zip + p + 42);
        CHECK_MSG(p + 46 + nlen <= size, "%s: truncated central directory", path);
        const char *name = (const char *)zip + p + 46;
        static const char suffix[] = "/data/0";
        size_t sl = sizeof suffix - 1;
        if (nlen >= sl && memcmp(name + nlen - sl, suffix, sl) == 0) {
            CHECK_MSG(method == 0,
                      "%s: member %.*s uses zip compression method %u; only stored (0) "
                      "members are supported",
                      path, (int)nlen, name, method);
            CHECK_MSG(csize == usize, "%s: stored member with csize %u != usize %u", path, csize, usize);
            CHECK_MSG((size_t)loff + 30 <= size && rd32(zip + loff) == 0x04034b50u, "%s: bad local header for %.*s",
                      path, (int)nlen, name);
            CHECK_MSG(rd16(zip + loff + 8) == 0, "%s: local header says method %u", path, rd16(zip + loff + 8));
            size_t data = (size_t)loff + 30 + rd16(zip + loff + 26) + rd16(zip + loff + 28);
            CHECK_MSG(data + usize <= size, "%s: member data out of bounds", path);
            *len = usize;
            return zip + data;
        }
        p += 46 + (size_t)nlen + xlen + clen;
    }
    FAIL("%s: no member ending in /data/0", path);
}

enum { REF_PLAIN, REF_CROP, REF_SCALE };

typedef struct ref_item {
    char name[256];
    const char *video;
    int stream; /* -1: default */
    int kind;   /* REF_* */
    int64_t index;
} ref_item;

/* Maps a reference file name to its request per REFS.md; 0 if not a pixel ref. */
static int classify_ref(const char *video, const char *name, ref_item *it)
{
    size_t vl = strlen(video), nl = strlen(name);
    if (strncmp(name, video, vl) != 0 || name[vl] != '.') return -1;
    if (nl < 3 || strcmp(name + nl - 3, ".pt") != 0) return 0;
    if (strstr(name, ".rgb48.") || strstr(name, "all_frames")) return 0;
    const char *rest = name + vl + 1;
    memset(it, 0, sizeof *it);
    snprintf(it->name, sizeof it->name, "%s", name);
    it->video = video;
    int s;
    long long idx;
    char tail[16];
    if (sscanf(rest, "stream%d.frame%6lld%15s", &s, &idx, tail) == 3 && !strcmp(tail, ".pt")) {
        it->stream = s;
        it->kind = REF_PLAIN;
        it->index = idx;
        return 1;
    }
    if (sscanf(rest, "crop_300_200_50_35_exact_1.stream%d.frame%6lld%15s", &s, &idx, tail) == 3 &&
        !strcmp(tail, ".pt")) {
        it->stream = s;
        it->kind = REF_CROP;
        it->index = idx;
        return 1;
    }
    if (sscanf(rest, "scale_240_135_flags_bilinear.stream%d.frame%6lld%15s", &s, &idx, tail) == 3 &&
        !strcmp(tail, ".pt")) {
        it->stream = s;
        it->kind = REF_SCALE;
        it->index = idx;
        return 1;
    }
    if (!strncmp(rest, "time", 4)) {
        static const struct {
            const char *t;
            int64_t idx;
        } times[] = { { "6.000000", 180 }, { "6.100000", 183 }, { "10.000000", 300 }, { "12.979633", 389 } };
        for (size_t k = 0; k < sizeof times / sizeof times[0]; k++) {
            char want[64];
            snprintf(want, sizeof want, "time%s.pt", times[k].t);
            if (!strcmp(rest, want)) {
                it->stream = -1;
                it->kind = REF_PLAIN;
                it->index = times[k].idx;
                return 1;
            }
        }
    }
    FAIL("reference %s: name not covered by REFS.md's mapping", name);
}

TEST(torchcodec_reference_frames_bit_exact)
{
    static const char *const videos[] = { "nasa_13013.mp4", "nasa_13013_hdr.mp4" };
    const char *dir = videos_dir();
    reel_set_ffmpeg_log_level(0);
    ref_item items[128];
    size_t nitems = 0;
    for (size_t v = 0; v < 2; v++) {
        char rdir[4200];
        snprintf(rdir, sizeof rdir, "%s/%s.refs", dir, videos[v]);
        DIR *d = opendir(rdir);
        CHECK_MSG(d != NULL, "cannot open %s", rdir);
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.') continue;
            ref_item it;
            int c = classify_ref(videos[v], de->d_name, &it);
            CHECK_MSG(c >= 0, "%s: unexpected file %s", rdir, de->d_name);
            if (c == 0) continue;
            CHECK(nitems < sizeof items / sizeof items[0]);
            items[nitems++] = it;
        }
        closedir(d);
    }
    CHECK_MSG(nitems == 50, "found %zu pixel references, REFS.md lists 50", nitems);

    /* One batched request per (video, stream, transform). */
    int done[128] = { 0 };
    size_t checked = 0;
    for (size_t a = 0; a < nitems; a++) {
        if (done[a]) continue;
        const ref_item *g = &items[a];
        size_t member[128], nm = 0;
        for (size_t b = a; b < nitems; b++)
            if (!done[b] && items[b].video == g->video && items[b].stream == g->stream && items[b].kind == g->kind) {
                member[nm++] = b;
                done[b] = 1;
            }
        reel_decoder *dec = open_video(g->video, g->stream, 2);
        const reel_video_info *info = reel_decoder_get_info(dec);
        if (g->stream < 0 && !strcmp(g->video, "nasa_13013.mp4"))
            CHECK_MSG(info->stream_index == 3, "nasa_13013.mp4 default stream is %d, want 3", info->stream_index);
        reel_transform t;
        reel_transform_default_settings(&t);
        if (g->kind == REF_CROP) {
            t.crop_x = 50;
            t.crop_y = 35;
            t.crop_w = 300;
            t.crop_h = 200;
        } else if (g->kind == REF_SCALE) {
            t.width = 240;
            t.height = 135;
            t.filter = REEL_FILTER_BILINEAR;
            t.resize_mode = REEL_RESIZE_MODE_AFTER_RGB;
        }
        int64_t idx[128];
        for (size_t k = 0; k < nm; k++) idx[k] = items[member[k]].index;
        int w, h;
        size_t fb;
        uint8_t *got = reel_frames(dec, idx, nm, &t, &w, &h, &fb);
        cmp_state cs = { 0 };
        for (size_t k = 0; k < nm; k++) {
            const ref_item *it = &items[member[k]];
            char path[4400];
            snprintf(path, sizeof path, "%s/%s.refs/%s", dir, it->video, it->name);
            size_t zsize, len;
            uint8_t *zip = read_file(path, &zsize);
            const uint8_t *data = pt_tensor_data(path, zip, zsize, &len);
            CHECK_MSG(len == fb, "%s: %zu bytes of pixels, reel's output is %dx%d (%zu bytes)", it->name, len, w, h,
                      fb);
            check_frame(&cs, it->name, it->video, it->index, k, got + k * fb, data, w, h);
            free(zip);
            checked++;
        }
        cmp_finish(&cs);
        free(got);
        reel_decoder_close(&dec);
    }
    CHECK_EQ_INT(checked, 50);
}

/* ================================================================ 4. frame tables */

/* Minimal reader for ffprobe's [{"pts_time": "..", "duration_time": ".."}, ...]. */
static double json_num_after(const char *obj, const char *end, const char *key, const char *path, size_t i)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = obj;
    size_t pl = strlen(pat);
    for (; p + pl <= end; p++)
        if (!memcmp(p, pat, pl)) break;
    CHECK_MSG(p + pl <= end, "%s: object %zu has no %s", path, i, key);
    p += pl;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    CHECK_MSG(p < end && *p == ':', "%s: object %zu: no ':' after %s", path, i, key);
    p++;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '"')) p++;
    char *q;
    double v = strtod(p, &q);
    CHECK_MSG(q != p && q <= end, "%s: object %zu: %s is not a number", path, i, key);
    return v;
}

typedef struct json_frames {
    double *pts, *dur;
    size_t n;
} json_frames;

static json_frames read_frames_json(const char *path)
{
    size_t size;
    char *text = (char *)read_file(path, &size);
    json_frames jf = { 0 };
    size_t cap = 0;
    const char *p = text, *end = text + size;
    while ((p = strchr(p, '{')) != NULL) {
        const char *close = strchr(p, '}');
        CHECK_MSG(close != NULL, "%s: unterminated object", path);
        if (jf.n == cap) {
            cap = cap ? 2 * cap : 512;
            jf.pts = realloc(jf.pts, cap * sizeof *jf.pts);
            jf.dur = realloc(jf.dur, cap * sizeof *jf.dur);
            CHECK(jf.pts && jf.dur);
        }
        jf.pts[jf.n] = json_num_after(p, close, "pts_time", path, jf.n);
        jf.dur[jf.n] = json_num_after(p, close, "duration_time", path, jf.n);
        jf.n++;
        p = close + 1;
    }
    (void)end;
    free(text);
    CHECK_MSG(jf.n > 0, "%s: no frames", path);
    return jf;
}

TEST(frame_tables_match_ffprobe_json)
{
    static const struct {
        const char *video;
        int stream;
    } cases[] = { { "nasa_13013.mp4", 0 },
                  { "nasa_13013.mp4", 3 },
                  { "nasa_13013_rotated.mp4", 0 },
                  { "test_non_zero_start.mp4", 0 } };
    const char *dir = videos_dir();
    reel_set_ffmpeg_log_level(0);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s.refs/%s.stream%d.all_frames_info.json", dir, cases[c].video, cases[c].video,
                 cases[c].stream);
        json_frames jf = read_frames_json(path);
        reel_decoder *dec = open_video(cases[c].video, cases[c].stream, 2);
        const reel_video_info *info = reel_decoder_get_info(dec);
        CHECK_EQ_INT(info->stream_index, cases[c].stream);
        int64_t n = 0;
        const reel_frame_entry *tab = reel_decoder_get_frame_table(dec, &n);
        CHECK_MSG(n == (int64_t)jf.n && info->num_frames == n,
                  "%s stream %d: reel has %lld frames (num_frames %lld), ffprobe %zu", cases[c].video, cases[c].stream,
                  (long long)n, (long long)info->num_frames, jf.n);
        for (int64_t i = 0; i < n; i++) {
            double pts = tb_seconds(info, (double)tab[i].pts);
            double dur = tb_seconds(info, (double)tab[i].duration);
            CHECK_MSG(fabs(pts - jf.pts[i]) < 1e-6 && fabs(dur - jf.dur[i]) < 1e-6,
                      "%s stream %d frame %lld: reel pts %.9f dur %.9f (ticks %lld/%lld, tb "
                      "%d/%d), ffprobe pts %.6f dur %.6f",
                      cases[c].video, cases[c].stream, (long long)i, pts, dur, (long long)tab[i].pts,
                      (long long)tab[i].duration, info->time_base_num, info->time_base_den, jf.pts[i], jf.dur[i]);
        }
        free(jf.pts);
        free(jf.dur);
        reel_decoder_close(&dec);
    }
}

/* ================================================================ 5. crop + resize */

typedef struct crop_case {
    const char *file;
    int stream;
    int x, y, w, h;
} crop_case;

static const crop_case k_crops[] = {
    { "nasa_13013.mp4", 3, 51, 33, 301, 155 },             /* 8-bit 4:2:0 */
    { "karma.mp4", -1, 101, 57, 503, 301 },                /* yuvj420p (full range) */
    { "cockatoo.mp4", -1, 333, 111, 641, 401 },            /* 4:4:4 */
    { "vp8_video_with_alpha.webm", -1, 17, 41, 251, 172 }, /* odd height, crop to the bottom */
};

static const char *ff_flags(int filter)
{
    switch (filter) {
    case REEL_FILTER_BILINEAR: return "bilinear";
    case REEL_FILTER_AREA: return "area";
    case REEL_FILTER_BICUBIC: return "bicubic";
    case REEL_FILTER_NEAREST: return "neighbor";
    }
    return "?";
}

/* Frames 0, 5, 13, 22 (requested unsorted with a repeat) under `t`, against
 * ffmpeg with `filters`. */
static void compare_transform(const crop_case *c, const reel_transform *t, const char *filters, const char *what)
{
    reel_decoder *dec = open_video(c->file, c->stream, 2);
    const reel_video_info *info = reel_decoder_get_info(dec);
    static const int64_t req[] = { 13, 0, 22, 5, 13 };
    static const int64_t u[] = { 0, 5, 13, 22 };
    size_t nreq = sizeof req / sizeof req[0], nu = sizeof u / sizeof u[0];
    CHECK(info->num_frames > 22);
    int w, h;
    size_t fb;
    uint8_t *got = reel_frames(dec, req, nreq, t, &w, &h, &fb);
    int ew = t->width ? t->width : t->crop_w, eh = t->height ? t->height : t->crop_h;
    CHECK_MSG(w == ew && h == eh, "%s: output %dx%d, want %dx%d", what, w, h, ew, eh);
    ff_job j = { .file = c->file,
                 .stream = info->stream_index,
                 .threads = 2,
                 .idx = u,
                 .n_idx = nu,
                 .n_frames = nu,
                 .filters = filters,
                 .out_w = w,
                 .out_h = h };
    uint8_t *want = ffmpeg_frames(&j);
    char label[512];
    snprintf(label, sizeof label, "%s [-vf %s]", what, filters);
    cmp_state cs = { 0 };
    for (size_t i = 0; i < nreq; i++)
        check_frame(&cs, label, c->file, req[i], i, got + i * fb, want + find_pos(u, nu, req[i]) * fb, w, h);
    cmp_finish(&cs);
    free(want);
    free(got);
    reel_decoder_close(&dec);
}

static void body_crop_resize(void)
{
    const crop_case *c = NULL;
    for (size_t i = 0; i < sizeof k_crops / sizeof k_crops[0]; i++)
        if (!strcmp(k_crops[i].file, g_cur_file)) c = &k_crops[i];
    CHECK(c != NULL);
    char filters[256], what[128];

    /* crop only */
    reel_transform t;
    reel_transform_default_settings(&t);
    t.crop_x = c->x;
    t.crop_y = c->y;
    t.crop_w = c->w;
    t.crop_h = c->h;
    /* crop without resize is a crop of the full RGB frame (not of the YUV
     * planes, which differs for subsampled chroma at odd offsets) */
    snprintf(filters, sizeof filters, "format=rgb24,crop=%d:%d:%d:%d:exact=1", c->w, c->h, c->x, c->y);
    compare_transform(c, &t, filters, "crop only");

    /* fused crop + resize, every filter, down- and up-scaling */
    static const struct {
        int filter, wn, wd, hn, hd;
    } sizes[] = {
        { REEL_FILTER_BILINEAR, 1, 2, 1, 2 },
        { REEL_FILTER_AREA, 1, 3, 2, 7 },
        { REEL_FILTER_BICUBIC, 3, 2, 3, 2 },
        { REEL_FILTER_NEAREST, 2, 3, 5, 4 },
    };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        t.width = c->w * sizes[k].wn / sizes[k].wd;
        t.height = c->h * sizes[k].hn / sizes[k].hd;
        t.filter = sizes[k].filter;
        t.resize_mode = REEL_RESIZE_MODE_FUSED;
        snprintf(filters, sizeof filters, "crop=%d:%d:%d:%d:exact=1,scale=%d:%d:flags=%s", c->w, c->h, c->x, c->y,
                 t.width, t.height, ff_flags(t.filter));
        snprintf(what, sizeof what, "fused crop+resize %s", ff_flags(t.filter));
        compare_transform(c, &t, filters, what);
    }
}

TEST(fused_crop_resize_matches_ffmpeg_filters)
{
    const char *names[sizeof k_crops / sizeof k_crops[0]];
    for (size_t i = 0; i < sizeof k_crops / sizeof k_crops[0]; i++) names[i] = k_crops[i].file;
    (void)videos_dir();
    need_ffmpeg();
    reel_set_ffmpeg_log_level(0);
    for_each_video(names, sizeof names / sizeof names[0], body_crop_resize, "crop/resize");
}

static void body_after_rgb(void)
{
    const crop_case *c = NULL;
    for (size_t i = 0; i < sizeof k_crops / sizeof k_crops[0]; i++)
        if (!strcmp(k_crops[i].file, g_cur_file)) c = &k_crops[i];
    CHECK(c != NULL);
    static const struct {
        int filter, wn, wd, hn, hd;
    } sizes[] = {
        { REEL_FILTER_BILINEAR, 2, 3, 2, 3 },
        { REEL_FILTER_AREA, 1, 4, 1, 3 },
        { REEL_FILTER_BICUBIC, 5, 4, 4, 3 },
        { REEL_FILTER_NEAREST, 1, 2, 3, 2 },
    };
    char filters[256], what[128];
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        reel_transform t;
        reel_transform_default_settings(&t);
        t.crop_x = c->x;
        t.crop_y = c->y;
        t.crop_w = c->w;
        t.crop_h = c->h;
        t.width = c->w * sizes[k].wn / sizes[k].wd;
        t.height = c->h * sizes[k].hn / sizes[k].hd;
        t.filter = sizes[k].filter;
        t.resize_mode = REEL_RESIZE_MODE_AFTER_RGB;
        snprintf(filters, sizeof filters, "format=rgb24,crop=%d:%d:%d:%d:exact=1,scale=%d:%d:flags=%s", c->w, c->h,
                 c->x, c->y, t.width, t.height, ff_flags(t.filter));
        snprintf(what, sizeof what, "after-RGB crop+resize %s", ff_flags(t.filter));
        compare_transform(c, &t, filters, what);
    }
}

TEST(resize_after_rgb_matches_ffmpeg_filters)
{
    static const char *const names[] = { "nasa_13013.mp4", "karma.mp4" };
    (void)videos_dir();
    need_ffmpeg();
    reel_set_ffmpeg_log_level(0);
    for_each_video(names, sizeof names / sizeof names[0], body_after_rgb, "after-RGB resize");
}

/* ================================================================ 6. rotation */

static void body_rotation(void)
{
    const mf_row *m = manifest_row(g_cur_file);
    reel_decoder *dec = open_video(m->file, -1, 2);
    const reel_video_info *info = reel_decoder_get_info(dec);
    CHECK_MSG(norm_rotation(info->rotation) == m->rotation, "rotation %d, manifest %d (as 0..359)", info->rotation,
              m->rotation);
    int64_t n = info->num_frames;
    int64_t req[] = { n - 1, 0, n / 2, 0 };
    int64_t u[] = { 0, n / 2, n - 1 };
    size_t nreq = 4, nu = 3;
    CHECK(n >= 3);
    reel_transform t;
    reel_transform_default_settings(&t);
    t.apply_rotation = 1;
    int w, h;
    size_t fb;
    uint8_t *got = reel_frames(dec, req, nreq, &t, &w, &h, &fb);
    int swap = m->rotation == 90 || m->rotation == 270;
    int ew = swap ? m->height : m->width, eh = swap ? m->width : m->height;
    CHECK_MSG(w == ew && h == eh, "rotated output %dx%d, want %dx%d (rotation %d)", w, h, ew, eh, m->rotation);
    ff_job j = { .file = m->file,
                 .stream = info->stream_index,
                 .autorotate = 1,
                 .threads = 2,
                 .idx = u,
                 .n_idx = nu,
                 .n_frames = nu,
                 .out_w = w,
                 .out_h = h };
    uint8_t *want = ffmpeg_frames(&j);
    cmp_state cs = { 0 };
    for (size_t i = 0; i < nreq; i++)
        check_frame(&cs, "apply_rotation vs ffmpeg autorotate", m->file, req[i], i, got + i * fb,
                    want + find_pos(u, nu, req[i]) * fb, w, h);
    cmp_finish(&cs);
    free(want);
    free(got);
    reel_decoder_close(&dec);
}

TEST(rotation_matches_ffmpeg_autorotate)
{
    static const char *const names[] = { "nasa_13013_rotated.mp4", "video_90.mov", "fire2.mp4" };
    (void)videos_dir();
    need_ffmpeg();
    reel_set_ffmpeg_log_level(0);
    for_each_video(names, sizeof names / sizeof names[0], body_rotation, "rotation");
}
