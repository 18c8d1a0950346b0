/* test_pipeline_units.c: the loader's parts that need no decoding: the
 * counter-based RNG, the bounded queue, the samplers, the epoch plan
 * (shuffle, windows and blocks, sharding, batches) and the clip geometry.
 * Datasets and JSON: test_pipeline_dataset.c. */
#define _GNU_SOURCE
#include "harness.h"

#include "reel/pipeline.h"
#include "pipeline/geometry.h"
#include "pipeline/plan.h"
#include "pipeline/queue.h"
#include "pipeline/rng.h"
#include "pipeline/sampler_internal.h"

#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ RNG */

TEST(philox_known_answers)
{
    /* Random123 kat_vectors, philox4x32 with 10 rounds. */
    uint32_t out[4];
    const uint32_t c0[4] = { 0, 0, 0, 0 }, k0[2] = { 0, 0 };
    reel__philox4x32(c0, k0, out);
    CHECK_EQ_INT(out[0], 0x6627e8d5u);
    CHECK_EQ_INT(out[1], 0xe169c58du);
    CHECK_EQ_INT(out[2], 0xbc57ac4cu);
    CHECK_EQ_INT(out[3], 0x9b00dbd8u);
    const uint32_t c1[4] = { 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu };
    const uint32_t k1[2] = { 0xffffffffu, 0xffffffffu };
    reel__philox4x32(c1, k1, out);
    CHECK_EQ_INT(out[0], 0x408f276du);
    CHECK_EQ_INT(out[1], 0x41c83b0eu);
    CHECK_EQ_INT(out[2], 0xa20bc7c6u);
    CHECK_EQ_INT(out[3], 0x6d5451fdu);
    const uint32_t c2[4] = { 0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u };
    const uint32_t k2[2] = { 0xa4093822u, 0x299f31d0u };
    reel__philox4x32(c2, k2, out);
    CHECK_EQ_INT(out[0], 0xd16cfe09u);
    CHECK_EQ_INT(out[1], 0x94fdccebu);
    CHECK_EQ_INT(out[2], 0x5001e420u);
    CHECK_EQ_INT(out[3], 0x24126ea1u);
}

TEST(rng_is_a_pure_function_of_its_address)
{
    reel_rng_key a = { 42, 3, 1000, REEL_RNG_CROP, 0 };
    reel_rng_key b = a;
    CHECK(reel__rng_u64(&a, 7) == reel__rng_u64(&b, 7));
    /* every field of the address changes the value */
    uint64_t base = reel__rng_u64(&a, 7);
    b.seed = 43;
    CHECK(reel__rng_u64(&b, 7) != base);
    b = a;
    b.epoch = 4;
    CHECK(reel__rng_u64(&b, 7) != base);
    b = a;
    b.sample = 1001;
    CHECK(reel__rng_u64(&b, 7) != base);
    b = a;
    b.sample = 1000 + (1ull << 32);
    CHECK(reel__rng_u64(&b, 7) != base);
    b = a;
    b.purpose = REEL_RNG_SAMPLER;
    CHECK(reel__rng_u64(&b, 7) != base);
    b = a;
    b.attempt = 1;
    CHECK(reel__rng_u64(&b, 7) != base);
    b = a;
    CHECK(reel__rng_u64(&a, 8) != base);
}

TEST(rng_below_is_uniform_and_in_range)
{
    reel_rng_key k = { 1, 0, 0, REEL_RNG_SAMPLER, 0 };
    enum { N = 7, DRAWS = 70000 };
    int hist[N] = { 0 };
    double sum = 0;
    for (int i = 0; i < DRAWS; i++) {
        k.sample = (uint64_t)i;
        uint64_t v = reel__rng_below(&k, 0, N);
        CHECK(v < N);
        hist[v]++;
        double d = reel__rng_double(&k, 1);
        CHECK(d >= 0 && d < 1);
        sum += d;
    }
    for (int i = 0; i < N; i++) CHECK_MSG(abs(hist[i] - DRAWS / N) < 600, "bucket %d has %d", i, hist[i]);
    CHECK_NEAR(sum / DRAWS, 0.5, 0.01);
    CHECK_EQ_INT(reel__rng_below(&k, 0, 1), 0);
    /* huge bounds work too */
    CHECK(reel__rng_below(&k, 3, UINT64_MAX) < UINT64_MAX);
}

TEST(permutation_is_a_permutation_and_depends_on_seed_and_epoch)
{
    enum { N = 1000 };
    int64_t p[N], q[N];
    reel__rng_permutation(5, 0, 1, p, N);
    char seen[N] = { 0 };
    for (int i = 0; i < N; i++) {
        CHECK(p[i] >= 0 && p[i] < N);
        CHECK(!seen[p[i]]);
        seen[p[i]] = 1;
    }
    reel__rng_permutation(5, 0, 1, q, N);
    CHECK(memcmp(p, q, sizeof p) == 0);
    reel__rng_permutation(5, 1, 1, q, N);
    CHECK(memcmp(p, q, sizeof p) != 0);
    reel__rng_permutation(6, 0, 1, q, N);
    CHECK(memcmp(p, q, sizeof p) != 0);
    reel__rng_permutation(5, 0, 0, q, N);
    for (int i = 0; i < N; i++) CHECK_EQ_INT(q[i], i);
}

