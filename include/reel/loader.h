/* reel/loader.h: the batch loader. A dataset of videos, per-video clip
 * samplers, transforms fused into the colour conversion, and a multi-threaded
 * pipeline (open+index -> decode+transform -> collate) that fills a ring of
 * preallocated, aligned batch buffers with no copy in between.
 *
 *   reel_dataset *ds;  reel_loader *l;  reel_batch *b;  reel_error err;
 *   reel_dataset_create_from_path(&ds, "kinetics/train", &err);     // or a .csv/.tsv/.jsonl
 *   reel_loader_settings s;
 *   reel_loader_default_settings(&s);                   // 8 frames, 224x224, batch 32
 *   s.transform.crop = REEL_CROP_RANDOM;  s.transform.flip = REEL_FLIP_RANDOM;
 *   s.epochs = 10;  s.seed = 42;
 *   reel_loader_create(&l, ds, &s, &err);
 *   for (int e = 0; e < 10; e++)
 *       while (reel_loader_next(l, &b, &err) == REEL_OK && b) {   // NULL: epoch over
 *           train_step(b->data, b->shape, b->labels);
 *           reel_loader_release(l, b);                            // any thread
 *       }
 *   reel_loader_destroy(&l);  reel_dataset_destroy(&ds);
 *
 * Determinism: every random choice (shuffle, clip starts, crops, flips,
 * replacements) is a counter-based function of (seed, epoch, sample, draw),
 * so in ordered mode the batches do not depend on thread counts, timing or
 * where a run was resumed.
 *
 * Elastic resume: the epoch's order and each rank's stripe of it are those
 * of reel/order.h. reel_loader_get_checkpoint() saves the global number of
 * samples consumed (the same on every rank of a synchronous job);
 * reel_loader_restore_checkpoint() continues the epoch on any rank, world
 * size, batch size, thread count or worker count. */
#ifndef REEL_LOADER_H
#define REEL_LOADER_H

#include "common.h"
#include "audio.h"
#include "convert.h"
#include "decoder.h"
#include "dataset.h"
#include "sampler.h"
#include "io.h"
#include "order.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Transforms, fused into the conversion
 * ====================================================================== */

/** How the frame is resized before the crop. */
typedef enum reel_resize_kind {
    REEL_RESIZE_KEEP = 0,       /**< no resize */
    REEL_RESIZE_SHORT_SIDE = 1, /**< short side to `short_side`, aspect kept (long side floored) */
    REEL_RESIZE_EXACT = 2       /**< to resize_width x resize_height */
} reel_resize_kind;

typedef enum reel_crop_kind {
    REEL_CROP_NONE = 0,
    REEL_CROP_CENTER = 1,
    REEL_CROP_RANDOM = 2,
    REEL_CROP_RANDOM_RESIZED = 3 /**< torchvision RandomResizedCrop on the source
                                       frame (the resize settings are ignored) */
} reel_crop_kind;

typedef enum reel_flip_kind {
    REEL_FLIP_NONE = 0,
    REEL_FLIP_ALWAYS = 1,
    REEL_FLIP_RANDOM = 2 /**< with probability flip_probability, per clip */
} reel_flip_kind;

/** Memory layout of a batch. T = frames per clip. */
typedef enum reel_batch_layout { REEL_BATCH_BTCHW = 0, REEL_BATCH_BCTHW = 1, REEL_BATCH_BTHWC = 2 } reel_batch_layout;

/** What each clip becomes. All of it runs inside one conversion per frame:
 *  resize and crop are mapped back to a crop of the source, so full
 *  resolution RGB is never built when the output is smaller. Random choices
 *  (crop position, scale, ratio, flip) are made once per clip. The output
 *  size must be fixed: a crop, or an exact resize. */
typedef struct reel_clip_transform {
    reel_resize_kind resize;         /**< reel_resize_kind; default SHORT_SIDE */
    int short_side;                  /**< default 256 */
    int resize_width, resize_height; /**< for REEL_RESIZE_EXACT */
    reel_crop_kind crop;             /**< reel_crop_kind; default CENTER */
    int crop_width, crop_height;     /**< default 224 x 224 */
    double scale_min, scale_max;     /**< RANDOM_RESIZED area fraction; default 0.08, 1 */
    double ratio_min, ratio_max;     /**< RANDOM_RESIZED aspect range; default 3/4, 4/3 */
    reel_flip_kind flip;             /**< reel_flip_kind; default NONE */
    double flip_probability;         /**< default 0.5 */
    reel_pixel_settings pixels;      /**< filter, convert path, rotation, dtype, normalisation
                                          (reel_pixel_default_settings; the convert path is where
                                          the resize runs, `resize` above is what it is) */
    reel_batch_layout layout;        /**< reel_batch_layout; default BTCHW */
    uint8_t reserved[64];            /**< zero; room to grow (common.h) */
} reel_clip_transform;

/* ======================================================================
 * Loader
 * ====================================================================== */

typedef enum reel_error_policy {
    REEL_ON_ERROR_SKIP = 0,    /**< drop the sample; its batch is shorter */
    REEL_ON_ERROR_REPLACE = 1, /**< decode another (deterministically chosen) sample in its place */
    REEL_ON_ERROR_RAISE = 2    /**< reel_loader_next() returns the sample's error for its batch */
} reel_error_policy;

