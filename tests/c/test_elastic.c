/* test_elastic.c: elastic resume (issue 16) in one process: W = 4 loaders
 * run k batches and checkpoint, then W' in {1, 2, 3, 5} loaders (and other
 * batch sizes and worker counts) finish the epoch from the checkpoint over
 * videos and a packed store; the samples are the dataset exactly once
 * (padding aside), each with the frames, crop, flip and pixels of an
 * uninterrupted single-rank run; the order's canonical spans; refusals. */
#include "harness.h"
#include "loader_common.h"

#include "reel/order.h"
#include "reel/store.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { TT = 4, MAXREC = 512 };

/* What a delivered clip is: sample, padding, frames, geometry and pixels. */
typedef struct rec {
    int64_t sample, requested, position;
    int padded, flipped, clip;
    int32_t crop[4];
    int64_t frames[TT];
    uint64_t pixels;
} rec;

typedef struct run_out {
    rec r[MAXREC];
    int n;
    int64_t last_seen; /* samples_seen of the last batch */
} run_out;

/* The dataset index at a position (>= 0) of o's current epoch. */
static int64_t order_sample(const reel_order *o, int64_t position)
{
    int64_t d = -1;
    CHECK_OK(reel_order_get_sample(o, position, &d, NULL));
    return d;
}

static void add_batch(run_out *o, const reel_batch *b)
{
    const size_t row = (size_t)b->strides[0] * (b->dtype == REEL_DTYPE_UINT8 ? 1 : 4);
    for (int64_t i = 0; i < b->num_clips; i++) {
        const reel_clip_info *c = &b->clips[i];
        CHECK(o->n < MAXREC);
        rec *r = &o->r[o->n++];
        r->sample = c->sample;
        r->requested = c->requested;
        r->position = c->position;
        r->padded = c->padded;
        r->flipped = c->flipped;
        r->clip = c->clip;
        r->crop[0] = c->crop_x;
        r->crop[1] = c->crop_y;
        r->crop[2] = c->crop_w;
        r->crop[3] = c->crop_h;
        memcpy(r->frames, c->frame_indices, sizeof r->frames);
        r->pixels = fnv(1469598103934665603ull, (const uint8_t *)b->data + (size_t)i * row, row);
    }
    o->last_seen = b->samples_seen;
}

/* One rank: from `from` (NULL: the epoch's start), `stop` batches (-1: to
 * the end of the epoch); its checkpoint after them into *cp. */
static void run_rank(reel_dataset *ds, const reel_loader_settings *s, const reel_loader_checkpoint *from, int stop,
                     run_out *o, reel_loader_checkpoint *cp)
{
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, s, &err));
    if (from) CHECK_OK(reel_loader_restore_checkpoint(l, from, &err));
    for (int k = 0; stop < 0 || k < stop; k++) {
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        add_batch(o, b);
        CHECK_OK(reel_loader_release(l, b));
    }
    if (cp) CHECK_OK(reel_loader_get_checkpoint(l, cp, NULL));
    reel_loader_destroy(&l);
}

static const rec *find(const run_out *ref, int64_t sample, int clip)
{
    for (int i = 0; i < ref->n; i++)
        if (ref->r[i].requested == sample && ref->r[i].clip == clip && !ref->r[i].padded) return &ref->r[i];
    return NULL;
}

/* Every clip equals the reference's for its sample (frames, crop, flip,
 * pixels, and the replacement decoded). */
static void check_against(const run_out *ref, const run_out *o)
{
    for (int i = 0; i < o->n; i++) {
        const rec *a = &o->r[i], *b = find(ref, a->requested, a->clip);
        CHECK_MSG(b != NULL, "sample %lld is not in the reference run", (long long)a->requested);
        CHECK_EQ_INT(a->sample, b->sample);
        CHECK_EQ_INT(a->flipped, b->flipped);
        CHECK(memcmp(a->crop, b->crop, sizeof a->crop) == 0);
        CHECK(memcmp(a->frames, b->frames, sizeof a->frames) == 0);
        CHECK_MSG(a->pixels == b->pixels, "sample %lld: other pixels after the resume", (long long)a->requested);
    }
}

