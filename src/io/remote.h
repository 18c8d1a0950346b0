/* remote.h: the remote backends of src/io: http(s) (http.c) and the s3://
 * addressing and credentials that turn an s3 URI into a signed request (s3.c). */
#ifndef REEL_IO_REMOTE_H
#define REEL_IO_REMOTE_H

#include <curl/curl.h>

#include "io/io_internal.h"
#include "reel/io.h"

int reel__io_open_http(reel__io **out, const char *uri, const reel__io_options *opt, reel_error *err);

/* s3://bucket/key -> the https URL to GET (with bucket_only: the bucket's
 * URL, ending in '/', the key ignored), "key:secret" for CURLOPT_USERPWD
 * (NULL: anonymous), the CURLOPT_AWS_SIGV4 string, and headers (a session
 * token). `name` (redacted) is for messages. */
int reel__s3_resolve(const char *uri, int bucket_only, char **url, char **userpwd, char *sigv4, size_t sigv4_size,
                     struct curl_slist **headers, const char *name, reel_error *err);

/* GETs a whole remote object (an http(s) URL, an s3:// object, or with
 * `query` an s3:// bucket's URL plus "?query", for listings), with the
 * retries and timeouts of reel_remote_settings. *body (free()) gets the
 * bytes, NUL-terminated. */
int reel__http_get(const char *uri, const char *query, const reel__io_options *opt, uint8_t **body, size_t *len,
                   reel_error *err);

/* The objects under s3://bucket/prefix/ (ListObjectsV2, every page): their
 * keys relative to the prefix, in the server's (lexicographic) order; at
 * most 100,000 pages, of REEL_S3_LIST_PAGE keys (1-1000) when set, else the
 * server's default (1,000). *names: free() each, then the array. */
int reel__s3_list(const char *uri, const reel__io_options *opt, char ***names, size_t *count, reel_error *err);

/* Parses one ListObjectsV2 answer (body, len): appends the keys under
 * `prefix` (relative to it) to *names (*count of *cap), and sets token to the
 * continuation token ("" on the last page). `name` is for messages. */
int reel__s3_parse_listing(const char *body, size_t len, const char *prefix, char ***names, size_t *count, size_t *cap,
                           char *token, size_t token_size, const char *name, reel_error *err);

/* The statistics of a remote source (zeros for a local one). */
void reel__remote_stats(const reel__io *io, reel_remote_stats *out);

/* acc += after - before. */
void reel__remote_stats_delta(reel_remote_stats *acc, const reel_remote_stats *after, const reel_remote_stats *before);

#endif
