/* reel/io.h: all of reel's input I/O: caller-supplied input (reel_io, for
 * reel_decoder_open_io), and remote input: settings for reading http(s):// and
 * s3:// objects (videos, manifests, packed stores) wherever reel takes a
 * path, the remote pool, and the statistics of remote requests. */
#ifndef REEL_IO_H
#define REEL_IO_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Caller-supplied input. `read` returns bytes read, 0 at end of file, or
 *  a negative value on error. `seek` takes SEEK_SET/SEEK_CUR/SEEK_END, or
 *  REEL_SEEK_SIZE to ask for the total size (return -1 if unknown), and
 *  returns the new position or a negative value. `seek` may be NULL for
 *  a non-seekable stream (then random access rescans from the start is
 *  impossible, and opening fails unless the data fits a single pass).
 *  The callbacks are called from the thread that calls the decoder. */
#define REEL_SEEK_SIZE 0x10000
typedef struct reel_io {
    void *opaque; /**< passed to the callbacks; borrowed (common.h) */
    int (*read)(void *opaque, uint8_t *buf, int size);
    int64_t (*seek)(void *opaque, int64_t offset, int whence);
    uint8_t reserved[32]; /**< zero; room to grow (common.h) */
} reel_io;

/** How remote objects are fetched. Initialise with reel_remote_default_settings().
 *  S3: the endpoint comes from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (path-style
 *  addressing; REEL_S3_ADDRESSING=virtual for virtual-hosted), else AWS
 *  (virtual-hosted); the region from AWS_REGION or AWS_DEFAULT_REGION (us-east-1);
 *  credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN,
 *  else the AWS_PROFILE (or default) profile of ~/.aws/credentials
 *  (AWS_SHARED_CREDENTIALS_FILE); requests are signed with SigV4 by libcurl, or
 *  anonymous without credentials. An s3://bucket/prefix/ dataset is listed with
 *  ListObjectsV2 (REEL_S3_LIST_PAGE=N asks for N keys a page, 1-1000, for
 *  tests; default the server's 1,000). http(s) URLs are sent with spaces,
 *  non-ASCII and other bytes no URL may hold %-encoded ('%' is kept).
 *  Messages show URLs with user info and query strings redacted; credentials
 *  never appear in any message.
 *  Every answer is checked against its request before its body is kept:
 *  reel asks for the identity encoding and decodes nothing, so an encoded
 *  body is refused ("encoded body refused"); a 206 must hold the range asked
 *  for, from its start to its end or the object's (else "range mismatch",
 *  naming both ranges, retried like a short body); no body may grow past the
 *  range asked for plus 64 KiB ("body longer than the requested range"); a
 *  200 (a server that ignores Range) is kept only up to whole_object_max,
 *  refused as soon as its length shows it is larger. */
typedef struct reel_remote_settings {
    double request_timeout;     /**< seconds per request; default 30 */
    double connect_timeout;     /**< seconds to connect; default 10 */
    int max_retries;            /**< retries of a failed request (connection errors,
                                     timeouts, 429, 5xx, short bodies, range mismatches); default 5 */
    double retry_budget;        /**< seconds all tries of one request may take; default 60 */
    size_t readahead_min;       /**< bytes fetched at least per request; also the gap up to which hinted
                                     ranges (GOPs, a remote mp4's audio packets) come in one request;
                                     default 256 KiB */
    size_t readahead_max;       /**< readahead grows to this on sequential reads; default 8 MiB */
    size_t whole_object_max;    /**< objects up to this size are fetched whole; default 16 MiB */
    int verify_tls;             /**< verify certificates; default 1 */
    const char *ca_bundle;      /**< a CA bundle file, borrowed (common.h); NULL: SSL_CERT_FILE and/or
                                     SSL_CERT_DIR when set, else the first system store found on the
                                     Debian, RHEL/Fedora/Amazon Linux, SUSE and Alpine paths (docs/WHEEL.md) */
    const char *bearer_token;   /**< http(s): "Authorization: Bearer ...", borrowed (common.h); NULL: none */
    const char *const *headers; /**< extra "Name: value" headers, NULL-terminated, borrowed (common.h); NULL: none.
                                     With any, a redirect to another origin is refused (they would go there) */
    /** Objects opened with the same pool share kept-alive connections, one DNS
     *  cache and one TLS session cache, and one budget of bytes fetched ahead
     *  (see reel_remote_pool_create). NULL: each object has its own connection
     *  (kept alive between its requests) and no budget; a loader then makes a
     *  pool of its own for its objects. Borrowed (common.h): the pool must
     *  outlive the objects. */
    struct reel_remote_pool *pool;
    /** The budget of the pool a loader makes for itself (pool NULL): bytes
     *  fetched ahead of decoding, in flight or waiting, across all of its
     *  samples; default 256 MiB. */
    size_t max_bytes_in_flight;
    uint8_t reserved[48];
} reel_remote_settings;

/** Connections, DNS and TLS sessions shared by remote objects, and a budget of
 *  bytes fetched ahead. Thread-safe: objects on any number of threads may use
 *  one pool at once. A connection serves one transfer at a time: it is lent
 *  to a transfer and comes back to the pool when the transfer ends, so a
 *  loader's threads keep as many connections open as they have transfers at
 *  once, not one per object; a new connection to a host already seen
 *  resumes its TLS session rather than making a full handshake. */
typedef struct reel_remote_pool reel_remote_pool;

/** Creates a pool whose fetch-ahead (reel_decoder_prefetch, the loader's
 *  stage 1) holds at most max_bytes_in_flight bytes at once (0: 256 MiB); a
 *  fetch-ahead that does not fit waits for bytes to be consumed, up to the
 *  object's request_timeout, and is then skipped (the reads fetch on demand).
 *  One fetch larger than the budget runs alone. */
