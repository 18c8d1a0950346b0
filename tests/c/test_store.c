/* test_store.c: the packed store (issue 7). For each format, every stored
 * frame is checked against its reference (raw: the video path's fused
 * resize, bit for bit; jpeg: libjpeg-turbo's own decode of the stored bytes
 * and PSNR >= 38 dB against the video path; h264: the ffmpeg CLI decoding
 * the stored record) and through the generator's embedded frame index;
 * subsampling keeps source indices and pts; builds are deterministic, split
 * builds merge to the same records, a killed build resumes; damage is named;
 * the loader over a store equals the loader over the videos. */
#define _GNU_SOURCE
#include "harness.h"
#include "store_common.h"
#include "testgen.h"

#include "reel/store.h"
#include "store/store_internal.h"

#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <turbojpeg.h>

#include <libavutil/crc.h>
#include <unistd.h>

enum { NV = 4, VW = 160, VH = 120, SS = 96, SW = 128, SH = 96 };

/* A Kinetics-like folder of NV generated videos (frames carry their index). */
static const char *dataset(void)
{
    static const sc_videos v = { "ds", NV, VW, VH, 30, 6, 10, 2, 1 };
    return sc_dataset(&v);
}

static void pack_to(const char *out, reel_store_format fmt, int every, double fps, int threads, int part, int parts)
{
    reel_pack_settings s;
    reel_pack_default_settings(&s);
    s.format = fmt;
    s.short_side = SS;
    s.every = every;
    s.fps = fps;
    s.threads = threads;
    s.part_index = part;
    s.part_count = parts;
    s.zstd_level = 0;
    CHECK_EQ_INT(sc_pack(dataset(), out, &s).failed, 0);
}

/* The video path: the same frames with the decoder's fused resize. */
static uint8_t *video_frames(const char *path, const int64_t *idx, size_t n, int w, int h)
{
    reel_decoder *dec = tg_open(path, NULL);
    reel_transform t;
    reel_transform_default_settings(&t);
    t.width = w;
    t.height = h;
    t.pixels.apply_rotation = 1;
    uint8_t *buf = tg_get(dec, idx, n, &t, NULL);
    reel_decoder_close(&dec);
    return buf;
}

/* Checks every record of a store against the video path; per format. */
static void check_store(const char *dir, reel_store_format fmt)
{
    reel_store *s = NULL;
    reel_error err;
    reel_error_clear(&err);
    CHECK_MSG(reel_store_open(&s, dir, &err) == REEL_OK, "%s", err.message);
    reel_store_info info;
    reel_store_get_info(s, &info, NULL);
    CHECK_EQ_INT(info.num_records, NV);
    CHECK_EQ_INT(info.format, fmt);
    CHECK_EQ_INT(info.num_classes, 2);
    CHECK_EQ_INT(info.sampler.kind, REEL_SAMPLER_NONE); /* packed without a sampler: no kind means two things */
    const char *name = NULL;
    CHECK_OK(reel_store_get_class_name(s, 1, &name, NULL));
    CHECK_EQ_STR(name, "bowling");
    CHECK_STATUS(reel_store_get_class_name(s, 2, &name, &err), REEL_E_OUT_OF_RANGE); /* no NULL past the end */
    CHECK_MSG(strstr(err.message, dir) && strstr(err.message, "label 2 of 2"), "%s", err.message);
    const reel_frame_entry *tab = NULL;
    int64_t nt = -1;
    CHECK_STATUS(reel_store_get_frame_table(s, info.num_records, &tab, &nt, &err), REEL_E_OUT_OF_RANGE);
    CHECK_MSG(strstr(err.message, dir) && strstr(err.message, "record"), "%s", err.message);
    CHECK(tab == NULL);
    tjhandle tj = tjInitDecompress();
    for (int64_t i = 0; i < info.num_records; i++) {
        reel_store_record rec;
        int64_t *pts = NULL;
        uint8_t *got = sc_read_record(s, i, &rec, &pts);
        CHECK_EQ_INT(rec.status, REEL_OK);
        CHECK_EQ_INT(rec.width, SW);
        CHECK_EQ_INT(rec.height, SH);
        CHECK_EQ_INT(rec.label, i >= NV / 2); /* sorted paths: archery/v0, archery/v2, bowling/v1, bowling/v3 */
        CHECK_EQ_INT(rec.num_frames, rec.source_num_frames);
        const size_t n = (size_t)rec.num_frames, fb = (size_t)SW * SH * 3;
        int64_t *idx = malloc(n * 8);
        for (size_t j = 0; j < n; j++) CHECK_OK(reel_store_get_source_index(s, i, (int64_t)j, &idx[j], NULL));
        uint8_t *want = video_frames(rec.source_path, idx, n, SW, SH);
        CHECK_OK(reel_store_get_frame_table(s, i, &tab, &nt, NULL));
        CHECK_EQ_INT(nt, (int64_t)n);
        for (size_t j = 0; j < n; j++) {
            const uint8_t *g = got + j * fb, *w = want + j * fb;
            CHECK_MSG(tg_read_idx(g, SW, SH) == idx[j], "%s frame %zu: embedded index %lld, source index %lld",
                      rec.source_path, j, (long long)tg_read_idx(g, SW, SH), (long long)idx[j]);
            CHECK_EQ_INT(pts[j], tab[j].pts);
            if (fmt == REEL_STORE_FORMAT_RAW) {
                CHECK_MSG(memcmp(g, w, fb) == 0, "%s frame %zu: raw store differs from the video path", rec.source_path,
                          j);
            } else if (fmt == REEL_STORE_FORMAT_JPEG) {
                /* the generator's pattern is sharp-edged and saturated, JPEG's
                 * worst case; real video is held to 38 dB below */
                double p = sc_psnr(g, w, fb);
                CHECK_MSG(p >= 34.0, "%s frame %zu: PSNR %.2f dB < 34 against the video path", rec.source_path, j, p);
                /* equal to libjpeg-turbo's own decode of the stored bytes */
                const reel__store_rec *r = &s->recs[i];
                char shard[1200];
                snprintf(shard, sizeof shard, "%s/%s", dir, rec.shard);
                size_t sz = 0;
                uint8_t *bytes = tg_read_file(shard, &sz);
                CHECK(bytes && r->offset + r->frames[j].offset + r->frames[j].length <= sz);
                uint8_t *dec = malloc(fb);
                CHECK(tjDecompress2(tj, bytes + r->offset + r->frames[j].offset, r->frames[j].length, dec, SW, SW * 3,
                                    SH, TJPF_RGB, 0) == 0);
                CHECK_MSG(memcmp(dec, g, fb) == 0, "%s frame %zu: differs from libjpeg-turbo's decode", rec.source_path,
                          j);
                free(dec);
                free(bytes);
            }
        }
        if (fmt == REEL_STORE_FORMAT_H264) {
            /* the stored record decoded by the ffmpeg CLI */
            if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg CLI");
            const reel__store_rec *r = &s->recs[i];
            char shard[1200], rec_path[1200], cmd[4000];
            snprintf(shard, sizeof shard, "%s/%s", dir, rec.shard);
            snprintf(rec_path, sizeof rec_path, "%s/rec%lld.mkv", harness_tmpdir(), (long long)i);
            size_t sz = 0;
            uint8_t *bytes = tg_read_file(shard, &sz);
            CHECK(bytes && r->offset + r->length <= sz);
            tg_write_file(rec_path, bytes + r->offset, (size_t)r->length);
            free(bytes);
            snprintf(cmd, sizeof cmd,
                     "ffmpeg -nostdin -v error -i '%s' -fps_mode passthrough -pix_fmt rgb24 -f rawvideo -", rec_path);
            FILE *p = popen(cmd, "r");
            CHECK(p != NULL);
            uint8_t *ff = malloc(n * fb + 1);
            size_t total = fread(ff, 1, n * fb + 1, p);
            CHECK_EQ_INT(pclose(p), 0);
            CHECK_EQ_INT((int64_t)total, (int64_t)(n * fb));
            for (size_t j = 0; j < n; j++)
                CHECK_MSG(memcmp(ff + j * fb, got + j * fb, fb) == 0, "%s frame %zu: differs from ffmpeg's decode",
                          rec.source_path, j);
            double p0 = sc_psnr(got, want, n * fb);
            CHECK_MSG(p0 >= 30.0, "%s: h264 store PSNR %.2f dB against the video path", rec.source_path, p0);
            free(ff);
        }
        free(want);
        free(idx);
        free(got);
        free(pts);
    }
    tjDestroy(tj);
    reel_store_close(&s);
}

