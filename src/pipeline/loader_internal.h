/* loader_internal.h: the loader's private state shared by its files, which
 * call each other one way (check_layers.py, check 7): loader.c (settings,
 * create/destroy, the consumer side) -> loader_resume.c (position, state,
 * checkpoints, restore) -> loader_feed.c (the feeder, starting and stopping
 * the threads) -> loader_stages.c (the stage workers, the error policy, the
 * watchdog) -> loader_vary.c (variable shapes: each sample's length and
 * size, their decode split and collate); loader_metrics.c (metrics, trace,
 * failures) reads the state and calls none of them. */
#ifndef REEL_PIPELINE_LOADER_INTERNAL_H
#define REEL_PIPELINE_LOADER_INTERNAL_H

#include "reel/pipeline.h"
#include "cuda/device.h"
#include "pipeline/dataset_internal.h"
#include "pipeline/metrics.h"
#include "pipeline/plan.h"
#include "pipeline/queue.h"
#include "pipeline/ring.h"
#include "pipeline/rng.h"
#include "pipeline/source.h"
#include "pipeline/trace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct stage {
    const char *name;
    char abandoned_label[32]; /* "<name> (abandoned)" for the trace */
    int threads;
    reel_queue q; /* input queue */
    pthread_t *tids;
    int started; /* threads running */
    int track0;  /* first trace track */
    _Atomic int64_t busy_ns;
    _Atomic int64_t items;
} stage;

typedef struct worker {
    struct reel_loader *l;
    int id; /* within its stage */
    int track;
    void *tls; /* the source's per-thread state */
    /* On a GPU with a per-sample time limit: the decode worker's device
     * buffer for one clip (grown), copied into the row under the slot's lock */
    struct reel_device_buffer *scratch;
    /* On a GPU over a source of host pixels (a packed store's records): the
     * decode worker's host staging for one sample's rows (grown; pinned
     * when a CUDA runtime gives it), uploaded into the batch (loader_gpu.c) */
    uint8_t *staging;
    size_t staging_cap;
    int staging_pinned;
    /* On a GPU, a decode worker's device (opened at create, closed at
     * destroy): its one stream, upload staging and pool, lent to the
     * decoders of the samples it decodes; NULL elsewhere */
    struct reel__cuda *cuda;
} worker;

struct reel_loader {
    reel_loader_settings s;
    reel_dataset *ds;
    reel_source src; /* videos or store records, local or at URLs: chosen once, never branched on */
    /* A fixed-shape batch's clip: its output size, its frames and the clips
     * of one sample (variable shapes: the transform's size, if fixed). */
    int clip_width, clip_height, frames_per_clip, clips_per_sample;
    size_t element_bytes; /* bytes per output element (the transform's dtype) */
    int channels;         /* channels per output pixel (the transform's color) */
    /* Variable shapes: samples of their own frame count (the fps sampler)
     * and/or size (sizes_vary: a pixel-budget size policy); clips_per_sample
     * is 1. One sampler and one size policy decide both, in stage 1. */
    int shapes_vary, sizes_vary;
    reel_audio_settings audio; /* settings.audio as the decode takes it (reel__loader_audio_settings) */

    reel_plan plan; /* feeder's */
    reel_ring ring;

    stage st[REEL_STAGE_COUNT];
    worker *workers; /* all stage workers */
    pthread_t feeder;
    int feeder_started;
    pthread_t watchdog; /* with a time limit: abandons stuck samples */
    int watchdog_started;
    pthread_mutex_t wd_mu;
    pthread_cond_t wd_cond;
    int feeder_track, consumer_track;
    _Atomic int stop;

    /* feeder position (guarded by ring.mu) */
    int64_t feed_epoch, feed_index, feed_seq;
    int64_t feed_seen; /* samples of feed_epoch's order seen before this run's first batch of it */

    /* consumer position (consumer thread only, except restore) */
    int64_t cur_epoch;
    int64_t cur_seen;               /* samples of cur_epoch seen before its first batch here */
    int64_t cur_batches;            /* batches in cur_epoch */
    int64_t delivered;              /* batches handed out in cur_epoch */
    int64_t next_seq;               /* ordered: next sequence number */
    uint8_t *seen;                  /* unordered: delivered flags per batch of cur_epoch */
    int64_t prefix;                 /* batches [0, prefix) of cur_epoch all delivered */
    int done;                       /* all epochs handed out */
    int64_t epoch_ok, epoch_failed; /* samples of cur_epoch loaded / failed (for min_coverage) */
    int has_raised;                 /* the last reel_loader_next() raised `raised` */
    reel_failure raised;
    int64_t restore_epoch, restore_seen; /* the epoch restored mid-way, and its samples seen */
    uint64_t dataset_hash;               /* of the dataset's entries, for checkpoints */

