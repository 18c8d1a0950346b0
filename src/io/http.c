/* http.c: remote byte sources over libcurl: http(s):// URLs and s3://bucket/key
 * (SigV4 signed by libcurl itself, or anonymous). Range GETs into a block
 * cache with adaptive readahead, whole-object fetch for small objects,
 * retries with backoff and jitter, per-request timeouts, the interrupt. */
#define _GNU_SOURCE
#include "io/io_internal.h"
#include "io/remote.h"
#include "io/pool.h"
#include "io/http_answer.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/hash.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

/* curl_global_init is process-wide and not thread-safe: done once here
 * (pthread_once), the only process-wide state of src/io. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void reel__curl_init(void)
{
    pthread_once(&curl_once, curl_init_once);
}

void reel_remote_default_settings(reel_remote_settings *s)
{
    memset(s, 0, sizeof *s);
    s->request_timeout = 30.0;
    s->connect_timeout = 10.0;
    s->max_retries = 5;
    s->retry_budget = 60.0;
    s->readahead_min = 256 << 10;
    s->readahead_max = 8 << 20;
    s->whole_object_max = 16 << 20;
    s->verify_tls = 1;
    s->max_bytes_in_flight = (size_t)256 << 20;
}

/* Bytes [off, off + len) of the object in buf (cap allocated); len 0: empty.
 * A span fetched ahead holds `reserved` bytes of the pool's budget until it
 * is read or dropped (saved spans hold none). */
typedef struct span {
    uint8_t *buf;
    size_t len, cap, reserved;
    int64_t off;
} span;

/* 1 when the span holds [lo, hi) whole. */
static int span_has(const span *s, int64_t lo, int64_t hi)
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
} http_io;

/* ---------------------------------------------------------------- one GET */

typedef struct sink {
    uint8_t *buf;
    size_t cap, len;
    reel__http_ask ask;         /* the request: what the answer is checked against */
    reel__http_head head;       /* the answer's head */
    reel__http_verdict refused; /* why the transfer was stopped (REEL_HTTP_OK: it was not) */
} sink;

/* An empty sink for a GET of [off, off + len) (off < 0: the whole object)
 * into buf (cap bytes, may be NULL), whole objects up to whole_max. */
static sink sink_for(uint8_t *buf, size_t cap, int64_t off, int64_t len, int64_t whole_max)
{
    sink k = { buf, cap, 0, { off, len, whole_max }, { 0 }, REEL_HTTP_OK };
    reel__http_head_reset(&k.head);
    return k;
}

/* The object's size from the answer: Content-Range's total (a 206), the
 * body (a 200), or -1. */
static int64_t sink_total(const sink *k)
{
    return k->head.status == 206 ? k->head.total : (int64_t)k->len;
}

static size_t on_body(char *p, size_t sz, size_t n, void *opaque)
{
    sink *k = opaque;
    size_t b = sz * n;
    if (!reel__http_is_data(k->head.status)) return b; /* an error's body: not kept */
    /* no buffer grows past what the request allows: a body that keeps coming
     * is stopped here, not after the download */
    const int64_t max = reel__http_body_max(&k->head, &k->ask);
    if ((int64_t)(k->len + b) > max) {
        k->refused = reel__http_overflow(&k->head, &k->ask);
        return 0; /* aborts the transfer */
    }
    if (k->len + b > k->cap) {
        size_t nc = k->cap ? k->cap : 65536;
        while (nc < k->len + b) nc *= 2;
        if ((int64_t)nc > max) nc = (size_t)max;
        uint8_t *nb = realloc(k->buf, nc);
        if (!nb) return 0; /* aborts the transfer */
        k->buf = nb;
        k->cap = nc;
    }
    memcpy(k->buf + k->len, p, b);
    k->len += b;
    return b;
}

static size_t on_header(char *p, size_t sz, size_t n, void *opaque)
{
    sink *k = opaque;
    size_t b = sz * n;
    reel__http_head_line(&k->head, p, b);
    if (k->head.complete && reel__http_is_data(k->head.status)) {
        /* judged before any byte of the body: an encoded body, a 200 for a
         * large object, a range other than asked are refused here */
        k->refused = reel__http_check_head(&k->head, &k->ask);
        if (k->refused != REEL_HTTP_OK) return 0; /* aborts the transfer */
    }
    return b;
}

static int on_progress(void *opaque, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a;
    (void)b;
    (void)c;
    (void)d;
    http_io *h = opaque;
    return h->base.opt.interrupt && h->base.opt.interrupt(h->base.opt.interrupt_opaque);
}

