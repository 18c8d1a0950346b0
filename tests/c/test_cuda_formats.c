/* test_cuda_formats.c: the GPU conversion's gray outputs, deeper sources
 * and display rotation (src/cuda's host emulation, or the kernel on a GPU)
 * against the CPU converter's output, element for element: gray uint8,
 * uint16 and float of 8-, 10-, 12- and 16-bit sources made into NVDEC's
 * NV12 / P010 / P016 surfaces or uploaded gray planes; RGB of 12-bit
 * P016; rotated pictures; and the refusals by name. The rule: equal. */
#include "harness.h"
#include "real_common.h"
#include "cuda_common.h"
#include "testgen.h"

#include "convert/dtype.h"
#include "convert/pixel.h"
#include "core/frame.h"
#include "cuda/device.h"
#include "cuda/plan.h"

#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
#include <libavutil/pixfmt.h>

/* A decoded frame and the same picture as the GPU reads it. */
typedef struct pic {
    AVFrame *av;
    int rotation;
    reel__cuda_src src; /* host pointers into y / uv / v */
    uint8_t *y, *uv, *v;
    size_t ybytes, uvbytes;
} pic;

/* A video the ffmpeg CLI makes from testsrc2 (sharp coloured edges: the
 * filters' overshoot), once per name. A gray picture deeper than 8 bits
 * gets a texture in its low bits (testsrc2's codes alone are 8-bit codes
 * widened, which would hide a wrong dither or rounding). */
static const char *cli_video(const char *name, const char *fmt, const char *codec)
{
    static char paths[8][1200], names[8][64];
    for (int i = 0; i < 8; i++)
        if (!strcmp(names[i], name)) return paths[i];
    if (!harness_have_ffmpeg()) harness_skip_needed("no ffmpeg CLI to make the deep videos with");
    int k = 0;
    while (k < 8 && names[k][0]) k++;
    CHECK(k < 8 && strlen(name) < sizeof names[k]);
    tg_path(paths[k], sizeof paths[k], name);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -hide_banner -v error -y -f lavfi -i 'testsrc2=s=328x242:r=10:d=0.3,format=%s%s' -c:v %s "
             "-pix_fmt %s ",
             fmt, strncmp(fmt, "gray1", 5) ? "" : ",geq=lum=p(X\\,Y)+mod(X*5+Y*3+X*Y\\,61)", codec, fmt);
    tg_shell_append_quoted(cmd, sizeof cmd, paths[k]);
    if (tg_system(cmd) != 0) {
        char why[512];
        snprintf(why, sizeof why, "this ffmpeg cannot encode %s with %s", fmt, codec);
        harness_skip(why);
    }
    snprintf(names[k], sizeof names[k], "%s", name);
    return paths[k];
}

/* One plane of w x h samples of es bytes, words shifted left by `shift`,
 * at a pitch rounded up to 64; *pitch, *bytes set. */
static uint8_t *plane_copy(const uint8_t *in, int linesize, int w, int h, int es, int shift, int *pitch, size_t *bytes)
{
    *pitch = (w * es + 63) / 64 * 64;
    *bytes = (size_t)*pitch * h;
    uint8_t *p = calloc(*bytes, 1);
    CHECK(p != NULL);
    for (int r = 0; r < h; r++) {
        const uint8_t *src = in + (ptrdiff_t)r * linesize;
        uint8_t *o = p + (size_t)r * *pitch;
        for (int x = 0; x < w; x++)
            if (es == 1)
                o[x] = src[x];
            else
                ((uint16_t *)o)[x] = (uint16_t)(((const uint16_t *)src)[x] << shift);
    }
    return p;
}

/* The frame's planes as the GPU gets them: NV12 / P010 / P016 (the value
 * in a word's top bits) from 4:2:0, three planes so from 4:4:4, one gray
 * plane (bytes, or words with the value in the low bits) from 4:0:0;
 * pitches rounded up to 64. */
