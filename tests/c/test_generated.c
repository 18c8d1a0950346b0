/* test_generated.c: frame exactness on generated videos. Every synthetic
 * frame carries its own index (src/synth), so for each codec/container case
 * the test asks for frames in awkward orders (first, last, random, repeated,
 * unsorted, by time, by range, resized, transformed) and checks that every
 * returned frame is the one asked for. Also checks the conversions against
 * hand-made references and the planner's statistics. */
#include "testgen.h"

#include <math.h>

/* ---------------------------------------------------------------- the cases */

typedef struct gen_case {
    const char *file; /* name in harness_tmpdir(); the extension picks the container */
    const char *codec;
    int w, h, n, gop, bframes;
    int vfr, bit10, yuv444;
    double start;
    int exact_gop;          /* keyframes exactly at 0, gop, 2*gop, ... */
    const char *codec_name; /* expected reel_video_info.codec */
} gen_case;

static void case_params(const gen_case *c, reel_synth_params *p, char *path, size_t size)
{
    tg_path(path, size, c->file);
    tg_params(p, path, c->codec, c->w, c->h, c->n, c->gop, c->bframes);
    p->vfr = c->vfr;
    p->pix_fmt_10bit = c->bit10;
    p->yuv444 = c->yuv444;
    p->start_time = c->start;
}

/* ---------------------------------------------------------------- references */

/* Round-to-nearest-even of a finite double to a binary float format with
 * `mbits` stored mantissa bits and `ebits` exponent bits (IEEE layout,
 * subnormals, overflow to infinity). Written independently of reel's own
 * converters: it works on the exact value in double precision. */
static uint16_t ref_round_to(double x, int mbits, int ebits)
{
    uint16_t sign = (uint16_t)(signbit(x) ? 1u << (mbits + ebits) : 0);
    double a = fabs(x);
    int bias = (1 << (ebits - 1)) - 1;
    int emin = 1 - bias, emax = bias;
    uint16_t inf = (uint16_t)(((1u << ebits) - 1) << mbits);
    if (isnan(x)) return (uint16_t)(sign | inf | (1u << (mbits - 1)));
    if (isinf(x)) return (uint16_t)(sign | inf);
    if (a == 0.0) return sign;
    int k;
    (void)frexp(a, &k); /* a = f * 2^k, f in [0.5, 1) */
    int e = k - 1;      /* a in [2^e, 2^(e+1)) */
    if (e < emin) e = emin;
    double q = ldexp(1.0, e - mbits); /* spacing of representable values */
    double r = nearbyint(a / q);      /* exact division; ties to even */
    if (r >= ldexp(1.0, mbits + 1)) {
        r /= 2;
        e++;
    }
    if (e > emax) return (uint16_t)(sign | inf);
    uint32_t ri = (uint32_t)r;
    if (ri < (1u << mbits)) return (uint16_t)(sign | ri); /* subnormal (e == emin) */
    return (uint16_t)(sign | ((uint32_t)(e + bias) << mbits) | (ri - (1u << mbits)));
}

static uint16_t ref_f16(float f)
{
    return ref_round_to((double)f, 10, 5);
}
static uint16_t ref_bf16(float f)
{
    return ref_round_to((double)f, 7, 8);
}

/* The reference for the converters, spot-checked against known encodings. */
TEST(reference_half_converters)
{
    CHECK_EQ_INT(ref_f16(1.0f), 0x3C00);
    CHECK_EQ_INT(ref_f16(-2.0f), 0xC000);
    CHECK_EQ_INT(ref_f16(65504.0f), 0x7BFF);
    CHECK_EQ_INT(ref_f16(65520.0f), 0x7C00); /* rounds up to inf */
    CHECK_EQ_INT(ref_f16(65519.0f), 0x7BFF);
    CHECK_EQ_INT(ref_f16(0.1f), 0x2E66);
    CHECK_EQ_INT(ref_f16(ldexpf(1.0f, -24)), 0x0001);        /* smallest subnormal */
    CHECK_EQ_INT(ref_f16(ldexpf(1.0f, -25)), 0x0000);        /* tie -> even (0) */
    CHECK_EQ_INT(ref_f16(ldexpf(3.0f, -25)), 0x0002);        /* tie -> even (2) */
    CHECK_EQ_INT(ref_f16(ldexpf(1.0f, -14)), 0x0400);        /* smallest normal */
    CHECK_EQ_INT(ref_f16(1.0f + ldexpf(1.0f, -11)), 0x3C00); /* tie -> even */
    CHECK_EQ_INT(ref_f16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3C02);
    CHECK_EQ_INT(ref_bf16(1.0f), 0x3F80);
    CHECK_EQ_INT(ref_bf16(-1.0f), 0xBF80);
    CHECK_EQ_INT(ref_bf16(1.0f + ldexpf(1.0f, -8)), 0x3F80);     /* tie -> even */
    CHECK_EQ_INT(ref_bf16(1.0f + 3 * ldexpf(1.0f, -8)), 0x3F82); /* tie -> even (up) */
    CHECK_EQ_INT(ref_bf16(3.14159274f), 0x4049);
    CHECK_EQ_INT(ref_bf16(ldexpf(1.0f, -130)), 0x0008); /* subnormal passes through */
}

