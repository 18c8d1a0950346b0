/* driver.c: the CUDA driver API loaded once per process from libcuda.so.1
 * (REEL_LIBCUDA overrides the name, for tests), cuInit'ed, and its errors
 * named: no link-time dependency on CUDA. */
#include "cuda/driver.h"
#include "core/error.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static reel__cu_api g_api;
static int g_status = REEL_OK;
static char g_message[REEL_ERROR_MSG_SIZE];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

const char *reel__cu_name(const reel__cu_api *cu, CUresult r, char buf[32])
{
    const char *s = NULL;
    if (cu && cu->GetErrorName && cu->GetErrorName(r, &s) == REEL_CU_SUCCESS && s) return s;
    snprintf(buf, 32, "CUresult %d", r);
    return buf;
}

#define FAIL(...) (g_status = REEL_E_CUDA, (void)snprintf(g_message, sizeof g_message, __VA_ARGS__))

static void load_once(void)
{
    const char *name = getenv("REEL_LIBCUDA");
    if (!name || !*name) name = "libcuda.so.1";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        FAIL("CUDA: cannot load %s (no NVIDIA driver on this machine?): %s", name, why ? why : "dlopen failed");
        return;
    }
    struct {
        const char *sym;
        void **fn;
    } syms[] = {
        { "cuInit", (void **)&g_api.Init },
        { "cuDriverGetVersion", (void **)&g_api.DriverGetVersion },
        { "cuDeviceGetCount", (void **)&g_api.DeviceGetCount },
        { "cuDeviceGet", (void **)&g_api.DeviceGet },
        { "cuDeviceGetName", (void **)&g_api.DeviceGetName },
        { "cuDeviceGetAttribute", (void **)&g_api.DeviceGetAttribute },
        { "cuDevicePrimaryCtxRetain", (void **)&g_api.DevicePrimaryCtxRetain },
        { "cuDevicePrimaryCtxRelease_v2", (void **)&g_api.DevicePrimaryCtxRelease },
        { "cuCtxPushCurrent_v2", (void **)&g_api.CtxPushCurrent },
        { "cuCtxPopCurrent_v2", (void **)&g_api.CtxPopCurrent },
        { "cuModuleLoadData", (void **)&g_api.ModuleLoadData },
        { "cuModuleUnload", (void **)&g_api.ModuleUnload },
        { "cuModuleGetFunction", (void **)&g_api.ModuleGetFunction },
        { "cuStreamCreate", (void **)&g_api.StreamCreate },
        { "cuStreamDestroy_v2", (void **)&g_api.StreamDestroy },
        { "cuStreamSynchronize", (void **)&g_api.StreamSynchronize },
        { "cuStreamWaitEvent", (void **)&g_api.StreamWaitEvent },
        { "cuEventCreate", (void **)&g_api.EventCreate },
        { "cuEventRecord", (void **)&g_api.EventRecord },
        { "cuEventDestroy_v2", (void **)&g_api.EventDestroy },
        { "cuMemAlloc_v2", (void **)&g_api.MemAlloc },
        { "cuMemFree_v2", (void **)&g_api.MemFree },
        { "cuMemGetInfo_v2", (void **)&g_api.MemGetInfo },
        { "cuMemcpyHtoDAsync_v2", (void **)&g_api.MemcpyHtoDAsync },
        { "cuMemcpyDtoHAsync_v2", (void **)&g_api.MemcpyDtoHAsync },
        { "cuMemcpyDtoDAsync_v2", (void **)&g_api.MemcpyDtoDAsync },
        { "cuEventSynchronize", (void **)&g_api.EventSynchronize },
        { "cuLaunchKernel", (void **)&g_api.LaunchKernel },
        { "cuGetErrorName", (void **)&g_api.GetErrorName },
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].fn = dlsym(lib, syms[i].sym);
        if (!*syms[i].fn) {
            FAIL("CUDA: %s has no %s (a driver older than CUDA 11?)", name, syms[i].sym);
            dlclose(lib);
            memset(&g_api, 0, sizeof g_api);
            return;
        }
    }
    *(void **)&g_api.MemHostAlloc = dlsym(lib, "cuMemHostAlloc"); /* optional: staging is plain without them */
    *(void **)&g_api.MemFreeHost = dlsym(lib, "cuMemFreeHost");
    if (!g_api.MemHostAlloc || !g_api.MemFreeHost) g_api.MemHostAlloc = NULL, g_api.MemFreeHost = NULL;
    g_api.lib = lib;
    g_api.emulated = dlsym(lib, "reel_emulated_driver") != NULL;
    CUresult r = g_api.Init(0);
    if (r != REEL_CU_SUCCESS) {
        char buf[32];
        if (r == REEL_CU_ERROR_NO_DEVICE)
            FAIL("CUDA: no CUDA device (cuInit of %s: %s)", name, reel__cu_name(&g_api, r, buf));
        else
            FAIL("CUDA: the driver did not start (cuInit of %s: %s)", name, reel__cu_name(&g_api, r, buf));
    }
}

const reel__cu_api *reel__cu_load(reel_error *err)
{
    pthread_once(&g_once, load_once);
    if (g_status != REEL_OK) {
        reel__error_set(err, g_status, "%s", g_message);
        return NULL;
    }
    return &g_api;
}