TEST(store_crc32_equals_av_crc_at_every_length_and_alignment)
{
    /* the folded (PCLMULQDQ) CRC against FFmpeg's table CRC, which the
     * store format names: lengths around every fold boundary, odd
     * alignments, carried-in values, and a frame-sized buffer */
    enum { MAX = 1 << 20 };
    uint8_t *buf = malloc(MAX + 64);
    CHECK(buf != NULL);
    uint64_t rs = 12345;
    for (size_t i = 0; i < MAX + 64; i++) buf[i] = (uint8_t)tg_rand(&rs);
    const AVCRC *t = av_crc_get_table(AV_CRC_32_IEEE_LE);
    for (size_t n = 0; n <= 300; n++)
        for (size_t al = 0; al < 3; al++) {
            uint32_t seed = n % 3 == 0 ? 0 : (uint32_t)tg_rand(&rs);
            CHECK_MSG(reel__crc32(seed, buf + al, n) == av_crc(t, seed, buf + al, n), "n %zu align %zu", n, al);
        }
    for (size_t n = 4096; n <= MAX; n = n * 2 + 7)
        CHECK_MSG(reel__crc32(0, buf + 1, n) == av_crc(t, 0, buf + 1, n), "n %zu", n);
    /* chained: the CRC of a whole is the CRC of its parts carried on */
    uint32_t c = reel__crc32(0, buf, 1000);
    CHECK(reel__crc32(c, buf + 1000, 5000) == av_crc(t, 0, buf, 6000));
    free(buf);
}

TEST(raw_store_is_bit_exact_with_the_video_path)
{
    pack_to(sc_tmp("raw"), REEL_STORE_FORMAT_RAW, 1, 0, 2, 0, 1);
    check_store(sc_tmp("raw"), REEL_STORE_FORMAT_RAW);
    reel_store_verify_report v;
    CHECK_OK(reel_store_verify(sc_tmp("raw"), &v, NULL));
    CHECK_EQ_INT(v.records, NV);
    CHECK_EQ_INT(v.bad, 0);
}

TEST(raw_zstd_store_is_bit_exact_too)
{
    reel_pack_settings s;
    reel_pack_default_settings(&s);
    s.format = REEL_STORE_FORMAT_RAW;
    s.zstd_level = 3;
    s.short_side = SS;
    CHECK_OK(reel_pack(dataset(), sc_tmp("rawz"), &s, NULL, NULL));
    check_store(sc_tmp("rawz"), REEL_STORE_FORMAT_RAW);
}