static pic make_pic(AVFrame *f, int rotation)
{
    pic p;
    memset(&p, 0, sizeof p);
    p.av = f;
    p.rotation = rotation;
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f->format);
    CHECK(d != NULL);
    const int gray = d->nb_components == 1, bits = d->comp[0].depth, es = bits > 8 ? 2 : 1;
    const int shift = gray || bits == 8 ? 0 : 16 - bits, cw = (f->width + 1) / 2, ch = (f->height + 1) / 2;
    const int c444 = !gray && d->log2_chroma_w == 0 && d->log2_chroma_h == 0;
    CHECK(gray || c444 || f->format == AV_PIX_FMT_YUV420P || f->format == AV_PIX_FMT_YUVJ420P ||
          f->format == AV_PIX_FMT_YUV420P10LE || f->format == AV_PIX_FMT_YUV420P12LE);
    reel__cuda_src *s = &p.src;
    p.y = plane_copy(f->data[0], f->linesize[0], f->width, f->height, es, shift, &s->y_pitch, &p.ybytes);
    if (c444) {
        size_t vbytes;
        p.uv = plane_copy(f->data[1], f->linesize[1], f->width, f->height, es, shift, &s->uv_pitch, &p.uvbytes);
        p.v = plane_copy(f->data[2], f->linesize[2], f->width, f->height, es, shift, &s->v_pitch, &vbytes);
        CHECK(vbytes == p.uvbytes);
    } else if (!gray) {
        s->uv_pitch = (cw * 2 * es + 63) / 64 * 64;
        p.uvbytes = (size_t)s->uv_pitch * ch;
        p.uv = calloc(p.uvbytes, 1);
        CHECK(p.uv != NULL);
        for (int r = 0; r < ch; r++)
            for (int x = 0; x < cw; x++)
                for (int c = 0; c < 2; c++) {
                    const uint8_t *in = f->data[1 + c] + (ptrdiff_t)r * f->linesize[1 + c];
                    uint8_t *o = p.uv + (size_t)r * s->uv_pitch;
                    if (es == 1)
                        o[2 * x + c] = in[x];
                    else
                        ((uint16_t *)o)[2 * x + c] = (uint16_t)(((const uint16_t *)in)[x] << shift);
                }
    }
    s->y = p.y;
    s->uv = p.uv;
    s->v = p.v;
    s->width = f->width;
    s->height = f->height;
    s->bits = bits;
    s->colorspace = f->colorspace;
    s->full_range = reel__convert_full_range(f->color_range, f->format);
    s->rotation = rotation;
    s->format = gray ? REEL_CUDA_SRC_GRAY : c444 ? REEL_CUDA_SRC_444 : REEL_CUDA_SRC_NV;
    return p;
}

static void free_pic(pic *p)
{
    free(p->y);
    free(p->uv);
    free(p->v);
    av_frame_free(&p->av);
}

static void emulate_one(const pic *p, const reel_transform *t, void *dst, size_t size)
{
    cuda_convert_one(&p->src, p->ybytes, p->uvbytes, t, dst, size);
}

typedef struct tally {
    int64_t values;
    int cases;
} tally;

/* t on p by the CPU converter and by the emulation (or kernel), into
 * buffers filled alike: every element equal, bit for bit (floats too). */
