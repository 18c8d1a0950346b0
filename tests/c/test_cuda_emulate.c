/* test_cuda_emulate.c: the GPU conversion's host emulation (src/cuda: the
 * kernels' grid on the CPU, the same pixel.h functions) against the CPU
 * converter (swscale, the fused path) on real decoded frames made NV12 or
 * P010, as NVDEC hands them over: every matrix and range, every filter,
 * crops, odd sizes, flips, dtypes, layouts and strides. The rule (docs/GPU.md):
 * equal, bit for bit: uint8 values equal to the CPU's, and float outputs the
 * same function of them (pixel.h's, which the CPU's tables also use). */
#include "harness.h"
#include "real_common.h"
#include "cuda_common.h"
#include "testgen.h"

#include "convert/pixel.h"
#include "core/frame.h"
#include "convert/dtype.h"
#include "cuda/device.h"
#include "cuda/plan.h"

#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
#include <math.h>

/* The rule: equal. (Kept as two bounds so that a change that loosens it
 * has to say by how much.) */
#define RULE_MAX        0
#define RULE_FRAC_OVER1 0.0

/* Frame `idx` of a shared video, as decoded on the CPU (NULL: skipped). */
static AVFrame *decoded(const char *file, int64_t idx)
{
    char path[4200];
    vpath(path, sizeof path, file);
    return cuda_decode_at(path, idx, NULL);
}

/* The frame's planes as NVDEC's surface: NV12 (8-bit) or P010. */
typedef struct surface {
    uint8_t *y, *uv;
    int y_pitch, uv_pitch, bits;
} surface;

static surface to_surface(const AVFrame *f)
{
    surface s;
    s.bits = f->format == AV_PIX_FMT_YUV420P10LE ? 10 : 8;
    int es = s.bits == 8 ? 1 : 2, cw = (f->width + 1) / 2, ch = (f->height + 1) / 2;
    s.y_pitch = (f->width * es + 63) / 64 * 64;
    s.uv_pitch = (cw * 2 * es + 63) / 64 * 64;
    s.y = calloc((size_t)s.y_pitch, (size_t)f->height);
    s.uv = calloc((size_t)s.uv_pitch, (size_t)ch);
    CHECK(s.y && s.uv);
    for (int r = 0; r < f->height; r++) {
        const uint8_t *src = f->data[0] + (ptrdiff_t)r * f->linesize[0];
        if (es == 1) {
            memcpy(s.y + (size_t)r * s.y_pitch, src, (size_t)f->width);
        } else {
            for (int x = 0; x < f->width; x++)
                ((uint16_t *)(s.y + (size_t)r * s.y_pitch))[x] = (uint16_t)(((const uint16_t *)src)[x] << 6);
        }
    }
    for (int r = 0; r < ch; r++)
        for (int x = 0; x < cw; x++)
            for (int c = 0; c < 2; c++) {
                const uint8_t *p = f->data[1 + c] + (ptrdiff_t)r * f->linesize[1 + c];
                uint8_t *o = s.uv + (size_t)r * s.uv_pitch;
                if (es == 1)
                    o[2 * x + c] = p[x];
                else
                    ((uint16_t *)o)[2 * x + c] = (uint16_t)(((const uint16_t *)p)[x] << 6);
            }
    return s;
}

typedef struct tally {
    int64_t values, over1, max;
    int cases;
} tally;

static reel__cuda_src source_of(const AVFrame *f, const surface *s)
{
    reel__cuda_src src;
    memset(&src, 0, sizeof src);
    src.y = s->y;
    src.uv = s->uv;
    src.y_pitch = s->y_pitch;
    src.uv_pitch = s->uv_pitch;
    src.width = f->width;
    src.height = f->height;
    src.bits = s->bits;
    src.colorspace = f->colorspace;
    src.full_range = reel__convert_full_range(f->color_range, f->format);
    return src;
}

/* The frame converted per t into dst (size bytes) by the emulation, or by
 * the kernel on g_device (the surfaces uploaded, the output downloaded). */
static void emulate_one(const AVFrame *f, const surface *s, const reel_transform *t, void *dst, size_t size)
{
    reel__cuda_src src = source_of(f, s);
    cuda_convert_one(&src, (size_t)s->y_pitch * f->height, (size_t)s->uv_pitch * ((f->height + 1) / 2), t, dst, size);
}

