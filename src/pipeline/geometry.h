/* geometry.h: turns a clip transform (resize, crop, flip) and a clip's
 * random draws into one reel_transform per frame: the resize and crop are
 * mapped back to a crop of the source, so the converter never builds full
 * resolution RGB when the output is smaller. Also the batch layouts. */
#ifndef REEL_PIPELINE_GEOMETRY_H
#define REEL_PIPELINE_GEOMETRY_H

#include "reel/pipeline.h"
#include "pipeline/rng.h"

/* Validates the clip transform and gives the fixed output size. */
int reel__geometry_check(const reel_clip_transform *ct, int *out_w, int *out_h, reel_error *err);

/* Fills `t` for a frame of display size src_w x src_h in clip `clip`, with
 * draws from `key` (purpose REEL_RNG_CROP). Sets crop, size, flip, filter,
 * dtype and normalisation; strides are left to the caller. */
int reel__geometry_frame(const reel_clip_transform *ct, int src_w, int src_h, const reel_rng_key *key, int clip,
                         reel_transform *t, reel_error *err);

/* What a clip's row says of the frame transform `t` that made it: the flip,
 * and the crop on the display frame (the whole src_w x src_h one without). */
void reel__geometry_clip_info(const reel_transform *t, int src_w, int src_h, reel_clip_info *ci);

/* Shape and element strides of a batch of `rows` clips of T frames of
 * w x h x nc channels, and the per-frame strides (stride_c/y/x) and element
 * offset of frame (row, t). */
void reel__layout_shape(int layout, int64_t rows, int T, int h, int w, int nc, int64_t shape[5], int64_t strides[5]);
void reel__layout_frame(int layout, int T, int h, int w, int nc, int64_t row, int t, int64_t *offset, int64_t *stride_c,
                        int64_t *stride_y, int64_t *stride_x);

#endif