/** A failure record: the video, why, and where it was in the epoch. */
typedef struct reel_failure {
    char path[1024];
    char reason[REEL_ERROR_MSG_SIZE]; /**< "<path>: <reason>" */
    reel_status status;
    int64_t epoch;
    int64_t position;
    int64_t sample;
    uint8_t reserved[32]; /**< zero; room to grow (common.h) */
} reel_failure;

/** reel_loader_settings.audio: each clip's audio, the samples played over
 *  its frames, by reel/audio.h's contract: the window [t0, t1) = [min p_i,
 *  max(p_i + d_i)) of the clip's frames in the video's frame table, samples
 *  s(t0) .. s(t1) - 1 on the grid anchored at the audio's first sample, so
 *  adjacent clips tile the stream. A batch holds one rate and one channel
 *  count, so both are required. A damaged audio packet follows
 *  decoder.corrupt_policy: FAIL fails the sample (on_error decides), SKIP
 *  delivers it with the packet's samples zeros, its valid range narrowed
 *  and the damage in reel_clip_info.audio_missing (reel/audio.h). The
 *  by-name fields are "audio.enabled", "audio.sample_rate", ...
 *  (reel_loader_settings_get_fields). */
typedef struct reel_loader_audio {
    int enabled;     /**< 1: every clip carries its audio (reel_batch.audio); default 0 */
    int sample_rate; /**< Hz (1..1,000,000), required with enabled: each video's audio resampled to it
                          (libswresample, none where it is the video's own) */
    /** Required with enabled: 1 (the mean of a video's channels) or 2..64
     *  (each video's own channels, which must be that many: a video with
     *  another count fails with REEL_E_INVALID_ARG naming both, under the
     *  error policy). reel_audio_settings.channels is what the decode takes
     *  (0: the stream's own, 1: the mean); this is what the batch holds. */
    int channels;
    int stream_index; /**< absolute stream index; -1 (default): the best audio stream */
    /** A video without audio: RAISE (default) fails its sample with
     *  REEL_E_NO_AUDIO_STREAM under on_error; ZEROS gives zeros (an empty
     *  valid range). */
    reel_audio_missing missing;
    uint8_t reserved[28]; /**< zero (the defaults function clears it); room to grow */
} reel_loader_audio;

/** Loader settings. Initialise with reel_loader_default_settings(). */
/** reel_loader_settings.shuffle_window: a full shuffle, also over a store. */
#define REEL_SHUFFLE_WINDOW_FULL (-1)