/* The latency bucket of a request of `ns` nanoseconds (see REEL_LATENCY_BUCKETS). */
static int latency_bucket(int64_t ns)
{
    double us = (double)ns / 1e3;
    int b = us <= 1 ? 0 : (int)(4.0 * log2(us));
    return b < 0 ? 0 : b >= REEL_LATENCY_BUCKETS ? REEL_LATENCY_BUCKETS - 1 : b;
}

double reel_remote_stats_quantile(const reel_remote_stats *s, double q)
{
    if (!s || s->requests <= 0) return 0;
    int64_t total = 0;
    for (int i = 0; i < REEL_LATENCY_BUCKETS; i++) total += s->latency[i];
    if (total <= 0) return 0;
    double want = q <= 0 ? 1 : q >= 1 ? (double)total : q * (double)total;
    int64_t seen = 0;
    for (int i = 0; i < REEL_LATENCY_BUCKETS; i++) {
        seen += s->latency[i];
        if ((double)seen >= want) return pow(2.0, (i + 0.5) / 4.0) / 1e6;
    }
    return pow(2.0, (REEL_LATENCY_BUCKETS - 0.5) / 4.0) / 1e6;
}

/* a += k * b, field by field: the one list of the counters (add: k = 1;
 * a delta: after, then before with k = -1). */
static void stats_scaled_add(reel_remote_stats *a, const reel_remote_stats *b, int k)
{
    a->requests += k * b->requests;
    a->retries += k * b->retries;
    a->failures += k * b->failures;
    a->bytes_fetched += k * b->bytes_fetched;
    a->request_seconds += k * b->request_seconds;
    a->connections += k * b->connections;
    a->object_bytes += k * b->object_bytes;
    for (int i = 0; i < REEL_REMOTE_CAUSE_COUNT; i++) {
        a->retries_by_cause[i] += k * b->retries_by_cause[i];
        a->failures_by_cause[i] += k * b->failures_by_cause[i];
    }
    a->budget_waits += k * b->budget_waits;
    a->budget_skips += k * b->budget_skips;
    a->budget_wait_seconds += k * b->budget_wait_seconds;
    for (int i = 0; i < REEL_LATENCY_BUCKETS; i++) a->latency[i] += k * b->latency[i];
}

void reel_remote_stats_add(reel_remote_stats *a, const reel_remote_stats *b)
{
    if (a && b) stats_scaled_add(a, b, 1);
}

void reel__remote_stats_delta(reel_remote_stats *acc, const reel_remote_stats *after, const reel_remote_stats *before)
{
    stats_scaled_add(acc, after, 1);
    stats_scaled_add(acc, before, -1);
}

const char *reel_remote_cause_name(reel_remote_cause c)
{
    static const char *const names[REEL_REMOTE_CAUSE_COUNT] = { "connection", "timeout", "throttled", "server",
                                                                "short_body", "client",  "tls" };
    return (unsigned)c < REEL_REMOTE_CAUSE_COUNT ? names[c] : "unknown";
}

/* The cause of a failed try: libcurl's code (not OK), else the HTTP status,
 * else a short body. */
static reel_remote_cause cause_of(CURLcode cc, long code, int short_body)
{
    if (cc == CURLE_OPERATION_TIMEDOUT) return REEL_REMOTE_CAUSE_TIMEOUT;
    if (cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE || cc == CURLE_SSL_CERTPROBLEM)
        return REEL_REMOTE_CAUSE_TLS;
    if (cc == CURLE_URL_MALFORMAT || cc == CURLE_UNSUPPORTED_PROTOCOL) return REEL_REMOTE_CAUSE_CLIENT;
    if (cc == CURLE_PARTIAL_FILE || (cc == CURLE_OK && short_body)) return REEL_REMOTE_CAUSE_SHORT_BODY;
    if (cc != CURLE_OK) return REEL_REMOTE_CAUSE_CONNECTION;
    if (code == 429) return REEL_REMOTE_CAUSE_THROTTLED;
    if (code >= 500) return REEL_REMOTE_CAUSE_SERVER;
    return REEL_REMOTE_CAUSE_CLIENT;
}

/* A request that failed for good (counted by cause), returning `st`. */
static int failed(http_io *h, reel_remote_cause c, int st)
{
    h->stats.failures++;
    h->stats.failures_by_cause[c]++;
    return st;
}

