/* reel/decoder.h: the frame-exact video decoder. Opening (path, memory,
 * callbacks), metadata, the exact frame table and its sidecar index, and
 * batched random access that plans the least decoding. */
#ifndef REEL_DECODER_H
#define REEL_DECODER_H

#include "common.h"
#include "convert.h"
#include "device_buffer.h"
#include "io.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What to do with damaged data. Under both policies damage never changes
 *  which frame an index names: frames are matched by timestamp (or, in
 *  files without timestamps, by a verified count that fails rather than
 *  shifts), and frames of GOPs without damage always decode exactly.
 *  Inside a damaged GOP the codec may conceal with neighbouring pixels; it
 *  reports that reliably with threads = 1 (FFmpeg 5.1 does not flag
 *  concealment under frame threading). */
typedef enum reel_corrupt_policy {
    REEL_CORRUPT_FAIL = 0, /**< any error the codec reports, or a wanted frame
                                decoded with errors, fails the call with
                                REEL_E_CORRUPT (default) */
    REEL_CORRUPT_SKIP = 1  /**< best effort, like the ffmpeg CLI: bad packets
                                are dropped and decoding goes on; concealed
                                frames are returned and counted in
                                reel_decode_stats.corrupt_packets; a frame
                                that cannot be produced still fails */
} reel_corrupt_policy;

/** Sidecar index use. */
typedef enum reel_index_mode {
    REEL_INDEX_OFF = 0,       /**< never read or write a sidecar */
    REEL_INDEX_READ = 1,      /**< use a valid sidecar if present */
    REEL_INDEX_READ_WRITE = 2 /**< use it if valid, else build and write it */
} reel_index_mode;

/** Open-time settings. Initialise with reel_decoder_default_settings(). The
 *  opens refuse a value outside its documented range (REEL_E_INVALID_ARG,
 *  the message naming "settings.<field>"); the loader embeds these settings
 *  (reel_loader_settings.decoder) and refuses the same values when made. */
