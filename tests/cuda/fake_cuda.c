/* fake_cuda.c: an emulated CUDA driver for the tests (libcuda.so.1 in the
 * build tree's fake_cuda/): device memory is host memory, tracked; streams
 * are synchronous; a launch of the conversion kernel walks its grid on the
 * CPU through src/cuda/emulate.c. Counters and fault injection for tests. */
#include "cuda/plan.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    OK = 0,
    E_INVALID_VALUE = 1,
    E_OUT_OF_MEMORY = 2,
    E_NOT_INITIALIZED = 3,
    E_NO_DEVICE = 100,
    E_INVALID_DEVICE = 101,
    E_INVALID_CONTEXT = 201,
    E_INVALID_HANDLE = 400,
    E_NOT_FOUND = 500,
    E_LAUNCH_FAILED = 719,
    E_NOT_SUPPORTED = 801,
    E_UNKNOWN = 999,
};

/* Tells libreel that launches are emulated (src/cuda/device.c). */
EXPORT const int reel_emulated_driver = 1;

#define MAX_DEVICES 8

typedef struct fake_ctx {
    int device;
    int retained;
    unsigned flags;
} fake_ctx;

typedef struct alloc_rec {
    uintptr_t ptr;
    size_t size;
    int host; /* cuMemHostAlloc / cuMemAllocHost */
} alloc_rec;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_inited, g_devices = 1;
static fake_ctx g_ctx[MAX_DEVICES];
static alloc_rec *g_allocs;
static size_t g_nallocs, g_capallocs;
static long long g_live_bytes, g_total_allocs, g_launches, g_copies, g_streams, g_events, g_modules;
static _Thread_local fake_ctx *t_stack[16];
static _Thread_local int t_depth;

/* ---- which stream each thread works on: launches and host-to-device
 * copies, by stream (a serial number) and thread; and whether each copy's
 * source was page-locked (cuMemHostAlloc) or plain memory */
#define MAX_WORK 256
static struct {
    long long stream;
    long long thread;
} g_work[MAX_WORK];
static int g_nwork;
static long long g_work_gen = 1, g_stream_switches, g_stream_shared, g_htod_pinned, g_htod_plain, g_threads;
static _Thread_local long long t_thread, t_last_stream, t_gen;

/* Resets the record of streams at work (and the copies' counts). */
EXPORT void reel_fake_cuda_reset_work(void)
{
    pthread_mutex_lock(&g_mu);
    g_nwork = 0;
    g_work_gen++;
    g_stream_switches = g_stream_shared = g_htod_pinned = g_htod_plain = 0;
    pthread_mutex_unlock(&g_mu);
}

/* Called with g_mu held; stream 0: a default stream (not recorded). */
static void record_work(long long stream)
{
    if (!stream) return;
    if (!t_thread) t_thread = ++g_threads;
    if (t_gen != g_work_gen) t_gen = g_work_gen, t_last_stream = 0;
    if (t_last_stream && t_last_stream != stream) g_stream_switches++;
    t_last_stream = stream;
    for (int i = 0; i < g_nwork; i++)
        if (g_work[i].stream == stream) {
            if (g_work[i].thread != t_thread) g_stream_shared++;
            return;
        }
    if (g_nwork < MAX_WORK) g_work[g_nwork++].stream = stream, g_work[g_nwork - 1].thread = t_thread;
}

/* ---- fault injection: REEL_FAKE_CUDA_FAIL="name:N" or reel_fake_cuda_fail
 * (N -1: every call) */
static char g_fail_name[64];
static long long g_fail_nth, g_fail_seen;

EXPORT void reel_fake_cuda_fail(const char *name, long long nth)
{
    pthread_mutex_lock(&g_mu);
    snprintf(g_fail_name, sizeof g_fail_name, "%s", name ? name : "");
    g_fail_nth = name ? nth : 0;
    g_fail_seen = 0;
    pthread_mutex_unlock(&g_mu);
}