typedef struct reel_loader_settings {
    reel_sampler_settings sampler;
    reel_clip_transform transform;
    /** How each video is opened and decoded: reel_decoder_settings, with the
     *  decoder's own meaning and checks (a value the decoder refuses, the
     *  loader refuses when it is made, naming "decoder.<field>"). The
     *  loader's own defaults, where its workers own the cores: threads 1,
     *  index_mode REEL_INDEX_READ, gop_contexts 0; the others are the
     *  decoder's (gop_split, not gop_contexts, splits a sample's keyframe
     *  runs over idle workers). threads is the FFmpeg threads inside each
     *  decoder (decode_threads is the loader's pool). decoder.remote also
     *  serves a packed store's shards at URLs. The loader sets the
     *  per-sample fields itself: index_path, interrupt, interrupt_opaque and
     *  remote_stats must stay NULL (each video has its own sidecar; a
     *  sample's cancellation and requests are the loader's, see
     *  sample_time_limit and the metrics). */
    reel_decoder_settings decoder;

    int batch_size;             /**< videos per batch; default 32. A batch holds
                                     batch_size * clips_per_video clips */
    int drop_last;              /**< drop a last, partial batch; default 0 */
    int shuffle;                /**< shuffle every epoch; default 1 */
    uint64_t seed;              /**< drives shuffle, samplers, crops, flips, replacement; default 0 */
    int64_t epochs;             /**< epochs to run; 0: no limit; default 1 */
    int rank, world_size;       /**< sharding: batches are stripes of one global order (reel/order.h); default 0, 1 */
    reel_shard_mode shard_mode; /**< reel_shard_mode, on the epoch's remainder; default PAD */
    int ordered;                /**< 1 (default): batches in sampler order,
                                     deterministic; 0: as they are ready */
    reel_error_policy on_error; /**< reel_error_policy; default SKIP */
    int max_replacements;       /**< REPLACE: tries per sample before it is skipped; default 16 */
    /** Seconds of work per sample (open + decode); 0: none (default). Past
     *  it, a sample fails with REEL_E_TIMEOUT at its next frame; one still
     *  inside the decoder a grace later (limit/4, at least 20 ms) is
     *  abandoned by a watchdog so its batch goes on without it (never
     *  replaced); its decoder is interrupted at the next packet or read
     *  (reel_decoder_settings.interrupt) and its thread rejoins the pool. */
    double sample_time_limit;

    int open_threads;     /**< stage 1 (open and index); 0: cores/4, at least 1 */
    int decode_threads;   /**< stage 2 (decode and transform); 0: cores */
    int collate_threads;  /**< stage 3 (collate); 0: 1 */
    int prefetch_batches; /**< batch buffers in the ring; 0: 2 + ceil(decode_threads / batch_size) */
    int queue_capacity;   /**< bound of each stage's input queue; 0: auto */
    size_t alignment;     /**< batch buffer alignment in bytes (power of two); default 4096 (0: the default) */

    int trace;          /**< record per-thread events for reel_loader_write_trace; default 0 */
    int trace_capacity; /**< events kept per thread (newest win); default 16384 */

    /** 1: page-locked (pinned) batch buffers, for asynchronous copies to a
     *  GPU straight from the ring (variable batches: each sample's buffer
     *  and the padded batch, as they are allocated). They come from cudaHostAlloc in the CUDA
     *  runtime found at run time (dlopen: $REEL_CUDART if set, else
     *  libcudart.so, .so.13, .so.12, .so.11.0, preferring one already
     *  loaded; REEL_CUDART=none: never); libreel has no CUDA dependency.
     *  Without a runtime, driver or device, or when the allocation fails,
     *  the buffers are plain aligned memory, as with 0;
     *  reel_loader_metrics.ring_memory says which. A GPU copy from a
     *  pinned buffer may run after the call that started it returns: keep
     *  the batch until the copy is done before releasing it. Default 0. */
    int pin_memory;

    /** Coverage below which an epoch ends with REEL_E_NO_DATA (0..1; the
     *  share of a epoch's samples that loaded); 0 (default): off. An epoch
     *  in which no sample loaded always ends with REEL_E_NO_DATA. */
    double min_coverage;
    /** Failures kept for reel_loader_get_failure() and the metrics: the most
     *  recent ones; counts per cause cover the whole run. Default 1000. */
    int failure_log_size;
    /** Called once for every failure (any stage thread, serialised), for a
     *  caller who wants them all. NULL: none. */
    void (*on_failure)(void *opaque, const reel_failure *failure);
    void *on_failure_opaque; /**< passed to on_failure; borrowed (common.h) */
    /** Shuffle order suited to sequential reads (FFCV's quasi-random order).
     *  0 (default): a packed store is read shard by shard: its shards in a
     *  shuffled order, the records of each shuffled within it, so an epoch
     *  reads each shard once, as one window; videos get a full shuffle.
     *  REEL_SHUFFLE_WINDOW_FULL (-1): a full shuffle, stores included.
     *  W > 0: the dataset order (a store's record order) is cut into blocks
     *  of W consecutive samples, the blocks are taken in a shuffled order
     *  and the samples within each block are shuffled, so the reads of an
     *  epoch move through the store W records at a time. Larger W: more
     *  random, less sequential; W >= the dataset size is a full shuffle.
     *  Deterministic from (seed, epoch) like every shuffle; sharding, resume
     *  and drop_last/padding apply to it unchanged. Ignored without shuffle. */
    int64_t shuffle_window;
    /** The canonical layout of the order (reel/order.h): spans and the
     *  samples taken from each in turn. 0 (default): this run's world_size
     *  and batch_size. A restored checkpoint brings its own. */
    int canonical_ranks, canonical_batch;
    /** DataLoader workers of this rank and this one (the stripe of worker w
     *  is that of rank w * world_size + rank of world_size * num_workers, so
     *  round-robin over the workers gives the batches of a run without
     *  them); default 0 (one), 0. */
    int num_workers, worker;
    /** Decode exactly these dataset indices, in this order, as each epoch
     *  (duplicates allowed), instead of the whole dataset: for a caller that
     *  plans the work itself, e.g. a Ray read task given a run of entries.
     *  shuffle and shuffle_window do not apply to the list; rank/world_size
     *  stripe it as they would the dataset. Every random choice stays a
     *  function of (seed, epoch, sample), so a sample's clips, crops and
     *  flips equal those a whole-dataset loader gives it in the same epoch.
     *  Copied by reel_loader_create; each index must be in [0, dataset
     *  size). NULL (default): the dataset. */
    const int64_t *samples;
    int64_t num_samples; /**< entries in `samples` (>= 1 when it is set) */
    /** The number of the first epoch (default 0): the loader runs epochs
     *  first_epoch, first_epoch + 1, ... (`epochs` of them), as a loader
     *  restored to the start of first_epoch would, without starting on epoch 0. */
    int64_t first_epoch;
    /** Output size. REEL_SIZE_FIXED (the default) with width and height 0:
     *  the transform's fixed size, every clip the same shape. PIXEL_BUDGET:
     *  each video gets its own output size from its display size and frame
     *  count (reel_size_policy_apply, qwen-vl-utils' sizing; needs
     *  transform.crop NONE, the transform's resize sizes are then ignored;
     *  the frame factor it takes is sampler.frame_factor). By name:
     *  "size_policy.kind", "size_policy.factor", ...
     *  (reel_loader_settings_get_fields). With it, or with the
     *  REEL_SAMPLER_FPS sampler (a frame count per video), batches are
     *  variable: see reel_loader_settings_is_variable. */
    reel_size_policy size_policy;
    /** Variable batches: 1: also collate each batch into one tensor padded
     *  with zeros to the largest clip (reel_batch.data); 0 (default): each
     *  clip only in its own buffer (reel_clip_info.data). */
    int pad;
    /** Variable batches: the ring's byte budget. A batch is planned while
     *  the batches in flight hold less, or when none is in flight (a batch
     *  larger than the budget still runs, alone). A batch still being sized
     *  counts as batch_size times the largest sample yet, and until a first
     *  sample is sized only one batch is in flight, so peak memory stays
     *  under the budget plus about two batches. 0 (default): 1 GiB.
     *  Fixed-shape batches on the CPU: ignored (prefetch_batches buffers);
     *  on a GPU (decoder.device "cuda[:N]"): the bound on the buffers'
     *  device memory, REEL_E_CUDA naming it when passed. */
    int64_t ring_bytes;
    /** Variable batches: 1 (default): when decode threads would idle (fewer
     *  samples waiting or decoding than decode_threads), a sample of video
     *  whose decode plan has two or more keyframe runs is decoded
     *  GOP-parallel on one decoder context per idle thread, straight into
     *  its buffer (metrics gop_split_samples); the frames are those of the
     *  serial decode. 0: each sample on one context. Applies to every
     *  layout of video input (BCTHW too: each context writes its frames'
     *  planes channel by channel into the sample's [C, T, H, W]); a store's
     *  records have no GOPs (every frame an image). */
    int gop_split;
    /** Each clip's audio (reel_loader_audio; off by default). Over a store
     *  packed with audio (reel_pack_settings.audio), its stored samples, the
     *  same as the video's; refused by name over a store packed without
     *  audio or with other audio settings (rate, channels, stream). */
    reel_loader_audio audio;
    uint8_t reserved[20]; /**< zero (the defaults function clears it); room to grow without an ABI break */
} reel_loader_settings;

