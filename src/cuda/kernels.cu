/* kernels.cu: the GPU conversion, one launch per batch: grid z over the
 * batch's frames, x and y over the output pixels, each thread calling the
 * per-pixel function of convert/pixel.h (emulate.c runs the same grid). */
#include "convert/pixel.h"

extern "C" __global__ void reel_px_convert(const reel__px_frame *frames, const int32_t *start, const int16_t *coef)
{
    const reel__px_frame *f = &frames[blockIdx.z];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < f->w && y < f->h) reel__px_store(f, start, coef, x, y);
}