static void cpu_one(reel_converter *conv, const AVFrame *f, const reel_transform *t, void *dst, size_t size)
{
    reel_frame rf;
    reel__frame_wrap(&rf, f, 0, 0, 0);
    reel_error err;
    CHECK_OK(reel_converter_run(conv, &rf, t, dst, size, &err));
}

/* One transform in uint8 HWC, then (when t asks for another dtype or
 * layout) in that too: the uint8 values within the rule, the other
 * outputs pixel.h's function of them on both sides. */
static void compare(reel_converter *conv, const AVFrame *f, const surface *s, const reel_transform *t, tally *ty,
                    const char *what)
{
    reel_transform u8 = *t;
    u8.pixels.dtype = REEL_DTYPE_UINT8;
    u8.layout = REEL_LAYOUT_HWC;
    u8.stride_c = u8.stride_x = u8.stride_y = 0;
    int ow, oh;
    size_t bytes;
    reel_error err;
    CHECK_OK(reel_transform_get_output_size(&u8, f->width, f->height, &ow, &oh, &bytes, &err));
    uint8_t *a = malloc(bytes), *b = malloc(bytes);
    CHECK(a && b);
    memset(b, 0xA5, bytes);
    cpu_one(conv, f, &u8, a, bytes);
    emulate_one(f, s, &u8, b, bytes);
    int64_t over1 = 0, mx = 0;
    for (size_t i = 0; i < bytes; i++) {
        int d = abs((int)a[i] - (int)b[i]);
        if (d > 1) over1++;
        if (d > mx) mx = d;
    }
    CHECK_MSG(mx <= RULE_MAX && over1 <= RULE_FRAC_OVER1 * (double)bytes,
              "%s: %dx%d -> %dx%d: max |diff| %lld, %lld of %zu values off by more than 1", what, f->width, f->height,
              ow, oh, (long long)mx, (long long)over1, bytes);
    ty->values += (int64_t)bytes;
    ty->over1 += over1;
    if (mx > ty->max) ty->max = mx;
    ty->cases++;
    if (t->pixels.dtype != REEL_DTYPE_UINT8 || t->layout != REEL_LAYOUT_HWC || t->stride_x) {
        int64_t sx, sy, sc;
        if (t->stride_x) {
            sx = t->stride_x;
            sy = t->stride_y;
            sc = t->stride_c;
        } else if (t->layout == REEL_LAYOUT_CHW) {
            sx = 1;
            sy = ow;
            sc = (int64_t)ow * oh;
        } else {
            sx = 3;
            sy = (int64_t)ow * 3;
            sc = 1;
        }
        size_t es = reel__dtype_size(t->pixels.dtype);
        size_t n = (size_t)(sc * 2 + sy * (oh - 1) + sx * (ow - 1) + 1);
        if (n < (size_t)ow * oh * 3) n = (size_t)ow * oh * 3;
        uint8_t *ca = calloc(n, es), *cb = calloc(n, es);
        CHECK(ca && cb);
        cpu_one(conv, f, t, ca, n * es);
        emulate_one(f, s, t, cb, n * es);
        float scale = t->pixels.divisor > 0 ? t->pixels.divisor : 255.0f;
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++)
                for (int c = 0; c < 3; c++) {
                    int64_t o = y * sy + x * sx + c * sc;
                    size_t hwc = ((size_t)y * ow + x) * 3 + c;
                    float sd = t->pixels.std[c] != 0.0f ? t->pixels.std[c] : 1.0f;
                    for (int side = 0; side < 2; side++) {
                        const uint8_t *out = side ? cb : ca;
                        int v = side ? b[hwc] : a[hwc];
                        float nv = reel__px_normalise(v, scale, t->pixels.mean[c], sd);
                        uint32_t want, got = 0;
                        if (t->pixels.dtype == REEL_DTYPE_UINT8) {
                            want = (uint32_t)v;
                            got = out[o];
                        } else if (t->pixels.dtype == REEL_DTYPE_FLOAT32) {
                            memcpy(&want, &nv, 4);
                            memcpy(&got, out + o * 4, 4);
                        } else {
                            want = t->pixels.dtype == REEL_DTYPE_FLOAT16 ? reel__px_f16(nv) : reel__px_bf16(nv);
                            uint16_t g16;
                            memcpy(&g16, out + o * 2, 2);
                            got = g16;
                        }
                        CHECK_MSG(got == want, "%s: %s dtype %d at (%d,%d,%d): %08x, want %08x from uint8 %d", what,
                                  side ? "emulation" : "CPU", t->pixels.dtype, x, y, c, got, want, v);
                    }
                }
        free(ca);
        free(cb);
    }
    free(a);
    free(b);
}