static int fault(const char *name)
{
    int hit = 0;
    pthread_mutex_lock(&g_mu);
    if (g_fail_nth > 0 && !strcmp(name, g_fail_name) && ++g_fail_seen == g_fail_nth) hit = 1;
    if (g_fail_nth < 0 && !strcmp(name, g_fail_name)) hit = 1; /* "name:-1": every call */
    pthread_mutex_unlock(&g_mu);
    return hit;
}

#define FAULT(name, code)               \
    do {                                \
        if (fault(name)) return (code); \
    } while (0)

/* ---- counters ---------------------------------------------------------- */
EXPORT long long reel_fake_cuda_counter(const char *name)
{
    long long v = -1;
    pthread_mutex_lock(&g_mu);
    if (!strcmp(name, "live_allocs")) {
        v = 0;
        for (size_t i = 0; i < g_nallocs; i++) v += !g_allocs[i].host;
    } else if (!strcmp(name, "live_host_allocs")) {
        v = 0;
        for (size_t i = 0; i < g_nallocs; i++) v += g_allocs[i].host;
    } else if (!strcmp(name, "live_bytes"))
        v = g_live_bytes;
    else if (!strcmp(name, "allocs"))
        v = g_total_allocs;
    else if (!strcmp(name, "launches"))
        v = g_launches;
    else if (!strcmp(name, "copies"))
        v = g_copies;
    else if (!strcmp(name, "streams"))
        v = g_streams;
    else if (!strcmp(name, "events"))
        v = g_events;
    else if (!strcmp(name, "modules"))
        v = g_modules;
    else if (!strcmp(name, "live_host_bytes")) {
        v = 0;
        for (size_t i = 0; i < g_nallocs; i++) v += g_allocs[i].host ? (long long)g_allocs[i].size : 0;
    } else if (!strcmp(name, "htod_pinned"))
        v = g_htod_pinned;
    else if (!strcmp(name, "htod_plain"))
        v = g_htod_plain;
    else if (!strcmp(name, "work_streams"))
        v = g_nwork;
    else if (!strcmp(name, "stream_switches"))
        v = g_stream_switches;
    else if (!strcmp(name, "stream_shared"))
        v = g_stream_shared;
    else if (!strcmp(name, "retained")) {
        v = 0;
        for (int i = 0; i < MAX_DEVICES; i++) v += g_ctx[i].retained;
    }
    pthread_mutex_unlock(&g_mu);
    return v;
}

static void die(const char *what, uintptr_t p, size_t n)
{
    fprintf(stderr, "fake_cuda: %s (address 0x%llx, %zu bytes): aborting the test\n", what, (unsigned long long)p, n);
    abort();
}

/* The allocation holding [p, p + n), or die. Called with g_mu held. */
static void check_range(uintptr_t p, size_t n, const char *what)
{
    for (size_t i = 0; i < g_nallocs; i++)
        if (!g_allocs[i].host && p >= g_allocs[i].ptr && p + n <= g_allocs[i].ptr + g_allocs[i].size) return;
    pthread_mutex_unlock(&g_mu);
    die(what, p, n);
}

static void check_dev(CUdeviceptr p, size_t n, const char *what)
{
    pthread_mutex_lock(&g_mu);
    check_range((uintptr_t)p, n ? n : 1, what);
    pthread_mutex_unlock(&g_mu);
}

static CUresult track(void *p, size_t n, int host)
{
    pthread_mutex_lock(&g_mu);
    if (g_nallocs == g_capallocs) {
        size_t cap = g_capallocs ? g_capallocs * 2 : 64;
        alloc_rec *a = realloc(g_allocs, cap * sizeof *a);
        if (!a) {
            pthread_mutex_unlock(&g_mu);
            return E_OUT_OF_MEMORY;
        }
        g_allocs = a;
        g_capallocs = cap;
    }
    g_allocs[g_nallocs++] = (alloc_rec){ (uintptr_t)p, n, host };
    if (!host) {
        g_live_bytes += (long long)n;
        g_total_allocs++;
    }
    pthread_mutex_unlock(&g_mu);
    return OK;
}

