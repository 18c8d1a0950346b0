/* reel/io.h: remote input: settings for reading http(s):// and s3:// objects
 * (videos, manifests, packed stores) wherever reel takes a path. */
#ifndef REEL_IO_H
#define REEL_IO_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 *  never appear in any message. */
typedef struct reel_remote_settings {
    double request_timeout;     /**< seconds per request; default 30 */
    double connect_timeout;     /**< seconds to connect; default 10 */
    int max_retries;            /**< retries of a failed request (connection errors,
                                     timeouts, 429, 5xx, short bodies); default 5 */
    double retry_budget;        /**< seconds all tries of one request may take; default 60 */
    size_t readahead_min;       /**< bytes fetched at least per request; default 256 KiB */
    size_t readahead_max;       /**< readahead grows to this on sequential reads; default 8 MiB */
    size_t whole_object_max;    /**< objects up to this size are fetched whole; default 16 MiB */
    int verify_tls;             /**< verify certificates; default 1 */
    const char *ca_bundle;      /**< a CA bundle file; NULL: the system's */
    const char *bearer_token;   /**< http(s): "Authorization: Bearer ..."; NULL: none */
    const char *const *headers; /**< extra "Name: value" headers, NULL-terminated; NULL: none */
    uint8_t reserved[64];
} reel_remote_settings;

/** Buckets of reel_remote_stats.latency: bucket i counts requests that took
 *  [2^(i/4), 2^((i+1)/4)) microseconds (four per octave, about 19% wide). */
#define REEL_LATENCY_BUCKETS 112

/** What the remote input did, for metrics. */
typedef struct reel_remote_stats {
    int64_t requests, retries, failures;
    int64_t bytes_fetched;
    double request_seconds;
    int64_t latency[REEL_LATENCY_BUCKETS]; /**< requests by duration (see REEL_LATENCY_BUCKETS) */
} reel_remote_stats;

/** The q-quantile (0..1) of the request durations in `s`, in seconds (the
 *  middle of its bucket); 0 when there were no requests. */
REEL_API double reel_remote_stats_quantile(const reel_remote_stats *s, double q);

/** Adds b's counts into a. */
REEL_API void reel_remote_stats_add(reel_remote_stats *a, const reel_remote_stats *b);

/** Fills `s` with the defaults documented on each field. */
REEL_API void reel_remote_default_settings(reel_remote_settings *s);

#ifdef __cplusplus
}
#endif
#endif /* REEL_IO_H */