static void run_frame(reel_converter *conv, AVFrame *f, const char *name, tally *ty)
{
    surface s = to_surface(f);
    const int W = f->width, H = f->height;
    struct {
        int cx, cy, cw, ch, ow, oh;
    } geo[] = {
        { 0, 0, 0, 0, 0, 0 },
        { 3, 5, W / 2 + 1, H / 2 + 1, 0, 0 },
        { 0, 0, 0, 0, 224, 224 },
        { 0, 0, 0, 0, W / 3 | 1, H / 3 },
        { 7, 3, W / 2, H / 2, 112, 64 },
        { 1, 1, W - 2, H - 2, (W * 3 / 2) & ~1, H * 5 / 4 },
        { 0, 0, 0, 0, 28, 28 },
        { W / 4, H / 4, W / 3 + 1, H / 3 + 1, W / 2 + 2, H / 3 + 1 },
    };
    char what[256];
    for (size_t g = 0; g < sizeof geo / sizeof geo[0]; g++)
        for (int fl = REEL_FILTER_BILINEAR; fl <= REEL_FILTER_NEAREST; fl++) {
            int resize = geo[g].ow != 0;
            if (!resize && fl != REEL_FILTER_BILINEAR) continue; /* the filter is unused */
            reel_transform t;
            reel_transform_default_settings(&t);
            t.crop_x = geo[g].cx;
            t.crop_y = geo[g].cy;
            t.crop_w = geo[g].cw;
            t.crop_h = geo[g].ch;
            t.width = geo[g].ow;
            t.height = geo[g].oh;
            t.pixels.filter = (reel_filter)fl;
            snprintf(what, sizeof what, "%s cs %d range %d geometry %zu filter %d", name, f->colorspace, f->color_range,
                     g, fl);
            compare(conv, f, &s, &t, ty, what);
        }
    /* the output side: flip, dtypes with normalisation, layouts, strides */
    for (int k = 0; k < 5; k++) {
        reel_transform t;
        reel_transform_default_settings(&t);
        t.width = 160;
        t.height = 90;
        t.flip_horizontal = k & 1;
        t.pixels.dtype = (reel_dtype)(k % 4);
        t.layout = k >= 2 ? REEL_LAYOUT_CHW : REEL_LAYOUT_HWC;
        t.pixels.mean[0] = 0.485f;
        t.pixels.mean[1] = 0.456f;
        t.pixels.mean[2] = 0.406f;
        t.pixels.std[0] = 0.229f;
        t.pixels.std[1] = 0.224f;
        t.pixels.std[2] = 0.225f;
        if (k == 4) { /* a slot of a [C, T=2, H, W] tensor */
            t.stride_x = 1;
            t.stride_y = 160;
            t.stride_c = 2 * 160 * 90;
            t.pixels.dtype = REEL_DTYPE_FLOAT32;
        }
        snprintf(what, sizeof what, "%s output case %d", name, k);
        compare(conv, f, &s, &t, ty, what);
    }
    free(s.y);
    free(s.uv);
}

static void print_tally(const char *name, const tally *t)
{
    printf("    %s: %d transforms, %lld values, max |diff| %lld, %.5f%% off by more than 1\n", name, t->cases,
           (long long)t->values, (long long)t->max, t->values ? 100.0 * (double)t->over1 / (double)t->values : 0.0);
}

/* Every matrix and both ranges on the same real pixels (the frame's tags
 * changed: the converter and the emulation read them alike). */
