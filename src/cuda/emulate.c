/* emulate.c: the conversion kernel's grid run on the CPU, block by block
 * and thread by thread, calling the same per-pixel function (convert/
 * pixel.h) that kernels.cu compiles for the GPU. */
#include "cuda/plan.h"

void reel__cuda_emulate(const reel__px_frame *frames, int n, const reel__cuda_taps *taps)
{
    int gw = 0, gh = 0;
    for (int i = 0; i < n; i++) {
        if (frames[i].w > gw) gw = frames[i].w;
        if (frames[i].h > gh) gh = frames[i].h;
    }
    const int bw = REEL_PX_BLOCK_W, bh = REEL_PX_BLOCK_H;
    for (int z = 0; z < n; z++) /* blockIdx.z */
        for (int by = 0; by < (gh + bh - 1) / bh; by++)
            for (int bx = 0; bx < (gw + bw - 1) / bw; bx++)
                for (int ty = 0; ty < bh; ty++)
                    for (int tx = 0; tx < bw; tx++) {
                        int x = bx * bw + tx, y = by * bh + ty;
                        if (x < frames[z].w && y < frames[z].h)
                            reel__px_store(&frames[z], taps->start, taps->coef, x, y);
                    }
}
