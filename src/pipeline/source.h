/* source.h: the loader's input seam. A source turns a dataset entry into
 * frames in two steps that run in the loader's two work stages: `open`
 * (stage 1: open and index a video, or read a store record's bytes) gives
 * the frame table the samplers need and may fetch what the sampled frames
 * need; `decode` (stage 2) hands those frames to the loader's visitor as
 * reel_frame, which the loader converts straight into the batch slot.
 * Video files (local, or remote through the decoder's I/O) and packed-store
 * records sit behind this one interface, so samplers, transforms, the ring,
 * sharding, resume, the error policy and the metrics never branch on the
 * kind of input, and never on whether it is remote: a source gets its
 * entry, which carries that answer and its redacted name, and reel_source
 * (source.c) is the one place that reads the dataset to pick the source,
 * name its stages and size stage 1. */
#ifndef REEL_PIPELINE_SOURCE_H
#define REEL_PIPELINE_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "core/frame.h"
#include "pipeline/entry.h"
#include "reel/audio.h"
#include "reel/pipeline.h"
#include "reel/store.h"

/* What stage 1 learns about a sample, for the samplers and the converter:
 * the frame-table view (its table owned by the sample handle, its segment
 * the part to sample, end < 0: to the end) and the rotation. */
typedef struct reel_source_info {
    reel_sampler_video video;
    int rotation;      /* clockwise degrees still to apply (0..359) */
    int width, height; /* the pictures' size before that rotation */
    /* 1: the frames are already the loader's whole-video sampler's choice
     * (a store packed with the same sampler): the sample takes them all */
    int presampled;
} reel_source_info;

/* Per-sample options from the loader: its decoder settings as they are
 * (reel_loader_settings.decoder, checked; .remote for every object at a
 * URL, store shards too), and what is the sample's own. */
typedef struct reel_source_open {
    const reel_decoder_settings *decoder; /* the loader's; borrowed */
    int (*interrupt)(void *opaque);       /* shutdown or the watchdog: stop at the next packet or read */
    void *interrupt_opaque;
    reel_remote_stats *tally; /* the sample's requests, added when its objects close; NULL: in thread_init */
    /* A GPU loader's device (NULL on the CPU): in `open`, the loader's (its
     * decoders share its primary context and open no device of their own);
     * in thread_init, a decode worker's own, lent to the decoders it runs
     * (decode_dense: one stream per worker). */
    struct reel__cuda *device;
    /* The loader's audio as the decode takes it (reel__loader_audio_settings);
     * NULL: no audio. With it, `open` also opens the sample's audio (a video
     * without, under REEL_AUDIO_MISSING_RAISE, fails there), kept with the
     * sample until close, for the `audio` op. */
    const reel_audio_settings *audio;
} reel_source_open;

/* Work counted by a source for the metrics. */
typedef struct reel_source_stats {
    int64_t frames_decoded, frames_returned;
    int64_t frames_nvdec, frames_uploaded; /* a GPU decoder's frames by where they were decoded */
    int64_t bytes_read;
    reel_remote_stats remote; /* stage 1 (prepare): requests of objects that stay open across samples (store shards) */
} reel_source_stats;

