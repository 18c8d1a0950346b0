/* test_store_hardening.c: the store reader under hostile or unlucky input
 * (issue 20 §1, §2, §5). Raw and raw+zstd stores at widths whose RGB rows
 * are not multiples of 16, 32 or 64 bytes read back bit-exact against
 * `reel frames`; a checksum-valid index whose frame or record spans are out
 * of order, overlapping or outside their record or shard is refused whole
 * at open, naming the record (the reproducer of swap_frame_entries.py, in
 * C); a record longer than its shard fails by name without allocating it;
 * bytes after a shard's last record are damage to `reel pack --verify`;
 * `reel bench` over a store points at `reel pack --verify`. */
#define _GNU_SOURCE
#include "harness.h"
#include "store_common.h"
#include "testgen.h"

#include "reel/store.h"

#include <libavutil/crc.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *cli_or_skip(void)
{
    const char *cli = harness_env("REEL_CLI", NULL);
    if (!cli || access(cli, X_OK) != 0) harness_skip_needed("the reel CLI is not built (REEL_CLI)");
    return cli;
}

/* Runs cmd with the shell; its stdout (and stderr when `both`) into out;
 * returns the exit status, or 128 + the signal that ended it. */
static int run(const char *cmd, int both, char *out, size_t size)
{
    char full[4200];
    snprintf(full, sizeof full, "%s%s", cmd, both ? " 2>&1" : " 2>/dev/null");
    FILE *p = popen(full, "r");
    CHECK(p != NULL);
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    /* popen's shell reports a killed child as 128 + signal itself */
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ------------------------------------------------ §1: padded rows */

/* 340x256 sources, as Kinetics at short side 256 */
static const sc_videos wide = { "wide", 2, 340, 256, 9, 3, 4, 0, 21 };

/* Stored sizes whose RGB rows (3 w bytes) are not multiples of 64: 510
 * (the 170x128), odd widths and heights, 224x224 (672 bytes: a
 * multiple of 32 but not 64), 600 bytes (of 8, not 16). */
static const int sizes[][2] = { { 170, 128 }, { 171, 97 }, { 224, 224 }, { 200, 75 }, { 33, 17 } };

/* `reel frames VIDEO --at 0..n-1 --size WxH --raw FILE` (rotated, the default), read back. */
static uint8_t *cli_frames(const char *video, int64_t n, int w, int h)
{
    const char *cli = cli_or_skip();
    char at[4096] = "", cmd[6000], out[1200], msg[2000];
    for (int64_t i = 0; i < n; i++) {
        size_t l = strlen(at);
        snprintf(at + l, sizeof at - l, "%s%lld", i ? "," : "", (long long)i);
    }
    snprintf(out, sizeof out, "%s/frames_%dx%d.rgb", harness_tmpdir(), w, h);
    snprintf(cmd, sizeof cmd, "'%s' frames '%s' --at %s --size %dx%d --raw '%s'", cli, video, at, w, h, out);
    int rc = run(cmd, 1, msg, sizeof msg);
    CHECK_MSG(rc == 0, "%s: exit %d: %s", cmd, rc, msg);
    size_t sz = 0;
    uint8_t *b = tg_read_file(out, &sz);
    CHECK_EQ_INT((int64_t)sz, n * w * h * 3);
    return b;
}

/* One epoch of the loader over the store at its stored size, no crop:
 * every clip frame is the sampled frame (embedded index) and no sample
 * fails. */
static void loader_reads_every_record(const char *dir, int w, int h)
{
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create_from_path(&ds, dir, NULL));
    reel_loader_settings ls;
    reel_loader_default_settings(&ls);
    ls.batch_size = 2;
    ls.transform.resize = REEL_RESIZE_EXACT;
    ls.transform.resize_width = w;
    ls.transform.resize_height = h;
    ls.transform.crop = REEL_CROP_NONE;
    ls.transform.layout = REEL_BATCH_BTHWC;
    ls.sampler.frames_per_clip = 3;
    ls.decode_threads = 2;
    reel_loader *l = NULL;
    CHECK_OK(reel_loader_create(&l, ds, &ls, NULL));
    reel_batch *b = NULL;
    reel_error err;
    reel_error_clear(&err);
    int st;
    int64_t clips = 0;
    const size_t fb = (size_t)w * h * 3;
    while ((st = reel_loader_next(l, &b, &err)) == REEL_OK && b) {
        for (int64_t c = 0; c < b->num_clips; c++)
            for (int t = 0; t < 3; t++) {
                const uint8_t *img = (const uint8_t *)b->data + ((size_t)c * 3 + (size_t)t) * fb;
                CHECK_EQ_INT(tg_read_idx(img, w, h), b->clips[c].frame_indices[t]);
            }
        clips += b->num_clips;
        reel_loader_release(l, b);
    }
    CHECK_MSG(st == REEL_OK, "loader over %s: %s", dir, err.message);
    CHECK_EQ_INT(clips, wide.n);
    CHECK_EQ_INT(reel_loader_get_num_failures(l), 0);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

TEST(raw_and_zstd_stores_with_padded_rows_equal_reel_frames_bit_for_bit)
{
    const char *src = sc_dataset(&wide);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int zstd = 0; zstd <= 1; zstd++) {
            const int w = sizes[k][0], h = sizes[k][1];
            char name[64];
            snprintf(name, sizeof name, "raw%s_%dx%d", zstd ? "z" : "", w, h);
            const char *dir = sc_tmp(name);
            reel_pack_settings s;
            reel_pack_default_settings(&s);
            s.format = REEL_STORE_FORMAT_RAW;
            s.zstd_level = zstd ? 3 : 0;
            s.width = w;
            s.height = h;
            s.threads = 2;
            reel_pack_report rep = sc_pack(src, dir, &s);
            CHECK_EQ_INT(rep.failed, 0);
            reel_error err;
            reel_error_clear(&err);
            reel_store_verify_report v;
            CHECK_MSG(reel_store_verify(dir, &v, &err) == REEL_OK, "%s: %s", name, err.message);
            CHECK_EQ_INT(v.bad, 0);
            reel_store *st = NULL;
            CHECK_OK(reel_store_open(&st, dir, NULL));
            for (int64_t i = 0; i < wide.n; i++) {
                reel_store_record rec;
                uint8_t *got = sc_read_record(st, i, &rec, NULL);
                CHECK_EQ_INT(rec.width, w);
                CHECK_EQ_INT(rec.height, h);
                uint8_t *want = cli_frames(rec.source_path, rec.num_frames, w, h);
                const size_t fb = (size_t)w * h * 3;
                for (int64_t j = 0; j < rec.num_frames; j++) {
                    CHECK_MSG(memcmp(got + (size_t)j * fb, want + (size_t)j * fb, fb) == 0,
                              "%s: %s frame %lld differs from reel frames", name, rec.source_path, (long long)j);
                    CHECK_EQ_INT(tg_read_idx(got + (size_t)j * fb, w, h), j);
                }
                free(want);
                free(got);
            }
            reel_store_close(&st);
            loader_reads_every_record(dir, w, h);
        }
}