static void untrack(uintptr_t p, int host)
{
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_nallocs; i++)
        if (g_allocs[i].ptr == p && g_allocs[i].host == host) {
            if (!host) g_live_bytes -= (long long)g_allocs[i].size;
            g_allocs[i] = g_allocs[--g_nallocs];
            pthread_mutex_unlock(&g_mu);
            return;
        }
    pthread_mutex_unlock(&g_mu);
    die(host ? "free of an unknown host allocation (or a double free)"
             : "cuMemFree of an unknown pointer (or a double free)",
        p, 0);
}

/* ---- init, devices ------------------------------------------------------ */
EXPORT CUresult cuInit(unsigned flags)
{
    (void)flags;
    FAULT("cuInit", E_UNKNOWN);
    const char *n = getenv("REEL_FAKE_CUDA_DEVICES");
    const char *f = getenv("REEL_FAKE_CUDA_FAIL");
    pthread_mutex_lock(&g_mu);
    if (n && *n) g_devices = atoi(n);
    if (g_devices < 0) g_devices = 0;
    if (g_devices > MAX_DEVICES) g_devices = MAX_DEVICES;
    if (f && *f && !g_fail_nth) {
        const char *colon = strchr(f, ':');
        if (colon && (size_t)(colon - f) < sizeof g_fail_name) {
            memcpy(g_fail_name, f, (size_t)(colon - f));
            g_fail_name[colon - f] = 0;
            g_fail_nth = atoll(colon + 1);
        }
    }
    g_inited = 1;
    int devices = g_devices;
    pthread_mutex_unlock(&g_mu);
    return devices ? OK : E_NO_DEVICE;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    if (!v) return E_INVALID_VALUE;
    *v = 13000;
    return OK;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
    if (!n) return E_INVALID_VALUE;
    if (!g_inited) return E_NOT_INITIALIZED;
    *n = g_devices;
    return OK;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (!d) return E_INVALID_VALUE;
    if (!g_inited) return E_NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= g_devices) return E_INVALID_DEVICE;
    *d = ordinal;
    return OK;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    if (!name || len <= 0) return E_INVALID_VALUE;
    if (d < 0 || d >= g_devices) return E_INVALID_DEVICE;
    snprintf(name, (size_t)len, "reel emulated GPU");
    return OK;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
    if (!v) return E_INVALID_VALUE;
    if (d < 0 || d >= g_devices) return E_INVALID_DEVICE;
    switch (attr) {
    case 75: *v = 9; break;   /* compute capability major */
    case 76: *v = 0; break;   /* minor */
    case 14: *v = 512; break; /* texture alignment */
    case 51: *v = 32; break;  /* texture pitch alignment */
    case 16: *v = 132; break; /* multiprocessors */
    default: *v = 1; break;
    }
    return OK;
}

EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice d)
{
    if (!major || !minor) return E_INVALID_VALUE;
    if (d < 0 || d >= g_devices) return E_INVALID_DEVICE;
    *major = 9;
    *minor = 0;
    return OK;
}

EXPORT CUresult cuDeviceGetUuid(void *uuid, CUdevice d)
{
    if (!uuid) return E_INVALID_VALUE;
    memset(uuid, 0, 16);
    ((unsigned char *)uuid)[0] = (unsigned char)d;
    return OK;
}

/* ---- contexts ----------------------------------------------------------- */
EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d)
{
    FAULT("cuDevicePrimaryCtxRetain", E_OUT_OF_MEMORY);
    if (!ctx) return E_INVALID_VALUE;
    if (d < 0 || d >= g_devices) return E_INVALID_DEVICE;
    pthread_mutex_lock(&g_mu);
    g_ctx[d].device = d;
    g_ctx[d].retained++;
    pthread_mutex_unlock(&g_mu);
    *ctx = &g_ctx[d];
    return OK;
}