TEST(windowed_permutation_reads_blocks_in_a_shuffled_order)
{
    enum { N = 1003, W = 64 };
    int64_t p[N], q[N], blocks[(N + W - 1) / W];
    reel__rng_permutation_windowed(5, 0, W, p, N, blocks);
    char seen[N] = { 0 };
    for (int i = 0; i < N; i++) {
        CHECK(p[i] >= 0 && p[i] < N);
        CHECK(!seen[p[i]]);
        seen[p[i]] = 1;
    }
    /* Each run of the epoch comes from one block of W consecutive indices,
     * all of it before the next block: reads move W records at a time. */
    int64_t pos = 0, moved_blocks = 0, moved_within = 0;
    while (pos < N) {
        int64_t blk = p[pos] / W, len = blk == N / W ? N % W : W;
        if (blk != pos / W) moved_blocks++;
        for (int64_t i = 0; i < len; i++) {
            CHECK_EQ_INT(p[pos + i] / W, blk);
            if (p[pos + i] != blk * W + i) moved_within++;
        }
        pos += len;
    }
    CHECK(moved_blocks > 0 && moved_within > 0); /* shuffled at both levels */
    reel__rng_permutation_windowed(5, 0, W, q, N, blocks);
    CHECK(memcmp(p, q, sizeof p) == 0); /* deterministic */
    reel__rng_permutation_windowed(5, 1, W, q, N, blocks);
    CHECK(memcmp(p, q, sizeof p) != 0); /* another epoch */
    reel__rng_permutation_windowed(6, 0, W, q, N, blocks);
    CHECK(memcmp(p, q, sizeof p) != 0); /* another seed */
    /* A window of the whole dataset (or 0) is the full shuffle. */
    reel__rng_permutation(5, 3, 1, p, N);
    reel__rng_permutation_windowed(5, 3, N, q, N, blocks);
    CHECK(memcmp(p, q, sizeof p) == 0);
    reel__rng_permutation_windowed(5, 3, 0, q, N, blocks);
    CHECK(memcmp(p, q, sizeof p) == 0);
}

/* A plan as the loader makes one: N samples, `world` ranks, batches of
 * `batch`; window > 0 a windowed shuffle, starts/nblocks read blocks. */
static int plan_make(reel_plan *p, int64_t n, int world, int rank, int mode, int64_t batch, int drop_last, int shuffle,
                     uint64_t seed, int64_t window, const int64_t *starts, size_t nblocks)
{
    reel_order_settings os;
    reel_order_default_settings(&os);
    os.num_samples = n;
    os.seed = seed;
    os.shuffle = shuffle;
    os.shuffle_window = window;
    os.block_starts = starts;
    os.num_blocks = nblocks;
    reel_stripe st = reel_stripe_make(n, batch);
    st.world_size = world;
    st.rank = rank;
    st.shard_mode = (reel_shard_mode)mode;
    st.drop_last = drop_last;
    return reel__plan_init(p, &os, &st, NULL);
}

/* Calls fn on every order position of a rank's whole epoch. */
#define FOR_EACH_POSITION(p, g)                                                                  \
    for (int64_t k_ = 0, nb_ = reel__plan_batches((p), 0); k_ < nb_; k_++)                       \
        for (reel_stripe_batch b_ = { 0 }; !b_.count && (reel__plan_batch((p), 0, k_, &b_), 1);) \
            for (int64_t g = b_.first; g < b_.first + b_.count; g++)

TEST(plan_with_a_shuffle_window_shards_and_resumes_like_a_full_shuffle)
{
    enum { N = 103 };
    for (int mode = 0; mode < 2; mode++)
        for (int world = 1; world <= 4; world++) {
            int counts[N] = { 0 };
            for (int rank = 0; rank < world; rank++) {
                reel_plan p;
                CHECK_OK(plan_make(&p, N, world, rank, mode, 8, 0, 1, 77, 16, NULL, 0));
                reel__plan_epoch(&p, 2);
                FOR_EACH_POSITION(&p, g)
                {
                    int padded;
                    int64_t d = reel__plan_sample(&p, g, &padded);
                    CHECK(d >= 0 && d < N);
                    if (!padded) counts[d]++;
                }
                /* the plan is a pure function of (seed, epoch) */
                int64_t first = reel__plan_sample(&p, 0, NULL);
                reel__plan_epoch(&p, 3);
                reel__plan_epoch(&p, 2);
                CHECK_EQ_INT(reel__plan_sample(&p, 0, NULL), first);
                reel__plan_free(&p);
            }
            int64_t covered = 0;
            for (int i = 0; i < N; i++) {
                CHECK(counts[i] <= 1);
                covered += counts[i];
            }
            CHECK_EQ_INT(covered, mode == REEL_SHARD_PAD ? N : (N / world) * world);
        }
    reel_plan p;
    CHECK_STATUS(plan_make(&p, N, 1, 0, REEL_SHARD_PAD, 8, 0, 1, 77, -2, NULL, 0), REEL_E_INVALID_ARG);
    reel__plan_free(&p);
}