typedef struct reel_source_ops {
    const char *kind;           /* "video", "store" */
    const char *stage_names[2]; /* what stages 1 and 2 do, for metrics and the trace (over
                                   URLs stage 1 is named "fetch", see reel_source) */
    /* Per worker thread state (either may be NULL). */
    int (*thread_init)(void *ctx, const reel_source_open *o, void **tls, reel_error *err);
    void (*thread_free)(void *ctx, void *tls);
    /* Stage 1: *handle owns what the sample keeps until close. */
    int (*open)(void *ctx, void *tls, const reel_dataset_entry *entry, const reel_source_open *o, void **handle,
                reel_source_info *info, reel_error *err);
    /* Stage 1, after sampling: fetch what decoding `indices` needs (may be NULL). */
    int (*prepare)(void *ctx, void *tls, void *handle, const int64_t *indices, size_t n, reel_source_stats *st,
                   reel_error *err);
    /* Stage 2: each requested position to fn, in any order. `window` (same
     * opaque) tells which part of each picture is needed; a source may
     * decode only that part and hand fn a windowed frame. */
    int (*decode)(void *ctx, void *tls, void *handle, const int64_t *indices, size_t n, reel_frame_fn fn,
                  reel__window_fn window, void *opaque, reel_source_stats *st, reel_error *err);
    void (*close)(void *ctx, void *handle);
    /* Optional (NULL: none): the read blocks of the dataset's n entries,
     * runs of samples stored together (a store's shards), for the default
     * shuffle, which then goes block by block (blocks in a shuffled order,
     * each shuffled within) so reads stay sequential. *starts (free()) gets
     * nblocks + 1 entries, from 0 to n; *nblocks 0: no blocks. */
    int (*blocks)(void *ctx, const reel_dataset_entry *entries, size_t n, int64_t **starts, size_t *nblocks,
                  reel_error *err);
    /* Stage 2, optional (NULL: none): the frames at `indices` converted by
     * `t` and written densely into dst (cap bytes): frame after frame, as
     * reel_decoder_get_frames does, or with `cthw` (t's layout CHW) channel
     * after channel, [3][n][H][W]; on up to `contexts` decoder contexts of
     * the input (GOP-parallel: its keyframe runs split over them when the
     * plan has two or more); their pts into pts[n]. */
    int (*decode_dense)(void *ctx, void *tls, void *handle, const int64_t *indices, size_t n, const reel_transform *t,
                        int cthw, void *dst, size_t cap, int contexts, int64_t *pts, reel_source_stats *st,
                        reel_error *err);
    /* Optional (NULL: accepts every setting): refuses, by name, loader
     * settings this source cannot serve as the video path would (a store's
     * frames were chosen and sized when it was packed). Called once, when
     * the loader is made, before any sample opens. */
    int (*check)(void *ctx, const reel_loader_settings *s, reel_error *err);
    /* Optional (NULL: positions are source frame indices): rewrites a
     * sample's decoded positions as source frame indices, in place (a store
     * packed with a stride keeps source frames 0, K, 2K at positions 0, 1,
     * 2), so frame indices mean the same on every source. Stage 2, after a
     * successful decode, before close. */
    int (*source_indices)(void *ctx, void *handle, int64_t *indices, size_t n, reel_error *err);
    /* Optional (NULL: no audio; `check` refuses audio settings by name):
     * stage 2, the audio played over [t0, t1) x num/den seconds of the
     * sample's timeline (its frame table's), reel_audio_get_samples' samples:
     * float32 [*channels, w->num_samples] into dst (cap floats), or with dst
     * NULL only where the window sits (w, *channels), without decoding;
 * *channels 0: the video has no audio and zeros were asked for (the loader
 * writes them at its channel count, valid empty). Called
     * only for a sample opened with reel_source_open.audio. */
    int (*audio)(void *ctx, void *tls, void *handle, int64_t t0, int64_t t1, int num, int den, float *dst, size_t cap,
                 reel_audio_window *w, int *channels, reel_error *err);
} reel_source_ops;

extern const reel_source_ops reel__source_video;
extern const reel_source_ops reel__source_store;

/* The store source's context: the store and its name for messages. */
typedef struct reel_source_store_ctx {
    reel_store *store;
    const char *name; /* the folder, or the URL redacted */
    int presampled;   /* set by check: the records hold the loader's whole-video sampler's frames */
} reel_source_store_ctx;

/* A loader's source: the ops for its dataset, their context, and what
 * stage 1 is (named "fetch" and given more threads than cores when it
 * mostly waits on the network). Owns the connection pool it makes for
 * input at URLs when the remote settings name none. */
typedef struct reel_source {
    const reel_source_ops *ops;
    void *ctx;
    reel_source_store_ctx store;
    const char *stage_names[2];
    reel_remote_pool *own_pool;
    int network; /* stage 1 waits on requests (input at URLs) */
} reel_source;

/* Picks the source of `ds`. `remote` is the loader's copy of the remote
 * settings: for input at URLs without a pool, a shared one (connections,
 * DNS and TLS sessions, the budget of bytes fetched ahead) is made and set
 * in it. Free with reel__source_free. */
int reel__source_init(reel_source *src, const reel_dataset *ds, reel_remote_settings *remote, reel_error *err);
void reel__source_free(reel_source *src);

/* The automatic stage-1 thread count on `cores` cores: a quarter of them
 * for local input; over URLs, where it waits on the network, not the CPU,
 * twice as many as cores (at least 8) keep requests in flight. */
int reel__source_open_threads(const reel_source *src, int cores);

#endif
