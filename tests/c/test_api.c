/* test_api.c: the public API's contracts beyond decoding itself: opening
 * from memory and from callbacks, strings and versions, the remote pool's
 * edges, index_at_time edges, the allocating call, the visitor, the
 * converter with explicit strides, the interrupt, deprecated names. The
 * sidecar index: test_sidecar.c. */
#include "testgen.h"

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>

#include "test_api_common.h"

/* ---------------------------------------------------------------- room to grow (common.h) */

/* `reserved` ends the struct: nothing but padding after it. */
#define ENDS_WITH_RESERVED(T)                                                                    \
    _Static_assert(offsetof(T, reserved) + sizeof(((T *)0)->reserved) + _Alignof(T) > sizeof(T), \
                   #T ": reserved must be its last field")
ENDS_WITH_RESERVED(reel_pixel_settings);
ENDS_WITH_RESERVED(reel_transform);
ENDS_WITH_RESERVED(reel_size_policy);
ENDS_WITH_RESERVED(reel_sample);
ENDS_WITH_RESERVED(reel_decoder_settings);
ENDS_WITH_RESERVED(reel_audio_settings);
ENDS_WITH_RESERVED(reel_audio_info);
ENDS_WITH_RESERVED(reel_audio_window);
ENDS_WITH_RESERVED(reel_audio_stats);
ENDS_WITH_RESERVED(reel_video_info);
ENDS_WITH_RESERVED(reel_decode_stats);
ENDS_WITH_RESERVED(reel_near_settings);
ENDS_WITH_RESERVED(reel_near_job);
ENDS_WITH_RESERVED(reel_io);
ENDS_WITH_RESERVED(reel_remote_settings);
ENDS_WITH_RESERVED(reel_remote_stats);
ENDS_WITH_RESERVED(reel_clip_transform);
ENDS_WITH_RESERVED(reel_failure);
ENDS_WITH_RESERVED(reel_clip_info);
ENDS_WITH_RESERVED(reel_loader_settings);
ENDS_WITH_RESERVED(reel_loader_audio);
ENDS_WITH_RESERVED(reel_loader_checkpoint);
ENDS_WITH_RESERVED(reel_stage_metrics);
ENDS_WITH_RESERVED(reel_loader_metrics);
ENDS_WITH_RESERVED(reel_order_settings);
ENDS_WITH_RESERVED(reel_stripe);
ENDS_WITH_RESERVED(reel_stripe_batch);
ENDS_WITH_RESERVED(reel_sampler_settings);
ENDS_WITH_RESERVED(reel_sampler_video);
ENDS_WITH_RESERVED(reel_sampler_result);
ENDS_WITH_RESERVED(reel_pack_settings);
ENDS_WITH_RESERVED(reel_pack_report);
ENDS_WITH_RESERVED(reel_store_verify_report);
ENDS_WITH_RESERVED(reel_store_info);
ENDS_WITH_RESERVED(reel_store_record);
ENDS_WITH_RESERVED(reel_store_reader_settings);
ENDS_WITH_RESERVED(reel_store_read_stats);

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}
#define RESERVED_ZERO(x) all_zero((x).reserved, sizeof(x).reserved)

/* Outputs come back with `reserved` zero, whatever the caller's memory held. */
TEST(outputs_clear_their_reserved_bytes)
{
    const char *path = video("api.mp4", "h264", 2);
    reel_decoder *dec = tg_open(path, NULL);
    CHECK(RESERVED_ZERO(*reel_decoder_get_info(dec)));
    reel_remote_stats rs;
    memset(&rs, 0xA5, sizeof rs);
    CHECK_OK(reel_decoder_get_remote_stats(dec, &rs, NULL));
    CHECK(RESERVED_ZERO(rs));
    reel_decode_stats ds;
    memset(&ds, 0xA5, sizeof ds);
    int64_t idx[2] = { 0, 3 };
    size_t fb = 0;
    int w, h;
    reel_error err;
    CHECK_OK(reel_decoder_get_output_size(dec, NULL, &w, &h, &fb, &err));
    uint8_t *buf = malloc(2 * fb);
    CHECK_OK(reel_decoder_get_frames(dec, idx, 2, NULL, buf, 2 * fb, &ds, &err));
    CHECK(RESERVED_ZERO(ds));
    free(buf);
    reel_sampler_settings ss;
    reel_sampler_default_settings(&ss);
    reel_sampler_video sv = { 0 };
    sv.table = reel_decoder_get_frame_table(dec, &sv.num_frames);
    sv.time_base_num = reel_decoder_get_info(dec)->time_base_num;
    sv.time_base_den = reel_decoder_get_info(dec)->time_base_den;
    sv.segment_end = -1;
    reel_sampler_result sr;
    memset(&sr, 0xA5, sizeof sr);
    CHECK_OK(reel_sampler_describe(&ss, &sv, &sr, &err));
    CHECK(RESERVED_ZERO(sr));
    reel_decoder_close(&dec);

    reel_dataset *d = NULL;
    CHECK_OK(reel_dataset_create(&d, &err));
    CHECK_OK(reel_dataset_add(d, path, 1, 0, -1, &err));
    reel_sample smp;
    memset(&smp, 0xA5, sizeof smp);
    CHECK_OK(reel_dataset_get(d, 0, &smp, &err));
    CHECK(RESERVED_ZERO(smp));
    reel_dataset_destroy(&d);

    reel_stripe st = reel_stripe_make(10, 4);
    CHECK(RESERVED_ZERO(st));
    reel_stripe_batch sb;
    memset(&sb, 0xA5, sizeof sb);
    CHECK_OK(reel_stripe_get_batch(&st, 0, &sb, &err));
    CHECK(RESERVED_ZERO(sb));
    reel_order_settings os;
    memset(&os, 0xA5, sizeof os);
    reel_order_default_settings(&os);
    CHECK(RESERVED_ZERO(os));
    reel_pixel_settings ps;
    memset(&ps, 0xA5, sizeof ps);
    reel_pixel_default_settings(&ps);
    CHECK(RESERVED_ZERO(ps));
    reel_near_settings ns;
    memset(&ns, 0xA5, sizeof ns);
    reel_near_default_settings(&ns);
    CHECK(RESERVED_ZERO(ns));
}