TEST(plan_over_blocks_of_any_size_reads_each_block_as_one_run)
{
    enum { N = 23 };
    const int64_t starts[] = { 0, 5, 6, 13, 20, 23 }; /* 5 blocks: 5, 1, 7, 7, 3 */
    int64_t prev_first = -1, differ = 0;
    for (int64_t epoch = 0; epoch < 4; epoch++) {
        reel_plan p;
        CHECK_OK(plan_make(&p, N, 1, 0, REEL_SHARD_PAD, 4, 0, 1, 31, 0, starts, 5));
        reel__plan_epoch(&p, epoch);
        int seen[N] = { 0 }, changes = 0, prev_block = -1;
        for (int64_t pos = 0; pos < N; pos++) {
            int64_t d = reel__plan_sample(&p, pos, NULL);
            CHECK(d >= 0 && d < N);
            seen[d]++;
            int b = 0;
            while (d >= starts[b + 1]) b++;
            if (pos && b != prev_block) changes++;
            prev_block = b;
        }
        for (int i = 0; i < N; i++) CHECK_EQ_INT(seen[i], 1);
        CHECK_EQ_INT(changes, 4); /* each block once, in one run */
        int64_t first = reel__plan_sample(&p, 0, NULL);
        differ += epoch && first != prev_first;
        prev_first = first;
        reel__plan_free(&p);
    }
    CHECK(differ > 0); /* another order each epoch */
    /* blocks that do not cover the dataset are refused */
    reel_plan p;
    const int64_t bad[] = { 0, 5, 22 };
    CHECK_STATUS(plan_make(&p, N, 1, 0, REEL_SHARD_PAD, 4, 0, 1, 31, 0, bad, 2), REEL_E_INVALID_ARG);
    reel__plan_free(&p);
}

/* ---------------------------------------------------------------- queue */

typedef struct qctx {
    reel_queue *q;
    int base, count;
    int64_t sum;
} qctx;

static void *producer(void *arg)
{
    qctx *c = arg;
    for (int i = 0; i < c->count; i++) reel__queue_push(c->q, (void *)(intptr_t)(c->base + i + 1));
    return NULL;
}

static void *consumer(void *arg)
{
    qctx *c = arg;
    void *it;
    while (reel__queue_pop(c->q, &it)) c->sum += (intptr_t)it;
    return NULL;
}

TEST(queue_moves_every_item_once_between_threads)
{
    reel_queue q;
    CHECK_OK(reel__queue_init(&q, 4));
    enum { P = 4, C = 3, PER = 5000 };
    pthread_t pt[P], ct[C];
    qctx pc[P], cc[C];
    for (int i = 0; i < C; i++) {
        cc[i] = (qctx){ &q, 0, 0, 0 };
        pthread_create(&ct[i], NULL, consumer, &cc[i]);
    }
    for (int i = 0; i < P; i++) {
        pc[i] = (qctx){ &q, i * PER, PER, 0 };
        pthread_create(&pt[i], NULL, producer, &pc[i]);
    }
    for (int i = 0; i < P; i++) pthread_join(pt[i], NULL);
    reel__queue_close(&q);
    int64_t sum = 0;
    for (int i = 0; i < C; i++) {
        pthread_join(ct[i], NULL);
        sum += cc[i].sum;
    }
    int64_t n = (int64_t)P * PER;
    CHECK_EQ_INT(sum, n * (n + 1) / 2);
    CHECK_EQ_INT(q.pushed, n);
    CHECK_EQ_INT(q.popped, n);
    reel__queue_destroy(&q);
}

TEST(queue_bounds_close_and_force)
{
    reel_queue q;
    CHECK_OK(reel__queue_init(&q, 2));
    void *it = NULL;
    CHECK_EQ_INT(reel__queue_try_pop(&q, &it), 0);
    CHECK_EQ_INT(reel__queue_push(&q, (void *)1), 1);
    CHECK_EQ_INT(reel__queue_push(&q, (void *)2), 1);
    /* full: a forced push still goes in, beyond the bound */
    CHECK_EQ_INT(reel__queue_push_force(&q, (void *)3), 1);
    CHECK_EQ_INT(reel__queue_push_force(&q, (void *)4), 1);
    int64_t depth;
    reel__queue_depth(&q, &depth, NULL);
    CHECK_EQ_INT(depth, 4);
    reel__queue_close(&q);
    CHECK_EQ_INT(reel__queue_push(&q, (void *)5), 0);
    CHECK_EQ_INT(reel__queue_push_force(&q, (void *)5), 0);
    for (intptr_t i = 1; i <= 4; i++) {
        CHECK_EQ_INT(reel__queue_pop(&q, &it), 1);
        CHECK_EQ_INT((intptr_t)it, i);
    }
    CHECK_EQ_INT(reel__queue_pop(&q, &it), 0); /* closed and empty: no block */
    reel__queue_reopen(&q);
    CHECK_EQ_INT(reel__queue_push(&q, (void *)9), 1);
    CHECK_EQ_INT(reel__queue_pop(&q, &it), 1);
    CHECK_EQ_INT((intptr_t)it, 9);
    reel__queue_destroy(&q);
}

static void *closer(void *arg)
{
    usleep(20000);
    reel__queue_close(arg);
    return NULL;
}