static void real_frames(void)
{
    static const struct {
        const char *file;
        int64_t idx;
    } videos[] = {
        { "nasa_13013.mp4", 5 },     /* h264 bt709 limited */
        { "karma.mp4", 3 },          /* yuvj420p full */
        { "foreman_hevc.mp4", 2 },   /* hevc, unknown matrix (bt601 as swscale) */
        { "nasa_13013_hdr.mp4", 4 }, /* hevc 10-bit bt2020 */
    };
    static const int spaces[] = { AVCOL_SPC_BT470BG,   AVCOL_SPC_BT709, AVCOL_SPC_BT2020_NCL,
                                  AVCOL_SPC_SMPTE240M, AVCOL_SPC_FCC,   AVCOL_SPC_UNSPECIFIED };
    reel_converter *conv = NULL;
    reel_error err;
    CHECK_OK(reel_converter_create(&conv, &err));
    for (size_t v = 0; v < sizeof videos / sizeof videos[0]; v++) {
        AVFrame *f = decoded(videos[v].file, videos[v].idx);
        CHECK(f->format == AV_PIX_FMT_YUV420P || f->format == AV_PIX_FMT_YUVJ420P ||
              f->format == AV_PIX_FMT_YUV420P10LE);
        tally ty = { 0 };
        run_frame(conv, f, videos[v].file, &ty);
        for (size_t k = 0; k < sizeof spaces / sizeof spaces[0]; k++)
            for (int range = AVCOL_RANGE_MPEG; range <= AVCOL_RANGE_JPEG; range++) {
                AVFrame *g = av_frame_clone(f);
                CHECK(g != NULL);
                g->colorspace = spaces[k];
                g->color_range = range;
                if (g->format == AV_PIX_FMT_YUVJ420P) g->format = AV_PIX_FMT_YUV420P; /* range from the tag */
                surface s = to_surface(g);
                reel_transform t;
                reel_transform_default_settings(&t);
                t.width = 224;
                t.height = 224;
                char what[256];
                snprintf(what, sizeof what, "%s cs %d range %d", videos[v].file, spaces[k], range);
                compare(conv, g, &s, &t, &ty, what);
                t.width = t.height = 0;
                compare(conv, g, &s, &t, &ty, what);
                free(s.y);
                free(s.uv);
                av_frame_free(&g);
            }
        /* an odd height: the CPU converts the whole picture through swscale's
         * general path (no 2x2 shortcut) */
        AVFrame *odd = av_frame_clone(f);
        CHECK(odd != NULL);
        odd->height -= 1;
        run_frame(conv, odd, "odd height", &ty);
        av_frame_free(&odd);
        print_tally(videos[v].file, &ty);
        av_frame_free(&f);
    }
    reel_converter_destroy(&conv);
}

TEST(emulation_meets_the_rule_on_real_frames)
{
    real_frames();
}

/* Sharp coloured edges (ffmpeg's testsrc2): the filters' overshoot, which
 * swscale's luma table takes unclipped. */
TEST(emulation_equals_cpu_on_sharp_edges)
{
    if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg CLI");
    char path[4200], cmd[8600];
    snprintf(path, sizeof path, "%s/testsrc2.mp4", harness_tmpdir());
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=1280x720:rate=25 -frames:v 3 -c:v libx264 "
             "-pix_fmt yuv420p -crf 8 '%s'",
             path);
    CHECK_MSG(tg_system(cmd) == 0, "cannot make %s", path);
    AVFrame *f = cuda_decode_at(path, 1, NULL);
    reel_error err;
    reel_converter *conv = NULL;
    CHECK_OK(reel_converter_create(&conv, &err));
    tally ty = { 0 };
    run_frame(conv, f, "testsrc2", &ty);
    print_tally("testsrc2 1280x720", &ty);
    reel_converter_destroy(&conv);
    av_frame_free(&f);
}