/* ---------------------------------------------------------------- checks */

/* Each of the n frames in buf (RGB24 HWC, w x h) embeds want[i] (normalised). */
static void check_indices(const uint8_t *buf, int w, int h, const int64_t *want, size_t n, int64_t num_frames,
                          const char *what)
{
    size_t fb = (size_t)w * h * 3;
    for (size_t i = 0; i < n; i++) {
        int64_t expect = want[i] < 0 ? want[i] + num_frames : want[i];
        int64_t got = tg_read_idx(buf + i * fb, w, h);
        CHECK_MSG(got == expect, "%s: position %zu asked for frame %lld (%lld), the frame embeds %lld", what, i,
                  (long long)want[i], (long long)expect, (long long)got);
    }
}

static size_t count_distinct(const int64_t *idx, size_t n, int64_t num_frames)
{
    uint8_t *seen = calloc((size_t)num_frames, 1);
    size_t d = 0;
    CHECK(seen != NULL);
    for (size_t i = 0; i < n; i++) {
        int64_t f = idx[i] < 0 ? idx[i] + num_frames : idx[i];
        if (!seen[f]) {
            seen[f] = 1;
            d++;
        }
    }
    free(seen);
    return d;
}

/* The float32 the converter must produce for byte v of channel c. */
static float ref_norm(uint8_t v, float divisor, float mean, float std)
{
    volatile float x = (float)v / divisor; /* force float rounding at each step */
    x = x - mean;
    x = x / std;
    return x;
}

typedef struct norm {
    float divisor, mean[3], std[3];
} norm;

static void set_norm(reel_transform *t, const norm *nm)
{
    t->pixels.divisor = nm->divisor;
    for (int c = 0; c < 3; c++) {
        t->pixels.mean[c] = nm->mean[c];
        t->pixels.std[c] = nm->std[c];
    }
}

/* Output element (frame f, channel c, row y, column x) of a dense layout. */
static size_t elem_off(int layout, int w, int h, size_t f, int c, int y, int x)
{
    size_t per = (size_t)w * h * 3;
    if (layout == REEL_LAYOUT_CHW) return f * per + (size_t)c * w * h + (size_t)y * w + x;
    return f * per + ((size_t)y * w + x) * 3 + c;
}

/* Checks every dtype/layout/flip combination on `idx` against the uint8 HWC
 * output transformed by hand. */