static void compare(reel_converter *conv, const pic *p, const reel_transform *t, tally *ty, const char *what)
{
    const int rot = t->pixels.apply_rotation ? p->rotation : 0, turn = rot == 90 || rot == 270;
    const int pw = turn ? p->av->height : p->av->width, ph = turn ? p->av->width : p->av->height;
    int ow, oh;
    size_t bytes;
    reel_error err;
    CHECK_OK(reel_transform_get_output_size(t, pw, ph, &ow, &oh, &bytes, &err));
    const int nc = reel__color_channels(t->pixels.color);
    const size_t es = reel__dtype_size(t->pixels.dtype);
    size_t n = (size_t)ow * oh * nc;
    if (t->stride_x) n = (size_t)(t->stride_c * (nc - 1) + t->stride_y * (oh - 1) + t->stride_x * (ow - 1) + 1);
    uint8_t *a = malloc(n * es), *b = malloc(n * es);
    CHECK(a && b);
    memset(a, 0xA5, n * es);
    memset(b, 0xA5, n * es);
    reel_frame rf;
    reel__frame_wrap(&rf, p->av, 0, 0, p->rotation);
    CHECK_OK(reel_converter_run(conv, &rf, t, a, n * es, &err));
    emulate_one(p, t, b, n * es);
    size_t bad = 0, first = n;
    int64_t mx = 0;
    for (size_t i = 0; i < n; i++) {
        if (!memcmp(a + i * es, b + i * es, es)) continue;
        if (!bad++) first = i;
        if (t->pixels.dtype == REEL_DTYPE_UINT8 || t->pixels.dtype == REEL_DTYPE_UINT16) {
            int64_t va = es == 1 ? a[i] : ((uint16_t *)a)[i], vb = es == 1 ? b[i] : ((uint16_t *)b)[i];
            if (llabs(va - vb) > mx) mx = llabs(va - vb);
        }
    }
    CHECK_MSG(bad == 0,
              "%s: %dx%d -> %dx%d dtype %d: %zu of %zu elements differ (max |diff| %lld), the first at element %zu",
              what, pw, ph, ow, oh, t->pixels.dtype, bad, n, (long long)mx, first);
    ty->values += (int64_t)n;
    ty->cases++;
    free(a);
    free(b);
}

static void base(reel_transform *t, reel_color color, reel_dtype dtype)
{
    reel_transform_default_settings(t);
    t->pixels.color = color;
    t->pixels.dtype = dtype;
}

/* Crops, resizes with every filter (odd sizes, up and down), then every
 * dtype with normalisation, flips, layouts and explicit strides. */
static void run_pic(reel_converter *conv, const pic *p, reel_color color, const char *name, tally *ty)
{
    const int W = p->av->width, H = p->av->height;
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
            if (!geo[g].ow && fl != REEL_FILTER_BILINEAR) continue; /* the filter is unused */
            for (int k = 0; k < 2; k++) {
                reel_transform t;
                base(&t, color, k ? REEL_DTYPE_UINT16 : REEL_DTYPE_UINT8);
                t.crop_x = geo[g].cx;
                t.crop_y = geo[g].cy;
                t.crop_w = geo[g].cw;
                t.crop_h = geo[g].ch;
                t.width = geo[g].ow;
                t.height = geo[g].oh;
                t.pixels.filter = (reel_filter)fl;
                snprintf(what, sizeof what, "%s range %d geometry %zu filter %d", name, p->av->color_range, g, fl);
                compare(conv, p, &t, ty, what);
            }
        }
    for (int k = 0; k < 8; k++) {
        reel_transform t;
        static const reel_dtype dts[] = { REEL_DTYPE_FLOAT32, REEL_DTYPE_FLOAT16, REEL_DTYPE_BFLOAT16,
                                          REEL_DTYPE_UINT8,   REEL_DTYPE_UINT16,  REEL_DTYPE_FLOAT32 };
        base(&t, color, dts[k % 6]);
        t.width = k & 2 ? 0 : 160;
        t.height = k & 2 ? 0 : 90;
        t.crop_x = k & 2 ? 5 : 0;
        t.crop_y = k & 2 ? 2 : 0;
        t.crop_w = k & 2 ? W - 9 : 0;
        t.crop_h = k & 2 ? H - 5 : 0;
        t.pixels.filter = (reel_filter)(k % 4);
        t.flip_horizontal = k & 1;
        t.layout = k & 4 ? REEL_LAYOUT_CHW : REEL_LAYOUT_HWC;
        t.pixels.mean[0] = 0.485f;
        t.pixels.mean[1] = 0.456f;
        t.pixels.mean[2] = 0.406f;
        t.pixels.std[0] = 0.229f;
        t.pixels.std[1] = 0.224f;
        t.pixels.std[2] = 0.225f;
        if (k == 5) t.pixels.divisor = 1.0f; /* on the 8-bit scale: codes over max_code / 255 */
        if (k == 3 || k == 7) t.pixels.convert_path = REEL_CONVERT_PATH_AFTER_RGB; /* unscaled: as FUSED */
        if (k == 6) { /* a slot of a [C, T=2, H, W] tensor */
            int ow = t.width ? t.width : t.crop_w, oh = t.height ? t.height : t.crop_h;
            t.stride_x = 1;
            t.stride_y = ow;
            t.stride_c = 2 * (int64_t)ow * oh;
        }
        snprintf(what, sizeof what, "%s output case %d", name, k);
        compare(conv, p, &t, ty, what);
    }
}

