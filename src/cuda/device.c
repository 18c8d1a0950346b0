/* device.c: the "device" setting, and a CUDA device as one decoder or
 * loader worker holds it: primary context, a stream of its own, the
 * embedded kernels, a bounded pool of device buffers reused across batches,
 * and the one launch per batch of the conversion kernel. */
#include "cuda/device.h"
#include "cuda/device_parts.h"
#include "cuda/driver.h"
#include "cuda/kernels.h"
#include "core/error.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int reel__device_parse(const char *d, int *index, reel_error *err)
{
    *index = -1;
    if (!d || !*d || !strcmp(d, "cpu")) return REEL_OK;
    if (!strcmp(d, "cuda")) {
        *index = 0;
        return REEL_OK;
    }
    if (!strncmp(d, "cuda:", 5) && d[5] >= '0' && d[5] <= '9' && strlen(d) <= 8) {
        char *end = NULL;
        long n = strtol(d + 5, &end, 10);
        if (end && !*end && n >= 0 && n < 1000) {
            *index = (int)n;
            return REEL_OK;
        }
    }
    return reel__error_set(err, REEL_E_INVALID_ARG, "device \"%.64s\": expected \"cpu\", \"cuda\" or \"cuda:N\"", d);
}

typedef struct pool_buf {
    CUdeviceptr ptr;
    size_t size;
    int busy;
} pool_buf;

#define POOL_MAX 64

typedef struct staging_buf {
    void *ptr;
    size_t size;
    int pinned; /* cuMemHostAlloc's, else malloc's */
} staging_buf;

struct reel__cuda {
    const reel__cu_api *cu;
    int index;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    CUmodule module;
    CUfunction convert;
    char name[128];
    int capability;
    reel__cuda_mem mem;
    pool_buf bufs[POOL_MAX];
    int nbufs;
    staging_buf staging[REEL__CUDA_STAGING_SLOTS];
    reel__cuda_tally *tally; /* an owner's total (a loader's), or NULL */
};

static void raise_peak(_Atomic int64_t *peak, int64_t now)
{
    int64_t p = atomic_load(peak);
    while (now > p && !atomic_compare_exchange_weak(peak, &p, now)) {}
}

void reel__cuda_tally_add(reel__cuda_tally *t, int64_t device, int64_t pinned)
{
    if (!t) return;
    if (device) raise_peak(&t->device_peak, atomic_fetch_add(&t->device, device) + device);
    if (pinned) raise_peak(&t->pinned_peak, atomic_fetch_add(&t->pinned, pinned) + pinned);
}

void reel__cuda_set_tally(reel__cuda *c, reel__cuda_tally *t)
{
    c->tally = t;
    reel__cuda_tally_add(t, (int64_t)c->mem.held, (int64_t)c->mem.pinned);
}

/* c's own counters and its owner's tally, by `device` and `pinned` bytes. */
static void count(reel__cuda *c, int64_t device, int64_t pinned)
{
    c->mem.held = (size_t)((int64_t)c->mem.held + device);
    c->mem.pinned = (size_t)((int64_t)c->mem.pinned + pinned);
    if (c->mem.held > c->mem.peak) c->mem.peak = c->mem.held;
    if (c->mem.pinned > c->mem.pinned_peak) c->mem.pinned_peak = c->mem.pinned;
    reel__cuda_tally_add(c->tally, device, pinned);
}

#define CU_CHECK(c, call, what)                                                                    \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != REEL_CU_SUCCESS) {                                                               \
            char b_[32];                                                                           \
            return reel__error_set(err, REEL_E_CUDA, "CUDA: %s failed on %s: %s", what, (c)->name, \
                                   reel__cu_name((c)->cu, r_, b_));                                \
        }                                                                                          \
    } while (0)

static int open_device(reel__cuda *c, int index, reel_error *err)
{
    const reel__cu_api *cu = c->cu;
    int count = 0;
    snprintf(c->name, sizeof c->name, "cuda:%d", index);
    CU_CHECK(c, cu->DeviceGetCount(&count), "cuDeviceGetCount");
    if (index >= count)
        return reel__error_set(err, REEL_E_CUDA, "CUDA: device cuda:%d asked for, the machine has %d", index, count);
    CU_CHECK(c, cu->DeviceGet(&c->dev, index), "cuDeviceGet");
    char name[96] = "";
    if (cu->DeviceGetName(name, (int)sizeof name, c->dev) == REEL_CU_SUCCESS)
        snprintf(c->name, sizeof c->name, "cuda:%d (%s)", index, name);
    int major = 0, minor = 0;
    cu->DeviceGetAttribute(&major, REEL_CU_ATTR_COMPUTE_CAPABILITY_MAJOR, c->dev);
    cu->DeviceGetAttribute(&minor, REEL_CU_ATTR_COMPUTE_CAPABILITY_MINOR, c->dev);
    c->capability = major * 10 + minor;
    CU_CHECK(c, cu->DevicePrimaryCtxRetain(&c->ctx, c->dev), "cuDevicePrimaryCtxRetain");
    return REEL_OK;
}