TEST(jpeg_store_equals_turbojpeg_and_is_close_to_the_video_path)
{
    pack_to(sc_tmp("jpeg"), REEL_STORE_FORMAT_JPEG, 1, 0, 2, 0, 1);
    check_store(sc_tmp("jpeg"), REEL_STORE_FORMAT_JPEG);
}

TEST(h264_store_equals_ffmpeg_decoding_the_record)
{
    pack_to(sc_tmp("h264"), REEL_STORE_FORMAT_H264, 1, 0, 2, 0, 1);
    check_store(sc_tmp("h264"), REEL_STORE_FORMAT_H264);
}

typedef struct one {
    uint8_t *buf;
    int64_t idx;
} one;

static int one_fn(void *opaque, const reel_frame *f, size_t pos)
{
    (void)pos;
    one *o = opaque;
    o->idx = reel_frame_get_index(f);
    reel_converter *c = NULL;
    reel_converter_create(&c, NULL);
    reel_transform t;
    reel_transform_default_settings(&t);
    int r = reel_converter_run(c, f, &t, o->buf, (size_t)SW * SH * 3, NULL);
    reel_converter_destroy(&c);
    return r;
}

TEST(subsampled_stores_keep_source_indices_and_report_missing_frames)
{
    pack_to(sc_tmp("every3"), REEL_STORE_FORMAT_RAW, 3, 0, 2, 0, 1);
    pack_to(sc_tmp("fps5"), REEL_STORE_FORMAT_RAW, 1, 5.0, 2, 0, 1); /* the videos are 25 fps */
    const char *dirs[2] = { sc_tmp("every3"), sc_tmp("fps5") };
    const int step[2] = { 3, 5 };
    for (int d = 0; d < 2; d++) {
        reel_store *s = NULL;
        CHECK_OK(reel_store_open(&s, dirs[d], NULL));
        reel_store_reader *r = NULL;
        CHECK_OK(reel_store_reader_create(&r, s, NULL, NULL));
        uint8_t *buf = malloc((size_t)SW * SH * 3);
        for (int64_t i = 0; i < NV; i++) {
            reel_store_record rec;
            CHECK_OK(reel_store_get_record(s, i, &rec, NULL));
            CHECK_EQ_INT(rec.num_frames, (rec.source_num_frames + step[d] - 1) / step[d]);
            for (int64_t j = 0; j < rec.num_frames; j++) {
                int64_t src = -1;
                CHECK_OK(reel_store_get_source_index(s, i, j, &src, NULL));
                CHECK_EQ_INT(src, j * step[d]);
                /* by source index: the right frame */
                one o = { buf, -1 };
                CHECK_OK(reel_store_reader_read_source(r, i, &src, 1, one_fn, &o, NULL, NULL));
                CHECK_EQ_INT(o.idx, j);
                CHECK_EQ_INT(tg_read_idx(buf, SW, SH), src);
            }
            /* a source frame that was not stored: out of range, never the nearest */
            int64_t missing = 1;
            reel_error err;
            reel_error_clear(&err);
            one o = { buf, -1 };
            CHECK_STATUS(reel_store_reader_read_source(r, i, &missing, 1, one_fn, &o, NULL, &err), REEL_E_OUT_OF_RANGE);
            CHECK(strstr(err.message, "source frame 1 is not in the store") != NULL);
            CHECK_EQ_INT(o.idx, -1);
        }
        free(buf);
        reel_store_reader_destroy(&r);
        reel_store_close(&s);
    }
}

/* The whole-video samplers' frames of one video (the sampler reel.vlm uses). */
static int64_t sampled(const char *path, const reel_sampler_settings *ss, int64_t *out, size_t cap)
{
    reel_decoder *dec = tg_open(path, NULL);
    const reel_video_info *info = reel_decoder_get_info(dec);
    reel_sampler_video v;
    memset(&v, 0, sizeof v);
    v.table = reel_decoder_get_frame_table(dec, &v.num_frames);
    v.time_base_num = info->time_base_num;
    v.time_base_den = info->time_base_den;
    v.average_fps = (double)info->avg_fps_num / info->avg_fps_den;
    v.segment_end = -1;
    reel_sampler_result r;
    CHECK_OK(reel_sampler_describe(ss, &v, &r, NULL));
    CHECK((size_t)r.num_frames <= cap);
    CHECK_OK(reel_sampler_run(ss, &v, 0, 0, 0, out, (size_t)r.num_frames, NULL));
    reel_decoder_close(&dec);
    return r.num_frames;
}

