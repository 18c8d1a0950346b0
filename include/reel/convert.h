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
    REEL_DTYPE_BFLOAT16 = 3,
    /** 16-bit codes: RGB as ffmpeg's rgb48le (0..65535, whatever the
     *  source's depth); gray as the source's own codes (a 12-bit source
     *  0..4095, as gray12le; an 8-bit one 0..255) */
    REEL_DTYPE_UINT16 = 4
} reel_dtype;

/** Channels of the output. reel_pixel_settings.color. */
typedef enum reel_color {
    REEL_COLOR_RGB = 0, /**< 3 channels, R, G, B */
    /** 1 channel: the luma as ffmpeg's `-pix_fmt gray` (8 bits) or
     *  gray<depth>le (uint16 and float dtypes of a source deeper than 8 bits);
     *  a gray source keeps its codes and range */
    REEL_COLOR_GRAY = 1
} reel_color;

/** Memory layout of one frame. */
typedef enum reel_layout {
    REEL_LAYOUT_HWC = 0, /**< interleaved RGB, row-major */
    REEL_LAYOUT_CHW = 1  /**< planar R, G, B */
} reel_layout;

/** The conversion's path: where the resize happens relative to the
 *  YUV->RGB conversion (what the resize is, in the loader, is
 *  reel_resize_kind). reel_pixel_settings.convert_path. */
typedef enum reel_convert_path {
    /** One swscale pass from (cropped) YUV straight to RGB at the output
     *  size: never builds full-resolution RGB. Bit-identical to
     *  `ffmpeg -vf crop=w:h:x:y:exact=1,scale=W:H:flags=F -pix_fmt rgb24`. */
    REEL_CONVERT_PATH_FUSED = 0,
    /** Full-size RGB first, then crop and scale in RGB, as torchvision and
     *  torchcodec do. Bit-identical to
     *  `-vf format=rgb24,crop=...:exact=1,scale=W:H:flags=F`. Slower. */
    REEL_CONVERT_PATH_AFTER_RGB = 1
} reel_convert_path;

/** How output pixels are made, the part of a transform that a single
 *  frame (reel_transform) and a loader clip (reel_clip_transform) share,
 *  defined once here: both embed it as `.pixels`. Initialise with
 *  reel_pixel_default_settings() (each transform's defaults function calls
 *  it). */
typedef struct reel_pixel_settings {
    reel_filter filter; /**< reel_filter: the resize's resampling; default BILINEAR */
    /** reel_convert_path: where the resize runs against the YUV->RGB
     *  conversion; default FUSED */
    reel_convert_path convert_path;
    int apply_rotation; /**< 1 (default): honour the display matrix (rotate before the crop) */
    reel_dtype dtype;   /**< reel_dtype; default UINT8 */
    /* Per-channel normalisation, out = (v/divisor - mean) / std, applied
     * only for float dtypes; the defaults give [0,1]. `divisor` is on the
     * 8-bit scale: v is a code of the picture the uint16 dtype would give
     * when that is deeper than 8 bits (RGB48, or gray of a deep source), and
     * the divisor is then scaled by its largest code / 255, so the default
     * divides by the source's largest code (4095 for 12-bit gray). Gray uses
     * mean[0] and std[0]. */
    float divisor;        /**< default 255 */
    float mean[3];        /**< default 0 */
    float std[3];         /**< default 1 */
    reel_color color;     /**< reel_color; default RGB */
    uint8_t reserved[12]; /**< zero (the defaults function clears it); room to grow without an ABI break */
} reel_pixel_settings;

/** Fills `p` with the defaults: bilinear, fused, the display rotation
 *  honoured, uint8, divisor 255, mean 0, std 1, RGB. */
REEL_API void reel_pixel_default_settings(reel_pixel_settings *p);

/** A complete description of the output of one frame.
 *  Initialise with reel_transform_default_settings(), then set what you need.
 *  Geometry is applied in this order: rotate (if `pixels.apply_rotation`),
 *  crop, resize, flip. Crop coordinates are in the (rotated) display frame. */
typedef struct reel_transform {
    int crop_x, crop_y, crop_w, crop_h; /**< crop_w/crop_h 0: no crop */
    int width, height;                  /**< output size; 0: the crop size */
    reel_pixel_settings pixels;         /**< filter, convert path, rotation, dtype, normalisation */
    int flip_horizontal;                /**< 1: mirror left-right */
    reel_layout layout;                 /**< reel_layout (ignored if strides set) */
    /** Optional explicit strides in elements (not bytes) for writing into a
     *  larger tensor, e.g. [B,C,T,H,W]. All three 0: derived from layout. */
    int64_t stride_c, stride_y, stride_x;
    uint8_t reserved[32]; /**< zero (the defaults function clears it); room to grow without an ABI break */
} reel_transform;

/** Fills `t` with defaults: no crop, source size, reel_pixel_default_settings
 *  (the display rotation honoured), no flip, HWC. */
REEL_API void reel_transform_default_settings(reel_transform *t);

/** How a video's output size is chosen. */
typedef enum reel_size_kind {
    REEL_SIZE_FIXED = 0,       /**< width x height as given */
    REEL_SIZE_PIXEL_BUDGET = 1 /**< qwen-vl-utils 0.0.14's video sizing: sides multiples of `factor`,
                                     the area within [min_pixels, max_pixels], the frames sharing
                                     total_pixels; see reel_size_policy_apply */
} reel_size_kind;

/** qwen-vl-utils 0.0.14's sizing constants, defined here once
 *  (reel_size_policy_apply uses them; the Python binding exports them as
 *  QWEN_*, and reel.vlm reads them from there). Areas are in tokens of
 *  factor x factor pixels. */