/** Fills `s` with the defaults documented on each field (Kinetics-like:
 *  1 random clip of 8 frames per video, short side 256, centre crop 224,
 *  uint8 [B,T,C,H,W], batches of 32). */
REEL_API void reel_loader_default_settings(reel_loader_settings *s);

/** 1 if a loader with these settings gives variable batches (samples of
 *  their own frame count or size: a PIXEL_BUDGET size_policy, or a sampler
 *  whose frame count depends on the video, REEL_SAMPLER_FPS), 0 if every
 *  clip has one shape. The one place this is decided: reel_loader_create
 *  and reel_batch.variable follow it (NULL: 0). */
REEL_API int reel_loader_settings_is_variable(const reel_loader_settings *s);

/** Per-clip description of a batch row. Its pointers (path, frame_indices,
 *  pts, data) are returned (common.h): the loader's, until the batch is
 *  released. */
typedef struct reel_clip_info {
    int64_t sample;    /**< dataset index that was decoded */
    int64_t requested; /**< dataset index the sampler chose (differs after a replacement) */
    int64_t position;  /**< position of the sample in the epoch's global order (reel/order.h; >= the
                            dataset size for a padded repeat) */
    const char *path;  /**< the decoded video's path; a URL redacted as messages show it
                            (reel_url_redact): the dataset entry holds the URL as given */
    int64_t label;
    int32_t clip;                           /**< clip number within its video, 0..clips_per_video-1 */
    int32_t attempt;                        /**< 0, or the replacement try that succeeded */
    int32_t padded;                         /**< 1: a repeated sample that evens out the shards */
    int32_t flipped;                        /**< 1: mirrored */
    int32_t crop_x, crop_y, crop_w, crop_h; /**< source crop (display coordinates) actually used */
    const int64_t *frame_indices;           /**< num_frames source frame indices, in clip order (over a
                                                 store too: not record positions) */
    const int64_t *pts;                     /**< their presentation timestamps (time base below) */
    int32_t time_base_num, time_base_den;
    /** The clip's frames (num_frames of them, width x height each, in the
     *  batch's layout without its first dimension: a C-contiguous
     *  [T,C,H,W], [C,T,H,W] or [T,H,W,C] of `bytes` bytes), owned by the
     *  ring until the batch is released. For fixed-shape batches, the row
     *  of reel_batch.data; for variable ones, the clip's own buffer. */
    void *data;
    size_t bytes;
    int32_t num_frames, width, height;
    /** settings.audio.enabled: the clip's audio, float32 [channels,
     *  audio_samples] C-contiguous (reel_batch.audio_channels), the ring's
     *  until the batch is released; NULL without audio. */
    const float *audio;
    int64_t audio_samples;                  /**< s(t1) - s(t0) */
    int64_t audio_first_sample;             /**< s(t0): on the grid anchored at the audio's first sample
                                                 (negative: before it) */
    int64_t audio_valid_lo, audio_valid_hi; /**< [lo, hi) of the clip's samples that came from the stream
                                                 (the rest are zeros); lo == hi: none. Under
                                                 decoder.corrupt_policy SKIP: the longest run of
                                                 them without a missing sample (reel/audio.h) */
    /** decoder.corrupt_policy REEL_CORRUPT_SKIP: the clip's samples that
     *  stand for dropped audio packets (zeros), all in [audio_missing_lo,
     *  audio_missing_hi), and those packets (reel_audio_window's missing,
     *  missing_lo/hi, corrupt_packets); 0 without damage. */
    int64_t audio_missing, audio_missing_lo, audio_missing_hi, audio_corrupt_packets;
    /** A variable batch on a GPU (reel_batch.device "cuda:N"): the
     *  loader's device buffer at data (reel_device_buffer_wait,
     *  _download), valid while the batch is held; the loader frees it.
     *  NULL otherwise (fixed shapes: reel_batch.device_buffer). */
    struct reel_device_buffer *device_buffer;
    uint8_t reserved[24]; /**< zero; room to grow (common.h): callers index arrays of these */
} reel_clip_info;

/** A filled batch, owned by the loader until reel_loader_release(). The data
 *  is C-contiguous in `layout`; strides are in elements. shape[0] can be
 *  smaller than batch_size * clips_per_video for a last partial batch or
 *  when samples were skipped. */