static CUresult primary_release(CUdevice d)
{
    if (d < 0 || d >= g_devices) return E_INVALID_DEVICE;
    pthread_mutex_lock(&g_mu);
    int bad = g_ctx[d].retained <= 0;
    if (!bad) g_ctx[d].retained--;
    pthread_mutex_unlock(&g_mu);
    if (bad) die("cuDevicePrimaryCtxRelease of a context not retained", (uintptr_t)d, 0);
    return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice d)
{
    return primary_release(d);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    return primary_release(d);
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active)
{
    if (d < 0 || d >= g_devices) return E_INVALID_DEVICE;
    pthread_mutex_lock(&g_mu);
    if (flags) *flags = g_ctx[d].flags;
    if (active) *active = g_ctx[d].retained > 0;
    pthread_mutex_unlock(&g_mu);
    return OK;
}

EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice d, unsigned flags)
{
    if (d < 0 || d >= g_devices) return E_INVALID_DEVICE;
    pthread_mutex_lock(&g_mu);
    g_ctx[d].flags = flags;
    pthread_mutex_unlock(&g_mu);
    return OK;
}

EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice d, unsigned flags)
{
    return cuDevicePrimaryCtxSetFlags(d, flags);
}

EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice d)
{
    return d >= 0 && d < g_devices ? OK : E_INVALID_DEVICE;
}

EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice d)
{
    return cuDevicePrimaryCtxReset(d);
}

static int valid_ctx(const void *c)
{
    for (int i = 0; i < MAX_DEVICES; i++)
        if (c == &g_ctx[i]) return 1;
    return 0;
}

EXPORT CUresult cuCtxPushCurrent_v2(void *ctx)
{
    if (!valid_ctx(ctx)) return E_INVALID_CONTEXT;
    pthread_mutex_lock(&g_mu); /* other threads retain and release it */
    const int retained = ((fake_ctx *)ctx)->retained;
    pthread_mutex_unlock(&g_mu);
    if (retained <= 0) return E_INVALID_CONTEXT;
    if (t_depth == 16) return E_UNKNOWN;
    t_stack[t_depth++] = ctx;
    return OK;
}

EXPORT CUresult cuCtxPopCurrent_v2(void **ctx)
{
    if (t_depth == 0) return E_INVALID_CONTEXT;
    fake_ctx *c = t_stack[--t_depth];
    if (ctx) *ctx = c;
    return OK;
}

EXPORT CUresult cuCtxGetCurrent(void **ctx)
{
    if (!ctx) return E_INVALID_VALUE;
    *ctx = t_depth ? t_stack[t_depth - 1] : NULL;
    return OK;
}

EXPORT CUresult cuCtxSetCurrent(void *ctx)
{
    if (!ctx) {
        if (t_depth) t_depth--;
        return OK;
    }
    if (!valid_ctx(ctx)) return E_INVALID_CONTEXT;
    if (t_depth)
        t_stack[t_depth - 1] = ctx;
    else
        t_stack[t_depth++] = ctx;
    return OK;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
    if (!d) return E_INVALID_VALUE;
    if (!t_depth) return E_INVALID_CONTEXT;
    *d = t_stack[t_depth - 1]->device;
    return OK;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    return t_depth ? OK : E_INVALID_CONTEXT;
}

/* a context of its own is not emulated: FFmpeg is asked for the primary one */
EXPORT CUresult cuCtxCreate_v2(void **ctx, unsigned flags, CUdevice d)
{
    (void)ctx;
    (void)flags;
    (void)d;
    return E_NOT_SUPPORTED;
}

EXPORT CUresult cuCtxDestroy_v2(void *ctx)
{
    (void)ctx;
    return E_NOT_SUPPORTED;
}

EXPORT CUresult cuCtxSetLimit(int limit, size_t value)
{
    (void)limit;
    (void)value;
    return OK;
}

static CUresult need_ctx(void)
{
    return t_depth ? OK : E_INVALID_CONTEXT;
}

/* ---- streams and events (synchronous) ---------------------------------- */
typedef struct fake_stream {
    int magic;
    long long id; /* a serial number: addresses are reused */
} fake_stream;
static long long g_stream_ids;