static void print_tally(const char *name, const tally *t)
{
    printf("    %s: %d transforms, %lld values, all equal\n", name, t->cases, (long long)t->values);
}

/* Gray of every source kind, each range tag; RGB of a 12-bit P016. */
static void all_formats(void)
{
    reel_converter *conv = NULL;
    reel_error err;
    CHECK_OK(reel_converter_create(&conv, &err));
    struct {
        const char *label, *file, *fmt, *codec; /* file: shared; else made from testsrc2 */
        int64_t idx;
    } src[] = {
        { "h264 8-bit limited", "nasa_13013.mp4", NULL, NULL, 5 },
        { "h264 8-bit full (yuvj420p)", "karma.mp4", NULL, NULL, 3 },
        { "hevc 10-bit", "nasa_13013_hdr.mp4", NULL, NULL, 4 },
        { "hevc 12-bit", NULL, "yuv420p12le", "libx265 -x265-params log-level=error", 1 },
        { "h264 4:4:4 8-bit", "cockatoo.mp4", NULL, NULL, 2 },
        { "hevc 4:4:4 10-bit", NULL, "yuv444p10le", "libx265 -x265-params log-level=error", 1 },
        { "hevc 4:4:4 12-bit", NULL, "yuv444p12le", "libx265 -x265-params log-level=error", 1 },
        { "gray8 hevc", NULL, "gray", "libx265 -x265-params lossless=1:log-level=error", 1 },
        { "gray10 hevc", NULL, "gray10le", "libx265 -x265-params lossless=1:log-level=error", 1 },
        { "gray12 hevc (x265 lossless)", NULL, "gray12le", "libx265 -x265-params lossless=1:log-level=error", 1 },
        { "gray16 ffv1", NULL, "gray16le", "ffv1", 1 },
    };
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++) {
        char path[4200], name[64];
        if (src[i].file)
            vpath(path, sizeof path, src[i].file);
        else {
            snprintf(name, sizeof name, "fmt_%s.mkv", src[i].fmt);
            snprintf(path, sizeof path, "%s", cli_video(name, src[i].fmt, src[i].codec));
        }
        AVFrame *f = cuda_decode_at(path, src[i].idx, NULL);
        if (src[i].fmt) CHECK_EQ_INT(f->format, av_get_pix_fmt(src[i].fmt));
        if (f->width > 900) { /* 1280x720 4:4:4: its top-left 418x240 (fewer values to compare, same paths) */
            f->width = 418;
            f->height = 240;
        }
        tally ty = { 0 };
        for (int range = -1; range <= AVCOL_RANGE_JPEG; range++) {
            if (range == AVCOL_RANGE_UNSPECIFIED) continue;
            AVFrame *g = av_frame_clone(f);
            CHECK(g != NULL);
            if (range >= 0) g->color_range = range; /* -1: as decoded */
            if (range >= 0 && g->format == AV_PIX_FMT_YUVJ420P) g->format = AV_PIX_FMT_YUV420P;
            pic p = make_pic(g, 0);
            char what[160];
            snprintf(what, sizeof what, "%s (range tag %d)", src[i].label, range);
            run_pic(conv, &p, REEL_COLOR_GRAY, what, &ty);
            /* RGB: test_cuda_emulate covers 8-bit 4:2:0's range tags already */
            if (range < 0 || p.src.bits > 8 || p.src.format != REEL_CUDA_SRC_NV)
                run_pic(conv, &p, REEL_COLOR_RGB, what, &ty);
            free_pic(&p);
        }
        print_tally(src[i].label, &ty);
        av_frame_free(&f);
    }
    reel_converter_destroy(&conv);
}