typedef struct reel_decoder_settings {
    int stream_index; /**< absolute stream index (>= 0); -1 (default): best video stream */
    int threads;      /**< FFmpeg threads of the codec (>= 0); 0 (default): chosen from the core count */
    reel_corrupt_policy corrupt_policy; /**< reel_corrupt_policy; default REEL_CORRUPT_FAIL */
    reel_index_mode index_mode;         /**< reel_index_mode; default REEL_INDEX_OFF */
    const char *index_path;             /**< sidecar path, borrowed (common.h); NULL: "<video path>.reelidx" */
    /** Videos at http(s)/s3 URLs: their sidecars live in this local folder
     *  (created if missing), named by a hash of the URL without its query
     *  string, and are valid only for the object's size and ETag (or
     *  Last-Modified); index_mode applies as for files. NULL (default): the
     *  REEL_INDEX_CACHE environment variable, else no sidecar for URLs.
     *  Borrowed (common.h). */
    const char *index_cache_dir;
    int skip_nonref;     /**< 1 (default): skip decoding of non-reference frames
                                 that no requested frame needs, where the codec allows */
    int force_scan;      /**< 1: build the frame table by a packet scan even when
                                 the container's index could be used (default 0) */
    int check_keyframes; /**< 1 (default): before decoding from a keyframe for the
                                 first time, a frame-threaded decoder decodes it alone
                                 on one thread to make sure it is a clean starting
                                 point (FFmpeg does not flag errors reliably under
                                 frame threading); one extra keyframe decode per
                                 keyframe and decoder. 0: trust the container's
                                 keyframes. Single-threaded decoders need no probe:
                                 errors in the GOP they seek into are seen as they
                                 decode, and either way a keyframe found unclean is
                                 decoded through from an earlier one. */
    /** Optional cancellation (default NULL). Polled from the calling thread
     *  while opening and between packets while decoding, and handed to
     *  FFmpeg as its I/O interrupt callback, so a blocking read returns too.
     *  Returning non-zero stops the call with REEL_E_CANCELLED; the decoder
     *  stays usable, and a later call starts afresh. Must be cheap and
     *  thread-safe (it reads a flag another thread sets), and once it has
     *  said stop it keeps saying so until the call returns: a call polls it
     *  from several places (FFmpeg's reads, a remote video's fetches). */
    int (*interrupt)(void *opaque);
    void *interrupt_opaque; /**< passed to interrupt; borrowed (common.h) */
    /** http(s):// and s3:// paths: how the object is fetched (reel/io.h);
     *  borrowed (common.h), its strings and pool too. NULL (default):
     *  reel_remote_default_settings(). */
    const struct reel_remote_settings *remote;
    /** A video at a URL adds every request made for it here (requests,
     *  retries, failures, bytes, durations) when it is closed, or when
     *  opening it failed; NULL (default): not kept. Borrowed (common.h). Not
     *  thread-safe: one tally per decoder at a time. */
    struct reel_remote_stats *remote_stats;
    /** GOP-parallel decoding: >= 2: a reel_decoder_get_frames* call whose
     *  decode plan has two or more keyframe runs has up to this many decoder
     *  contexts of the same file or URL (single-threaded, on threads of
     *  their own) take the runs one at a time, in decode order, until none
     *  is left, so they finish within about one run of each other; each
     *  writes its frames straight into the output. The extra contexts are
     *  opened on first use (by their threads) and kept for the calls that
     *  follow until the decoder closes; their requests count in reel_decoder_get_remote_stats and in
     *  remote_stats. Memory and callback inputs, and plans of one run,
     *  decode as usual (on the codec's own `threads`). REEL_GOP_CONTEXTS_AUTO
     *  (-1, the default): up to the machine's core count for a file, so a
     *  call uses the cores; off for a URL, whose other contexts would each
     *  fetch the object's head and index again and miss what
     *  reel_decoder_prefetch fetched (ask for N there); 0 or 1: off (the loader and `reel pack`, whose workers own
     *  the cores, set this); at most 64. */
    int gop_contexts;
    /** Where frames are decoded and converted: NULL, "" or "cpu" (default),
     *  "cuda" (GPU 0) or "cuda:N" (docs/GPU.md): on a GPU, NVDEC decodes
     *  where it can (else the CPU, the pictures uploaded:
     *  reel_decoder_get_upload_reason) and the frames are converted into
     *  device memory (reel_decoder_get_frames). Opening fails with
     *  REEL_E_CUDA, the message naming the file, CUDA and the cause, where
     *  there is no NVIDIA driver, no such GPU or no kernels in this libreel.
     *  The loader's decoder.device puts its batches on the GPU too
     *  (reel/loader.h). Anything else: REEL_E_INVALID_ARG.
     *  Borrowed (common.h). */
    const char *device;
    /** "cpu": where `device` asks for CUDA and CUDA cannot serve, decode on
     *  the CPU instead of failing (the decoder is then a CPU decoder, as
     *  with device "cpu"); NULL (default) or "": fail. Borrowed (common.h). */
    const char *device_fallback;
    uint8_t reserved[44]; /**< zero (the defaults function clears it); room to grow without an ABI break */
} reel_decoder_settings;

/** reel_decoder_settings.gop_contexts: as many as the machine has cores. */
#define REEL_GOP_CONTEXTS_AUTO (-1)

/** Fills `s` with the defaults documented on each field. */
REEL_API void reel_decoder_default_settings(reel_decoder_settings *s);

/* reel_io (caller-supplied input: read and seek callbacks) and REEL_SEEK_SIZE
 * live in reel/io.h, the one home of I/O, included above. */

/** One row of the exact frame table, in presentation order. */
typedef struct reel_frame_entry {
    int64_t pts;          /**< presentation timestamp, stream time base */
    int64_t duration;     /**< display duration, stream time base */
    int64_t pos;          /**< byte position of the packet, -1 if unknown */
    int32_t flags;        /**< REEL_FRAME_KEY, ... */
    int32_t decode_order; /**< position of its packet in decode order (counting packets an edit list
                               trims that are decoded, never shown) */
} reel_frame_entry;