static double jitter(http_io *h)
{
    h->rng ^= h->rng << 13;
    h->rng ^= h->rng >> 7;
    h->rng ^= h->rng << 17;
    return (double)(h->rng >> 11) / 9007199254740992.0; /* [0, 1) */
}

/* One transfer of h->curl. Through a multi handle rather than
 * curl_easy_perform: libcurl calls the progress callback only about once a
 * second while a server sends nothing, so an interrupt (the loader's
 * shutdown or time limit) would wait that long; here it is polled every
 * 50 ms. The multi handle keeps the connection for the next request: the
 * object's own, or one lent by the pool for this transfer (so the
 * connection serves the next object too). */
static CURLcode perform(http_io *h)
{
    CURLM *multi = h->pool ? reel__pool_take(h->pool) : h->multi ? h->multi : (h->multi = curl_multi_init());
    if (!multi) return CURLE_OUT_OF_MEMORY;
    if (curl_multi_add_handle(multi, h->curl) != CURLM_OK) {
        if (h->pool) reel__pool_give(h->pool, multi);
        return CURLE_FAILED_INIT;
    }
    CURLcode res = CURLE_OK;
    int running = 1, done = 0;
    while (running) {
        if (curl_multi_perform(multi, &running) != CURLM_OK) {
            res = CURLE_FAILED_INIT;
            break;
        }
        if (!running) break;
        if (h->base.opt.interrupt && h->base.opt.interrupt(h->base.opt.interrupt_opaque)) {
            res = CURLE_ABORTED_BY_CALLBACK;
            done = 1;
            break;
        }
        if (curl_multi_poll(multi, NULL, 0, 50, NULL) != CURLM_OK) {
            res = CURLE_FAILED_INIT;
            break;
        }
    }
    CURLMsg *m;
    int left;
    while (!done && (m = curl_multi_info_read(multi, &left)) != NULL)
        if (m->msg == CURLMSG_DONE && m->easy_handle == h->curl) res = m->data.result;
    curl_multi_remove_handle(multi, h->curl);
    if (h->pool) reel__pool_give(h->pool, multi);
    long made = 0;
    if (curl_easy_getinfo(h->curl, CURLINFO_NUM_CONNECTS, &made) == CURLE_OK && made > 0) h->stats.connections += made;
    return res;
}

/* Sleeps up to `secs` in short slices; 1 if interrupted. */
static int backoff_sleep(http_io *h, double secs)
{
    int64_t end = reel__clock_ns() + (int64_t)(secs * 1e9);
    while (reel__clock_ns() < end) {
        if (h->base.opt.interrupt && h->base.opt.interrupt(h->base.opt.interrupt_opaque)) return 1;
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void redacted_cause(char *out, size_t size, long code, CURLcode cc)
{
    if (cc != CURLE_OK)
        snprintf(out, size, "%s", curl_easy_strerror(cc));
    else
        snprintf(out, size, "HTTP %ld", code);
}

/* A copy of an http(s) URL with the bytes no URL may hold (controls, space,
 * non-ASCII, " < > \\ ^ ` { | }) %-encoded, as a browser sends them: a
 * manifest's "air drumming/x.mp4" resolves to ".../air%20drumming/x.mp4".
 * Everything else, '%' included, is kept, so an encoded URL stays as it is.
 * NULL: out of memory. */
static char *url_escape_illegal(const char *uri)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)uri; *p; p++)
        n += (*p <= 0x20 || *p >= 0x7f || strchr("\"<>\\^`{|}", *p)) ? 3 : 1;
    char *out = malloc(n + 1);
    if (!out) return NULL;
    char *o = out;
    for (const unsigned char *p = (const unsigned char *)uri; *p; p++) {
        if (*p <= 0x20 || *p >= 0x7f || strchr("\"<>\\^`{|}", *p)) {
            static const char hex[] = "0123456789ABCDEF";
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        } else {
            *o++ = (char)*p;
        }
    }
    *o = '\0';
    return out;
}

/* GETs k->ask (its range, or the whole object) into k, with retries. The
 * answer may be the whole object (a server that ignores Range), within the
 * whole-object limit. An answer that does not answer the request (see
 * http_answer.h) is the server's error: a range other than asked is retried
 * like a short body, an encoded or overlong body fails at once. */