static void check_transforms(reel_decoder *dec, const int64_t *idx, size_t n)
{
    int w, h;
    reel_transform t;
    reel_transform_default_settings(&t);
    size_t fb = tg_frame_bytes(dec, &t, &w, &h);
    uint8_t *base = tg_get(dec, idx, n, &t, NULL);
    (void)fb;

    static const norm norms[] = {
        { 255.0f, { 0.0f, 0.0f, 0.0f }, { 1.0f, 1.0f, 1.0f } },             /* [0, 1] */
        { 1.0f, { 0.0f, 0.0f, 0.0f }, { 1.0f, 1.0f, 1.0f } },               /* 0-255, as reel.vlm's float32 */
        { 255.0f, { 0.485f, 0.456f, 0.406f }, { 0.229f, 0.224f, 0.225f } }, /* ImageNet */
        /* extremes for the 16-bit types: overflow to inf (std 1e-5 -> up to 1e5),
         * subnormal halves (std 1e3), odd divisor */
        { 255.0f, { 0.25f, 0.0f, 0.5f }, { 1e-5f, 1e3f, 0.3f } },
        { 1.0f, { 128.0f, 0.0f, -7.0f }, { 64.0f, 3.0f, 0.001f } },
    };
    static const int dtypes[] = { REEL_DTYPE_UINT8, REEL_DTYPE_FLOAT32, REEL_DTYPE_FLOAT16, REEL_DTYPE_BFLOAT16 };
    static const char *dtype_names[] = { "uint8", "float32", "float16", "bfloat16" };

    for (int di = 0; di < 4; di++) {
        for (int layout = REEL_LAYOUT_HWC; layout <= REEL_LAYOUT_CHW; layout++) {
            for (int flip = 0; flip <= 1; flip++) {
                size_t nn = dtypes[di] == REEL_DTYPE_UINT8 ? 1 : sizeof norms / sizeof norms[0];
                for (size_t ni = 0; ni < nn; ni++) {
                    if (dtypes[di] == REEL_DTYPE_UINT8 && layout == REEL_LAYOUT_HWC && !flip) continue;
                    reel_transform u;
                    reel_transform_default_settings(&u);
                    u.pixels.dtype = dtypes[di];
                    u.layout = layout;
                    u.flip_horizontal = flip;
                    set_norm(&u, &norms[ni]);
                    uint8_t *out = tg_get(dec, idx, n, &u, NULL);
                    for (size_t f = 0; f < n; f++)
                        for (int y = 0; y < h; y++)
                            for (int x = 0; x < w; x++)
                                for (int c = 0; c < 3; c++) {
                                    int sx = flip ? w - 1 - x : x;
                                    uint8_t v = base[elem_off(REEL_LAYOUT_HWC, w, h, f, c, y, sx)];
                                    size_t o = elem_off(layout, w, h, f, c, y, x);
                                    float ref = ref_norm(v, norms[ni].divisor, norms[ni].mean[c], norms[ni].std[c]);
                                    int ok;
                                    uint32_t got_bits = 0, want_bits = 0;
                                    switch (dtypes[di]) {
                                    case REEL_DTYPE_UINT8:
                                        got_bits = out[o];
                                        want_bits = v;
                                        break;
                                    case REEL_DTYPE_FLOAT32:
                                        memcpy(&got_bits, out + o * 4, 4);
                                        memcpy(&want_bits, &ref, 4);
                                        break;
                                    case REEL_DTYPE_FLOAT16: {
                                        uint16_t g;
                                        memcpy(&g, out + o * 2, 2);
                                        got_bits = g;
                                        want_bits = ref_f16(ref);
                                        break;
                                    }
                                    default: {
                                        uint16_t g;
                                        memcpy(&g, out + o * 2, 2);
                                        got_bits = g;
                                        want_bits = ref_bf16(ref);
                                        break;
                                    }
                                    }
                                    ok = got_bits == want_bits;
                                    CHECK_MSG(ok,
                                              "%s %s flip=%d norm#%zu: frame %lld (c=%d, y=%d, x=%d), byte %u: "
                                              "got bits 0x%08x, want 0x%08x (float %.9g)",
                                              dtype_names[di], layout == REEL_LAYOUT_CHW ? "CHW" : "HWC", flip, ni,
                                              (long long)idx[f], c, y, x, v, got_bits, want_bits, (double)ref);
                                }
                    free(out);
                }
            }
        }
    }
    free(base);
}

/* Frames displayed at time t (seconds) for every t, one call. */
static void check_times(reel_decoder *dec, const double *times, const int64_t *want, size_t n, const char *what)
{
    int w, h;
    size_t fb = tg_frame_bytes(dec, NULL, &w, &h);
    uint8_t *buf = malloc(fb * n);
    int64_t *got_idx = malloc(n * sizeof *got_idx);
    CHECK(buf && got_idx);
    reel_error err;
    int r = reel_decoder_get_frames_at_times(dec, times, n, NULL, buf, fb * n, got_idx, NULL, &err);
    CHECK_MSG(r == REEL_OK, "%s: get_frames_at_times: %d %s", what, r, err.message);
    for (size_t i = 0; i < n; i++) {
        CHECK_MSG(got_idx[i] == want[i], "%s: time %.9f s resolved to frame %lld, expected %lld", what, times[i],
                  (long long)got_idx[i], (long long)want[i]);
        int64_t e = tg_read_idx(buf + i * fb, w, h);
        CHECK_MSG(e == want[i], "%s: time %.9f s (frame %lld) returned a frame embedding %lld", what, times[i],
                  (long long)want[i], (long long)e);
    }
    free(buf);
    free(got_idx);
}