/* Rotated pictures without a resize: RGB and gray, crops, flips, dtypes.
 * Frames of a video whose tag rotates them (270 clockwise), all three turns. */
static void rotations(void)
{
    reel_converter *conv = NULL;
    reel_error err;
    CHECK_OK(reel_converter_create(&conv, &err));
    char path[4200];
    vpath(path, sizeof path, "nasa_13013_rotated.mp4");
    int rot = 0;
    AVFrame *f8 = cuda_decode_at(path, 3, &rot);
    CHECK_EQ_INT(rot, 270); /* ffprobe: rotation=90 (counter-clockwise) */
    AVFrame *f12 = cuda_decode_at(
        cli_video("fmt_gray12le.mkv", "gray12le", "libx265 -x265-params lossless=1:log-level=error"), 1, NULL);
    tally ty = { 0 };
    for (int k = 0; k < 2; k++)
        for (int r = 90; r <= 270; r += 90) {
            AVFrame *g = av_frame_clone(k ? f12 : f8);
            CHECK(g != NULL);
            g->height -= r == 180 && !k; /* an odd height too */
            pic p = make_pic(g, r);
            const int pw = r == 180 ? g->width : g->height, ph = r == 180 ? g->height : g->width;
            for (int c = 0; c < 12; c++) {
                reel_transform t;
                static const reel_dtype dts[] = { REEL_DTYPE_UINT8, REEL_DTYPE_FLOAT32, REEL_DTYPE_UINT16 };
                reel_color color = c & 1 ? REEL_COLOR_GRAY : REEL_COLOR_RGB;
                reel_dtype dt = dts[(c >> 1) % 3];
                if (dt == REEL_DTYPE_UINT16 && color == REEL_COLOR_RGB) dt = REEL_DTYPE_BFLOAT16;
                base(&t, color, dt);
                t.flip_horizontal = (c >> 2) & 1;
                t.pixels.convert_path = c % 3 ? REEL_CONVERT_PATH_FUSED : REEL_CONVERT_PATH_AFTER_RGB;
                if (c >= 6) {
                    t.crop_x = 3 + c;
                    t.crop_y = 5;
                    t.crop_w = pw / 2 + 1;
                    t.crop_h = ph / 3 + 1;
                }
                char what[128];
                snprintf(what, sizeof what, "%s rotated %d case %d", k ? "gray12" : "h264", r, c);
                compare(conv, &p, &t, &ty, what);
            }
            free_pic(&p);
        }
    print_tally("rotated 90/180/270", &ty);
    av_frame_free(&f8);
    av_frame_free(&f12);
    reel_converter_destroy(&conv);
}

/* Downscales near swscale's 256-tap bound (past it swscale cascades
 * through an intermediate picture): each either equal to the CPU or
 * refused by name, and both seen. */