static int get_range(http_io *h, sink *k, reel_error *err)
{
    const int64_t t0 = reel__clock_ns(), off = k->ask.off, len = k->ask.len;
    char range[64];
    if (off < 0)
        snprintf(range, sizeof range, "all");
    else if (len > 0)
        snprintf(range, sizeof range, "%lld-%lld", (long long)off, (long long)(off + len - 1));
    else
        snprintf(range, sizeof range, "%lld-", (long long)off);
    char why[224] = "";
    for (int attempt = 0;; attempt++) {
        int short_body = 0;
        k->len = 0;
        k->refused = REEL_HTTP_OK;
        reel__http_head_reset(&k->head);
        curl_easy_setopt(h->curl, CURLOPT_RANGE, off < 0 ? NULL : range);
        curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, k);
        curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, k);
        int64_t r0 = reel__clock_ns();
        CURLcode cc = perform(h);
        long code = 0;
        curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
        h->stats.requests++;
        const int64_t took = reel__clock_ns() - r0;
        h->stats.request_seconds += (double)took / 1e9;
        h->stats.latency[latency_bucket(took)]++;
        h->stats.bytes_fetched += (int64_t)k->len;
        if (cc == CURLE_ABORTED_BY_CALLBACK)
            return reel__error_set(err, REEL_E_CANCELLED, "%s: cancelled", h->base.name);
        if (k->refused == REEL_HTTP_RANGE_MISMATCH) {
            reel__http_verdict_text(k->refused, &k->head, &k->ask, why, sizeof why);
            short_body = 1; /* other bytes than asked: retried like a short body */
        } else if (k->refused != REEL_HTTP_OK) {
            reel__http_verdict_text(k->refused, &k->head, &k->ask, why, sizeof why);
            return failed(h, REEL_REMOTE_CAUSE_SERVER, reel__error_set(err, REEL_E_IO, "%s: %s", h->base.name, why));
        } else if (cc == CURLE_OK && reel__http_is_data(code)) {
            const int64_t claimed = code == 206 ? k->head.last - k->head.first + 1 : (int64_t)k->len;
            if ((int64_t)k->len < claimed) {
                snprintf(why, sizeof why, "body cut short (%zu of %lld bytes)", k->len, (long long)claimed);
                short_body = 1;
            } else {
                return REEL_OK;
            }
        } else if (cc == CURLE_OK && code == 404) {
            return failed(h, REEL_REMOTE_CAUSE_CLIENT,
                          reel__error_set(err, REEL_E_NOT_FOUND, "%s: not found (HTTP 404)", h->base.name));
        } else if (cc == CURLE_OK && (code == 401 || code == 403)) {
            return failed(
                h, REEL_REMOTE_CAUSE_CLIENT,
                reel__error_set(err, REEL_E_PERMISSION, "%s: permission denied (HTTP %ld)", h->base.name, code));
        } else if (cc == CURLE_OK && code == 416) {
            return failed(h, REEL_REMOTE_CAUSE_CLIENT,
                          reel__error_set(err, REEL_E_CORRUPT, "%s: range %s is past the end of the object",
                                          h->base.name, range));
        } else if (cc == CURLE_OK && code != 429 && code < 500) {
            return failed(h, REEL_REMOTE_CAUSE_CLIENT,
                          reel__error_set(err, REEL_E_IO, "%s: HTTP %ld", h->base.name, code));
        } else if (cc == CURLE_URL_MALFORMAT || cc == CURLE_UNSUPPORTED_PROTOCOL) {
            /* no retry makes a bad URL good */
            return failed(h, REEL_REMOTE_CAUSE_CLIENT,
                          reel__error_set(err, REEL_E_INVALID_ARG, "%s: %s", h->base.name, curl_easy_strerror(cc)));
        } else if (cause_of(cc, code, 0) == REEL_REMOTE_CAUSE_TLS) {
            /* nor an untrusted certificate a trusted one */
            return failed(h, REEL_REMOTE_CAUSE_TLS,
                          reel__error_set(err, REEL_E_IO, "%s: TLS: %s (a private CA: remote ca_bundle)", h->base.name,
                                          curl_easy_strerror(cc)));
        } else {
            redacted_cause(why, sizeof why, code, cc);
        }
        /* retryable: connection errors, timeouts, 429, 5xx, short bodies */
        double spent = (double)(reel__clock_ns() - t0) / 1e9;
        double wait = 0.1 * (double)(1 << (attempt < 10 ? attempt : 10)) * (0.5 + jitter(h));
        const reel_remote_cause cause =
            k->refused == REEL_HTTP_RANGE_MISMATCH ? REEL_REMOTE_CAUSE_SERVER : cause_of(cc, code, short_body);
        if (attempt >= h->s.max_retries || spent + wait > h->s.retry_budget) {
            int st = cc == CURLE_OPERATION_TIMEDOUT ? REEL_E_TIMEOUT : REEL_E_IO;
            return failed(h, cause,
                          reel__error_set(err, st, "%s: %s (after %d %s)", h->base.name, why, attempt + 1,
                                          attempt ? "tries" : "try"));
        }
        h->stats.retries++;
        h->stats.retries_by_cause[cause]++;
        if (backoff_sleep(h, wait)) return reel__error_set(err, REEL_E_CANCELLED, "%s: cancelled", h->base.name);
    }
}

