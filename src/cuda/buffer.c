/* buffer.c: reel_device_buffer (reel/device_buffer.h): device memory that keeps
 * its GPU's primary context alive, the event of its last write (recorded by
 * the decoder on its stream), the consumer's wait, and the copy to host. */
#include "reel/device_buffer.h"
#include "cuda/device.h"
#include "cuda/device_parts.h"
#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct reel_device_buffer {
    const reel__cu_api *cu;
    CUdevice dev;
    int index;
    CUcontext ctx; /* the primary context, retained */
    CUdeviceptr ptr;
    size_t size;
    CUevent ready; /* recorded after the last write */
    int recorded;
    char device[16]; /* "cuda:N" */
};

static int cu_fail(const reel__cu_api *cu, CUresult r, const char *call, int index, reel_error *err)
{
    char b[32];
    return reel__error_set(err, REEL_E_CUDA, "CUDA: %s failed on cuda:%d: %s", call, index, reel__cu_name(cu, r, b));
}

int reel_device_buffer_alloc(const char *device, size_t size, reel_device_buffer **out, reel_error *err)
{
    if (!out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_device_buffer_alloc: out is NULL");
    *out = NULL;
    int index;
    int r = reel__device_parse(device, &index, err);
    if (r != REEL_OK) return r;
    if (index < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_device_buffer_alloc: device \"%s\" is not a GPU",
                               device ? device : "");
    if (size == 0) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_device_buffer_alloc: size is 0");
    const reel__cu_api *cu = reel__cu_load(err);
    if (!cu) return REEL_E_CUDA;
    reel_device_buffer *b = calloc(1, sizeof *b);
    if (!b) return reel__error_set(err, REEL_E_NOMEM, "CUDA: out of memory");
    b->cu = cu;
    b->index = index;
    snprintf(b->device, sizeof b->device, "cuda:%d", index);
    int count = 0;
    CUresult cr = cu->DeviceGetCount(&count);
    if (cr != REEL_CU_SUCCESS) {
        r = cu_fail(cu, cr, "cuDeviceGetCount", index, err);
    } else if (index >= count) {
        r = reel__error_set(err, REEL_E_CUDA, "CUDA: device cuda:%d asked for, the machine has %d", index, count);
    } else if ((cr = cu->DeviceGet(&b->dev, index)) != REEL_CU_SUCCESS) {
        r = cu_fail(cu, cr, "cuDeviceGet", index, err);
    } else if ((cr = cu->DevicePrimaryCtxRetain(&b->ctx, b->dev)) != REEL_CU_SUCCESS) {
        b->ctx = NULL;
        r = cu_fail(cu, cr, "cuDevicePrimaryCtxRetain", index, err);
    } else if ((cr = cu->CtxPushCurrent(b->ctx)) != REEL_CU_SUCCESS) {
        r = cu_fail(cu, cr, "cuCtxPushCurrent", index, err);
    } else {
        cr = cu->MemAlloc(&b->ptr, size);
        if (cr != REEL_CU_SUCCESS) {
            b->ptr = 0;
            r = reel__error_set(err, REEL_E_CUDA, "CUDA: cuMemAlloc of %zu bytes failed on cuda:%d: %s", size, index,
                                reel__cu_name(cu, cr, (char[32]){ 0 }));
        } else if ((cr = cu->EventCreate(&b->ready, REEL_CU_EVENT_DISABLE_TIMING)) != REEL_CU_SUCCESS) {
            b->ready = NULL;
            r = cu_fail(cu, cr, "cuEventCreate", index, err);
        }
        CUcontext popped;
        cu->CtxPopCurrent(&popped);
    }
    if (r != REEL_OK) {
        reel_device_buffer_free(&b);
        return r;
    }
    b->size = size;
    *out = b;
    return REEL_OK;
}

void reel_device_buffer_free(reel_device_buffer **pb)
{
    if (!pb || !*pb) return;
    reel_device_buffer *b = *pb;
    const reel__cu_api *cu = b->cu;
    if (b->ctx && cu->CtxPushCurrent(b->ctx) == REEL_CU_SUCCESS) {
        if (b->ready) {
            if (b->recorded) cu->EventSynchronize(b->ready);
            cu->EventDestroy(b->ready);
        }
        if (b->ptr) cu->MemFree(b->ptr);
        CUcontext popped;
        cu->CtxPopCurrent(&popped);
    }
    if (b->ctx) cu->DevicePrimaryCtxRelease(b->dev);
    free(b);
    *pb = NULL;
}

uint64_t reel_device_buffer_get_address(const reel_device_buffer *b)
{
    return b ? (uint64_t)b->ptr : 0;
}

size_t reel_device_buffer_get_size(const reel_device_buffer *b)
{
    return b ? b->size : 0;
}

const char *reel_device_buffer_get_device(const reel_device_buffer *b)
{
    return b ? b->device : NULL;
}

int reel_device_buffer_wait(reel_device_buffer *b, uintptr_t stream, reel_error *err)
{
    if (!b) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_device_buffer_wait: buffer is NULL");
    if (!b->recorded) return REEL_OK;
    const reel__cu_api *cu = b->cu;
    CUresult r = cu->CtxPushCurrent(b->ctx);
    if (r != REEL_CU_SUCCESS) return cu_fail(cu, r, "cuCtxPushCurrent", b->index, err);
    r = cu->StreamWaitEvent((CUstream)stream, b->ready, 0);
    CUcontext popped;
    cu->CtxPopCurrent(&popped);
    if (r != REEL_CU_SUCCESS) return cu_fail(cu, r, "cuStreamWaitEvent (the consumer's stream)", b->index, err);
    return REEL_OK;
}

int reel_device_buffer_download(reel_device_buffer *b, size_t offset, void *dst, size_t size, reel_error *err)
{
    if (!b || (size && !dst))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_device_buffer_download: NULL argument");
    if (offset > b->size || size > b->size - offset)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE,
                               "reel_device_buffer_download: %zu bytes at offset %zu of a %zu-byte buffer on cuda:%d",
                               size, offset, b->size, b->index);
    if (!size) return REEL_OK;
    const reel__cu_api *cu = b->cu;
    CUresult r = cu->CtxPushCurrent(b->ctx);
    if (r != REEL_CU_SUCCESS) return cu_fail(cu, r, "cuCtxPushCurrent", b->index, err);
    const char *call = "cuEventSynchronize";
    r = b->recorded ? cu->EventSynchronize(b->ready) : REEL_CU_SUCCESS;
    if (r == REEL_CU_SUCCESS) {
        call = "a copy from the device (cuMemcpyDtoHAsync)";
        r = cu->MemcpyDtoHAsync(dst, b->ptr + offset, size, NULL);
    }
    if (r == REEL_CU_SUCCESS) {
        call = "cuStreamSynchronize";
        r = cu->StreamSynchronize(NULL);
    }
    CUcontext popped;
    cu->CtxPopCurrent(&popped);
    if (r != REEL_CU_SUCCESS) return cu_fail(cu, r, call, b->index, err);
    return REEL_OK;
}

int reel__device_buffer_record(reel_device_buffer *b, reel__cuda *c, reel_error *err)
{
    if (reel__cuda_index(c) != b->index)
        return reel__error_set(err, REEL_E_INVALID_ARG, "CUDA: a buffer on cuda:%d written by %s", b->index,
                               reel__cuda_name(c));
    const reel__cu_api *cu = b->cu;
    CUresult r = cu->CtxPushCurrent(b->ctx);
    if (r != REEL_CU_SUCCESS) return cu_fail(cu, r, "cuCtxPushCurrent", b->index, err);
    r = cu->EventRecord(b->ready, reel__cuda_stream(c));
    CUcontext popped;
    cu->CtxPopCurrent(&popped);
    if (r != REEL_CU_SUCCESS) return cu_fail(cu, r, "cuEventRecord", b->index, err);
    b->recorded = 1;
    return REEL_OK;
}