TEST(large_downscales_equal_cpu_or_are_refused)
{
    reel_converter *conv = NULL;
    reel_error err;
    CHECK_OK(reel_converter_create(&conv, &err));
    char path[4200];
    vpath(path, sizeof path, "nasa_13013.mp4");
    pic p = make_pic(cuda_decode_at(path, 5, NULL), 0);
    int done = 0, refusals = 0;
    tally ty = { 0 };
    static const reel_filter filters[] = { REEL_FILTER_BILINEAR, REEL_FILTER_AREA, REEL_FILTER_BICUBIC };
    for (size_t k = 0; k < sizeof filters / sizeof filters[0]; k++)
        for (int ow = 2; ow <= 12; ow += 2)
            for (int gray = 0; gray < 2; gray++) {
                reel_transform t;
                base(&t, gray ? REEL_COLOR_GRAY : REEL_COLOR_RGB, REEL_DTYPE_UINT8);
                t.width = ow;
                t.height = 270 / (ow / 2);
                t.pixels.filter = filters[k];
                reel__cuda_taps taps = { 0 };
                reel__px_frame pf;
                int r = reel__cuda_plan_frame(&taps, &p.src, &t, NULL, &pf, &err);
                reel__cuda_taps_free(&taps);
                if (r == REEL_E_CUDA) {
                    CHECK_MSG(strstr(err.message, "taps or more"), "%s", err.message);
                    refusals++;
                    continue;
                }
                CHECK_OK(r);
                char what[96];
                snprintf(what, sizeof what, "480x270 to %dx%d filter %d gray %d", ow, t.height, filters[k], gray);
                compare(conv, &p, &t, &ty, what);
                done++;
            }
    printf("    %d compared (all equal), %d refused\n", done, refusals);
    CHECK(done > 0 && refusals > 0);
    free_pic(&p);
    reel_converter_destroy(&conv);
}

/* convert_path AFTER_RGB with a resize (reel.vlm's decoding): the whole
 * picture unscaled, then swscale's RGB24 resize of its crop (pass 2), each
 * filter, down (below half the width: chroma from pixel pairs) and up, odd
 * sizes, the Qwen pixel-budget sizes (multiples of 28), odd crops, uint8
 * and normalised floats, flips and layouts; 8- and 10-bit 4:2:0, full
 * range, odd widths and heights, 4:4:4 (8- and 10-bit) and gray sources. An odd crop at the right edge downscaled
 * by 2 or more is refused (swscale reads past the crop there). */