#define REEL_FRAME_KEY 1

/** Where the frame table came from. */
typedef enum reel_index_source {
    REEL_INDEX_FROM_CONTAINER = 0, /**< mp4/mov sample tables */
    REEL_INDEX_FROM_SCAN = 1,      /**< a packet scan (no decoding) */
    REEL_INDEX_FROM_SIDECAR = 2    /**< a valid sidecar file */
} reel_index_source;

/** Stream metadata. Strings are NUL-terminated arrays inside the struct (no
 *  pointers to keep alive). It describes the frames the decoder returns with
 *  the display rotation applied (reel_pixel_settings.apply_rotation, the
 *  default of reel_transform, the loader and Python): width x height is the
 *  size after rotation. The stream's own values are the fields named for
 *  them (source_width, source_height, container_bit_rate). A field with the name of one of
 *  torchcodec's VideoStreamMetadata means what that field means. */
typedef struct reel_video_info {
    char codec[32];       /**< FFmpeg codec name, e.g. "h264" */
    char profile[48];     /**< e.g. "High", "" if unknown */
    char pix_fmt[32];     /**< e.g. "yuv420p" */
    char container[64];   /**< e.g. "mov,mp4,m4a,3gp,3g2,mj2" */
    char color_space[24]; /**< matrix, e.g. "bt709", "unknown" */
    char color_range[8];  /**< "tv", "pc" or "unknown" */
    char color_primaries[24];
    int width, height; /**< display size: after the display rotation (a right angle of 90 or 270
                            swaps source_width and source_height); the size of the frames returned
                            with apply_rotation, torchcodec's width and height */
    int bit_depth;
    int rotation;                 /**< display rotation as ffprobe reports it: degrees counter-clockwise
                                   from the display matrix, e.g. 90, -90, -180; 0 if none (has_rotation
                                   tells a 0 of the matrix from no matrix; Python's None) */
    int sar_num, sar_den;         /**< sample aspect ratio, 0/1 if unknown */
    int avg_fps_num, avg_fps_den; /**< average frame rate from the frame table */
    int rate_num, rate_den;       /**< nominal (r_frame_rate) */
    int time_base_num, time_base_den;
    int stream_index; /**< absolute index of the decoded stream */
    int num_streams;
    int has_audio;
    int variable_size;  /**< 1 if coded size changes mid-stream (found while decoding) */
    int64_t start_pts;  /**< pts of frame 0 */
    double start_time;  /**< seconds */
    double duration;    /**< seconds, from the frame table: end of last frame - start */
    int64_t num_frames; /**< exact */
    int64_t num_keyframes;
    int64_t bit_rate;                /**< the stream's bits/s (torchcodec's bit_rate); the container's
                                         (container_bit_rate) only when the stream states none; 0 if
                                         neither does */
    int64_t file_size;               /**< bytes, -1 if unknown */
    reel_index_source index_source;  /**< reel_index_source */
    int source_width, source_height; /**< the stream's own (coded) size, before the display rotation:
                                          the frames' size without apply_rotation */
    int has_rotation;                /**< 1: the stream has a display matrix (rotation is its angle) */
    int64_t container_bit_rate;      /**< the container's bits/s, all its streams together; 0 if unknown */
    uint8_t reserved[48];            /**< zero; room to grow (common.h) */
} reel_video_info;

