/* fuzz_store_index.c: libFuzzer target: a packed store's index, as the
 * reader meets it. The input is the store.idx of a small real store whose
 * shards are on disk: one store per format (jpeg, raw, raw+zstd at a width
 * whose rows are not a multiple of 64 bytes, h264), from $REEL_FUZZ_STORES
 * (scripts/fuzz.sh makes them with the CLI) or packed here at start-up. The
 * header's format picks the store. The input is parsed as it is (the
 * checksums), then with every entry's and the index's CRC recomputed, as a
 * hostile or buggy writer would leave them: a mutation then reaches the
 * values behind the checksums. The parser refuses that index, or every
 * record it describes is read: every stored frame through the public reader,
 * a window of each (the JPEG scanline decode and the raw crop copy), then
 * reel_store_verify. Nothing may crash, overflow or allocate beyond what
 * the shards hold. */
#define _GNU_SOURCE
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reel/reel.h"
#include "store/store_internal.h"
#include "synth/synth.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { NSTORES = 4 };
static const char *const g_names[NSTORES] = { "jpeg", "raw", "rawz", "h264" };
static char g_work[256];          /* our folders: shard links + the fuzzed index */
static char g_dirs[NSTORES][320]; /* one per store */

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static void cleanup(void)
{
    if (g_work[0]) nftw(g_work, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Packs the four stores of two small generated videos into root. */
static void make_stores(const char *root)
{
    char ds[400], path[500];
    snprintf(ds, sizeof ds, "%s/ds", root);
    mkdir(root, 0755);
    mkdir(ds, 0755);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", ds, i ? "dog" : "cat");
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/%s/v.mp4", ds, i ? "dog" : "cat");
        reel_synth_params p;
        reel_synth_default_params(&p);
        p.path = path;
        p.width = i ? 48 : 64;
        p.height = i ? 36 : 48;
        p.num_frames = 6;
        p.gop = 3;
        if (reel_synth_write(&p, NULL) != REEL_OK) abort();
    }
    for (int k = 0; k < NSTORES; k++) {
        reel_pack_settings s;
        reel_pack_default_settings(&s);
        s.format = k == 0 ? REEL_STORE_FORMAT_JPEG : k < 3 ? REEL_STORE_FORMAT_RAW : REEL_STORE_FORMAT_H264;
        s.zstd_level = k == 2 ? 3 : 0;
        s.short_side = 32;
        s.threads = 1;
        snprintf(path, sizeof path, "%s/%s", root, g_names[k]);
        if (reel_pack(ds, path, &s, NULL, NULL) != REEL_OK) abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    reel_set_ffmpeg_log_level(0);
    snprintf(g_work, sizeof g_work, "/tmp/reel-fuzz-store-%d", (int)getpid());
    mkdir(g_work, 0755);
    atexit(cleanup);
    char made[300];
    const char *src = getenv("REEL_FUZZ_STORES");
    if (!src || !*src) {
        snprintf(made, sizeof made, "%s/made", g_work);
        make_stores(made);
        src = made;
    }
    /* each of our folders links to its store's shards */
    for (int k = 0; k < NSTORES; k++) {
        snprintf(g_dirs[k], sizeof g_dirs[k], "%s/%s", g_work, g_names[k]);
        mkdir(g_dirs[k], 0755);
        for (int seq = 0; seq < 4; seq++) {
            char from[800], to[800];
            snprintf(from, sizeof from, "%s/%s/shard-00000-%05d.bin", src, g_names[k], seq);
            snprintf(to, sizeof to, "%s/shard-00000-%05d.bin", g_dirs[k], seq);
            if (access(from, R_OK) == 0 && symlink(from, to) != 0) abort();
        }
    }
    return 0;
}

static int count_fn(void *opaque, const reel_frame *f, size_t pos)
{
    (void)f;
    (void)pos;
    ++*(int64_t *)opaque;
    return 0;
}

/* The centre half of each picture, output at a quarter: the JPEG window
 * decode, DCT-scaled, and the raw crop copy. */
static int window_fn(void *opaque, size_t pos, int w, int h, int win[6])
{
    (void)opaque;
    (void)pos;
    win[0] = w / 4;
    win[1] = h / 4;
    win[2] = w / 2 > 0 ? w / 2 : 1;
    win[3] = h / 2 > 0 ? h / 2 : 1;
    win[4] = win[2] / 2 > 0 ? win[2] / 2 : 1;
    win[5] = win[3] / 2 > 0 ? win[3] / 2 : 1;
    return 1;
}

static void read_every_record(const char *dir)
{
    reel_store *s = NULL;
    reel_error err;
    if (reel_store_open(&s, dir, &err) != REEL_OK) return;
    reel_store_reader *r = NULL;
    if (reel_store_reader_create(&r, s, NULL, &err) != REEL_OK) abort();
    reel_store_info info;
    reel_store_get_info(s, &info, NULL);
    for (int64_t i = 0; i < info.num_records; i++) {
        int64_t n = 0, got = 0;
        const reel_frame_entry *table = NULL;
        if (reel_store_get_frame_table(s, i, &table, &n, NULL) != REEL_OK) abort(); /* i < num_records */
        int64_t *pos = malloc((size_t)(n ? n : 1) * sizeof *pos);
        if (!pos) abort();
        for (int64_t k = 0; k < n; k++) pos[k] = k;
        reel_store_reader_read(r, i, pos, (size_t)n, count_fn, &got, NULL, &err);
        /* the loader's way: fetch, then decode windows */
        reel__store_blob b;
        memset(&b, 0, sizeof b);
        if (reel__store_fetch(r, i, pos, (size_t)n, &b, NULL, &err) == REEL_OK)
            reel__store_decode(r, &b, pos, (size_t)n, count_fn, window_fn, &got, NULL, &err);
        reel__store_blob_free(&b);
        free(pos);
    }
    reel_store_reader_destroy(&r);
    reel_store_close(&s);
    reel_store_verify(dir, NULL, &err);
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes the CRC of every entry that fits (by its size field) and the
 * index's own (docs/STORE.md). */
static void fix_checksums(uint8_t *b, size_t n)
{
    if (n < REEL_STORE_HEADER_BYTES + 4) return;
    size_t off = REEL_STORE_HEADER_BYTES;
    while (off + 8 <= n - 4) {
        uint32_t es = rd32(b + off + 4);
        if (es < 8 || es > n - 4 - off) break;
        wr32(b + off + es - 4, reel__crc32(0, b + off, es - 4));
        off += es;
    }
    wr32(b + n - 4, reel__crc32(0, b, n - 4));
}

static int parses(const uint8_t *data, size_t size, reel__store_params *p)
{
    reel__store_rec *recs = NULL;
    int64_t n = 0;
    reel_error err;
    if (reel__store_index_parse(data, size, "fuzz", p, &recs, &n, &err) != REEL_OK) return 0;
    for (int64_t i = 0; i < n; i++) reel__store_rec_free(&recs[i]);
    free(recs);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reel__store_params p;
    parses(data, size, &p); /* the checksums as they are */
    uint8_t *fixed = malloc(size ? size : 1);
    if (!fixed) return 0;
    memcpy(fixed, data, size);
    fix_checksums(fixed, size);
    if (!parses(fixed, size, &p)) {
        free(fixed);
        return 0;
    }
    data = fixed;
    const int k = p.format == REEL_STORE_FORMAT_JPEG   ? 0
                  : p.format == REEL_STORE_FORMAT_H264 ? 3
                  : p.zstd_level                       ? 2
                                                       : 1;
    char path[400];
    snprintf(path, sizeof path, "%s/store.idx", g_dirs[k]);
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(fixed);
        return 0;
    }
    fwrite(data, 1, size, f);
    fclose(f);
    free(fixed);
    read_every_record(g_dirs[k]);
    return 0;
}