/* The pixel settings are one struct with one set of defaults: a frame's
 * transform and a loader clip's embed the same values, rotation honoured. */
TEST(transforms_share_the_pixel_defaults)
{
    reel_pixel_settings ps;
    memset(&ps, 0xA5, sizeof ps);
    reel_pixel_default_settings(&ps);
    CHECK_EQ_INT(ps.filter, REEL_FILTER_BILINEAR);
    CHECK_EQ_INT(ps.convert_path, REEL_CONVERT_PATH_FUSED);
    CHECK_EQ_INT(ps.apply_rotation, 1);
    CHECK_EQ_INT(ps.dtype, REEL_DTYPE_UINT8);
    CHECK(ps.divisor == 255.0f);
    for (int c = 0; c < 3; c++) CHECK(ps.mean[c] == 0.0f && ps.std[c] == 1.0f);
    reel_transform t;
    memset(&t, 0x5A, sizeof t);
    reel_transform_default_settings(&t);
    reel_loader_settings ls;
    memset(&ls, 0x5A, sizeof ls);
    reel_loader_default_settings(&ls);
    CHECK(!memcmp(&t.pixels, &ps, sizeof ps));
    CHECK(!memcmp(&ls.transform.pixels, &ps, sizeof ps));
}

/* ---------------------------------------------------------------- memory and callbacks */

TEST(open_memory_matches_path)
{
    static const char *names[] = { "api.mp4", "api.mkv", "api.avi" };
    for (int k = 0; k < 3; k++) {
        const char *path = video(names[k], "h264", k == 2 ? 0 : 2);
        size_t size;
        uint8_t *data = tg_read_file(path, &size);
        reel_decoder *fdec = tg_open(path, NULL), *mdec = NULL;
        reel_error err;
        CHECK_OK(reel_decoder_open_memory(&mdec, data, size, "memory-video", NULL, &err));
        CHECK_EQ_STR(reel_decoder_get_name(mdec), "memory-video");
        CHECK_EQ_INT(reel_decoder_get_info(mdec)->file_size, (int64_t)size);
        check_same_table(fdec, mdec);
        check_same_frames(fdec, mdec);
        reel_decoder_close(&mdec);
        /* name NULL is fine */
        CHECK_OK(reel_decoder_open_memory(&mdec, data, size, NULL, NULL, &err));
        CHECK(reel_decoder_get_name(mdec) != NULL);
        reel_decoder_close(&mdec);
        reel_decoder_close(&fdec);
        free(data);
    }
    /* a bad buffer names the caller's name */
    uint8_t junk[4096];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)(i * 37 + 11);
    reel_decoder *dec = NULL;
    reel_error err;
    CHECK_STATUS(reel_decoder_open_memory(&dec, junk, sizeof junk, "junk-buffer", NULL, &err), REEL_E_NOT_VIDEO);
    CHECK(dec == NULL);
    TG_CHECK_MSG_HAS(err, "junk-buffer");
    CHECK_STATUS(reel_decoder_open_memory(&dec, junk, 0, "zero-buffer", NULL, &err), REEL_E_NOT_VIDEO);
    TG_CHECK_MSG_HAS(err, "zero-buffer");
    /* memory decoders have no sidecar */
    const char *path = video("api.mp4", "h264", 2);
    size_t size;
    uint8_t *data = tg_read_file(path, &size);
    CHECK_OK(reel_decoder_open_memory(&dec, data, size, "m", NULL, &err));
    char side[4096];
    tg_path(side, sizeof side, "memory.reelidx");
    CHECK_STATUS(reel_decoder_save_index(dec, side, &err), REEL_E_INVALID_ARG);
    CHECK(!tg_file_exists(side));
    reel_decoder_close(&dec);
    free(data);
}

typedef struct file_io {
    FILE *fp;
    int64_t size;
    int report_size; /* 0: REEL_SEEK_SIZE answers -1 (unknown) */
    int size_calls, seek_calls, read_calls;
} file_io;

static int fio_read(void *opaque, uint8_t *buf, int size)
{
    file_io *f = opaque;
    f->read_calls++;
    size_t r = fread(buf, 1, (size_t)size, f->fp);
    if (r == 0 && ferror(f->fp)) return -1;
    return (int)r;
}

static int64_t fio_seek(void *opaque, int64_t offset, int whence)
{
    file_io *f = opaque;
    if (whence == REEL_SEEK_SIZE) {
        f->size_calls++;
        return f->report_size ? f->size : -1;
    }
    f->seek_calls++;
    if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return -1;
    if (fseeko(f->fp, (off_t)offset, whence) != 0) return -1;
    return (int64_t)ftello(f->fp);
}