/** Per-call decode statistics. */
typedef struct reel_decode_stats {
    int64_t frames_requested; /**< length of the request, with repeats */
    int64_t frames_returned;  /**< distinct frames delivered */
    int64_t frames_decoded;   /**< frames the codec produced, wanted or not */
    int64_t frames_skipped;   /**< packets not decoded at all (AVDISCARD_NONREF) */
    int64_t packets_read;
    int64_t seeks;
    int64_t corrupt_packets;  /**< packets dropped under REEL_CORRUPT_SKIP */
    int64_t key_restarts;     /**< keyframes found not to be clean starting points
                                   (their GOP decoded with errors after a seek) and
                                   decoded through from an earlier one instead;
                                   remembered for the decoder's lifetime */
    int64_t keys_probed;      /**< keyframes first decoded alone on one thread to check
                                   them (frame-threaded decoders only, whose error flags
                                   FFmpeg does not set reliably; once per keyframe) */
    int64_t thread_fallbacks; /**< 1 when, in this call, the decoder reopened on one thread
                                   for good: a keyframe came out of the frame threads
                                   unlike its decode alone, or a damaged keyframe had to
                                   be decoded through (FFmpeg's frame threads may conceal
                                   such damage in silence); 0 otherwise */
    double amplification;     /**< frames_decoded / frames_returned */
    int64_t gop_contexts;     /**< decoder contexts that decoded the call's keyframe runs:
                                   2 or more when it ran GOP-parallel, else 1 (0: nothing decoded) */
    int64_t frames_nvdec;     /**< a decoder on a GPU: frames NVDEC decoded into device memory */
    int64_t frames_uploaded;  /**< a decoder on a GPU: frames decoded on the CPU and uploaded
                                   (reel_decoder_get_upload_reason says why) */
    uint8_t reserved[40];     /**< zero; room to grow (common.h) */
} reel_decode_stats;

/** An open video. Not thread-safe: one thread at a time per decoder.
 *  Different decoders are fully independent. */
typedef struct reel_decoder reel_decoder;

/** Opens a file. `s` may be NULL for defaults. On failure *out is NULL and
 *  `err` names the path and cause (missing, not a video, no video stream,
 *  unsupported codec, corrupt). */
REEL_API int reel_decoder_open(reel_decoder **out, const char *path, const reel_decoder_settings *s, reel_error *err);

/** Opens a video held in memory. The buffer is not copied and must stay
 *  valid and unchanged until reel_decoder_close(). `name` is used in
 *  messages only (may be NULL). Sidecar indexes are not used. */
REEL_API int reel_decoder_open_memory(reel_decoder **out, const void *data, size_t size, const char *name,
                                      const reel_decoder_settings *s, reel_error *err);

/** Opens a video read through callbacks. `io` is copied; its opaque
 *  pointer must stay valid until close. `name` is used in messages. */
REEL_API int reel_decoder_open_io(reel_decoder **out, const reel_io *io, const char *name,
                                  const reel_decoder_settings *s, reel_error *err);

/** Closes and frees; sets *dec to NULL. NULL or *dec NULL is a no-op. */
REEL_API void reel_decoder_close(reel_decoder **dec);

/** What reading a video at an http(s)/s3 URL has cost so far (requests,
 *  retries, failures, bytes fetched, durations), since it was opened;
 *  zeros for a local file or memory. */
REEL_API int reel_decoder_get_remote_stats(const reel_decoder *dec, reel_remote_stats *out, reel_error *err);

/** The stream's metadata. The pointer lives as long as the decoder. */
REEL_API const reel_video_info *reel_decoder_get_info(const reel_decoder *dec);

/** An estimate of the memory the decoder holds, in bytes (0 for NULL): its
 *  frame table and per-packet arrays, and for it and each GOP-parallel
 *  context opened so far, the pictures its codec may hold (8 kept for a
 *  next call or as references, one in flight per codec thread, the
 *  keyframe probe's) at the stream's size and pixel format. FFmpeg's own
 *  buffers beyond those are not counted. For caches that bound decoders by
 *  bytes. */
REEL_API int64_t reel_decoder_get_memory(const reel_decoder *dec);

/** The name given at open (the path for files). Lives as long as the decoder. */
REEL_API const char *reel_decoder_get_name(const reel_decoder *dec);

/** The exact frame table: num_frames rows in presentation order. Lives as
 *  long as the decoder. */
