/* reel/reel.h: the one header to include. reel feeds video to deep-learning
 * training: frame-exact batched decoding, fused conversion, and a loader. */
#ifndef REEL_REEL_H
#define REEL_REEL_H

#include "common.h"
#include "convert.h"
#include "device_buffer.h"
#include "decoder.h"
#include "audio.h"
#include "dataset.h"
#include "sampler_settings.h"
#include "sampler.h"
#include "loader.h"
#include "store.h"
#include "io.h"

#endif /* REEL_REEL_H */