TEST(open_io_matches_path)
{
    static const char *names[] = { "api.mp4", "api.mkv", "api.avi" };
    for (int k = 0; k < 3; k++) {
        const char *path = video(names[k], "h264", k == 2 ? 0 : 2);
        for (int report = 1; report >= 0; report--) {
            file_io f = { fopen(path, "rb"), tg_file_size(path), report, 0, 0, 0 };
            CHECK(f.fp != NULL);
            reel_io io = { .opaque = &f, .read = fio_read, .seek = fio_seek };
            reel_decoder *fdec = tg_open(path, NULL), *idec = NULL;
            reel_error err;
            reel_error_clear(&err);
            int r = reel_decoder_open_io(&idec, &io, "io-video", NULL, &err);
            CHECK_MSG(r == REEL_OK, "%s via callbacks (size %s): %d %s", names[k], report ? "known" : "unknown", r,
                      err.message);
            CHECK_EQ_STR(reel_decoder_get_name(idec), "io-video");
            if (report) {
                CHECK_MSG(f.size_calls >= 1, "REEL_SEEK_SIZE was never asked");
                CHECK_EQ_INT(reel_decoder_get_info(idec)->file_size, f.size);
            }
            CHECK(f.read_calls > 0);
            check_same_table(fdec, idec);
            check_same_frames(fdec, idec);
            CHECK_MSG(f.seek_calls > 0, "random access without a single seek callback?");
            reel_decoder_close(&idec);
            reel_decoder_close(&fdec);
            fclose(f.fp);
        }
    }
}

static int64_t fio_seek_fails(void *opaque, int64_t offset, int whence)
{
    (void)opaque;
    (void)offset;
    (void)whence;
    return -1;
}

TEST(open_io_requires_seek_and_read)
{
    const char *path = video("api.mp4", "h264", 2);
    file_io f = { fopen(path, "rb"), tg_file_size(path), 1, 0, 0, 0 };
    CHECK(f.fp != NULL);
    reel_decoder *dec = NULL;
    reel_error err;
    reel_io no_seek = { .opaque = &f, .read = fio_read, .seek = NULL };
    CHECK_STATUS(reel_decoder_open_io(&dec, &no_seek, "no-seek", NULL, &err), REEL_E_INVALID_ARG);
    CHECK(dec == NULL);
    TG_CHECK_MSG_HAS(err, "no-seek");
    reel_io no_read = { .opaque = &f, .read = NULL, .seek = fio_seek };
    CHECK_STATUS(reel_decoder_open_io(&dec, &no_read, "no-read", NULL, &err), REEL_E_INVALID_ARG);
    CHECK(dec == NULL);
    TG_CHECK_MSG_HAS(err, "no-read");
    /* a seek callback that always fails: opening an mp4 with moov at the end
     * needs seeking; whatever happens it is a reel status and no crash */
    reel_io bad_seek = { .opaque = &f, .read = fio_read, .seek = fio_seek_fails };
    rewind(f.fp);
    int r = reel_decoder_open_io(&dec, &bad_seek, "bad-seek", NULL, &err);
    CHECK(tg_is_reel_status(r));
    if (r == REEL_OK) {
        int64_t i = 40;
        uint8_t *b = malloc(W * H * 3);
        r = reel_decoder_get_frames(dec, &i, 1, NULL, b, W * H * 3, NULL, &err);
        CHECK(tg_is_reel_status(r));
        if (r == REEL_OK) CHECK_EQ_INT(tg_read_idx(b, W, H), 40);
        free(b);
        reel_decoder_close(&dec);
    } else {
        TG_CHECK_MSG_HAS(err, "bad-seek");
    }
    fclose(f.fp);
}

/* ---------------------------------------------------------------- strings and versions */

TEST(strerror_and_version)
{
    const char *seen[1 - REEL_E_LAST];
    for (int s = 0; s >= REEL_E_LAST; s--) {
        const char *m = reel_strerror(s);
        CHECK_MSG(m && *m, "reel_strerror(%d) is empty", s);
        CHECK_MSG(strcmp(m, "unknown error") != 0, "reel_strerror(%d) is \"unknown error\"", s);
        for (int t = 0; t < -s; t++)
            CHECK_MSG(strcmp(seen[t], m) != 0, "reel_strerror(%d) == reel_strerror(%d) == \"%s\"", s, -t, m);
        seen[-s] = m;
    }
    const int others[] = { 1, 2, REEL_E_LAST - 1, REEL_E_LAST - 2, 100, -1000, INT_MAX, INT_MIN };
    for (size_t k = 0; k < sizeof others / sizeof others[0]; k++)
        CHECK_EQ_STR(reel_strerror(others[k]), "unknown error");
    const char *v = reel_version();
    CHECK(v && *v);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", REEL_VERSION_MAJOR, REEL_VERSION_MINOR, REEL_VERSION_PATCH);
    CHECK_EQ_STR(v, want);
    CHECK_EQ_INT((int)reel_version_api(), REEL_API_VERSION);
    CHECK_EQ_INT(REEL_API_VERSION_MAJOR_OF(reel_version_api()), REEL_API_VERSION_MAJOR);
    CHECK_EQ_INT(REEL_API_VERSION_MINOR_OF(reel_version_api()), REEL_API_VERSION_MINOR);
    CHECK_EQ_INT(REEL_API_VERSION_PATCH_OF(reel_version_api()), REEL_API_VERSION_PATCH);
    const char *fv = reel_ffmpeg_versions();
    CHECK(fv && tg_contains(fv, "libavcodec") && tg_contains(fv, "libavformat"));
    reel_error e;
    e.status = -3;
    strcpy(e.message, "x");
    reel_error_clear(&e);
    CHECK_EQ_INT(e.status, REEL_OK);
    CHECK_EQ_STR(e.message, "");
}