REEL_API const reel_frame_entry *reel_decoder_get_frame_table(const reel_decoder *dec, int64_t *count);

/** Frame indices of the keyframes, ascending. Lives as long as the decoder. */
REEL_API const int64_t *reel_decoder_get_keyframes(const reel_decoder *dec, int64_t *count);

/** Seconds -> frame index: the frame whose [pts, pts+duration) holds t.
 *  t before the first frame or at/after the end is REEL_E_OUT_OF_RANGE. */
REEL_API int reel_decoder_get_index_at_time(const reel_decoder *dec, double seconds, int64_t *index, reel_error *err);

/** Writes the sidecar index for this decoder's video to `path` (NULL: the
 *  default "<video>.reelidx"). */
REEL_API int reel_decoder_save_index(const reel_decoder *dec, const char *path, reel_error *err);

/** For a video at a URL: fetches now, ahead of reel_decoder_decode, the bytes
 *  that decoding exactly `indices` will read (the packets of each decode run,
 *  from its keyframe; runs close together in one request), so that the
 *  decode does not wait on the network. The bytes are kept by the decoder
 *  until the decode reads them, within the budget of its remote pool
 *  (reel_remote_settings.pool). A local video: nothing to do, REEL_OK. A
 *  failed fetch is returned, and the decode tries again on demand. */
REEL_API int reel_decoder_prefetch(reel_decoder *dec, const int64_t *indices, size_t n, reel_error *err);

/** Visitor called once per requested position. Frames arrive in decode
 *  order, not request order; a frame requested k times is visited k times
 *  (with its k positions). Return 0 to go on; non-zero stops the call at
 *  once (the visitor is not called again): a negative reel status is
 *  returned as is, a positive value as REEL_E_CANCELLED. */
typedef int (*reel_frame_fn)(void *opaque, const reel_frame *frame, size_t request_pos);

/** The low-level batched call: decodes exactly the frames in `indices`
 *  (any order, repeats allowed, negative counts from the end) with the
 *  least work, and hands each to `fn`. `stats` may be NULL. */
REEL_API int reel_decoder_decode(reel_decoder *dec, const int64_t *indices, size_t n, reel_frame_fn fn, void *opaque,
                                 reel_decode_stats *stats, reel_error *err);

/** Bytes needed for one frame of output under `t` (NULL: the defaults of
 *  reel_transform_default_settings), and the output size. Uses the stream's
 *  size (rotated if t asks, as the defaults do). */
REEL_API int reel_decoder_get_output_size(const reel_decoder *dec, const reel_transform *t, int *width, int *height,
                                          size_t *frame_bytes, reel_error *err);

/** Frames at `indices` (negative: from the end), converted per `t` (NULL:
 *  the defaults, RGB24 HWC at the display size, reel_video_info.width x
 *  height) into `dst` in request order, each frame frame_bytes apart. `dst_size` must be >= n * frame_bytes.
 *  A decoder on a GPU (reel_decoder_get_device says "cuda:N"): `dst` is a device
 *  address on that GPU (a CUdeviceptr in its primary context, e.g.
 *  reel_device_buffer_get_address), written by the conversion kernel; the
 *  call returns when the frames are written. The same holds for every call
 *  below that writes frames (get_frames_at_times, get_range,
 *  get_frames_near, reel_decode_near); get_frames_alloc refuses. */
REEL_API int reel_decoder_get_frames(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t,
                                     void *dst, size_t dst_size, reel_decode_stats *stats, reel_error *err);

/** The same, but the library allocates the output: *out (free with
 *  reel_free) of *out_size bytes. A decoder on a GPU: REEL_E_INVALID_ARG
 *  (reel_decoder_get_frames_device). */
REEL_API int reel_decoder_get_frames_alloc(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t,
                                           void **out, size_t *out_size, reel_decode_stats *stats, reel_error *err);

