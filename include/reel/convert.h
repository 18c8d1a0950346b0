/* reel/convert.h: how a decoded frame becomes output pixels. One transform
 * describes crop, resize, rotation, flip, normalisation, dtype and memory
 * layout; a converter applies it in as few passes as exactness allows. */
#ifndef REEL_CONVERT_H
#define REEL_CONVERT_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Resampling filter for resize (same meaning as FFmpeg's scale flags). */
typedef enum reel_filter {
    REEL_FILTER_BILINEAR = 0,
    REEL_FILTER_AREA = 1,
    REEL_FILTER_BICUBIC = 2,
    REEL_FILTER_NEAREST = 3
} reel_filter;

/** Element type of the output. */
typedef enum reel_dtype {
    REEL_DTYPE_UINT8 = 0,
    REEL_DTYPE_FLOAT32 = 1,
    REEL_DTYPE_FLOAT16 = 2,
    REEL_DTYPE_BFLOAT16 = 3
} reel_dtype;

/** Memory layout of one frame. */
typedef enum reel_layout {
    REEL_LAYOUT_HWC = 0, /**< interleaved RGB, row-major */
    REEL_LAYOUT_CHW = 1  /**< planar R, G, B */
} reel_layout;

/** Where resize happens relative to the YUV->RGB conversion. */
typedef enum reel_resize_mode {
    /** One swscale pass from (cropped) YUV straight to RGB at the output
     *  size: never builds full-resolution RGB. Bit-identical to
     *  `ffmpeg -vf crop=w:h:x:y:exact=1,scale=W:H:flags=F -pix_fmt rgb24`. */
    REEL_RESIZE_MODE_FUSED = 0,
    /** Full-size RGB first, then crop and scale in RGB, as torchvision and
     *  torchcodec do. Bit-identical to
     *  `-vf format=rgb24,crop=...:exact=1,scale=W:H:flags=F`. Slower. */
    REEL_RESIZE_MODE_AFTER_RGB = 1
} reel_resize_mode;

/** A complete description of the output of one frame.
 *  Initialise with reel_transform_default_settings(), then set what you need.
 *  Geometry is applied in this order: rotate (if `apply_rotation`), crop,
 *  resize, flip. Crop coordinates are in the (rotated) display frame. */
typedef struct reel_transform {
    int crop_x, crop_y, crop_w, crop_h; /**< crop_w/crop_h 0: no crop */
    int width, height;                  /**< output size; 0: the crop size */
    reel_filter filter;                 /**< reel_filter */
    reel_resize_mode resize_mode;       /**< reel_resize_mode */
    int apply_rotation;                 /**< 1: honour the display matrix */
    int flip_horizontal;                /**< 1: mirror left-right */
    reel_dtype dtype;                   /**< reel_dtype */
    reel_layout layout;                 /**< reel_layout (ignored if strides set) */
    /** Per-channel normalisation, out = (v/scale - mean) / std, applied only
     *  for float dtypes. Defaults: scale 255, mean 0, std 1 -> [0,1]. */
    float scale;
    float mean[3];
    float std[3];
    /** Optional explicit strides in elements (not bytes) for writing into a
     *  larger tensor, e.g. [B,C,T,H,W]. All three 0: derived from layout. */
    int64_t stride_c, stride_y, stride_x;
    uint8_t reserved[32]; /**< zero (the defaults function clears it); room to grow without an ABI break */
} reel_transform;

/** Fills `t` with defaults: no crop, source size, bilinear, fused,
 *  no rotation, no flip, uint8, HWC, scale 255, mean 0, std 1. */
REEL_API void reel_transform_default_settings(reel_transform *t);

/* reel_frame, the opaque decoded frame a visitor is handed, is declared in
 * reel/common.h. */

/** Frame index (presentation order) of a visited frame. */
REEL_API int64_t reel_frame_get_index(const reel_frame *f);
/** Presentation timestamp of a visited frame, in stream time base units. */
REEL_API int64_t reel_frame_get_pts(const reel_frame *f);
/** Decoded size of a visited frame, before any transform. */
REEL_API void reel_frame_get_size(const reel_frame *f, int *width, int *height);

/** Converter: caches swscale contexts and scratch memory between calls.
 *  Not thread-safe: use one per thread. */
typedef struct reel_converter reel_converter;

REEL_API int reel_converter_create(reel_converter **out, reel_error *err);
REEL_API void reel_converter_destroy(reel_converter **conv);

/** Output size of `t` applied to a frame of display size src_w x src_h
 *  (after rotation if requested), in pixels and in bytes for one frame
 *  laid out densely. Fails with REEL_E_INVALID_ARG if the crop falls
 *  outside the frame or a size is not positive. */
REEL_API int reel_transform_output_size(const reel_transform *t, int src_w, int src_h, int *out_w, int *out_h,
                                        size_t *bytes, reel_error *err);

/** Converts one visited frame into `dst` per `t`. `dst_size` is the number
 *  of bytes available at dst (checked when strides are derived). */
REEL_API int reel_converter_run(reel_converter *conv, const reel_frame *frame, const reel_transform *t, void *dst,
                                size_t dst_size, reel_error *err);

#ifdef __cplusplus
}
#endif
#endif /* REEL_CONVERT_H */