REEL_API int reel_remote_pool_create(reel_remote_pool **out, size_t max_bytes_in_flight, reel_error *err);

/** Closes the pool's idle connections and frees it; sets *pool to NULL.
 *  Every object using it must be closed first. NULL is fine. */
REEL_API void reel_remote_pool_destroy(reel_remote_pool **pool);

/** The most bytes the pool's fetch-ahead held at once since it was created. */
REEL_API int64_t reel_remote_pool_get_peak_bytes(const reel_remote_pool *pool);

/** Buckets of reel_remote_stats.latency: bucket i counts requests that took
 *  [2^(i/4), 2^((i+1)/4)) microseconds (four per octave, about 19% wide). */
#define REEL_LATENCY_BUCKETS 112

/** Why a remote request was retried or failed (reel_remote_stats by cause). */
typedef enum reel_remote_cause {
    REEL_REMOTE_CAUSE_CONNECTION = 0, /**< could not connect, or the connection was reset or lost */
    REEL_REMOTE_CAUSE_TIMEOUT,        /**< the request or connect timeout */
    REEL_REMOTE_CAUSE_THROTTLED,      /**< HTTP 429 */
    REEL_REMOTE_CAUSE_SERVER,         /**< HTTP 5xx */
    REEL_REMOTE_CAUSE_SHORT_BODY,     /**< a body cut short */
    REEL_REMOTE_CAUSE_CLIENT,         /**< HTTP 4xx but 429 (403, 404, 416, ...) or a malformed URL: not retried */
    REEL_REMOTE_CAUSE_TLS,            /**< the certificate was not trusted: not retried */
    REEL_REMOTE_CAUSE_COUNT
} reel_remote_cause;

/** A short name for a cause ("connection", "timeout", "throttled", "server",
 *  "short_body", "client", "tls"); "unknown" out of range. Static. */
REEL_API const char *reel_remote_cause_name(reel_remote_cause cause);

/** What the remote input did, for metrics. */
typedef struct reel_remote_stats {
    int64_t requests, retries, failures; /**< failures: requests that failed for good (not cancelled) */
    int64_t retries_by_cause[REEL_REMOTE_CAUSE_COUNT];
    int64_t failures_by_cause[REEL_REMOTE_CAUSE_COUNT];
    int64_t object_bytes; /**< the sizes of the objects opened: bytes_fetched / object_bytes is
                               the share of the objects fetched (readahead and whole-object
                               fetches above the bytes used show here; fetch by GOP keeps it
                               well below 1 on long videos) */
    int64_t bytes_fetched;
    double request_seconds;
    int64_t connections;                   /**< new connections made (a request on a kept-alive one makes none) */
    int64_t budget_waits;                  /**< fetch-aheads that waited for the pool's bytes-in-flight budget */
    int64_t budget_skips;                  /**< fetch-aheads skipped after waiting request_timeout for it */
    double budget_wait_seconds;            /**< time those waits took */
    int64_t latency[REEL_LATENCY_BUCKETS]; /**< requests by duration (see REEL_LATENCY_BUCKETS) */
    uint8_t reserved[64];                  /**< zero; room to grow (common.h) */
} reel_remote_stats;

/** The q-quantile (0 <= q <= 1; REEL_E_INVALID_ARG for another q) of the
 *  request durations in `s`, in seconds (the middle of its bucket); 0 when
 *  there were no requests. */
REEL_API int reel_remote_stats_get_quantile(const reel_remote_stats *s, double q, double *seconds, reel_error *err);

/** Adds b's counts into a. */
REEL_API void reel_remote_stats_add(reel_remote_stats *a, const reel_remote_stats *b);

/** Fills `s` with the defaults documented on each field. */
REEL_API void reel_remote_default_settings(reel_remote_settings *s);

/** The fields of reel_remote_settings that are set by name (the Python
 *  binding's remote={...} keys), *count of them. Static (see reel_field). */
REEL_API const reel_field *reel_remote_settings_get_fields(size_t *count);

/** The counters of reel_remote_stats by name, as the metrics report them
 *  (the latency histogram is summed up as quantiles instead). Static. */
REEL_API const reel_field *reel_remote_stats_get_fields(size_t *count);

/** Reads a whole object into *data (a local path, or an http(s):// or s3://
 *  URL through reel's remote input: `settings`' timeouts, retries, TLS and CA
 *  rules, bearer token and headers; S3 signed with the environment's
 *  credentials as above; NULL: the defaults), in requests of readahead_max
 *  bytes at most (each retried alone). *data holds *size bytes and a
 *  NUL after them; the caller frees it with reel_free. An object larger than
 *  max_bytes is refused before its body is read (REEL_E_INVALID_ARG, naming
 *  both sizes); a missing one is REEL_E_NOT_FOUND, a refused one
 *  REEL_E_PERMISSION. Messages name the path or the redacted URL. On error
 *  *data is NULL and *size 0. Thread-safe. */
REEL_API int reel_remote_read(const char *uri, const reel_remote_settings *settings, size_t max_bytes, void **data,
                              size_t *size, reel_error *err);

/** Writes `url` as reel's messages show it into out[size]: user info and
 *  any query string or fragment replaced by "***" and control bytes (CR,
 *  LF, ...) as %XX (a local path unchanged), so it can be logged or stored
 *  without a credential, on one line. Truncated to fit. */
REEL_API void reel_url_redact(const char *url, char *out, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* REEL_IO_H */