/* ---------------------------------------------------------------- reads */

/* Keeps the current span among the saved ones (when small), evicting the
 * oldest, and leaves the current one empty, with a buffer to fill. */
static void save_current(http_io *h)
{
    if (h->cache_len == 0 || h->cache_len > 4 * h->s.readahead_min) {
        h->cache_len = 0;
        return;
    }
    free(h->saved[SAVED - 1].buf);
    memmove(&h->saved[1], &h->saved[0], (SAVED - 1) * sizeof h->saved[0]);
    h->saved[0].buf = h->cache;
    h->saved[0].len = h->cache_len;
    h->saved[0].cap = h->cache_cap;
    h->saved[0].off = h->cache_off;
    h->cache = NULL;
    h->cache_cap = h->cache_len = 0;
}

/* A saved span holding `off` becomes the current one (swapped): 1, else 0. */
static int restore_span(http_io *h, int64_t off)
{
    for (int i = 0; i < SAVED; i++) {
        if (!span_has(&h->saved[i], off, off + 1)) continue;
        uint8_t *b = h->cache;
        size_t l = h->cache_len, c = h->cache_cap;
        int64_t o = h->cache_off;
        h->cache = h->saved[i].buf;
        h->cache_len = h->saved[i].len;
        h->cache_cap = h->saved[i].cap;
        h->cache_off = h->saved[i].off;
        h->saved[i].buf = b;
        h->saved[i].len = l;
        h->saved[i].cap = c;
        h->saved[i].off = o;
        return 1;
    }
    return 0;
}

static int fill_cache(http_io *h, int64_t off, size_t want, reel_error *err)
{
    save_current(h);
    size_t len = want > h->readahead ? want : h->readahead;
    if (off + (int64_t)len > h->base.size) len = (size_t)(h->base.size - off);
    sink k = sink_for(h->cache, h->cache_cap, off, (int64_t)len, (int64_t)h->s.whole_object_max);
    int st = get_range(h, &k, err);
    h->cache = k.buf;
    h->cache_cap = k.cap;
    if (st != REEL_OK) {
        h->cache_len = 0;
        return st;
    }
    if (k.head.status != 206) { /* a server that ignores Range sent everything */
        if ((int64_t)k.len != h->base.size)
            return reel__error_set(err, REEL_E_IO, "%s: the server ignores Range and sent %zu of %lld bytes",
                                   h->base.name, k.len, (long long)h->base.size);
        h->cache_off = 0;
    } else {
        h->cache_off = off;
    }
    h->cache_len = k.len;
    return REEL_OK;
}

/* Drops a span fetched ahead, giving back its share of the budget. */
static void ahead_drop(http_io *h, span *a)
{
    if (h->pool) reel__pool_release(h->pool, a->reserved);
    free(a->buf);
    memset(a, 0, sizeof *a);
}

/* The span fetched ahead that holds `off`, or NULL. */
static span *ahead_find(http_io *h, int64_t off)
{
    for (int i = 0; i < AHEAD; i++)
        if (span_has(&h->ahead[i], off, off + 1)) return &h->ahead[i];
    return NULL;
}

/* A span fetched ahead holding `off` becomes the current one: it is being
 * read now, so its bytes no longer count as fetched ahead. 1, else 0. */
static int take_ahead(http_io *h, int64_t off)
{
    span *a = ahead_find(h, off);
    if (!a) return 0;
    save_current(h);
    free(h->cache);
    h->cache = a->buf;
    h->cache_len = a->len;
    h->cache_cap = a->cap;
    h->cache_off = a->off;
    a->buf = NULL;
    ahead_drop(h, a);
    return 1;
}

