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

/* A device's memory counters: its pool, and its upload staging in host memory. */
typedef struct reel__cuda_mem {
    size_t limit;             /* the pool's bound in bytes */
    size_t held;              /* bytes allocated from the driver now */
    size_t peak;              /* most ever held */
    uint64_t allocs;          /* cuMemAlloc calls */
    uint64_t reuses;          /* requests served from the pool */
    size_t pinned;            /* upload staging page-locked by the driver (cuMemHostAlloc) now */
    size_t pinned_peak;       /* most ever */
    uint64_t pinned_failures; /* staging buffers the driver would not pin: plain memory instead */
} reel__cuda_mem;

typedef struct reel__cuda reel__cuda;

/* Counters shared by several devices and their owner (a loader: its own
 * device, its decode workers' and the buffers it allocates itself), so that
 * one total and one peak count every device and pinned byte it causes.
 * Atomic: any thread adds, any thread reads. */
typedef struct reel__cuda_tally {
    _Atomic int64_t device, device_peak, pinned, pinned_peak, pinned_failures;
} reel__cuda_tally;
/* Adds (or with negative numbers takes) bytes, raising the peaks. */
void reel__cuda_tally_add(reel__cuda_tally *t, int64_t device, int64_t pinned);
/* From now on c's pool and staging also count into t (which outlives c);
 * what c holds already is added at once. */
void reel__cuda_set_tally(reel__cuda *c, reel__cuda_tally *t);

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

/* Upload staging: slot `slot` (< REEL__CUDA_STAGING_SLOTS) of c's host
 * buffers, at least `size` bytes, page-locked by the driver
 * (cuMemHostAlloc) or, where the driver refuses, plain memory (counted in
 * pinned_failures; never a failure itself). Kept and reused call after
 * call, grown as needed, freed at close. The caller must not reuse a slot
 * whose upload may still run: every batch ends with reel__cuda_sync. */
#define REEL__CUDA_STAGING_SLOTS 17 /* a batch's pictures (16) and its tables */
int reel__cuda_staging(reel__cuda *c, int slot, size_t size, void **out, reel_error *err);
/* A host-to-device copy queued on c's stream (cuMemcpyHtoDAsync), not
 * waited for: the source must stay as it is until reel__cuda_sync. */
int reel__cuda_upload_async(reel__cuda *c, uint64_t dst, const void *src, size_t size, reel_error *err);
/* Waits for everything queued on c's stream. */
int reel__cuda_sync(reel__cuda *c, reel_error *err);
int reel__cuda_download(reel__cuda *c, void *dst, uint64_t src, size_t size, reel_error *err);

/* One launch for a planned batch: the frames (their y/uv/dst pointers are
 * device addresses) and the shared filter tables are staged and uploaded
 * on c's stream, the kernel runs over grid (max w, max h, n) there, and the
 * call waits for the stream (so every upload queued before it is done). */
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
/* The batch's device from now on (a loader worker's, lent to the
 * decoder for one call: same GPU, same primary context). Empties it. */
void reel__cuda_batch_set_device(reel__cuda_batch *b, reel__cuda *c);
/* 1 if NVDEC's library loads; else 0 and why, for the decoder to say. */
int reel__cuda_nvdec_library(char *why, size_t size);
/* FFmpeg's CUDA device on c's primary context, for its NVDEC hwaccel. */
int reel__cuda_ffmpeg_device(reel__cuda *c, struct AVBufferRef **out, reel_error *err);
/* That device's stream made c's (the same GPU's): NVDEC's copies then run
 * on the stream c's kernel reads them on. */
void reel__cuda_ffmpeg_device_stream(struct AVBufferRef *hw, reel__cuda *c);

/* The device's index N ("cuda:N"). */
int reel__cuda_index(const reel__cuda *c);

/* A device-to-device copy on the device's stream, waited for. */
int reel__cuda_copy_device(reel__cuda *c, uint64_t dst, uint64_t src, size_t size, reel_error *err);

/* Records on c's stream the event that marks the buffer's last write
 * (buffer.c; the consumer's stream waits on it: reel_device_buffer_wait). */
struct reel_device_buffer;
int reel__device_buffer_record(struct reel_device_buffer *b, reel__cuda *c, reel_error *err);

#endif