/* What the GPU does not do yet is refused by name, not done wrongly. */
TEST(plan_refuses_what_the_gpu_does_not_do)
{
    uint8_t y[64 * 16] = { 0 }, uv[64 * 8] = { 0 };
    reel__cuda_src src = { .y = y,
                           .uv = uv,
                           .y_pitch = 64,
                           .uv_pitch = 64,
                           .width = 64,
                           .height = 16,
                           .bits = 8,
                           .colorspace = AVCOL_SPC_BT709,
                           .rotation = 90 };
    reel__cuda_taps taps = { 0 };
    reel__px_frame pf;
    reel_transform t;
    reel_transform_default_settings(&t);
    reel_error err;
    t.width = 8;
    t.height = 32;
    CHECK_STATUS(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err), REEL_E_CUDA);
    CHECK(strstr(err.message, "CUDA") && strstr(err.message, "rotation with a resize"));
    t.width = t.height = 0;
    CHECK_OK(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err)); /* unscaled: an index mapping */
    src.rotation = 0;
    t.pixels.convert_path = REEL_CONVERT_PATH_AFTER_RGB;
    CHECK_OK(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err)); /* unscaled: the same as FUSED */
    t.width = 32;
    t.height = 8;
    CHECK_OK(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err)); /* the RGB resize: pass 2 */
    CHECK(pf.rgb2 == 1);
    t.pixels.dtype = REEL_DTYPE_UINT16; /* the deep path's resize in its rgb48 picture: not done */
    CHECK_STATUS(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err), REEL_E_CUDA);
    CHECK(strstr(err.message, "AFTER_RGB with a resize of gray or uint16 output"));
    t.pixels.dtype = REEL_DTYPE_UINT8;
    t.width = t.height = 0;
    t.pixels.convert_path = REEL_CONVERT_PATH_FUSED;
    t.crop_w = 100;
    t.crop_h = 4;
    CHECK_STATUS(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err), REEL_E_INVALID_ARG);
    reel__cuda_taps_free(&taps);
}

/* The kernel itself on a GPU (scripts/device_check.sh runs this binary of
 * the REEL_CUDA=ON build there): the same comparisons, bit for bit, and
 * device memory that does not grow over 1,000 conversions. Without a
 * driver or a GPU it is skipped with the reason CUDA gives. */
TEST(gpu_kernel_equals_cpu)
{
    cuda_open_or_skip();
    real_frames();
    AVFrame *f = decoded("nasa_13013.mp4", 5);
    surface s = to_surface(f);
    reel_transform t;
    reel_transform_default_settings(&t);
    t.width = t.height = 224;
    t.pixels.dtype = REEL_DTYPE_FLOAT32;
    size_t bytes = 224 * 224 * 3 * 4;
    float *out = malloc(bytes);
    CHECK(out != NULL);
    size_t held = 0;
    for (int i = 0; i < 1000; i++) {
        emulate_one(f, &s, &t, out, bytes);
        reel__cuda_mem m = reel__cuda_memory(g_device);
        if (i == 0) held = m.held;
        CHECK_MSG(m.held == held, "device memory grew from %zu to %zu bytes at call %d", held, m.held, i);
    }
    reel__cuda_mem m = reel__cuda_memory(g_device);
    printf("    1000 conversions: pool holds %zu bytes (peak %zu), %llu allocations, %llu reuses\n", m.held, m.peak,
           (unsigned long long)m.allocs, (unsigned long long)m.reuses);
    free(out);
    free(s.y);
    free(s.uv);
    av_frame_free(&f);
    reel__cuda_close(&g_device);
}

/* The device setting, and the named errors where there is no GPU. */
TEST(device_setting_and_no_gpu_errors)
{
    int idx = 7;
    reel_error err;
    CHECK_OK(reel__device_parse(NULL, &idx, &err));
    CHECK_EQ_INT(idx, -1);
    CHECK_OK(reel__device_parse("cpu", &idx, &err));
    CHECK_EQ_INT(idx, -1);
    CHECK_OK(reel__device_parse("cuda", &idx, &err));
    CHECK_EQ_INT(idx, 0);
    CHECK_OK(reel__device_parse("cuda:3", &idx, &err));
    CHECK_EQ_INT(idx, 3);
    const char *bad[] = { "gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:1x", "CUDA", "cuda:99999" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_STATUS(reel__device_parse(bad[i], &idx, &err), REEL_E_INVALID_ARG);
        CHECK_MSG(strstr(err.message, bad[i]) && strstr(err.message, "cuda:N"), "%s", err.message);
    }
    reel__cuda *c = NULL;
    int r = reel__cuda_open(0, 0, &c, &err);
    if (r == REEL_OK) { /* a GPU machine: a device past the last one */
        reel__cuda_close(&c);
        CHECK_STATUS(reel__cuda_open(999, 0, &c, &err), REEL_E_CUDA);
        CHECK_MSG(strstr(err.message, "cuda:999"), "%s", err.message);
        return;
    }
    CHECK_STATUS(r, REEL_E_CUDA);
    CHECK(c == NULL);
    CHECK_MSG(!strncmp(err.message, "CUDA: ", 6) && (strstr(err.message, "libcuda") || strstr(err.message, "kernels")),
              "%s", err.message);
    printf("    here: %s\n", err.message);
}
