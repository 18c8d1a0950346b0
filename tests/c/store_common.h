/* store_common.h: header-only helpers shared by the store tests
 * (test_store.c, test_pipeline_store.c, test_store_hardening.c): a
 * Kinetics-like folder of generated videos, scratch paths, packing,
 * reading a whole record back, a visitor that converts frames, PSNR, and
 * copying or patching a store's index. Static, like testgen.h. */
#ifndef REEL_TEST_STORE_COMMON_H
#define REEL_TEST_STORE_COMMON_H

#include "harness.h"
#include "testgen.h"

#include "reel/store.h"

#include <math.h>
#include <sys/stat.h>

/* A Kinetics-like folder `name` (under the test's tmpdir) of n generated
 * h264 videos of w x h in two classes; video i has frames0 + i * step
 * frames, keyframes every gop, bframes B-frames and seed seed0 + i. Frames
 * carry their index. Made once per process; returns its path. */
typedef struct sc_videos {
    const char *name;
    int n, w, h, frames0, step, gop, bframes;
    unsigned seed0;
} sc_videos;

static TG_UNUSED const char *sc_dataset(const sc_videos *v)
{
    static char roots[4][1024];
    static int made;
    for (int k = 0; k < made; k++)
        if (!strcmp(strrchr(roots[k], '/') + 1, v->name)) return roots[k];
    CHECK(made < 4);
    char *root = roots[made];
    reel_set_ffmpeg_log_level(0);
    snprintf(root, sizeof roots[0], "%s/%s", harness_tmpdir(), v->name);
    mkdir(root, 0755);
    static const char *classes[2] = { "archery", "bowling" };
    for (int i = 0; i < v->n; i++) {
        char dir[1100], path[1200];
        snprintf(dir, sizeof dir, "%s/%s", root, classes[i % 2]);
        mkdir(dir, 0755);
        snprintf(path, sizeof path, "%s/v%d.mp4", dir, i);
        reel_synth_params p;
        tg_params(&p, path, "h264", v->w, v->h, v->frames0 + v->step * i, v->gop, v->bframes);
        p.seed = v->seed0 + (unsigned)i;
        tg_synth(&p);
    }
    made++;
    return root;
}

/* harness_tmpdir()/name; eight results live at once. */
static TG_UNUSED const char *sc_tmp(const char *name)
{
    static char bufs[8][1100];
    static int k;
    char *b = bufs[k++ % 8];
    snprintf(b, 1100, "%s/%s", harness_tmpdir(), name);
    return b;
}

/* Packs src into out with s; fails the test on error (returns the report). */
static TG_UNUSED reel_pack_report sc_pack(const char *src, const char *out, const reel_pack_settings *s)
{
    reel_error err;
    reel_error_clear(&err);
    reel_pack_report rep;
    memset(&rep, 0, sizeof rep);
    int r = reel_pack(src, out, s, &rep, &err);
    CHECK_MSG(r == REEL_OK, "reel_pack(%s): %d %s", out, r, err.message);
    return rep;
}

/* A visitor that converts each visited frame with t (NULL: RGB24 at its
 * own size) into buf at its request position, and records its stored
 * position and pts when index/pts are set. */
typedef struct sc_sink {
    uint8_t *buf;
    size_t fb;
    const reel_transform *t;
    int64_t *index, *pts;
} sc_sink;

static TG_UNUSED int sc_sink_fn(void *opaque, const reel_frame *f, size_t pos)
{
    sc_sink *k = opaque;
    reel_converter *c = NULL;
    reel_error err;
    if (reel_converter_create(&c, &err) != REEL_OK) return REEL_E_NOMEM;
    reel_transform def;
    reel_transform_default_settings(&def);
    int r = reel_converter_run(c, f, k->t ? k->t : &def, k->buf + pos * k->fb, k->fb, &err);
    reel_converter_destroy(&c);
    if (k->index) k->index[pos] = reel_frame_get_index(f);
    if (k->pts) k->pts[pos] = reel_frame_get_pts(f);
    return r;
}

/* Every stored frame of record i (RGB24 at the stored size, in stored
 * order), read through the public reader in reverse order; its pts in
 * *pts_out (may be NULL). */
static TG_UNUSED uint8_t *sc_read_record(reel_store *s, int64_t i, reel_store_record *rec, int64_t **pts_out)
{
    CHECK_OK(reel_store_get_record(s, i, rec, NULL));
    size_t n = (size_t)rec->num_frames, fb = (size_t)rec->width * rec->height * 3;
    sc_sink k = { malloc(n * fb), fb, NULL, malloc(n * 8), malloc(n * 8) };
    int64_t *pos = malloc(n * 8);
    CHECK(k.buf && k.index && k.pts && pos);
    for (size_t j = 0; j < n; j++) pos[j] = (int64_t)(n - 1 - j); /* any order */
    reel_store_reader *r = NULL;
    CHECK_OK(reel_store_reader_create(&r, s, NULL, NULL));
    reel_error err;
    reel_error_clear(&err);
    int st = reel_store_reader_read(r, i, pos, n, sc_sink_fn, &k, NULL, &err);
    CHECK_MSG(st == REEL_OK, "read record %lld: %d %s", (long long)i, st, err.message);
    reel_store_reader_destroy(&r);
    /* back into stored order */
    uint8_t *out = malloc(n * fb);
    int64_t *pts = malloc(n * 8);
    for (size_t j = 0; j < n; j++) {
        CHECK_EQ_INT(k.index[j], pos[j]);
        memcpy(out + (size_t)pos[j] * fb, k.buf + j * fb, fb);
        pts[pos[j]] = k.pts[j];
    }
    free(k.buf);
    free(k.index);
    free(k.pts);
    free(pos);
    if (pts_out)
        *pts_out = pts;
    else
        free(pts);
    return out;
}

static TG_UNUSED double sc_psnr(const uint8_t *a, const uint8_t *b, size_t n)
{
    double se = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        se += d * d;
    }
    return se == 0 ? 99 : 10 * log10(255.0 * 255.0 / (se / (double)n));
}

/* Replaces the folder `to` with a copy of `from` (a store, or videos). */
static TG_UNUSED void sc_copy_dir(const char *from, const char *to)
{
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", to, from, to);
    CHECK_EQ_INT(tg_system(cmd), 0);
}

#endif
