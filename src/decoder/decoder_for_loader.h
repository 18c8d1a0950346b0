/* decoder_for_loader.h: the one decode the loader's video source asks of a
 * decoder beyond the public API: a sample's frames straight into its slot,
 * channel-major where the batch is BCTHW, over as many GOP-parallel contexts
 * as the loader chooses for that call (pipeline/source_video.c). */
#ifndef REEL_DECODER_DECODER_FOR_LOADER_H
#define REEL_DECODER_DECODER_FOR_LOADER_H

#include "reel/decoder.h"

/* reel_decoder_get_frames for one call with `contexts` GOP-parallel contexts
 * (a reel_decoder_settings.gop_contexts value; the decoder's own setting is
 * untouched). cthw != 0: t's layout CHW written channel-major over the call,
 * dst is [3][n][H][W] (the [C, T, H, W] of one sample); t must set no
 * strides; dst_size must hold n frames. `device`: NULL, or for a decoder
 * opened with a GPU loader's device (open.h's `lend`) the decode worker's
 * own (its stream, staging and pool) on which this call runs. */
struct reel__cuda;
int reel__decoder_get_sample(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t, int cthw,
                             int contexts, struct reel__cuda *device, void *dst, size_t dst_size,
                             reel_decode_stats *stats, reel_error *err);

#endif
