/* kernels.h: the GPU kernels as libreel carries them: the images of
 * kernels.cu (SASS cubins per architecture, PTX for newer GPUs) that
 * scripts/cuda_kernels.py embeds as one table under REEL_CUDA=ON (none in
 * the default build), and the choice of the image for a GPU. */
#ifndef REEL_CUDA_KERNELS_H
#define REEL_CUDA_KERNELS_H

#include <stddef.h>

/* The kernel's name in every image (kernels.cu, extern "C"). */
#define REEL_CUDA_KERNEL_CONVERT "reel_px_convert"

/* One image of the kernels: cuModuleLoadData takes either kind. */
typedef struct reel__cuda_image {
    const char *name;          /* "sm_80": SASS (a cubin); "compute_90": PTX text */
    int arch;                  /* its compute capability, major * 10 + minor: 80, 90 */
    int ptx;                   /* 1: PTX (NUL-terminated), compiled by the driver at load */
    const unsigned char *data; /* 64-byte aligned */
    size_t size;
} reel__cuda_image;

#ifdef REEL_HAVE_CUDA_KERNELS
extern const reel__cuda_image reel__cuda_images[];
extern const int reel__cuda_nimages;
extern const char reel__cuda_compiler[]; /* "NVRTC 12.0", "nvcc 13.0" */
#endif

/* The images of images[0..n) that can run on a GPU of compute capability
 * `capability` (major * 10 + minor), best first, as indices into order[]:
 * the SASS of its major version with the highest minor not above its own
 * (sm_80 runs on 8.0 to 8.9, sm_90 on 9.0), then the PTX of the highest
 * architecture not above it (the driver compiles it: newer GPUs). Returns
 * how many (at most 2); 0: no image can run there. */
int reel__cuda_image_choice(const reel__cuda_image *images, int n, int capability, int order[2]);

#endif