typedef struct reel_batch {
    /** Fixed-shape batches: the clips. Variable batches (samples of their
     *  own length or size, reel_batch.variable): with settings.pad, the
     *  clips padded with zeros to shape[1..4] (the largest frame count,
     *  height and width in the batch); without, NULL (each clip's frames
     *  are at reel_clip_info.data), shape[1..4] still the largest. */
    void *data;
    size_t bytes;             /**< bytes of valid data: shape[0] * strides[0] * element size */
    reel_dtype dtype;         /**< reel_dtype */
    reel_batch_layout layout; /**< reel_batch_layout */
    int ndim;                 /**< 5 */
    int64_t shape[5];
    int64_t strides[5];
    int64_t num_clips;           /**< == shape[0] */
    const int64_t *labels;       /**< num_clips labels */
    const reel_clip_info *clips; /**< num_clips rows */
    int64_t epoch;
    int64_t index;       /**< batch number within the epoch (rank-local, from where this run began it) */
    int64_t position;    /**< position of its first sample in the epoch's global order */
    int64_t num_samples; /**< samples the batch was planned with */
    int64_t num_failed;  /**< of those, samples skipped after failing */
    /** Global samples of the epoch's order consumed once every rank has
     *  consumed this batch (and those before it): the checkpoint's
     *  samples_seen right after it (reel_stripe_batch.samples_seen_after). */
    int64_t samples_seen;
    int variable; /**< 1: clips may differ in frame count and size (see data;
                       reel_loader_settings_is_variable of the loader's settings) */
    /** settings.audio.enabled: the clips' audio, float32 [num_clips,
     *  audio_channels, audio_samples] C-contiguous, audio_samples the
     *  longest clip's, each row zero-padded past its clip's own
     *  (reel_clip_info.audio_samples); NULL without audio, and in a variable
     *  batch without settings.pad (each clip's is at reel_clip_info.audio). */
    float *audio;
    int audio_channels, audio_sample_rate; /**< settings.audio's (0 without audio) */
    int64_t audio_samples;                 /**< S_max */
    /** Where data is: "cpu" (host memory), or "cuda:N" (decoder.device on a
     *  GPU: data is a device address (a CUdeviceptr) on that GPU, written
     *  before the batch is handed out; labels, clips and audio stay on the
     *  host). Static for the loader's life. */
    const char *device;
    /** On a GPU: the loader's device buffer at data (reel/device_buffer.h:
     *  reel_device_buffer_wait, _download), valid while the batch is held;
     *  the loader frees it (never reel_device_buffer_free). NULL on the CPU. */
    struct reel_device_buffer *device_buffer;
} reel_batch;

/** Epochs are numbered 0 .. REEL_EPOCH_MAX - 1: an endless loader (epochs
 *  0) stops after the last one, and a checkpoint may hold REEL_EPOCH_MAX
 *  itself (every epoch consumed), so no epoch count ever overflows. */
#define REEL_EPOCH_MAX INT64_MAX

/** Version of reel_loader_checkpoint this library writes (and the newest it reads). */
#define REEL_CHECKPOINT_VERSION 2

/** The loader's resume point (its one resume API: reel_loader_get_checkpoint,
 *  reel_loader_restore_checkpoint, and the text form of
 *  reel_loader_checkpoint_format/_parse, which is Python's state_dict()):
 *  where the epoch is, as a global count, and what fixes its order. Every
 *  rank of a synchronous job (every rank having consumed as many batches)
 *  saves the same one, and it restores on any topology. Plain data. */
typedef struct reel_loader_checkpoint {
    int32_t version; /**< REEL_CHECKPOINT_VERSION */
    int64_t epoch;
    int64_t samples_seen; /**< global samples of the epoch's order consumed, 0..num_samples */
    uint64_t seed;
    int32_t canonical_ranks; /**< the order's canonical layout */
    int32_t canonical_batch;
    int32_t shuffle; /**< the order's shuffle settings */
    int64_t shuffle_window;
    int64_t num_samples; /**< the dataset: its size and a hash of its entries */
    uint64_t dataset_hash;
    int32_t world_size; /**< the topology it was saved under (informative) */
    int32_t batch_size;
    int32_t num_workers;
    uint8_t reserved[32]; /**< zero; room to grow (common.h) */
} reel_loader_checkpoint;


/** Pipeline stages, for metrics (reel_loader_metrics.stages[stage]). */
typedef enum reel_stage {
    REEL_STAGE_OPEN = 0,
    REEL_STAGE_DECODE = 1,
    REEL_STAGE_COLLATE = 2,
    REEL_STAGE_COUNT = 3
} reel_stage;

typedef struct reel_stage_metrics {
    /** The source's stage names: "open" (videos), "read" (stores) or
     *  "fetch" (either at URLs); "decode" or "image decode"; "collate".
     *  Static (common.h). */
    const char *name;
    int threads;
    double busy_fraction; /**< busy thread-seconds / (threads x seconds) */
    double busy_seconds;
    int64_t items;          /**< tasks finished */
    int64_t queue_depth;    /**< input queue depth now */
    double queue_depth_avg; /**< time-averaged input queue depth */
    int64_t queue_capacity;
    uint8_t reserved[32]; /**< zero; room to grow (common.h) */
} reel_stage_metrics;

