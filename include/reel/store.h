/* reel/store.h: the packed store. A video dataset decoded once, offline,
 * into sequential shard files (JPEG, raw RGB optionally zstd-compressed, or
 * short-GOP H.264 per record) plus one index, so that training reads at the
 * speed of the disk and an image decoder instead of a video decoder.
 *
 *   reel_pack_settings ps;
 *   reel_pack_default_settings(&ps);
 *   ps.short_side = 256;  ps.format = REEL_STORE_FORMAT_JPEG;
 *   reel_pack("kinetics/train", "kinetics.store", &ps, NULL, &err);
 *   // then a loader reads it wherever it reads videos:
 *   reel_dataset_create_from_path(&ds, "kinetics.store", &err);
 *
 * The byte layout is in docs/STORE.md. Every stored frame keeps its source
 * frame index and pts, so samplers by index or by time work on a store as on
 * the video, and a frame asked for by source index is the right one or is
 * reported missing, never the nearest one. */
#ifndef REEL_STORE_H
#define REEL_STORE_H

#include "common.h"
#include "audio.h"
#include "convert.h"
#include "decoder.h"
#include "io.h"
#include "sampler_settings.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How frames are stored. */
typedef enum reel_store_format {
    REEL_STORE_FORMAT_JPEG = 1, /**< one baseline JPEG per frame (libjpeg-turbo, 4:2:0) */
    REEL_STORE_FORMAT_RAW = 2,  /**< RGB24 per frame (or gray, 16-bit: reel_pack_settings.color, .dtype),
                                     optionally zstd-compressed */
    REEL_STORE_FORMAT_H264 = 3  /**< each record one short-GOP H.264 stream (Matroska) */
} reel_store_format;

/** Progress of a build, for reel_pack_settings.progress. */
typedef struct reel_pack_progress {
    int64_t videos_total; /**< videos in this part */
    int64_t videos_done;  /**< finished, failed ones included (and ones done before a resume) */
    int64_t videos_failed;
    int64_t videos_resumed; /**< found finished in the journal at start */
    int64_t bytes_written;  /**< record bytes in this part so far */
    double elapsed;         /**< seconds since this run started */
} reel_pack_progress;

