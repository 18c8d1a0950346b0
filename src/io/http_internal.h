/* http_internal.h: what the files of the http transport share: a remote
 * source (http_io), its spans, and one GET's sink. http.c sets up libcurl
 * and opens, http_get.c makes one GET with retries, http_redirect.c judges
 * the redirects, http_cache.c serves the reads (the shares' too) and frees
 * the object after its last handle. Not for use outside src/io. */
#ifndef REEL_IO_HTTP_INTERNAL_H
#define REEL_IO_HTTP_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>

#include "io/http_answer.h"
#include "io/io_common.h"
#include "reel/io.h"

/* Bytes [off, off + len) of the object in buf (cap allocated); len 0: empty.
 * A span fetched ahead holds `reserved` bytes of the pool's budget until it
 * is read or dropped (saved spans hold none). */
typedef struct span {
    uint8_t *buf;
    size_t len, cap, reserved;
    int64_t off;
} span;

/* 1 when the span holds [lo, hi) whole. */
static inline int span_has(const span *s, int64_t lo, int64_t hi)
{
    return s->len && lo >= s->off && hi <= s->off + (int64_t)s->len;
}

enum { AHEAD = 8, SAVED = 3 };

/* The most a whole GET without a range (a listing page, a manifest) may
 * bring when the whole-object limit is lower. */
#define REEL_WHOLE_GET_MAX ((int64_t)64 << 20)

typedef struct http_io {
    reel__io base;
    reel_remote_settings s;
    reel_remote_pool *pool; /* s.pool: lends the multi handle of each transfer; NULL: own one */
    CURL *curl;
    CURLM *multi; /* without a pool: drives curl so the interrupt is polled every 50 ms (see perform) */
    char *url;    /* the real URL (may hold credentials: never printed) */
    struct curl_slist *headers;
    char *userpwd; /* s3 "key:secret" */
    char sigv4[96];
    /* a redirect to another origin (scheme, host, port) is refused: the
     * request carries headers that libcurl would send there too (s3's
     * x-amz-security-token, the settings' extra headers) */
    int same_origin_only;
    uint8_t *cache; /* bytes [cache_off, cache_off + cache_len) of the object */
    int64_t cache_off;
    size_t cache_len, cache_cap;
    /* a few earlier, small spans (a container's head and its index at the
     * end are read again and again while opening): at most SAVED of them,
     * each at most 4 x readahead_min bytes; 0 length: empty */
    span saved[SAVED];
    span ahead[AHEAD]; /* fetched ahead, in the order hinted; len 0: free */
    size_t readahead;
    int64_t last_end;
    uint64_t rng; /* jitter */
    reel_remote_stats stats;
    /* where the CA certificates came from, or every place looked in, for a
     * TLS verification error (http.c: ca_choose) */
    char ca_where[768];
    /* its handles: the one that opened it and its shares (http_cache.c);
     * freed by the last one's close. `mu` guards everything above while
     * there may be several (every op of either kind takes it). */
    pthread_mutex_t mu;
    int refs;
} http_io;

typedef struct sink {
    uint8_t *buf;
    size_t cap, len;
    reel__http_ask ask;         /* the request: what the answer is checked against */
    reel__http_head head;       /* the answer's head */
    reel__http_verdict refused; /* why the transfer was stopped (REEL_HTTP_OK: it was not) */
    const struct http_io *io;   /* whose redirects are judged (set by reel__http_get_range) */
    const char *redirect_why;   /* a refused redirect: why (NULL: none), and its target, redacted */
    char redirect_to[256];
} sink;

/* ---------------------------------------------------------------- http_get.c */

/* An empty sink for a GET of [off, off + len) (off < 0: the whole object)
 * into buf (cap bytes, may be NULL), whole objects up to whole_max. */
sink reel__http_sink(uint8_t *buf, size_t cap, int64_t off, int64_t len, int64_t whole_max);

/* The object's size from the answer: Content-Range's total (a 206), the
 * body (a 200), or -1. */
int64_t reel__http_sink_total(const sink *k);

/* GETs k->ask (its range, or the whole object) into k, with retries (see
 * http_get.c). */
int reel__http_get_range(http_io *h, sink *k, reel_error *err);

/* libcurl's callbacks: the body into the sink, the head judged line by line,
 * the interrupt. */
size_t reel__http_on_body(char *p, size_t sz, size_t n, void *opaque);
size_t reel__http_on_header(char *p, size_t sz, size_t n, void *opaque);
int reel__http_on_progress(void *opaque, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d);

/* ---------------------------------------------------------------- http_redirect.c */

/* Judges one header line of a redirect's answer (n bytes, not
 * NUL-terminated): for a "Location:" line whose target h may not follow,
 * the reason ("only http and https are followed", "another origin; ...")
 * with the target, resolved and redacted, in to[size]; else NULL. */
const char *reel__http_redirect_check(const http_io *h, const char *line, size_t n, char *to, size_t size);

/* ---------------------------------------------------------------- http_cache.c */

/* The reel__io_ops of a remote source (see io_common.h). */
int reel__http_read_at(reel__io *io, int64_t off, void *buf, size_t len, size_t *got, reel_error *err);
int reel__http_will_read(reel__io *io, const reel__io_range *r, size_t n, int ahead, reel_error *err);
int reel__http_held(const reel__io *io, int64_t off, int64_t len);

/* Frees every span (the ones fetched ahead give back their budget). */
void reel__http_cache_free(http_io *h);

/* Under h->mu: 1 when [lo, hi) is held whole by one span of h (current,
 * fetched ahead or saved), else 0. */
int reel__http_holds(const http_io *h, int64_t lo, int64_t hi);

/* Under h->mu: the span of h (current, fetched ahead or saved) holding
 * `off`: its bytes, and [*lo, *hi) the range they are; NULL when none does.
 * Nothing moves (a share reads the object's spans without taking them). */
const uint8_t *reel__http_span_at(const http_io *h, int64_t off, int64_t *lo, int64_t *hi);

/* ---------------------------------------------------------------- http_cache.c: the object's handles */

/* Drops one handle's hold on h (under h->mu); the last frees it. */
void reel__http_release(http_io *h);

/* The share op of a remote source (reel__io_share). */
int reel__http_share(reel__io *io, const reel__io_options *opt, reel__io **out, reel_error *err);

#endif
