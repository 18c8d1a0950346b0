/* open.h: opening a video's audio whose remoteness the caller already
 * knows. A dataset entry decides once whether it is at a URL
 * (pipeline/entry.h) and the loader's video source opens the entry's audio
 * here with that answer, as it opens its decoder (decoder/open.h); the
 * public reel_audio_open asks once and comes here too. */
#ifndef REEL_AUDIO_OPEN_H
#define REEL_AUDIO_OPEN_H

#include "reel/audio.h"

/* reel_audio_open for `path` known to be remote (an http(s)/s3 URL,
 * remote != 0: read through src/io by byte ranges) or a local file
 * (remote == 0). */
int reel__audio_open_as(reel_audio **out, const char *path, int remote, const reel_audio_settings *s, reel_error *err);

#endif
