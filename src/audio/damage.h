/* damage.h: a window's damage (reel/audio.h, "Damage") as spans of the
 * output grid, and what a window says of them, for the packer (a record
 * keeps its window's spans), the store and the loader's store source (a
 * clip cut from a record gets what the video gives it). */
#ifndef REEL_AUDIO_DAMAGE_H
#define REEL_AUDIO_DAMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "reel/audio.h"

/* Dropped packets on the output grid: `packets` of them, whose zeros (and
 * the samples the resampler mixes with them) are [lo, hi); lo == hi:
 * dropped without a gap, at lo. */
typedef struct reel__audio_span {
    int64_t lo, hi, packets;
} reel__audio_span;

/* What the window [lo, hi) of the grid says of the spans s[0..n) (ascending
 * by lo): w->valid_lo/hi (window-relative) hold the stream's part of the
 * window on entry; fills missing, missing_lo/hi, corrupt_packets, and
 * narrows valid_* to the longest clean run. The one definition. */
void reel__audio_damage_of(const reel__audio_span *s, size_t n, int64_t lo, int64_t hi, reel_audio_window *w);

/* After reel_audio_get_samples of [lo, hi): the spans of a's damage that
 * touch it into *out (malloc'd; NULL when none) and the stream's part of
 * the window before the narrowing (window-relative); with `lines` (may be
 * NULL), what REEL_CORRUPT_FAIL would have said of each span's first
 * packet ("corrupt audio packet at T s: <the codec's reason>", without the
 * file's name), a line each in the spans' order (malloc'd; NULL when
 * none). -1: out of memory. */
int reel__audio_damage_spans(const reel_audio *a, int64_t lo, int64_t hi, reel__audio_span **out, size_t *n,
                             int64_t *stream_lo, int64_t *stream_hi, char **lines);

/* 1 when span p touches the window [lo, hi) (a span without a gap: when
 * its place lies in it). The one definition. */
int reel__audio_span_touches(const reel__audio_span *p, int64_t lo, int64_t hi);

#endif
