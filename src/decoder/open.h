/* open.h: the decoder settings' rules, and opening a video whose remoteness
 * the caller already knows. A
 * dataset entry decides once whether it is at a URL (pipeline/entry.h) and
 * the loader's video source opens it here with that answer; the public
 * reel_decoder_open asks once and comes here too, so that no layer below
 * (the decoder, src/io) asks again. */
#ifndef REEL_DECODER_OPEN_H
#define REEL_DECODER_OPEN_H

#include "reel/decoder.h"

/* The decoder's rules for its settings, the one place they are written:
 * REEL_OK, or REEL_E_INVALID_ARG with "<who>: <prefix><field> must be ..."
 * (the decoder's opens say "settings.", the loader "decoder."). NULL s: the
 * defaults, accepted. */
int reel__decoder_settings_check(const reel_decoder_settings *s, const char *who, const char *prefix, reel_error *err);

/* reel_decoder_open for `path` known to be remote (an http(s)/s3 URL,
 * remote != 0: read through src/io) or a local file (remote == 0).
 * `lend`: NULL, or (settings.device "cuda[:N]") a GPU loader's device on
 * that GPU: the decoder then opens no device of its own (no context
 * retain, stream or module load of its own), and each call runs on the
 * device a decode worker lends it (reel__decoder_get_sample's `device`). */
struct reel__cuda;
int reel__decoder_open_as(reel_decoder **out, const char *path, int remote, const reel_decoder_settings *s,
                          struct reel__cuda *lend, reel_error *err);

#endif
