/* pinned.h: page-locked (pinned) host memory from a CUDA runtime found at
 * run time with dlopen, for batch buffers a GPU can copy from directly. */
#ifndef REEL_PIPELINE_PINNED_H
#define REEL_PIPELINE_PINNED_H

#include <stddef.h>

/* Page-locked host memory from the CUDA runtime, loaded with dlopen on first
 * use (thread-safe, once per process; never a link-time dependency). The
 * candidates, in order: $REEL_CUDART (a path or soname) when set, then
 * libcudart.so, libcudart.so.13, libcudart.so.12, libcudart.so.11.0, each
 * first among the libraries already loaded (the runtime torch uses);
 * REEL_CUDART=none looks for nothing (plain memory always). NULL
 * when there is no runtime, no driver or device, or the allocation fails.
 * The memory is aligned to at least `alignment` (else it is freed and NULL
 * returned). */
void *reel__pinned_alloc(size_t bytes, size_t alignment);
void reel__pinned_free(void *p);
/* 1 if a CUDA runtime with cudaHostAlloc/cudaFreeHost was found. */
int reel__pinned_available(void);


#endif
