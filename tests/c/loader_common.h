/* loader_common.h: what the loader tests share: eight synthetic videos whose
 * frames carry their index, datasets of them, settings whose output can be
 * read back, batch digests and one-epoch runs. Header-only, static. */
#ifndef REEL_TEST_LOADER_COMMON_H
#define REEL_TEST_LOADER_COMMON_H

#include "harness.h"

#include "reel/pipeline.h"
#include "testgen.h"

#include <unistd.h>

/* ------------------------------------------------------------ fixtures */

#define NVID 8
#define VW   160
#define VH   120

static TG_UNUSED char g_paths[NVID][1024];
static TG_UNUSED int g_frames[NVID];
static TG_UNUSED int g_made;

/* The videos live in the test's temporary folder, or in
 * $REEL_PIPELINE_VIDEOS when a parent test already wrote them there (the
 * valgrind run re-uses them). */
static TG_UNUSED void make_videos(void)
{
    if (g_made) return;
    const char *dir = harness_env("REEL_PIPELINE_VIDEOS", NULL);
    for (int i = 0; i < NVID; i++) {
        snprintf(g_paths[i], sizeof g_paths[i], "%s/v%02d.mp4", dir ? dir : harness_tmpdir(), i);
        g_frames[i] = 30 + 7 * i;
        if (dir && access(g_paths[i], R_OK) == 0) continue;
        reel_synth_params p;
        reel_synth_default_params(&p);
        p.path = g_paths[i];
        p.width = VW;
        p.height = VH;
        p.num_frames = g_frames[i] = 30 + 7 * i; /* 30 .. 79 frames */
        p.gop = 12;
        p.seed = (unsigned)i + 1;
        tg_synth(&p); /* skips when this FFmpeg cannot encode it */
    }
    g_made = 1;
}

/* A dataset of the videos, `reps` times over, labels = video number. */
static TG_UNUSED reel_dataset *dataset_of_videos(int reps)
{
    make_videos();
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create(&ds, &err));
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < NVID; i++) CHECK_OK(reel_dataset_add(ds, g_paths[i], i, 0, -1, &err));
    return ds;
}

/* Settings whose output can be read back: whole frame, exact resize, HWC uint8. */
static TG_UNUSED reel_loader_settings readable_settings(void)
{
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    s.transform.resize = REEL_RESIZE_EXACT;
    s.transform.resize_width = 80;
    s.transform.resize_height = 60;
    s.transform.crop = REEL_CROP_NONE;
    s.transform.layout = REEL_BATCH_BTHWC;
    s.sampler.frames_per_clip = 4;
    s.sampler.frame_stride = 2;
    s.batch_size = 3;
    s.seed = 1234;
    s.open_threads = 2;
    s.decode_threads = 3;
    return s;
}

static TG_UNUSED uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Digest of everything a batch says: data and per-clip facts. */
static TG_UNUSED uint64_t batch_digest(const reel_batch *b, int T)
{
    uint64_t h = 1469598103934665603ull;
    h = fnv(h, b->data, b->bytes);
    h = fnv(h, b->shape, sizeof b->shape);
    for (int64_t r = 0; r < b->num_clips; r++) {
        const reel_clip_info *c = &b->clips[r];
        h = fnv(h, &c->sample, sizeof c->sample);
        h = fnv(h, &c->position, sizeof c->position);
        h = fnv(h, &c->clip, sizeof c->clip);
        h = fnv(h, &c->flipped, sizeof c->flipped);
        h = fnv(h, &c->crop_x, 4 * sizeof c->crop_x);
        h = fnv(h, c->frame_indices, (size_t)T * sizeof *c->frame_indices);
        h = fnv(h, &b->labels[r], sizeof b->labels[r]);
    }
    return h;
}

/* Index embedded in frame (row, t) of an HWC uint8 batch; un-mirrors a
 * flipped clip first. */
static TG_UNUSED int64_t read_frame_index(const reel_batch *b, int64_t row, int t, int flipped)
{
    const int H = (int)b->shape[2], W = (int)b->shape[3];
    const uint8_t *f = (const uint8_t *)b->data + row * b->strides[0] + t * b->strides[1];
    if (!flipped) return reel_synth_read_index(f, W, H, (int64_t)W * 3);
    uint8_t *tmp = malloc((size_t)W * H * 3);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) memcpy(tmp + ((size_t)y * W + x) * 3, f + ((size_t)y * W + (W - 1 - x)) * 3, 3);
    int64_t v = reel_synth_read_index(tmp, W, H, (int64_t)W * 3);
    free(tmp);
    return v;
}

/* Runs one whole epoch, returning digests (caller frees) and the count. */
static TG_UNUSED uint64_t *run_epoch(reel_loader *l, int T, int *count)
{
    uint64_t *d = malloc(1024 * sizeof *d);
    int n = 0;
    reel_error err;
    for (;;) {
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        CHECK(n < 1024);
        d[n++] = batch_digest(b, T);
        CHECK_OK(reel_loader_release(l, b));
    }
    *count = n;
    return d;
}

#endif
