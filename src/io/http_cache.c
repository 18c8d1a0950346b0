/* http_cache.c: the reads of a remote source: the current span (adaptive
 * readahead), a few small saved spans (a container's head and index), spans
 * fetched ahead within the pool's byte budget, and the hints that fetch
 * ranges coalesced, now or ahead; its shares (reel__io_share: second
 * handles that read those spans without taking them and fetch the rest into
 * a cache of their own, counting their own requests), the lock its handles
 * take, and its end when the last handle is closed. */
#include "io/http_internal.h"
#include "io/pool.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

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
    sink k = reel__http_sink(h->cache, h->cache_cap, off, (int64_t)len, (int64_t)h->s.whole_object_max);
    int st = reel__http_get_range(h, &k, err);
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

/* The readahead of the next fetch: doubled (up to readahead_max) while the
 * reads run on from where the last ended, readahead_min after a seek. */
static size_t next_readahead(const http_io *h, size_t cur, int on)
{
    if (!on) return h->s.readahead_min;
    return cur * 2 < h->s.readahead_max ? cur * 2 : h->s.readahead_max;
}

/* Copies into buf the bytes of [off, off + len) that a buffer holding
 * [data_off, data_off + data_len) has from off on (off inside it): short
 * at its end, the caller reads on. Returns how many. */
static size_t copy_out(void *buf, size_t len, int64_t off, const uint8_t *data, int64_t data_off, size_t data_len)
{
    size_t avail = (size_t)(data_off + (int64_t)data_len - off);
    size_t n = len < avail ? len : avail;
    memcpy(buf, data + (off - data_off), n);
    return n;
}

static int read_at(http_io *h, int64_t off, void *buf, size_t len, size_t *got, reel_error *err)
{
    /* a read that starts inside the cache is served from it, short if it
     * runs past its end (the caller reads on): fetched bytes are not fetched
     * again, and a hinted range is not widened by the caller's buffer size */
    if (!(off >= h->cache_off && off < h->cache_off + (int64_t)h->cache_len) && !take_ahead(h, off) &&
        !restore_span(h, off)) {
        h->readahead = next_readahead(h, h->readahead, off == h->last_end); /* adaptive readahead */
        int st = fill_cache(h, off, len, err);
        if (st != REEL_OK) return st;
    }
    *got = copy_out(buf, len, off, h->cache, h->cache_off, h->cache_len);
    h->last_end = off + (int64_t)*got;
    return REEL_OK;
}

