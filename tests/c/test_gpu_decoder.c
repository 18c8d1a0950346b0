/* test_gpu_decoder.c: the decoder with device "cuda" against the emulated
 * driver (tests/cuda/fake_cuda.c, loaded through REEL_LIBCUDA): frames equal
 * to the CPU decoder's bit for bit on shared videos of several codecs and
 * transforms, the counts of uploaded and NVDEC frames and why, faults named
 * and survived, device memory flat over 1,000 calls, frames outliving their
 * decoder, the fallback and the named refusals. With REEL_GPU_DECODER_REAL=1
 * (scripts/device_check.sh on a GPU machine) the same checks run against the
 * machine's driver, NVDEC included; the fake's counters and faults are then
 * left out. */
#include "harness.h"
#include "real_common.h"

#include "cuda/device.h"
#include "decoder/internal.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static void *g_fake;

/* 1: the machine's driver (device_check on a GPU), not the emulated one. */
static int real_gpu(void)
{
    const char *v = getenv("REEL_GPU_DECODER_REAL");
    return v && *v == '1';
}

/* The emulated driver, loaded by libreel at its first CUDA call; or, on a
 * GPU machine, a check that its device opens. */
static void use_fake(void)
{
    if (real_gpu()) {
        reel_device_buffer *b = NULL;
        reel_error err;
        if (reel_device_buffer_alloc("cuda", 16, &b, &err) != REEL_OK) harness_skip(err.message);
        reel_device_buffer_free(&b);
        return;
    }
    if (!g_fake) {
        setenv("REEL_LIBCUDA", REEL_FAKE_CUDA, 1);
        g_fake = dlopen(REEL_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
        CHECK_MSG(g_fake != NULL, "the emulated driver %s: %s", REEL_FAKE_CUDA, dlerror());
    }
}

/* The fake's counter `name` (-1 on a real GPU: the checks on it pass). */
static long long counter(const char *name)
{
    if (real_gpu()) return -1;
    long long (*fn)(const char *) = (long long (*)(const char *))dlsym(g_fake, "reel_fake_cuda_counter");
    CHECK(fn != NULL);
    return fn(name);
}

static void fail_call(const char *name, long long nth)
{
    if (real_gpu()) harness_skip("fault injection needs the emulated driver");
    void (*fn)(const char *, long long) = (void (*)(const char *, long long))dlsym(g_fake, "reel_fake_cuda_fail");
    CHECK(fn != NULL);
    fn(name, nth);
}

/* A counter's expected value, under the emulated driver only. */
#define FAKE_EQ(value, expected)                            \
    do {                                                    \
        if (!real_gpu()) CHECK_EQ_INT((value), (expected)); \
    } while (0)

static reel_decoder *open_on(const char *file, const char *device)
{
    use_fake();
    char path[4200];
    vpath(path, sizeof path, file);
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.device = device;
    reel_decoder *dec = NULL;
    reel_error err;
    CHECK_OK(reel_decoder_open(&dec, path, &s, &err));
    return dec;
}

/* The frames on the GPU, downloaded. */
static uint8_t *gpu_frames(reel_decoder *dec, const int64_t *idx, size_t n, const reel_transform *t, size_t *size,
                           reel_decode_stats *st)
{
    reel_device_buffer *b = NULL;
    reel_error err;
    int r = reel_decoder_get_frames_device(dec, idx, n, t, &b, st, &err);
    CHECK_MSG(r == REEL_OK, "%s", err.message);
    *size = reel_device_buffer_get_size(b);
    uint8_t *host = xmalloc(*size);
    CHECK_OK(reel_device_buffer_download(b, 0, host, *size, &err));
    reel_device_buffer_free(&b);
    return host;
}

static uint8_t *cpu_frames(const char *file, const int64_t *idx, size_t n, const reel_transform *t, size_t *size)
{
    reel_decoder *dec = open_on(file, "cpu");
    void *out = NULL;
    reel_error err;
    CHECK_OK(reel_decoder_get_frames_alloc(dec, idx, n, t, &out, size, NULL, &err));
    reel_decoder_close(&dec);
    return out;
}

/* Transform k of the set every video is checked under. */
static int transform_of(int k, reel_transform *t, char *what, size_t size)
{
    reel_transform_default_settings(t);
    switch (k) {
    case 0: snprintf(what, size, "default"); return 1;
    case 1:
    case 2:
    case 3:
    case 4:
        t->width = 96;
        t->height = 54;
        t->pixels.filter = (reel_filter)(k - 1);
        snprintf(what, size, "resize 96x54 filter %d", k - 1);
        return 1;
    case 5:
        t->crop_x = 7;
        t->crop_y = 5;
        t->crop_w = 61;
        t->crop_h = 33;
        t->flip_horizontal = 1;
        snprintf(what, size, "odd crop, flipped");
        return 1;
    case 6:
        t->width = 40;
        t->height = 40;
        t->crop_x = 2;
        t->crop_y = 4;
        t->crop_w = 100;
        t->crop_h = 90;
        t->pixels.dtype = REEL_DTYPE_FLOAT32;
        t->layout = REEL_LAYOUT_CHW;
        for (int c = 0; c < 3; c++) {
            t->pixels.mean[c] = 0.45f + 0.01f * c;
            t->pixels.std[c] = 0.225f + 0.003f * c;
        }
        snprintf(what, size, "crop + bicubic-less resize, float32 CHW normalised");
        return 1;
    case 7:
        t->width = 33;
        t->height = 31;
        t->pixels.dtype = REEL_DTYPE_FLOAT16;
        t->pixels.filter = REEL_FILTER_BICUBIC;
        snprintf(what, size, "odd upscale-or-down, float16 HWC");
        return 1;
    case 8:
        t->pixels.dtype = REEL_DTYPE_BFLOAT16;
        t->layout = REEL_LAYOUT_CHW;
        snprintf(what, size, "bfloat16 CHW");
        return 1;
    case 9: /* reel.vlm's decoding: RGB first, then swscale's bicubic RGB resize */
        t->width = 96;
        t->height = 54;
        t->pixels.filter = REEL_FILTER_BICUBIC;
        t->pixels.convert_path = REEL_CONVERT_PATH_AFTER_RGB;
        snprintf(what, size, "after_rgb, bicubic 96x54");
        return 1;
    case 10:
        t->width = 252; /* a multiple of 28, as Qwen's pixel budget sizes */
        t->height = 140;
        t->crop_x = 3;
        t->crop_y = 1;
        t->crop_w = 151;
        t->crop_h = 101;
        t->flip_horizontal = 1;
        t->pixels.dtype = REEL_DTYPE_FLOAT32;
        t->layout = REEL_LAYOUT_CHW;
        t->pixels.filter = REEL_FILTER_BILINEAR;
        t->pixels.convert_path = REEL_CONVERT_PATH_AFTER_RGB;
        snprintf(what, size, "after_rgb, odd crop, bilinear up to 252x140, float32 CHW flipped");
        return 1;
    default: return 0;
    }
}

static const char *const g_videos[] = {
    "nasa_13013.mp4",         /* H.264 High, B-frames */
    "foreman_hevc.mp4",       /* HEVC Main */
    "nasa_13013_hdr.mp4",     /* HEVC Main 10, BT.2020 */
    "no_duration.webm",       /* VP9 */
    "non_uniform_tiling.ivf", /* AV1, height 300 */
    "karma.mp4",              /* yuvj420p: full range */
};

TEST(gpu_frames_equal_cpu_frames_on_shared_videos)
{
    const int64_t idx[] = { 0, 5, 3, 5, 9, -1 };
    const size_t n = sizeof idx / sizeof idx[0];
    for (size_t v = 0; v < sizeof g_videos / sizeof g_videos[0]; v++) {
        reel_decoder *dec = open_on(g_videos[v], "cuda");
        CHECK_EQ_STR(reel_decoder_get_device(dec), "cuda:0");
        const char *why = reel_decoder_get_upload_reason(dec);
        CHECK_MSG(real_gpu() || (why && strstr(why, "libnvcuvid.so.1")), "%s: upload reason \"%s\"", g_videos[v],
                  why ? why : "(null)");
        reel_transform t;
        char what[96];
        for (int k = 0; transform_of(k, &t, what, sizeof what); k++) {
            size_t gs, cs;
            reel_decode_stats st;
            uint8_t *g = gpu_frames(dec, idx, n, &t, &gs, &st);
            uint8_t *c = cpu_frames(g_videos[v], idx, n, &t, &cs);
            CHECK_MSG(gs == cs, "%s, %s: %zu bytes on the GPU, %zu on the CPU", g_videos[v], what, gs, cs);
            size_t first = 0;
            while (first < cs && g[first] == c[first]) first++;
            CHECK_MSG(first == cs, "%s, %s: byte %zu of %zu differs (GPU %d, CPU %d)", g_videos[v], what, first, cs,
                      first < cs ? g[first] : 0, first < cs ? c[first] : 0);
            if (!real_gpu()) CHECK_EQ_INT(st.frames_nvdec, 0);
            CHECK_MSG(st.frames_uploaded + st.frames_nvdec == st.frames_returned && st.frames_returned >= 5,
                      "%s, %s: %lld uploaded, %lld by NVDEC, %lld returned", g_videos[v], what,
                      (long long)st.frames_uploaded, (long long)st.frames_nvdec, (long long)st.frames_returned);
            if (real_gpu() && k == 0)
                fprintf(stderr, "%s: %lld frames by NVDEC, %lld uploaded%s%s\n", g_videos[v],
                        (long long)st.frames_nvdec, (long long)st.frames_uploaded, why && *why ? ": " : "",
                        why ? why : "");
            free(g);
            free(c);
        }
        reel_decoder_close(&dec);
    }
    FAKE_EQ(counter("live_allocs"), 0);
    FAKE_EQ(counter("retained"), 0);
    FAKE_EQ(counter("streams"), 0);
    FAKE_EQ(counter("events"), 0);
}

TEST(a_device_address_of_the_callers_own)
{
    reel_decoder *dec = open_on("foreman_hevc.mp4", "cuda:0");
    reel_transform t;
    reel_transform_default_settings(&t);
    t.width = 64;
    t.height = 48;
    const int64_t idx[] = { 2, 1 };
    size_t fb = 64 * 48 * 3;
    reel_device_buffer *b = NULL;
    reel_error err;
    CHECK_OK(reel_device_buffer_alloc("cuda", 2 * fb, &b, &err));
    CHECK_OK(reel_decoder_get_frames(dec, idx, 2, &t, (void *)(uintptr_t)reel_device_buffer_get_address(b), 2 * fb,
                                     NULL, &err));
    uint8_t *g = xmalloc(2 * fb);
    CHECK_OK(reel_device_buffer_download(b, 0, g, 2 * fb, &err));
    size_t cs;
    uint8_t *c = cpu_frames("foreman_hevc.mp4", idx, 2, &t, &cs);
    CHECK(cs == 2 * fb && !memcmp(g, c, cs));
    /* the host calls refuse: their memory is not the device's */
    void *out = NULL;
    CHECK_STATUS(reel_decoder_get_frames_alloc(dec, idx, 2, &t, &out, NULL, NULL, &err), REEL_E_INVALID_ARG);
    CHECK(strstr(err.message, "reel_decoder_get_frames_device") != NULL);
    CHECK_STATUS(reel_device_buffer_download(b, fb, g, 2 * fb, &err), REEL_E_OUT_OF_RANGE);
    CHECK_OK(reel_device_buffer_wait(b, 1, &err)); /* nothing recorded: nothing to wait for */
    free(g);
    free(c);
    reel_device_buffer_free(&b);
    reel_decoder_close(&dec);
    FAKE_EQ(counter("live_allocs"), 0);
}

TEST(faults_are_named_and_the_decoder_stays_usable)
{
    const struct {
        const char *call, *named;
        int nth;
    } faults[] = {
        { "cuMemAlloc_v2", "cuMemAlloc", 1 },
        { "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync", 1 },
        { "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync", 3 },
        { "cuLaunchKernel", "cuLaunchKernel", 1 },
        { "cuStreamSynchronize", "cuStreamSynchronize", 1 }, /* the launch's: uploads are queued before it */
        { "cuEventRecord", "cuEventRecord", 1 },
    };
    reel_transform t;
    reel_transform_default_settings(&t);
    t.width = 50;
    t.height = 30;
    const int64_t idx[] = { 4, 0, 7 };
    size_t cs;
    uint8_t *c = cpu_frames("nasa_13013.mp4", idx, 3, &t, &cs);
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        reel_decoder *dec = open_on("nasa_13013.mp4", "cuda");
        reel_device_buffer *b = NULL;
        reel_error err;
        fail_call(faults[i].call, faults[i].nth);
        int r = reel_decoder_get_frames_device(dec, idx, 3, &t, &b, NULL, &err);
        fail_call(NULL, 0);
        CHECK_MSG(r == REEL_E_CUDA, "%s: status %d (%s)", faults[i].call, r, err.message);
        CHECK(b == NULL);
        CHECK_MSG(strstr(err.message, "CUDA") && strstr(err.message, faults[i].named) &&
                      strstr(err.message, "nasa_13013.mp4"),
                  "%s: \"%s\"", faults[i].call, err.message);
        size_t gs;
        uint8_t *g = gpu_frames(dec, idx, 3, &t, &gs, NULL); /* and then it works */
        CHECK(gs == cs && !memcmp(g, c, cs));
        free(g);
        reel_decoder_close(&dec);
        FAKE_EQ(counter("live_allocs"), 0);
        FAKE_EQ(counter("retained"), 0);
    }
    free(c);
}

