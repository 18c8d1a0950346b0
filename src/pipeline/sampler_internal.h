/* sampler_internal.h: per-video clip samplers (random/regular, by index/by time) as
 * pure functions of the frame table and a counter-based random key, so the
 * frames a sample gets never depend on threads or scheduling. For the
 * pipeline alone; the builder (src/pack) uses the public reel/sampler.h. */
#ifndef REEL_PIPELINE_SAMPLER_INTERNAL_H
#define REEL_PIPELINE_SAMPLER_INTERNAL_H

#include "reel/pipeline.h"
#include "pipeline/rng.h"

/* The part of a video a sampler works on is the public reel_sampler_video
 * (reel/sampler.h): the one frame-table view, filled by the loader's sources
 * and by callers of reel_sampler_run alike; its name is used in messages. */

/* Validates settings that do not depend on a video. */
int reel__sampler_check(const reel_sampler_settings *s, reel_error *err);

/* Frames a sample gets under `s` when that does not depend on the video
 * (clips_per_video * frames_per_clip; the count sampler's rounded count);
 * -1 for REEL_SAMPLER_FPS. */
int64_t reel__sampler_fixed_count(const reel_sampler_settings *s);

/* reel_sampler_describe without the argument checks. */
int reel__sampler_describe(const reel_sampler_settings *s, const reel_sampler_video *v, reel_sampler_result *r,
                           reel_error *err);

/* Fills out[clips_per_video * frames_per_clip] (whole-video kinds: the
 * describe count) with absolute frame indices, clip after clip (settings
 * already checked). Returns REEL_E_OUT_OF_RANGE (with a message naming
 * v->name) when the video cannot give the clips. */
int reel__sampler_run(const reel_sampler_settings *s, const reel_sampler_video *v, const reel_rng_key *key,
                      int64_t *out, reel_error *err);

/* Frames [*first, *first + *count) whose start time lies in the segment. */
void reel__sampler_segment(const reel_sampler_video *v, int64_t *first, int64_t *count);

/* The frame shown at `seconds`: the last frame with pts <= round(seconds / tb),
 * clamped to [lo, hi]. */
int64_t reel__sampler_frame_at(const reel_sampler_video *v, double seconds, int64_t lo, int64_t hi);

#endif
