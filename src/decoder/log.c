/* log.c: FFmpeg's error messages routed to the decoder they concern. Some
 * damage (slice errors in a keyframe, out-of-range syntax elements) is only
 * logged by FFmpeg, never flagged on the frame; a decoder that hears such a
 * message from its own codec treats it as damage to the frames it decodes.
 *
 * FFmpeg's log callback is process-global, so this file keeps the one piece
 * of process-wide state reel has for it: the callback is installed once
 * (pthread_once) and a mutex-guarded registry lists the live decoders. A
 * message is matched by its AVCodecContext's `opaque`, which reel sets to the
 * decoder on its main codec contexts (FFmpeg copies it into the contexts of
 * its frame threads, so their messages match too). Every message then goes
 * on to av_log_default_callback, which prints it at the level set with
 * reel_set_ffmpeg_log_level(). FFmpeg has no getter for the current callback:
 * one an application installs before reel's first decoder is replaced, and
 * one installed after it replaces reel's (reel then sees flagged errors only). */
#include "decoder/internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <libavutil/log.h>

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static reel_decoder **g_live;
static size_t g_n, g_cap;

static void route(void *avcl, int level, const char *fmt, va_list vl)
{
    if (level <= AV_LOG_ERROR && avcl) {
        const AVClass *cls = *(const AVClass **)avcl;
        if (cls && cls->class_name && !strcmp(cls->class_name, "AVCodecContext")) {
            void *op = ((AVCodecContext *)avcl)->opaque;
            pthread_mutex_lock(&g_mu);
            for (size_t i = 0; op && i < g_n; i++) {
                if (g_live[i] == op) {
                    atomic_fetch_add_explicit(&g_live[i]->log_errors, 1, memory_order_relaxed);
                    break;
                }
                if ((void *)&g_live[i]->probe_log_errors == op) { /* its keyframe probe */
                    atomic_fetch_add_explicit(&g_live[i]->probe_log_errors, 1, memory_order_relaxed);
                    break;
                }
            }
            pthread_mutex_unlock(&g_mu);
        }
    }
    av_log_default_callback(avcl, level, fmt, vl);
}

static void install(void)
{
    av_log_set_callback(route);
}

void reel__log_register(reel_decoder *dec)
{
    pthread_once(&g_once, install);
    pthread_mutex_lock(&g_mu);
    if (g_n == g_cap) {
        size_t nc = g_cap ? g_cap * 2 : 64;
        reel_decoder **nl = realloc(g_live, nc * sizeof *nl);
        if (nl) {
            g_live = nl;
            g_cap = nc;
        }
    }
    if (g_n < g_cap) g_live[g_n++] = dec; /* out of memory: this decoder sees flagged errors only */
    pthread_mutex_unlock(&g_mu);
}

void reel__log_unregister(reel_decoder *dec)
{
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_n; i++)
        if (g_live[i] == dec) {
            g_live[i] = g_live[--g_n];
            break;
        }
    pthread_mutex_unlock(&g_mu);
}

void reel__log_mark(reel_decoder *dec)
{
    dec->log_seen = atomic_load_explicit(&dec->log_errors, memory_order_relaxed);
}

int reel__log_errors_since_mark(const reel_decoder *dec)
{
    return atomic_load_explicit(&((reel_decoder *)dec)->log_errors, memory_order_relaxed) != dec->log_seen;
}