TEST(device_memory_is_flat_over_1000_calls)
{
    reel_decoder *dec = open_on("carphone_pristine.mp4", "cuda");
    reel_transform t;
    reel_transform_default_settings(&t);
    t.width = 32;
    t.height = 24;
    reel_error err;
    long long live0 = 0, bytes0 = 0;
    size_t held0 = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t idx[2] = { i % 7, 3 + i % 5 };
        reel_device_buffer *b = NULL;
        CHECK_OK(reel_decoder_get_frames_device(dec, idx, 2, &t, &b, NULL, &err));
        reel_device_buffer_free(&b);
        reel__cuda_mem m = reel__cuda_memory(dec->cuda);
        if (i == 9) {
            live0 = counter("live_allocs");
            bytes0 = counter("live_bytes");
            held0 = m.held;
        } else if (i > 9) {
            CHECK_MSG(counter("live_allocs") == live0 && counter("live_bytes") == bytes0 && m.held == held0,
                      "call %d: %lld allocations of %lld bytes (pool %zu), after 10 calls %lld of %lld (pool %zu)", i,
                      counter("live_allocs"), counter("live_bytes"), m.held, live0, bytes0, held0);
        }
    }
    CHECK(reel__cuda_memory(dec->cuda).reuses > 1000);
    reel_decoder_close(&dec);
    FAKE_EQ(counter("live_allocs"), 0);
}