TEST(queue_close_wakes_blocked_pushers_and_poppers)
{
    reel_queue q;
    CHECK_OK(reel__queue_init(&q, 1));
    pthread_t t;
    pthread_create(&t, NULL, closer, &q);
    void *it;
    CHECK_EQ_INT(reel__queue_pop(&q, &it), 0); /* woken by close */
    pthread_join(t, NULL);
    reel__queue_reopen(&q);
    CHECK_EQ_INT(reel__queue_push(&q, (void *)1), 1);
    pthread_create(&t, NULL, closer, &q);
    CHECK_EQ_INT(reel__queue_push(&q, (void *)2), 0); /* was blocked on full */
    pthread_join(t, NULL);
    reel__queue_destroy(&q);
}

/* -------------------------------------------------------------- sampler */

/* A constant-rate table: n frames of `dur` ticks starting at `start`. */
static reel_frame_entry *cfr_table(int64_t n, int64_t start, int64_t dur)
{
    reel_frame_entry *t = calloc((size_t)n, sizeof *t);
    for (int64_t i = 0; i < n; i++) {
        t[i].pts = start + i * dur;
        t[i].duration = dur;
        t[i].pos = -1;
        t[i].decode_order = (int32_t)i;
    }
    return t;
}

static reel_sampler_settings sampler_defaults(int kind)
{
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    s.sampler.kind = kind;
    return s.sampler;
}

static reel_sampler_video input_for(const reel_frame_entry *t, int64_t n, int num, int den)
{
    reel_sampler_video in;
    memset(&in, 0, sizeof in);
    in.table = t;
    in.num_frames = n;
    in.time_base_num = num;
    in.time_base_den = den;
    in.average_fps = 0;
    in.segment_start = 0;
    in.segment_end = -1;
    in.name = "v";
    return in;
}

TEST(sampler_random_indices_fit_and_are_deterministic)
{
    reel_frame_entry *tab = cfr_table(250, 0, 512); /* 25 fps at 1/12800 */
    reel_sampler_video in = input_for(tab, 250, 1, 12800);
    reel_sampler_settings s = sampler_defaults(REEL_SAMPLER_RANDOM_INDICES);
    s.clips_per_video = 4;
    s.frames_per_clip = 8;
    s.frame_stride = 3;
    int64_t a[32], b[32];
    reel_rng_key k = { 9, 0, 17, REEL_RNG_SAMPLER, 0 };
    reel_error err;
    CHECK_OK(reel__sampler_run(&s, &in, &k, a, &err));
    CHECK_OK(reel__sampler_run(&s, &in, &k, b, &err));
    CHECK(memcmp(a, b, sizeof a) == 0);
    for (int c = 0; c < 4; c++) {
        CHECK(a[c * 8] >= 0 && a[c * 8] <= 250 - 22);
        for (int j = 1; j < 8; j++) CHECK_EQ_INT(a[c * 8 + j], a[c * 8] + 3 * j);
    }
    k.epoch = 1;
    CHECK_OK(reel__sampler_run(&s, &in, &k, b, &err));
    CHECK(memcmp(a, b, sizeof a) != 0);
    free(tab);
}

TEST(sampler_regular_indices_are_linspace)
{
    reel_frame_entry *tab = cfr_table(100, 0, 1);
    reel_sampler_video in = input_for(tab, 100, 1, 25);
    reel_sampler_settings s = sampler_defaults(REEL_SAMPLER_REGULAR_INDICES);
    s.clips_per_video = 3;
    s.frames_per_clip = 4;
    int64_t o[12];
    reel_rng_key k = { 0, 0, 0, REEL_RNG_SAMPLER, 0 };
    CHECK_OK(reel__sampler_run(&s, &in, &k, o, NULL));
    /* starts linspace(0, 96, 3) = 0, 48, 96 */
    const int64_t want[12] = { 0, 1, 2, 3, 48, 49, 50, 51, 96, 97, 98, 99 };
    for (int i = 0; i < 12; i++) CHECK_EQ_INT(o[i], want[i]);
    /* an explicit range, negative end from the end */
    s.range_start = 10;
    s.range_end = -50; /* 50 */
    s.clips_per_video = 2;
    s.frames_per_clip = 1;
    CHECK_OK(reel__sampler_run(&s, &in, &k, o, NULL));
    CHECK_EQ_INT(o[0], 10);
    CHECK_EQ_INT(o[1], 49);
    free(tab);
}

TEST(sampler_policies_past_the_end)
{
    reel_frame_entry *tab = cfr_table(5, 0, 1);
    reel_sampler_video in = input_for(tab, 5, 1, 25);
    reel_sampler_settings s = sampler_defaults(REEL_SAMPLER_REGULAR_INDICES);
    s.frames_per_clip = 8;
    int64_t o[8];
    reel_rng_key k = { 0, 0, 0, REEL_RNG_SAMPLER, 0 };
    CHECK_OK(reel__sampler_run(&s, &in, &k, o, NULL));
    const int64_t rep[8] = { 0, 1, 2, 3, 4, 4, 4, 4 };
    for (int i = 0; i < 8; i++) CHECK_EQ_INT(o[i], rep[i]);
    s.policy = REEL_CLIP_WRAP;
    CHECK_OK(reel__sampler_run(&s, &in, &k, o, NULL));
    const int64_t wrap[8] = { 0, 1, 2, 3, 4, 0, 1, 2 };
    for (int i = 0; i < 8; i++) CHECK_EQ_INT(o[i], wrap[i]);
    s.policy = REEL_CLIP_DROP;
    reel_error err;
    reel_error_clear(&err);
    in.name = "short.mp4";
    CHECK_STATUS(reel__sampler_run(&s, &in, &k, o, &err), REEL_E_OUT_OF_RANGE);
    CHECK(strncmp(err.message, "short.mp4: ", 11) == 0);
    /* a clip that fits is not dropped */
    s.frames_per_clip = 5;
    CHECK_OK(reel__sampler_run(&s, &in, &k, o, NULL));
    free(tab);
}