/** A decoder on a GPU: the same frames into device memory the library
 *  allocates on the decoder's GPU, n * frame_bytes long (*out, freed with
 *  reel_device_buffer_free; it outlives the decoder). The buffer carries the
 *  event of this write (reel_device_buffer_wait). A CPU decoder:
 *  REEL_E_INVALID_ARG. Failures on the GPU: REEL_E_CUDA naming the file,
 *  CUDA's call and its error; the decoder stays usable. */
REEL_API int reel_decoder_get_frames_device(reel_decoder *dec, const int64_t *indices, size_t n,
                                            const reel_transform *t, reel_device_buffer **out, reel_decode_stats *stats,
                                            reel_error *err);

/** Where the decoder's frames go: "cuda:N" for a decoder on GPU N, "cpu"
 *  for a decoder on the CPU (device "cpu", or "cuda" turned into a CPU
 *  decoder by device_fallback "cpu"); NULL for NULL. Lives as long as the
 *  decoder. */
REEL_API const char *reel_decoder_get_device(const reel_decoder *dec);

/** A decoder on a GPU: "" while NVDEC decodes its frames, else why they
 *  are decoded on the CPU and uploaded (no libnvcuvid.so.1; FFmpeg offers no
 *  CUDA hwaccel for the codec; NVDEC did not start for its profile or
 *  size). NULL for a decoder on the CPU. Lives as long as the decoder. */
REEL_API const char *reel_decoder_get_upload_reason(const reel_decoder *dec);

/** Frames displayed at `seconds` (the frame whose [pts, pts+duration)
 *  contains t). `indices_out` (may be NULL) receives the resolved indices. */
REEL_API int reel_decoder_get_frames_at_times(reel_decoder *dec, const double *seconds, size_t n,
                                              const reel_transform *t, void *dst, size_t dst_size, int64_t *indices_out,
                                              reel_decode_stats *stats, reel_error *err);

/* ---- Frames by timestamp with a tolerance (near.c) -------------------
 * The frame nearest to a time t is the one whose pts in the exact frame
 * table is closest to t, compared exactly (t as the double it is, pts as a
 * rational of the stream's time base), ties to the earlier frame; never
 * round(t * fps). Its distance is |t - pts| in seconds. It answers another
 * question than reel_decoder_get_frames_at_times (the frame whose
 * [pts, pts + duration) holds t): a time a hair before a frame's start
 * (float32 timestamps i / fps) is near that frame, but played in the one
 * before. A time outside the video is near its first or last frame, and as
 * far from it as it is. Times may come in any order, with repeats; the
 * results are in request order. */

/** What a call does when the frame nearest to a time is farther from it
 *  than the tolerance. */
typedef enum reel_near_violation {
    REEL_NEAR_RAISE = 0, /**< fail with REEL_E_FRAME_TIMESTAMP, naming the file, the time asked, the
                              nearest frame and its pts; nothing is decoded (default) */
    REEL_NEAR_FLAG = 1   /**< decode the nearest frame anyway and set its within_out entry to 0 */
} reel_near_violation;

/** Settings of reel_decoder_get_frames_near and reel_decode_near. Initialise
 *  with reel_near_default_settings(); a value outside its range is
 *  REEL_E_INVALID_ARG naming "settings.<field>". */
typedef struct reel_near_settings {
    double tolerance_s;               /**< a frame is within the tolerance when |t - pts| <= tolerance_s (>= 0, not NaN;
                             +inf accepts any frame); default 1e-4 s (LeRobot's) */
    reel_near_violation on_violation; /**< reel_near_violation; default REEL_NEAR_RAISE */
    int threads;          /**< reel_decode_near only: threads of the call, over its decoders and their keyframe
                      runs (>= 0); 0 (default): the core count. reel_decoder_get_frames_near decodes as
                      reel_decoder_get_frames does (the decoder's gop_contexts). */
    uint8_t reserved[48]; /**< zero (the defaults function clears it); room to grow (common.h) */
} reel_near_settings;