TEST(frames_outlive_their_decoder)
{
    reel_decoder *dec = open_on("no_duration.webm", "cuda");
    const int64_t idx[] = { 10, 11 };
    reel_transform t;
    reel_transform_default_settings(&t);
    t.width = 80;
    t.height = 45;
    reel_device_buffer *b = NULL;
    reel_error err;
    CHECK_OK(reel_decoder_get_frames_device(dec, idx, 2, &t, &b, NULL, &err));
    reel_decoder_close(&dec);
    FAKE_EQ(counter("retained"), 1); /* the buffer's hold on the context */
    CHECK_OK(reel_device_buffer_wait(b, 2, &err));
    size_t cs, gs = reel_device_buffer_get_size(b);
    uint8_t *c = cpu_frames("no_duration.webm", idx, 2, &t, &cs);
    uint8_t *g = xmalloc(gs);
    CHECK_OK(reel_device_buffer_download(b, 0, g, gs, &err));
    CHECK(gs == cs && !memcmp(g, c, cs));
    CHECK_EQ_STR(reel_device_buffer_get_device(b), "cuda:0");
    reel_device_buffer_free(&b);
    FAKE_EQ(counter("live_allocs"), 0);
    FAKE_EQ(counter("retained"), 0);
    free(c);
    free(g);
}

