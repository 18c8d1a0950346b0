/* reel/audio.h: a video's audio, sample-exact, for a window of its
 * timeline (the time a clip's frames are shown). Issue 28's first part:
 * local files, native rate or resampled, native channels or their mean. */
#ifndef REEL_AUDIO_H
#define REEL_AUDIO_H

#include "common.h"
#include "decoder.h"
#include "io.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * The contract
 * ======================================================================
 * a0: the pts of the first decoded audio sample, after libavformat and
 * libavcodec applied the edit list, AAC priming and Opus pre-skip.
 * The output grid has `sample_rate` samples a second anchored at a0:
 * the sample for time t is s(t) = floor((t - a0) * rate + 1/2), computed
 * exactly from the timestamps' rationals. A window [t0, t1) holds samples
 * s(t0) .. s(t1) - 1, so adjacent windows tile the stream with no gap or
 * overlap. A decoded frame more than 1 ms off the running sample count is
 * placed at its own pts (zeros fill a gap, an overlap is dropped), as
 * FFmpeg's `aresample=async=1:min_hard_comp=0` does. Outside the stream
 * the samples are zeros and reel_audio_window.valid_* says which part came
 * from it. The samples depend on the file, the window and the settings
 * only, whatever the order of the calls. One object keeps its decode going
 * from call to call, holding the last 4 s of output: a window that starts
 * there or later goes on; an earlier one restarts it. AAC restarts from a0
 * (libavcodec's AAC decoder draws its noise substitution from a generator
 * that neither a flush nor a seek resets). MP3, MP2, Opus, FLAC and PCM,
 * which decode the same after a seek with preroll, restart at a mark (a
 * frame's timestamp and the place the 1 ms rule gave it, one every 0.5 s of
 * what a run decoded): 200 ms of preroll before it (Opus: 1 s), and the resampler
 * restarted at a native index that is a multiple of sr / gcd(sr, rate),
 * 10 ms or more before the window, where it reproduces a whole-stream
 * resample exactly. A window past the end is known without decoding once a
 * run reached it. The cache: output samples a run produced, in blocks
 * on the grid, kept up to reel_audio_settings.cache_bytes, serve a window
 * they cover without decoding (the same samples: a block holds only
 * samples a restart decodes exactly, after its resampler's first 10 ms);
 * a run from a0 converts the samples a full cache can hold before its
 * window, so that windows read in any order decode the stream about once.
 * Memory: the window, the history, the marks, the cache (and the damage
 * found, one record per run of dropped packets).
 *
 * Damage (reel_audio_settings.corrupt_policy). A packet the codec rejects
 * (or whose decode fails) under REEL_CORRUPT_FAIL fails the call with
 * REEL_E_CORRUPT naming the file, the packet's time and the codec's reason.
 * Under REEL_CORRUPT_SKIP it is dropped and decoding goes on: the next good
 * frame is placed at its own pts by the 1 ms rule, so the dropped packet's
 * samples are zeros (what the ffmpeg CLI gives with
 * `aresample=async=1:min_hard_comp=0`; every sample equals its output).
 * Those samples are the window's `missing` ones: they lie in
 * [missing_lo, missing_hi) (exactly those when missing == missing_hi -
 * missing_lo, i.e. one damaged span in the window; at another output rate
 * the span also holds the samples whose resampling filter reaches into the
 * gap, 32 native samples x ceil(native rate / rate) on each side), and
 * corrupt_packets counts the dropped packets whose gap touches the window.
 * valid_lo, valid_hi then narrow to the longest run of the stream's part of
 * the window without a missing sample (ties: the earliest), so [valid_lo,
 * valid_hi) holds only samples decoded from the stream. The gap can be
 * longer than the dropped packet where the codec gives nothing for the
 * packets right after it (MP3's bit reservoir); the CLI's zeros are the
 * same. A file cut short ends where its last whole packet does: a packet
 * cut in two is a corrupt one (FAIL: the named error for a window that
 * reaches it; SKIP: valid_hi at the cut, the rest zeros, the packet
 * counted). Damage is the file's: what a run found is kept and a window's
 * decode goes on past it until every hole whose span reaches into the
 * window was met, so a window reports the same whatever the order of the
 * calls. */

/** reel_audio_settings.missing: a video without an audio stream. */
typedef enum reel_audio_missing {
    REEL_AUDIO_MISSING_RAISE = 0, /**< reel_audio_open fails with REEL_E_NO_AUDIO_STREAM */
    REEL_AUDIO_MISSING_ZEROS = 1  /**< every window is zeros (valid empty), at sample_rate and channels */
} reel_audio_missing;

/** Initialise with reel_audio_default_settings(). */
typedef struct reel_audio_settings {
    int sample_rate;            /**< output rate; 0 (default): the stream's own (needed by MISSING_ZEROS: give one) */
    int channels;               /**< 0 (default): the stream's own; 1: the mean of its channels */
    int stream_index;           /**< absolute stream index; -1 (default): the best audio stream */
    reel_audio_missing missing; /**< reel_audio_missing; default RAISE */
    /** http(s):// and s3:// paths: how the object is fetched (reel/io.h);
     *  borrowed (common.h), its strings and pool too, until
     *  reel_audio_close. NULL (default): reel_remote_default_settings(). */
    const struct reel_remote_settings *remote;
    /** A video at a URL adds every request made for its audio here when the
     *  object is closed (or its open failed); NULL (default): not kept.
     *  Borrowed (common.h); one tally per object at a time. */
    struct reel_remote_stats *remote_stats;
    /** Optional cancellation (default NULL), as reel_decoder_settings.interrupt:
     *  polled while opening, between packets while decoding and by a URL's
     *  fetches (a blocking read returns too); non-zero stops the call with
     *  REEL_E_CANCELLED, and the object stays usable (a later call restarts
     *  its decode). Must be cheap and thread-safe. */
    int (*interrupt)(void *opaque);
    void *interrupt_opaque; /**< passed to interrupt; borrowed (common.h) */
    /** Bytes of decoded output samples kept so that windows read in any
     *  order decode once (the contract above); default 8 MiB (about 2 min
     *  at 16 kHz mono); 0: none (an object that reads one window). */
    int64_t cache_bytes;
    /** A packet the codec rejects: REEL_CORRUPT_FAIL (default) fails the
     *  call, REEL_CORRUPT_SKIP drops it (its samples zeros, reported in
     *  reel_audio_window.missing; see "Damage" above). */
    reel_corrupt_policy corrupt_policy;
    uint8_t reserved[28]; /**< zero (the defaults function clears it); room to grow */
} reel_audio_settings;

/** Fills `s` with the defaults documented on each field. */
REEL_API void reel_audio_default_settings(reel_audio_settings *s);

/** What reel_audio_open found. */
typedef struct reel_audio_info {
    int has_audio;          /**< 0: no audio stream (MISSING_ZEROS) */
    int stream_index;       /**< -1 without audio */
    int native_sample_rate; /**< the stream's rate */
    int native_channels;    /**< the stream's channel count */
    int sample_rate;        /**< the output's */
    int channels;           /**< the output's */
    char codec[32];         /**< e.g. "aac", "mp3", "opus"; "" without audio */
    int64_t start_pts;      /**< a0 in the stream time base */
    int time_base_num, time_base_den;
    double start_seconds; /**< a0 in seconds */
    uint8_t reserved[32]; /**< zero; room to grow (common.h) */
} reel_audio_info;

/** Where a window's samples sit. */
typedef struct reel_audio_window {
    int64_t first_sample;           /**< s(t0) on the output grid (negative: before a0) */
    int64_t num_samples;            /**< s(t1) - s(t0) (0 for an empty window) */
    int64_t valid_lo, valid_hi;     /**< [lo, hi) of the window's samples that came from the
                                     stream (under REEL_CORRUPT_SKIP: the longest run of them
                                     without a missing sample); lo == hi: none */
    int64_t missing;                /**< samples of the window that stand for dropped packets
                                     (zeros; REEL_CORRUPT_SKIP); 0 without damage */
    int64_t missing_lo, missing_hi; /**< [lo, hi) of the window holding every missing sample
                                         (lo == hi: none); all of it missing when
                                         missing == missing_hi - missing_lo */
    int64_t corrupt_packets;        /**< packets dropped (REEL_CORRUPT_SKIP) whose gap touches the window */
    uint8_t reserved[32];           /**< zero; room to grow (common.h) */
} reel_audio_window;

/** What an object did so far (reel_audio_get_stats). */
typedef struct reel_audio_stats {
    int64_t windows;          /**< windows asked for that hold stream samples */
    int64_t windows_cached;   /**< of those, served whole from the cache, without decoding */
    int64_t runs_from_a0;     /**< decodes started from a0 */
    int64_t runs_from_mark;   /**< decodes restarted at a mark (a seek) */
    int64_t cache_bytes;      /**< the cache's samples now, in bytes */
    int64_t cache_peak_bytes; /**< the most it held (never over reel_audio_settings.cache_bytes) */
    uint8_t reserved[32];     /**< zero; room to grow (common.h) */
} reel_audio_stats;

/** Audio of one file. Thread-safety: one thread at a time per object;
 *  different objects are independent. */
typedef struct reel_audio reel_audio;

/** Opens the audio of the video at `path`, a file or an http(s):// or
 *  s3:// URL read by byte ranges like reel_decoder_open's (NULL settings:
 *  the defaults), and finds a0 (one packet's decode). Fails with REEL_E_NOT_FOUND,
 *  REEL_E_NOT_VIDEO, REEL_E_NO_VIDEO_STREAM (an audio-only file: reel
 *  times audio by a video's frames), REEL_E_NO_AUDIO_STREAM,
 *  REEL_E_UNSUPPORTED_CODEC, REEL_E_INVALID_ARG (a rate outside
 *  1..1,000,000 Hz, channels other than 0 or 1, a corrupt_policy other
 *  than FAIL or SKIP, a negative cache_bytes). */
REEL_API int reel_audio_open(reel_audio **out, const char *path, const reel_audio_settings *s, reel_error *err);

/** Opens the audio of the video that `dec` reads, as reel_audio_open of
 *  its path or URL would, without reading its bytes twice: for a video at
 *  an http(s):// or s3:// URL the audio reads through the decoder's own
 *  remote object, taking the bytes it holds already (the whole object when
 *  it is at most whole_object_max, the GOPs reel_decoder_prefetch fetched)
 *  and fetching only the rest, over the decoder's connection and with the
 *  decoder's remote settings (s->remote is not used); its own requests are
 *  what reel_audio_get_remote_stats and s->remote_stats show. A local file
 *  is opened again by its path. The two objects may be closed in either
 *  order (the bytes live until both are) and used on different threads at
 *  once (a request of one waits for the other's). The decoder's remote
 *  settings (their pool, strings) must outlive the audio too.
 *  REEL_E_INVALID_ARG for a decoder opened with reel_decoder_open_io or
 *  from memory (no path); else as reel_audio_open. */
REEL_API int reel_decoder_open_audio(const reel_decoder *dec, const reel_audio_settings *s, reel_audio **out,
                                     reel_error *err);

/** Closes and sets *a to NULL (NULL-safe). */
REEL_API void reel_audio_close(reel_audio **a);

/** What the file's audio is; valid until close. */
REEL_API const reel_audio_info *reel_audio_get_info(const reel_audio *a);

/** The window [t0, t1) of times t0 * num / den .. t1 * num / den seconds
 *  (e.g. a video stream's pts and time base): its first sample and count,
 *  without decoding. REEL_E_INVALID_ARG for t1 < t0 or a time base <= 0;
 *  REEL_E_OUT_OF_RANGE for a window over 2^31 samples. */
REEL_API int reel_audio_get_window(const reel_audio *a, int64_t t0, int64_t t1, int num, int den, reel_audio_window *w,
                                   reel_error *err);

/** The window's samples, float32 [channels, num_samples] into dst
 *  (dst_count floats at least channels * num_samples, else
 *  REEL_E_BUFFER_TOO_SMALL), and where they sit (w, may be NULL). A
 *  corrupt packet fails with REEL_E_CORRUPT naming the file, the packet's
 *  time and the codec's reason (REEL_CORRUPT_FAIL), or is dropped and
 *  reported in w (REEL_CORRUPT_SKIP). */
REEL_API int reel_audio_get_samples(reel_audio *a, int64_t t0, int64_t t1, int num, int den, float *dst,
                                    size_t dst_count, reel_audio_window *w, reel_error *err);

/** s(t) of the contract without a file (what a packed store needs to cut
 *  a clip from its record's samples): the sample for t = ts * num / den
 *  seconds on the grid of `sample_rate` samples a second anchored at a0 =
 *  a0_pts * a0_num / a0_den seconds (reel_audio_info's start_pts and time
 *  base), floor((t - a0) * rate + 1/2) computed exactly, as
 *  reel_audio_get_window does. REEL_E_INVALID_ARG for a time base or rate
 *  <= 0; REEL_E_OUT_OF_RANGE when the sample is out of range. */
REEL_API int reel_audio_sample_at(int64_t ts, int num, int den, int64_t a0_pts, int a0_num, int a0_den, int sample_rate,
                                  int64_t *sample, reel_error *err);

/** What the object did so far: windows, decodes, the cache's bytes.
 *  REEL_E_INVALID_ARG for NULL arguments. */
REEL_API int reel_audio_get_stats(const reel_audio *a, reel_audio_stats *out, reel_error *err);

/** The requests made so far for this object's bytes (zeros for a local
 *  file). REEL_E_INVALID_ARG for NULL arguments. */
REEL_API int reel_audio_get_remote_stats(const reel_audio *a, reel_remote_stats *out, reel_error *err);

#ifdef __cplusplus
}
#endif

#endif /* REEL_AUDIO_H */
