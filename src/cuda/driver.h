/* driver.h: the few CUDA driver API calls reel makes, loaded at run time
 * from libcuda.so.1 (dlopen: no link-time CUDA dependency), with their types
 * written here (no CUDA SDK at build time). For src/cuda alone. */
#ifndef REEL_CUDA_DRIVER_H
#define REEL_CUDA_DRIVER_H

#include "reel/common.h"

#include <stddef.h>

typedef int CUresult; /* 0: CUDA_SUCCESS */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define REEL_CU_SUCCESS                       0
#define REEL_CU_ERROR_NO_DEVICE               100
#define REEL_CU_ATTR_COMPUTE_CAPABILITY_MAJOR 75
#define REEL_CU_ATTR_COMPUTE_CAPABILITY_MINOR 76
#define REEL_CU_STREAM_NON_BLOCKING           1
#define REEL_CU_EVENT_DISABLE_TIMING          2

typedef struct reel__cu_api {
    void *lib;
    int emulated; /* the tests' emulated driver (tests/cuda/fake_cuda.c exports reel_emulated_driver) */
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxPushCurrent)(CUcontext);
    CUresult (*CtxPopCurrent)(CUcontext *);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
    CUresult (*GetErrorName)(CUresult, const char **);
    /* optional (NULL where the driver lacks them): page-locked host memory
     * for upload staging; without it, staging is plain memory */
    CUresult (*MemHostAlloc)(void **, size_t, unsigned);
    CUresult (*MemFreeHost)(void *);
} reel__cu_api;

/* The process's driver API, loaded and cuInit'ed once (thread-safe); NULL
 * with err set (REEL_E_CUDA naming libcuda.so.1 and the cause) when there
 * is no driver or no device. */
const reel__cu_api *reel__cu_load(reel_error *err);

/* A CUresult's name ("CUDA_ERROR_OUT_OF_MEMORY"), or its number. */
const char *reel__cu_name(const reel__cu_api *cu, CUresult r, char buf[32]);

#endif