/* The public face (reel/sampler.h) is the loader's sampler: the policy
 * "error", clip starts every N seconds, torch.linspace's arithmetic, the
 * random draws of (seed, epoch, sample), and a short buffer refused. */
TEST(public_sampler_is_the_loaders)
{
    reel_frame_entry *tab = cfr_table(60, 0, 512); /* 60 frames, 25 fps at 1/12800 */
    reel_sampler_video v = { .table = tab,
                             .num_frames = 60,
                             .time_base_num = 1,
                             .time_base_den = 12800,
                             .average_fps = 0,
                             .segment_start = 0,
                             .segment_end = -1,
                             .name = "clip.mp4" };
    reel_sampler_settings s;
    reel_sampler_default_settings(&s);
    CHECK_EQ_INT(s.kind, REEL_SAMPLER_RANDOM_INDICES);
    CHECK_EQ_INT(s.frames_per_clip, 8);
    int64_t o[64], p[64];
    reel_error err;
    /* the same draws as the loader's reel__sampler_run for (seed, epoch, sample) */
    s.clips_per_video = 5;
    s.frames_per_clip = 3;
    CHECK_OK(reel_sampler_run(&s, &v, 77, 2, 9, o, 64, NULL));
    reel_sampler_video in = input_for(tab, 60, 1, 12800);
    reel_rng_key k = { 77, 2, 9, REEL_RNG_SAMPLER, 0 };
    CHECK_OK(reel__sampler_run(&s, &in, &k, p, NULL));
    CHECK(memcmp(o, p, 15 * sizeof *o) == 0);
    CHECK_STATUS(reel_sampler_run(&s, &v, 77, 2, 9, o, 14, NULL), REEL_E_BUFFER_TOO_SMALL);
    /* torch.linspace(0, 59 - 2, 7, dtype=int): 0 9 19 28 38 47 57 */
    s.kind = REEL_SAMPLER_REGULAR_INDICES;
    s.clips_per_video = 7;
    s.frames_per_clip = 3;
    CHECK_OK(reel_sampler_run(&s, &v, 0, 0, 0, o, 64, NULL));
    const int64_t lin[7] = { 0, 9, 19, 28, 38, 47, 57 };
    for (int c = 0; c < 7; c++) CHECK_EQ_INT(o[c * 3], lin[c]);
    /* policy error: a clip running past the end fails, naming the video */
    s.clips_per_video = 1;
    s.frames_per_clip = 4;
    s.frame_stride = 4;
    s.range_start = 50;
    s.range_end = 51;
    s.policy = REEL_CLIP_ERROR;
    reel_error_clear(&err);
    CHECK_STATUS(reel_sampler_run(&s, &v, 0, 0, 0, o, 64, &err), REEL_E_OUT_OF_RANGE);
    CHECK(strstr(err.message, "clip.mp4: ") == err.message && strstr(err.message, "policy error"));
    s.policy = REEL_CLIP_REPEAT_LAST;
    CHECK_OK(reel_sampler_run(&s, &v, 0, 0, 0, o, 64, NULL));
    CHECK_EQ_INT(o[2], 58);
    CHECK_EQ_INT(o[3], 58);
    /* regular times every 0.5 s: starts 0, .5, 1.0, 1.5 -> frames 0, 12, 25, 37 */
    reel_sampler_default_settings(&s);
    s.kind = REEL_SAMPLER_REGULAR_TIMES;
    s.clips_per_video = 4;
    s.frames_per_clip = 1;
    s.seconds_between_clip_starts = 0.5;
    CHECK_OK(reel_sampler_run(&s, &v, 0, 0, 0, o, 64, NULL));
    const int64_t every[4] = { 0, 12, 25, 37 };
    for (int c = 0; c < 4; c++) CHECK_EQ_INT(o[c], every[c]);
    s.seconds_between_clip_starts = -1;
    CHECK_STATUS(reel_sampler_run(&s, &v, 0, 0, 0, o, 64, NULL), REEL_E_INVALID_ARG);
    free(tab);
}