static reel_loader_settings elastic_settings(void)
{
    reel_loader_settings s = readable_settings(); /* batches of 3, 4 frames */
    s.transform.resize = REEL_RESIZE_SHORT_SIDE;
    s.transform.short_side = 64;
    s.transform.crop = REEL_CROP_RANDOM;
    s.transform.crop_width = 48;
    s.transform.crop_height = 40;
    s.transform.flip = REEL_FLIP_RANDOM;
    s.batch_size = 2;
    s.open_threads = 1;
    s.decode_threads = 2;
    return s;
}

/* W = 4 ranks for k batches, then each (W', B') of `after` to the end. */
static void check_elastic(reel_dataset *ds, reel_loader_settings s, int k)
{
    const int64_t n = reel_dataset_get_size(ds);
    static run_out ref, part, rest;
    memset(&ref, 0, sizeof ref);
    reel_loader_settings one = s;
    run_rank(ds, &one, NULL, -1, &ref, NULL); /* uninterrupted, one rank */
    CHECK_EQ_INT(ref.n, n * s.sampler.clips_per_video);
    int replaced = 0;
    for (int i = 0; i < ref.n; i++) replaced += ref.r[i].sample != ref.r[i].requested;
    CHECK(s.on_error == REEL_ON_ERROR_REPLACE ? replaced > 0 : replaced == 0);

    s.world_size = 4;
    reel_loader_checkpoint cp[4];
    int *count = calloc((size_t)n, sizeof *count);
    memset(&part, 0, sizeof part);
    for (int r = 0; r < 4; r++) {
        s.rank = r;
        run_rank(ds, &s, NULL, k, &part, &cp[r]);
    }
    for (int r = 1; r < 4; r++) CHECK_MSG(memcmp(&cp[r], &cp[0], sizeof cp[0]) == 0, "rank %d saved another state", r);
    CHECK_EQ_INT(cp[0].version, REEL_CHECKPOINT_VERSION);
    CHECK_EQ_INT(cp[0].samples_seen, (int64_t)k * 4 * s.batch_size);
    CHECK_EQ_INT(cp[0].canonical_ranks, 4);
    CHECK_EQ_INT(cp[0].canonical_batch, s.batch_size);
    CHECK_EQ_INT(cp[0].world_size, 4);
    check_against(&ref, &part);

    static const struct {
        int world, batch, workers;
    } after[] = { { 1, 2, 1 }, { 2, 2, 1 }, { 3, 2, 1 }, { 5, 2, 1 }, { 2, 3, 1 }, { 3, 1, 2 } };
    for (size_t a = 0; a < sizeof after / sizeof after[0]; a++) {
        memset(count, 0, (size_t)n * sizeof *count);
        for (int i = 0; i < part.n; i++) count[part.r[i].requested] += !part.r[i].padded;
        reel_loader_settings s2 = s;
        s2.world_size = after[a].world;
        s2.batch_size = after[a].batch;
        s2.num_workers = after[a].workers;
        s2.decode_threads = 1 + (int)(a % 3); /* threads do not matter */
        s2.prefetch_batches = 1 + (int)(a % 2);
        int padded = 0;
        int64_t last_seen = -1;
        for (int r = 0; r < after[a].world; r++)
            for (int w = 0; w < after[a].workers; w++) {
                s2.rank = r;
                s2.worker = w;
                memset(&rest, 0, sizeof rest);
                run_rank(ds, &s2, &cp[r % 4], -1, &rest, NULL);
                check_against(&ref, &rest);
                for (int i = 0; i < rest.n; i++) {
                    if (rest.r[i].padded) {
                        padded++;
                        CHECK(rest.r[i].position >= n);
                    } else {
                        count[rest.r[i].requested]++;
                        CHECK(rest.r[i].position >= cp[0].samples_seen && rest.r[i].position < n);
                    }
                }
                if (w == after[a].workers - 1) last_seen = rest.last_seen;
            }
        for (int64_t i = 0; i < n; i++)
            CHECK_MSG(count[i] == s.sampler.clips_per_video, "W'=%d B'=%d workers %d: sample %lld seen %d times",
                      after[a].world, after[a].batch, after[a].workers, (long long)i, count[i]);
        const int64_t left = n - cp[0].samples_seen, V = (int64_t)after[a].world * after[a].workers;
        const int64_t tail = left % (V * after[a].batch);
        CHECK_EQ_INT(padded, tail ? (V - tail % V) % V * s.sampler.clips_per_video : 0);
        CHECK_EQ_INT(last_seen, n); /* the last batch ends the epoch */
    }
    free(count);
}

