/* test_api_common.h: what test_api.c and test_sidecar.c share: the size of
 * their generated videos, a cached generator, and checks that two decoders
 * agree on tables and frames. Header-only, static. */
#ifndef REEL_TEST_API_COMMON_H
#define REEL_TEST_API_COMMON_H

#include "testgen.h"

#define W 160
#define H 120
#define N 90

/* A generated video in the tmpdir (cached per name). */
static TG_UNUSED const char *video(const char *name, const char *codec, int bframes)
{
    static char paths[8][4096];
    static const char *names[8];
    for (int i = 0; i < 8; i++)
        if (names[i] && !strcmp(names[i], name) && tg_file_exists(paths[i])) return paths[i];
    int k = 0;
    while (k < 7 && names[k]) k++;
    reel_synth_params p;
    tg_path(paths[k], sizeof paths[k], name);
    tg_params(&p, paths[k], codec, W, H, N, 16, bframes);
    tg_synth(&p);
    names[k] = name;
    return paths[k];
}

/* The tables of two decoders are identical, row for row. */
static TG_UNUSED void check_same_table(reel_decoder *a, reel_decoder *b)
{
    int64_t na = 0, nb = 0, ka = 0, kb = 0;
    const reel_frame_entry *ta = reel_decoder_get_frame_table(a, &na);
    const reel_frame_entry *tb = reel_decoder_get_frame_table(b, &nb);
    CHECK_EQ_INT(na, nb);
    for (int64_t i = 0; i < na; i++) {
        CHECK_MSG(ta[i].pts == tb[i].pts && ta[i].duration == tb[i].duration && ta[i].pos == tb[i].pos &&
                      ta[i].flags == tb[i].flags && ta[i].decode_order == tb[i].decode_order,
                  "frame table row %lld differs: pts %lld/%lld dur %lld/%lld pos %lld/%lld flags %d/%d order %d/%d",
                  (long long)i, (long long)ta[i].pts, (long long)tb[i].pts, (long long)ta[i].duration,
                  (long long)tb[i].duration, (long long)ta[i].pos, (long long)tb[i].pos, ta[i].flags, tb[i].flags,
                  ta[i].decode_order, tb[i].decode_order);
    }
    const int64_t *kfa = reel_decoder_get_keyframes(a, &ka), *kfb = reel_decoder_get_keyframes(b, &kb);
    CHECK_EQ_INT(ka, kb);
    for (int64_t i = 0; i < ka; i++) CHECK_EQ_INT(kfa[i], kfb[i]);
    const reel_video_info *ia = reel_decoder_get_info(a), *ib = reel_decoder_get_info(b);
    CHECK_EQ_INT(ia->num_frames, ib->num_frames);
    CHECK_EQ_INT(ia->num_keyframes, ib->num_keyframes);
    CHECK_EQ_INT(ia->width, ib->width);
    CHECK_EQ_INT(ia->height, ib->height);
    CHECK_EQ_INT(ia->source_width, ib->source_width);
    CHECK_EQ_INT(ia->source_height, ib->source_height);
    CHECK_EQ_INT(ia->start_pts, ib->start_pts);
    CHECK_EQ_INT(ia->time_base_num, ib->time_base_num);
    CHECK_EQ_INT(ia->time_base_den, ib->time_base_den);
    CHECK_EQ_INT(ia->avg_fps_num, ib->avg_fps_num);
    CHECK_EQ_INT(ia->avg_fps_den, ib->avg_fps_den);
    CHECK_NEAR(ia->duration, ib->duration, 0.0);
    CHECK_NEAR(ia->start_time, ib->start_time, 0.0);
    CHECK_EQ_STR(ia->codec, ib->codec);
    CHECK_EQ_STR(ia->pix_fmt, ib->pix_fmt);
}

/* A fixed awkward request. */
static const int64_t k_req[] = { 0, -1, 45, 17, 17, 3, 88, 60, 31, 0, 72, 16, 15 };
#define K_REQ_N (sizeof k_req / sizeof k_req[0])

/* Both decoders give byte-identical frames for k_req, embedding the right indices. */
static TG_UNUSED void check_same_frames(reel_decoder *a, reel_decoder *b)
{
    size_t fb = tg_frame_bytes(a, NULL, NULL, NULL);
    uint8_t *x = tg_get(a, k_req, K_REQ_N, NULL, NULL);
    uint8_t *y = tg_get(b, k_req, K_REQ_N, NULL, NULL);
    int64_t n = reel_decoder_get_info(a)->num_frames;
    for (size_t i = 0; i < K_REQ_N; i++) {
        int64_t want = k_req[i] < 0 ? k_req[i] + n : k_req[i];
        CHECK_EQ_INT(tg_read_idx(x + i * fb, W, H), want);
        CHECK_MSG(memcmp(x + i * fb, y + i * fb, fb) == 0, "frame %lld differs between the two decoders",
                  (long long)want);
    }
    free(x);
    free(y);
}

#endif