static int http_read_at(reel__io *io, int64_t off, void *buf, size_t len, size_t *got, reel_error *err)
{
    http_io *h = (http_io *)io;
    /* a read that starts inside the cache is served from it, short if it
     * runs past its end (the caller reads on): fetched bytes are not fetched
     * again, and a hinted range is not widened by the caller's buffer size */
    if (!(off >= h->cache_off && off < h->cache_off + (int64_t)h->cache_len) && !take_ahead(h, off) &&
        !restore_span(h, off)) {
        /* adaptive readahead: grows while reads are sequential */
        if (off == h->last_end) {
            h->readahead = h->readahead * 2 < h->s.readahead_max ? h->readahead * 2 : h->s.readahead_max;
        } else {
            h->readahead = h->s.readahead_min;
        }
        int st = fill_cache(h, off, len, err);
        if (st != REEL_OK) return st;
    }
    size_t avail = (size_t)(h->cache_off + (int64_t)h->cache_len - off);
    size_t n = len < avail ? len : avail;
    memcpy(buf, h->cache + (off - h->cache_off), n);
    *got = n;
    h->last_end = off + (int64_t)n;
    return REEL_OK;
}

/* 1 when [lo, hi) is already held: the current span, one fetched ahead, or
 * a saved one. */
static int held(const http_io *h, int64_t lo, int64_t hi)
{
    if (lo >= h->cache_off && hi <= h->cache_off + (int64_t)h->cache_len) return 1;
    for (int i = 0; i < AHEAD; i++)
        if (span_has(&h->ahead[i], lo, hi)) return 1;
    for (int i = 0; i < SAVED; i++)
        if (span_has(&h->saved[i], lo, hi)) return 1;
    return 0;
}

/* Fetches exactly [lo, hi) into a free span ahead (none free: nothing is
 * fetched, the reads will), within the pool's budget. */
static int fetch_ahead(http_io *h, int64_t lo, int64_t hi, reel_error *err)
{
    if (hi > h->base.size) hi = h->base.size;
    if (lo >= hi || held(h, lo, hi)) return REEL_OK;
    span *a = NULL;
    for (int i = 0; i < AHEAD && !a; i++)
        if (!h->ahead[i].len) a = &h->ahead[i];
    if (!a) return REEL_OK;
    const size_t want = (size_t)(hi - lo);
    size_t reserved = 0;
    if (h->pool) {
        int r = reel__pool_reserve(h->pool, want, h->s.request_timeout, h->base.opt.interrupt,
                                   h->base.opt.interrupt_opaque, &h->stats);
        if (r == 2) return reel__error_set(err, REEL_E_CANCELLED, "%s: cancelled", h->base.name);
        if (r == 1) return REEL_OK; /* over budget for too long: the reads fetch on demand */
        reserved = want;
    }
    sink k = sink_for(NULL, 0, lo, (int64_t)want, (int64_t)h->s.whole_object_max);
    int st = get_range(h, &k, err);
    if (st == REEL_OK && k.head.status != 206) /* cannot happen past open (checked there); never keep a wrong span */
        st = reel__error_set(err, REEL_E_IO, "%s: the server ignored a Range request", h->base.name);
    if (st != REEL_OK) {
        free(k.buf);
        if (h->pool) reel__pool_release(h->pool, reserved);
        return st;
    }
    a->buf = k.buf;
    a->cap = k.cap;
    a->len = k.len;
    a->off = lo;
    a->reserved = reserved;
    if (!a->len) ahead_drop(h, a);
    return REEL_OK;
}

/* Fetches exactly [lo, hi) into the current cache, for a read that follows
 * at once (no readahead on top; reads past it start small again). */
static int fetch_now(http_io *h, int64_t lo, int64_t hi, reel_error *err)
{
    if (hi > h->base.size) hi = h->base.size;
    if (lo >= hi || held(h, lo, hi)) return REEL_OK;
    h->readahead = 0;
    int st = fill_cache(h, lo, (size_t)(hi - lo), err);
    h->readahead = h->s.readahead_min;
    h->last_end = -1;
    return st;
}

static int http_will_read(reel__io *io, const reel__io_range *r, size_t n, int ahead, reel_error *err)
{
    /* ranges closer than readahead_min are fetched in one GET; the rest one
     * GET each (fetch by GOP): ahead, into spans kept aside within the
     * pool's budget, or now, into the current cache */
    http_io *h = (http_io *)io;
    size_t i = 0;
    while (i < n) {
        int64_t lo = r[i].offset, hi = r[i].offset + r[i].length;
        size_t j = i + 1;
        while (j < n && r[j].offset >= lo && r[j].offset <= hi + (int64_t)h->s.readahead_min) {
            if (r[j].offset + r[j].length > hi) hi = r[j].offset + r[j].length;
            j++;
        }
        int st = ahead ? fetch_ahead(h, lo, hi, err) : fetch_now(h, lo, hi, err);
        if (st != REEL_OK) return st;
        i = j;
    }
    return REEL_OK;
}

