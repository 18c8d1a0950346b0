/* audio_open.h: opening a video's audio whose remoteness the caller already
 * knows (a dataset entry decided it once, pipeline/entry.h); the public
 * reel_audio_open asks once and comes here too. */
#ifndef REEL_AUDIO_AUDIO_OPEN_H
#define REEL_AUDIO_AUDIO_OPEN_H

#include "reel/audio.h"

/* reel_audio_open for `path` known to be remote (an http(s)/s3 URL,
 * remote != 0: read through src/io by byte ranges) or a local file. */
int reel__audio_open_as(reel_audio **out, const char *path, int remote, const reel_audio_settings *s, reel_error *err);

#endif