TEST(sampler_time_kinds)
{
    /* 10 s at 25 fps, time base 1/12800, stream starting at 0.5 s */
    reel_frame_entry *tab = cfr_table(250, 6400, 512);
    reel_sampler_video in = input_for(tab, 250, 1, 12800);
    reel_sampler_settings s = sampler_defaults(REEL_SAMPLER_REGULAR_TIMES);
    s.clips_per_video = 2;
    s.frames_per_clip = 3;
    s.seconds_between_frames = 1.0;
    int64_t o[6];
    reel_rng_key k = { 0, 0, 0, REEL_RNG_SAMPLER, 0 };
    CHECK_OK(reel__sampler_run(&s, &in, &k, o, NULL));
    /* range [0.5, 10.5 - 2) -> starts 0.5 and 4.5 s: frames 0,25,50 and 100,125,150 */
    const int64_t want[6] = { 0, 25, 50, 100, 125, 150 };
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(o[i], want[i]);
    /* default step is 1 / fps: consecutive frames */
    s.seconds_between_frames = 0;
    s.clips_per_video = 1;
    CHECK_OK(reel__sampler_run(&s, &in, &k, o, NULL));
    CHECK_EQ_INT(o[0], 0);
    CHECK_EQ_INT(o[1], 1);
    CHECK_EQ_INT(o[2], 2);
    /* random times: inside the range, frames one second apart */
    s.kind = REEL_SAMPLER_RANDOM_TIMES;
    s.seconds_between_frames = 1.0;
    s.clips_per_video = 2;
    for (int e = 0; e < 20; e++) {
        k.epoch = (uint64_t)e;
        CHECK_OK(reel__sampler_run(&s, &in, &k, o, NULL));
        for (int c = 0; c < 2; c++) {
            CHECK(o[c * 3] >= 0 && o[c * 3] < 200);
            CHECK_EQ_INT(o[c * 3 + 1], o[c * 3] + 25);
            CHECK_EQ_INT(o[c * 3 + 2], o[c * 3] + 50);
        }
    }
    free(tab);
}

TEST(sampler_segments_restrict_the_frames)
{
    reel_frame_entry *tab = cfr_table(250, 0, 1); /* 25 fps, tb 1/25 */
    reel_sampler_video in = input_for(tab, 250, 1, 25);
    in.segment_start = 2.0; /* frame 50 */
    in.segment_end = 4.0;   /* up to frame 99 */
    int64_t first, count;
    reel__sampler_segment(&in, &first, &count);
    CHECK_EQ_INT(first, 50);
    CHECK_EQ_INT(count, 50);
    reel_sampler_settings s = sampler_defaults(REEL_SAMPLER_RANDOM_INDICES);
    s.frames_per_clip = 8;
    int64_t o[8];
    for (int e = 0; e < 50; e++) {
        reel_rng_key k = { 3, (uint64_t)e, 0, REEL_RNG_SAMPLER, 0 };
        CHECK_OK(reel__sampler_run(&s, &in, &k, o, NULL));
        for (int j = 0; j < 8; j++) CHECK(o[j] >= 50 && o[j] < 100);
    }
    s.kind = REEL_SAMPLER_REGULAR_TIMES;
    s.clips_per_video = 2;
    s.frames_per_clip = 1;
    reel_rng_key k0 = { 0, 0, 0, REEL_RNG_SAMPLER, 0 };
    CHECK_OK(reel__sampler_run(&s, &in, &k0, o, NULL));
    CHECK_EQ_INT(o[0], 50); /* 2.0 s */
    CHECK_EQ_INT(o[1], 75); /* 2.0 + (4.0 - 2.0) / 2 */
    /* a segment with no frames fails */
    in.segment_start = 20.0;
    in.segment_end = 30.0;
    CHECK_STATUS(reel__sampler_run(&s, &in, &k0, o, NULL), REEL_E_OUT_OF_RANGE);
    free(tab);
}

TEST(sampler_rejects_bad_settings)
{
    reel_sampler_settings s = sampler_defaults(REEL_SAMPLER_RANDOM_INDICES);
    CHECK_OK(reel__sampler_check(&s, NULL));
    s.frames_per_clip = 0;
    CHECK_STATUS(reel__sampler_check(&s, NULL), REEL_E_INVALID_ARG);
    s = sampler_defaults(9);
    CHECK_STATUS(reel__sampler_check(&s, NULL), REEL_E_INVALID_ARG);
    s = sampler_defaults(REEL_SAMPLER_RANDOM_INDICES);
    s.frame_stride = 0;
    CHECK_STATUS(reel__sampler_check(&s, NULL), REEL_E_INVALID_ARG);
    s = sampler_defaults(REEL_SAMPLER_RANDOM_INDICES);
    s.policy = 5;
    CHECK_STATUS(reel__sampler_check(&s, NULL), REEL_E_INVALID_ARG);
}

/* ----------------------------------------------------------------- plan */

