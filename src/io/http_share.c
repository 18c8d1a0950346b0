/* http_share.c: a share of a remote object (reel__io_share): a second,
 * read-only handle that reads the bytes the object holds already without
 * taking them, fetches the rest into a cache of its own over the object's
 * connection, and counts its own requests. */
#include "io/http_internal.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

typedef struct http_share {
    reel__io base; /* name, size and version: the object's; opt: the share's interrupt and tally */
    http_io *obj;  /* the object, held (reel__http_release at close) */
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
            size_t n = (int64_t)len < hi - off ? len : (size_t)(hi - off);
            memcpy(buf, b + (off - lo), n);
            pthread_mutex_unlock(&h->mu);
            *got = n;
            v->last_end = off + (int64_t)n;
            return REEL_OK;
        }
        v->readahead = off == v->last_end ? (v->readahead * 2 < h->s.readahead_max ? v->readahead * 2
                                                                                   : h->s.readahead_max)
                                          : h->s.readahead_min;
        size_t want = len > v->readahead ? len : v->readahead;
        if ((int64_t)want > v->base.size - off) want = (size_t)(v->base.size - off);
        int st = fetch(v, off, want, err);
        pthread_mutex_unlock(&h->mu);
        if (st != REEL_OK) return st;
    }
    size_t avail = (size_t)(v->cache_off + (int64_t)v->cache_len - off);
    size_t n = len < avail ? len : avail;
    memcpy(buf, v->cache + (off - v->cache_off), n);
    *got = n;
    v->last_end = off + (int64_t)n;
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
