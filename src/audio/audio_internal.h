/* audio_internal.h: the audio module's own helpers (src/audio only). */
#ifndef REEL_AUDIO_INTERNAL_H
#define REEL_AUDIO_INTERNAL_H

#include <stdint.h>

#include "reel/audio.h"

/* s(t) on the output grid for t = ts * num / den seconds, exact (rationals,
 * half up); -1 when it is out of int64 range. */
int reel__audio_sample_at(const reel_audio *a, int64_t ts, int num, int den, int64_t *out);

#endif /* REEL_AUDIO_INTERNAL_H */