/** Fills `s` with the defaults documented on each field. */
REEL_API void reel_near_default_settings(reel_near_settings *s);

/** The frame nearest to `seconds` (see above) and its distance in seconds
 *  (`distance` may be NULL). A time that is not a finite number is
 *  REEL_E_INVALID_ARG, a video without frames REEL_E_OUT_OF_RANGE; no
 *  tolerance applies here. */
REEL_API int reel_decoder_get_index_near_time(const reel_decoder *dec, double seconds, int64_t *index, double *distance,
                                              reel_error *err);

/** The frames nearest to `seconds` (any order, repeats allowed), converted
 *  per `t` (as reel_decoder_get_frames) into `dst` in request order.
 *  `s` (NULL: the defaults) sets the tolerance and what a violation does.
 *  The outputs, each NULL or n long: `indices_out` the frames' indices,
 *  `distance_out` |t - pts| in seconds, `within_out` 1 where the frame is
 *  within the tolerance, else 0 (REEL_NEAR_FLAG). Every time is checked
 *  before anything is decoded. */
REEL_API int reel_decoder_get_frames_near(reel_decoder *dec, const double *seconds, size_t n,
                                          const reel_near_settings *s, const reel_transform *t, void *dst,
                                          size_t dst_size, int64_t *indices_out, double *distance_out,
                                          uint8_t *within_out, reel_decode_stats *stats, reel_error *err);

/** One decoder's part of a reel_decode_near call: the frames nearest to its
 *  times, as reel_decoder_get_frames_near would give them. The caller fills
 *  it (zero it first, or the reserved bytes). */
typedef struct reel_near_job {
    reel_decoder *decoder;           /**< borrowed (common.h); several jobs may share one */
    const double *seconds;           /**< n times, borrowed (common.h) */
    size_t n;                        /**< how many times */
    const reel_transform *transform; /**< the output, borrowed (common.h); NULL: the defaults */
    void *dst;                       /**< n frames of output, borrowed (common.h) */
    size_t dst_size;                 /**< bytes at dst: at least n frames' */
    int64_t *indices_out;            /**< NULL or n entries, borrowed (common.h) */
    double *distance_out;            /**< NULL or n entries, borrowed (common.h) */
    uint8_t *within_out;             /**< NULL or n entries, borrowed (common.h) */
    uint8_t reserved[32];            /**< zero; room to grow (common.h) */
} reel_near_job;

/** Several decoders' frames nearest to their times in one call (the cameras
 *  of a robot's sample, or of a whole batch), on reel's threads: every
 *  job's times are checked first (a violation under REEL_NEAR_RAISE, or a
 *  bad argument, fails the call naming the job's file before anything is
 *  decoded); then the jobs of one decoder (with the same transform) are
 *  planned as one request, and the decoders run side by side, each one
 *  over its keyframe runs on GOP-parallel contexts (reel_decoder_settings
 *  gop_contexts) while s->threads leaves room: threads / decoders contexts
 *  each. Each decoder is used by one thread at a time, and by no one else
 *  during the call. A decode failure fails the call with the first failing
 *  job's error (in job order); the other jobs' outputs are then
 *  unspecified. `failed_job` (may be NULL) gets the index of the job whose
 *  error is returned, or n_jobs when the call failed as a whole (settings,
 *  memory) or succeeded. */
REEL_API int reel_decode_near(const reel_near_job *jobs, size_t n_jobs, const reel_near_settings *s, size_t *failed_job,
                              reel_error *err);

/** Frames start, start+step, ... < stop (Python slice semantics for
 *  non-negative step; stop clamped to num_frames). `*n_out` gets the count. */
REEL_API int reel_decoder_get_range(reel_decoder *dec, int64_t start, int64_t stop, int64_t step,
                                    const reel_transform *t, void *dst, size_t dst_size, size_t *n_out,
                                    reel_decode_stats *stats, reel_error *err);

#ifdef __cplusplus
}
#endif
#endif /* REEL_DECODER_H */