static void http_close(reel__io *io)
{
    http_io *h = (http_io *)io;
    if (h->base.opt.tally) reel_remote_stats_add(h->base.opt.tally, &h->stats);
    if (h->multi && h->curl) curl_multi_remove_handle(h->multi, h->curl);
    if (h->curl) curl_easy_cleanup(h->curl);
    if (h->multi) curl_multi_cleanup(h->multi);
    curl_slist_free_all(h->headers);
    if (h->userpwd) {
        memset(h->userpwd, 0, strlen(h->userpwd)); /* no secret left in freed memory */
        free(h->userpwd);
    }
    free(h->url);
    free(h->cache);
    for (int i = 0; i < SAVED; i++) free(h->saved[i].buf);
    for (int i = 0; i < AHEAD; i++) ahead_drop(h, &h->ahead[i]);
    free(h);
}

static int http_held(const reel__io *io, int64_t off, int64_t len)
{
    return held((const http_io *)io, off, off + len);
}

static const reel__io_ops http_ops = { "http", http_read_at, http_will_read, http_close, http_held };

void reel__remote_stats(const reel__io *io, reel_remote_stats *out)
{
    memset(out, 0, sizeof *out);
    if (io && io->ops == &http_ops) *out = ((const http_io *)io)->stats;
}

/* ---------------------------------------------------------------- open */

static int setup(http_io *h, reel_error *err)
{
    reel__curl_init();
    h->curl = curl_easy_init();
    if (!h->curl) return reel__error_set(err, REEL_E_NOMEM, "%s: cannot start libcurl", h->base.name);
    CURL *c = h->curl;
    curl_easy_setopt(c, CURLOPT_URL, h->url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    /* identity only: libcurl would inflate a gzip body whatever was asked
     * (a 4 MB answer can inflate to 4 GiB); an encoded answer is refused */
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "identity");
    curl_easy_setopt(c, CURLOPT_HTTP_CONTENT_DECODING, 0L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(h->s.request_timeout * 1000));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(h->s.connect_timeout * 1000));
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    if (h->pool) curl_easy_setopt(c, CURLOPT_SHARE, reel__pool_share(h->pool));
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, h->s.verify_tls ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, h->s.verify_tls ? 2L : 0L);
    if (h->s.ca_bundle && *h->s.ca_bundle) curl_easy_setopt(c, CURLOPT_CAINFO, h->s.ca_bundle);
    if (h->s.bearer_token && *h->s.bearer_token) {
        size_t n = strlen(h->s.bearer_token) + 32;
        char *line = malloc(n);
        if (!line) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", h->base.name);
        snprintf(line, n, "Authorization: Bearer %s", h->s.bearer_token);
        h->headers = curl_slist_append(h->headers, line);
        memset(line, 0, n);
        free(line);
    }
    for (int i = 0; h->s.headers && h->s.headers[i]; i++) h->headers = curl_slist_append(h->headers, h->s.headers[i]);
    if (h->userpwd) {
        curl_easy_setopt(c, CURLOPT_USERPWD, h->userpwd);
        curl_easy_setopt(c, CURLOPT_AWS_SIGV4, h->sigv4);
    }
    if (h->headers) curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->headers);
    return REEL_OK;
}

/* A remote source for `uri` with its settings, URL (an s3 object's signed
 * one; with `query`, an s3 bucket's URL plus "?query") and libcurl handle,
 * before any request: 0, or a status with *out NULL. */
static int http_new(http_io **out, const char *uri, const char *query, const reel__io_options *opt, reel_error *err)
{
    *out = NULL;
    http_io *h = calloc(1, sizeof *h);
    if (!h) return reel__error_set(err, REEL_E_NOMEM, "remote: out of memory");
    h->base.ops = &http_ops;
    h->base.opt = *opt;
    reel__io_redact(uri, h->base.name, sizeof h->base.name);
    if (opt->remote)
        h->s = *(const reel_remote_settings *)opt->remote;
    else
        reel_remote_default_settings(&h->s);
    h->pool = h->s.pool;
    if (h->s.readahead_min == 0) reel_remote_default_settings(&h->s);
    h->readahead = h->s.readahead_min;
    h->rng = (uint64_t)(uintptr_t)h ^ (uint64_t)reel__clock_ns() ^ 0x9e3779b97f4a7c15ULL;
    if (!h->rng) h->rng = 1;
    int st = REEL_OK;
    char *base = NULL;
    if (!strncasecmp(uri, "s3://", 5))
        st = reel__s3_resolve(uri, query != NULL, &base, &h->userpwd, h->sigv4, sizeof h->sigv4, &h->headers,
                              h->base.name, err);
    else if (!(base = url_escape_illegal(uri)))
        st = reel__error_set(err, REEL_E_NOMEM, "remote: out of memory");
    if (st == REEL_OK && query) {
        size_t n = strlen(base) + strlen(query) + 2;
        if (!(h->url = malloc(n)))
            st = reel__error_set(err, REEL_E_NOMEM, "remote: out of memory");
        else
            snprintf(h->url, n, "%s?%s", base, query);
    } else if (st == REEL_OK) {
        h->url = base;
        base = NULL;
    }
    free(base);
    if (st == REEL_OK) st = setup(h, err);
    if (st != REEL_OK) {
        http_close(&h->base);
        return st;
    }
    *out = h;
    return REEL_OK;
}