/* 25 samples: the eight videos three times, and one more. */
static reel_dataset *videos25(void)
{
    reel_dataset *ds = dataset_of_videos(3);
    CHECK_OK(reel_dataset_add(ds, g_paths[0], 0, 0, -1, NULL));
    return ds;
}

TEST(four_ranks_resume_on_one_two_three_and_five_over_videos)
{
    reel_dataset *ds = videos25();
    check_elastic(ds, elastic_settings(), 1);
    check_elastic(ds, elastic_settings(), 2);
    reel_dataset_destroy(&ds);
}

TEST(replacements_after_a_resume_are_those_of_an_uninterrupted_run)
{
    reel_dataset *ds = videos25();
    char bad[1100];
    snprintf(bad, sizeof bad, "%s/not_a_video.mp4", harness_tmpdir());
    tg_write_file(bad, "nope", 4);
    for (int i = 0; i < 3; i++) CHECK_OK(reel_dataset_add(ds, bad, 0, 0, -1, NULL)); /* 28 samples */
    reel_loader_settings s = elastic_settings();
    s.on_error = REEL_ON_ERROR_REPLACE;
    check_elastic(ds, s, 1);
    reel_dataset_destroy(&ds);
}

TEST(four_ranks_resume_over_a_packed_store_in_shards)
{
    make_videos();
    char list[1100], out[1100];
    snprintf(list, sizeof list, "%s/elastic.csv", harness_tmpdir());
    snprintf(out, sizeof out, "%s/elastic.store", harness_tmpdir());
    FILE *f = fopen(list, "w");
    CHECK(f != NULL);
    fprintf(f, "path,label\n");
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < NVID; i++) fprintf(f, "%s,%d\n", g_paths[i], i);
    fclose(f);
    reel_pack_settings ps;
    reel_pack_default_settings(&ps);
    ps.format = REEL_STORE_FORMAT_JPEG;
    ps.short_side = 64;
    ps.threads = 2;
    ps.shard_size = 200 * 1024; /* a few shards: the order goes shard by shard */
    reel_error err;
    CHECK_MSG(reel_pack(list, out, &ps, NULL, &err) == REEL_OK, "%s", err.message);
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create_from_path(&ds, out, &err));
    CHECK_EQ_INT(reel_dataset_get_size(ds), 24);
    reel_loader_settings s = elastic_settings();
    s.sampler.clips_per_video = 2;
    check_elastic(ds, s, 1);
    reel_dataset_destroy(&ds);
}

