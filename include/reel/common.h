/* reel/common.h: status codes, the error record every call can fill, version and
 * the opaque decoded frame. Shared by every other public header. */
#ifndef REEL_COMMON_H
#define REEL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* REEL_API marks the exported functions: exported when building the shared
 * library (REEL_BUILDING_DLL, set by reel's build), imported otherwise
 * (dllimport on Windows; nothing with GCC/clang), nothing for a static
 * library user on Windows (REEL_STATIC). */
#if defined(_WIN32)
#if defined(REEL_BUILDING_DLL)
#define REEL_API __declspec(dllexport)
#elif defined(REEL_STATIC)
#define REEL_API
#else
#define REEL_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) && defined(REEL_BUILDING_DLL)
#define REEL_API __attribute__((visibility("default")))
#else
#define REEL_API
#endif

#define REEL_VERSION_MAJOR 0
#define REEL_VERSION_MINOR 1
#define REEL_VERSION_PATCH 0

/* The API version, as dav1d's: (major << 16) | (minor << 8) | patch, bumped
 * when a public declaration changes incompatibly (major), grows (minor), or
 * is only clarified (patch). REEL_API_VERSION is what a caller compiled
 * against; reel_version_api() is what it runs against: a program may refuse
 * to run when REEL_API_VERSION_MAJOR_OF(reel_version_api()) differs from the
 * major it compiled against. Major 0 until the API is frozen as 1.0. */
#define REEL_API_VERSION_MAJOR       0
#define REEL_API_VERSION_MINOR       1
#define REEL_API_VERSION_PATCH       0
#define REEL_API_VERSION             ((REEL_API_VERSION_MAJOR << 16) | (REEL_API_VERSION_MINOR << 8) | REEL_API_VERSION_PATCH)
#define REEL_API_VERSION_MAJOR_OF(v) (((v) >> 16) & 0xFF)
#define REEL_API_VERSION_MINOR_OF(v) (((v) >> 8) & 0xFF)
#define REEL_API_VERSION_PATCH_OF(v) ((v)&0xFF)

/** Status codes. Every fallible public call returns REEL_OK (0) or one of
 *  these negative values. The set is closed: new causes get new codes. */
typedef enum reel_status {
    REEL_OK = 0,
    REEL_E_INVALID_ARG = -1,       /**< a bad argument from the caller */
    REEL_E_NOT_FOUND = -2,         /**< the file does not exist */
    REEL_E_IO = -3,                /**< read/write/permission failure */
    REEL_E_NOT_VIDEO = -4,         /**< not a recognised media container */
    REEL_E_NO_VIDEO_STREAM = -5,   /**< container has no (such) video stream */
    REEL_E_UNSUPPORTED_CODEC = -6, /**< no decoder for the stream's codec */
    REEL_E_CORRUPT = -7,           /**< truncated file or corrupt packets */
    REEL_E_OUT_OF_RANGE = -8,      /**< frame index or timestamp outside the video */
    REEL_E_NOMEM = -9,             /**< an allocation failed */
    REEL_E_INDEX_STALE = -10,      /**< a sidecar index does not match its video */
    REEL_E_BUFFER_TOO_SMALL = -11, /**< caller's output buffer is too small */
    REEL_E_TIMEOUT = -12,          /**< a per-sample time limit ran out */
    REEL_E_CANCELLED = -13,        /**< the operation was stopped by shutdown */
    REEL_E_EMPTY = -14,            /**< a dataset with nothing in it */
    REEL_E_INTERNAL = -15,         /**< a bug in reel or FFmpeg; please report */
    REEL_E_AGAIN = -16,            /**< nothing ready within the wait; call again */
    REEL_E_PERMISSION = -17,       /**< access denied (HTTP 401/403, S3 AccessDenied, a bad signature) */
    REEL_E_NO_DATA = -18,          /**< an epoch ended with no sample loaded, or under min_coverage */
    REEL_E_NO_AUDIO_STREAM = -19,  /**< the video has no (such) audio stream (reel/audio.h) */
    REEL_E_FRAME_TIMESTAMP = -20,  /**< no frame within the tolerance of a time asked for
                                        (reel_decoder_get_frames_near, reel_decode_near) */
    REEL_E_CUDA =
        -21 /**< device "cuda": no NVIDIA driver or GPU, a CUDA call failed, or what the GPU path does not do */
} reel_status;

/* Ownership (one rule for every public header):
 *
 *  - Borrowed: a pointer the caller hands in (a settings struct, a string,
 *    an array, a pool, a callback's opaque pointer) stays the caller's.
 *    reel never frees it, and it must stay valid until the object created
 *    with it is closed or destroyed (reel may copy it sooner, but does not
 *    promise to). Fields that follow this rule say "borrowed (common.h)".
 *  - Returned: a pointer reel hands out (a getter's result, a string in an
 *    output struct) is reel's; do not free it. It lives as long as the
 *    object it came from, unless its comment names a shorter life (e.g. a
 *    batch's, until reel_loader_release). Names and descriptions
 *    (reel_strerror, reel_version, *_cause_name, the field tables, the
 *    metrics' stage and bottleneck names) are static: valid forever.
 *  - Allocated for the caller: memory a call allocates and hands over
 *    (a char ** output) is freed with reel_free. */

/* Room to grow (one convention for every public struct; reel 1.0 keeps
 * each struct's size and offsets, so a binary built against an older header
 * keeps working):
 *
 *  - Every struct that a caller allocates (settings and inputs it fills,
 *    outputs a call fills: info, stats, metrics, reports, records, state)
 *    ends with `uint8_t reserved[N]`, which must be zero. The defaults
 *    function (*_default_settings) clears it, and so does every call that
 *    fills an output; a caller that fills a struct without the defaults
 *    function zeroes it first (memset, or `= {0}`). A new field takes its
 *    bytes from `reserved`: sizeof and every offset stay the same.
 *  - Structs that reel alone allocates and hands out by pointer, never an
 *    array the caller indexes (reel_batch, reel_pack_progress), grow at
 *    their end instead.
 *  - Fixed, never to grow: reel_error (its message buffer is the record),
 *    reel_field (rows of static tables) and reel_frame_entry (one row per
 *    frame of a video: a new per-frame fact gets a table of its own).
 *  tests/python/test_public_api.py checks the list; tests/c/test_api.c that
 *  `reserved` ends each struct and that the calls leave it zero. */

/** The lowest status code: REEL_E_LAST <= status <= REEL_OK for every
 *  status (moves with each new code; for tables indexed by -status). */
#define REEL_E_LAST REEL_E_CUDA

/** Size of the message buffer inside reel_error. */
#define REEL_ERROR_MSG_SIZE 512

/** An error record. Any call taking `reel_error *err` fills it on failure
 *  (when err is not NULL) with the status and a message of the form
 *  "<file>: <reason>". On success it is left untouched. Plain data: copy,
 *  stack-allocate, share freely. */
typedef struct reel_error {
    reel_status status;
    char message[REEL_ERROR_MSG_SIZE];
} reel_error;

/** How a field of a public struct is stored (reel_field). */
typedef enum reel_field_type {
    REEL_FIELD_INT = 0,     /**< int, or a C enum */
    REEL_FIELD_INT64 = 1,   /**< int64_t */
    REEL_FIELD_UINT64 = 2,  /**< uint64_t */
    REEL_FIELD_SIZE = 3,    /**< size_t */
    REEL_FIELD_DOUBLE = 4,  /**< double */
    REEL_FIELD_FLOAT = 5,   /**< float */
    REEL_FIELD_FLOAT3 = 6,  /**< float[3] */
    REEL_FIELD_STRING = 7,  /**< const char * (NULL: "") */
    REEL_FIELD_BY_CAUSE = 8 /**< int64_t[REEL_REMOTE_CAUSE_COUNT], keyed by reel_remote_cause_name() */
} reel_field_type;

/** One field of a public struct, by name. The settings and metrics structs
 *  publish one table each (reel_loader_settings_get_fields(),
 *  reel_loader_metrics_get_fields(), reel_remote_settings_get_fields(), ...): the
 *  JSON writers, the Python binding and the docs read these tables, so a
 *  field list is written once. Names with a dot ("sampler.frames_per_clip",
 *  "remote.requests") are nested: one object per prefix. The tables are
 *  static: never freed, valid for the life of the process. */
typedef struct reel_field {
    const char *name;     /**< the key in JSON, Python and the docs; static (ownership above) */
    reel_field_type type; /**< how it is stored */
    size_t offset;        /**< offsetof(struct, field) */
} reel_field;

/** An opaque decoded frame, as handed to a reel_frame_fn visitor (see
 *  reel/decoder.h); its getters are in reel/convert.h. Valid only during the
 *  callback. Declared here because the decoder, the store and convert all
 *  hand it on, and none of them owns the others. */
typedef struct reel_frame reel_frame;

/** Short, static, English description of a status code. Never NULL. */
REEL_API const char *reel_strerror(int status);

/** Resets an error record to REEL_OK with an empty message. */
REEL_API void reel_error_clear(reel_error *err);

/** The library version as "MAJOR.MINOR.PATCH". */
REEL_API const char *reel_version(void);

/** The API version libreel was built with: REEL_API_VERSION of its headers. */
REEL_API unsigned reel_version_api(void);

/** Versions of the FFmpeg libraries reel runs against, e.g.
 *  "libavcodec 59.37.100, libavformat 59.27.100, ...". Static: valid
 *  forever, never freed. */
REEL_API const char *reel_ffmpeg_versions(void);

/** What this copy of reel was built with, as one JSON object: "reel",
 *  "ffmpeg" (av_version_info), "ffmpeg_libraries", "ffmpeg_configuration"
 *  (FFmpeg's exact configure line), "ffmpeg_license", "libswresample"
 *  (its version), "audio_decoders" (each audio codec reel decodes, by
 *  FFmpeg's codec name, to the loaded decoder's name or null),
 *  "hwdevice_types" (FFmpeg's hardware device types: "cuda", ...),
 *  "hwaccels" (per device type, the decoders that can use it: under "cuda"
 *  the NVDEC ones), "libjpeg_turbo", "zstd", "libcurl" and "tls" (libcurl's
 *  TLS library). The caller frees it with reel_free(); NULL when out of
 *  memory. Thread-safe. */
REEL_API char *reel_build_info(void);

/** Sets FFmpeg's log verbosity: 0 quiet, 1 errors, 2 warnings, 3 info.
 *  FFmpeg keeps this one setting per process, so this affects every user
 *  of FFmpeg in the process; reel itself reports through reel_error and
 *  never relies on the log. Thread-safe. */
REEL_API void reel_set_ffmpeg_log_level(int level);

/** Frees memory that reel allocated and handed to the caller. NULL is fine. */
REEL_API void reel_free(void *ptr);

#ifdef __cplusplus
}
#endif
#endif /* REEL_COMMON_H */
