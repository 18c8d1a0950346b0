/* device.h: a compute device for the decoder and the loader: the "device"
 * setting parsed ("cpu", "cuda", "cuda:N"), and a CUDA device opened through
 * the driver loaded at run time, with its stream, its kernels and a bounded
 * pool of device memory. For decoder and pipeline. */
#ifndef REEL_CUDA_DEVICE_H
#define REEL_CUDA_DEVICE_H

#include "cuda/plan.h"
#include "reel/common.h"
#include "reel/convert.h"

#include <stddef.h>
#include <stdint.h>

/* The device setting: NULL, "" or "cpu": *index = -1; "cuda": 0;
 * "cuda:N": N. Anything else: REEL_E_INVALID_ARG naming the value. */
int reel__device_parse(const char *device, int *index, reel_error *err);

/* Device memory counters (a pool's; the loader's metrics show them). */
typedef struct reel__cuda_mem {
    size_t limit;    /* the pool's bound in bytes */
    size_t held;     /* bytes allocated from the driver now */
    size_t peak;     /* most ever held */
    uint64_t allocs; /* cuMemAlloc calls */
    uint64_t reuses; /* requests served from the pool */
} reel__cuda_mem;

typedef struct reel__cuda reel__cuda;

/* Opens CUDA device `index` for one decoder or loader worker: the driver
 * (REEL_E_CUDA: "CUDA: cannot load libcuda.so.1 (...)", "CUDA: no CUDA
 * device (...)", "CUDA: device cuda:N asked for, the machine has M"), its
 * primary context, one stream of its own, the embedded kernels
 * (REEL_E_CUDA when libreel was built without them) and a memory pool of
 * at most pool_limit bytes (0: 1 GiB). */
int reel__cuda_open(int index, size_t pool_limit, reel__cuda **out, reel_error *err);
void reel__cuda_close(reel__cuda **c);

/* The device's name and compute capability (major * 10 + minor). */
const char *reel__cuda_name(const reel__cuda *c);
int reel__cuda_capability(const reel__cuda *c);
reel__cuda_mem reel__cuda_memory(const reel__cuda *c);

/* A device buffer of at least `size` bytes from the pool (reused when a
 * free one is large enough; REEL_E_CUDA when the bound would be passed). */
int reel__cuda_buffer(reel__cuda *c, size_t size, uint64_t *ptr, reel_error *err);
/* Returns every buffer to the pool (end of a batch). */
void reel__cuda_buffers_release(reel__cuda *c);

/* Host <-> device copies on the device's stream, waited for. */
int reel__cuda_upload(reel__cuda *c, uint64_t dst, const void *src, size_t size, reel_error *err);
int reel__cuda_download(reel__cuda *c, void *dst, uint64_t src, size_t size, reel_error *err);

/* One launch for a planned batch: the frames (their y/uv/dst pointers are
 * device addresses) and the shared filter tables are uploaded, the kernel
 * runs over grid (max w, max h, n), and the call waits for it. */
int reel__cuda_convert(reel__cuda *c, const reel__px_frame *frames, int n, const reel__cuda_taps *taps,
                       reel_error *err);

/* ---- a decoder's frames to the kernel (batch.c) ---- */
struct AVFrame;
struct AVBufferRef;
typedef struct reel__cuda_batch reel__cuda_batch;

/* A batch of at most max_frames frames on c (which must outlive it). */
int reel__cuda_batch_new(reel__cuda *c, int max_frames, reel__cuda_batch **out, reel_error *err);
void reel__cuda_batch_free(reel__cuda_batch **b);
/* Queues picture f converted per t (its output size set) to device address
 * dst: an AV_PIX_FMT_CUDA surface (NV12 / P010) referenced until the
 * launch (*on_device = 1), or a host 4:2:0 8- or 10-bit picture packed to
 * NV12 / P010 and uploaded into c's pool (0); the picture keyed `key` (>= 0)
 * added last in this batch again: its source reused (-1). A full batch is
 * launched first. REEL_E_CUDA names what the GPU does not do (plan.c). */
int reel__cuda_batch_add(reel__cuda_batch *b, const struct AVFrame *f, int rotation, int64_t key,
                         const reel_transform *t, uint64_t dst, int *on_device, reel_error *err);
/* Launches what is queued (one launch), waits, and empties the batch. */
int reel__cuda_batch_launch(reel__cuda_batch *b, reel_error *err);
/* Empties the batch without launching (a failed call). */
void reel__cuda_batch_drop(reel__cuda_batch *b);
/* 1 if NVDEC's library loads; else 0 and why, for the decoder to say. */
int reel__cuda_nvdec_library(char *why, size_t size);
/* FFmpeg's CUDA device on c's primary context, for its NVDEC hwaccel. */
int reel__cuda_ffmpeg_device(reel__cuda *c, struct AVBufferRef **out, reel_error *err);

/* The device's index N ("cuda:N"). */
int reel__cuda_index(const reel__cuda *c);

/* A device-to-device copy on the device's stream, waited for. */
int reel__cuda_copy_device(reel__cuda *c, uint64_t dst, uint64_t src, size_t size, reel_error *err);

/* Records on c's stream the event that marks the buffer's last write
 * (buffer.c; the consumer's stream waits on it: reel_device_buffer_wait). */
struct reel_device_buffer;
int reel__device_buffer_record(struct reel_device_buffer *b, reel__cuda *c, reel_error *err);

#endif