static long long stream_id(const void *s)
{
    return (uintptr_t)s <= 2 ? 0 : ((const fake_stream *)s)->id;
}
typedef struct fake_event {
    int magic;
} fake_event;
#define STREAM_MAGIC 0x57ea
#define EVENT_MAGIC  0xe7e7

/* A stream argument: NULL (legacy default), 1 / 2 (the default streams'
 * handles), or one of ours. */
static int valid_stream(const void *s)
{
    uintptr_t v = (uintptr_t)s;
    return v <= 2 || ((const fake_stream *)s)->magic == STREAM_MAGIC;
}

EXPORT CUresult cuStreamCreate(void **s, unsigned flags)
{
    (void)flags;
    FAULT("cuStreamCreate", E_OUT_OF_MEMORY);
    if (!s) return E_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r) return r;
    fake_stream *f = malloc(sizeof *f);
    if (!f) return E_OUT_OF_MEMORY;
    f->magic = STREAM_MAGIC;
    pthread_mutex_lock(&g_mu);
    f->id = ++g_stream_ids;
    g_streams++;
    pthread_mutex_unlock(&g_mu);
    *s = f;
    return OK;
}

EXPORT CUresult cuStreamDestroy_v2(void *s)
{
    if (!s || (uintptr_t)s <= 2 || ((fake_stream *)s)->magic != STREAM_MAGIC)
        die("cuStreamDestroy of an unknown stream", (uintptr_t)s, 0);
    ((fake_stream *)s)->magic = 0;
    free(s);
    pthread_mutex_lock(&g_mu);
    g_streams--;
    pthread_mutex_unlock(&g_mu);
    return OK;
}

EXPORT CUresult cuStreamSynchronize(void *s)
{
    FAULT("cuStreamSynchronize", E_LAUNCH_FAILED);
    return valid_stream(s) ? OK : E_INVALID_HANDLE;
}

EXPORT CUresult cuStreamQuery(void *s)
{
    return valid_stream(s) ? OK : E_INVALID_HANDLE;
}

EXPORT CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags)
{
    (void)flags;
    FAULT("cuStreamWaitEvent", E_INVALID_HANDLE);
    if (!valid_stream(s) || !e || ((fake_event *)e)->magic != EVENT_MAGIC) return E_INVALID_HANDLE;
    return OK;
}

EXPORT CUresult cuEventCreate(void **e, unsigned flags)
{
    (void)flags;
    FAULT("cuEventCreate", E_OUT_OF_MEMORY);
    if (!e) return E_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r) return r;
    fake_event *f = malloc(sizeof *f);
    if (!f) return E_OUT_OF_MEMORY;
    f->magic = EVENT_MAGIC;
    pthread_mutex_lock(&g_mu);
    g_events++;
    pthread_mutex_unlock(&g_mu);
    *e = f;
    return OK;
}

EXPORT CUresult cuEventDestroy_v2(void *e)
{
    if (!e || ((fake_event *)e)->magic != EVENT_MAGIC) die("cuEventDestroy of an unknown event", (uintptr_t)e, 0);
    ((fake_event *)e)->magic = 0;
    free(e);
    pthread_mutex_lock(&g_mu);
    g_events--;
    pthread_mutex_unlock(&g_mu);
    return OK;
}

EXPORT CUresult cuEventRecord(void *e, void *s)
{
    FAULT("cuEventRecord", E_INVALID_HANDLE);
    if (!e || ((fake_event *)e)->magic != EVENT_MAGIC || !valid_stream(s)) return E_INVALID_HANDLE;
    return OK;
}

EXPORT CUresult cuEventSynchronize(void *e)
{
    return e && ((fake_event *)e)->magic == EVENT_MAGIC ? OK : E_INVALID_HANDLE;
}

EXPORT CUresult cuEventQuery(void *e)
{
    return cuEventSynchronize(e);
}

