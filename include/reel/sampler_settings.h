/* reel/sampler_settings.h: the samplers' settings as plain values (kinds,
 * past-the-end policies, reel_sampler_settings), defined once: the loader runs
 * them (reel/sampler.h) and a store records the one it was packed with
 * (reel/store.h), so they sit below both. */
#ifndef REEL_SAMPLER_SETTINGS_H
#define REEL_SAMPLER_SETTINGS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The per-video samplers: four clip samplers (torchcodec's semantics) and
 *  two whole-video samplers (qwen-vl-utils 0.0.14's semantics, one clip of a
 *  length that depends on the video; see reel_sampler_describe). */
typedef enum reel_sampler_kind {
    /** No sampler: what reel_pack_settings.sampler and reel_store_info.sampler
     *  say when a store keeps all frames (or those of `every` / `fps`). No
     *  other kind has this value; reel_sampler_run and the loader refuse it. */
    REEL_SAMPLER_NONE = -1,
    REEL_SAMPLER_RANDOM_INDICES = 0,  /**< clip starts uniform in [range_start, range_end) frames */
    REEL_SAMPLER_REGULAR_INDICES = 1, /**< clip starts evenly spaced (linspace) over the range */
    REEL_SAMPLER_RANDOM_TIMES = 2,    /**< clip starts uniform in [range_start, range_end) seconds */
    REEL_SAMPLER_REGULAR_TIMES = 3,   /**< clip starts range_start + k*(width/clips) seconds */
    /** Whole video at `fps` frames per second of video: N frames in the range
     *  (seconds, see range_start) at the video's average fps F give
     *  n = floor_f(min(max(N / F * fps, ceil_f(min_frames)), floor_f(max_frames), N))
     *  (_f: to a multiple of frame_factor), at least frame_factor, taken by
     *  linspace over the range rounded half to even, as torch does. */
    REEL_SAMPLER_FPS = 4,
    /** Whole video as round_half_even(frames_per_clip / frame_factor) *
     *  frame_factor frames, linspace over the range as REEL_SAMPLER_FPS. */
    REEL_SAMPLER_COUNT = 5
} reel_sampler_kind;

/** What happens to a clip that runs past the end of the video (or segment). */
typedef enum reel_clip_policy {
    REEL_CLIP_REPEAT_LAST = 0, /**< repeat the clip's last frame that exists */
    REEL_CLIP_WRAP = 1,        /**< cycle through the clip's frames that exist */
    REEL_CLIP_DROP = 2,        /**< drop the clip; a video that then lacks clips
                                    fails with REEL_E_OUT_OF_RANGE and the error
                                    policy applies */
    REEL_CLIP_ERROR = 3        /**< a clip running past the end fails the video
                                    with REEL_E_OUT_OF_RANGE (torchcodec's "error") */
} reel_clip_policy;

/** Sampler parameters. Ranges are relative to the video (or the sample's
 *  segment): 0 is its first frame / its begin time. */
typedef struct reel_sampler_settings {
    reel_sampler_kind kind;        /**< reel_sampler_kind; default RANDOM_INDICES */
    int clips_per_video;           /**< default 1 */
    int frames_per_clip;           /**< default 8 */
    int frame_stride;              /**< index kinds: frames between clip frames; default 1 */
    double seconds_between_frames; /**< time kinds: 0 (default) = 1 / average fps */
    /** Clip starts are drawn from [range_start, range_end): frames for index
     *  kinds, seconds for time kinds. Negative values count from the end.
     *  range_end 0 (default): the largest start whose clip still fits (at
     *  least one start). range_start default 0. */
    double range_start, range_end;
    reel_clip_policy policy; /**< reel_clip_policy; default REPEAT_LAST */
    /** REGULAR_TIMES only: > 0: clip k starts at the range start + k times
     *  this many seconds (torchcodec's seconds_between_clip_starts) instead
     *  of k times the range width / clips_per_video. Default 0. */
    double seconds_between_clip_starts;
    /* REEL_SAMPLER_FPS and REEL_SAMPLER_COUNT (clips_per_video must be 1).
     * Their range is qwen-vl-utils' video_start / video_end in seconds of
     * the video (or segment): range_start > 0 starts at frame
     * ceil(min(range_start, N / F) * F); range_end > 0 ends at frame
     * min(floor(min(range_end, N / F) * F), N - 1); 0: the first / last
     * frame. A range whose start is not before its end fails. */
    double fps;           /**< REEL_SAMPLER_FPS: frames per second of video; default 2 */
    int min_frames;       /**< REEL_SAMPLER_FPS: at least this many (rounded up to frame_factor); default 4 */
    int max_frames;       /**< REEL_SAMPLER_FPS: at most this many (rounded down); default 768 */
    int frame_factor;     /**< both: the frame count is a multiple of this; default 2 */
    uint8_t reserved[12]; /**< zero (the defaults function clears it); room to grow without an ABI break */
} reel_sampler_settings;

#ifdef __cplusplus
}
#endif

#endif