    /* metrics */
    int64_t t_start, t_end;
    int64_t last_return; /* consumer: when next() last returned, 0: never */
    _Atomic int64_t data_ns, model_ns;
    _Atomic int64_t frames, clips, batches;
    _Atomic int64_t successes, failures, replacements;
    _Atomic int64_t frames_decoded, frames_returned;
    _Atomic int64_t frames_nvdec, frames_uploaded; /* on a GPU: frames by where they were decoded */
    _Atomic int64_t staging_bytes, upload_bytes;   /* on a GPU: host staging held, bytes uploaded from it */
    struct reel__cuda *cuda;                       /* on a GPU: the loader's device (collate's row moves) */
    reel__cuda_tally
        gpu_tally;   /* on a GPU: every device and pinned byte (ring, scratch, every device's pool and staging) */
    char device[16]; /* "cpu" or "cuda:N" (reel_batch.device) */
    _Atomic int64_t gop_split_samples;       /* variable samples decoded on several contexts */
    _Atomic int decoding;                    /* stage-2 workers inside a decode */
    _Atomic int64_t bytes_read;              /* by the source's stage 1 (store records) */
    _Atomic int64_t audio_samples, audio_ns; /* settings.audio: samples decoded, stage-2 time on them */
    _Atomic int64_t audio_corrupt_packets;   /* settings.audio: packets dropped in the clips' windows */
    pthread_mutex_t remote_mu;               /* guards remote */
    reel_remote_stats remote;                /* requests to objects at URLs, all stages */
    reel_remote_settings remote_settings;    /* a copy of *s.decoder.remote (or the defaults), with its pool
                                             (the source's own for input at URLs when it names none) */
    reel_failure_log failures_log;
    reel_trace trace;
};

/* ------------------------------------------------------------- helpers */

/* Adds a sample's remote requests to the loader's. */
static inline void reel__loader_add_remote(reel_loader *l, const reel_remote_stats *r)
{
    if (r->requests == 0 && r->failures == 0) return;
    pthread_mutex_lock(&l->remote_mu);
    reel_remote_stats_add(&l->remote, r);
    pthread_mutex_unlock(&l->remote_mu);
}

static inline int stopping(const reel_loader *l)
{
    return atomic_load_explicit(&((reel_loader *)l)->stop, memory_order_acquire);
}

static inline int epoch_in_range(const reel_loader *l, int64_t epoch)
{
    /* epoch - first_epoch: both in [0, REEL_EPOCH_MAX], so no overflow */
    return epoch < REEL_EPOCH_MAX && (l->s.epochs <= 0 || epoch - l->s.first_epoch < l->s.epochs);
}

static inline const reel_dataset_entry *sample_entry(const reel_loader *l, int64_t sample)
{
    return &l->ds->items[sample];
}

/* The sample's name in messages, failure records and the trace (a URL
 * redacted, once, when its entry was made). */
static inline const char *sample_name(const reel_loader *l, int64_t sample)
{
    return reel__entry_name(sample_entry(l, sample));
}

static inline int64_t batches_in_epoch(const reel_loader *l, int64_t epoch)
{
    return reel__plan_batches(&l->plan, epoch == l->restore_epoch ? l->restore_seen : 0);
}

/* loader_stages.c */

/* A slot is done (success or final failure); the last one of its batch
 * hands the batch to the collate stage. */
void reel__loader_slot_finish(reel_loader *l, reel_slot *s);
/* Frees the source's per-sample state of a slot. */
void reel__loader_slot_close(reel_loader *l, reel_slot *s);
/* Names the calling thread ("reel-decode-3"; id < 0: "reel-<name>"). */
void reel__loader_name_thread(const char *stage_name, int id);
/* Thread mains: the three stage workers take a worker*, the watchdog the loader. */
void *reel__loader_open_main(void *arg);
void *reel__loader_decode_main(void *arg);
void *reel__loader_collate_main(void *arg);
void *reel__loader_watchdog_main(void *arg);

/* loader_vary.c */

/* Stage 1 of a variable batch: the sample's frame count (the sampler's
 * describe), its output size (the size policy, on the display size), the
 * slot's buffers reserved, then its frame indices. */
int reel__loader_vary_sample(reel_loader *l, reel_slot *s, const reel_source_info *info, const reel_rng_key *key,
                             reel_error *e);
/* A presampled sample (reel_source_info.presampled): its n stored frames,
 * all of them, as positions 0..n-1 (n must be what the sampler gives). */
int reel__loader_take_all(const reel_source_info *info, int64_t *out, size_t n, reel_error *e);
/* The clip transform of a slot: the loader's, with the slot's output size
 * when sizes vary. */
void reel__loader_slot_transform(const reel_loader *l, const reel_slot *s, reel_clip_transform *ct);
/* Stage 3 of a variable batch: compacts its rows, and with settings.pad
 * copies them into one zero-padded tensor. */
void reel__loader_collate_variable(reel_loader *l, reel_batchbuf *bb);
/* Stage 2 of a variable sample: decoder contexts to split it over (1: the
 * usual visitor path), by the decode threads that would otherwise idle. */