TEST(remote_pool_and_prefetch_api_edges)
{
    reel_error err;
    CHECK_STATUS(reel_remote_pool_create(NULL, 0, &err), REEL_E_INVALID_ARG);
    reel_remote_pool *pool = NULL;
    CHECK_OK(reel_remote_pool_create(&pool, 0, &err));
    CHECK(pool != NULL);
    CHECK_EQ_INT(reel_remote_pool_get_peak_bytes(pool), 0);
    CHECK_EQ_INT(reel_remote_pool_get_peak_bytes(NULL), 0);
    /* a local video ignores the pool; prefetch has nothing to do */
    reel_remote_settings rs;
    reel_remote_default_settings(&rs);
    CHECK_EQ_INT((int64_t)rs.max_bytes_in_flight, (int64_t)256 << 20);
    CHECK(rs.pool == NULL);
    rs.pool = pool;
    reel_decoder_settings ds;
    reel_decoder_default_settings(&ds);
    ds.remote = &rs;
    reel_decoder *d = NULL;
    CHECK_OK(reel_decoder_open(&d, video("api_pool.mp4", "h264", 0), &ds, &err));
    const int64_t idx[] = { 0, 5, -1 };
    CHECK_OK(reel_decoder_prefetch(d, idx, 3, &err));
    CHECK_OK(reel_decoder_prefetch(d, NULL, 0, &err));
    CHECK_STATUS(reel_decoder_prefetch(d, NULL, 2, &err), REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_decoder_prefetch(NULL, idx, 3, &err), REEL_E_INVALID_ARG);
    reel_decoder_close(&d);
    reel_remote_pool_destroy(&pool);
    CHECK(pool == NULL);
    reel_remote_pool_destroy(&pool);
    reel_remote_pool_destroy(NULL);
    /* every cause has its own name */
    for (int c = 0; c < REEL_REMOTE_CAUSE_COUNT; c++) {
        CHECK(strcmp(reel_remote_cause_name((reel_remote_cause)c), "unknown") != 0);
        for (int o = 0; o < c; o++)
            CHECK(strcmp(reel_remote_cause_name((reel_remote_cause)c), reel_remote_cause_name((reel_remote_cause)o)));
    }
    CHECK_EQ_STR(reel_remote_cause_name(REEL_REMOTE_CAUSE_COUNT), "unknown");
    /* request quantiles: a bucket's middle; 0 with no requests; q outside 0..1 refused */
    reel_remote_stats st;
    memset(&st, 0, sizeof st);
    double sec = -1;
    CHECK_OK(reel_remote_stats_get_quantile(&st, 0.5, &sec, &err));
    CHECK(sec == 0);
    st.requests = 4;
    st.latency[4] = 2;
    st.latency[8] = 2;
    const double b4 = pow(2.0, 4.5 / 4.0) / 1e6, b8 = pow(2.0, 8.5 / 4.0) / 1e6;
    const double qs[] = { 0, 0.5, 0.99, 1 }, want[] = { b4, b4, b8, b8 };
    for (int i = 0; i < 4; i++) {
        CHECK_OK(reel_remote_stats_get_quantile(&st, qs[i], &sec, &err));
        CHECK_NEAR(sec, want[i], 1e-12);
    }
    const double bad[] = { -0.1, 1.5, NAN };
    for (int i = 0; i < 3; i++) {
        sec = -1;
        CHECK_STATUS(reel_remote_stats_get_quantile(&st, bad[i], &sec, &err), REEL_E_INVALID_ARG);
        CHECK_MSG(strstr(err.message, "quantile") && strstr(err.message, "0..1"), "%s", err.message);
        CHECK(sec == -1);
    }
}

/* ---------------------------------------------------------------- index_at_time */

static int64_t at_time(reel_decoder *d, double t, int *status)
{
    int64_t ix = -99;
    reel_error err;
    *status = reel_decoder_get_index_at_time(d, t, &ix, &err);
    return ix;
}

TEST(index_at_time_edges)
{
    char path[4096];
    reel_synth_params p;
    tg_path(path, sizeof path, "times_start.mp4");
    tg_params(&p, path, "h264", W, H, N, 16, 2);
    p.start_time = 1.5;
    tg_synth(&p);
    static const char *files[2];
    files[0] = video("api.mp4", "h264", 2);
    files[1] = path;
    for (int k = 0; k < 2; k++) {
        reel_decoder *d = tg_open(files[k], NULL);
        const reel_video_info *in = reel_decoder_get_info(d);
        int64_t n = 0;
        const reel_frame_entry *ft = reel_decoder_get_frame_table(d, &n);
        double tb = (double)in->time_base_num / in->time_base_den;
        double start = (double)ft[0].pts * tb;
        double end = (double)(ft[n - 1].pts + ft[n - 1].duration) * tb;
        CHECK_NEAR(start, k ? 1.5 : 0.0, 1e-9);
        int st;
        /* the very start and just before it */
        CHECK_EQ_INT(at_time(d, start, &st), 0);
        CHECK_OK(st);
        at_time(d, start - 0.001, &st);
        CHECK_STATUS(st, REEL_E_OUT_OF_RANGE);
        at_time(d, -1.0, &st);
        CHECK_STATUS(st, REEL_E_OUT_OF_RANGE);
        if (k) {
            at_time(d, 0.0, &st);
            CHECK_STATUS(st, REEL_E_OUT_OF_RANGE);
        }
        /* every frame boundary: exactly at pts -> that frame; a tick before -> the previous */
        for (int64_t i = 0; i < n; i++) {
            double t = (double)ft[i].pts * tb;
            CHECK_EQ_INT(at_time(d, t, &st), i);
            CHECK_OK(st);
            double before = (double)(ft[i].pts - 1) * tb;
            if (i > 0) {
                CHECK_EQ_INT(at_time(d, before, &st), i - 1);
                CHECK_OK(st);
            }
            double last_inside = (double)(ft[i].pts + ft[i].duration - 1) * tb;
            CHECK_EQ_INT(at_time(d, last_inside, &st), i);
        }
        /* the end: the last frame until end, out of range from end on */
        CHECK_EQ_INT(at_time(d, end - 0.5 * (double)ft[n - 1].duration * tb, &st), n - 1);
        CHECK_OK(st);
        at_time(d, end, &st);
        CHECK_STATUS(st, REEL_E_OUT_OF_RANGE);
        at_time(d, end + 1.0, &st);
        CHECK_STATUS(st, REEL_E_OUT_OF_RANGE);
        at_time(d, 1e300, &st);
        CHECK_STATUS(st, REEL_E_OUT_OF_RANGE);
        at_time(d, -1e300, &st);
        CHECK_STATUS(st, REEL_E_OUT_OF_RANGE);
        at_time(d, NAN, &st);
        CHECK_STATUS(st, REEL_E_OUT_OF_RANGE);
        at_time(d, INFINITY, &st);
        CHECK_STATUS(st, REEL_E_OUT_OF_RANGE);
        /* an out-of-range time leaves *index alone */
        int64_t ix = 1234;
        reel_error err;
        CHECK_STATUS(reel_decoder_get_index_at_time(d, end + 5, &ix, &err), REEL_E_OUT_OF_RANGE);
        CHECK_EQ_INT(ix, 1234);
        TG_CHECK_MSG_HAS(err, files[k]);
        /* nominal 25 fps: t = start + i/25 (computed the way a user would) is frame i */
        for (int64_t i = 0; i < n; i++) {
            double t = start + (double)i / 25.0;
            CHECK_EQ_INT(at_time(d, t, &st), i);
            CHECK_EQ_INT(at_time(d, t + 0.0399, &st), i);
        }
        reel_decoder_close(&d);
    }
}