TEST(plan_shards_are_disjoint_cover_everything_and_even)
{
    enum { N = 103 };
    for (int mode = 0; mode < 2; mode++) {
        for (int world = 1; world <= 8; world++) {
            int counts[N] = { 0 };
            int64_t per_rank = -1, batches = -1;
            for (int rank = 0; rank < world; rank++) {
                reel_plan p;
                CHECK_OK(plan_make(&p, N, world, rank, mode, 8, 0, 1, 77, 0, NULL, 0));
                reel__plan_epoch(&p, 2);
                if (per_rank < 0) {
                    per_rank = p.per_rank;
                    batches = reel__plan_batches(&p, 0);
                }
                CHECK_EQ_INT(p.per_rank, per_rank);               /* same count on every rank */
                CHECK_EQ_INT(reel__plan_batches(&p, 0), batches); /* same batch count */
                int64_t rows = 0;
                FOR_EACH_POSITION(&p, g)
                {
                    int padded;
                    int64_t d = reel__plan_sample(&p, g, &padded);
                    CHECK(d >= 0 && d < N);
                    if (!padded) counts[d]++;
                    rows++;
                }
                CHECK_EQ_INT(rows, per_rank);
                reel__plan_free(&p);
            }
            int64_t covered = 0;
            for (int i = 0; i < N; i++) {
                CHECK(counts[i] <= 1); /* disjoint */
                covered += counts[i];
            }
            if (mode == REEL_SHARD_PAD) {
                CHECK_EQ_INT(covered, N); /* everything */
                CHECK_EQ_INT(per_rank, (N + world - 1) / world);
            } else {
                CHECK_EQ_INT(covered, (N / world) * world);
                CHECK_EQ_INT(per_rank, N / world);
            }
        }
    }
}

TEST(plan_batches_drop_last_and_resume_offsets)
{
    reel_plan p;
    CHECK_OK(plan_make(&p, 70, 1, 0, REEL_SHARD_PAD, 32, 0, 0, 0, 0, NULL, 0));
    CHECK_EQ_INT(reel__plan_batches(&p, 0), 3);
    reel_stripe_batch b;
    reel__plan_batch(&p, 0, 2, &b);
    CHECK_EQ_INT(b.first, 64);
    CHECK_EQ_INT(b.count, 6);
    CHECK_EQ_INT(b.samples_seen_after, 70);
    CHECK_EQ_INT(reel__plan_batches(&p, 40), 1); /* resumed at 40: [40, 70) */
    reel__plan_batch(&p, 40, 0, &b);
    CHECK_EQ_INT(b.first, 40);
    CHECK_EQ_INT(b.count, 30);
    reel__plan_free(&p);
    CHECK_OK(plan_make(&p, 70, 1, 0, REEL_SHARD_PAD, 32, 1, 0, 0, 0, NULL, 0));
    CHECK_EQ_INT(reel__plan_batches(&p, 0), 2);
    reel__plan_batch(&p, 0, 1, &b);
    CHECK_EQ_INT(b.samples_seen_after, 70); /* the dropped rest ends the epoch too */
    reel__plan_free(&p);
    /* fewer samples than one batch with drop_last: empty */
    CHECK_STATUS(plan_make(&p, 10, 1, 0, REEL_SHARD_PAD, 32, 1, 0, 0, 0, NULL, 0), REEL_E_EMPTY);
    CHECK_STATUS(plan_make(&p, 3, 4, 0, REEL_SHARD_DROP, 1, 0, 0, 0, 0, NULL, 0), REEL_E_EMPTY);
    CHECK_STATUS(plan_make(&p, 3, 2, 2, REEL_SHARD_PAD, 1, 0, 0, 0, 0, NULL, 0), REEL_E_INVALID_ARG);
}

/* ------------------------------------------------------------- geometry */

static reel_clip_transform transform_defaults(void)
{
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    return s.transform;
}

TEST(geometry_short_side_centre_crop_maps_to_a_source_crop)
{
    reel_clip_transform ct = transform_defaults(); /* short side 256, centre 224 */
    int w, h;
    CHECK_OK(reel__geometry_check(&ct, &w, &h, NULL));
    CHECK_EQ_INT(w, 224);
    CHECK_EQ_INT(h, 224);
    reel_rng_key k = { 0, 0, 0, REEL_RNG_CROP, 0 };
    reel_transform t;
    /* 340x256 is already short side 256: an exact 224x224 crop at (58, 16) */
    CHECK_OK(reel__geometry_frame(&ct, 340, 256, &k, 0, &t, NULL));
    CHECK_EQ_INT(t.crop_x, 58);
    CHECK_EQ_INT(t.crop_y, 16);
    CHECK_EQ_INT(t.crop_w, 224);
    CHECK_EQ_INT(t.crop_h, 224);
    CHECK_EQ_INT(t.width, 224);
    CHECK_EQ_INT(t.height, 224);
    /* 1920x1080 -> 455x256 -> crop 224 at (116, 16) -> source (490, 68, 945, 945) */
    CHECK_OK(reel__geometry_frame(&ct, 1920, 1080, &k, 0, &t, NULL));
    CHECK_EQ_INT(t.crop_w, 945);
    CHECK_EQ_INT(t.crop_h, 945);
    CHECK_EQ_INT(t.crop_y, 68);
    CHECK(t.crop_x + t.crop_w <= 1920);
    CHECK_EQ_INT(t.width, 224);
    /* a frame smaller than the crop is scaled up, never out of bounds */
    ct.resize = REEL_RESIZE_KEEP;
    CHECK_OK(reel__geometry_frame(&ct, 160, 120, &k, 0, &t, NULL));
    CHECK(t.crop_w == 0 || (t.crop_x + t.crop_w <= 160 && t.crop_y + t.crop_h <= 120));
    CHECK_EQ_INT(t.width, 224);
}