int reel__loader_vary_contexts(reel_loader *l, const reel_slot *s);
/* Stage 2 of a variable sample on `contexts` >= 2 decoder contexts: the
 * source's dense GOP-parallel decode straight into the slot's buffer. */
int reel__loader_vary_decode_split(reel_loader *l, worker *w, reel_slot *s, int contexts, reel_source_stats *stats,
                                   reel_error *e);

/* loader_gpu.c (decoder.device "cuda[:N]") */

/* At create: the device for the ring's buffers (*out), or the CPU (*out
 * NULL, device cleared) for "cpu" or, with device_fallback "cpu", a device
 * that cannot serve; REEL_E_CUDA naming the cause otherwise, and naming
 * what the GPU Loader does not do yet (padding variable batches). */
int reel__loader_gpu_open(reel_loader_settings *s, const reel_source *src, int variable, struct reel__cuda **out,
                          reel_error *err);
/* Stage 2 on a GPU: the sample's clips decoded and converted by the source
 * straight into their rows of the batch in device memory (variable
 * batches: into the sample's own device buffer). */
int reel__loader_gpu_decode(reel_loader *l, worker *w, reel_slot *s, reel_source_stats *stats, reel_error *e);
/* A decode worker's clip buffer (sample_time_limit), freed when it ends. */
void reel__loader_gpu_worker_free(worker *w);
/* At create, after the ring: each decode worker's device (one stream, one
 * primary-context retain, one module load each) and the ring's bytes in
 * the tally; REEL_E_CUDA naming the cause. */
int reel__loader_gpu_workers_open(reel_loader *l, reel_error *err);
/* At destroy, after the threads: the workers' devices closed. */
void reel__loader_gpu_workers_close(reel_loader *l);
/* Stage 3 on a GPU: row `from` of the batch at base copied to row `to`. */
int reel__loader_gpu_move_row(reel_loader *l, void *base, int64_t to, int64_t from, size_t row_bytes, reel_error *e);
/* loader_gpu.c: a source of host pixels (no decode_dense: a packed
 * store's records) on a GPU. Stage 2 converts its frames on the CPU with
 * the loader's visitor, exactly as the CPU Loader does, into the worker's
 * host staging (one sample's rows, laid out as in the batch), then uploads
 * them into the sample's rows in device memory. */

/* *host: the worker's staging of at least `bytes` (grown, pinned if cheap). */
int reel__loader_gpu_staging(reel_loader *l, worker *w, size_t bytes, uint8_t **host, reel_error *e);
/* The staged rows (bytes) uploaded into the slot's rows of the batch, under
 * the slot's lock unless the watchdog abandoned the sample meanwhile. */
int reel__loader_gpu_upload(reel_loader *l, worker *w, reel_slot *s, const uint8_t *host, size_t bytes, reel_error *e);
/* A decode worker's staging, freed when it ends. */
void reel__loader_gpu_staging_free(worker *w);
/* The GPU counters into the metrics (zeros on the CPU). */
void reel__loader_gpu_metrics(const reel_loader *l, reel_loader_metrics *m);
/* Frames requested for a slot: clips_per_sample * frames_per_clip, or the
 * sample's own count. */
static inline size_t slot_frames(const reel_loader *l, const reel_slot *s)
{
    return l->shapes_vary ? (size_t)s->num_frames : (size_t)l->clips_per_sample * (size_t)l->frames_per_clip;
}

/* loader_audio.c (settings.audio) */

/* Refuses, by name, audio settings the loader cannot serve. */
int reel__loader_audio_check(const reel_loader_audio *a, reel_error *err);
/* The loader's audio as reel_audio_open takes it (a damaged packet: the
 * decoder's corrupt policy, `policy`). */
void reel__loader_audio_settings(const reel_loader_audio *a, reel_corrupt_policy policy, reel_audio_settings *out);
/* Stage 1, after sampling: each clip's window [min p_i, max(p_i + d_i)) of
 * its frames' table entries, into s->audio_win. */
int reel__loader_audio_windows(const reel_loader *l, reel_slot *s, const reel_source_info *info, reel_error *e);
/* Stage 2, after the frames: each clip's samples through the source's
 * `audio` op into the slot's buffer, and its row's audio fields. */
int reel__loader_audio_decode(reel_loader *l, worker *w, reel_slot *s, reel_error *e);
/* Stage 3, after the rows are compacted: the batch's audio fields, and its
 * zero-padded plane (fixed batches, or variable ones with pad). */
int reel__loader_audio_collate(reel_loader *l, reel_batchbuf *bb);

/* loader_resume.c */

/* Positions feeder and consumer at `epoch` with `seen` samples of its order
 * consumed. Threads stopped. */
void reel__loader_set_position(reel_loader *l, int64_t epoch, int64_t seen);

/* loader_feed.c */

/* Starts the stage threads, the feeder and (with a time limit) the watchdog. */
int reel__loader_start_threads(reel_loader *l, reel_error *err);
/* Stops and joins every thread and drains what was in flight. */
void reel__loader_stop_threads(reel_loader *l);

#endif