/* ---- memory ------------------------------------------------------------- */
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    FAULT("cuMemAlloc_v2", E_OUT_OF_MEMORY);
    if (!p || !n) return E_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r) return r;
    void *m = malloc(n);
    if (!m) return E_OUT_OF_MEMORY;
    memset(m, 0xcd, n); /* device memory is not zeroed */
    if (track(m, n, 0) != OK) {
        free(m);
        return E_OUT_OF_MEMORY;
    }
    *p = (CUdeviceptr)(uintptr_t)m;
    return OK;
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned elem)
{
    (void)elem;
    if (!pitch) return E_INVALID_VALUE;
    *pitch = (w + 255) & ~(size_t)255;
    return cuMemAlloc_v2(p, *pitch * h);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    if (!p) return OK;
    untrack((uintptr_t)p, 0);
    free((void *)(uintptr_t)p);
    return OK;
}

EXPORT CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags)
{
    (void)flags;
    FAULT("cuMemHostAlloc", E_OUT_OF_MEMORY);
    if (!p || !n) return E_INVALID_VALUE;
    void *m = malloc(n);
    if (!m) return E_OUT_OF_MEMORY;
    if (track(m, n, 1) != OK) {
        free(m);
        return E_OUT_OF_MEMORY;
    }
    *p = m;
    return OK;
}

EXPORT CUresult cuMemAllocHost_v2(void **p, size_t n)
{
    return cuMemHostAlloc(p, n, 0);
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    untrack((uintptr_t)p, 1);
    free(p);
    return OK;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    const size_t all = (size_t)80 << 30;
    pthread_mutex_lock(&g_mu);
    size_t used = (size_t)g_live_bytes;
    pthread_mutex_unlock(&g_mu);
    if (free_bytes) *free_bytes = all > used ? all - used : 0;
    if (total) *total = all;
    return OK;
}

static void counted_copy(void *dst, const void *src, size_t n)
{
    memmove(dst, src, n);
    pthread_mutex_lock(&g_mu);
    g_copies++;
    pthread_mutex_unlock(&g_mu);
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s)
{
    FAULT("cuMemcpyHtoDAsync_v2", E_LAUNCH_FAILED);
    if (!valid_stream(s) || !src) return E_INVALID_VALUE;
    check_dev(dst, n, "a copy to the device outside an allocation");
    pthread_mutex_lock(&g_mu);
    int pinned = 0;
    for (size_t i = 0; i < g_nallocs && !pinned; i++)
        pinned = g_allocs[i].host && (uintptr_t)src >= g_allocs[i].ptr &&
                 (uintptr_t)src + n <= g_allocs[i].ptr + g_allocs[i].size;
    if (pinned)
        g_htod_pinned++;
    else
        g_htod_plain++;
    record_work(stream_id(s));
    pthread_mutex_unlock(&g_mu);
    counted_copy((void *)(uintptr_t)dst, src, n);
    return OK;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    return cuMemcpyHtoDAsync_v2(dst, src, n, NULL);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s)
{
    FAULT("cuMemcpyDtoHAsync_v2", E_LAUNCH_FAILED);
    if (!valid_stream(s) || !dst) return E_INVALID_VALUE;
    check_dev(src, n, "a copy from the device outside an allocation");
    counted_copy(dst, (const void *)(uintptr_t)src, n);
    return OK;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    return cuMemcpyDtoHAsync_v2(dst, src, n, NULL);
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s)
{
    FAULT("cuMemcpyDtoDAsync_v2", E_LAUNCH_FAILED);
    if (!valid_stream(s)) return E_INVALID_VALUE;
    check_dev(src, n, "a device-to-device copy reading outside an allocation");
    check_dev(dst, n, "a device-to-device copy writing outside an allocation");
    counted_copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return OK;
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return cuMemcpyDtoDAsync_v2(dst, src, n, NULL);
}

/* unified addressing: either side may be host or device */
EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s)
{
    if (!valid_stream(s)) return E_INVALID_VALUE;
    counted_copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return OK;
}

EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return cuMemcpyAsync(dst, src, n, NULL);
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, void *s)
{
    if (!valid_stream(s)) return E_INVALID_VALUE;
    check_dev(p, n, "a memset outside an allocation");
    memset((void *)(uintptr_t)p, v, n);
    return OK;
}

/* CUDA_MEMCPY2D (cuda.h's layout) */
typedef struct fake_memcpy2d {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} fake_memcpy2d;

EXPORT CUresult cuMemcpy2DAsync_v2(const fake_memcpy2d *c, void *s)
{
    FAULT("cuMemcpy2DAsync_v2", E_LAUNCH_FAILED);
    if (!c || !valid_stream(s) || c->srcMemoryType == 3 || c->dstMemoryType == 3) return E_INVALID_VALUE;
    if (!c->Height || !c->WidthInBytes) return OK;
    uintptr_t src = c->srcMemoryType == 1 ? (uintptr_t)c->srcHost : (uintptr_t)c->srcDevice;
    uintptr_t dst = c->dstMemoryType == 1 ? (uintptr_t)c->dstHost : (uintptr_t)c->dstDevice;
    src += c->srcXInBytes + c->srcY * c->srcPitch;
    dst += c->dstXInBytes + c->dstY * c->dstPitch;
    size_t sspan = (c->Height - 1) * c->srcPitch + c->WidthInBytes,
           dspan = (c->Height - 1) * c->dstPitch + c->WidthInBytes;
    if (c->srcMemoryType == 2) check_dev(src, sspan, "a 2D copy reading outside an allocation");
    if (c->dstMemoryType == 2) check_dev(dst, dspan, "a 2D copy writing outside an allocation");
    for (size_t y = 0; y < c->Height; y++)
        memmove((void *)(dst + y * c->dstPitch), (const void *)(src + y * c->srcPitch), c->WidthInBytes);
    pthread_mutex_lock(&g_mu);
    g_copies++;
    pthread_mutex_unlock(&g_mu);
    return OK;
}

EXPORT CUresult cuMemcpy2D_v2(const fake_memcpy2d *c)
{
    return cuMemcpy2DAsync_v2(c, NULL);
}

/* ---- modules and the kernel --------------------------------------------- */
static int g_module_tag, g_function_tag;

EXPORT CUresult cuModuleLoadData(void **m, const void *image)
{
    (void)image; /* any image, or none: the kernel is emulated */
    FAULT("cuModuleLoadData", E_NOT_SUPPORTED);
    if (!m) return E_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r) return r;
    pthread_mutex_lock(&g_mu);
    g_modules++;
    pthread_mutex_unlock(&g_mu);
    *m = &g_module_tag;
    return OK;
}

EXPORT CUresult cuModuleUnload(void *m)
{
    if (m != &g_module_tag) die("cuModuleUnload of an unknown module", (uintptr_t)m, 0);
    pthread_mutex_lock(&g_mu);
    int bad = g_modules <= 0;
    if (!bad) g_modules--;
    pthread_mutex_unlock(&g_mu);
    if (bad) die("cuModuleUnload of a module not loaded", (uintptr_t)m, 0);
    return OK;
}

EXPORT CUresult cuModuleGetFunction(void **f, void *m, const char *name)
{
    if (!f || m != &g_module_tag || !name) return E_INVALID_VALUE;
    if (strcmp(name, "reel_px_convert")) return E_NOT_FOUND;
    *f = &g_function_tag;
    return OK;
}