TEST(whole_video_sampler_stores_keep_the_sampled_frames)
{
    /* fps 10 of 25 fps videos of 30, 36, 42, 48 frames: 12, 14.4, 16.8, 19.2
     * frames, floored to 2 and capped at max_frames 15 -> 14; count 7 -> 8 */
    const int64_t want_n[2][NV] = { { 12, 14, 14, 14 }, { 8, 8, 8, 8 } };
    for (int kind = 0; kind < 2; kind++) {
        reel_pack_settings ps;
        reel_pack_default_settings(&ps);
        ps.format = REEL_STORE_FORMAT_RAW;
        ps.short_side = SS;
        ps.threads = 2;
        ps.sampler.kind = kind == 0 ? REEL_SAMPLER_FPS : REEL_SAMPLER_COUNT;
        ps.sampler.fps = 10.0;
        ps.sampler.max_frames = 15;
        ps.sampler.frames_per_clip = 7;
        const char *dir = sc_tmp(kind == 0 ? "sample_fps" : "sample_count");
        CHECK_EQ_INT(sc_pack(dataset(), dir, &ps).failed, 0);
        reel_sampler_settings ss;
        reel_sampler_default_settings(&ss);
        ss.kind = ps.sampler.kind;
        ss.fps = 10.0;
        ss.max_frames = 15;
        ss.frames_per_clip = 7;
        reel_store *s = NULL;
        CHECK_OK(reel_store_open(&s, dir, NULL));
        /* the store says which sampler, with what it records of it */
        reel_store_info info;
        CHECK_OK(reel_store_get_info(s, &info, NULL));
        CHECK_EQ_INT(info.sampler.kind, ps.sampler.kind);
        CHECK_EQ_INT(info.sampler.frame_factor, 2);
        CHECK(info.fps == 0 && info.every == 0);
        if (kind == 0)
            CHECK(info.sampler.fps == 10.0 && info.sampler.min_frames == 4 && info.sampler.max_frames == 15 &&
                  info.sampler.frames_per_clip == 0);
        else
            CHECK(info.sampler.fps == 0 && info.sampler.min_frames == 0 && info.sampler.max_frames == 0 &&
                  info.sampler.frames_per_clip == 7);
        reel_store_reader *r = NULL;
        CHECK_OK(reel_store_reader_create(&r, s, NULL, NULL));
        uint8_t *buf = malloc((size_t)SW * SH * 3);
        for (int64_t i = 0; i < NV; i++) {
            reel_store_record rec;
            CHECK_OK(reel_store_get_record(s, i, &rec, NULL));
            int64_t want[64];
            int64_t n = sampled(rec.source_path, &ss, want, 64);
            CHECK_EQ_INT(rec.num_frames, want_n[kind][rec.source_num_frames / 6 - 5]);
            CHECK_EQ_INT(rec.num_frames, n);
            CHECK_EQ_INT(want[0], 0);
            CHECK_EQ_INT(want[n - 1], rec.source_num_frames - 1);
            for (int64_t j = 0; j < n; j++) {
                int64_t src = -1;
                CHECK_OK(reel_store_get_source_index(s, i, j, &src, NULL));
                CHECK_EQ_INT(src, want[j]);
                one o = { buf, -1 };
                CHECK_OK(reel_store_reader_read_source(r, i, &src, 1, one_fn, &o, NULL, NULL));
                CHECK_EQ_INT(tg_read_idx(buf, SW, SH), want[j]); /* the frame the generator wrote there */
            }
        }
        free(buf);
        reel_store_reader_destroy(&r);
        reel_store_close(&s);
    }
    /* a resumed build must use the same sampler: another one is refused */
    reel_pack_settings ps;
    reel_pack_default_settings(&ps);
    ps.format = REEL_STORE_FORMAT_RAW;
    ps.short_side = SS;
    ps.sampler.kind = REEL_SAMPLER_COUNT;
    ps.sampler.frames_per_clip = 9;
    reel_error err;
    reel_error_clear(&err);
    CHECK(reel_pack(dataset(), sc_tmp("sample_count"), &ps, NULL, &err) != REEL_OK);
    /* bad combinations are named before anything is read */
    ps.sampler.frames_per_clip = 0;
    CHECK_STATUS(reel_pack(dataset(), sc_tmp("sample_bad"), &ps, NULL, &err), REEL_E_INVALID_ARG);
    CHECK_MSG(tg_contains(err.message, "sampler.frames_per_clip"), "%s", err.message);
    ps.sampler.frames_per_clip = 9;
    ps.sampler.kind = REEL_SAMPLER_FPS;
    ps.every = 2;
    CHECK_STATUS(reel_pack(dataset(), sc_tmp("sample_bad"), &ps, NULL, &err), REEL_E_INVALID_ARG);
    ps.every = 1;
    ps.fps = 5; /* the sampler's rate is sampler.fps: a store-wide fps as well is refused */
    CHECK_STATUS(reel_pack(dataset(), sc_tmp("sample_bad"), &ps, NULL, &err), REEL_E_INVALID_ARG);
    CHECK_MSG(tg_contains(err.message, "sampler.fps"), "%s", err.message);
    ps.fps = 0;
    ps.sampler.range_start = 1; /* no store could say it was packed with a range */
    CHECK_STATUS(reel_pack(dataset(), sc_tmp("sample_bad"), &ps, NULL, &err), REEL_E_INVALID_ARG);
    CHECK_MSG(tg_contains(err.message, "other fields"), "%s", err.message);
    ps.sampler.range_start = 0;
    ps.sampler.kind = REEL_SAMPLER_REGULAR_INDICES;
    CHECK_STATUS(reel_pack(dataset(), sc_tmp("sample_bad"), &ps, NULL, &err), REEL_E_INVALID_ARG);
}

static int files_equal(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    uint8_t *x = tg_read_file(a, &na), *y = tg_read_file(b, &nb);
    int eq = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return eq;
}

/* The bytes of record i of the store in dir. */
static uint8_t *record_bytes(const char *dir, int64_t i, size_t *n)
{
    reel_store *s = NULL;
    CHECK_OK(reel_store_open(&s, dir, NULL));
    reel_store_record rec;
    CHECK_OK(reel_store_get_record(s, i, &rec, NULL));
    char shard[1200];
    snprintf(shard, sizeof shard, "%s/%s", dir, rec.shard);
    size_t sz = 0;
    uint8_t *all = tg_read_file(shard, &sz);
    CHECK(all && (size_t)(rec.offset + rec.length) <= sz);
    uint8_t *out = malloc((size_t)rec.length + 1);
    memcpy(out, all + rec.offset, (size_t)rec.length);
    *n = (size_t)rec.length;
    free(all);
    reel_store_close(&s);
    return out;
}

