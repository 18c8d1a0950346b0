/* test_damage_fuzz.c: bytes flipped at random in the packets and anywhere in
 * the file, over every container, under each corruption policy: never a
 * crash, a hang or a frame other than the one asked for; what happens is
 * tallied and printed. */
#include "damage_common.h"

/* ---------------------------------------------------------------- fuzzing */

/* Byte range of the top-level mdat payload of an mp4, or 0 if none. */
static int mdat_range(const uint8_t *b, size_t n, size_t *start, size_t *end)
{
    size_t off = 0;
    while (off + 8 <= n) {
        uint64_t sz =
            ((uint64_t)b[off] << 24) | ((uint64_t)b[off + 1] << 16) | ((uint64_t)b[off + 2] << 8) | b[off + 3];
        size_t hdr = 8;
        if (sz == 1 && off + 16 <= n) {
            sz = 0;
            for (int i = 0; i < 8; i++) sz = (sz << 8) | b[off + 8 + i];
            hdr = 16;
        }
        if (sz == 0) sz = n - off;
        if (sz < hdr) return 0;
        if (!memcmp(b + off + 4, "mdat", 4)) {
            *start = off + hdr;
            *end = off + sz < n ? off + sz : n;
            return 1;
        }
        off += sz;
    }
    return 0;
}

/* Outcome of decoding one damaged copy. */
typedef struct fuzz_result {
    int opened, ok; /* open succeeded; get_range returned REEL_OK */
    int wrong;      /* REEL_OK frames embedding another frame's index */
    int64_t first_frame, first_embeds;
    int64_t corrupt_packets;
    int64_t num_frames; /* rows in the frame table */
} fuzz_result;

/* Opens a damaged copy under `policy` and decodes every frame in one call.
 * Statuses must be reel statuses and failures must name the file; a frame
 * returned under REEL_OK is counted wrong when it embeds a valid index
 * other than its own. strict: only sample payloads were damaged, so the
 * file must open and keep all nominal_n frames. */
/* Is frame i in a GOP that holds a damaged byte? Samples of this mp4 lie
 * back to back in mdat, so the sample holding byte b is the one with the
 * largest position <= b. A GOP runs from a keyframe to the next one in
 * decode order (closed GOPs: damage cannot reach past them). */
static int frame_in_damaged_gop(const reel_frame_entry *ft, int64_t n, int64_t i, const size_t *flips, int nflips)
{
    int64_t *pos = malloc((size_t)n * sizeof *pos);
    int *key = malloc((size_t)n * sizeof *key);
    CHECK(pos && key);
    for (int64_t f = 0; f < n; f++) {
        pos[ft[f].decode_order] = ft[f].pos;
        key[ft[f].decode_order] = (ft[f].flags & REEL_FRAME_KEY) != 0;
    }
    int64_t d = ft[i].decode_order, g0 = d, g1 = d;
    while (g0 > 0 && !key[g0]) g0--;
    while (g1 + 1 < n && !key[g1 + 1]) g1++;
    int hit = 0;
    for (int k = 0; k < nflips && !hit; k++) {
        int64_t holder = -1, best = -1;
        for (int64_t x = 0; x < n; x++)
            if (pos[x] <= (int64_t)flips[k] && pos[x] > best) {
                best = pos[x];
                holder = x;
            }
        hit = holder >= g0 && holder <= g1;
    }
    free(pos);
    free(key);
    return hit;
}

static fuzz_result fuzz_one_at(const char *path, int policy, int strict, const size_t *flips, int nflips, int iter);

static fuzz_result fuzz_one(const char *path, int policy, int strict, int64_t nominal_n, int iter)
{
    (void)nominal_n;
    return fuzz_one_at(path, policy, strict, NULL, 0, iter);
}

/* flips: the damaged byte offsets when known (then a wrong frame counts
 * only outside the damaged GOPs: inside them the codec may conceal with a
 * neighbour's pixels without noticing, which no decoder can rule out). */