EXPORT CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                               unsigned shmem, void *s, void **args, void **extra)
{
    (void)shmem;
    (void)extra;
    FAULT("cuLaunchKernel", E_LAUNCH_FAILED);
    if (f != &g_function_tag || !args || !valid_stream(s) || bz != 1) return E_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r) return r;
    CUdeviceptr dframes = *(CUdeviceptr *)args[0], dstart = *(CUdeviceptr *)args[1], dcoef = *(CUdeviceptr *)args[2];
    check_dev(dframes, gz * sizeof(reel__px_frame), "a launch whose frames lie outside an allocation");
    check_dev(dstart, 1, "a launch whose filter starts lie outside an allocation");
    check_dev(dcoef, 1, "a launch whose filter weights lie outside an allocation");
    const reel__px_frame *frames = (const reel__px_frame *)(uintptr_t)dframes;
    for (unsigned z = 0; z < gz; z++) {
        const reel__px_frame *fr = &frames[z];
        if (fr->w > (int)(gx * bx) || fr->h > (int)(gy * by)) return E_INVALID_VALUE; /* the grid misses pixels */
        check_dev((CUdeviceptr)(uintptr_t)fr->y, 1, "a launch reading luma outside an allocation");
        check_dev((CUdeviceptr)(uintptr_t)fr->uv, 1, "a launch reading chroma outside an allocation");
        check_dev((CUdeviceptr)(uintptr_t)fr->dst, 1, "a launch writing outside an allocation");
    }
    reel__cuda_taps taps = { 0 };
    taps.start = (int32_t *)(uintptr_t)dstart;
    taps.coef = (int16_t *)(uintptr_t)dcoef;
    reel__cuda_emulate(frames, (int)gz, &taps);
    pthread_mutex_lock(&g_mu);
    record_work(stream_id(s));
    g_launches++;
    pthread_mutex_unlock(&g_mu);
    return OK;
}

/* ---- error names ------------------------------------------------------- */
EXPORT CUresult cuGetErrorName(CUresult e, const char **s)
{
    if (!s) return E_INVALID_VALUE;
    switch (e) {
    case OK: *s = "CUDA_SUCCESS"; break;
    case E_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case E_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case E_NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case E_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; break;
    case E_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
    case E_INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case E_INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; break;
    case E_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
    case E_LAUNCH_FAILED: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
    case E_NOT_SUPPORTED: *s = "CUDA_ERROR_NOT_SUPPORTED"; break;
    default: *s = "CUDA_ERROR_UNKNOWN"; return E_INVALID_VALUE;
    }
    return OK;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **s)
{
    return cuGetErrorName(e, s);
}

/* ---- the rest of what nv-codec-headers' cuda_load_functions resolves:
 * present, and not supported */
#define STUB(name)              \
    EXPORT CUresult name(void); \
    EXPORT CUresult name(void)  \
    {                           \
        return E_NOT_SUPPORTED; \
    }
STUB(cuMemAllocManaged)
STUB(cuStreamAddCallback)
STUB(cuLinkCreate)
STUB(cuLinkAddData)
STUB(cuLinkComplete)
STUB(cuLinkDestroy)
STUB(cuModuleGetGlobal)
STUB(cuTexObjectCreate)
STUB(cuTexObjectDestroy)
STUB(cuGLGetDevices_v2)
STUB(cuGraphicsGLRegisterImage)
STUB(cuGraphicsUnregisterResource)
STUB(cuGraphicsMapResources)
STUB(cuGraphicsUnmapResources)
STUB(cuGraphicsSubResourceGetMappedArray)
STUB(cuGraphicsResourceGetMappedPointer_v2)
STUB(cuImportExternalMemory)
STUB(cuDestroyExternalMemory)
STUB(cuExternalMemoryGetMappedBuffer)
STUB(cuExternalMemoryGetMappedMipmappedArray)
STUB(cuMipmappedArrayGetLevel)
STUB(cuMipmappedArrayDestroy)
STUB(cuImportExternalSemaphore)
STUB(cuDestroyExternalSemaphore)
STUB(cuSignalExternalSemaphoresAsync)
STUB(cuWaitExternalSemaphoresAsync)
STUB(cuArray3DCreate_v2)
STUB(cuArrayDestroy)
STUB(cuEGLStreamProducerConnect)
STUB(cuEGLStreamProducerDisconnect)
STUB(cuEGLStreamConsumerDisconnect)
STUB(cuEGLStreamProducerPresentFrame)
STUB(cuEGLStreamProducerReturnFrame)
STUB(cuD3D11GetDevice)
STUB(cuD3D11GetDevices)
STUB(cuGraphicsD3D11RegisterResource)