typedef struct reel_loader_metrics {
    double seconds; /**< wall time since start (or restore), stopped at the last epoch's end */
    int64_t frames; /**< frames delivered in batches */
    int64_t clips;  /**< clips delivered */
    int64_t batches;
    double frames_per_second, clips_per_second;
    int64_t attempts; /**< samples tried (replacements included) */
    int64_t successes;
    int64_t failures;
    int64_t replacements;
    double coverage;         /**< successes / attempts (1 when nothing was tried) */
    int64_t frames_decoded;  /**< by the codec, wanted or not */
    int64_t frames_returned; /**< distinct frames the decoder handed over */
    double amplification;    /**< frames_decoded / frames_returned */
    int64_t rss_bytes;       /**< now */
    int64_t peak_rss_bytes;  /**< process peak (VmHWM) */
    int64_t ring_bytes;      /**< batch buffers */
    const char *ring_memory; /**< "pinned" (every batch buffer page-locked), "plain" or "mixed"; static */
    double data_time_s;      /**< consumer time blocked in reel_loader_next */
    double model_time_s;     /**< consumer time between a batch and the next request */
    reel_stage_metrics stages[REEL_STAGE_COUNT];
    const char *bottleneck;   /**< "open", "decode", "collate" or "consumer" (stores: "read", "image decode");
                                 "network" when stage 1 waits on remote requests most of its time; static */
    reel_remote_stats remote; /**< requests to http(s)/s3 objects (zeros for local input) */
    double request_p50_s, request_p99_s; /**< their durations' median and 99th percentile */
    int64_t bytes_in_flight_peak;        /**< the most bytes fetched ahead at once (see
                                              reel_remote_settings.max_bytes_in_flight) */
    /** Variable batches: samples decoded over several decoder contexts at
     *  once (a long video while decode threads would idle: its keyframe
     *  runs split over them, see reel_decoder_settings.gop_contexts). */
    int64_t gop_split_samples;
    int64_t audio_samples;       /**< settings.audio: samples (per channel) of the clips' audio decoded */
    double audio_decode_seconds; /**< stage-2 thread time spent decoding them */
    /** settings.audio under decoder.corrupt_policy REEL_CORRUPT_SKIP: audio
     *  packets dropped in the delivered clips' windows, summed over clips
     *  (reel_clip_info.audio_corrupt_packets) */
    int64_t audio_corrupt_packets;
    /** decoder.device "cuda[:N]": frames decoded by NVDEC, and frames
     *  decoded on the CPU and uploaded (reel_decode_stats' counts, summed;
     *  over a packed store: every delivered frame) */
    int64_t frames_nvdec, frames_uploaded;
    /** On a GPU: device memory the loader holds now, and the most it held
     *  at once: the ring's batch buffers, the decode workers' clip buffers
     *  (sample_time_limit), and every decode worker's pool (the uploaded
     *  pictures and the kernel's tables of a launch); 0 on the CPU */
    int64_t device_bytes, device_bytes_peak;
    /** On a GPU over host pixels (a packed store's records, converted on
     *  the CPU as the CPU Loader does): the decode workers' host staging
     *  held now, and the bytes uploaded from it into batches; 0 otherwise */
    int64_t staging_bytes, upload_bytes;
    /** On a GPU: host memory page-locked by the driver for the decode
     *  workers' upload staging now, the most at once, and how many staging
     *  buffers the driver would not pin (plain memory served instead:
     *  slower uploads, never a failure); 0 on the CPU */
    int64_t pinned_bytes, pinned_bytes_peak, pinned_failures;
    uint8_t reserved[8]; /**< zero; room to grow (common.h) */
} reel_loader_metrics;

/** The loader. Thread-safety: reel_loader_next, _get_checkpoint,
 *  _restore_checkpoint and _destroy are for one consumer thread at a time (and
 *  reel_loader_get_raised_failure for the thread that calls next);
 *  reel_loader_release, _get_metrics, _get_metrics_json, _write_trace,
 *  _get_batches_per_epoch and the other failure calls are
 *  safe from any thread, concurrently with the consumer. */
typedef struct reel_loader reel_loader;

/** Creates the loader and starts its threads; prefetching begins at once.
 *  The dataset must outlive the loader and becomes frozen. Fails with
 *  REEL_E_INVALID_ARG on bad settings, REEL_E_EMPTY if a rank would get no
 *  batch, REEL_E_NOMEM if the ring cannot be allocated. */
REEL_API int reel_loader_create(reel_loader **out, reel_dataset *ds, const reel_loader_settings *s, reel_error *err);

/** Blocks until the next batch is ready and hands it out in *out. At the end
 *  of each epoch it returns REEL_OK with *out = NULL once, then goes on with
 *  the next epoch; after the last epoch it returns REEL_OK with NULL every
 *  time. Under REEL_ON_ERROR_RAISE, returns the first failed sample's status
 *  and message for the batch that holds it (the batch is dropped; the next
 *  call goes on with the following batch). */
REEL_API int reel_loader_next(reel_loader *l, reel_batch **out, reel_error *err);

/** reel_loader_next, waiting at most `timeout_s` seconds (0: only look).
 *  With no batch by then it returns REEL_E_AGAIN with *out = NULL and
 *  changes nothing: call again to go on waiting (REEL_E_TIMEOUT stays the
 *  status of a sample over its time limit, under REEL_ON_ERROR_RAISE). Lets a consumer watch for
 *  stalls or stay responsive (the Python binding waits in slices so that
 *  Ctrl-C works). REEL_E_INVALID_ARG for a negative or NaN timeout. */
