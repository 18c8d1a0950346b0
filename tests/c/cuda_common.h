/* cuda_common.h: what the CUDA conversion tests share: a frame decoded on
 * the CPU, and one picture converted by the kernel's emulation or, on a GPU
 * (g_device set by the GPU test), by the kernel itself. */
#ifndef REEL_TEST_CUDA_COMMON_H
#define REEL_TEST_CUDA_COMMON_H

#include "harness.h"
#include "testgen.h"

#include "core/frame.h"
#include "cuda/device.h"
#include "cuda/plan.h"

#include <libavutil/frame.h>
#include <stdint.h>

typedef struct cuda_grab {
    AVFrame *av;
    int rotation;
} cuda_grab;

static int cuda_grab_fn(void *opaque, const reel_frame *f, size_t pos)
{
    (void)pos;
    cuda_grab *g = opaque;
    if (!g->av) g->av = av_frame_clone(f->av);
    g->rotation = f->rotation;
    return 0;
}

/* Frame `idx` of the video at `path` as the CPU decodes it, and its display
 * rotation (rotation may be NULL). */
static AVFrame *cuda_decode_at(const char *path, int64_t idx, int *rotation)
{
    reel_decoder *dec = tg_open(path, NULL);
    cuda_grab g = { 0 };
    reel_error err;
    CHECK_OK(reel_decoder_decode(dec, &idx, 1, cuda_grab_fn, &g, NULL, &err));
    reel_decoder_close(&dec);
    CHECK(g.av != NULL);
    if (rotation) *rotation = g.rotation;
    return g.av;
}

/* Set by the GPU test: the comparisons run the kernel instead. */
static reel__cuda *g_device;

static void *dev_ptr(uint64_t p)
{
    return (void *)(uintptr_t)p;
}

/* The picture `host` (host pointers; its y plane of ybytes, its uv and v
 * planes, where present, of uvbytes each) converted per t into dst (size
 * bytes) by the emulation, or by the kernel on g_device: the planes
 * uploaded, dst uploaded too (what is not written stays as it was), the
 * output downloaded. */
static void cuda_convert_one(const reel__cuda_src *host, size_t ybytes, size_t uvbytes, const reel_transform *t,
                             void *dst, size_t size)
{
    reel__cuda_src src = *host;
    reel__cuda_taps taps = { 0 };
    reel__px_frame pf;
    reel_error err;
    if (!g_device) {
        CHECK_OK(reel__cuda_plan_frame(&taps, &src, t, dst, &pf, &err));
        reel__cuda_emulate(&pf, 1, &taps);
        reel__cuda_taps_free(&taps);
        return;
    }
    uint64_t dy, duv = 0, dv = 0, dout;
    CHECK_OK(reel__cuda_buffer(g_device, ybytes, &dy, &err));
    CHECK_OK(reel__cuda_upload(g_device, dy, host->y, ybytes, &err));
    if (host->uv) {
        CHECK_OK(reel__cuda_buffer(g_device, uvbytes, &duv, &err));
        CHECK_OK(reel__cuda_upload(g_device, duv, host->uv, uvbytes, &err));
    }
    if (host->v) {
        CHECK_OK(reel__cuda_buffer(g_device, uvbytes, &dv, &err));
        CHECK_OK(reel__cuda_upload(g_device, dv, host->v, uvbytes, &err));
    }
    CHECK_OK(reel__cuda_buffer(g_device, size, &dout, &err));
    CHECK_OK(reel__cuda_upload(g_device, dout, dst, size, &err));
    src.y = dev_ptr(dy);
    src.uv = host->uv ? dev_ptr(duv) : NULL;
    src.v = host->v ? dev_ptr(dv) : NULL;
    CHECK_OK(reel__cuda_plan_frame(&taps, &src, t, dev_ptr(dout), &pf, &err));
    CHECK_OK(reel__cuda_convert(g_device, &pf, 1, &taps, &err));
    CHECK_OK(reel__cuda_download(g_device, dst, dout, size, &err));
    reel__cuda_buffers_release(g_device);
    reel__cuda_taps_free(&taps);
}

/* The GPU test's start: the device, or a skip with the reason CUDA gives. */
static void cuda_open_or_skip(void)
{
    reel_error err;
    int r = reel__cuda_open(0, 0, &g_device, &err);
    if (r == REEL_E_CUDA) {
        char why[REEL_ERROR_MSG_SIZE + 16];
        snprintf(why, sizeof why, "no GPU: %s", err.message);
        harness_skip(why);
    }
    CHECK_OK(r);
    printf("    on %s, compute %d.%d\n", reel__cuda_name(g_device), reel__cuda_capability(g_device) / 10,
           reel__cuda_capability(g_device) % 10);
}

#endif