/* ---------------------------------------------------------------- get_frames_alloc */

TEST(get_frames_alloc_matches_get_frames)
{
    reel_decoder *d = tg_open(video("api.mp4", "h264", 2), NULL);
    reel_transform ts[3];
    for (int k = 0; k < 3; k++) reel_transform_default_settings(&ts[k]);
    ts[1].pixels.dtype = REEL_DTYPE_FLOAT32;
    ts[1].layout = REEL_LAYOUT_CHW;
    ts[2].width = 64;
    ts[2].height = 48;
    ts[2].pixels.dtype = REEL_DTYPE_BFLOAT16;
    for (int k = 0; k < 3; k++) {
        void *out = NULL;
        size_t out_size = 0;
        reel_decode_stats st;
        reel_error err;
        CHECK_OK(reel_decoder_get_frames_alloc(d, k_req, K_REQ_N, &ts[k], &out, &out_size, &st, &err));
        size_t fb = tg_frame_bytes(d, &ts[k], NULL, NULL);
        CHECK_EQ_INT(out_size, fb * K_REQ_N);
        CHECK(out != NULL);
        uint8_t *ref = tg_get(d, k_req, K_REQ_N, &ts[k], NULL);
        CHECK_MSG(memcmp(out, ref, out_size) == 0, "transform %d: get_frames_alloc bytes differ from get_frames", k);
        CHECK_EQ_INT(st.frames_requested, (int64_t)K_REQ_N);
        free(ref);
        reel_free(out);
    }
    /* NULL transform and NULL out_size are fine */
    void *out = NULL;
    reel_error err;
    CHECK_OK(reel_decoder_get_frames_alloc(d, k_req, 2, NULL, &out, NULL, NULL, &err));
    CHECK_EQ_INT(tg_read_idx(out, W, H), 0);
    CHECK_EQ_INT(tg_read_idx((uint8_t *)out + W * H * 3, W, H), N - 1);
    reel_free(out);
    /* n == 0 */
    out = (void *)1;
    size_t out_size = 77;
    CHECK_OK(reel_decoder_get_frames_alloc(d, k_req, 0, NULL, &out, &out_size, NULL, &err));
    CHECK_EQ_INT(out_size, 0);
    reel_free(out);
    /* failure: *out NULL */
    int64_t bad = N;
    out = (void *)1;
    CHECK_STATUS(reel_decoder_get_frames_alloc(d, &bad, 1, NULL, &out, &out_size, NULL, &err), REEL_E_OUT_OF_RANGE);
    CHECK(out == NULL);
    CHECK_EQ_INT(out_size, 0);
    reel_decoder_close(&d);
}

/* ---------------------------------------------------------------- the visitor */

typedef struct visit_log {
    reel_decoder *dec;
    const int64_t *req;
    size_t n;
    int64_t num_frames;
    int *visits; /* per request position */
    size_t calls, stop_after;
    int stop_with;
    int bad;
    char why[256];
} visit_log;

static int visitor(void *opaque, const reel_frame *f, size_t pos)
{
    visit_log *v = opaque;
    v->calls++;
    if (pos >= v->n) {
        if (!v->bad++) snprintf(v->why, sizeof v->why, "position %zu out of range", pos);
        return 0;
    }
    v->visits[pos]++;
    int64_t want = v->req[pos] < 0 ? v->req[pos] + v->num_frames : v->req[pos];
    int64_t n = 0;
    const reel_frame_entry *ft = reel_decoder_get_frame_table(v->dec, &n);
    int fw = 0, fh = 0;
    reel_frame_get_size(f, &fw, &fh, NULL);
    if (reel_frame_get_index(f) != want || reel_frame_get_pts(f) != ft[want].pts || fw != W || fh != H) {
        if (!v->bad++)
            snprintf(v->why, sizeof v->why, "position %zu: frame index %lld pts %lld size %dx%d, want %lld pts %lld",
                     pos, (long long)reel_frame_get_index(f), (long long)reel_frame_get_pts(f), fw, fh, (long long)want,
                     (long long)ft[want].pts);
    }
    if (v->stop_after && v->calls >= v->stop_after) return v->stop_with;
    return 0;
}