REEL_API int reel_loader_next_timed(reel_loader *l, reel_batch **out, double timeout_s, reel_error *err);

/** Gives a batch's buffer back to the ring. Any thread. Each batch must be
 *  released exactly once; a batch may be held across epochs and restores. */
REEL_API int reel_loader_release(reel_loader *l, reel_batch *batch);

/** Batches per epoch for this rank (the first epoch after a mid-epoch
 *  restore has fewer). */
REEL_API int64_t reel_loader_get_batches_per_epoch(const reel_loader *l);

/** Batch buffers in the ring (prefetch_batches as resolved at create): at
 *  most this many batches are handed out and not yet released at once; a
 *  caller holding them all must release one before reel_loader_next can
 *  return another. 0 for NULL. Any thread. */
REEL_API size_t reel_loader_get_ring_size(const reel_loader *l);

/** The consumer's epoch: the one the next reel_loader_next continues (after
 *  the last epoch: one past it). The consumer's thread, like next. */
REEL_API int64_t reel_loader_get_epoch(const reel_loader *l);

/** Batches reel_loader_next still hands out (or raises) before it ends the
 *  consumer's epoch (exact after a mid-epoch restore too); 0 once the epoch's
 *  batches are out, when the next call ends the epoch, and after the last
 *  epoch. The consumer's thread, like next. */
REEL_API int64_t reel_loader_get_batches_left(const reel_loader *l);

/** The shape of one epoch without a loader: samples per rank (the shard mode
 *  pads or drops to an even split over `world_size` ranks) and batches of
 *  `batch_size` (drop_last drops a short last batch). For callers that need
 *  the count before (or without) a loader, e.g. a dataset's __len__.
 *  REEL_E_INVALID_ARG on n < 0, world_size < 1, batch_size < 1 or an unknown
 *  shard mode. Either output may be NULL. */
REEL_API int reel_loader_epoch_shape(int64_t num_samples, int world_size, reel_shard_mode shard_mode,
                                     int64_t batch_size, int drop_last, int64_t *per_rank, int64_t *batches,
                                     reel_error *err);

/** The crop and flip the loader gives clip `clip` of dataset sample `sample`
 *  in `epoch`, for pictures of display size src_w x src_h, under the
 *  transform and seed of `s`: the same pure function of (seed, epoch,
 *  sample, clip) the loader draws from (its first attempt at the sample; a
 *  replacement draws again). `crop` gets the source crop (x, y, w, h) in
 *  display pixels as reel_clip_info reports it (the whole frame when there
 *  is none), `out_size` the output (w, h), `flipped` 1 if mirrored. For a
 *  caller that decodes given clips itself (reel.ray.ClipDecoder). */
REEL_API int reel_loader_settings_get_clip_geometry(const reel_loader_settings *s, int64_t epoch, int64_t sample,
                                                    int clip, int src_w, int src_h, int32_t crop[4],
                                                    int32_t out_size[2], int *flipped, reel_error *err);

/** The settings by name, by their member paths ("sampler.frames_per_clip",
 *  "decoder.threads", "batch_size", ...): every field of
 *  reel_loader_settings but the pointers (the callback and its opaque
 *  pointer, `samples`, and decoder's strings, callback and `remote`: see
 *  reel_remote_settings_get_fields). Static (see reel_field); *count gets
 *  the number of entries. */
REEL_API const reel_field *reel_loader_settings_get_fields(size_t *count);

/** The metrics by name, as reel_loader_get_metrics_json() writes them and
 *  the Python binding returns them: the scalars of reel_loader_metrics
 *  ("decode_amplification" for .amplification, "failure_count" for
 *  .failures) and the remote counters as "remote.<name>". The stages are
 *  the list "stages" (reel_stage_metrics_get_fields); the failure records
 *  "failures", their counts "failures_by_cause" and "failed_not_listed"
 *  come from the failure log. Static. */
REEL_API const reel_field *reel_loader_metrics_get_fields(size_t *count);

/** The fields of one entry of "stages" (reel_stage_metrics). Static. */
REEL_API const reel_field *reel_stage_metrics_get_fields(size_t *count);

/** The checkpoint after the last batch handed out (in unordered mode: after
 *  the first gap, so a restore repeats the batches handed out beyond it).
 *  Once an epoch's last batch is out, it is the next epoch with
 *  samples_seen 0. */
REEL_API int reel_loader_get_checkpoint(const reel_loader *l, reel_loader_checkpoint *out, reel_error *err);

/** Cancels work in flight and continues the checkpoint's epoch from its
 *  samples_seen on this loader's rank, world size, batch size, workers and
 *  threads, with the checkpoint's canonical layout: exactly the samples not
 *  yet consumed, each with the frames, crop and flip it would have had.
 *  Batches still held stay valid until released. Its epoch may be any from
 *  0 to the one after the loader's last (first_epoch + epochs, every epoch
 *  consumed: the loader is then finished). Refused (REEL_E_INVALID_ARG, the
 *  message names the field) for a newer version, another dataset (size or
 *  entries), seed or shuffle settings, or values out of range; the loader
 *  is then unchanged. */
REEL_API int reel_loader_restore_checkpoint(reel_loader *l, const reel_loader_checkpoint *cp, reel_error *err);