/** Build settings. Initialise with reel_pack_default_settings(). */
typedef struct reel_pack_settings {
    reel_store_format format; /**< default JPEG */
    int short_side;     /**< frames stored with this short side, aspect kept; 0: each video's own size; default 256 */
    int width, height;  /**< both > 0: exact size instead of short_side; default 0 */
    double fps;         /**< > 0: keep the frames shown at k/fps seconds (see docs/STORE.md); default 0 */
    int every;          /**< > 1: keep source frames 0, every, 2*every, ...; default 1 (all) */
    int quality;        /**< JPEG quality 1..100; default 90 */
    int zstd_level;     /**< RAW: 0 uncompressed (default), 1..19 zstd level */
    int gop;            /**< H264: keyframe interval; default 8 */
    int crf;            /**< H264: x264 constant rate factor; default 18 */
    int64_t shard_size; /**< bytes per shard before a new one starts; default 1 GiB */
    int threads;        /**< decode/encode threads; 0: the core count */
    int part_index, part_count; /**< build the 1/part_count of the dataset with
                                          sample % part_count == part_index; default 0, 1 */
    /** Called from the calling thread after each video, and once at the end. */
    void (*progress)(void *opaque, const reel_pack_progress *p);
    void *progress_opaque; /**< passed to progress; borrowed (common.h) */
    /** Polled between videos; non-zero stops the build (REEL_E_CANCELLED; it
     *  resumes where it stopped when run again). */
    int (*interrupt)(void *opaque);
    void *interrupt_opaque; /**< passed to interrupt; borrowed (common.h) */
    /** Whole-video sampling with qwen-vl-utils' frame choice (reel/sampler.h,
     *  what reel.vlm and the Loader's sampler "fps" take): kind
     *  REEL_SAMPLER_FPS keeps the frames that sampler gives each segment at
     *  sampler.fps frames per second of video, min_frames to max_frames of
     *  them; REEL_SAMPLER_COUNT keeps frames_per_clip frames (rounded half to
     *  even to frame_factor); both a multiple of frame_factor, spread by
     *  linspace over the segment. The store records kind, fps, min_frames,
     *  max_frames, frames_per_clip and frame_factor: the other fields stay at
     *  reel_sampler_default_settings' values. REEL_SAMPLER_NONE (default):
     *  all frames, or by `every` / `fps` (neither is taken with a sampler). */
    reel_sampler_settings sampler;
    /** The stored samples (raw records keep them as the decoder gives them,
     *  reel/convert.h): RGB (default) or GRAY, one channel. */
    reel_color color;
    /** UINT8 (default) or UINT16: RGB as rgb48le, gray as the source's codes
     *  (a 12-bit source's 0..4095; one of 8 bits is stored as 8-bit gray).
     *  UINT16 and GRAY need REEL_STORE_FORMAT_RAW: jpeg and h264 records
     *  hold 8-bit RGB (refused by name), and they refuse a gray source
     *  deeper than 8 bits (a depth map), naming the video and its depth. */
    reel_dtype dtype;
    /** NULL (default): no audio. Else each record also keeps the audio
     *  played over its stored frames, decoded once from a0 per video by
     *  reel/audio.h with these settings (sample_rate 0: each video's own
     *  rate; channels 0: its own, 1: their mean; stream_index): the samples
     *  s(T0) .. s(T1) - 1 of the window [T0, T1) = [min p, max(p + d)) of
     *  its frames, which hold every clip's window the loader can ask for. A
     *  video without audio is recorded as such (the loader's
     *  reel_loader_audio.missing decides at load time, as on the video);
     *  one whose audio fails keeps its frames and the reason (a damaged
     *  packet under corrupt_policy FAIL, the default: REEL_E_CORRUPT; under
     *  SKIP the record keeps the samples and what the window says of the
     *  damage: reel_store_record.audio_missing*, and the damaged spans, from
     *  which each clip cut from it gets what the video gives it). `missing`
     *  and `corrupt_policy` are not used (the pack's corrupt_policy is).
     *  Borrowed (common.h). */
    const reel_audio_settings *audio;
    /** A damaged packet, frames and audio alike, as the loader's
     *  decoder.corrupt_policy: REEL_CORRUPT_FAIL (default) records the
     *  video as failed with the reason (its audio: the frames are kept, the
     *  audio's status and reason recorded), REEL_CORRUPT_SKIP packs it best
     *  effort (the frames as the decoder gives them under SKIP; the audio's
     *  dropped packets as zeros, said by the record). */
    reel_corrupt_policy corrupt_policy;
    uint8_t reserved[24]; /**< zero; room to grow without an ABI break */
} reel_pack_settings;

/** What a build did. */
typedef struct reel_pack_report {
    int64_t videos;  /**< in this part */
    int64_t packed;  /**< stored */
    int64_t failed;  /**< recorded in the index with their reason */
    int64_t resumed; /**< found already finished */
    int64_t frames;  /**< frames stored by this part */
    int64_t bytes;   /**< record bytes of this part */
    double seconds;
    int merged;           /**< 1: the store's index was written (a single-part build) */
    uint8_t reserved[32]; /**< zero; room to grow (common.h) */
} reel_pack_report;

/** Fills `s` with the defaults documented on each field. */
REEL_API void reel_pack_default_settings(reel_pack_settings *s);

/** Builds (part part_index of part_count of) a store of `source` (a folder
 *  in the Kinetics layout or a CSV/TSV/JSONL manifest, as the loader takes)
 *  in `out_dir`. Deterministic: the same input and settings give
 *  byte-identical shards, whatever the thread count. Resumable: run again
 *  after a crash or kill and it goes on from the last finished video. A
 *  video that fails to decode is recorded with its reason and the build goes
 *  on. A single-part build writes the index at the end; with part_count > 1
 *  each part leaves a completion marker and reel_pack_merge() writes it.
 *  `report` may be NULL. */