TEST(decode_visitor_positions_and_stop)
{
    reel_decoder *d = tg_open(video("api.mp4", "h264", 2), NULL);
    int visits[K_REQ_N];
    visit_log v;
    reel_decode_stats st;
    reel_error err;

    /* every position exactly once, with the right frame */
    memset(&v, 0, sizeof v);
    memset(visits, 0, sizeof visits);
    v.dec = d;
    v.req = k_req;
    v.n = K_REQ_N;
    v.num_frames = N;
    v.visits = visits;
    CHECK_OK(reel_decoder_decode(d, k_req, K_REQ_N, visitor, &v, &st, &err));
    CHECK_MSG(!v.bad, "%s", v.why);
    for (size_t i = 0; i < K_REQ_N; i++) CHECK_MSG(visits[i] == 1, "position %zu visited %d times", i, visits[i]);
    CHECK_EQ_INT(v.calls, K_REQ_N);
    CHECK_EQ_INT(st.frames_requested, (int64_t)K_REQ_N);

    /* a visitor returning a status stops the call with it, at once */
    const int stops[] = { REEL_E_TIMEOUT, REEL_E_CANCELLED, -1 };
    for (size_t k = 0; k < sizeof stops / sizeof stops[0]; k++) {
        for (size_t after = 1; after <= 5; after += 4) {
            memset(&v, 0, sizeof v);
            memset(visits, 0, sizeof visits);
            v.dec = d;
            v.req = k_req;
            v.n = K_REQ_N;
            v.num_frames = N;
            v.visits = visits;
            v.stop_after = after;
            v.stop_with = stops[k];
            reel_error_clear(&err);
            int r = reel_decoder_decode(d, k_req, K_REQ_N, visitor, &v, &st, &err);
            CHECK_MSG(r == stops[k], "visitor returned %d after %zu calls; decode returned %d (%s)", stops[k], after, r,
                      reel_strerror(r));
            CHECK_EQ_INT(err.status, stops[k]);
            CHECK_MSG(v.calls == after, "the visitor returned %d on call %zu but was called %zu times in all", stops[k],
                      after, v.calls);
            CHECK_MSG(!v.bad, "%s", v.why);
            /* the decoder still works for the next call */
            uint8_t *b = tg_get(d, k_req, K_REQ_N, NULL, NULL);
            for (size_t i = 0; i < K_REQ_N; i++)
                CHECK_EQ_INT(tg_read_idx(b + i * W * H * 3, W, H), k_req[i] < 0 ? k_req[i] + N : k_req[i]);
            free(b);
        }
    }
    /* an error record still holding an earlier failure gets the new one */
    memset(&v, 0, sizeof v);
    memset(visits, 0, sizeof visits);
    v.dec = d;
    v.req = k_req;
    v.n = K_REQ_N;
    v.num_frames = N;
    v.visits = visits;
    v.stop_after = 3;
    v.stop_with = REEL_E_TIMEOUT;
    {
        int64_t far = N + 5;
        uint8_t one[W * H * 3];
        CHECK_STATUS(reel_decoder_get_frames(d, &far, 1, NULL, one, sizeof one, NULL, &err), REEL_E_OUT_OF_RANGE);
        CHECK_STATUS(reel_decoder_decode(d, k_req, K_REQ_N, visitor, &v, &st, &err), REEL_E_TIMEOUT);
        CHECK_MSG(err.status == REEL_E_TIMEOUT,
                  "err.status %d after the visitor stopped the call with %d "
                  "(err held an earlier failure: \"%s\")",
                  err.status, REEL_E_TIMEOUT, err.message);
        CHECK_MSG(!tg_contains(err.message, "out of range"), "stale message kept: %s", err.message);
    }
    /* a positive return also stops the call (the header: "non-zero to stop the
     * call with that status"); the status comes back non-OK */
    memset(&v, 0, sizeof v);
    memset(visits, 0, sizeof visits);
    v.dec = d;
    v.req = k_req;
    v.n = K_REQ_N;
    v.num_frames = N;
    v.visits = visits;
    v.stop_after = 2;
    v.stop_with = 1;
    int r = reel_decoder_decode(d, k_req, K_REQ_N, visitor, &v, &st, &err);
    CHECK_MSG(r == 1 || r == REEL_E_CANCELLED, "visitor returned 1: decode returned %d", r);
    CHECK_EQ_INT(v.calls, 2);
    int64_t last = -1;
    uint8_t *b = tg_get(d, &last, 1, NULL, NULL);
    CHECK_EQ_INT(tg_read_idx(b, W, H), N - 1);
    free(b);
    reel_decoder_close(&d);
}

/* ---------------------------------------------------------------- converter strides */

typedef struct strided {
    reel_converter *conv;
    reel_transform t;
    uint8_t *base; /* element 0 of the [C,T,H,W] tensor */
    size_t elem;   /* bytes per element */
    int64_t T, Hh, Ww, pad;
    int status;
    char msg[REEL_ERROR_MSG_SIZE];
} strided;

static int write_strided(void *opaque, const reel_frame *f, size_t pos)
{
    strided *s = opaque;
    reel_error err;
    /* frame `pos` of the clip: offset t * H * (W + pad) elements */
    uint8_t *dst = s->base + (size_t)pos * (size_t)(s->Hh * (s->Ww + s->pad)) * s->elem;
    int r = reel_converter_run(s->conv, f, &s->t, dst, 0, &err);
    if (r != REEL_OK) {
        s->status = r;
        snprintf(s->msg, sizeof s->msg, "%s", err.message);
        return r;
    }
    return 0;
}