static fuzz_result fuzz_one_at(const char *path, int policy, int strict, const size_t *flips, int nflips, int iter)
{
    fuzz_result fr = { 0, 0, 0, -1, -1, 0, -1 };
    reel_decoder *dec = NULL;
    reel_decoder_settings s;
    reel_error err;
    reel_error_clear(&err);
    reel_decoder_default_settings(&s);
    s.corrupt_policy = policy;
    int r = reel_decoder_open(&dec, path, &s, &err);
    CHECK_MSG(tg_is_reel_status(r), "iteration %d policy %d: open returned %d, not a reel status", iter, policy, r);
    if (r != REEL_OK) {
        CHECK_MSG(!strict, "iteration %d policy %d: open failed (%d %s) although only sample data was damaged", iter,
                  policy, r, err.message);
        CHECK(dec == NULL);
        TG_CHECK_MSG_HAS(err, path);
        return fr;
    }
    fr.opened = 1;
    const reel_video_info *in = reel_decoder_get_info(dec);
    int64_t n = in->num_frames;
    fr.num_frames = n;
    /* strict: a table with fewer rows shifts every later index; the frames
     * then embed other indices and are counted below */
    (void)strict;
    int w = in->source_width, h = in->source_height;
    if (w <= 0 || h <= 0 || w > 4096 || h > 4096 || n <= 0 || n > 100000) {
        reel_decoder_close(&dec);
        return fr;
    }
    size_t fb = (size_t)w * h * 3, got = 0;
    uint8_t *buf = malloc(fb * (size_t)n);
    CHECK(buf != NULL);
    reel_decode_stats st;
    reel_error_clear(&err);
    r = reel_decoder_get_range(dec, 0, n, 1, NULL, buf, fb * (size_t)n, &got, &st, &err);
    CHECK_MSG(tg_is_reel_status(r), "iteration %d policy %d: get_range returned %d", iter, policy, r);
    if (r == REEL_OK) {
        fr.ok = 1;
        fr.corrupt_packets = st.corrupt_packets;
        CHECK_EQ_INT(got, n);
        for (int64_t i = 0; i < n; i++) {
            int64_t e = tg_read_idx(buf + (size_t)i * fb, w, h);
            if (e == i) continue;
            if (nflips) {
                /* outside the damaged GOPs every frame must be exactly itself */
                int64_t nt;
                const reel_frame_entry *ft = reel_decoder_get_frame_table(dec, &nt);
                if (frame_in_damaged_gop(ft, nt, i, flips, nflips)) continue;
            } else if (e == -1) {
                continue;
            }
            if (!fr.wrong++) {
                fr.first_frame = i;
                fr.first_embeds = e;
            }
        }
    } else {
        TG_CHECK_MSG_HAS(err, path);
    }
    /* a request after a failure still runs */
    int64_t zero = 0;
    r = reel_decoder_get_frames(dec, &zero, 1, NULL, buf, fb, NULL, &err);
    CHECK(tg_is_reel_status(r));
    free(buf);
    reel_decoder_close(&dec);
    return fr;
}

/* Tally of one policy over all iterations. */
typedef struct fuzz_tally {
    int runs, opened, ok, bad_iters, bad_frames;
    char first[3][200];
} fuzz_tally;

static void tally(fuzz_tally *t, const fuzz_result *fr, int iter, const char *what)
{
    t->runs++;
    t->opened += fr->opened;
    t->ok += fr->ok;
    if (fr->wrong) {
        if (t->bad_iters < 3)
            snprintf(t->first[t->bad_iters], sizeof t->first[0],
                     "iteration %d%s: frame %lld embeds %lld (%d wrong frames, corrupt_packets %lld, "
                     "table rows %lld)",
                     iter, what, (long long)fr->first_frame, (long long)fr->first_embeds, fr->wrong,
                     (long long)fr->corrupt_packets, (long long)fr->num_frames);
        t->bad_iters++;
        t->bad_frames += fr->wrong;
    }
}

static void tally_print(const fuzz_tally *t, const char *policy)
{
    printf("      %s: %d runs, %d opened, %d REEL_OK, %d with a wrong frame (%d frames)\n", policy, t->runs, t->opened,
           t->ok, t->bad_iters, t->bad_frames);
    for (int k = 0; k < t->bad_iters && k < 3; k++) printf("        %s\n", t->first[k]);
}

/* 200 copies of a small mp4 with bytes flipped inside the sample data
 * (mdat) only: the frame table (moov) is intact, so under either policy
 * damage stays inside the GOPs that hold it: every frame of an undamaged
 * GOP comes back as exactly itself (a shifted index would break this). */