TEST(builds_are_deterministic_and_parts_merge_to_the_same_records)
{
    pack_to(sc_tmp("det1"), REEL_STORE_FORMAT_JPEG, 1, 0, 1, 0, 1);
    pack_to(sc_tmp("det3"), REEL_STORE_FORMAT_JPEG, 1, 0, 3, 0, 1);
    char a[1200], b[1200];
    snprintf(a, sizeof a, "%s/shard-00000-00000.bin", sc_tmp("det1"));
    snprintf(b, sizeof b, "%s/shard-00000-00000.bin", sc_tmp("det3"));
    CHECK_MSG(files_equal(a, b), "shards differ between 1 and 3 threads");
    snprintf(a, sizeof a, "%s/store.idx", sc_tmp("det1"));
    snprintf(b, sizeof b, "%s/store.idx", sc_tmp("det3"));
    CHECK_MSG(files_equal(a, b), "indexes differ between 1 and 3 threads");

    pack_to(sc_tmp("parts"), REEL_STORE_FORMAT_JPEG, 1, 0, 2, 0, 2);
    reel_error err;
    reel_error_clear(&err);
    /* one part only: the merge names what is missing */
    CHECK_STATUS(reel_pack_merge(sc_tmp("parts"), &err), REEL_E_NOT_FOUND);
    CHECK(strstr(err.message, "parts not complete") != NULL);
    pack_to(sc_tmp("parts"), REEL_STORE_FORMAT_JPEG, 1, 0, 2, 1, 2);
    CHECK_OK(reel_pack_merge(sc_tmp("parts"), NULL));
    CHECK_OK(reel_store_verify(sc_tmp("parts"), NULL, NULL));
    for (int64_t i = 0; i < NV; i++) {
        size_t n1 = 0, n2 = 0;
        uint8_t *r1 = record_bytes(sc_tmp("det1"), i, &n1), *r2 = record_bytes(sc_tmp("parts"), i, &n2);
        CHECK_MSG(n1 == n2 && memcmp(r1, r2, n1) == 0, "record %lld differs between one build and two parts",
                  (long long)i);
        free(r1);
        free(r2);
    }
}

static void kill_after_two(void *opaque, const reel_pack_progress *p)
{
    (void)opaque;
    if (p->videos_done - p->videos_resumed >= 2) raise(SIGKILL); /* kill -9 mid-build */
}

TEST(a_build_killed_mid_way_resumes_to_the_same_store)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        reel_pack_settings s;
        reel_pack_default_settings(&s);
        s.format = REEL_STORE_FORMAT_JPEG;
        s.short_side = SS;
        s.threads = 1;
        s.progress = kill_after_two;
        reel_pack(dataset(), sc_tmp("killed"), &s, NULL, NULL);
        _exit(3); /* not reached when the kill happened */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the build was not killed (status %d)", status);
    char idx[1200];
    snprintf(idx, sizeof idx, "%s/store.idx", sc_tmp("killed"));
    CHECK_MSG(!tg_file_exists(idx), "a killed build left an index");
    reel_pack_settings s;
    reel_pack_default_settings(&s);
    s.format = REEL_STORE_FORMAT_JPEG;
    s.short_side = SS;
    s.threads = 2;
    reel_pack_report rep;
    CHECK_OK(reel_pack(dataset(), sc_tmp("killed"), &s, &rep, NULL));
    CHECK_EQ_INT(rep.resumed, 2);
    CHECK_EQ_INT(rep.packed, NV - 2);
    CHECK_OK(reel_store_verify(sc_tmp("killed"), NULL, NULL));
    pack_to(sc_tmp("unkilled"), REEL_STORE_FORMAT_JPEG, 1, 0, 2, 0, 1);
    char a[1200], b[1200];
    snprintf(a, sizeof a, "%s/shard-00000-00000.bin", sc_tmp("killed"));
    snprintf(b, sizeof b, "%s/shard-00000-00000.bin", sc_tmp("unkilled"));
    CHECK_MSG(files_equal(a, b), "the resumed build's shard differs from an uninterrupted build's");
}

/* Reads every record; returns how many failed, and the first message. */
static int read_all(const char *dir, char *first, size_t size)
{
    reel_store *s = NULL;
    CHECK_OK(reel_store_open(&s, dir, NULL));
    reel_store_reader *r = NULL;
    CHECK_OK(reel_store_reader_create(&r, s, NULL, NULL));
    int bad = 0;
    first[0] = '\0';
    uint8_t *buf = malloc((size_t)SW * SH * 3);
    for (int64_t i = 0; i < NV; i++) {
        reel_store_record rec;
        CHECK_OK(reel_store_get_record(s, i, &rec, NULL));
        for (int64_t j = 0; j < rec.num_frames; j++) {
            one o = { buf, -1 };
            reel_error err;
            reel_error_clear(&err);
            int st = reel_store_reader_read(r, i, &j, 1, one_fn, &o, NULL, &err);
            if (st != REEL_OK) {
                CHECK_MSG(st == REEL_E_CORRUPT || st == REEL_E_NOT_FOUND, "status %d: %s", st, err.message);
                if (!bad++) snprintf(first, size, "%s", err.message);
                break;
            }
            CHECK_EQ_INT(tg_read_idx(buf, SW, SH), j);
        }
    }
    free(buf);
    reel_store_reader_destroy(&r);
    reel_store_close(&s);
    return bad;
}

