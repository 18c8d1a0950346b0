/* synth.h: the test-video generator (internal, used by the CLI's `reel synth`,
 * the tests and the benchmarks). Every frame carries its own index in a
 * block pattern that survives lossy compression and resizing. */
#ifndef REEL_SYNTH_H
#define REEL_SYNTH_H

#include "reel/common.h"

/* The index pattern: a band over the top quarter of the frame, split into
 * REEL_SYNTH_PATTERN_ROWS x REEL_SYNTH_PATTERN_COLS equal cells (each 1/14 of
 * the width and 1/8 of the height, so the layout scales with the frame).
 * Cell k = row * COLS + col is black (bit 0) or white (bit 1); cells
 * 0..19 hold the frame index (LSB first), cells 20..27 a CRC-8 of it, so any
 * misread of up to 3 cells is detected instead of giving a wrong index.
 * Indexes wrap modulo REEL_SYNTH_MAX_INDEX + 1 (num_frames is capped there). */
#define REEL_SYNTH_PATTERN_ROWS 2
#define REEL_SYNTH_PATTERN_COLS 14
#define REEL_SYNTH_INDEX_BITS   20
#define REEL_SYNTH_CHECK_BITS   8
#define REEL_SYNTH_MAX_INDEX    ((1 << REEL_SYNTH_INDEX_BITS) - 1) /* 1048575 */

typedef struct reel_synth_params {
    const char *path;     /* output file; container from the extension (.mp4 .mov .mkv .webm .avi) */
    const char *codec;    /* "h264", "hevc", "vp9", "av1", "mpeg4", "mjpeg", "vp8" */
    int width, height;    /* 32..16384 each. Odd sizes: vp9, vp8, av1 (via libaom), mpeg4,
                              mjpeg, and h264/hevc in 4:4:4; h264/hevc 4:2:0 need even sizes
                              (else REEL_E_INVALID_ARG) */
    int num_frames;       /* 1 .. REEL_SYNTH_MAX_INDEX + 1 */
    int fps_num, fps_den; /* nominal rate, e.g. 25/1 or 30000/1001 */
    int gop;              /* keyframe interval in frames: keyframes (IDR, closed GOPs) exactly at
                              0, gop, 2*gop, ... (mjpeg: every frame is one) */
    int bframes;          /* consecutive B-frames for h264, hevc (fixed pattern, b-adapt off)
                              and mpeg4; 0..16; the other codecs ignore it */
    int vfr;              /* 1: variable frame durations, pseudo-random in [0.5, 1.5] x the
                              nominal one, from seed (not in .avi). Note .mp4/.mov store
                              decode-order durations (dts deltas): with B-frames a packet's
                              duration there is not its frame's display duration */
    int pix_fmt_10bit;    /* 1: 10-bit (yuv420p10le / yuv444p10le): h264, hevc, vp9, av1 */
    int yuv444;           /* 1: 4:4:4 chroma: h264, hevc, vp9, av1 (libaom), mjpeg */
    double start_time;    /* presentation time of the first frame, in seconds (>= 0); .avi
                              needs 0. The encoder always starts at 0 (its timing info says
                              the nominal rate); the offset is added at muxing in a stream time
                              base that holds it exactly where possible (CFR: 1/(fps*k) for a
                              small k; VFR: 1/90000 in .mp4/.mov, 1/1000 in .mkv/.webm).
                              Matroska stores milliseconds: times there round to 1 ms. */
    unsigned seed;        /* content and VFR seed */
} reel_synth_params;

/* Defaults: .path NULL, h264, 320x240, 64 frames, 25/1, gop 16, bframes 2, cfr, 8-bit 4:2:0,
 * start 0, seed 1. */
void reel_synth_default_params(reel_synth_params *p);

/* Writes the video. Errors name the output path and the cause:
 * REEL_E_INVALID_ARG for bad parameters or an unknown extension,
 * REEL_E_UNSUPPORTED_CODEC when no suitable encoder is compiled in, the encoder cannot do the
 * requested pixel format, or the container cannot hold the codec, REEL_E_IO for write failures.
 * On failure a partly written output file is removed. */
int reel_synth_write(const reel_synth_params *p, reel_error *err);

/* The presentation time in seconds of frame i (0-based) as reel_synth_write stores it
 * (before any container rounding, see start_time); i == num_frames gives the end of the
 * last frame (start_time + total duration). Returns -1.0 for bad params or i. O(i). */
double reel_synth_frame_time(const reel_synth_params *p, int64_t i);

/* Draws the index pattern alone for `index` into an RGB24 image (band black/white, the rest
 * mid grey); the same cells reel_synth_write draws. For tests of the reader. */
void reel_synth_draw_pattern(uint8_t *rgb, int width, int height, int64_t row_stride, int64_t index);

/* Reads the embedded index back from an RGB24 HWC image of the whole frame
 * (any size the frame was scaled to, same layout; needs about 2 pixels per cell, e.g. >= 28x16).
 * Samples a box at the centre of each cell, mean of R,G,B, threshold 128. Returns the index
 * (>= 0) or -1 if a cell is undecided (mean within 40 of 128), the CRC does not match, or the
 * image is too small. */
int64_t reel_synth_read_index(const uint8_t *rgb, int width, int height, int64_t row_stride);

#endif