TEST(refusals_and_the_fallback)
{
    if (real_gpu()) harness_skip("written for the emulated driver's one device");
    use_fake();
    char path[4200];
    vpath(path, sizeof path, "nasa_13013.mp4");
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    reel_decoder *dec = NULL;
    reel_error err;
    s.device = "cuda:1";
    CHECK_STATUS(reel_decoder_open(&dec, path, &s, &err), REEL_E_CUDA);
    CHECK_MSG(strstr(err.message, "cuda:1 asked for, the machine has 1") && strstr(err.message, "nasa_13013.mp4") &&
                  strstr(err.message, "device_fallback"),
              "%s", err.message);
    s.device_fallback = "cpu";
    CHECK_OK(reel_decoder_open(&dec, path, &s, &err));
    CHECK_EQ_STR(reel_decoder_get_device(dec), "cpu");
    CHECK(reel_decoder_get_upload_reason(dec) == NULL);
    reel_device_buffer *b = NULL;
    const int64_t one = 0;
    CHECK_STATUS(reel_decoder_get_frames_device(dec, &one, 1, NULL, &b, NULL, &err), REEL_E_INVALID_ARG);
    reel_decoder_close(&dec);
    s.device_fallback = NULL;
    s.device = "gpu";
    CHECK_STATUS(reel_decoder_open(&dec, path, &s, &err), REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_device_buffer_alloc("cpu", 16, &b, &err), REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_device_buffer_alloc("cuda:3", 16, &b, &err), REEL_E_CUDA);
    /* what the GPU does not do is refused by name, never done differently */
    vpath(path, sizeof path, "nasa_13013_rotated.mp4");
    s.device = "cuda";
    CHECK_OK(reel_decoder_open(&dec, path, &s, &err));
    reel_transform t;
    reel_transform_default_settings(&t);
    CHECK_OK(reel_decoder_get_frames_device(dec, &one, 1, &t, &b, NULL, &err)); /* a rotation alone: done */
    reel_device_buffer_free(&b);
    t.width = 64; /* with a resize: refused */
    t.height = 48;
    CHECK_STATUS(reel_decoder_get_frames_device(dec, &one, 1, &t, &b, NULL, &err), REEL_E_CUDA);
    CHECK_MSG(strstr(err.message, "rotation") && strstr(err.message, "nasa_13013_rotated.mp4"), "%s", err.message);
    t.pixels.apply_rotation = 0;
    t.pixels.convert_path = REEL_CONVERT_PATH_AFTER_RGB;
    t.pixels.dtype = REEL_DTYPE_UINT16; /* RGB48 resized after conversion (the deep path): refused */
    CHECK_STATUS(reel_decoder_get_frames_device(dec, &one, 1, &t, &b, NULL, &err), REEL_E_CUDA);
    CHECK(strstr(err.message, "AFTER_RGB") != NULL);
    t.pixels.dtype = REEL_DTYPE_UINT8;
    CHECK_OK(reel_decoder_get_frames_device(dec, &one, 1, &t, &b, NULL, &err)); /* RGB24 resized: done */
    reel_device_buffer_free(&b);
    t.pixels.convert_path = REEL_CONVERT_PATH_FUSED;
    CHECK_OK(reel_decoder_get_frames_device(dec, &one, 1, &t, &b, NULL, &err)); /* still usable */
    reel_device_buffer_free(&b);
    reel_decoder_close(&dec);
    /* 4:4:4 is not done on the GPU: named */
    vpath(path, sizeof path, "cockatoo.mp4");
    CHECK_OK(reel_decoder_open(&dec, path, &s, &err));
    CHECK_STATUS(reel_decoder_get_frames_device(dec, &one, 1, NULL, &b, NULL, &err), REEL_E_CUDA);
    CHECK_MSG(strstr(err.message, "yuv444p") && strstr(err.message, "cockatoo.mp4"), "%s", err.message);
    reel_decoder_close(&dec);
    FAKE_EQ(counter("live_allocs"), 0);
    FAKE_EQ(counter("retained"), 0);
}