/* ------------------------------------------------ §2: an index out of order */

enum { NV = 3, SS = 32 };
static const sc_videos small = { "small", NV, 64, 48, 12, 2, 4, 0, 31 };

/* Byte offsets of docs/STORE.md: the first entry after the 128-byte header;
 * in an entry: its size at 4, record offset 24, length 32, CRC 40, frames
 * at 140 (40 bytes each: offset, length, CRC, ...). */
enum { HDR = 128, E_SIZE = 4, E_OFFSET = 24, E_LENGTH = 32, E_CRC = 40, E_FRAMES = 140, FR = 40 };

static uint32_t crc32_ieee(const uint8_t *p, size_t n)
{
    /* FFmpeg's table CRC (the format's definition), not reel's own */
    return av_crc(av_crc_get_table(AV_CRC_32_IEEE_LE), 0, p, n);
}
static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}
static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)rd64((const uint8_t[8]){ p[0], p[1], p[2], p[3], 0, 0, 0, 0 });
}
static void wr64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The index of the store in dir, its entries located. */
typedef struct idx {
    char path[1200];
    uint8_t *b;
    size_t n;
    uint8_t *e[16]; /* entry starts */
    int ne;
} idx;

static void idx_load(idx *x, const char *dir)
{
    snprintf(x->path, sizeof x->path, "%s/store.idx", dir);
    x->b = tg_read_file(x->path, &x->n);
    CHECK(x->b != NULL);
    x->ne = 0;
    for (size_t off = HDR; off + 4 < x->n && x->ne < 16; off += rd32(x->b + off + E_SIZE)) x->e[x->ne++] = x->b + off;
}