int reel__http_read_at(reel__io *io, int64_t off, void *buf, size_t len, size_t *got, reel_error *err)
{
    http_io *h = (http_io *)io;
    pthread_mutex_lock(&h->mu); /* a share may read the spans on another thread */
    int st = read_at(h, off, buf, len, got, err);
    pthread_mutex_unlock(&h->mu);
    return st;
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
    sink k = reel__http_sink(NULL, 0, lo, (int64_t)want, (int64_t)h->s.whole_object_max);
    int st = reel__http_get_range(h, &k, err);
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

static int will_read(http_io *h, const reel__io_range *r, size_t n, int ahead, reel_error *err)
{
    /* ranges closer than readahead_min are fetched in one GET; the rest one
     * GET each (fetch by GOP): ahead, into spans kept aside within the
     * pool's budget, or now, into the current cache */
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

int reel__http_will_read(reel__io *io, const reel__io_range *r, size_t n, int ahead, reel_error *err)
{
    http_io *h = (http_io *)io;
    pthread_mutex_lock(&h->mu);
    int st = will_read(h, r, n, ahead, err);
    pthread_mutex_unlock(&h->mu);
    return st;
}

int reel__http_held(const reel__io *io, int64_t off, int64_t len)
{
    http_io *h = (http_io *)(uintptr_t)io; /* the lock is not the object's value */
    pthread_mutex_lock(&h->mu);
    int r = held(h, off, off + len);
    pthread_mutex_unlock(&h->mu);
    return r;
}

int reel__http_holds(const http_io *h, int64_t lo, int64_t hi)
{
    return held(h, lo, hi);
}

const uint8_t *reel__http_span_at(const http_io *h, int64_t off, int64_t *lo, int64_t *hi)
{
    const span cur = { h->cache, h->cache_len, h->cache_cap, 0, h->cache_off };
    const span *s = span_has(&cur, off, off + 1) ? &cur : NULL;
    for (int i = 0; i < AHEAD && !s; i++)
        if (span_has(&h->ahead[i], off, off + 1)) s = &h->ahead[i];
    for (int i = 0; i < SAVED && !s; i++)
        if (span_has(&h->saved[i], off, off + 1)) s = &h->saved[i];
    if (!s) return NULL;
    *lo = s->off;
    *hi = s->off + (int64_t)s->len;
    return s->buf;
}

void reel__http_cache_free(http_io *h)
{
    free(h->cache);
    h->cache = NULL;
    for (int i = 0; i < SAVED; i++) {
        free(h->saved[i].buf);
        h->saved[i].buf = NULL;
    }
    for (int i = 0; i < AHEAD; i++) ahead_drop(h, &h->ahead[i]);
}

/* ---------------------------------------------------------------- the object's handles */

/* The object, after its last handle: its libcurl handles, secrets and spans. */
static void http_free(http_io *h)
{
    if (h->multi && h->curl) curl_multi_remove_handle(h->multi, h->curl);
    if (h->curl) curl_easy_cleanup(h->curl);
    if (h->multi) curl_multi_cleanup(h->multi);
    curl_slist_free_all(h->headers);
    if (h->userpwd) {
        memset(h->userpwd, 0, strlen(h->userpwd)); /* no secret left in freed memory */
        free(h->userpwd);
    }
    free(h->url);
    reel__http_cache_free(h);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

void reel__http_release(http_io *h)
{
    pthread_mutex_lock(&h->mu);
    const int last = --h->refs == 0;
    pthread_mutex_unlock(&h->mu);
    if (last) http_free(h);
}

typedef struct http_share {
    reel__io base;  /* name, size and version: the object's; opt: the share's interrupt and tally */
    http_io *obj;   /* the object, held (reel__http_release at close) */
    uint8_t *cache; /* bytes [cache_off, cache_off + cache_len) the share fetched itself */
    int64_t cache_off;
    size_t cache_len, cache_cap;
    size_t readahead; /* grows on sequential reads, as the object's does */
    int64_t last_end;
    reel_remote_stats stats; /* the share's own requests */
} http_share;

static int own_has(const http_share *v, int64_t lo, int64_t hi)
{
    return v->cache_len && lo >= v->cache_off && hi <= v->cache_off + (int64_t)v->cache_len;
}

/* Under obj->mu: GETs exactly [off, off + len) into the share's cache over
 * the object's connection, with the share's interrupt; the requests count
 * in the share's statistics, not the object's. */
static int fetch(http_share *v, int64_t off, size_t len, reel_error *err)
{
    http_io *h = v->obj;
    const reel__io_options kept = h->base.opt;
    const reel_remote_stats theirs = h->stats;
    memset(&h->stats, 0, sizeof h->stats);
    h->base.opt.interrupt = v->base.opt.interrupt;
    h->base.opt.interrupt_opaque = v->base.opt.interrupt_opaque;
    sink k = reel__http_sink(v->cache, v->cache_cap, off, (int64_t)len, (int64_t)h->s.whole_object_max);
    int st = reel__http_get_range(h, &k, err);
    reel_remote_stats_add(&v->stats, &h->stats);
    h->stats = theirs;
    h->base.opt = kept;
    v->cache = k.buf;
    v->cache_cap = k.cap;
    v->cache_len = 0;
    if (st == REEL_OK && k.head.status != 206) /* checked at open: a server that ignores Range sent it whole then */
        st = reel__error_set(err, REEL_E_IO, "%s: the server ignored a Range request", h->base.name);
    if (st != REEL_OK) return st;
    v->cache_off = off;
    v->cache_len = k.len;
    return REEL_OK;
}

static int share_read_at(reel__io *io, int64_t off, void *buf, size_t len, size_t *got, reel_error *err)
{
    http_share *v = (http_share *)io;
    http_io *h = v->obj;
    if (!own_has(v, off, off + 1)) {
        pthread_mutex_lock(&h->mu);
        int64_t lo, hi;
        const uint8_t *b = reel__http_span_at(h, off, &lo, &hi);
        if (b) { /* the object holds it: copied, short at its span's end (the caller reads on) */
            *got = copy_out(buf, len, off, b, lo, (size_t)(hi - lo));
            pthread_mutex_unlock(&h->mu);
            v->last_end = off + (int64_t)*got;
            return REEL_OK;
        }
        v->readahead = next_readahead(h, v->readahead, off == v->last_end);
        size_t want = len > v->readahead ? len : v->readahead;
        if ((int64_t)want > v->base.size - off) want = (size_t)(v->base.size - off);
        int st = fetch(v, off, want, err);
        pthread_mutex_unlock(&h->mu);
        if (st != REEL_OK) return st;
    }
    *got = copy_out(buf, len, off, v->cache, v->cache_off, v->cache_len);
    v->last_end = off + (int64_t)*got;
    return REEL_OK;
}

/* Under obj->mu: [*lo, *hi) narrowed by the object's spans at either end
 * (the bytes it holds there are not fetched again). */
static void trim(const http_io *h, int64_t *lo, int64_t *hi)
{
    int64_t a, b;
    while (*lo < *hi && reel__http_span_at(h, *lo, &a, &b)) *lo = b;
    while (*lo < *hi && reel__http_span_at(h, *hi - 1, &a, &b)) *hi = a;
}

/* Ranges to be read now (ahead: nothing, the share keeps nothing aside):
 * those closer than readahead_min in one GET, as the object's hints, less
 * the bytes the object or the share's cache hold. */
static int share_will_read(reel__io *io, const reel__io_range *r, size_t n, int ahead, reel_error *err)
{
    http_share *v = (http_share *)io;
    http_io *h = v->obj;
    if (ahead) return REEL_OK;
    size_t i = 0;
    while (i < n) {
        int64_t lo = r[i].offset, hi = r[i].offset + r[i].length;
        size_t j = i + 1;
        while (j < n && r[j].offset >= lo && r[j].offset <= hi + (int64_t)h->s.readahead_min) {
            if (r[j].offset + r[j].length > hi) hi = r[j].offset + r[j].length;
            j++;
        }
        if (hi > v->base.size) hi = v->base.size;
        pthread_mutex_lock(&h->mu);
        trim(h, &lo, &hi);
        int st = REEL_OK;
        if (lo < hi && !own_has(v, lo, hi)) {
            st = fetch(v, lo, (size_t)(hi - lo), err);
            v->readahead = h->s.readahead_min; /* no readahead on top; reads past it start small again */
            v->last_end = -1;
        }
        pthread_mutex_unlock(&h->mu);
        if (st != REEL_OK) return st;
        i = j;
    }
    return REEL_OK;
}

static int share_held(const reel__io *io, int64_t off, int64_t len)
{
    const http_share *v = (const http_share *)io;
    if (own_has(v, off, off + len)) return 1;
    pthread_mutex_lock(&v->obj->mu);
    int r = reel__http_holds(v->obj, off, off + len);
    pthread_mutex_unlock(&v->obj->mu);
    return r;
}

static void share_stats(const reel__io *io, reel_remote_stats *out)
{
    *out = ((const http_share *)io)->stats;
}

static void share_close(reel__io *io)
{
    http_share *v = (http_share *)io;
    if (v->base.opt.tally) reel_remote_stats_add(v->base.opt.tally, &v->stats);
    reel__http_release(v->obj);
    free(v->cache);
    free(v);
}

static const reel__io_ops share_ops = { "http",     share_read_at, share_will_read, share_close,
                                        share_held, share_stats,   reel__http_share };

int reel__http_share(reel__io *io, const reel__io_options *opt, reel__io **out, reel_error *err)
{
    http_io *h = io->ops == &share_ops ? ((http_share *)io)->obj : (http_io *)io; /* a share of a share: the object's */
    http_share *v = calloc(1, sizeof *v);
    if (!v) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", io->name);
    v->base.ops = &share_ops;
    v->base.size = h->base.size;
    v->base.version = h->base.version;
    memcpy(v->base.name, h->base.name, sizeof v->base.name);
    v->base.opt = *opt;
    v->base.opt.remote = &h->s; /* the object's settings apply (it outlives the share) */
    v->obj = h;
    v->readahead = h->s.readahead_min;
    v->last_end = -1;
    pthread_mutex_lock(&h->mu);
    h->refs++;
    pthread_mutex_unlock(&h->mu);
    *out = &v->base;
    return REEL_OK;
}