TEST(converter_explicit_strides_cthw)
{
    reel_decoder *d = tg_open(video("api.mp4", "h264", 2), NULL);
    const int64_t clip[] = { 10, 11, 12, 40, 0, 89 };
    const int64_t T = sizeof clip / sizeof clip[0];
    const int ow = 48, oh = 36, pad = 5;
    static const int dtypes[] = { REEL_DTYPE_UINT8, REEL_DTYPE_FLOAT32, REEL_DTYPE_FLOAT16 };
    for (int di = 0; di < 3; di++) {
        for (int flip = 0; flip <= 1; flip++) {
            strided s;
            reel_error err;
            memset(&s, 0, sizeof s);
            CHECK_OK(reel_converter_create(&s.conv, &err));
            reel_transform_default_settings(&s.t);
            s.t.width = ow;
            s.t.height = oh;
            s.t.pixels.dtype = dtypes[di];
            s.t.flip_horizontal = flip;
            s.t.pixels.mean[1] = 0.5f;
            s.t.pixels.std[2] = 0.25f;
            s.elem = dtypes[di] == REEL_DTYPE_UINT8 ? 1 : dtypes[di] == REEL_DTYPE_FLOAT32 ? 4 : 2;
            s.T = T;
            s.Hh = oh;
            s.Ww = ow;
            s.pad = pad;
            /* [C, T, H, W + pad]: rows padded, padding must stay untouched */
            const int64_t row = ow + pad, plane = (int64_t)oh * row;
            s.t.stride_x = 1;
            s.t.stride_y = row;
            s.t.stride_c = T * plane;
            size_t total = (size_t)(3 * T * plane) * s.elem;
            s.base = malloc(total);
            CHECK(s.base != NULL);
            memset(s.base, 0xCD, total);
            reel_decode_stats st;
            int r = reel_decoder_decode(d, clip, (size_t)T, write_strided, &s, &st, &err);
            CHECK_MSG(r == REEL_OK, "decode with strided converter: %d %s / %s", r, err.message, s.msg);

            /* reference: dense CHW from get_frames with the same transform */
            reel_transform chw = s.t;
            chw.stride_c = chw.stride_y = chw.stride_x = 0;
            chw.layout = REEL_LAYOUT_CHW;
            uint8_t *ref = tg_get(d, clip, (size_t)T, &chw, NULL);
            for (int64_t t = 0; t < T; t++)
                for (int c = 0; c < 3; c++)
                    for (int y = 0; y < oh; y++) {
                        const uint8_t *want = ref + (size_t)(((t * 3 + c) * oh + y) * ow) * s.elem;
                        const uint8_t *got = s.base + (size_t)(c * T * plane + t * plane + y * row) * s.elem;
                        CHECK_MSG(memcmp(want, got, (size_t)ow * s.elem) == 0,
                                  "dtype %d flip %d: [c=%d, t=%lld, y=%d] differs from the CHW output", dtypes[di],
                                  flip, c, (long long)t, y);
                        for (size_t b = (size_t)ow * s.elem; b < (size_t)row * s.elem; b++)
                            CHECK_MSG(got[b] == 0xCD, "dtype %d: padding byte %zu of [c=%d, t=%lld, y=%d] written",
                                      dtypes[di], b, c, (long long)t, y);
                    }
            /* and the uint8 clip still carries the indices (via an HWC copy) */
            if (dtypes[di] == REEL_DTYPE_UINT8 && !flip) {
                uint8_t *hwc = malloc((size_t)ow * oh * 3);
                for (int64_t t = 0; t < T; t++) {
                    for (int y = 0; y < oh; y++)
                        for (int x = 0; x < ow; x++)
                            for (int c = 0; c < 3; c++)
                                hwc[((size_t)y * ow + x) * 3 + c] = s.base[c * T * plane + t * plane + y * row + x];
                    CHECK_EQ_INT(tg_read_idx(hwc, ow, oh), clip[t]);
                }
                free(hwc);
            }
            free(ref);
            free(s.base);
            reel_converter_destroy(&s.conv);
        }
    }
    reel_decoder_close(&d);
}

/* The converter checks dst_size when the strides are derived. */
static int convert_small(void *opaque, const reel_frame *f, size_t pos)
{
    (void)pos;
    int *status = opaque;
    reel_converter *c = NULL;
    reel_error err;
    uint8_t small[64];
    if (reel_converter_create(&c, &err) != REEL_OK) return REEL_E_INTERNAL;
    status[0] = reel_converter_run(c, f, NULL, small, sizeof small, &err);
    reel_transform t;
    reel_transform_default_settings(&t);
    t.crop_x = 150;
    t.crop_w = 20;
    t.crop_h = 20;
    status[1] = reel_converter_run(c, f, &t, small, sizeof small, &err);
    reel_converter_destroy(&c);
    return 0;
}

TEST(converter_checks_dst_size_and_crop)
{
    reel_decoder *d = tg_open(video("api.mp4", "h264", 2), NULL);
    int status[2] = { 1, 1 };
    int64_t i = 5;
    reel_error err;
    CHECK_OK(reel_decoder_decode(d, &i, 1, convert_small, status, NULL, &err));
    CHECK_STATUS(status[0], REEL_E_BUFFER_TOO_SMALL);
    CHECK_STATUS(status[1], REEL_E_INVALID_ARG);
    reel_decoder_close(&d);
}

/* A frame-by-frame reader (one call per frame, in order) decodes every frame
 * exactly once and seeks once: the codec stays warm between calls and frames
 * it put out early are kept for the next call. B-frames, one long GOP, with
 * frame threads and without. Random access afterwards is still exact. */
