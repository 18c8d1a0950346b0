/* test_sidecar.c: the sidecar index ("<video>.reelidx") through the public
 * API: written, reused, stale after the video changes, corrupt, at a custom
 * path, foreign, and the save errors. */
#include "test_api_common.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>

/* ---------------------------------------------------------------- sidecar index */

static void set_mtime(const char *path, time_t sec, long nsec)
{
    struct timespec ts[2];
    ts[0].tv_sec = sec;
    ts[0].tv_nsec = nsec;
    ts[1].tv_sec = sec;
    ts[1].tv_nsec = nsec;
    CHECK_MSG(utimensat(AT_FDCWD, path, ts, 0) == 0, "utimensat(%s): %s", path, strerror(errno));
}

static reel_decoder *open_idx(const char *path, int mode, const char *index_path)
{
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.index_mode = mode;
    s.index_path = index_path;
    return tg_open(path, &s);
}

static int source_of(reel_decoder *d)
{
    return reel_decoder_get_info(d)->index_source;
}

/* Flips one byte of a file in place. */
static void flip_byte(const char *path, int64_t at)
{
    size_t n;
    uint8_t *b = tg_read_file(path, &n);
    if (at < 0) at += (int64_t)n;
    CHECK(at >= 0 && (size_t)at < n);
    b[at] ^= 0x41;
    tg_write_file(path, b, n);
    free(b);
}

