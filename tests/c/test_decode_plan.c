/* test_decode_plan.c: the decode plan (src/decoder/decode_plan.c) on
 * hand-made frame tables: request sort and dedupe, keyframe runs, merging
 * across touching runs only, unclean keyframes, the retry pass, and the
 * reorder tail of tables without timestamps. */
#include "harness.h"

#include "decoder/decode_plan.h"

#include <string.h>

enum { N = 24 };

/* 24 frames in decode order = presentation order, keyframes at 0, 8, 16. */
typedef struct table {
    reel_table t;
    reel_frame_entry frames[N];
    int64_t frame_of_decode[N], seek_from[N], pos_of_decode[N];
    uint8_t key_state[N], key_of_decode[N];
} table;

static void make(table *x, int match_mode)
{
    memset(x, 0, sizeof *x);
    for (int i = 0; i < N; i++) {
        x->frames[i].decode_order = i;
        x->frames[i].flags = i % 8 == 0 ? REEL_FRAME_KEY : 0;
        x->frame_of_decode[i] = i;
        x->seek_from[i] = i / 8 * 8;
        x->frames[i].pos = 1000 + 100 * i; /* packets 100 bytes apart in the file */
        x->pos_of_decode[i] = x->frames[i].pos;
        x->key_of_decode[i] = i % 8 == 0;
    }
    x->t.n = N;
    x->t.n_decode = N;
    x->t.pos_of_decode = x->pos_of_decode;
    x->t.key_of_decode = x->key_of_decode;
    x->t.frames = x->frames;
    x->t.frame_of_decode = x->frame_of_decode;
    x->t.seek_from = x->seek_from;
    x->t.match_mode = match_mode;
}

static size_t runs(table *x, const int64_t *frames, size_t n, int retry, int reorder, reel__interval *iv)
{
    reel__wanted w[32];
    for (size_t i = 0; i < n; i++) w[i] = (reel__wanted){ frames[i], i, 1, 0 };
    return reel__plan_runs(&x->t, x->key_state, reorder, w, n, retry, iv);
}

TEST(requests_sort_and_dedupe_keeping_every_position)
{
    reel__req q[6] = { { 15, 0 }, { 3, 1 }, { 9, 2 }, { 3, 3 }, { 15, 4 }, { 3, 5 } };
    reel__wanted w[6];
    size_t nw = reel__plan_requests(q, 6, w);
    CHECK_EQ_INT(nw, 3);
    CHECK_EQ_INT(w[0].frame, 3);
    CHECK_EQ_INT(w[0].count, 3);
    CHECK_EQ_INT(w[1].frame, 9);
    CHECK_EQ_INT(w[1].count, 1);
    CHECK_EQ_INT(w[2].frame, 15);
    CHECK_EQ_INT(w[2].count, 2);
    /* the positions of frame 3 in request order */
    CHECK_EQ_INT(q[w[0].first].pos, 1);
    CHECK_EQ_INT(q[w[0].first + 1].pos, 3);
    CHECK_EQ_INT(q[w[0].first + 2].pos, 5);
    CHECK(reel__plan_find(w, nw, 9) == &w[1]);
    CHECK(reel__plan_find(w, nw, 10) == NULL);
    CHECK(reel__plan_find(w, nw, 2) == NULL);
}

TEST(runs_start_at_keyframes_and_merge_only_when_they_touch)
{
    table x;
    make(&x, REEL_MATCH_PTS);
    reel__interval iv[8];
    const int64_t a[] = { 15, 3, 9 }; /* GOPs 0 and 8: a gap between 3 and 8 */
    CHECK_EQ_INT(runs(&x, a, 3, 0, 0, iv), 2);
    CHECK_EQ_INT(iv[0].s, 0);
    CHECK_EQ_INT(iv[0].e, 3);
    CHECK_EQ_INT(iv[1].s, 8);
    CHECK_EQ_INT(iv[1].e, 15);
    const int64_t b[] = { 8, 7 }; /* [0,7] and [8,8] touch: one run, no seek */
    CHECK_EQ_INT(runs(&x, b, 2, 0, 0, iv), 1);
    CHECK_EQ_INT(iv[0].s, 0);
    CHECK_EQ_INT(iv[0].e, 8);
    const int64_t c[] = { 20 };
    CHECK_EQ_INT(runs(&x, c, 1, 0, 0, iv), 1);
    CHECK_EQ_INT(iv[0].s, 16);
    CHECK_EQ_INT(iv[0].e, 20);
}