/* Recomputes every entry's CRC and the index's, so that only the
 * parser's own checks can find the change; writes the index back. */
static void idx_save(idx *x)
{
    for (int k = 0; k < x->ne; k++) {
        uint32_t size = rd32(x->e[k] + E_SIZE);
        wr32(x->e[k] + size - 4, crc32_ieee(x->e[k], size - 4));
    }
    wr32(x->b + x->n - 4, crc32_ieee(x->b, x->n - 4));
    tg_write_file(x->path, x->b, x->n);
    free(x->b);
    x->b = NULL;
}

/* A copy of the packed store `from` as `name`, with its index patched by fn. */
static const char *patched(const char *from, const char *name, void (*fn)(idx *))
{
    const char *dir = sc_tmp(name);
    sc_copy_dir(from, dir);
    idx x;
    idx_load(&x, dir);
    CHECK_EQ_INT(x.ne, NV);
    fn(&x);
    idx_save(&x);
    return dir;
}

static void swap_frames_0_1(idx *x)
{
    /* swap_frame_entries.py: (offset, length, CRC) of stored frames 0 and 1 of record 0 */
    uint8_t t[12], *a = x->e[0] + E_FRAMES, *c = x->e[0] + E_FRAMES + FR;
    memcpy(t, a, 12);
    memcpy(a, c, 12);
    memcpy(c, t, 12);
}
static void overlap_frames_1_2(idx *x)
{
    uint8_t *f1 = x->e[1] + E_FRAMES + FR;
    wr32(f1 + 4, rd32(f1 + 4) + 1); /* frame 1 one byte longer: into frame 2 */
}
static void frame_past_record(idx *x)
{
    uint32_t nf = rd32(x->e[2] + 64);
    uint8_t *last = x->e[2] + E_FRAMES + (size_t)(nf - 1) * FR;
    wr32(last + 4, rd32(last + 4) + 4096); /* past the record's end */
}
static void record_unaligned(idx *x)
{
    wr64(x->e[1] + E_OFFSET, rd64(x->e[1] + E_OFFSET) + 1);
}
static void record_past_shard_size(idx *x)
{
    /* record 1 does not open its shard: it must end within the build's shard size (1 GiB) */
    wr64(x->e[1] + E_OFFSET, (UINT64_C(1) << 30) - 4096);
}
static void records_swapped(idx *x)
{
    /* records 0 and 1 trade their places in the shard: each place is possible, the order is not */
    uint64_t a = rd64(x->e[0] + E_OFFSET), b = rd64(x->e[1] + E_OFFSET);
    wr64(x->e[0] + E_OFFSET, b);
    wr64(x->e[1] + E_OFFSET, a);
}

/* The store in dir is refused whole: open, verify, the dataset and the CLI
 * name the index, the record and `why`, and nothing crashes. */
static void refused(const char *dir, const char *video, const char *why)
{
    reel_store *st = NULL;
    reel_error err;
    reel_error_clear(&err);
    CHECK_STATUS(reel_store_open(&st, dir, &err), REEL_E_CORRUPT);
    CHECK(st == NULL);
    CHECK_MSG(strstr(err.message, "store.idx") && strstr(err.message, video) && strstr(err.message, why),
              "%s: the refusal does not name the index, the record (%s) and '%s': %s", dir, video, why, err.message);
    reel_store_verify_report v;
    CHECK_STATUS(reel_store_verify(dir, &v, &err), REEL_E_CORRUPT);
    CHECK(strstr(v.first_problem, why) != NULL);
    reel_dataset *ds = NULL;
    CHECK_STATUS(reel_dataset_create_from_path(&ds, dir, &err), REEL_E_CORRUPT);
    CHECK(strstr(err.message, why) != NULL);
    const char *cli = harness_env("REEL_CLI", NULL);
    if (cli && access(cli, X_OK) == 0) {
        char cmd[2600], out[2000];
        snprintf(cmd, sizeof cmd, "'%s' pack --verify '%s'", cli, dir);
        int rc = run(cmd, 1, out, sizeof out);
        CHECK_MSG(rc == 1 && strstr(out, why), "reel pack --verify %s: exit %d (1 expected, not a signal): %s", dir, rc,
                  out);
    }
}