static void after_rgb(void)
{
    reel_converter *conv = NULL;
    reel_error err;
    CHECK_OK(reel_converter_create(&conv, &err));
    struct {
        const char *label, *file, *fmt, *codec; /* file: shared; else made from testsrc2 */
        int64_t idx;
        int w, h; /* 0: as decoded; else the top-left window */
    } src[] = {
        { "h264 8-bit", "nasa_13013.mp4", NULL, NULL, 5, 0, 0 },
        { "hevc 10-bit", "nasa_13013_hdr.mp4", NULL, NULL, 4, 0, 0 },
        { "h264 8-bit full range, odd width and height", "karma.mp4", NULL, NULL, 3, 331, 187 },
        { "h264 8-bit, odd height", "nasa_13013.mp4", NULL, NULL, 7, 480, 269 },
        { "h264 4:4:4 8-bit", "cockatoo.mp4", NULL, NULL, 2, 418, 240 },
        { "hevc 4:4:4 10-bit", NULL, "yuv444p10le", "libx265 -x265-params log-level=error", 1, 0, 0 },
        { "gray8 hevc", NULL, "gray", "libx265 -x265-params lossless=1:log-level=error", 1, 0, 0 },
    };
    tally ty = { 0 };
    int refused = 0;
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++) {
        char path[4200], name[64];
        if (src[i].file)
            vpath(path, sizeof path, src[i].file);
        else {
            snprintf(name, sizeof name, "fmt_%s.mkv", src[i].fmt); /* all_formats' videos */
            snprintf(path, sizeof path, "%s", cli_video(name, src[i].fmt, src[i].codec));
        }
        AVFrame *f = cuda_decode_at(path, src[i].idx, NULL);
        if (src[i].w) {
            f->width = src[i].w;
            f->height = src[i].h;
        }
        pic p = make_pic(f, 0);
        const int W = f->width, H = f->height;
        struct {
            int cx, cy, cw, ch, ow, oh;
        } geo[] = {
            { 0, 0, 0, 0, 224, 126 },                               /* down, chroma from pixel pairs */
            { 0, 0, 0, 0, (W + 13) / 28 * 28, (H + 13) / 28 * 28 }, /* Qwen's size: a multiple of 28 */
            { 0, 0, 0, 0, W / 2, H / 2 },                           /* exactly half: pairs */
            { 0, 0, 0, 0, W / 2 + 1, H / 2 | 1 },                   /* just over half, odd */
            { 0, 0, 0, 0, 28, 28 },
            { 0, 0, 0, 0, W * 3 / 2 + 1, H * 5 / 4 },     /* up, odd width */
            { 7, 3, W / 2 + 1, H / 2 + 1, W / 4, H / 3 }, /* odd crop, pairs: reads the pixel after it */
            { 1, 2, W - 3, H - 5, W - 30, H - 3 },
            { W - (W / 2 | 1), 0, W / 2 | 1, H / 2, W / 5, H / 4 }, /* odd crop at the right edge: refused */
        };
        for (size_t g = 0; g < sizeof geo / sizeof geo[0]; g++)
            for (int fl = REEL_FILTER_BILINEAR; fl <= REEL_FILTER_NEAREST; fl++)
                for (int k = 0; k < 3; k++) {
                    if (k && fl != REEL_FILTER_BICUBIC) continue;
                    /* under a sanitizer (about 3x slower) a third of the cases, spread
                     * over every geometry, filter and dtype */
                    if (UNDER_SANITIZER && g != 8 && (g + (size_t)fl + (size_t)k + i) % 3) continue;
                    reel_transform t;
                    static const reel_dtype dts[] = { REEL_DTYPE_UINT8, REEL_DTYPE_FLOAT32, REEL_DTYPE_BFLOAT16 };
                    base(&t, REEL_COLOR_RGB, dts[k]);
                    t.pixels.convert_path = REEL_CONVERT_PATH_AFTER_RGB;
                    t.crop_x = geo[g].cx;
                    t.crop_y = geo[g].cy;
                    t.crop_w = geo[g].cw;
                    t.crop_h = geo[g].ch;
                    t.width = geo[g].ow;
                    t.height = geo[g].oh;
                    t.pixels.filter = (reel_filter)fl;
                    t.flip_horizontal = k == 1;
                    t.layout = k ? REEL_LAYOUT_CHW : REEL_LAYOUT_HWC;
                    if (k) {
                        t.pixels.mean[0] = 0.48145466f; /* Qwen's CLIP normalisation */
                        t.pixels.mean[1] = 0.4578275f;
                        t.pixels.mean[2] = 0.40821073f;
                        t.pixels.std[0] = 0.26862954f;
                        t.pixels.std[1] = 0.26130258f;
                        t.pixels.std[2] = 0.27577711f;
                    }
                    reel__cuda_taps taps = { 0 };
                    reel__px_frame pf;
                    int r = reel__cuda_plan_frame(&taps, &p.src, &t, NULL, &pf, &err);
                    reel__cuda_taps_free(&taps);
                    const int cw = t.crop_w ? t.crop_w : W, edge = t.crop_x + cw == W;
                    CHECK(g != 8 || (edge && (cw & 1) && t.width <= cw / 2));
                    if (edge && (cw & 1) && t.width <= cw / 2) {
                        CHECK_STATUS(r, REEL_E_CUDA);
                        CHECK_MSG(strstr(err.message, "odd-width crop at the picture's right edge"), "%s", err.message);
                        refused++;
                        continue;
                    }
                    CHECK_MSG(r == REEL_OK, "%s geometry %zu: %s", src[i].label, g, err.message);
                    CHECK(pf.rgb2 == 1 && pf.chalf == (t.width <= cw / 2));
                    char what[200];
                    snprintf(what, sizeof what, "after_rgb %s geometry %zu filter %d case %d", src[i].label, g, fl, k);
                    compare(conv, &p, &t, &ty, what);
                }
        free_pic(&p);
    }
    print_tally("after_rgb with a resize", &ty);
    printf("    %d refused (odd crop at the right edge)\n", refused);
    CHECK(refused > 0);
    reel_converter_destroy(&conv);
}