TEST(done_frames_are_not_planned)
{
    table x;
    make(&x, REEL_MATCH_PTS);
    reel__wanted w[2] = { { 3, 0, 1, 1 }, { 12, 1, 1, 0 } };
    reel__interval iv[2];
    CHECK_EQ_INT(reel__plan_runs(&x.t, NULL, 0, w, 2, 0, iv), 1);
    CHECK_EQ_INT(iv[0].s, 8);
    CHECK_EQ_INT(iv[0].e, 12);
}

TEST(unclean_keyframes_and_the_retry_pass_start_earlier)
{
    table x;
    make(&x, REEL_MATCH_PTS);
    reel__interval iv[4];
    x.key_state[8] = REEL_KEY_UNCLEAN; /* frame 9 must start at 0 */
    const int64_t a[] = { 3, 9 };
    CHECK_EQ_INT(runs(&x, a, 2, 0, 0, iv), 1);
    CHECK_EQ_INT(iv[0].s, 0);
    CHECK_EQ_INT(iv[0].e, 9);
    CHECK_EQ_INT(reel__plan_clean_key_before(&x.t, x.key_state, 16), 0);
    memset(x.key_state, 0, sizeof x.key_state);
    CHECK_EQ_INT(reel__plan_clean_key_before(&x.t, x.key_state, 16), 8);
    /* the retry pass: one keyframe back */
    const int64_t b[] = { 17 };
    CHECK_EQ_INT(runs(&x, b, 1, 1, 0, iv), 1);
    CHECK_EQ_INT(iv[0].s, 8);
    CHECK_EQ_INT(iv[0].e, 17);
    const int64_t c[] = { 2 }; /* nothing before the first keyframe */
    CHECK_EQ_INT(runs(&x, c, 1, 1, 0, iv), 1);
    CHECK_EQ_INT(iv[0].s, 0);
}

TEST(count_mode_runs_go_on_by_the_reorder_depth_within_the_gop)
{
    table x;
    make(&x, REEL_MATCH_COUNT);
    reel__interval iv[4];
    const int64_t a[] = { 4 };
    CHECK_EQ_INT(runs(&x, a, 1, 0, 2, iv), 1);
    CHECK_EQ_INT(iv[0].e, 6);
    const int64_t b[] = { 6 }; /* stops before keyframe 8 */
    CHECK_EQ_INT(runs(&x, b, 1, 0, 3, iv), 1);
    CHECK_EQ_INT(iv[0].e, 7);
    const int64_t c[] = { 22 }; /* and at the end of the table */
    CHECK_EQ_INT(runs(&x, c, 1, 0, 5, iv), 1);
    CHECK_EQ_INT(iv[0].e, N - 1);
}

TEST(byte_ranges_cover_a_run_to_the_next_packet)
{
    table x;
    make(&x, REEL_MATCH_PTS);
    int64_t lo = 0, hi = 0;
    CHECK_EQ_INT(reel__plan_byte_range(&x.t, 8, 10, 5000, &lo, &hi), 0);
    CHECK_EQ_INT(lo, 1800);
    CHECK_EQ_INT(hi, 2100); /* where packet 11 begins */
    CHECK_EQ_INT(reel__plan_byte_range(&x.t, 16, N - 1, 5000, &lo, &hi), 0);
    CHECK_EQ_INT(lo, 2600);
    CHECK_EQ_INT(hi, 5000); /* the last packet runs to the end of the file */
    /* packets out of file order: the run ends where the next packet in the
     * file begins, wherever it sits in decode order */
    x.pos_of_decode[9] = 3000;
    CHECK_EQ_INT(reel__plan_byte_range(&x.t, 8, 9, 5000, &lo, &hi), 0);
    CHECK_EQ_INT(lo, 1800);
    CHECK_EQ_INT(hi, 3100);
    x.pos_of_decode[9] = -1; /* no byte positions: no range */
    CHECK_EQ_INT(reel__plan_byte_range(&x.t, 8, 10, 5000, &lo, &hi), -1);
    CHECK_EQ_INT(reel__plan_byte_range(&x.t, 5, 3, 5000, &lo, &hi), -1);
}
