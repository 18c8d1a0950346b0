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
#include "sampler_settings.h"

#ifdef __cplusplus
extern "C" {
#endif

/* reel_sampler_kind, reel_clip_policy and reel_sampler_settings are in
 * reel/sampler_settings.h (the store records them too). */

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