static void sidecar_roundtrip(const char *src_name, const char *codec, int bframes)
{
    char path[4096], side[4200];
    const char *src = video(src_name, codec, bframes);
    snprintf(path, sizeof path, "%s.side%s", src, strrchr(src, '.'));
    tg_copy_file(src, path);
    snprintf(side, sizeof side, "%s.reelidx", path);
    unlink(side);

    /* reference: no index */
    reel_decoder *ref = open_idx(path, REEL_INDEX_OFF, NULL);
    CHECK(source_of(ref) != REEL_INDEX_FROM_SIDECAR);
    CHECK(!tg_file_exists(side));

    /* READ alone never writes */
    reel_decoder *d = open_idx(path, REEL_INDEX_READ, NULL);
    CHECK(source_of(d) != REEL_INDEX_FROM_SIDECAR);
    reel_decoder_close(&d);
    CHECK_MSG(!tg_file_exists(side), "REEL_INDEX_READ wrote %s", side);

    /* READ_WRITE builds and writes FILE.reelidx */
    d = open_idx(path, REEL_INDEX_READ_WRITE, NULL);
    CHECK(source_of(d) != REEL_INDEX_FROM_SIDECAR);
    reel_decoder_close(&d);
    CHECK_MSG(tg_file_exists(side), "REEL_INDEX_READ_WRITE did not write %s", side);

    /* reopening uses it: same table, same frames */
    for (int mode = REEL_INDEX_READ; mode <= REEL_INDEX_READ_WRITE; mode++) {
        d = open_idx(path, mode, NULL);
        CHECK_MSG(source_of(d) == REEL_INDEX_FROM_SIDECAR, "%s: reopened with a fresh sidecar, index_source %d", path,
                  source_of(d));
        check_same_table(ref, d);
        check_same_frames(ref, d);
        reel_decoder_close(&d);
    }

    /* touching the video (mtime) makes it stale: rebuilt and rewritten */
    struct stat sb;
    CHECK(stat(path, &sb) == 0);
    set_mtime(path, sb.st_mtim.tv_sec + 10, sb.st_mtim.tv_nsec);
    d = open_idx(path, REEL_INDEX_READ, NULL);
    CHECK_MSG(source_of(d) != REEL_INDEX_FROM_SIDECAR, "a sidecar older than its video (mtime) was used");
    check_same_table(ref, d);
    reel_decoder_close(&d);
    size_t n0;
    uint8_t *before = tg_read_file(side, &n0);
    d = open_idx(path, REEL_INDEX_READ_WRITE, NULL);
    CHECK(source_of(d) != REEL_INDEX_FROM_SIDECAR);
    reel_decoder_close(&d);
    size_t n1;
    uint8_t *after = tg_read_file(side, &n1);
    CHECK_MSG(n0 != n1 || memcmp(before, after, n0) != 0, "stale sidecar was not rewritten");
    free(before);
    free(after);
    d = open_idx(path, REEL_INDEX_READ, NULL);
    CHECK_MSG(source_of(d) == REEL_INDEX_FROM_SIDECAR, "rewritten sidecar not used");
    check_same_frames(ref, d);
    reel_decoder_close(&d);

    /* a nanosecond change of mtime is enough */
    CHECK(stat(path, &sb) == 0);
    set_mtime(path, sb.st_mtim.tv_sec, (sb.st_mtim.tv_nsec + 1) % 1000000000L);
    d = open_idx(path, REEL_INDEX_READ, NULL);
    CHECK_MSG(source_of(d) != REEL_INDEX_FROM_SIDECAR, "sidecar used after a 1 ns mtime change");
    reel_decoder_close(&d);
    d = open_idx(path, REEL_INDEX_READ_WRITE, NULL);
    reel_decoder_close(&d);

    /* appending a byte (size changes, mtime restored) makes it stale too */
    CHECK(stat(path, &sb) == 0);
    {
        FILE *fp = fopen(path, "ab");
        CHECK(fp != NULL);
        fputc(0, fp);
        fclose(fp);
        set_mtime(path, sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
    }
    d = open_idx(path, REEL_INDEX_READ, NULL);
    CHECK_MSG(source_of(d) != REEL_INDEX_FROM_SIDECAR, "a sidecar for a different file size was used");
    check_same_table(ref, d);
    check_same_frames(ref, d);
    reel_decoder_close(&d);
    d = open_idx(path, REEL_INDEX_READ_WRITE, NULL);
    reel_decoder_close(&d);
    d = open_idx(path, REEL_INDEX_READ, NULL);
    CHECK(source_of(d) == REEL_INDEX_FROM_SIDECAR);
    reel_decoder_close(&d);

    /* corrupted sidecars are rejected (and rebuilt) */
    int64_t side_size = tg_file_size(side);
    const int64_t spots[] = { 0, 9, 20, 60, 72, side_size / 2, -1 };
    for (size_t k = 0; k < sizeof spots / sizeof spots[0]; k++) {
        flip_byte(side, spots[k]);
        d = open_idx(path, REEL_INDEX_READ, NULL);
        CHECK_MSG(source_of(d) != REEL_INDEX_FROM_SIDECAR, "sidecar with byte %lld flipped was used",
                  (long long)spots[k]);
        check_same_table(ref, d);
        reel_decoder_close(&d);
        d = open_idx(path, REEL_INDEX_READ_WRITE, NULL);
        CHECK(source_of(d) != REEL_INDEX_FROM_SIDECAR);
        reel_decoder_close(&d);
        d = open_idx(path, REEL_INDEX_READ, NULL);
        CHECK_MSG(source_of(d) == REEL_INDEX_FROM_SIDECAR, "sidecar not rebuilt after byte %lld was flipped",
                  (long long)spots[k]);
        reel_decoder_close(&d);
    }
    /* truncated, extended, empty */
    {
        size_t n;
        uint8_t *b = tg_read_file(side, &n);
        tg_write_file(side, b, n - 7);
        d = open_idx(path, REEL_INDEX_READ, NULL);
        CHECK_MSG(source_of(d) != REEL_INDEX_FROM_SIDECAR, "truncated sidecar used");
        reel_decoder_close(&d);
        uint8_t *ext = malloc(n + 16);
        memcpy(ext, b, n);
        memset(ext + n, 0, 16);
        tg_write_file(side, ext, n + 16);
        d = open_idx(path, REEL_INDEX_READ, NULL);
        CHECK_MSG(source_of(d) != REEL_INDEX_FROM_SIDECAR, "sidecar with trailing bytes used");
        reel_decoder_close(&d);
        tg_write_file(side, "", 0);
        d = open_idx(path, REEL_INDEX_READ, NULL);
        CHECK(source_of(d) != REEL_INDEX_FROM_SIDECAR);
        reel_decoder_close(&d);
        free(ext);
        free(b);
    }
    reel_decoder_close(&ref);
}

TEST(sidecar_index_mp4)
{
    sidecar_roundtrip("side.mp4", "h264", 2);
}

TEST(sidecar_index_avi_count_mode)
{
    sidecar_roundtrip("side.avi", "h264", 0);
}

TEST(sidecar_index_mkv_vp9)
{
    sidecar_roundtrip("side.webm", "vp9", 0);
}

TEST(sidecar_custom_path_and_foreign_sidecar)
{
    const char *a = video("api.mp4", "h264", 2);
    const char *b = video("api.mkv", "h264", 2);
    char custom[4096], bside[4096];
    tg_path(custom, sizeof custom, "custom-index.idx");
    unlink(custom);
    reel_decoder *d = open_idx(a, REEL_INDEX_READ_WRITE, custom);
    reel_decoder_close(&d);
    CHECK_MSG(tg_file_exists(custom), "settings.index_path %s not written", custom);
    d = open_idx(a, REEL_INDEX_READ, custom);
    CHECK_EQ_INT(source_of(d), REEL_INDEX_FROM_SIDECAR);
    reel_decoder *ref = open_idx(a, REEL_INDEX_OFF, NULL);
    check_same_table(ref, d);
    check_same_frames(ref, d);
    reel_decoder_close(&d);
    reel_decoder_close(&ref);
    /* another video's sidecar is not used */
    snprintf(bside, sizeof bside, "%s.reelidx", b);
    tg_copy_file(custom, bside);
    d = open_idx(b, REEL_INDEX_READ, NULL);
    CHECK_MSG(source_of(d) != REEL_INDEX_FROM_SIDECAR, "a sidecar written for %s was used for %s", a, b);
    CHECK_EQ_INT(reel_decoder_get_info(d)->num_frames, N);
    reel_decoder_close(&d);
    /* open with a sidecar path in a missing directory: the video still opens */
    char nowhere[4096];
    tg_path(nowhere, sizeof nowhere, "no-such-dir/x.reelidx");
    d = open_idx(a, REEL_INDEX_READ_WRITE, nowhere);
    CHECK_EQ_INT(reel_decoder_get_info(d)->num_frames, N);
    reel_decoder_close(&d);
}

TEST(save_index_errors)
{
    const char *a = video("api.mp4", "h264", 2);
    reel_decoder *d = tg_open(a, NULL);
    reel_error err;
    char bad[4096], dir[4096], good[4096];
    tg_path(bad, sizeof bad, "no-such-dir/sub/video.reelidx");
    reel_error_clear(&err);
    CHECK_STATUS(reel_decoder_save_index(d, bad, &err), REEL_E_IO);
    TG_CHECK_MSG_HAS(err, bad);
    CHECK_STATUS(reel_decoder_save_index(d, "/proc/version/x.reelidx", &err), REEL_E_IO);
    TG_CHECK_MSG_HAS(err, "/proc/version/x.reelidx");
    /* a directory in the way */
    tg_path(dir, sizeof dir, "a-dir.reelidx");
    CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST);
    CHECK_STATUS(reel_decoder_save_index(d, dir, &err), REEL_E_IO);
    TG_CHECK_MSG_HAS(err, dir);
    /* no temporary files left behind */
    char tmp_prefix[4200];
    snprintf(tmp_prefix, sizeof tmp_prefix, "%s.tmp%ld", dir, (long)getpid());
    CHECK_MSG(!tg_file_exists(tmp_prefix), "temporary %s left behind", tmp_prefix);
    /* writable: OK, and usable */
    tg_path(good, sizeof good, "saved.reelidx");
    CHECK_OK(reel_decoder_save_index(d, good, &err));
    reel_decoder_close(&d);
    d = open_idx(a, REEL_INDEX_READ, good);
    CHECK_EQ_INT(source_of(d), REEL_INDEX_FROM_SIDECAR);
    reel_decoder_close(&d);
    /* NULL path: the default next to the video */
    char def[4096];
    snprintf(def, sizeof def, "%s.reelidx", a);
    unlink(def);
    d = tg_open(a, NULL);
    CHECK_OK(reel_decoder_save_index(d, NULL, &err));
    reel_decoder_close(&d);
    CHECK(tg_file_exists(def));
    d = open_idx(a, REEL_INDEX_READ, NULL);
    CHECK_EQ_INT(source_of(d), REEL_INDEX_FROM_SIDECAR);
    reel_decoder_close(&d);
    unlink(def);
}