TEST(damage_is_named_and_loses_nothing_else)
{
    reel_pack_settings s;
    reel_pack_default_settings(&s);
    s.format = REEL_STORE_FORMAT_JPEG;
    s.short_side = SS;
    s.shard_size = 4096; /* one record per shard */
    CHECK_OK(reel_pack(dataset(), sc_tmp("dmg"), &s, NULL, NULL));
    char first[REEL_ERROR_MSG_SIZE], path[1200];

    /* a flipped byte inside record 1 */
    sc_copy_dir(sc_tmp("dmg"), sc_tmp("flip"));
    {
        reel_store *st = NULL;
        CHECK_OK(reel_store_open(&st, sc_tmp("flip"), NULL));
        reel_store_record rec;
        CHECK_OK(reel_store_get_record(st, 1, &rec, NULL));
        snprintf(path, sizeof path, "%s/%s", sc_tmp("flip"), rec.shard);
        size_t n = 0;
        uint8_t *b = tg_read_file(path, &n);
        b[rec.offset + 700] ^= 0x5a;
        tg_write_file(path, b, n);
        free(b);
        CHECK_EQ_INT(read_all(sc_tmp("flip"), first, sizeof first), 1);
        CHECK_MSG(strstr(first, sc_tmp("flip")) && strstr(first, rec.shard) && strstr(first, rec.source_path) &&
                      strstr(first, "checksum mismatch"),
                  "message does not name store, shard, video and reason: %s", first);
        reel_store_close(&st);
        reel_store_verify_report v;
        CHECK_STATUS(reel_store_verify(sc_tmp("flip"), &v, NULL), REEL_E_CORRUPT);
        CHECK_EQ_INT(v.bad, 1);
    }
    /* a truncated shard, and a deleted one */
    sc_copy_dir(sc_tmp("dmg"), sc_tmp("trunc"));
    snprintf(path, sizeof path, "%s/shard-00000-00002.bin", sc_tmp("trunc"));
    CHECK_EQ_INT(truncate(path, 100), 0);
    CHECK_EQ_INT(read_all(sc_tmp("trunc"), first, sizeof first), 1);
    CHECK_MSG(strstr(first, "shard-00000-00002.bin") && strstr(first, "truncated"), "%s", first);
    sc_copy_dir(sc_tmp("dmg"), sc_tmp("gone"));
    snprintf(path, sizeof path, "%s/shard-00000-00003.bin", sc_tmp("gone"));
    CHECK_EQ_INT(unlink(path), 0);
    CHECK_EQ_INT(read_all(sc_tmp("gone"), first, sizeof first), 1);
    CHECK_MSG(strstr(first, "shard-00000-00003.bin") && strstr(first, "missing"), "%s", first);
    /* a damaged index: a clear error naming it */
    sc_copy_dir(sc_tmp("dmg"), sc_tmp("badidx"));
    snprintf(path, sizeof path, "%s/store.idx", sc_tmp("badidx"));
    size_t n = 0;
    uint8_t *b = tg_read_file(path, &n);
    b[n / 2] ^= 1;
    tg_write_file(path, b, n);
    free(b);
    reel_store *st = NULL;
    reel_error err;
    reel_error_clear(&err);
    CHECK_STATUS(reel_store_open(&st, sc_tmp("badidx"), &err), REEL_E_CORRUPT);
    CHECK(strstr(err.message, "store.idx") != NULL);
    CHECK(st == NULL);
    /* truncated index */
    tg_write_file(path, "REELSTOR", 8);
    CHECK_STATUS(reel_store_open(&st, sc_tmp("badidx"), &err), REEL_E_CORRUPT);

    /* the loader over the damaged store: the named failure, the rest delivered */
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create_from_path(&ds, sc_tmp("gone"), NULL));
    reel_loader_settings ls;
    reel_loader_default_settings(&ls);
    ls.batch_size = NV;
    ls.transform.resize = REEL_RESIZE_EXACT;
    ls.transform.resize_width = SW;
    ls.transform.resize_height = SH;
    ls.transform.crop = REEL_CROP_NONE;
    ls.sampler.frames_per_clip = 4;
    ls.decode_threads = 2;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &ls, NULL));
    reel_batch *bt = NULL;
    int64_t clips = 0;
    while (reel_loader_next(l, &bt, NULL) == REEL_OK && bt) {
        clips += bt->num_clips;
        reel_loader_release(l, bt);
    }
    CHECK_EQ_INT(clips, NV - 1);
    CHECK_EQ_INT(reel_loader_get_num_failures(l), 1);
    reel_failure f;
    CHECK_OK(reel_loader_get_failure(l, 0, &f, NULL));
    CHECK_MSG(strstr(f.reason, "shard-00000-00003.bin") && strstr(f.reason, "missing"), "%s", f.reason);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