REEL_API int reel_pack(const char *source, const char *out_dir, const reel_pack_settings *settings,
                       reel_pack_report *report, reel_error *err);

/** Writes the index of a store built in parts: checks that every part is
 *  complete (REEL_E_NOT_FOUND naming the missing parts otherwise). */
REEL_API int reel_pack_merge(const char *out_dir, reel_error *err);

/** Result of reel_store_verify. */
typedef struct reel_store_verify_report {
    int64_t records; /**< records checked */
    int64_t frames;
    int64_t bytes;
    int64_t bad;                             /**< records that failed a check */
    int64_t failed_to_pack;                  /**< records stored as failures */
    char first_problem[REEL_ERROR_MSG_SIZE]; /**< "" when all is well */
    int64_t shards;             /**< shard files that hold records, checked for bytes past their last record */
    int64_t bad_shards;         /**< of those, shards with bytes after their last record (damage: the shard
                                     was appended to or replaced, though its records may all read) */
    int64_t bytes_past_records; /**< those bytes, all shards */
    uint8_t reserved[32];       /**< zero; room to grow (common.h) */
} reel_store_verify_report;

/** Reads every record and checks every checksum, and that every shard ends
 *  where its last record does. REEL_OK with bad == 0 and bad_shards == 0
 *  when the store is sound; REEL_E_CORRUPT (first problem in err) if not. */
REEL_API int reel_store_verify(const char *dir, reel_store_verify_report *report, reel_error *err);

/* ---------------------------------------------------------------- reading */

/** An open store: its index in memory. Immutable after open: every read
 *  call is safe from any thread. Readers (one per thread) do the I/O. */
typedef struct reel_store reel_store;

/** Store-wide facts (plain values). */
typedef struct reel_store_info {
    reel_store_format format;
    int version; /**< index format version */
    int64_t num_records;
    int64_t num_frames; /**< stored frames in all records */
    int64_t num_failed; /**< records stored as failures */
    int64_t num_classes;
    int64_t bytes; /**< record bytes in all shards */
    int num_shards;
    /** The stored size: short_side, or width x height; all three 0: each
     *  video at its own (displayed) size. */
    int short_side, width, height;
    int quality, zstd_level, gop;
    double fps; /**< > 0: the frames shown at k/fps seconds were kept (0 with a sampler) */
    int every;
    /** The whole-video sampler the store was built with
     *  (reel_pack_settings.sampler): kind REEL_SAMPLER_NONE when none. Only
     *  what a store records is set: REEL_SAMPLER_FPS fps, min_frames,
     *  max_frames, frame_factor; REEL_SAMPLER_COUNT frames_per_clip,
     *  frame_factor; the other fields are 0. */
    reel_sampler_settings sampler;
    reel_color color; /**< reel_pack_settings.color: RGB or GRAY records */
    reel_dtype dtype; /**< reel_pack_settings.dtype: UINT8 or UINT16 */
    /** Packed with audio (reel_pack_settings.audio; a version-3 store):
     *  1, with the settings it was packed with: audio_sample_rate (0: each
     *  video's own), audio_channels (0: each video's own, 1: their mean),
     *  audio_stream_index (-1: the best). 0 and zeros without. */
    int audio, audio_sample_rate, audio_channels, audio_stream_index;
    uint8_t reserved[20]; /**< zero; room to grow (common.h) */
} reel_store_info;

/** One record (one video or segment). Its pointers are returned (common.h):
 *  they live as long as the store. */
