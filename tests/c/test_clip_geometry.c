/* test_clip_geometry.c: reel_loader_settings_get_clip_geometry (the crop,
 * output size and flip the loader picks for a clip, what reel.ray.ClipDecoder
 * decodes with) against what a loader run delivers for the same seed, epoch,
 * sample and clip, under each random transform; and its error statuses. */
#define _GNU_SOURCE
#include "harness.h"

#include "reel/pipeline.h"
#include "loader_common.h"

#include <stdlib.h>
#include <string.h>

/* What one loader run delivered: per clip, its (epoch, sample, clip) and
 * geometry. */
typedef struct seen {
    int64_t epoch, sample;
    int clip;
    int32_t crop[4], out[2];
    int flipped;
} seen;

/* Runs s->epochs epochs of `s` over ds (next gives NULL at each epoch's
 * end), recording every clip (at most cap). */
static int run_loader(reel_dataset *ds, const reel_loader_settings *s, seen *out, int cap)
{
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, s, &err));
    int n = 0;
    for (int64_t e = 0; e < s->epochs;) {
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) {
            e++;
            continue;
        }
        for (int64_t r = 0; r < b->num_clips; r++) {
            const reel_clip_info *c = &b->clips[r];
            CHECK(n < cap);
            CHECK_EQ_INT(c->attempt, 0); /* no replacement: the first draw is the one */
            out[n++] = (seen){ b->epoch,
                               c->sample,
                               c->clip,
                               { c->crop_x, c->crop_y, c->crop_w, c->crop_h },
                               { (int32_t)b->shape[3], (int32_t)b->shape[2] },
                               c->flipped };
        }
        CHECK_OK(reel_loader_release(l, b));
    }
    reel_loader_destroy(&l);
    return n;
}

/* The settings under test: 2 clips per video, 2 epochs, the given crop. */
static reel_loader_settings settings_with(reel_crop_kind crop, reel_flip_kind flip)
{
    reel_loader_settings s = readable_settings(); /* BTHWC: shape[2] = H, shape[3] = W */
    s.transform.crop = crop;
    s.transform.flip = flip;
    s.transform.crop_width = 64;
    s.transform.crop_height = 48;
    if (crop == REEL_CROP_RANDOM || crop == REEL_CROP_CENTER) {
        s.transform.resize = REEL_RESIZE_SHORT_SIDE;
        s.transform.short_side = 72; /* 160x120 -> 96x72, then a 64x48 crop */
    }
    s.sampler.clips_per_video = 2;
    s.epochs = 2;
    s.batch_size = 5;
    s.seed = 99;
    return s;
}

TEST(geometry_equals_what_the_loader_delivers_per_epoch_sample_and_clip)
{
    const struct {
        reel_crop_kind crop;
        reel_flip_kind flip;
        const char *name;
    } cases[] = {
        { REEL_CROP_RANDOM_RESIZED, REEL_FLIP_RANDOM, "random_resized + random flip" },
        { REEL_CROP_RANDOM, REEL_FLIP_RANDOM, "short side 72, random 64x48 + random flip" },
        { REEL_CROP_CENTER, REEL_FLIP_ALWAYS, "short side 72, center 64x48, always flipped" },
        { REEL_CROP_NONE, REEL_FLIP_NONE, "exact 80x60, no crop" },
    };
    reel_dataset *ds = dataset_of_videos(2); /* 16 samples of 160x120 */
    enum { CAP = 128 };
    seen got[CAP];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        reel_loader_settings s = settings_with(cases[k].crop, cases[k].flip);
        int n = run_loader(ds, &s, got, CAP);
        CHECK_MSG(n == 2 * 16 * 2, "%s: %d clips, not 64", cases[k].name, n);
        int flips = 0, crops_differ = 0, epochs_differ = 0;
        for (int i = 0; i < n; i++) {
            const seen *g = &got[i];
            int32_t crop[4], out[2];
            int flipped = -1;
            reel_error err;
            CHECK_OK(reel_loader_settings_get_clip_geometry(&s, g->epoch, g->sample, g->clip, VW, VH, crop, out,
                                                            &flipped, &err));
            CHECK_MSG(!memcmp(crop, g->crop, sizeof crop),
                      "%s: epoch %lld sample %lld clip %d: crop %d,%d %dx%d, the loader's %d,%d %dx%d", cases[k].name,
                      (long long)g->epoch, (long long)g->sample, g->clip, crop[0], crop[1], crop[2], crop[3],
                      g->crop[0], g->crop[1], g->crop[2], g->crop[3]);
            CHECK_MSG(out[0] == g->out[0] && out[1] == g->out[1], "%s: output %dx%d, the loader's %dx%d", cases[k].name,
                      out[0], out[1], g->out[0], g->out[1]);
            CHECK_MSG(flipped == g->flipped, "%s: epoch %lld sample %lld clip %d: flipped %d, the loader's %d",
                      cases[k].name, (long long)g->epoch, (long long)g->sample, g->clip, flipped, g->flipped);
            flips += flipped;
            crops_differ += memcmp(g->crop, got[0].crop, sizeof crop) != 0;
            /* the same sample and clip in the other epoch */
            CHECK_OK(reel_loader_settings_get_clip_geometry(&s, 1 - g->epoch, g->sample, g->clip, VW, VH, crop, out,
                                                            &flipped, &err));
            epochs_differ += memcmp(crop, g->crop, sizeof crop) != 0 || flipped != g->flipped;
        }
        if (cases[k].flip == REEL_FLIP_RANDOM) {
            CHECK_MSG(flips > 8 && flips < n - 8, "%s: %d of %d clips flipped", cases[k].name, flips, n);
            CHECK_MSG(crops_differ > n / 2, "%s: only %d crops differ from the first", cases[k].name, crops_differ);
            CHECK_MSG(epochs_differ > n / 2, "%s: only %d clips change with the epoch", cases[k].name, epochs_differ);
        } else if (cases[k].flip == REEL_FLIP_ALWAYS) {
            CHECK_EQ_INT(flips, n);
            CHECK_EQ_INT(crops_differ, 0);
            /* the centre 64x48 of 96x72 mapped back to 160x120: 106.7 x 80 source pixels, rounded, centred */
            CHECK_EQ_INT(got[0].crop[2], 107);
            CHECK_EQ_INT(got[0].crop[3], 80);
            CHECK(abs(2 * got[0].crop[0] + got[0].crop[2] - VW) <= 1 && 2 * got[0].crop[1] + got[0].crop[3] == VH);
            CHECK_EQ_INT(got[0].out[0], 64);
            CHECK_EQ_INT(got[0].out[1], 48);
        } else {
            CHECK_EQ_INT(flips, 0);
            CHECK(got[0].crop[0] == 0 && got[0].crop[1] == 0 && got[0].crop[2] == VW && got[0].crop[3] == VH);
            CHECK(got[0].out[0] == 80 && got[0].out[1] == 60);
        }
    }
    /* another seed, other choices */
    reel_loader_settings s = settings_with(REEL_CROP_RANDOM_RESIZED, REEL_FLIP_RANDOM);
    int32_t a[4], b[4], out[2];
    int fa, fb, differ = 0;
    reel_error err;
    for (int sample = 0; sample < 16; sample++) {
        CHECK_OK(reel_loader_settings_get_clip_geometry(&s, 0, sample, 0, VW, VH, a, out, &fa, &err));
        s.seed = 100;
        CHECK_OK(reel_loader_settings_get_clip_geometry(&s, 0, sample, 0, VW, VH, b, out, &fb, &err));
        s.seed = 99;
        differ += memcmp(a, b, sizeof a) != 0 || fa != fb;
    }
    CHECK_MSG(differ > 8, "only %d of 16 samples change with the seed", differ);
    reel_dataset_destroy(&ds);
}