#define REEL_QWEN_SPATIAL_MERGE_SIZE 2      /**< the factor is the patch size times this (14 x 2 = 28) */
#define REEL_QWEN_IMAGE_MIN_TOKENS   4      /**< an image's least area (and resized sizes') */
#define REEL_QWEN_IMAGE_MAX_TOKENS   16384  /**< an image's largest area (and resized sizes') */
#define REEL_QWEN_VIDEO_MIN_TOKENS   128    /**< a video frame's least area (min_pixels 0) */
#define REEL_QWEN_VIDEO_MAX_TOKENS   768    /**< a video frame's largest area */
#define REEL_QWEN_MODEL_SEQ_LEN      128000 /**< qwen's MODEL_SEQ_LEN default */
#define REEL_QWEN_TOTAL_PIXELS_SHARE 0.9    /**< total_pixels = MODEL_SEQ_LEN x factor^2 x this */

/** A size policy: each video gets its own output size from its display
 *  size and frame count. Initialise with reel_size_policy_default_settings. */
typedef struct reel_size_policy {
    reel_size_kind kind; /**< default REEL_SIZE_PIXEL_BUDGET */
    /** FIXED: the output size. PIXEL_BUDGET: both > 0 ask for this size,
     *  which is only rounded to the factor within [4, 16384] * factor^2
     *  (qwen's resized_width / resized_height; one > 0 without the other:
     *  REEL_E_INVALID_ARG). Default 0. */
    int width, height;
    int factor;           /**< PIXEL_BUDGET: sides are multiples of this; default 28 (patch 14 x merge 2) */
    double min_pixels;    /**< PIXEL_BUDGET: least area; 0 (default): 128 * factor^2 */
    double max_pixels;    /**< PIXEL_BUDGET: a cap under the budget's; 0 (default): none */
    double total_pixels;  /**< PIXEL_BUDGET: pixels shared by all frames; 0 (default):
                              128000 * factor^2 * 0.9 (qwen's MODEL_SEQ_LEN default) */
    uint8_t reserved[32]; /**< zero (the defaults function clears it) */
} reel_size_policy;

/** Fills `p` with the defaults: PIXEL_BUDGET with qwen-vl-utils' defaults. */
REEL_API void reel_size_policy_default_settings(reel_size_policy *p);

/** Output size of a video of display size src_w x src_h sampled to
 *  num_frames frames, `frame_factor` of which make a temporal patch (the
 *  sampler's frame_factor: reel_sampler_settings.frame_factor, the one
 *  place it is set). PIXEL_BUDGET, as qwen-vl-utils 0.0.14's fetch_video:
 *  max = max(min(768 * factor^2, total_pixels / num_frames * frame_factor),
 *  (int)(min_pixels * 1.05)), lowered to max_pixels if given; then
 *  reel_size_smart_resize(src_w, src_h, factor, min_pixels, max). FIXED
 *  ignores num_frames and frame_factor. Fails with REEL_E_INVALID_ARG
 *  (aspect ratio over 200, max below min, bad values). */
REEL_API int reel_size_policy_apply(const reel_size_policy *p, int src_w, int src_h, int64_t num_frames,
                                    int frame_factor, int *out_w, int *out_h, reel_error *err);

/** qwen-vl-utils' smart_resize: each side rounded (half to even) to a
 *  multiple of `factor`, at least `factor`; an area over max_pixels scaled
 *  down by sqrt(h * w / max_pixels) and floored to the factor, one under
 *  min_pixels scaled up and ceiled. Refuses an aspect ratio over 200 and
 *  max_pixels < min_pixels (REEL_E_INVALID_ARG). Sizes in reel's order,
 *  width then height, as reel_size_policy_apply (qwen's Python function and
 *  reel.vlm.smart_resize take and return height first). */
REEL_API int reel_size_smart_resize(int width, int height, int factor, double min_pixels, double max_pixels, int *out_w,
                                    int *out_h, reel_error *err);

/* reel_frame, the opaque decoded frame a visitor is handed, is declared in
 * reel/common.h. */

/** Frame index (presentation order) of a visited frame. */
REEL_API int64_t reel_frame_get_index(const reel_frame *f);
/** Presentation timestamp of a visited frame, in stream time base units. */
REEL_API int64_t reel_frame_get_pts(const reel_frame *f);
/** Decoded size of a visited frame, before any transform. REEL_E_INVALID_ARG
 *  for a NULL frame (the sizes set to 0). */
REEL_API int reel_frame_get_size(const reel_frame *f, int *width, int *height, reel_error *err);

/** Converter: caches swscale contexts and scratch memory between calls.
 *  Not thread-safe: use one per thread. */
typedef struct reel_converter reel_converter;

REEL_API int reel_converter_create(reel_converter **out, reel_error *err);
REEL_API void reel_converter_destroy(reel_converter **conv);

/** Output size of `t` applied to a frame of display size src_w x src_h
 *  (after rotation if requested), in pixels and in bytes for one frame
 *  laid out densely. Fails with REEL_E_INVALID_ARG if the crop falls
 *  outside the frame or a size is not positive. */
REEL_API int reel_transform_get_output_size(const reel_transform *t, int src_w, int src_h, int *out_w, int *out_h,
                                            size_t *bytes, reel_error *err);

/** Converts one visited frame into `dst` per `t`. `dst_size` is the number
 *  of bytes available at dst (checked when strides are derived). */
REEL_API int reel_converter_run(reel_converter *conv, const reel_frame *frame, const reel_transform *t, void *dst,
                                size_t dst_size, reel_error *err);

#ifdef __cplusplus
}
#endif
#endif /* REEL_CONVERT_H */