typedef struct reel_store_record {
    const char *source_path;          /**< the video it came from */
    int64_t label;                    /**< class index (sorted class names), or the
                                    manifest's integer label; -1: none */
    const char *class_name;           /**< "" when labels are integers or absent */
    reel_status status;               /**< REEL_OK, or why the video could not be packed */
    const char *reason;               /**< "" or the failure message; audio packed under
                                           REEL_CORRUPT_SKIP with damage: what FAIL says of
                                           each damage span's first packet, a line each */
    int64_t num_frames;               /**< stored frames */
    int width, height;                /**< stored size */
    int time_base_num, time_base_den; /**< of the source pts */
    int avg_fps_num, avg_fps_den;     /**< of the source */
    int64_t source_num_frames;
    double segment_start, segment_end; /**< as in the manifest (end < 0: to the end) */
    int64_t source_size;               /**< bytes of the source when it was packed */
    int64_t source_mtime_ns;
    const char *shard;      /**< shard file name */
    int64_t offset, length; /**< bytes in the shard (the audio included) */
    int channels;           /**< of a stored pixel: 3 (RGB) or 1 (gray) */
    int bit_depth;          /**< bits of a stored sample's code: 8, 16 (RGB48), or a gray source's 9..16 */
    /** A store packed with audio: REEL_OK (the samples are stored),
     *  REEL_E_NO_AUDIO_STREAM (the video has none), or why its audio could
     *  not be read (`reason` says it; the frames are stored). REEL_OK with
     *  audio_channels 0 in a store without audio. */
    reel_status audio_status;
    int audio_sample_rate, audio_channels; /**< of the stored samples (0: none) */
    /** The stored window on the grid anchored at a0 (reel/audio.h):
     *  samples audio_first_sample .. + audio_samples - 1, of which [lo, hi)
     *  came from the stream. */
    int64_t audio_first_sample, audio_samples, audio_valid_lo, audio_valid_hi;
    /** a0, the grid's anchor: audio_start_pts x num / den seconds. */
    int64_t audio_start_pts;
    int audio_time_base_num, audio_time_base_den;
    /** Packed under REEL_CORRUPT_SKIP with damaged audio: what the stored
     *  window says of it, as reel_audio_window (missing samples, all in
     *  [audio_missing_lo, audio_missing_hi) of the window, and the dropped
     *  packets whose gap touches it; audio_valid_* is then the longest clean
     *  run). A clip cut from the record gets what the video gives it: the
     *  record keeps the damage's spans. 0 without damage. */
    int64_t audio_missing, audio_missing_lo, audio_missing_hi, audio_corrupt_packets;
    uint8_t reserved[32]; /**< zero; room to grow (common.h) */
} reel_store_record;

/** Opens the store in `dir` (its index, store.idx, read through reel's byte
 *  sources, so a store at a URL works where remote input is built in). A
 *  damaged, truncated or unknown-version index is REEL_E_CORRUPT naming it. */
REEL_API int reel_store_open(reel_store **out, const char *dir, reel_error *err);

/** Closes the store; readers made from it must be destroyed first. Sets
 *  *s to NULL; NULL is fine. */
REEL_API void reel_store_close(reel_store **s);

/** Store-wide facts. REEL_E_INVALID_ARG for a NULL argument (*info zeroed
 *  when it is not NULL). */
REEL_API int reel_store_get_info(const reel_store *s, reel_store_info *info, reel_error *err);

/** Record i (0 <= i < num_records). REEL_E_OUT_OF_RANGE otherwise. */
REEL_API int reel_store_get_record(const reel_store *s, int64_t i, reel_store_record *out, reel_error *err);

/** The stored frames of record i as a frame table: source pts and durations
 *  (in the record's time base), byte positions -1, every frame a keyframe
 *  for JPEG and RAW, and its length. REEL_E_OUT_OF_RANGE for a bad index.
 *  Lives as long as the store. */
REEL_API int reel_store_get_frame_table(const reel_store *s, int64_t record, const reel_frame_entry **table, int64_t *n,
                                        reel_error *err);

/** Source frame index of stored frame `pos` of record i. */
REEL_API int reel_store_get_source_index(const reel_store *s, int64_t record, int64_t pos, int64_t *index,
                                         reel_error *err);

/** Where stored frame `pos` of record i lies: its shard (as in
 *  reel_store_record.shard) at `offset` bytes, `length` bytes long. For
 *  JPEG and RAW stores, those bytes are the frame alone (a JPEG file; rows
 *  of the record's pixels, RGB24 unless reel_store_record.channels and
 *  .bit_depth say otherwise, or their zstd frame); for H264, the whole
 *  record. */