/* The path of record k of the store in dir. */
static void record_path(const char *dir, int64_t k, char *out, size_t size)
{
    reel_store *st = NULL;
    CHECK_OK(reel_store_open(&st, dir, NULL));
    reel_store_record rec;
    CHECK_OK(reel_store_get_record(st, k, &rec, NULL));
    snprintf(out, size, "%s", rec.source_path);
    reel_store_close(&st);
}

static const char *packed_small(reel_store_format fmt, const char *name, int64_t shard_size)
{
    const char *dir = sc_tmp(name);
    char marker[1200];
    snprintf(marker, sizeof marker, "%s/store.idx", dir);
    if (tg_file_exists(marker)) return dir;
    reel_pack_settings s;
    reel_pack_default_settings(&s);
    s.format = fmt;
    s.short_side = SS;
    s.threads = 2;
    if (shard_size) s.shard_size = shard_size;
    sc_pack(sc_dataset(&small), dir, &s);
    return dir;
}

TEST(an_index_with_frames_out_of_order_is_refused_whole_naming_the_record)
{
    static const reel_store_format fmts[2] = { REEL_STORE_FORMAT_JPEG, REEL_STORE_FORMAT_RAW };
    for (int f = 0; f < 2; f++) {
        const char *good = packed_small(fmts[f], f ? "idx_raw" : "idx_jpeg", 0);
        CHECK_OK(reel_store_verify(good, NULL, NULL));
        char v0[1200], v1[1200], v2[1200];
        record_path(good, 0, v0, sizeof v0);
        record_path(good, 1, v1, sizeof v1);
        record_path(good, 2, v2, sizeof v2);
        refused(patched(good, "swapped", swap_frames_0_1), v0, "out of order or overlapping");
        refused(patched(good, "overlap", overlap_frames_1_2), v1, "out of order or overlapping");
        refused(patched(good, "pastrec", frame_past_record), v2, "lies outside its record");
        refused(patched(good, "unaligned", record_unaligned), v1, "cannot lie in a shard");
        refused(patched(good, "pastshard", record_past_shard_size), v1, "cannot lie in a shard");
        refused(patched(good, "recswap", records_swapped), v1, "overlap or come before");
    }
}

static void record_huge(idx *x)
{
    /* record 0 opens its shard, so its length is bounded only by the file */
    wr64(x->e[0] + E_LENGTH, UINT64_C(1) << 39);
}

TEST(a_record_longer_than_its_shard_fails_by_name_without_allocating_it)
{
    /* one record per shard: record 0's claimed length overlaps no other record */
    const char *good = packed_small(REEL_STORE_FORMAT_H264, "h264_per_shard", 4096);
    char v0[1200];
    record_path(good, 0, v0, sizeof v0);
    const char *dir = patched(good, "huge", record_huge);
    reel_store *st = NULL;
    CHECK_OK(reel_store_open(&st, dir, NULL)); /* possible, as far as the index can tell */
    reel_store_reader *r = NULL;
    CHECK_OK(reel_store_reader_create(&r, st, NULL, NULL));
    int64_t zero = 0;
    reel_error err;
    reel_error_clear(&err);
    uint8_t buf[64 * 48 * 3];
    sc_sink k = { buf, sizeof buf, NULL, NULL, NULL };
    CHECK_STATUS(reel_store_reader_read(r, 0, &zero, 1, sc_sink_fn, &k, NULL, &err), REEL_E_CORRUPT);
    CHECK_MSG(strstr(err.message, "truncated") && strstr(err.message, v0) && strstr(err.message, ".bin"), "%s",
              err.message);
    reel_store_reader_destroy(&r);
    reel_store_close(&st);
    reel_store_verify_report v;
    CHECK_STATUS(reel_store_verify(dir, &v, &err), REEL_E_CORRUPT);
    CHECK_EQ_INT(v.bad, 1);
    CHECK(strstr(v.first_problem, "truncated") != NULL);
}

/* ------------------------------------------------ §5: bytes after the last record */