int reel__cuda_image_choice(const reel__cuda_image *images, int n, int capability, int order[2])
{
    int sass = -1, ptx = -1;
    for (int i = 0; i < n; i++) {
        const reel__cuda_image *m = &images[i];
        if (m->arch > capability) continue;
        if (m->ptx) {
            if (ptx < 0 || m->arch > images[ptx].arch) ptx = i;
        } else if (m->arch / 10 == capability / 10 && (sass < 0 || m->arch > images[sass].arch)) {
            sass = i;
        }
    }
    int k = 0;
    if (sass >= 0) order[k++] = sass;
    if (ptx >= 0) order[k++] = ptx;
    return k;
}

#ifdef REEL_HAVE_CUDA_KERNELS
/* "sm_80, sm_90, compute_90 (NVRTC 12.0)": what this libreel carries. */
static void images_carried(char *out, size_t size)
{
    size_t at = 0;
    out[0] = 0;
    for (int i = 0; i < reel__cuda_nimages && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%s%s", i ? ", " : "", reel__cuda_images[i].name);
    if (at < size) snprintf(out + at, size - at, " (%s)", reel__cuda_compiler);
}
#endif

/* The module from the image the GPU runs best (reel__cuda_image_choice):
 * its SASS, else its PTX; a driver refusing one tries the next. */
static int load_kernels(reel__cuda *c, reel_error *err)
{
    if (c->cu->emulated) { /* the tests' driver runs the kernel's grid on the CPU: no image to load */
        CU_CHECK(c, c->cu->ModuleLoadData(&c->module, REEL_CUDA_KERNEL_CONVERT), "cuModuleLoadData");
        CU_CHECK(c, c->cu->ModuleGetFunction(&c->convert, c->module, REEL_CUDA_KERNEL_CONVERT), "cuModuleGetFunction");
        return REEL_OK;
    }
#ifdef REEL_HAVE_CUDA_KERNELS
    const reel__cu_api *cu = c->cu;
    int order[2];
    int n = reel__cuda_image_choice(reel__cuda_images, reel__cuda_nimages, c->capability, order);
    CUresult r = REEL_CU_SUCCESS;
    int loaded = 0;
    for (int i = 0; i < n && !loaded; i++) {
        r = cu->ModuleLoadData(&c->module, reel__cuda_images[order[i]].data);
        loaded = r == REEL_CU_SUCCESS;
        if (!loaded) c->module = NULL;
    }
    if (!loaded) {
        char b[32], carried[160];
        int v = 0;
        cu->DriverGetVersion(&v);
        images_carried(carried, sizeof carried);
        return reel__error_set(err, REEL_E_CUDA,
                               "CUDA: the kernels do not load on %s (compute %d.%d, driver CUDA %d.%d): %s; "
                               "this libreel carries %s; docs/GPU.md says which drivers and GPUs they need",
                               c->name, c->capability / 10, c->capability % 10, v / 1000, v % 1000 / 10,
                               n ? reel__cu_name(cu, r, b) : "no image for this GPU", carried);
    }
    CU_CHECK(c, cu->ModuleGetFunction(&c->convert, c->module, REEL_CUDA_KERNEL_CONVERT), "cuModuleGetFunction");
    return REEL_OK;
#else
    return reel__error_set(err, REEL_E_CUDA,
                           "CUDA: this libreel was built without its CUDA kernels (REEL_CUDA=OFF; build with "
                           "`make cuda`, docs/GPU.md); %s is there",
                           c->name);
#endif
}

int reel__cuda_open(int index, size_t pool_limit, reel__cuda **out, reel_error *err)
{
    *out = NULL;
    const reel__cu_api *cu = reel__cu_load(err);
    if (!cu) return REEL_E_CUDA;
    reel__cuda *c = calloc(1, sizeof *c);
    if (!c) return reel__error_set(err, REEL_E_NOMEM, "CUDA: out of memory");
    c->cu = cu;
    c->dev = -1;
    c->index = index;
    c->mem.limit = pool_limit ? pool_limit : (size_t)1 << 30;
    int r = open_device(c, index, err);
    if (r == REEL_OK && cu->CtxPushCurrent(c->ctx) != REEL_CU_SUCCESS)
        r = reel__error_set(err, REEL_E_CUDA, "CUDA: cannot make %s's context current", c->name);
    if (r == REEL_OK) {
        r = load_kernels(c, err);
        if (r == REEL_OK && cu->StreamCreate(&c->stream, REEL_CU_STREAM_NON_BLOCKING) != REEL_CU_SUCCESS)
            r = reel__error_set(err, REEL_E_CUDA, "CUDA: cannot create a stream on %s", c->name);
        CUcontext popped;
        cu->CtxPopCurrent(&popped);
    }
    if (r != REEL_OK) {
        reel__cuda_close(&c);
        return r;
    }
    *out = c;
    return REEL_OK;
}

void reel__cuda_close(reel__cuda **pc)
{
    if (!pc || !*pc) return;
    reel__cuda *c = *pc;
    const reel__cu_api *cu = c->cu;
    if (c->ctx && cu->CtxPushCurrent(c->ctx) == REEL_CU_SUCCESS) {
        if (c->stream) cu->StreamSynchronize(c->stream); /* nothing may still read the staging or the pool */
        for (int i = 0; i < c->nbufs; i++) cu->MemFree(c->bufs[i].ptr);
        count(c, -(int64_t)c->mem.held, 0);
        for (int i = 0; i < REEL__CUDA_STAGING_SLOTS; i++) {
            staging_buf *h = &c->staging[i];
            if (h->pinned) {
                cu->MemFreeHost(h->ptr);
                count(c, 0, -(int64_t)h->size);
            } else {
                free(h->ptr);
            }
        }
        if (c->stream) cu->StreamDestroy(c->stream);
        if (c->module) cu->ModuleUnload(c->module);
        CUcontext popped;
        cu->CtxPopCurrent(&popped);
    }
    if (c->ctx) cu->DevicePrimaryCtxRelease(c->dev);
    free(c);
    *pc = NULL;
}

const char *reel__cuda_name(const reel__cuda *c)
{
    return c->name;
}

int reel__cuda_capability(const reel__cuda *c)
{
    return c->capability;
}

reel__cuda_mem reel__cuda_memory(const reel__cuda *c)
{
    return c->mem;
}

/* Requests are rounded up to whole grains, so that the few sizes a worker
 * sees (a video's pictures, a launch's tables under random crops) reach a
 * steady set of buffers after a few calls. */
#define POOL_GRAIN ((size_t)64 << 10)

int reel__cuda_buffer(reel__cuda *c, size_t size, uint64_t *ptr, reel_error *err)
{
    size = (size + POOL_GRAIN - 1) / POOL_GRAIN * POOL_GRAIN;
    pool_buf *best = NULL;
    for (int i = 0; i < c->nbufs; i++) {
        pool_buf *b = &c->bufs[i];
        if (!b->busy && b->size >= size && (!best || b->size < best->size)) best = b;
    }
    if (best) {
        best->busy = 1;
        c->mem.reuses++;
        *ptr = best->ptr;
        return REEL_OK;
    }
    /* idle buffers too small for this request are freed before it is
     * allocated (a larger one serves their sizes from now on): the pool
     * settles on the largest sizes it is asked for instead of growing */
    for (int i = 0; i < c->nbufs;) {
        if (!c->bufs[i].busy) {
            CUcontext was;
            if (c->cu->CtxPushCurrent(c->ctx) != REEL_CU_SUCCESS) break;
            c->cu->MemFree(c->bufs[i].ptr);
            c->cu->CtxPopCurrent(&was);
            count(c, -(int64_t)c->bufs[i].size, 0);
            c->bufs[i] = c->bufs[--c->nbufs];
        } else {
            i++;
        }
    }
    if (c->mem.held + size > c->mem.limit || c->nbufs == POOL_MAX)
        return reel__error_set(err, REEL_E_CUDA,
                               "CUDA: %zu bytes asked of %s's memory pool, which holds %zu of its %zu-byte bound", size,
                               c->name, c->mem.held, c->mem.limit);
    CUdeviceptr p = 0;
    CU_CHECK(c, c->cu->CtxPushCurrent(c->ctx), "cuCtxPushCurrent");
    CUresult ar = c->cu->MemAlloc(&p, size);
    CUcontext popped;
    c->cu->CtxPopCurrent(&popped);
    CU_CHECK(c, ar, "cuMemAlloc");
    c->bufs[c->nbufs++] = (pool_buf){ p, size, 1 };
    count(c, (int64_t)size, 0);
    c->mem.allocs++;
    *ptr = p;
    return REEL_OK;
}

void reel__cuda_buffers_release(reel__cuda *c)
{
    for (int i = 0; i < c->nbufs; i++) c->bufs[i].busy = 0;
}

static int copy(reel__cuda *c, void *host, uint64_t dev, size_t size, int up, reel_error *err)
{
    const reel__cu_api *cu = c->cu;
    CU_CHECK(c, cu->CtxPushCurrent(c->ctx), "cuCtxPushCurrent");
    CUresult r = up ? cu->MemcpyHtoDAsync(dev, host, size, c->stream) : cu->MemcpyDtoHAsync(host, dev, size, c->stream);
    const char *what = up ? "a copy to the device (cuMemcpyHtoDAsync)" : "a copy from the device (cuMemcpyDtoHAsync)";
    if (r == REEL_CU_SUCCESS && (r = cu->StreamSynchronize(c->stream)) != REEL_CU_SUCCESS)
        what = up ? "a copy to the device (cuStreamSynchronize)" : "a copy from the device (cuStreamSynchronize)";
    CUcontext popped;
    cu->CtxPopCurrent(&popped);
    CU_CHECK(c, r, what);
    return REEL_OK;
}

int reel__cuda_upload(reel__cuda *c, uint64_t dst, const void *src, size_t size, reel_error *err)
{
    return copy(c, (void *)(uintptr_t)src, dst, size, 1, err);
}

int reel__cuda_copy_device(reel__cuda *c, uint64_t dst, uint64_t src, size_t size, reel_error *err)
{
    const reel__cu_api *cu = c->cu;
    CU_CHECK(c, cu->CtxPushCurrent(c->ctx), "cuCtxPushCurrent");
    CUresult r = cu->MemcpyDtoDAsync(dst, src, size, c->stream);
    if (r == REEL_CU_SUCCESS) r = cu->StreamSynchronize(c->stream);
    CUcontext popped;
    cu->CtxPopCurrent(&popped);
    CU_CHECK(c, r, "a copy on the device (cuMemcpyDtoDAsync)");
    return REEL_OK;
}

int reel__cuda_staging(reel__cuda *c, int slot, size_t size, void **out, reel_error *err)
{
    staging_buf *h = &c->staging[slot];
    if (h->size >= size && h->ptr) {
        *out = h->ptr;
        return REEL_OK;
    }
    const reel__cu_api *cu = c->cu;
    if (h->pinned) {
        cu->MemFreeHost(h->ptr);
        count(c, 0, -(int64_t)h->size);
    } else {
        free(h->ptr);
    }
    *h = (staging_buf){ 0 };
    size = (size + 4095) / 4096 * 4096; /* whole pages: a little room to grow */
    void *p = NULL;
    if (cu->MemHostAlloc && cu->CtxPushCurrent(c->ctx) == REEL_CU_SUCCESS) {
        if (cu->MemHostAlloc(&p, size, 0) != REEL_CU_SUCCESS) p = NULL;
        CUcontext popped;
        cu->CtxPopCurrent(&popped);
    }
    if (p) {
        *h = (staging_buf){ p, size, 1 };
        count(c, 0, (int64_t)size);
    } else { /* the driver would not pin it (or cannot): plain memory, counted */
        c->mem.pinned_failures++;
        if (c->tally) atomic_fetch_add(&c->tally->pinned_failures, 1);
        if (!(p = malloc(size)))
            return reel__error_set(err, REEL_E_NOMEM, "CUDA: out of memory for %zu bytes of upload staging for %s",
                                   size, c->name);
        *h = (staging_buf){ p, size, 0 };
    }
    *out = p;
    return REEL_OK;
}

int reel__cuda_upload_async(reel__cuda *c, uint64_t dst, const void *src, size_t size, reel_error *err)
{
    const reel__cu_api *cu = c->cu;
    CU_CHECK(c, cu->CtxPushCurrent(c->ctx), "cuCtxPushCurrent");
    CUresult r = cu->MemcpyHtoDAsync(dst, src, size, c->stream);
    CUcontext popped;
    cu->CtxPopCurrent(&popped);
    CU_CHECK(c, r, "a copy to the device (cuMemcpyHtoDAsync)");
    return REEL_OK;
}

int reel__cuda_sync(reel__cuda *c, reel_error *err)
{
    const reel__cu_api *cu = c->cu;
    CU_CHECK(c, cu->CtxPushCurrent(c->ctx), "cuCtxPushCurrent");
    CUresult r = cu->StreamSynchronize(c->stream);
    CUcontext popped;
    cu->CtxPopCurrent(&popped);
    CU_CHECK(c, r, "cuStreamSynchronize");
    return REEL_OK;
}

int reel__cuda_download(reel__cuda *c, void *dst, uint64_t src, size_t size, reel_error *err)
{
    return copy(c, dst, src, size, 0, err);
}

int reel__cuda_convert(reel__cuda *c, const reel__px_frame *frames, int n, const reel__cuda_taps *taps, reel_error *err)
{
    if (n <= 0) return REEL_OK;
    int gw = 0, gh = 0;
    for (int i = 0; i < n; i++) {
        if (frames[i].w > gw) gw = frames[i].w;
        if (frames[i].h > gh) gh = frames[i].h;
    }
    size_t fbytes = (size_t)n * sizeof *frames, sbytes = (size_t)(taps->n_start ? taps->n_start : 1) * 4,
           cbytes = (size_t)(taps->n_coef ? taps->n_coef : 1) * 2;
    uint64_t dframes, dstart, dcoef;
    uint8_t *host = NULL; /* the tables staged together: frames, starts, weights (each 16-byte aligned) */
    const size_t at_s = (fbytes + 15) / 16 * 16, at_c = at_s + (sbytes + 15) / 16 * 16;
    int r = reel__cuda_staging(c, REEL__CUDA_STAGING_SLOTS - 1, at_c + cbytes, (void **)&host, err);
    if (r == REEL_OK) r = reel__cuda_buffer(c, fbytes, &dframes, err);
    if (r == REEL_OK) r = reel__cuda_buffer(c, sbytes, &dstart, err);
    if (r == REEL_OK) r = reel__cuda_buffer(c, cbytes, &dcoef, err);
    if (r != REEL_OK) return r;
    memcpy(host, frames, fbytes);
    if (taps->n_start) memcpy(host + at_s, taps->start, sbytes);
    if (taps->n_coef) memcpy(host + at_c, taps->coef, cbytes);
    r = reel__cuda_upload_async(c, dframes, host, fbytes, err);
    if (r == REEL_OK && taps->n_start) r = reel__cuda_upload_async(c, dstart, host + at_s, sbytes, err);
    if (r == REEL_OK && taps->n_coef) r = reel__cuda_upload_async(c, dcoef, host + at_c, cbytes, err);
    if (r != REEL_OK) return r;
    const reel__cu_api *cu = c->cu;
    CU_CHECK(c, cu->CtxPushCurrent(c->ctx), "cuCtxPushCurrent");
    void *args[] = { &dframes, &dstart, &dcoef };
    CUresult lr = cu->LaunchKernel(c->convert, (unsigned)((gw + REEL_PX_BLOCK_W - 1) / REEL_PX_BLOCK_W),
                                   (unsigned)((gh + REEL_PX_BLOCK_H - 1) / REEL_PX_BLOCK_H), (unsigned)n,
                                   REEL_PX_BLOCK_W, REEL_PX_BLOCK_H, 1, 0, c->stream, args, NULL);
    const char *what = "the conversion kernel (cuLaunchKernel)";
    if (lr == REEL_CU_SUCCESS && (lr = cu->StreamSynchronize(c->stream)) != REEL_CU_SUCCESS)
        what = "the conversion kernel (cuStreamSynchronize after the launch)";
    CUcontext popped;
    cu->CtxPopCurrent(&popped);
    CU_CHECK(c, lr, what);
    return REEL_OK;
}

/* ---- for the rest of src/cuda (device_parts.h) ---- */

const reel__cu_api *reel__cuda_api(const reel__cuda *c)
{
    return c->cu;
}

CUcontext reel__cuda_context(const reel__cuda *c)
{
    return c->ctx;
}

CUstream reel__cuda_stream(const reel__cuda *c)
{
    return c->stream;
}

int reel__cuda_index(const reel__cuda *c)
{
    return c->index;
}
