/* log.c: FFmpeg's log messages routed to the decoder they concern. Some
 * damage (slice errors in a keyframe, out-of-range syntax elements) is only
 * logged by FFmpeg, never flagged on the frame; a decoder that hears such a
 * message from its own codec treats it as damage to the frames it decodes.
 * What is shown names the file: "[h264 @ clip.mp4] ...", never a pointer.
 * Decodes whose output is thrown away say nothing: the keyframe probe, the
 * stream probing while a decoder opens, and a run given up on an unclean
 * keyframe (its messages are held until the call keeps or drops its frames).
 *
 * The audio object's (src/audio) demuxer and codec lines are routed the same
 * way, shown at once naming its file: it registers as a named owner
 * (decoder/log.h), matched by the same opaques.
 *
 * FFmpeg's log callback is process-global, so this file keeps the one piece
 * of process-wide state reel has for it: the callback is installed once
 * (pthread_once) and a mutex-guarded registry lists the live decoders (and
 * named owners). A
 * message is matched by its AVCodecContext's `opaque`, which reel sets to the
 * decoder on its main codec contexts (FFmpeg copies it into the contexts of
 * its frame threads, so their messages match too), or by its
 * AVFormatContext's `opaque`, also the decoder (never by comparing with
 * another decoder's `fmt`, which its own thread writes while opening: a race
 * TSan found). Messages of no decoder go to av_log_default_callback,
 * which prints at the level set with reel_set_ffmpeg_log_level(), and so does
 * what reel shows. FFmpeg has no getter for the current callback: one an
 * application installs before reel's first decoder is replaced, and one
 * installed after it replaces reel's (reel then sees flagged errors only). */
#include "decoder/internal.h"
#include "decoder/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavformat/avformat.h>
#include <libavutil/log.h>

/* A live decoder and the lines its codec logged in the current call, held
 * until the call keeps its frames (reel__log_flush). */
typedef struct live {
    reel_decoder *dec;
    char *held; /* lines, each ending in '\n'; NULL when none */
    size_t held_len;
    int held_level; /* the most severe level among them */
    int64_t dropped;
} live;

#define REEL_LOG_HELD_MAX 4096 /* bytes held per decoder; more is counted, not kept */

/* A named owner (decoder/log.h): its lines are shown at once, naming it. */
typedef struct named {
    const void *owner;
    const char *name;
} named;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static live *g_live;
static size_t g_n, g_cap;
static named *g_named;
static size_t g_named_n, g_named_cap;
/* The decoder this thread is opening: FFmpeg's stream probing decodes a few
 * frames on the calling thread and throws them away. */
static _Thread_local const reel_decoder *tl_opening;

/* printf-style: the formats come from FFmpeg, or are reel's own literals */
#define REEL_LOG_PRINTF(f, a) __attribute__((format(printf, f, a)))

REEL_LOG_PRINTF(2, 3) static void emit(int level, const char *fmt, ...)
{
    va_list vl;
    va_start(vl, fmt);
    av_log_default_callback(NULL, level, fmt, vl);
    va_end(vl);
}

/* "[h264 @ NAME] message\n" into buf (cut to its size, always one line). */
REEL_LOG_PRINTF(5, 0)
static void format_line(char *buf, size_t cap, void *avcl, const char *name, const char *fmt, va_list vl)
{
    const AVClass *cls = *(const AVClass **)avcl;
    const char *item = cls && cls->item_name ? cls->item_name(avcl) : "ffmpeg";
    int k = snprintf(buf, cap, "[%s @ %s] ", item ? item : "ffmpeg", name);
    if (k < 0 || (size_t)k >= cap) k = 0;
    vsnprintf(buf + k, cap - (size_t)k, fmt, vl);
    size_t len = strlen(buf);
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = 0;
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\n' || buf[i] == '\r') buf[i] = ' ';
    if (len + 1 < cap) {
        buf[len] = '\n';
        buf[len + 1] = 0;
    } else {
        buf[cap - 2] = '\n';
        buf[cap - 1] = 0;
    }
}

static void hold(live *l, int level, const char *line)
{
    size_t n = strlen(line);
    if (l->held_len + n > REEL_LOG_HELD_MAX) {
        l->dropped++;
        return;
    }
    char *nb = realloc(l->held, l->held_len + n + 1);
    if (!nb) {
        l->dropped++;
        return;
    }
    memcpy(nb + l->held_len, line, n + 1);
    l->held = nb;
    l->held_len += n;
    if (l->held_len == n || level < l->held_level) l->held_level = level;
}