/* One epoch's batches, concatenated. */
static uint8_t *epoch_bytes(const char *path, size_t *n, int64_t *frames_out)
{
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create_from_path(&ds, path, NULL));
    reel_loader_settings ls;
    reel_loader_default_settings(&ls);
    ls.batch_size = 2;
    ls.seed = 7;
    ls.transform.resize = REEL_RESIZE_EXACT;
    ls.transform.resize_width = SW;
    ls.transform.resize_height = SH;
    ls.transform.crop = REEL_CROP_NONE;
    ls.transform.flip = REEL_FLIP_RANDOM;
    ls.transform.layout = REEL_BATCH_BTHWC;
    ls.sampler.frames_per_clip = 5;
    ls.sampler.frame_stride = 2;
    ls.sampler.clips_per_video = 2;
    ls.decode_threads = 2;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &ls, NULL));
    size_t cap = 0, len = 0;
    uint8_t *out = NULL;
    int64_t frames = 0;
    reel_batch *b = NULL;
    reel_error err;
    int st;
    while ((st = reel_loader_next(l, &b, &err)) == REEL_OK && b) {
        if (len + b->bytes > cap) {
            cap = (len + b->bytes) * 2;
            out = realloc(out, cap);
        }
        memcpy(out + len, b->data, b->bytes);
        len += b->bytes;
        /* every delivered frame is the sampler's choice (embedded index; flips mirror it) */
        for (int64_t c = 0; c < b->num_clips; c++)
            for (int t = 0; t < 5; t++) {
                const uint8_t *img = (const uint8_t *)b->data + ((size_t)c * 5 + (size_t)t) * SW * SH * 3;
                if (!b->clips[c].flipped) CHECK_EQ_INT(tg_read_idx(img, SW, SH), b->clips[c].frame_indices[t]);
                frames++;
            }
        reel_loader_release(l, b);
    }
    CHECK_MSG(st == REEL_OK, "%s", err.message);
    CHECK_EQ_INT(reel_loader_get_num_failures(l), 0);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
    *n = len;
    *frames_out = frames;
    return out;
}

TEST(the_loader_over_a_raw_store_equals_the_loader_over_the_videos)
{
    pack_to(sc_tmp("loader_raw"), REEL_STORE_FORMAT_RAW, 1, 0, 2, 0, 1);
    size_t nv = 0, ns = 0;
    int64_t fv = 0, fs = 0;
    uint8_t *v = epoch_bytes(dataset(), &nv, &fv);
    uint8_t *s = epoch_bytes(sc_tmp("loader_raw"), &ns, &fs);
    CHECK_EQ_INT(fv, NV * 2 * 5);
    CHECK_EQ_INT(fs, fv);
    CHECK_MSG(nv == ns && memcmp(v, s, nv) == 0, "the store's batches differ from the videos' batches");
    free(v);
    free(s);
    /* and a jpeg store: the same frames, within the JPEG error */
    pack_to(sc_tmp("loader_jpeg"), REEL_STORE_FORMAT_JPEG, 1, 0, 2, 0, 1);
    uint8_t *j = epoch_bytes(sc_tmp("loader_jpeg"), &ns, &fs);
    CHECK_EQ_INT((int64_t)ns, (int64_t)nv);
    uint8_t *v2 = epoch_bytes(dataset(), &nv, &fv);
    double p = sc_psnr(j, v2, nv);
    CHECK_MSG(p >= 34.0, "jpeg store loader PSNR %.2f dB", p);
    free(j);
    free(v2);
}

TEST(a_video_that_cannot_be_packed_is_recorded_with_its_reason)
{
    char root[1200], path[1300];
    snprintf(root, sizeof root, "%s/withbad", harness_tmpdir());
    mkdir(root, 0755);
    snprintf(path, sizeof path, "%s/good.mp4", root);
    reel_synth_params p;
    tg_params(&p, path, "h264", VW, VH, 20, 10, 0);
    tg_synth(&p);
    snprintf(path, sizeof path, "%s/broken.mp4", root);
    tg_write_file(path, "this is not a video", 19);
    reel_pack_settings s;
    reel_pack_default_settings(&s);
    s.short_side = SS;
    reel_pack_report rep;
    CHECK_OK(reel_pack(root, sc_tmp("withbad.store"), &s, &rep, NULL));
    CHECK_EQ_INT(rep.failed, 1);
    CHECK_EQ_INT(rep.packed, 1);
    reel_store *st = NULL;
    CHECK_OK(reel_store_open(&st, sc_tmp("withbad.store"), NULL));
    reel_store_record rec;
    CHECK_OK(reel_store_get_record(st, 0, &rec, NULL));
    CHECK(strstr(rec.source_path, "broken.mp4") != NULL);
    CHECK_EQ_INT(rec.status, REEL_E_NOT_VIDEO);
    CHECK(strstr(rec.reason, "broken.mp4") != NULL);
    reel_store_reader *r = NULL;
    CHECK_OK(reel_store_reader_create(&r, st, NULL, NULL));
    int64_t zero = 0;
    reel_error err;
    reel_error_clear(&err);
    CHECK_STATUS(reel_store_reader_read(r, 0, &zero, 0, one_fn, NULL, NULL, &err), REEL_E_NOT_VIDEO);
    CHECK(strstr(err.message, "not in the store") != NULL);
    reel_store_reader_destroy(&r);
    reel_store_close(&st);
}

/* Real videos by others (../shared/videos): a JPEG store at quality 90 is
 * within 38 dB PSNR of the video path, frame by frame. */
