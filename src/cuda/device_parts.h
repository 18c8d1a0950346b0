/* device_parts.h: a CUDA device's driver handles (its API, primary context,
 * stream, index) for the files of src/cuda beside device.c: batch.c and
 * buffer.c. For src/cuda alone. */
#ifndef REEL_CUDA_DEVICE_PARTS_H
#define REEL_CUDA_DEVICE_PARTS_H

#include "cuda/device.h"
#include "cuda/driver.h"

const reel__cu_api *reel__cuda_api(const reel__cuda *c);
CUcontext reel__cuda_context(const reel__cuda *c);
CUstream reel__cuda_stream(const reel__cuda *c);

#endif
