/* source.h: the loader's input seam. A source turns a dataset entry into
 * frames in two steps that run in the loader's two work stages: `open`
 * (stage 1: open and index a video, or read a store record's bytes) gives
 * the frame table the samplers need and may fetch what the sampled frames
 * need; `decode` (stage 2) hands those frames to the loader's visitor as
 * reel_frame, which the loader converts straight into the batch slot.
 * Video files (local, or remote through the decoder's I/O) and packed-store
 * records sit behind this one interface, so samplers, transforms, the ring,
 * sharding, resume, the error policy and the metrics never branch on the
 * kind of input. The source is chosen once per dataset. */
#ifndef REEL_PIPELINE_SOURCE_H
#define REEL_PIPELINE_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "core/frame.h"
#include "reel/pipeline.h"

/* What stage 1 learns about a sample, for the samplers and the converter:
 * the frame-table view (its table owned by the sample handle, its segment
 * the part to sample, end < 0: to the end) and the rotation. */
typedef struct reel_source_info {
    reel_sampler_video video;
    int rotation; /* clockwise degrees still to apply (0..359) */
} reel_source_info;

/* Per-sample options from the loader. */
typedef struct reel_source_open {
    int decoder_threads;
    int index_mode;
    int corrupt_policy;
    int (*interrupt)(void *opaque); /* shutdown or the watchdog: stop at the next packet or read */
    void *interrupt_opaque;
    const reel_remote_settings *remote; /* for objects at URLs; NULL: defaults */
    reel_remote_stats *tally;           /* the sample's requests, added when its objects close */
} reel_source_open;

/* Work counted by a source for the metrics. */
typedef struct reel_source_stats {
    int64_t frames_decoded, frames_returned;
    int64_t bytes_read;
    reel_remote_stats remote; /* stage 1 (prepare): requests of objects that stay open across samples (store shards) */
} reel_source_stats;

typedef struct reel_source_ops {
    const char *kind;           /* "video", "store" */
    const char *stage_names[2]; /* what stages 1 and 2 do, for metrics and the trace */
    /* Per worker thread state (either may be NULL). */
    int (*thread_init)(void *ctx, const reel_source_open *o, void **tls, reel_error *err);
    void (*thread_free)(void *ctx, void *tls);
    /* Stage 1: *handle owns what the sample keeps until close. */
    int (*open)(void *ctx, void *tls, const reel_dataset *ds, int64_t sample, const reel_source_open *o, void **handle,
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
    /* Optional (NULL: none): the dataset's read blocks, runs of samples
     * stored together (a store's shards), for the default shuffle, which
     * then goes block by block (blocks in a shuffled order, each shuffled
     * within) so reads stay sequential. *starts (free()) gets nblocks + 1
     * entries, from 0 to the dataset size; *nblocks 0: no blocks. */
    int (*blocks)(void *ctx, const reel_dataset *ds, int64_t **starts, size_t *nblocks, reel_error *err);
} reel_source_ops;

extern const reel_source_ops reel__source_video;
extern const reel_source_ops reel__source_store;
/* The same over http(s)/s3, with stage 1 named "fetch" in the metrics and trace. */
extern const reel_source_ops reel__source_video_remote;
extern const reel_source_ops reel__source_store_remote;

/* The source of a dataset, and its context. */
const reel_source_ops *reel__source_of(const reel_dataset *ds, void **ctx);

#endif
