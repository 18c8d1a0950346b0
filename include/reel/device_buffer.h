/* reel/device_buffer.h: device memory that reel's CUDA decoder writes frames into
 * and that outlives it: a buffer on one GPU holding that GPU's primary
 * context, the event of its last write, and its copy to the host. */
#ifndef REEL_DEVICE_BUFFER_H
#define REEL_DEVICE_BUFFER_H

#include "common.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Device memory (CUDA). It retains its GPU's primary context, so it stays
 *  valid after the decoder that filled it is closed, until
 *  reel_device_buffer_free. Thread-safety: the calls on one buffer are not
 *  thread-safe against each other (one thread at a time, or the caller's
 *  lock); different buffers are independent. */
typedef struct reel_device_buffer reel_device_buffer;

/** Allocates `size` bytes (>= 1) on `device` ("cuda" or "cuda:N"). The
 *  memory is not cleared. REEL_E_INVALID_ARG for another device string;
 *  REEL_E_CUDA naming the device and CUDA's cause (no driver, no such GPU,
 *  out of device memory). */
REEL_API int reel_device_buffer_alloc(const char *device, size_t size, reel_device_buffer **out, reel_error *err);

/** Frees the memory (after the writes recorded on it finish) and releases
 *  the context; sets *buf to NULL. NULL or *buf NULL is a no-op. */
REEL_API void reel_device_buffer_free(reel_device_buffer **buf);

/** The device address of the first byte (a CUdeviceptr), 0 for NULL. */
REEL_API uint64_t reel_device_buffer_get_address(const reel_device_buffer *buf);
/** Bytes held, 0 for NULL. */
REEL_API size_t reel_device_buffer_get_size(const reel_device_buffer *buf);
/** The buffer's GPU, "cuda:N" (NULL for NULL). Lives as long as the buffer. */
REEL_API const char *reel_device_buffer_get_device(const reel_device_buffer *buf);

/** Makes the consumer's CUDA stream wait for the buffer's last write
 *  (recorded as an event on the writer's stream; cuStreamWaitEvent), without
 *  blocking the host: `stream` is a CUstream, or 1 (the legacy default
 *  stream) or 2 (the per-thread default stream), as DLPack numbers them.
 *  A buffer never written needs no wait. REEL_E_CUDA naming CUDA's cause. */
REEL_API int reel_device_buffer_wait(reel_device_buffer *buf, uintptr_t stream, reel_error *err);

/** Copies `size` bytes from `offset` to host memory `dst`, after the
 *  buffer's last write; returns when the copy is done. REEL_E_OUT_OF_RANGE
 *  past the end, REEL_E_CUDA naming CUDA's cause. */
REEL_API int reel_device_buffer_download(reel_device_buffer *buf, size_t offset, void *dst, size_t size,
                                         reel_error *err);

#ifdef __cplusplus
}
#endif
#endif /* REEL_DEVICE_BUFFER_H */