TEST(workers_round_robin_give_the_batches_of_a_run_without_them)
{
    reel_dataset *ds = videos25();
    reel_loader_settings s = elastic_settings();
    s.world_size = 2;
    s.rank = 1;
    static run_out plain, w[3];
    memset(&plain, 0, sizeof plain);
    run_rank(ds, &s, NULL, -1, &plain, NULL);
    /* the same rank's 3 workers, taken in turn as DataLoader does */
    reel_loader *l[3];
    for (int i = 0; i < 3; i++) {
        reel_loader_settings sw = s;
        sw.num_workers = 3;
        sw.worker = i;
        CHECK_OK(reel_loader_create(&l[i], ds, &sw, NULL));
    }
    int64_t prev_seen = 0;
    int j = 0, live = 3;
    for (int turn = 0; live; turn = (turn + 1) % 3) {
        if (!l[turn]) continue;
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l[turn], &b, NULL));
        if (!b) {
            reel_loader_destroy(&l[turn]);
            live--;
            continue;
        }
        CHECK(b->samples_seen >= prev_seen && b->samples_seen > 0); /* a global count that only grows */
        prev_seen = b->samples_seen;
        memset(&w[0], 0, sizeof w[0]);
        add_batch(&w[0], b);
        for (int i = 0; i < w[0].n; i++, j++) {
            if (j >= plain.n || w[0].r[i].padded) continue; /* the tail is split over 6 virtual ranks */
            CHECK_MSG(w[0].r[i].requested == plain.r[j].requested, "clip %d: sample %lld, without workers %lld", j,
                      (long long)w[0].r[i].requested, (long long)plain.r[j].requested);
        }
        CHECK_OK(reel_loader_release(l[turn], b));
    }
    CHECK_EQ_INT(prev_seen, 25);
    reel_dataset_destroy(&ds);
}

TEST(canonical_spans_are_read_front_to_back_by_their_rank)
{
    reel_order_settings os;
    reel_order_default_settings(&os);
    os.num_samples = 103;
    os.shuffle = 0; /* the identity: a sample is its permutation position */
    os.canonical_ranks = 4;
    os.canonical_batch = 5;
    reel_order *o = NULL;
    CHECK_OK(reel_order_create(&o, &os, NULL));
    int seen[103] = { 0 };
    for (int64_t g = 0; g < 103; g++) seen[order_sample(o, g)]++;
    for (int i = 0; i < 103; i++) CHECK_EQ_INT(seen[i], 1); /* a permutation */
    CHECK_EQ_INT(order_sample(o, 103), order_sample(o, 0)); /* padding wraps */
    int64_t d = -7;
    reel_error err;
    CHECK_STATUS(reel_order_get_sample(o, -1, &d, &err), REEL_E_OUT_OF_RANGE); /* no -1 for a dataset index */
    CHECK_MSG(strstr(err.message, "position -1") != NULL, "%s", err.message);
    CHECK_EQ_INT(d, -7);
    /* four ranks of batch 5: rank c reads span c (26, 26, 26, 25 samples) in order */
    for (int r = 0; r < 4; r++) {
        reel_stripe st = reel_stripe_make(103, 5);
        st.world_size = 4;
        st.rank = r;
        const int64_t lo = r * 25 + (r < 3 ? r : 3), hi = lo + (r < 3 ? 26 : 25);
        int64_t expect = lo;
        for (int64_t k = 0; k < reel_stripe_get_num_batches(&st); k++) {
            reel_stripe_batch b;
            CHECK_OK(reel_stripe_get_batch(&st, k, &b, NULL));
            for (int64_t g = b.first; g < b.first + b.count && g < 103; g++) {
                d = order_sample(o, g);
                if (expect < hi) {
                    CHECK_MSG(d == expect, "rank %d: %lld, expected %lld", r, (long long)d, (long long)expect);
                    expect++;
                }
            }
        }
        CHECK(expect >= lo + 24); /* all but the remainder round, in order */
    }
    CHECK_STATUS(reel_order_set_canonical(o, 0, 5, NULL), REEL_E_INVALID_ARG);
    reel_stripe st = reel_stripe_make(103, 5);
    reel_stripe_batch b;
    CHECK_STATUS(reel_stripe_get_batch(&st, 21, &b, NULL), REEL_E_OUT_OF_RANGE);
    st.samples_seen = 104;
    CHECK_STATUS(reel_stripe_check(&st, NULL), REEL_E_INVALID_ARG);
    reel_order_destroy(&o);
}

