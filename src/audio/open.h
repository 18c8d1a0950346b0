/* open.h: opening a video's audio whose remoteness the caller already
 * knows. A dataset entry decides once whether it is at a URL
 * (pipeline/entry.h) and the loader's video source opens the entry's audio
 * here with that answer, as it opens its decoder (decoder/open.h); the
 * public reel_audio_open asks once and comes here too. */
#ifndef REEL_AUDIO_OPEN_H
#define REEL_AUDIO_OPEN_H

#include "reel/audio.h"

struct reel__io;

/* reel_audio_open for `path` known to be remote (an http(s)/s3 URL,
 * remote != 0: read through src/io by byte ranges) or a local file
 * (remote == 0). `share`: NULL, or the remote object of the same video
 * that its decoder reads (reel__decoder_remote_io): the audio reads through
 * a share of it (reel__io_share: the bytes it holds are not fetched again,
 * the object's settings apply; s->remote_stats gets the audio's own
 * requests) and `path` and `remote` are not used (path may be NULL). */
int reel__audio_open_as(reel_audio **out, const char *path, int remote, struct reel__io *share,
                        const reel_audio_settings *s, reel_error *err);

#endif