TEST(geometry_rejects_bad_arguments_with_a_status_and_a_message)
{
    reel_loader_settings s = settings_with(REEL_CROP_RANDOM_RESIZED, REEL_FLIP_RANDOM);
    int32_t crop[4], out[2];
    int flipped;
    reel_error err;
#define BAD(call, what)                                                  \
    do {                                                                 \
        reel_error_clear(&err);                                          \
        CHECK_STATUS(call, REEL_E_INVALID_ARG);                          \
        CHECK_MSG(strstr(err.message, what) != NULL, "%s", err.message); \
    } while (0)
    BAD(reel_loader_settings_get_clip_geometry(NULL, 0, 0, 0, VW, VH, crop, out, &flipped, &err), "NULL");
    BAD(reel_loader_settings_get_clip_geometry(&s, 0, 0, 0, VW, VH, NULL, out, &flipped, &err), "NULL");
    BAD(reel_loader_settings_get_clip_geometry(&s, 0, 0, 0, VW, VH, crop, NULL, &flipped, &err), "NULL");
    BAD(reel_loader_settings_get_clip_geometry(&s, 0, 0, 0, VW, VH, crop, out, NULL, &err), "NULL");
    BAD(reel_loader_settings_get_clip_geometry(&s, -1, 0, 0, VW, VH, crop, out, &flipped, &err), "negative");
    BAD(reel_loader_settings_get_clip_geometry(&s, 0, -1, 0, VW, VH, crop, out, &flipped, &err), "negative");
    BAD(reel_loader_settings_get_clip_geometry(&s, 0, 0, -1, VW, VH, crop, out, &flipped, &err), "negative");
    BAD(reel_loader_settings_get_clip_geometry(&s, 0, 0, 0, 0, VH, crop, out, &flipped, &err), "empty frame");
    BAD(reel_loader_settings_get_clip_geometry(&s, 0, 0, 0, VW, -5, crop, out, &flipped, &err), "empty frame");
    reel_loader_settings bad = s;
    bad.transform.crop = (reel_crop_kind)77;
    BAD(reel_loader_settings_get_clip_geometry(&bad, 0, 0, 0, VW, VH, crop, out, &flipped, &err), "crop kind 77");
    bad = s;
    bad.transform.flip_probability = 1.5;
    BAD(reel_loader_settings_get_clip_geometry(&bad, 0, 0, 0, VW, VH, crop, out, &flipped, &err), "flip_probability");
    /* a NULL error pointer is allowed */
    CHECK_STATUS(reel_loader_settings_get_clip_geometry(&s, -1, 0, 0, VW, VH, crop, out, &flipped, NULL),
                 REEL_E_INVALID_ARG);
#undef BAD
}