TEST(frame_by_frame_calls_decode_each_frame_once)
{
    const char *cases[][2] = { { "seq.mp4", "h264" }, { "seq.mkv", "h264" }, { "seq_hevc.mp4", "hevc" } };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char path[4096];
        reel_synth_params p;
        tg_path(path, sizeof path, cases[c][0]);
        tg_params(&p, path, cases[c][1], 96, 64, 90, 250, 3);
        tg_synth(&p);
        for (int threads = 1; threads <= 3; threads += 2) {
            reel_decoder_settings s;
            reel_decoder_default_settings(&s);
            s.threads = threads;
            reel_decoder *dec = tg_open(path, &s);
            int64_t n = reel_decoder_get_info(dec)->num_frames;
            CHECK_EQ_INT(n, 90);
            size_t fb = 96 * 64 * 3;
            uint8_t *buf = malloc(fb);
            CHECK(buf != NULL);
            int64_t decoded = 0, seeks = 0;
            reel_error err;
            for (int64_t i = 0; i < n; i++) {
                reel_decode_stats st;
                CHECK_OK(reel_decoder_get_frames(dec, &i, 1, NULL, buf, fb, &st, &err));
                CHECK_EQ_INT(tg_read_idx(buf, 96, 64), i);
                decoded += st.frames_decoded;
                seeks += st.seeks;
            }
            CHECK_MSG(decoded == n && seeks == 1,
                      "%s, %d threads: %lld frames read one by one decoded %lld frames "
                      "with %lld seeks (want %lld and 1)",
                      path, threads, (long long)n, (long long)decoded, (long long)seeks, (long long)n);
            /* backwards and random after a warm run */
            int64_t back[] = { 40, 3, 89, 41, 0 };
            for (size_t k = 0; k < sizeof back / sizeof back[0]; k++) {
                CHECK_OK(reel_decoder_get_frames(dec, &back[k], 1, NULL, buf, fb, NULL, &err));
                CHECK_EQ_INT(tg_read_idx(buf, 96, 64), back[k]);
            }
            free(buf);
            reel_decoder_close(&dec);
        }
    }
}

/* ------------------------------------------------------------ interrupt */

typedef struct stopper {
    int64_t calls;      /* times the decoder polled */
    int64_t stop_after; /* answer "stop" from this many calls on; -1: never */
} stopper;

static int stopper_poll(void *opaque)
{
    stopper *s = opaque;
    int64_t n = s->calls++;
    return s->stop_after >= 0 && n >= s->stop_after;
}

TEST(interrupt_cancels_open_scan_and_decode_and_the_decoder_recovers)
{
    char path[4096];
    reel_synth_params p;
    tg_path(path, sizeof path, "interrupt.mkv"); /* matroska: the table comes from a packet scan */
    tg_params(&p, path, "h264", 96, 64, 120, 250, 2);
    tg_synth(&p);
    stopper sp = { 0, 0 };
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.threads = 2;
    s.interrupt = stopper_poll;
    s.interrupt_opaque = &sp;
    reel_decoder *dec = NULL;
    reel_error err;

    /* asked to stop before anything: the open fails at once, naming the file */
    CHECK_STATUS(reel_decoder_open(&dec, path, &s, &err), REEL_E_CANCELLED);
    CHECK(dec == NULL);
    TG_CHECK_MSG_HAS(err, path);
    TG_CHECK_MSG_HAS(err, "interrupted");

    /* a full open polls some number of times; stopping a few polls before the
     * end cuts the packet scan (or the probing before it) short */
    sp = (stopper){ 0, -1 };
    CHECK_OK(reel_decoder_open(&dec, path, &s, &err));
    int64_t open_polls = sp.calls;
    CHECK_MSG(open_polls > 120, "the scan of 120 packets polled only %lld times", (long long)open_polls);
    reel_decoder_close(&dec);
    sp = (stopper){ 0, open_polls - 5 };
    CHECK_STATUS(reel_decoder_open(&dec, path, &s, &err), REEL_E_CANCELLED);
    CHECK(dec == NULL);
    TG_CHECK_MSG_HAS(err, path);

    /* decoding: frame 100 lies 100 packets past the only keyframe */
    sp = (stopper){ 0, -1 };
    CHECK_OK(reel_decoder_open(&dec, path, &s, &err));
    size_t fb = 96 * 64 * 3;
    uint8_t *buf = malloc(2 * fb);
    CHECK(buf != NULL);
    int64_t want[] = { 100, 7 };
    sp = (stopper){ 0, 20 };
    CHECK_STATUS(reel_decoder_get_frames(dec, want, 2, NULL, buf, 2 * fb, NULL, &err), REEL_E_CANCELLED);
    TG_CHECK_MSG_HAS(err, path);
    CHECK_MSG(sp.calls < 40, "the decoder went on for %lld polls after being told to stop at 20", (long long)sp.calls);
    /* no longer told to stop: the same call succeeds, exactly */
    sp = (stopper){ 0, -1 };
    reel_decode_stats st;
    CHECK_OK(reel_decoder_get_frames(dec, want, 2, NULL, buf, 2 * fb, &st, &err));
    CHECK_EQ_INT(tg_read_idx(buf, 96, 64), 100);
    CHECK_EQ_INT(tg_read_idx(buf + fb, 96, 64), 7);
    reel_decoder_close(&dec);

    /* caller callbacks: the read callback is not even called once stopped */
    const char *mp4 = video("api.mp4", "h264", 2);
    file_io f = { fopen(mp4, "rb"), tg_file_size(mp4), 1, 0, 0, 0 };
    CHECK(f.fp != NULL);
    reel_io io = { .opaque = &f, .read = fio_read, .seek = fio_seek };
    sp = (stopper){ 0, -1 };
    CHECK_OK(reel_decoder_open_io(&dec, &io, "io-interrupt", &s, &err));
    sp.stop_after = sp.calls;
    int64_t reads = f.read_calls, last = -1;
    uint8_t *big = malloc((size_t)W * H * 3);
    CHECK(big != NULL);
    CHECK_STATUS(reel_decoder_get_frames(dec, &last, 1, NULL, big, (size_t)W * H * 3, NULL, &err), REEL_E_CANCELLED);
    TG_CHECK_MSG_HAS(err, "io-interrupt");
    CHECK_EQ_INT(f.read_calls, reads);
    sp.stop_after = -1;
    CHECK_OK(reel_decoder_get_frames(dec, &last, 1, NULL, big, (size_t)W * H * 3, NULL, &err));
    CHECK_EQ_INT(tg_read_idx(big, W, H), N - 1);
    reel_decoder_close(&dec);
    fclose(f.fp);
    free(big);
    free(buf);
}