/** Reads a checkpoint from its text form: the JSON object that
 *  reel_loader_checkpoint_format() writes and Python's Loader.state_dict()
 *  gives (state version 2): "version", "epoch", "samples_seen", "seed",
 *  "canonical_ranks", "canonical_batch", "shuffle", "shuffle_window",
 *  "num_videos", "fingerprint" and the optional "topology" object
 *  ("world_size", "batch_size", "num_workers", each 1 when absent). Every
 *  number is checked in its full width before it is stored: a JSON integer
 *  (no fraction, exponent, string or bool), epoch in [0, REEL_EPOCH_MAX],
 *  samples_seen in [0, num_videos], seed and fingerprint in [0, 2^64),
 *  canonical_* and the topology's in [1, 2^31 - 1]; shuffle true, false, 0
 *  or 1; shuffle_window null (none), "full" or an integer >= 0. A missing,
 *  repeated, mistyped or out-of-range key is REEL_E_INVALID_ARG with a
 *  message naming it; unknown keys are ignored. *out is written only on
 *  success. Whether the checkpoint fits a loader is
 *  reel_loader_checkpoint_check()'s question. */
REEL_API int reel_loader_checkpoint_parse(reel_loader_checkpoint *out, const char *text, size_t len, reel_error *err);

/** The checkpoint's text form (see reel_loader_checkpoint_parse), one line
 *  of JSON, in *text (free with reel_free). REEL_E_INVALID_ARG for a
 *  checkpoint the parser would refuse, REEL_E_NOMEM. */
REEL_API int reel_loader_checkpoint_format(const reel_loader_checkpoint *cp, char **text, reel_error *err);

/** The checkpoint a loader with settings `s` over a dataset of `num_samples`
 *  entries whose hash is `dataset_hash` (reel_dataset_get_fingerprint) gives at
 *  (epoch, samples_seen), without a loader: what a DataLoader's parent
 *  process saves for workers that hold the loaders. The canonical layout is
 *  the settings' own, else (world_size, batch_size), as reel_loader_create
 *  settles it. REEL_E_INVALID_ARG for a position outside the dataset. */
REEL_API int reel_loader_checkpoint_init(reel_loader_checkpoint *cp, const reel_loader_settings *s, int64_t num_samples,
                                         uint64_t dataset_hash, int64_t epoch, int64_t samples_seen, reel_error *err);

/** Whether `cp` fits a loader with settings `s` over that dataset, without
 *  a loader: the check reel_loader_restore_checkpoint() makes first. REEL_OK,
 *  or REEL_E_INVALID_ARG naming what differs: the version, the dataset (size
 *  or hash), the seed, the shuffle settings, or a position outside the
 *  settings' epochs. */
REEL_API int reel_loader_checkpoint_check(const reel_loader_checkpoint *cp, const reel_loader_settings *s,
                                          int64_t num_samples, uint64_t dataset_hash, reel_error *err);

/** The settings of the loader's order (its read blocks valid while the
 *  loader lives; the canonical layout as now), so that another consumer
 *  (Ray, a custom sampler) can make the same reel_order and plan with it. */
REEL_API int reel_loader_get_order_settings(const reel_loader *l, reel_order_settings *out, reel_error *err);

/** A snapshot of the metrics. */
REEL_API int reel_loader_get_metrics(const reel_loader *l, reel_loader_metrics *m, reel_error *err);

/** Metrics plus the failure list as one JSON object in *json (free with
 *  reel_free). */
REEL_API int reel_loader_get_metrics_json(const reel_loader *l, char **json, reel_error *err);

/** Writes the recorded events as a Chrome trace (JSON object format) with
 *  one track per thread, for Perfetto or chrome://tracing. Needs
 *  settings.trace; without it the file holds only the thread names. */
REEL_API int reel_loader_write_trace(reel_loader *l, const char *path, reel_error *err);

/** Number of failure records kept: the most recent failed attempts (at most
 *  settings.failure_log_size), oldest first; reel_loader_metrics.failures
 *  counts them all. */
REEL_API int64_t reel_loader_get_num_failures(const reel_loader *l);

/** Failures with this status (REEL_E_LAST <= status < REEL_OK;
 *  REEL_E_INVALID_ARG for another) seen in the whole run (all causes are
 *  also in the metrics JSON, "failures_by_cause"). */
REEL_API int reel_loader_get_failures_by_cause(const reel_loader *l, int status, int64_t *count, reel_error *err);

/** The failure that the last reel_loader_next() (or _next_timed()) call
 *  returned under REEL_ON_ERROR_RAISE: the sample's path, reason, status,
 *  epoch, position and dataset index. REEL_E_NO_DATA when that call raised
 *  no sample's failure (it succeeded, or failed for another reason: a stop,
 *  a timeout, coverage). Call it from the thread that calls next. */
REEL_API int reel_loader_get_raised_failure(const reel_loader *l, reel_failure *out, reel_error *err);

/** Copies failure record i into *out. */
REEL_API int reel_loader_get_failure(const reel_loader *l, int64_t i, reel_failure *out, reel_error *err);

/** Stops every thread (mid-epoch is fine), joins them and frees everything,
 *  batch buffers included: release or stop using held batches first.
 *  Sets *l to NULL. NULL is fine. */
REEL_API void reel_loader_destroy(reel_loader **l);

#ifdef __cplusplus
}
#endif
#endif /* REEL_LOADER_H */
