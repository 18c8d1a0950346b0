/* kernels.h: the GPU kernels as libreel carries them: the fatbin that
 * nvcc makes of kernels.cu (sm_80, sm_90 and compute_90 PTX) under the
 * REEL_CUDA=ON build, embedded as a C array; empty in the default build. */
#ifndef REEL_CUDA_KERNELS_H
#define REEL_CUDA_KERNELS_H

#include <stddef.h>

/* The kernel's name in the fatbin (kernels.cu, extern "C"). */
#define REEL_CUDA_KERNEL_CONVERT "reel_px_convert"

#ifdef REEL_HAVE_CUDA_KERNELS
extern const unsigned char reel__cuda_fatbin[];
extern const size_t reel__cuda_fatbin_size;
#endif

#endif
