/* log.h: FFmpeg's log lines of another module's contexts routed to the file
 * they concern, as the decoder's are (log.c): the audio object registers
 * itself and sets its AVFormatContext's and AVCodecContexts' opaque to it. */
#ifndef REEL_DECODER_LOG_H
#define REEL_DECODER_LOG_H

/* Lines of the contexts whose opaque is `owner` are shown as
 * "[item @ NAME] ..." at once (at the level reel_set_ffmpeg_log_level
 * sets). `name` is borrowed and must not change until unregistered;
 * register before the first context is made, unregister after the last is
 * freed. -1: out of memory (the lines then go to FFmpeg's default). */
int reel__log_register_named(const void *owner, const char *name);

/* Stops routing `owner`'s lines (NULL-safe: a no-op for one not registered). */
void reel__log_unregister_named(const void *owner);

#endif