/* The whole battery for one generated video. */
static void run_case(const gen_case *c)
{
    char path[4096];
    reel_synth_params p;
    reel_error err;
    reel_decode_stats st;
    uint64_t rng = 0x5EED0000u + (uint64_t)c->n * 31u + (uint64_t)c->w;

    case_params(c, &p, path, sizeof path);
    tg_synth(&p);
    reel_decoder *dec = tg_open(path, NULL);
    const reel_video_info *in = reel_decoder_get_info(dec);
    const int64_t n = c->n;

    /* ---- metadata and the frame table */
    CHECK_EQ_INT(in->num_frames, n);
    CHECK_EQ_INT(in->width, c->w);
    CHECK_EQ_INT(in->height, c->h);
    CHECK_EQ_INT(in->source_width, c->w); /* no display matrix: the same size */
    CHECK_EQ_INT(in->source_height, c->h);
    CHECK_EQ_INT(in->has_rotation, 0);
    CHECK_EQ_STR(in->codec, c->codec_name);
    if (c->bit10) CHECK_EQ_INT(in->bit_depth, 10);
    int64_t tn = 0;
    const reel_frame_entry *ft = reel_decoder_get_frame_table(dec, &tn);
    CHECK_EQ_INT(tn, n);
    CHECK(ft != NULL);
    double tb = (double)in->time_base_num / in->time_base_den;
    for (int64_t i = 0; i < n; i++) {
        CHECK_MSG(ft[i].duration > 0, "frame %lld has duration %lld", (long long)i, (long long)ft[i].duration);
        if (i) CHECK_MSG(ft[i].pts > ft[i - 1].pts, "pts not increasing at frame %lld", (long long)i);
        /* the table's time of frame i is the time the generator gave it
         * (Matroska rounds to 1 ms) */
        double want_t = reel_synth_frame_time(&p, i);
        double got_t = (double)ft[i].pts * tb;
        CHECK_MSG(fabs(got_t - want_t) <= 0.0011, "frame %lld at %.6f s in the table, generated at %.6f s",
                  (long long)i, got_t, want_t);
    }
    /* display durations: a frame lasts until the next one starts (the
     * intervals [pts, pts + duration) tile the video); the last one lasts a
     * nominal frame when the rate is constant */
    for (int64_t i = 0; i + 1 < n; i++)
        CHECK_MSG(ft[i].duration == ft[i + 1].pts - ft[i].pts,
                  "frame %lld: table duration %lld ticks, but the next frame starts %lld ticks later "
                  "(pts %lld, decode_order %d, time base %d/%d)",
                  (long long)i, (long long)ft[i].duration, (long long)(ft[i + 1].pts - ft[i].pts), (long long)ft[i].pts,
                  ft[i].decode_order, in->time_base_num, in->time_base_den);
    if (!c->vfr)
        CHECK_MSG(fabs((double)ft[n - 1].duration * tb - 1.0 / 25) <= 0.0011,
                  "last frame lasts %.6f s, expected 0.04 s", (double)ft[n - 1].duration * tb);
    CHECK_NEAR(in->start_time, c->start, 0.0011);
    if (!c->vfr) CHECK_NEAR(in->duration, (double)n / 25.0, 0.0021);
    int64_t nk = 0;
    const int64_t *keys = reel_decoder_get_keyframes(dec, &nk);
    CHECK(nk >= 1 && keys != NULL);
    CHECK_EQ_INT(keys[0], 0);
    CHECK_EQ_INT(in->num_keyframes, nk);
    if (c->exact_gop) {
        CHECK_EQ_INT(nk, (n + c->gop - 1) / c->gop);
        for (int64_t k = 0; k < nk; k++) CHECK_EQ_INT(keys[k], k * c->gop);
    }
    for (int64_t k = 0; k < nk; k++) CHECK(ft[keys[k]].flags & REEL_FRAME_KEY);

    /* ---- one call: first, last (-1), n-1, -n, random, repeats, unsorted */
    int64_t req[48];
    size_t nr = 0;
    req[nr++] = 0;
    req[nr++] = -1;
    for (int k = 0; k < 24; k++) req[nr++] = tg_rand_below(&rng, n);
    req[nr++] = n / 2;
    req[nr++] = n - 1;
    req[nr++] = req[5]; /* repeats, not adjacent */
    req[nr++] = n / 2;
    req[nr++] = -n; /* == 0 */
    req[nr++] = 1 % n;
    req[nr++] = req[2];
    req[nr++] = n / 2;
    req[nr++] = -(n / 3) - 1;
    req[nr++] = 0;
    {
        int w, h;
        size_t fb = tg_frame_bytes(dec, NULL, &w, &h);
        uint8_t *buf = malloc(fb * nr);
        CHECK(buf != NULL);
        int r = reel_decoder_get_frames(dec, req, nr, NULL, buf, fb * nr, &st, &err);
        CHECK_MSG(r == REEL_OK, "get_frames: %d %s", r, err.message);
        check_indices(buf, w, h, req, nr, n, "random request");
        size_t distinct = count_distinct(req, nr, n);
        CHECK_EQ_INT(st.frames_requested, (int64_t)nr);
        CHECK_EQ_INT(st.frames_returned, (int64_t)distinct);
        CHECK_MSG(st.frames_decoded >= st.frames_returned, "frames_decoded %lld < frames_returned %lld",
                  (long long)st.frames_decoded, (long long)st.frames_returned);
        CHECK_NEAR(st.amplification, (double)st.frames_decoded / (double)st.frames_returned, 1e-9);
        free(buf);
    }

    /* ---- frames one at a time, each call on its own: the first GOPs (every
     * position in a reorder group) and random ones */
    {
        int w, h;
        size_t fb = tg_frame_bytes(dec, NULL, &w, &h);
        uint8_t *buf = malloc(fb);
        CHECK(buf != NULL);
        int64_t lim = n < 40 ? n : 40;
        for (int64_t k = 0; k < lim + 12; k++) {
            int64_t i = k < lim ? k : tg_rand_below(&rng, n);
            int r = reel_decoder_get_frames(dec, &i, 1, NULL, buf, fb, &st, &err);
            CHECK_MSG(r == REEL_OK, "get_frames({%lld}): %d %s", (long long)i, r, err.message);
            int64_t got = tg_read_idx(buf, w, h);
            CHECK_MSG(got == i, "get_frames({%lld}) alone returned a frame embedding %lld", (long long)i,
                      (long long)got);
            CHECK_EQ_INT(st.frames_returned, 1);
        }
        free(buf);
    }

    /* ---- every frame in order: each decoded exactly once, at most one seek */
    {
        int w, h;
        size_t fb = tg_frame_bytes(dec, NULL, &w, &h);
        uint8_t *buf = malloc(fb * (size_t)n);
        size_t got_n = 0;
        CHECK(buf != NULL);
        int r = reel_decoder_get_range(dec, 0, n, 1, NULL, buf, fb * (size_t)n, &got_n, &st, &err);
        CHECK_MSG(r == REEL_OK, "get_range(0, n, 1): %d %s", r, err.message);
        CHECK_EQ_INT(got_n, n);
        int64_t *all = malloc((size_t)n * sizeof *all);
        CHECK(all != NULL);
        for (int64_t i = 0; i < n; i++) all[i] = i;
        check_indices(buf, w, h, all, (size_t)n, n, "every frame in order");
        CHECK_EQ_INT(st.frames_returned, n);
        CHECK_MSG(st.amplification == 1.0, "in-order decode of all %lld frames: amplification %.3f (decoded %lld)",
                  (long long)n, st.amplification, (long long)st.frames_decoded);
        CHECK_MSG(st.seeks <= 1, "in-order decode of all frames needed %lld seeks", (long long)st.seeks);

        /* ---- get_range(5, n, 7) */
        size_t want_n = (size_t)((n - 5 + 6) / 7);
        r = reel_decoder_get_range(dec, 5, n, 7, NULL, buf, fb * (size_t)n, &got_n, &st, &err);
        CHECK_MSG(r == REEL_OK, "get_range(5, n, 7): %d %s", r, err.message);
        CHECK_EQ_INT(got_n, want_n);
        for (size_t i = 0; i < want_n; i++) all[i] = 5 + 7 * (int64_t)i;
        check_indices(buf, w, h, all, want_n, n, "get_range(5, n, 7)");
        CHECK_EQ_INT(st.frames_returned, (int64_t)want_n);
        free(all);
        free(buf);
    }

    /* ---- by time: each frame's own pts, the middle of the frame, and the
     * generator's time plus a quarter frame (independent of the table) */
    {
        int64_t picks[16];
        size_t np = 0;
        picks[np++] = 0;
        picks[np++] = n - 1;
        picks[np++] = n / 2;
        picks[np++] = 1 % n;
        while (np < 14) picks[np++] = tg_rand_below(&rng, n);
        double times[48];
        int64_t want[48];
        size_t nt = 0;
        for (size_t k = 0; k < np; k++) {
            int64_t i = picks[k];
            times[nt] = (double)ft[i].pts * tb;
            want[nt++] = i;
            times[nt] = ((double)ft[i].pts + (double)ft[i].duration / 2) * tb;
            want[nt++] = i;
            times[nt] = reel_synth_frame_time(&p, i) + 0.25 / 25.0;
            want[nt++] = i;
        }
        check_times(dec, times, want, nt, "get_frames_at_times");
        /* the end of the video is out of range; the last instant before it is not */
        int64_t ix = -1;
        double end = (double)(ft[n - 1].pts + ft[n - 1].duration) * tb;
        CHECK_STATUS(reel_decoder_get_index_at_time(dec, end, &ix, &err), REEL_E_OUT_OF_RANGE);
        CHECK_OK(reel_decoder_get_index_at_time(dec, end - 0.5 * (double)ft[n - 1].duration * tb, &ix, &err));
        CHECK_EQ_INT(ix, n - 1);
    }

    /* ---- resized output still carries the index: 224x224 fused and after-RGB */
    {
        int64_t picks[5] = { 0, n - 1, n / 2, tg_rand_below(&rng, n), 1 % n };
        for (int mode = REEL_CONVERT_PATH_FUSED; mode <= REEL_CONVERT_PATH_AFTER_RGB; mode++) {
            for (int filt = REEL_FILTER_BILINEAR; filt <= REEL_FILTER_NEAREST; filt++) {
                reel_transform t;
                reel_transform_default_settings(&t);
                t.width = 224;
                t.height = 224;
                t.pixels.convert_path = mode;
                t.pixels.filter = filt;
                int w, h;
                tg_frame_bytes(dec, &t, &w, &h);
                CHECK_EQ_INT(w, 224);
                CHECK_EQ_INT(h, 224);
                uint8_t *buf = tg_get(dec, picks, 5, &t, NULL);
                char what[64];
                snprintf(what, sizeof what, "224x224 resize mode %d filter %d", mode, filt);
                check_indices(buf, 224, 224, picks, 5, n, what);
                free(buf);
            }
        }
        /* a milder downscale, aspect kept */
        reel_transform t;
        reel_transform_default_settings(&t);
        t.width = c->w * 3 / 4;
        int w, h;
        tg_frame_bytes(dec, &t, &w, &h);
        uint8_t *buf = tg_get(dec, picks, 5, &t, NULL);
        check_indices(buf, w, h, picks, 5, n, "3/4 downscale");
        free(buf);
    }

    /* ---- conversions against hand-made references */
    {
        int64_t picks[3] = { 2 % n, 0, n - 1 };
        check_transforms(dec, picks, 3);
    }

    /* ---- decoder threads 1 vs 4 vs default: identical bytes */
    {
        int64_t picks[12];
        for (int k = 0; k < 10; k++) picks[k] = tg_rand_below(&rng, n);
        picks[10] = picks[3];
        picks[11] = -1;
        uint8_t *ref = tg_get(dec, picks, 12, NULL, NULL);
        size_t fb = tg_frame_bytes(dec, NULL, NULL, NULL);
        for (int th = 1; th <= 4; th += 3) {
            reel_decoder_settings s;
            reel_decoder_default_settings(&s);
            s.threads = th;
            reel_decoder *d2 = tg_open(path, &s);
            uint8_t *out = tg_get(d2, picks, 12, NULL, NULL);
            for (int k = 0; k < 12; k++)
                CHECK_MSG(memcmp(out + k * fb, ref + k * fb, fb) == 0,
                          "threads=%d: frame %lld differs from the default decoder's", th, (long long)picks[k]);
            free(out);
            reel_decoder_close(&d2);
        }
        /* skip_nonref off decodes more but must give the same bytes */
        reel_decoder_settings s;
        reel_decoder_default_settings(&s);
        s.skip_nonref = 0;
        reel_decoder *d3 = tg_open(path, &s);
        uint8_t *out = tg_get(d3, picks, 12, NULL, NULL);
        CHECK_MSG(memcmp(out, ref, 12 * fb) == 0, "skip_nonref=0 gives different bytes");
        free(out);
        reel_decoder_close(&d3);
        free(ref);
    }

    reel_decoder_close(&dec);
    CHECK(dec == NULL);
}

