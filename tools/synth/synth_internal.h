/* synth_internal.h: what the generator's two sources share (the content
 * renderer and the hash), not part of the synth API. */
#ifndef REEL_SYNTH_INTERNAL_H
#define REEL_SYNTH_INTERNAL_H

#include <stdint.h>

/* A 64-bit mixer (splitmix64's finaliser): a pure function, used for every
 * pseudo-random choice so the output depends only on the parameters. */
uint64_t reel__synth_mix64(uint64_t x);

/* Ints of scratch space reel__synth_render needs for a width x height frame. */
#define REEL__SYNTH_SCRATCH(width, height) ((size_t)(width)*2 + (size_t)(height))

/* Renders frame `index` of a video with seed `seed` into an RGB24 image:
 * the index pattern in the top band, moving textured content below it.
 * scratch: REEL__SYNTH_SCRATCH(width, height) ints, contents irrelevant. */
void reel__synth_render(uint8_t *rgb, int width, int height, int64_t row_stride, int64_t index, unsigned seed,
                        int *scratch);

#endif
