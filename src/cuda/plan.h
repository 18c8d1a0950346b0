/* plan.h: a batch's conversion planned on the host, for the kernels and
 * their emulation: per frame a reel__px_frame (convert/pixel.h), and the
 * filter tables all frames share, built as swscale builds them. */
#ifndef REEL_CUDA_PLAN_H
#define REEL_CUDA_PLAN_H

#include "convert/pixel.h"
#include "reel/convert.h"

#include <stddef.h>
#include <stdint.h>

/* The layout of a reel__cuda_src's planes. */
enum {
    /* 4:2:0, luma then interleaved chroma, as NVDEC hands them over: NV12
     * (bits 8), P010 (bits 10) and P016 (bits 12): 16-bit words with the
     * value in their top bits */
    REEL_CUDA_SRC_NV = 0,
    /* one plane (4:0:0, y only; uv NULL), as the CPU decodes a gray video
     * and uploads it: bytes (bits 8) or 16-bit words holding the value in
     * their low bits (bits 10, 12, 16: gray10le, gray12le, gray16le) */
    REEL_CUDA_SRC_GRAY = 1,
    /* 4:4:4, three planes as NVDEC's YUV444 surfaces: y, uv (the U plane)
     * and v, each full size; bytes (bits 8) or 16-bit words with the value
     * in their top bits (bits 10, 12) */
    REEL_CUDA_SRC_444 = 2
};

/* A decoded picture as the kernels read it, host or device memory. */
typedef struct reel__cuda_src {
    const uint8_t *y, *uv;
    int y_pitch, uv_pitch;
    int width, height, bits;
    /* AVColorSpace; 1: full (JPEG) range as swscale reads the frame
     * (reel__convert_full_range: an untagged gray picture is full) */
    int colorspace, full_range;
    int rotation;     /* clockwise degrees for display */
    int format;       /* REEL_CUDA_SRC_*; 0 (NV) when left zero */
    const uint8_t *v; /* REEL_CUDA_SRC_444: the V plane */
    int v_pitch;
} reel__cuda_src;

/* A batch's filter tables (grown as frames are planned; reset per batch). */
typedef struct reel__cuda_taps {
    int32_t *start;
    int16_t *coef;
    int n_start, n_coef, cap_start, cap_coef;
} reel__cuda_taps;

void reel__cuda_taps_reset(reel__cuda_taps *t);
void reel__cuda_taps_free(reel__cuda_taps *t);

/* Plans one frame of `src` converted per `tr` into dst (its strides, or
 * the layout's): fills *out and appends its filters to *taps (the AFTER_RGB
 * path with a resize: the unscaled picture's and the RGB resize's). Refuses
 * (REEL_E_CUDA, naming the feature) what the GPU does not do yet: a display
 * rotation with a resize, the AFTER_RGB path with a resize of gray or
 * uint16 output or of an odd-width crop at the picture's right edge to half
 * its width or less, uint16 RGB of an unscaled 8-bit picture of odd width,
 * a downscale past swscale's 256-tap filters, and source depths or layouts
 * other than those above. */
int reel__cuda_plan_frame(reel__cuda_taps *taps, const reel__cuda_src *src, const reel_transform *tr, void *dst,
                          reel__px_frame *out, reel_error *err);

/* The kernels' grid run on the CPU (emulate.c): every frame of a planned
 * batch, thread by thread, through the same pixel.h functions. */
void reel__cuda_emulate(const reel__px_frame *frames, int n, const reel__cuda_taps *taps);

#endif