TEST(geometry_random_choices_are_per_clip_and_reproducible)
{
    reel_clip_transform ct = transform_defaults();
    ct.crop = REEL_CROP_RANDOM;
    ct.flip = REEL_FLIP_RANDOM;
    reel_rng_key k = { 11, 0, 5, REEL_RNG_CROP, 0 };
    reel_transform a, b;
    int flips = 0, distinct = 0;
    int prev_x = -1;
    for (int clip = 0; clip < 200; clip++) {
        CHECK_OK(reel__geometry_frame(&ct, 640, 360, &k, clip, &a, NULL));
        CHECK_OK(reel__geometry_frame(&ct, 640, 360, &k, clip, &b, NULL));
        CHECK(memcmp(&a, &b, sizeof a) == 0);
        CHECK(a.crop_x >= 0 && a.crop_x + a.crop_w <= 640);
        CHECK(a.crop_y >= 0 && a.crop_y + a.crop_h <= 360);
        flips += a.flip_horizontal;
        if (a.crop_x != prev_x) distinct++;
        prev_x = a.crop_x;
    }
    CHECK(flips > 60 && flips < 140);
    CHECK(distinct > 100);
}

TEST(geometry_random_resized_crop_respects_scale_and_ratio)
{
    reel_clip_transform ct = transform_defaults();
    ct.crop = REEL_CROP_RANDOM_RESIZED;
    ct.crop_width = ct.crop_height = 112;
    reel_rng_key k = { 1, 2, 3, REEL_RNG_CROP, 0 };
    for (int clip = 0; clip < 300; clip++) {
        reel_transform t;
        CHECK_OK(reel__geometry_frame(&ct, 400, 300, &k, clip, &t, NULL));
        int cw = t.crop_w ? t.crop_w : 400, ch = t.crop_h ? t.crop_h : 300;
        CHECK(t.crop_x >= 0 && t.crop_x + cw <= 400 && t.crop_y >= 0 && t.crop_y + ch <= 300);
        double area = (double)cw * ch / (400.0 * 300.0);
        CHECK_MSG(area >= 0.07 && area <= 1.0, "area fraction %g", area);
        double ratio = (double)cw / ch;
        CHECK_MSG(ratio > 0.7 && ratio < 1.4, "ratio %g", ratio);
        CHECK_EQ_INT(t.width, 112);
        CHECK_EQ_INT(t.height, 112);
    }
}

TEST(geometry_rejects_unfixed_sizes_and_bad_values)
{
    reel_clip_transform ct = transform_defaults();
    int w, h;
    ct.crop = REEL_CROP_NONE;
    CHECK_STATUS(reel__geometry_check(&ct, &w, &h, NULL), REEL_E_INVALID_ARG); /* short side only */
    ct.resize = REEL_RESIZE_EXACT;
    ct.resize_width = 128;
    ct.resize_height = 96;
    CHECK_OK(reel__geometry_check(&ct, &w, &h, NULL));
    CHECK_EQ_INT(w, 128);
    CHECK_EQ_INT(h, 96);
    ct = transform_defaults();
    ct.pixels.std[1] = 0;
    CHECK_STATUS(reel__geometry_check(&ct, &w, &h, NULL), REEL_E_INVALID_ARG);
    ct = transform_defaults();
    ct.pixels.dtype = 17;
    CHECK_STATUS(reel__geometry_check(&ct, &w, &h, NULL), REEL_E_INVALID_ARG);
}

TEST(layouts_have_consistent_strides)
{
    const int T = 8, H = 4, W = 5;
    for (int nc = 1; nc <= 3; nc += 2) /* gray and RGB */
        for (int layout = 0; layout < 3; layout++) {
            int64_t shape[5], st[5];
            reel__layout_shape(layout, 2, T, H, W, nc, shape, st);
            CHECK_EQ_INT(st[4], 1);
            for (int d = 3; d >= 0; d--) CHECK_EQ_INT(st[d], st[d + 1] * shape[d + 1]);
            CHECK_EQ_INT(st[0], (int64_t)nc * T * H * W);
            /* element (row, t, c, y, x) reached through the frame strides */
            char *hit = calloc((size_t)(2 * st[0]), 1);
            for (int64_t row = 0; row < 2; row++)
                for (int t = 0; t < T; t++) {
                    int64_t off, sc, sy, sx;
                    reel__layout_frame(layout, T, H, W, nc, row, t, &off, &sc, &sy, &sx);
                    for (int c = 0; c < nc; c++)
                        for (int y = 0; y < H; y++)
                            for (int x = 0; x < W; x++) {
                                int64_t e = off + c * sc + y * sy + x * sx;
                                CHECK(e >= 0 && e < 2 * st[0]);
                                CHECK(!hit[e]);
                                hit[e] = 1;
                            }
                }
            for (int64_t e = 0; e < 2 * st[0]; e++) CHECK(hit[e]); /* dense */
            free(hit);
        }
    int64_t shape[5], st[5];
    reel__layout_shape(REEL_BATCH_BCTHW, 1, T, H, W, 3, shape, st);
    CHECK_EQ_INT(shape[1], 3);
    CHECK_EQ_INT(shape[2], T);
    reel__layout_shape(REEL_BATCH_BTHWC, 1, T, H, W, 3, shape, st);
    CHECK_EQ_INT(shape[4], 3);
    reel__layout_shape(REEL_BATCH_BTCHW, 1, T, H, W, 1, shape, st);
    CHECK_EQ_INT(shape[2], 1);
}
