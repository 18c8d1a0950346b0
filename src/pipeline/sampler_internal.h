/* sampler_internal.h: per-video clip samplers (random/regular, by index/by time) as
 * pure functions of the frame table and a counter-based random key, so the
 * frames a sample gets never depend on threads or scheduling. */
#ifndef REEL_PIPELINE_SAMPLER_INTERNAL_H
#define REEL_PIPELINE_SAMPLER_INTERNAL_H

#include "reel/pipeline.h"
#include "pipeline/rng.h"

/* The part of a video a sampler works on: the frame table and the
 * sample's segment. */
typedef struct reel_sampler_input {
    const reel_frame_entry *table; /* presentation order, pts ascending */
    int64_t n;                     /* rows */
    int tb_num, tb_den;            /* stream time base */
    double avg_fps;                /* 0: derived from the table */
    double seg_start, seg_end;     /* seconds; seg_end < 0: to the end */
} reel_sampler_input;

/* Validates settings that do not depend on a video. */
int reel__sampler_check(const reel_sampler_settings *s, reel_error *err);

/* Frames a sample gets under `s` when that does not depend on the video
 * (clips_per_video * frames_per_clip; the count sampler's rounded count);
 * -1 for REEL_SAMPLE_FPS. */
int64_t reel__sampler_fixed_count(const reel_sampler_settings *s);

/* reel_sampler_describe on the internal input. */
int reel__sampler_describe(const reel_sampler_settings *s, const reel_sampler_input *in, const char *name,
                           reel_sampler_result *r, reel_error *err);

/* Fills out[clips_per_video * frames_per_clip] (whole-video kinds: the
 * describe count) with absolute frame indices, clip after clip. `name` is used in messages. Returns REEL_E_OUT_OF_RANGE
 * (with a message) when the video cannot give the clips. */
int reel__sampler_run(const reel_sampler_settings *s, const reel_sampler_input *in, const reel_rng_key *key,
                      const char *name, int64_t *out, reel_error *err);

/* Frames [*first, *first + *count) whose start time lies in the segment. */
void reel__sampler_segment(const reel_sampler_input *in, int64_t *first, int64_t *count);

/* The frame shown at `seconds`: the last frame with pts <= round(seconds / tb),
 * clamped to [lo, hi]. */
int64_t reel__sampler_frame_at(const reel_sampler_input *in, double seconds, int64_t lo, int64_t hi);

#endif