REEL_API int reel_store_get_frame_bytes(const reel_store *s, int64_t record, int64_t pos, int64_t *offset,
                                        int64_t *length, reel_error *err);

/** Class names, sorted (labels index them: 0 <= label < num_classes;
 *  REEL_E_OUT_OF_RANGE for another). Lives as long as the store. */
REEL_API int reel_store_get_class_name(const reel_store *s, int64_t label, const char **name, reel_error *err);

/** Reads records: its own file handles, JPEG decompressor, zstd context
 *  and H.264 decoder. Not thread-safe: one per thread. */
typedef struct reel_store_reader reel_store_reader;

/** Reader settings. Initialise with reel_store_reader_default_settings(). */
typedef struct reel_store_reader_settings {
    int (*interrupt)(void *opaque); /**< as reel_decoder_settings.interrupt; NULL: none */
    void *interrupt_opaque;         /**< borrowed (common.h) */
    int decoder_threads;            /**< H264 records; default 1 */
    int verify;                     /**< check each frame's checksum on read; default 1 */
    /** Shards at http(s)/s3 URLs: timeouts, retries, TLS; borrowed
     *  (common.h), its strings and pool too. NULL (default):
     *  reel_remote_default_settings(). */
    const struct reel_remote_settings *remote;
    uint8_t reserved[64];
} reel_store_reader_settings;

/** Per-read statistics. */
typedef struct reel_store_read_stats {
    int64_t bytes_read;
    int64_t frames_decoded;
    int64_t frames_returned;
    double read_seconds, decode_seconds;
    reel_remote_stats remote; /**< requests of shards at URLs (zeros for local ones) */
    uint8_t reserved[32];     /**< zero; room to grow (common.h) */
} reel_store_read_stats;

REEL_API void reel_store_reader_default_settings(reel_store_reader_settings *s);

REEL_API int reel_store_reader_create(reel_store_reader **out, reel_store *store,
                                      const reel_store_reader_settings *settings, reel_error *err);

REEL_API void reel_store_reader_destroy(reel_store_reader **r);

/** Reads stored frames `positions` (0..num_frames-1 of the record, any order,
 *  repeats allowed) and hands each to `fn` as an RGB24 frame of the stored
 *  size, with reel_frame_get_index = the stored position and reel_frame_get_pts =
 *  the source pts, so reel_converter_run() applies any transform. Only the
 *  bytes of the wanted frames are read (JPEG, RAW); an H264 record is read
 *  and decoded from its keyframes. A failed checksum, a short shard or a
 *  missing shard is REEL_E_CORRUPT / REEL_E_NOT_FOUND with a message naming
 *  the store, the shard, the video and the reason. `stats` may be NULL. */
REEL_API int reel_store_reader_read(reel_store_reader *r, int64_t record, const int64_t *positions, size_t n,
                                    reel_frame_fn fn, void *opaque, reel_store_read_stats *stats, reel_error *err);

/** The same by SOURCE frame index: a source index that was not stored is
 *  REEL_E_OUT_OF_RANGE naming the video and the index. */
REEL_API int reel_store_reader_read_source(reel_store_reader *r, int64_t record, const int64_t *source_indices,
                                           size_t n, reel_frame_fn fn, void *opaque, reel_store_read_stats *stats,
                                           reel_error *err);

/** The audio stored with record i of a store packed with audio: float32
 *  [audio_channels, audio_samples] into dst (dst_count floats at least
 *  that, else REEL_E_BUFFER_TOO_SMALL), its checksum checked, and where it
 *  sits (w, may be NULL: first_sample, num_samples, valid_lo/hi, missing,
 *  missing_lo/hi and corrupt_packets as reel_store_record says). A store without audio is REEL_E_INVALID_ARG; a
 *  record whose audio_status is not REEL_OK fails with that status naming
 *  the video; damage is REEL_E_CORRUPT naming the shard and the video. */
REEL_API int reel_store_reader_read_audio(reel_store_reader *r, int64_t record, float *dst, size_t dst_count,
                                          reel_audio_window *w, reel_error *err);

#ifdef __cplusplus
}
#endif
#endif /* REEL_STORE_H */