TEST(jpeg_store_of_real_videos_is_within_38_db)
{
    const char *shared = harness_env("REEL_SHARED_VIDEOS", NULL);
    char dir[1200];
    if (shared)
        snprintf(dir, sizeof dir, "%s", shared);
    else
        snprintf(dir, sizeof dir, "%s/../../../shared/videos", harness_tmpdir());
    static const char *const files[] = { "carphone_pristine.mp4", "nasa_13013.mp4", "karma.mp4", "fire2.mp4" };
    char manifest[1300], line[2600];
    snprintf(manifest, sizeof manifest, "%s/real.csv", harness_tmpdir());
    FILE *f = fopen(manifest, "w");
    CHECK(f != NULL);
    fprintf(f, "path,label\n");
    int found = 0;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(line, sizeof line, "%s/%s", dir, files[i]);
        if (!tg_file_exists(line)) continue;
        fprintf(f, "%s,%zu\n", line, i);
        found++;
    }
    fclose(f);
    if (!found) harness_skip_needed("shared videos not found (set REEL_SHARED_VIDEOS)");
    reel_pack_settings s;
    reel_pack_default_settings(&s);
    s.short_side = 224;
    s.every = 15;
    reel_error err;
    reel_error_clear(&err);
    CHECK_MSG(reel_pack(manifest, sc_tmp("real"), &s, NULL, &err) == REEL_OK, "%s", err.message);
    reel_store *st = NULL;
    CHECK_OK(reel_store_open(&st, sc_tmp("real"), NULL));
    double worst = 99;
    for (int64_t i = 0; i < found; i++) {
        reel_store_record rec;
        int64_t *pts = NULL;
        uint8_t *got = sc_read_record(st, i, &rec, &pts);
        CHECK_EQ_INT(rec.status, REEL_OK);
        size_t n = (size_t)rec.num_frames, fb = (size_t)rec.width * rec.height * 3;
        int64_t *idx = malloc(n * 8);
        for (size_t j = 0; j < n; j++) CHECK_OK(reel_store_get_source_index(st, i, (int64_t)j, &idx[j], NULL));
        uint8_t *want = video_frames(rec.source_path, idx, n, rec.width, rec.height);
        for (size_t j = 0; j < n; j++) {
            double p = sc_psnr(got + j * fb, want + j * fb, fb);
            if (p < worst) worst = p;
            CHECK_MSG(p >= 38.0, "%s frame %lld: PSNR %.2f dB < 38", rec.source_path, (long long)idx[j], p);
        }
        free(idx);
        free(want);
        free(got);
        free(pts);
    }
    printf("      worst PSNR over %d real videos: %.2f dB\n", found, worst);
    reel_store_close(&st);
}

/* A manifest's segments: only the frames whose time lies in [start, end)
 * are stored (the loader's definition of a segment), with their source
 * indices; --every steps from the segment's first frame; a segment with no
 * frame is a named failure of its record. */
TEST(a_manifests_segments_are_stored_and_nothing_else)
{
    const char *root = dataset();
    char manifest[1200];
    snprintf(manifest, sizeof manifest, "%s/segments.csv", harness_tmpdir());
    static const double seg[3][2] = { { 0.5, 1.0 }, { 0.2, -1 }, { 5.0, 6.0 } };
    static const char *const vids[3] = { "archery/v0.mp4", "bowling/v1.mp4", "archery/v2.mp4" };
    FILE *f = fopen(manifest, "w");
    CHECK(f != NULL);
    fprintf(f, "path,label,start,end\n");
    for (int i = 0; i < 3; i++) fprintf(f, "%s/%s,%d,%g,%g\n", root, vids[i], i, seg[i][0], seg[i][1]);
    fclose(f);
    for (int every = 1; every <= 2; every++) {
        reel_pack_settings s;
        reel_pack_default_settings(&s);
        s.format = REEL_STORE_FORMAT_RAW;
        s.short_side = SS;
        s.every = every;
        const char *dir = sc_tmp(every == 1 ? "segments1" : "segments2");
        reel_pack_report rep = sc_pack(manifest, dir, &s);
        CHECK_EQ_INT(rep.failed, 1);
        reel_store *st = NULL;
        CHECK_OK(reel_store_open(&st, dir, NULL));
        for (int i = 0; i < 3; i++) {
            reel_store_record rec;
            CHECK_OK(reel_store_get_record(st, i, &rec, NULL));
            if (i == 2) { /* past the video's end */
                CHECK_EQ_INT(rec.status, REEL_E_OUT_OF_RANGE);
                CHECK_MSG(strstr(rec.reason, "v2.mp4") != NULL, "%s", rec.reason);
                continue;
            }
            /* the frames of the source whose time is in [start, end), every K-th from the first */
            reel_decoder *dec = tg_open(rec.source_path, NULL);
            const reel_video_info *info = reel_decoder_get_info(dec);
            int64_t n = 0;
            const reel_frame_entry *tab = reel_decoder_get_frame_table(dec, &n);
            const double tb = (double)info->time_base_num / info->time_base_den;
            int64_t want[64], nw = 0, first = -1;
            for (int64_t k = 0; k < n; k++) {
                double t = (double)tab[k].pts * tb;
                if (t < seg[i][0] - 1e-9 || (seg[i][1] >= 0 && t >= seg[i][1] - 1e-9)) continue;
                if (first < 0) first = k;
                if ((k - first) % every == 0 && nw < 64) want[nw++] = k;
            }
            reel_decoder_close(&dec);
            CHECK(nw > 0 && first > 0);
            CHECK_EQ_INT(rec.num_frames, nw);
            uint8_t *got = sc_read_record(st, i, &rec, NULL);
            for (int64_t j = 0; j < nw; j++) {
                int64_t si = -1;
                CHECK_OK(reel_store_get_source_index(st, i, j, &si, NULL));
                CHECK_EQ_INT(si, want[j]);
                CHECK_EQ_INT(tg_read_idx(got + (size_t)j * SW * SH * 3, SW, SH), want[j]);
            }
            free(got);
        }
        reel_store_close(&st);
    }
}
