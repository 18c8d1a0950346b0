/* test_real_videos_pixels.c: reel's pixels and tables on real-world videos
 * against references: torchcodec's own reference frames (REFS.md), the frame
 * tables ffprobe published with torchcodec's test videos, fused and
 * after-RGB crop+resize against ffmpeg's crop/scale filters, and rotation
 * against ffmpeg's autorotate. Shared helpers: real_common.h; manifest,
 * random access and timestamps: test_real_videos.c. */
#include "real_common.h"

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
            t.pixels.filter = REEL_FILTER_BILINEAR;
            t.pixels.convert_path = REEL_CONVERT_PATH_AFTER_RGB;
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
        t.pixels.filter = sizes[k].filter;
        t.pixels.convert_path = REEL_CONVERT_PATH_FUSED;
        snprintf(filters, sizeof filters, "crop=%d:%d:%d:%d:exact=1,scale=%d:%d:flags=%s", c->w, c->h, c->x, c->y,
                 t.width, t.height, ff_flags(t.pixels.filter));
        snprintf(what, sizeof what, "fused crop+resize %s", ff_flags(t.pixels.filter));
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
        t.pixels.filter = sizes[k].filter;
        t.pixels.convert_path = REEL_CONVERT_PATH_AFTER_RGB;
        snprintf(filters, sizeof filters, "format=rgb24,crop=%d:%d:%d:%d:exact=1,scale=%d:%d:flags=%s", c->w, c->h,
                 c->x, c->y, t.width, t.height, ff_flags(t.pixels.filter));
        snprintf(what, sizeof what, "after-RGB crop+resize %s", ff_flags(t.pixels.filter));
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
    t.pixels.apply_rotation = 1;
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
