/* http.h: the http(s) transport (http.c, http_get.c, http_cache.c), also for
 * s3:// objects (addressed and signed through s3.c). */
#ifndef REEL_IO_HTTP_H
#define REEL_IO_HTTP_H

#include "io/io_common.h"

/* Opens a remote object (http(s):// or s3://); the first GET learns its
 * size, and an object up to whole_object_max comes whole. */
int reel__io_open_http(reel__io **out, const char *uri, const reel__io_options *opt, reel_error *err);

/* GETs a whole remote object (an http(s) URL, an s3:// object, or with
 * `query` an s3:// bucket's URL plus "?query", for listings), with the
 * retries and timeouts of reel_remote_settings, up to the larger of
 * whole_object_max and 64 MiB. *body (free()) gets the bytes, NUL-terminated. */
int reel__http_get(const char *uri, const char *query, const reel__io_options *opt, uint8_t **body, size_t *len,
                   reel_error *err);

#endif