/* ---------------------------------------------------------------- the tests */

#define CASE(name, ...)                        \
    TEST(name)                                 \
    {                                          \
        static const gen_case c = __VA_ARGS__; \
        run_case(&c);                          \
    }

/*            file                codec    w    h    n   gop  B  vfr 10b 444 start exact  name */
CASE(h264_mp4_bframes_gop250, { "h264_g250.mp4", "h264", 160, 120, 300, 250, 3, 0, 0, 0, 0.0, 1, "h264" })
CASE(h264_mp4_gop16, { "h264_g16.mp4", "h264", 160, 120, 300, 16, 3, 0, 0, 0, 0.0, 1, "h264" })
CASE(h264_mkv, { "h264.mkv", "h264", 160, 120, 120, 16, 3, 0, 0, 0, 0.0, 1, "h264" })
CASE(h264_avi_count_matching, { "h264.avi", "h264", 160, 120, 120, 16, 3, 0, 0, 0, 0.0, 1, "h264" })
CASE(hevc_mp4, { "hevc.mp4", "hevc", 160, 120, 120, 16, 3, 0, 0, 0, 0.0, 1, "hevc" })
CASE(vp9_webm, { "vp9.webm", "vp9", 160, 120, 120, 16, 0, 0, 0, 0, 0.0, 0, "vp9" })
CASE(av1_mkv, { "av1.mkv", "av1", 160, 120, 64, 16, 0, 0, 0, 0, 0.0, 0, "av1" })
CASE(mpeg4_avi_bframes, { "mpeg4.avi", "mpeg4", 160, 120, 120, 12, 2, 0, 0, 0, 0.0, 1, "mpeg4" })
CASE(mjpeg_avi, { "mjpeg.avi", "mjpeg", 160, 120, 60, 1, 0, 0, 0, 0, 0.0, 1, "mjpeg" })
CASE(h264_mp4_vfr, { "h264_vfr.mp4", "h264", 160, 120, 120, 16, 3, 1, 0, 0, 0.0, 1, "h264" })
CASE(h264_mkv_vfr, { "h264_vfr.mkv", "h264", 160, 120, 90, 16, 3, 1, 0, 0, 0.0, 1, "h264" })
CASE(h264_mp4_start_1_5s, { "h264_start.mp4", "h264", 160, 120, 90, 16, 3, 0, 0, 0, 1.5, 1, "h264" })
CASE(h264_mkv_start_2_25s, { "h264_start.mkv", "h264", 160, 120, 90, 16, 3, 0, 0, 0, 2.25, 1, "h264" })
CASE(h264_odd_322x182, { "h264_322x182.mp4", "h264", 322, 182, 60, 16, 3, 0, 0, 0, 0.0, 1, "h264" })
CASE(h264_odd_98x66, { "h264_98x66.mp4", "h264", 98, 66, 60, 16, 3, 0, 0, 0, 0.0, 1, "h264" })
CASE(mjpeg_odd_99x67, { "mjpeg_99x67.avi", "mjpeg", 99, 67, 40, 1, 0, 0, 0, 0, 0.0, 1, "mjpeg" })
CASE(hevc_10bit_mp4, { "hevc10.mp4", "hevc", 160, 120, 60, 16, 3, 0, 1, 0, 0.0, 1, "hevc" })
CASE(h264_444_mp4, { "h264_444.mp4", "h264", 160, 120, 60, 16, 3, 0, 0, 1, 0.0, 1, "h264" })
CASE(h264_444_odd_mkv, { "h264_444_odd.mkv", "h264", 97, 75, 40, 16, 2, 0, 0, 1, 0.0, 1, "h264" })