REEL_LOG_PRINTF(3, 0) static void route(void *avcl, int level, const char *fmt, va_list vl)
{
    const AVClass *cls = avcl ? *(const AVClass **)avcl : NULL;
    const char *cname = cls && cls->class_name ? cls->class_name : "";
    const int is_codec = !strcmp(cname, "AVCodecContext");
    const int is_format = !strcmp(cname, "AVFormatContext");
    if (!is_codec && !is_format) {
        av_log_default_callback(avcl, level, fmt, vl);
        return;
    }
    if (is_codec && tl_opening) return; /* stream probing while opening: frames thrown away */
    const int shown = level <= av_log_get_level();
    char line[1024];
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_n; i++) {
        reel_decoder *d = g_live[i].dec;
        if (is_codec) {
            void *op = ((AVCodecContext *)avcl)->opaque;
            if (!op) break;
            if ((void *)&d->probe_log_errors == op) { /* its keyframe probe: counted, never shown */
                if (level <= AV_LOG_ERROR) atomic_fetch_add_explicit(&d->probe_log_errors, 1, memory_order_relaxed);
                pthread_mutex_unlock(&g_mu);
                return;
            }
            if ((void *)d != op) continue;
            if (level <= AV_LOG_ERROR) atomic_fetch_add_explicit(&d->log_errors, 1, memory_order_relaxed);
            if (shown) {
                format_line(line, sizeof line, avcl, d->name, fmt, vl);
                hold(&g_live[i], level, line);
                atomic_store_explicit(&d->log_held, 1, memory_order_relaxed);
            }
            pthread_mutex_unlock(&g_mu);
            return;
        }
        if (((AVFormatContext *)avcl)->opaque == (void *)d) { /* set at alloc: d->fmt is its owner's to write */
            if (shown) {
                format_line(line, sizeof line, avcl, d->name, fmt, vl);
                emit(level, "%s", line);
            }
            pthread_mutex_unlock(&g_mu);
            return;
        }
    }
    /* a named owner's (the audio object's): its codec or its container */
    const void *op = is_codec ? ((AVCodecContext *)avcl)->opaque : ((AVFormatContext *)avcl)->opaque;
    for (size_t i = 0; op && i < g_named_n; i++)
        if (g_named[i].owner == op) {
            if (shown) {
                format_line(line, sizeof line, avcl, g_named[i].name, fmt, vl);
                emit(level, "%s", line);
            }
            pthread_mutex_unlock(&g_mu);
            return;
        }
    pthread_mutex_unlock(&g_mu);
    av_log_default_callback(avcl, level, fmt, vl);
}

static void install(void)
{
    av_log_set_callback(route);
}

/* Room for one more entry of `size` bytes in a registry array of n used
 * (doubled when full, from 64); 0 when out of memory. Caller holds g_mu. */
static int room(void **arr, size_t *cap, size_t n, size_t size)
{
    if (n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        void *na = realloc(*arr, nc * size);
        if (na) {
            *arr = na;
            *cap = nc;
        }
    }
    return n < *cap;
}

void reel__log_register(reel_decoder *dec)
{
    pthread_once(&g_once, install);
    pthread_mutex_lock(&g_mu);
    if (room((void **)&g_live, &g_cap, g_n, sizeof *g_live))
        g_live[g_n++] = (live){ .dec = dec }; /* out of memory: flagged errors only */
    pthread_mutex_unlock(&g_mu);
}

/* Takes the held lines of entry i out of the registry (caller holds g_mu). */
static char *take_held(size_t i, int *level, int64_t *dropped)
{
    char *h = g_live[i].held;
    *level = g_live[i].held_level;
    *dropped = g_live[i].dropped;
    g_live[i].held = NULL;
    g_live[i].held_len = 0;
    g_live[i].dropped = 0;
    return h;
}

static void show(const char *name, char *held, int level, int64_t dropped)
{
    if (held) emit(level, "%s", held);
    if (dropped) emit(level, "[reel @ %s] %lld more FFmpeg messages not shown\n", name, (long long)dropped);
    free(held);
}

/* Takes dec's held lines out of the registry, and dec too when `leave`;
 * then shows them (keep) or drops them. */
static void release(reel_decoder *dec, int leave, int keep)
{
    char *held = NULL;
    int level = 0;
    int64_t dropped = 0;
    pthread_mutex_lock(&g_mu);
    atomic_store_explicit(&dec->log_held, 0, memory_order_relaxed);
    for (size_t i = 0; i < g_n; i++)
        if (g_live[i].dec == dec) {
            held = take_held(i, &level, &dropped);
            if (leave) g_live[i] = g_live[--g_n];
            break;
        }
    pthread_mutex_unlock(&g_mu);
    if (keep)
        show(dec->name, held, level, dropped);
    else
        free(held);
}

void reel__log_flush(reel_decoder *dec, int keep)
{
    /* every decode call ends here: nothing held (the rule) costs no lock */
    if (atomic_load_explicit(&dec->log_held, memory_order_relaxed)) release(dec, 0, keep);
}

void reel__log_unregister(reel_decoder *dec)
{
    release(dec, 1, 1);
}

void reel__log_opening(const reel_decoder *dec)
{
    tl_opening = dec;
}

void reel__log_mark(reel_decoder *dec)
{
    dec->log_seen = atomic_load_explicit(&dec->log_errors, memory_order_relaxed);
}

int reel__log_errors_since_mark(const reel_decoder *dec)
{
    return atomic_load_explicit(&((reel_decoder *)dec)->log_errors, memory_order_relaxed) != dec->log_seen;
}

int reel__log_register_named(const void *owner, const char *name)
{
    pthread_once(&g_once, install);
    pthread_mutex_lock(&g_mu);
    const int ok = room((void **)&g_named, &g_named_cap, g_named_n, sizeof *g_named);
    if (ok) g_named[g_named_n++] = (named){ .owner = owner, .name = name };
    pthread_mutex_unlock(&g_mu);
    return ok ? 0 : -1;
}

void reel__log_unregister_named(const void *owner)
{
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_named_n; i++)
        if (g_named[i].owner == owner) {
            g_named[i] = g_named[--g_named_n];
            break;
        }
    pthread_mutex_unlock(&g_mu);
}
