/* s3.h: s3:// objects: addressing and credentials (s3.c), for the http
 * transport to sign its requests; listing a prefix (s3_list.c). */
#ifndef REEL_IO_S3_H
#define REEL_IO_S3_H

#include <curl/curl.h>

#include "io/io_common.h"

/* s3://bucket/key -> the https URL to GET (with bucket_only: the bucket's
 * URL, ending in '/', the key ignored), "key:secret" for CURLOPT_USERPWD
 * (NULL: anonymous), the CURLOPT_AWS_SIGV4 string, and headers (a session
 * token). `name` (redacted) is for messages. */
int reel__s3_resolve(const char *uri, int bucket_only, char **url, char **userpwd, char *sigv4, size_t sigv4_size,
                     struct curl_slist **headers, const char *name, reel_error *err);

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

#endif