int reel__io_open_http(reel__io **out, const char *uri, const reel__io_options *opt, reel_error *err)
{
    *out = NULL;
    http_io *h = NULL;
    int st = http_new(&h, uri, NULL, opt, err);
    if (st != REEL_OK) return st;
    /* the first GET learns the size; a small object comes whole */
    sink k = sink_for(NULL, 0, 0, (int64_t)h->s.readahead_min, (int64_t)h->s.whole_object_max);
    st = get_range(h, &k, err);
    const int ranged = k.head.status == 206;
    if (st == REEL_OK) {
        h->base.version = k.head.etag ? k.head.etag : k.head.modified;
        h->base.size = sink_total(&k);
        if (h->base.size > 0) h->stats.object_bytes = h->base.size;
        if (h->base.size < 0)
            st = reel__error_set(err, REEL_E_IO, "%s: the server gave no object size (Content-Range)", h->base.name);
        else if (!ranged && h->base.size > (int64_t)h->s.whole_object_max)
            st = reel__error_set(err, REEL_E_IO,
                                 "%s: the server ignores Range requests and the object (%lld bytes) is larger "
                                 "than the whole-object limit (%zu)",
                                 h->base.name, (long long)h->base.size, h->s.whole_object_max);
    }
    h->cache = k.buf;
    h->cache_cap = k.cap;
    h->cache_off = 0;
    h->cache_len = k.len;
    h->last_end = (int64_t)k.len;
    if (st == REEL_OK && ranged && h->base.size > (int64_t)k.len && h->base.size <= (int64_t)h->s.whole_object_max) {
        /* small: the rest in one GET, then every read is local */
        sink r = sink_for(NULL, 0, (int64_t)k.len, h->base.size - (int64_t)k.len, (int64_t)h->s.whole_object_max);
        st = get_range(h, &r, err);
        if (st == REEL_OK && k.len + r.len == (size_t)h->base.size) {
            uint8_t *all = realloc(h->cache, (size_t)h->base.size);
            if (all) {
                memcpy(all + k.len, r.buf, r.len);
                h->cache = all;
                h->cache_cap = h->cache_len = (size_t)h->base.size;
            }
        }
        free(r.buf);
    }
    if (st != REEL_OK) {
        http_close(&h->base);
        return st;
    }
    *out = &h->base;
    return REEL_OK;
}

int reel__http_get(const char *uri, const char *query, const reel__io_options *opt, uint8_t **body, size_t *len,
                   reel_error *err)
{
    *body = NULL;
    *len = 0;
    reel__io_options o;
    if (!opt) {
        reel__io_default_options(&o);
        opt = &o;
    }
    http_io *h = NULL;
    int st = http_new(&h, uri, query, opt, err);
    if (st != REEL_OK) return st;
    /* a listing page or a manifest: whole, up to the larger of the
     * whole-object limit and REEL_WHOLE_GET_MAX */
    int64_t max =
        (int64_t)h->s.whole_object_max > REEL_WHOLE_GET_MAX ? (int64_t)h->s.whole_object_max : REEL_WHOLE_GET_MAX;
    sink k = sink_for(NULL, 0, -1, 0, max);
    if (st == REEL_OK) st = get_range(h, &k, err);
    if (st == REEL_OK) {
        uint8_t *b = realloc(k.buf, k.len + 1); /* room for the NUL */
        if (!b) {
            st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", h->base.name);
        } else {
            b[k.len] = 0;
            *body = b;
            *len = k.len;
            k.buf = NULL;
        }
    }
    free(k.buf);
    http_close(&h->base);
    return st;
}