TEST(the_stripe_covers_the_remainder_for_any_topology)
{
    for (int64_t n = 1; n <= 61; n += 6)
        for (int mode = 0; mode < 2; mode++)
            for (int64_t seen = 0; seen <= n; seen += 1 + n / 5)
                for (int world = 1; world <= 5; world++)
                    for (int64_t batch = 1; batch <= 4; batch++)
                        for (int workers = 1; workers <= 3; workers += 2) {
                            int cover[64] = { 0 }, pads = 0;
                            int64_t batches = -1;
                            for (int r = 0; r < world; r++)
                                for (int w = 0; w < workers; w++) {
                                    reel_stripe st = reel_stripe_make(n, batch);
                                    st.samples_seen = seen;
                                    st.world_size = world;
                                    st.rank = r;
                                    st.num_workers = workers;
                                    st.worker = w;
                                    st.shard_mode = (reel_shard_mode)mode;
                                    int64_t nb = reel_stripe_get_num_batches(&st);
                                    if (batches < 0) batches = nb;
                                    CHECK_EQ_INT(nb, batches); /* every rank as many batches */
                                    for (int64_t k = 0; k < nb; k++) {
                                        reel_stripe_batch b;
                                        CHECK_OK(reel_stripe_get_batch(&st, k, &b, NULL));
                                        CHECK(b.samples_seen_after > seen && b.samples_seen_after <= n);
                                        for (int64_t g = b.first; g < b.first + b.count; g++) {
                                            CHECK(g >= seen);
                                            if (g < n)
                                                cover[g]++;
                                            else
                                                pads++;
                                        }
                                    }
                                }
                            const int64_t V = (int64_t)world * workers;
                            for (int64_t g = seen; g < n; g++) {
                                CHECK(cover[g] <= 1);
                                if (mode == REEL_SHARD_PAD) CHECK_EQ_INT(cover[g], 1);
                            }
                            if (mode == REEL_SHARD_DROP) {
                                int64_t got = 0;
                                for (int64_t g = seen; g < n; g++) got += cover[g];
                                CHECK(n - seen - got < V); /* fewer dropped than ranks */
                                CHECK_EQ_INT(pads, 0);
                            } else {
                                CHECK(pads < V);
                            }
                        }
}

TEST(checkpoints_of_another_dataset_seed_order_or_version_are_refused)
{
    reel_dataset *ds = videos25();
    reel_loader_settings s = elastic_settings();
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    reel_batch *b = NULL;
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK_EQ_INT(b->samples_seen, 2);
    CHECK_OK(reel_loader_release(l, b));
    reel_loader_checkpoint cp, bad;
    CHECK_OK(reel_loader_get_checkpoint(l, &cp, NULL));
    CHECK_EQ_INT(cp.samples_seen, 2);
    bad = cp;
    bad.seed++;
    CHECK_STATUS(reel_loader_restore_checkpoint(l, &bad, &err), REEL_E_INVALID_ARG);
    CHECK(tg_contains(err.message, "seed"));
    bad = cp;
    bad.version = REEL_CHECKPOINT_VERSION + 1;
    CHECK_STATUS(reel_loader_restore_checkpoint(l, &bad, &err), REEL_E_INVALID_ARG);
    CHECK(tg_contains(err.message, "newer reel"));
    bad = cp;
    bad.shuffle_window = 4;
    CHECK_STATUS(reel_loader_restore_checkpoint(l, &bad, &err), REEL_E_INVALID_ARG);
    CHECK(tg_contains(err.message, "shuffle_window"));
    bad = cp;
    bad.samples_seen = 26;
    CHECK_STATUS(reel_loader_restore_checkpoint(l, &bad, &err), REEL_E_INVALID_ARG);
    /* the same number of samples, other entries */
    reel_dataset *other = dataset_of_videos(3);
    CHECK_OK(reel_dataset_add(other, g_paths[1], 0, 0, -1, NULL));
    reel_loader *lo = NULL;
    CHECK_OK(reel_loader_create(&lo, other, &s, &err));
    CHECK_STATUS(reel_loader_restore_checkpoint(lo, &cp, &err), REEL_E_INVALID_ARG);
    CHECK(tg_contains(err.message, "another dataset"));
    reel_loader_destroy(&lo);
    reel_dataset_destroy(&other);
    /* refused means unchanged: the loader goes on where it was */
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b && b->position == 2);
    CHECK_OK(reel_loader_release(l, b));
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}