/* The planner: frames far apart in a short-GOP file are reached by seeking,
 * not by decoding everything in between; in a long GOP the one run is shared;
 * skipping non-reference frames changes the work, never the pixels. */
TEST(planner_seeks_instead_of_decoding_everything)
{
    char path[4096];
    reel_synth_params p;
    reel_decode_stats st;
    tg_path(path, sizeof path, "plan_g16.mp4");
    tg_params(&p, path, "h264", 160, 120, 300, 16, 3);
    tg_synth(&p);
    reel_decoder *dec = tg_open(path, NULL);

    int64_t two[2] = { 0, 200 };
    uint8_t *buf = tg_get(dec, two, 2, NULL, &st);
    check_indices(buf, 160, 120, two, 2, 300, "{0, 200}");
    free(buf);
    CHECK_EQ_INT(st.frames_returned, 2);
    CHECK_MSG(st.seeks >= 1, "{0, 200} on a GOP-16 file: %lld seeks", (long long)st.seeks);
    CHECK_MSG(st.frames_decoded <= 2 * 16 + 2,
              "{0, 200} on a GOP-16 file decoded %lld frames (seeks %lld): the planner should seek to frame 192",
              (long long)st.frames_decoded, (long long)st.seeks);
    CHECK_MSG(st.amplification <= 17.0, "amplification %.2f", st.amplification);

    /* same set, reversed and repeated */
    int64_t rev[4] = { 200, 0, 200, 0 };
    buf = tg_get(dec, rev, 4, NULL, &st);
    check_indices(buf, 160, 120, rev, 4, 300, "{200, 0, 200, 0}");
    free(buf);
    CHECK_EQ_INT(st.frames_returned, 2);
    CHECK_EQ_INT(st.frames_requested, 4);
    CHECK(st.frames_decoded <= 2 * 16 + 2);

    /* a fresh decoder, every frame in order: amplification exactly 1, one seek at most */
    reel_decoder_close(&dec);
    dec = tg_open(path, NULL);
    size_t got = 0;
    size_t fb = tg_frame_bytes(dec, NULL, NULL, NULL);
    buf = malloc(fb * 300);
    CHECK(buf != NULL);
    reel_error err;
    CHECK_OK(reel_decoder_get_range(dec, 0, 300, 1, NULL, buf, fb * 300, &got, &st, &err));
    CHECK_EQ_INT(got, 300);
    CHECK_EQ_INT(st.frames_decoded, 300);
    CHECK(st.amplification == 1.0);
    CHECK(st.seeks <= 1);
    free(buf);
    reel_decoder_close(&dec);

    /* GOP 250: frames 0 and 200 share one run from the keyframe: one seek */
    tg_path(path, sizeof path, "plan_g250.mp4");
    tg_params(&p, path, "h264", 160, 120, 300, 250, 3);
    tg_synth(&p);
    dec = tg_open(path, NULL);
    buf = tg_get(dec, two, 2, NULL, &st);
    check_indices(buf, 160, 120, two, 2, 300, "{0, 200} GOP 250");
    CHECK_EQ_INT(st.seeks, 1);
    CHECK(st.frames_decoded >= 2 && st.frames_decoded <= 201 + 4);
    int64_t one = 200;
    uint8_t *b1 = tg_get(dec, &one, 1, NULL, &st);
    CHECK(memcmp(b1, buf + fb, fb) == 0);
    CHECK_MSG(st.frames_skipped > 0,
              "frame 200 of a GOP-250 H.264 file with B-frames: no packet skipped "
              "(decoded %lld of %lld packets) although skip_nonref is on",
              (long long)st.frames_decoded, (long long)st.packets_read);
    free(b1);
    free(buf);
    reel_decoder_close(&dec);
}