static void append(const char *path, size_t n, int zeros)
{
    size_t sz = 0;
    uint8_t *b = tg_read_file(path, &sz);
    CHECK(b != NULL);
    b = realloc(b, sz + n);
    uint64_t rs = 99;
    for (size_t i = 0; i < n; i++) b[sz + i] = zeros ? 0 : (uint8_t)tg_rand(&rs);
    tg_write_file(path, b, sz + n);
    free(b);
}

TEST(bytes_after_a_shards_last_record_are_damage_to_verify)
{
    /* one record per shard, and one shard of all records */
    const char *per = packed_small(REEL_STORE_FORMAT_JPEG, "one_per_shard", 4096);
    const char *one = packed_small(REEL_STORE_FORMAT_JPEG, "idx_jpeg", 0);
    reel_store_verify_report v;
    CHECK_OK(reel_store_verify(per, &v, NULL));
    CHECK_EQ_INT(v.shards, NV);
    CHECK_EQ_INT(v.bad_shards, 0);
    CHECK_OK(reel_store_verify(one, &v, NULL));
    CHECK_EQ_INT(v.shards, 1);
    for (int k = 0; k < 3; k++) {
        const char *dir = sc_tmp(k == 0 ? "garbage" : k == 1 ? "zeros" : "garbage1");
        sc_copy_dir(k < 2 ? per : one, dir);
        char shard[1200];
        snprintf(shard, sizeof shard, "%s/shard-00000-0000%d.bin", dir, k < 2 ? 1 : 0);
        size_t extra = k == 1 ? 4096 : 10000;
        append(shard, extra, k == 1);
        reel_error err;
        reel_error_clear(&err);
        CHECK_STATUS(reel_store_verify(dir, &v, &err), REEL_E_CORRUPT);
        CHECK_EQ_INT(v.bad, 0); /* every record still reads and checks */
        CHECK_EQ_INT(v.records, NV);
        CHECK_EQ_INT(v.bad_shards, 1);
        CHECK_EQ_INT(v.bytes_past_records, (int64_t)extra);
        CHECK_MSG(strstr(err.message, "past their last record") && strstr(v.first_problem, strrchr(shard, '/') + 1) &&
                      strstr(v.first_problem, "past its last record"),
                  "%s / %s", err.message, v.first_problem);
        /* the loader reads every record as before */
        reel_store *st = NULL;
        CHECK_OK(reel_store_open(&st, dir, NULL));
        for (int64_t i = 0; i < NV; i++) {
            reel_store_record rec;
            uint8_t *got = sc_read_record(st, i, &rec, NULL);
            for (int64_t j = 0; j < rec.num_frames; j++)
                CHECK_EQ_INT(tg_read_idx(got + (size_t)j * rec.width * rec.height * 3, rec.width, rec.height), j);
            free(got);
        }
        reel_store_close(&st);
        const char *cli = harness_env("REEL_CLI", NULL);
        if (cli && access(cli, X_OK) == 0) {
            char cmd[2600], out[2000];
            snprintf(cmd, sizeof cmd, "'%s' pack --verify '%s'", cli, dir);
            CHECK_EQ_INT(run(cmd, 1, out, sizeof out), 1);
            CHECK_MSG(strstr(out, "past its last record"), "%s", out);
        }
    }
}

TEST(reel_bench_over_a_store_says_that_verify_checks_the_whole_store)
{
    const char *cli = cli_or_skip();
    const char *dir = packed_small(REEL_STORE_FORMAT_JPEG, "idx_jpeg", 0);
    char cmd[2600], out[8000];
    snprintf(cmd, sizeof cmd, "'%s' bench '%s' --frames-per-clip 2 --size 32 --batch 2 --no-progress", cli, dir);
    CHECK_EQ_INT(run(cmd, 0, out, sizeof out), 0);
    char want[1300];
    snprintf(want, sizeof want, "reel pack --verify %s", dir);
    CHECK_MSG(strstr(out, "coverage") && strstr(out, want), "%s", out);
    /* over videos there is no store to verify */
    snprintf(cmd, sizeof cmd, "'%s' bench '%s' --frames-per-clip 2 --size 32 --batch 2 --no-progress", cli,
             sc_dataset(&small));
    CHECK_EQ_INT(run(cmd, 0, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "coverage") && !strstr(out, "--verify"), "%s", out);
}