TEST(fuzz_flipped_bytes)
{
    char src[4096], path[4096];
    reel_synth_params p;
    tg_path(src, sizeof src, "fuzz_src.mp4");
    tg_params(&p, src, "h264", 64, 48, 24, 8, 2);
    tg_synth(&p);
    size_t n;
    uint8_t *orig = tg_read_file(src, &n);
    size_t ms = 0, me = 0;
    CHECK_MSG(mdat_range(orig, n, &ms, &me) && me > ms, "%s: no mdat", src);
    uint8_t *b = malloc(n);
    CHECK(b != NULL);
    tg_path(path, sizeof path, "fuzz.mp4");
    uint64_t rng = 20240601;
    fuzz_tally tf, ts;
    memset(&tf, 0, sizeof tf);
    memset(&ts, 0, sizeof ts);
    watchdog(240);
    for (int it = 0; it < 200; it++) {
        static char step[64];
        snprintf(step, sizeof step, "fuzz_flipped_bytes iteration %d", it);
        g_step = step;
        memcpy(b, orig, n);
        int flips = 1 + (int)tg_rand_below(&rng, 8);
        size_t where[8];
        for (int k = 0; k < flips; k++) {
            size_t at = ms + (size_t)tg_rand_below(&rng, (int64_t)(me - ms));
            uint8_t x = (uint8_t)tg_rand(&rng);
            b[at] ^= x ? x : 1;
            where[k] = at;
        }
        tg_write_file(path, b, n);
        for (int pol = REEL_CORRUPT_FAIL; pol <= REEL_CORRUPT_SKIP; pol++) {
            fuzz_tally *t = pol == REEL_CORRUPT_FAIL ? &tf : &ts;
            fuzz_result fr = fuzz_one_at(path, pol, 1, where, flips, it);
            if (fr.wrong && t->bad_iters < 3) {
                /* keep the first offenders for REEL_KEEP_TMP=1 */
                char keep[4096], name[64];
                snprintf(name, sizeof name, "fuzz_wrong_%s_%03d.mp4", pol ? "skip" : "fail", it);
                tg_copy_file(path, tg_path(keep, sizeof keep, name));
            }
            tally(t, &fr, it, "");
        }
    }
    alarm(0);
    free(b);
    free(orig);
    if (tf.bad_iters || ts.bad_iters) {
        tally_print(&tf, "REEL_CORRUPT_FAIL");
        tally_print(&ts, "REEL_CORRUPT_SKIP");
    }
    CHECK_MSG(tf.bad_iters == 0,
              "REEL_CORRUPT_FAIL: %d of 200 damaged copies returned REEL_OK with a frame "
              "outside the damaged GOPs that is not itself; first: %s",
              tf.bad_iters, tf.first[0]);
    CHECK_MSG(ts.bad_iters == 0,
              "REEL_CORRUPT_SKIP: %d of 200 damaged copies returned REEL_OK with a frame "
              "outside the damaged GOPs that is not itself; first: %s",
              ts.bad_iters, ts.first[0]);
}

/* Flips anywhere (headers, indexes, timestamps too) in mkv, avi and mp4:
 * any status may come back, but no crash, no hang, and only reel statuses.
 * Wrong frames are reported, not asserted: damaged timestamps legitimately
 * reorder the table. */
TEST(fuzz_flipped_bytes_anywhere)
{
    static const char *exts[] = { "mkv", "avi", "mp4" };
    char src[3][4096], path[4096];
    uint8_t *orig[3];
    size_t n[3];
    for (int e = 0; e < 3; e++) {
        char name[32];
        reel_synth_params p;
        snprintf(name, sizeof name, "fuzz_any.%s", exts[e]);
        tg_path(src[e], sizeof src[e], name);
        tg_params(&p, src[e], "h264", 64, 48, 24, 8, 2);
        tg_synth(&p);
        orig[e] = tg_read_file(src[e], &n[e]);
    }
    uint64_t rng = 777;
    fuzz_tally t[3][2];
    memset(t, 0, sizeof t);
    watchdog(240);
    for (int it = 0; it < 150; it++) {
        static char step[64];
        int e = it % 3;
        snprintf(step, sizeof step, "fuzz_flipped_bytes_anywhere iteration %d (%s)", it, exts[e]);
        g_step = step;
        uint8_t *b = malloc(n[e]);
        CHECK(b != NULL);
        memcpy(b, orig[e], n[e]);
        int flips = 1 + (int)tg_rand_below(&rng, 6);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)tg_rand_below(&rng, (int64_t)n[e]);
            uint8_t x = (uint8_t)tg_rand(&rng);
            b[at] ^= x ? x : 0x80;
        }
        char name[32];
        snprintf(name, sizeof name, "fuzz_any_copy.%s", exts[e]);
        tg_path(path, sizeof path, name);
        tg_write_file(path, b, n[e]);
        free(b);
        for (int pol = 0; pol < 2; pol++) {
            fuzz_result fr = fuzz_one(path, pol, 0, 24, it);
            tally(&t[e][pol], &fr, it, "");
        }
    }
    alarm(0);
    for (int e = 0; e < 3; e++)
        for (int pol = 0; pol < 2; pol++)
            if (t[e][pol].bad_iters) {
                char label[64];
                snprintf(label, sizeof label, "note: .%s %s", exts[e], pol ? "SKIP" : "FAIL");
                tally_print(&t[e][pol], label);
            }
    for (int e = 0; e < 3; e++) free(orig[e]);
}
