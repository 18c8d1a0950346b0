/* sampler_of_pack.h: the whole-video sampler a store is packed with, as
 * sampler settings, for the builder that packs with it (src/pack/record.c)
 * and the loader's store source that reads its records (source_store.c). */
#ifndef REEL_PIPELINE_SAMPLER_OF_PACK_H
#define REEL_PIPELINE_SAMPLER_OF_PACK_H

#include "reel/sampler.h"

/* The sampler fields that reel_store_info and reel_pack_settings both carry
 * (kind, fps, min and max frames, the count sampler's frames, frame factor)
 * as settings in *s. */
void reel__sampler_of_pack(int kind, double fps, int min_frames, int max_frames, int frames, int frame_factor,
                           reel_sampler_settings *s);

#endif
