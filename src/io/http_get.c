/* http_get.c: one GET of a remote source with retries: the transfer through
 * a multi handle (the interrupt polled every 50 ms), the answer judged as it
 * arrives (http_answer.c; its redirects, http_redirect.c), backoff with
 * jitter, failures counted by cause. */
#define _GNU_SOURCE
#include "io/http_internal.h"
#include "io/http_answer.h"
#include "io/pool.h"
#include "io/remote.h"
#include "core/clock.h"
#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* An empty sink for a GET of [off, off + len) (off < 0: the whole object)
 * into buf (cap bytes, may be NULL), whole objects up to whole_max. */
sink reel__http_sink(uint8_t *buf, size_t cap, int64_t off, int64_t len, int64_t whole_max)
{
    sink k;
    memset(&k, 0, sizeof k);
    k.buf = buf;
    k.cap = cap;
    k.ask = (reel__http_ask){ off, len, whole_max };
    k.refused = REEL_HTTP_OK;
    reel__http_head_reset(&k.head);
    return k;
}

/* The object's size from the answer: Content-Range's total (a 206), the
 * body (a 200), or -1. */
int64_t reel__http_sink_total(const sink *k)
{
    return k->head.status == 206 ? k->head.total : (int64_t)k->len;
}

size_t reel__http_on_body(char *p, size_t sz, size_t n, void *opaque)
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

size_t reel__http_on_header(char *p, size_t sz, size_t n, void *opaque)
{
    sink *k = opaque;
    size_t b = sz * n;
    reel__http_head_line(&k->head, p, b);
    if (k->io && k->head.status >= 300 && k->head.status < 400 && k->head.status != 304 && !k->head.complete) {
        /* judged before libcurl follows it */
        k->redirect_why = reel__http_redirect_check(k->io, p, b, k->redirect_to, sizeof k->redirect_to);
        if (k->redirect_why) return 0; /* aborts the transfer */
    }
    if (k->head.complete && reel__http_is_data(k->head.status)) {
        /* judged before any byte of the body: an encoded body, a 200 for a
         * large object, a range other than asked are refused here */
        k->refused = reel__http_check_head(&k->head, &k->ask);
        if (k->refused != REEL_HTTP_OK) return 0; /* aborts the transfer */
    }
    return b;
}

int reel__http_on_progress(void *opaque, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a;
    (void)b;
    (void)c;
    (void)d;
    http_io *h = opaque;
    return h->base.opt.interrupt && h->base.opt.interrupt(h->base.opt.interrupt_opaque);
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

/* GETs k->ask (its range, or the whole object) into k, with retries. The
 * answer may be the whole object (a server that ignores Range), within the
 * whole-object limit. An answer that does not answer the request (see
 * http_answer.h) is the server's error: a range other than asked is retried
 * like a short body, an encoded or overlong body fails at once. */
int reel__http_get_range(http_io *h, sink *k, reel_error *err)
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
        k->io = h;
        k->redirect_why = NULL;
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
        h->stats.latency[reel__remote_latency_bucket(took)]++;
        h->stats.bytes_fetched += (int64_t)k->len;
        if (cc == CURLE_ABORTED_BY_CALLBACK)
            return reel__error_set(err, REEL_E_CANCELLED, "%s: cancelled", h->base.name);
        if (k->redirect_why) /* not followed, nor retried */
            return failed(h, REEL_REMOTE_CAUSE_CLIENT,
                          reel__error_set(err, REEL_E_IO, "%s: redirect to %s refused (%s)", h->base.name,
                                          k->redirect_to, k->redirect_why));
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
                          reel__error_set(err, REEL_E_IO,
                                          "%s: TLS verification failed: %s (CA certificates: %s; a private CA: "
                                          "remote ca_bundle)",
                                          h->base.name, curl_easy_strerror(cc), h->ca_where));
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