TEST(after_rgb_resize_equals_cpu)
{
    after_rgb();
}

TEST(gray_and_deep_sources_equal_cpu)
{
    all_formats();
}

TEST(rotation_equals_cpu)
{
    rotations();
}

/* What the GPU does not do is refused by name, never done differently. */
TEST(plan_refuses_what_the_gpu_does_not_do)
{
    uint16_t y[64 * 16] = { 0 }, uv[64 * 8] = { 0 };
    reel__cuda_src src = { .y = (uint8_t *)y,
                           .uv = (uint8_t *)uv,
                           .y_pitch = 128,
                           .uv_pitch = 128,
                           .width = 64,
                           .height = 16,
                           .bits = 10,
                           .colorspace = AVCOL_SPC_BT709,
                           .format = REEL_CUDA_SRC_NV };
    reel__cuda_taps taps = { 0 };
    reel__px_frame pf;
    reel_transform t;
    reel_error err;
    base(&t, REEL_COLOR_RGB, REEL_DTYPE_UINT16);
    CHECK_OK(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err));
    src.bits = 8;
    CHECK_OK(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err));
    src.width = 63;
    CHECK_STATUS(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err), REEL_E_CUDA);
    CHECK_MSG(strstr(err.message, "CUDA") && strstr(err.message, "uint16 RGB of an unscaled 8-bit"), "%s", err.message);
    t.width = 32;
    t.height = 8;
    CHECK_OK(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err));
    src.width = 64;
    src.bits = 10;
    base(&t, REEL_COLOR_GRAY, REEL_DTYPE_UINT16);
    CHECK_OK(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err));
    src.bits = 16;
    CHECK_STATUS(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err), REEL_E_CUDA);
    CHECK_MSG(strstr(err.message, "bit depth of a 4:2:0"), "%s", err.message);
    src.format = REEL_CUDA_SRC_GRAY;
    src.uv = NULL;
    CHECK_OK(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err));
    src.bits = 14;
    CHECK_STATUS(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err), REEL_E_CUDA);
    CHECK_MSG(strstr(err.message, "bit depth of a gray"), "%s", err.message);
    src.bits = 8;
    base(&t, REEL_COLOR_RGB, REEL_DTYPE_UINT8);
    CHECK_OK(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err));
    src.bits = 12;
    base(&t, REEL_COLOR_GRAY, REEL_DTYPE_FLOAT32);
    src.rotation = 270;
    t.width = 8;
    t.height = 8;
    CHECK_STATUS(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err), REEL_E_CUDA);
    CHECK_MSG(strstr(err.message, "rotation with a resize"), "%s", err.message);
    t.pixels.apply_rotation = 0; /* the coded picture: no rotation to do */
    CHECK_OK(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err));
    src.rotation = 45;
    t.pixels.apply_rotation = 1;
    CHECK_STATUS(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err), REEL_E_CUDA);
    CHECK_MSG(strstr(err.message, "rotation of 45 degrees"), "%s", err.message);
    src.rotation = 0;
    src.format = 7;
    CHECK_STATUS(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err), REEL_E_CUDA);
    CHECK_MSG(strstr(err.message, "picture layout"), "%s", err.message);
    src.format = REEL_CUDA_SRC_444;
    src.bits = 16;
    CHECK_STATUS(reel__cuda_plan_frame(&taps, &src, &t, NULL, &pf, &err), REEL_E_CUDA);
    CHECK_MSG(strstr(err.message, "bit depth of a 4:4:4"), "%s", err.message);
    reel__cuda_taps_free(&taps);
}

/* The kernel itself on a GPU (scripts/device_check.sh runs this binary of
 * the REEL_CUDA=ON build there): the same comparisons. Without a driver or
 * a GPU it is skipped with the reason CUDA gives. */
TEST(gpu_kernel_equals_cpu)
{
    cuda_open_or_skip();
    all_formats();
    rotations();
    after_rgb();
    reel__cuda_close(&g_device);
}
