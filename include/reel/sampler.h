/* reel/sampler.h: the per-video samplers as one pure function of a video's
 * frame table and a seed: clips (random or regular clip starts, by frame
 * index or by time; torchcodec's definitions) and whole-video sampling for
 * video-language models (a target fps or a frame count; qwen-vl-utils 0.0.14's
 * definitions). The loader samples every
 * video with it, and Python's clips_at_* functions are thin wrappers over it,
 * so both agree on ranges, policies and random draws.
 *
 * Thread-safety: reel_sampler_run is a pure function; call it from any
 * thread. */
#ifndef REEL_SAMPLER_H
#define REEL_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "decoder.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The per-video samplers: four clip samplers (torchcodec's semantics) and
 *  two whole-video samplers (qwen-vl-utils 0.0.14's semantics, one clip of a
 *  length that depends on the video; see reel_sampler_describe). */
typedef enum reel_sampler_kind {
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

/** Fills `s` with the defaults: random indices, 1 clip of 8 consecutive
 *  frames, the whole video, repeat_last; for the whole-video kinds fps 2,
 *  4 to 768 frames, frame factor 2 (qwen-vl-utils' defaults). */
REEL_API void reel_sampler_default_settings(reel_sampler_settings *s);

/** The video a sampler works on: its frame table (presentation order, as
 *  reel_decoder_get_frame_table gives it) and time base, and the part of it
 *  to sample. */
typedef struct reel_sampler_video {
    const reel_frame_entry *table; /**< borrowed (common.h), for the call */
    int64_t num_frames;
    int time_base_num, time_base_den;
    double average_fps;   /**< 0: derived from the table */
    double segment_start; /**< seconds; 0: the video's start */
    double segment_end;   /**< seconds; < 0: to the video's end */
    const char *name;     /**< for messages (may be NULL); borrowed (common.h), for the call */
    uint8_t reserved[32]; /**< zero; room to grow (common.h) */
} reel_sampler_video;

/** What a sampler gives one video: the frame count (the length of
 *  reel_sampler_run's output), the range sampled and its rates. */
typedef struct reel_sampler_result {
    int64_t num_frames;   /**< indices reel_sampler_run writes */
    int64_t range_first;  /**< first frame of the range sampled (absolute) */
    int64_t range_frames; /**< frames in that range (qwen's total_num_frames) */
    double video_fps;     /**< the average fps used (qwen's fps) */
    double sample_fps;    /**< whole-video kinds: num_frames / range_frames * video_fps; clip kinds: 0 */
    uint8_t reserved[32]; /**< zero; room to grow (common.h) */
} reel_sampler_result;

/** Describes what reel_sampler_run gives this video under `s` (the same
 *  errors, without the indices): for the clip kinds clips_per_video *
 *  frames_per_clip frames, for the whole-video kinds a count that depends
 *  on the video. */
REEL_API int reel_sampler_describe(const reel_sampler_settings *s, const reel_sampler_video *v,
                                   reel_sampler_result *out, reel_error *err);

/** Samples the clips of one video into out[n] (n: clips_per_video *
 *  frames_per_clip, or reel_sampler_describe's num_frames): absolute frame indices (presentation order), clip after
 *  clip. The random draws are a counter-based function of (seed, epoch,
 *  sample): the loader with the same seed gives dataset entry `sample` these
 *  clips in epoch `epoch` (first attempt). REEL_E_OUT_OF_RANGE names the
 *  video and why it cannot give the clips (an empty range, too few frames
 *  under REEL_CLIP_DROP, a clip past the end under REEL_CLIP_ERROR);
 *  REEL_E_INVALID_ARG for bad settings; REEL_E_BUFFER_TOO_SMALL when
 *  out_len is short. */
REEL_API int reel_sampler_run(const reel_sampler_settings *s, const reel_sampler_video *v, uint64_t seed,
                              uint64_t epoch, uint64_t sample, int64_t *out, size_t out_len, reel_error *err);

#ifdef __cplusplus
}
#endif

#endif
