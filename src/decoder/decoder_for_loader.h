/* decoder_for_loader.h: what the loader's video source asks of a decoder
 * beyond the public API: a sample's frames straight into its slot,
 * channel-major where the batch is BCTHW, over as many GOP-parallel contexts
 * as the loader chooses for that call (pipeline/source_video.c); and the
 * bytes it reads, which the video's audio shares (reel_decoder_open_audio
 * in src/audio). */
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

/* The decoder's bytes: *remote its object at a URL (read through src/io;
 * the audio reads a share of it, reel__io_share), else NULL; *path the local
 * file it opened, else NULL (both NULL: a caller's reel_io or memory).
 * Returns its name for messages (a URL redacted). Set at open: safe while
 * another thread uses the decoder. */
struct reel__io;
const char *reel__decoder_source(const reel_decoder *dec, struct reel__io **remote, const char **path);

#endif
