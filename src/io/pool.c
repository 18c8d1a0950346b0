/* pool.c: libcurl's process-wide set-up (once), and reel_remote_pool:
 * connections (libcurl multi handles, each with its kept-alive connections)
 * lent to one transfer at a time, a libcurl share of the DNS and TLS-session
 * caches, and the budget of bytes fetched ahead. */
#define _POSIX_C_SOURCE 200809L
#include "io/pool.h"
#include "core/clock.h"
#include "core/error.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

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

/* Idle multi handles kept; one per transfer that ran at once, so a loader's
 * thread count bounds it in practice. */
enum { POOL_IDLE_MAX = 64 };

struct reel_remote_pool {
    pthread_mutex_t mu; /* guards idle, n_idle, in_flight, peak */
    pthread_cond_t cv;  /* in_flight went down */
    /* libcurl asks for one lock per kind of shared data; DNS and TLS
     * sessions are shared (connections are not: libcurl does not support
     * using one connection cache from concurrent threads, hence the lent
     * multi handles) */
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
    CURLSH *share;
    CURLM *idle[POOL_IDLE_MAX];
    int n_idle;
    size_t budget, in_flight, peak;
};

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *opaque)
{
    (void)h;
    (void)access;
    reel_remote_pool *p = opaque;
    pthread_mutex_lock(&p->locks[(unsigned)data < CURL_LOCK_DATA_LAST ? data : 0]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *opaque)
{
    (void)h;
    reel_remote_pool *p = opaque;
    pthread_mutex_unlock(&p->locks[(unsigned)data < CURL_LOCK_DATA_LAST ? data : 0]);
}

int reel_remote_pool_create(reel_remote_pool **out, size_t max_bytes_in_flight, reel_error *err)
{
    if (!out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_remote_pool_create: out is NULL");
    *out = NULL;
    reel__curl_init();
    reel_remote_pool *p = calloc(1, sizeof *p);
    if (!p) return reel__error_set(err, REEL_E_NOMEM, "remote pool: out of memory");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&p->locks[i], NULL);
    p->budget = max_bytes_in_flight ? max_bytes_in_flight : (size_t)256 << 20;
    p->share = curl_share_init();
    if (!p->share || curl_share_setopt(p->share, CURLSHOPT_LOCKFUNC, share_lock) != CURLSHE_OK ||
        curl_share_setopt(p->share, CURLSHOPT_UNLOCKFUNC, share_unlock) != CURLSHE_OK ||
        curl_share_setopt(p->share, CURLSHOPT_USERDATA, p) != CURLSHE_OK ||
        curl_share_setopt(p->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK ||
        curl_share_setopt(p->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK) {
        reel_remote_pool_destroy(&p);
        return reel__error_set(err, REEL_E_NOMEM, "remote pool: cannot set up libcurl's share");
    }
    *out = p;
    return REEL_OK;
}

void reel_remote_pool_destroy(reel_remote_pool **pp)
{
    if (!pp || !*pp) return;
    reel_remote_pool *p = *pp;
    for (int i = 0; i < p->n_idle; i++) curl_multi_cleanup(p->idle[i]);
    if (p->share) curl_share_cleanup(p->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&p->locks[i]);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
    *pp = NULL;
}

int64_t reel_remote_pool_get_peak_bytes(const reel_remote_pool *p)
{
    if (!p) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&p->mu);
    int64_t v = (int64_t)p->peak;
    pthread_mutex_unlock((pthread_mutex_t *)&p->mu);
    return v;
}

CURLSH *reel__pool_share(reel_remote_pool *p)
{
    return p->share;
}

CURLM *reel__pool_take(reel_remote_pool *p)
{
    CURLM *m = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->n_idle > 0) m = p->idle[--p->n_idle];
    pthread_mutex_unlock(&p->mu);
    return m ? m : curl_multi_init();
}

void reel__pool_give(reel_remote_pool *p, CURLM *m)
{
    if (!m) return;
    pthread_mutex_lock(&p->mu);
    if (p->n_idle < POOL_IDLE_MAX) {
        p->idle[p->n_idle++] = m;
        m = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    if (m) curl_multi_cleanup(m);
}

int reel__pool_reserve(reel_remote_pool *p, size_t bytes, double max_wait, int (*interrupt)(void *), void *opaque,
                       reel_remote_stats *stats)
{
    const int64_t t0 = reel__clock_ns();
    int waited = 0, r = 0;
    pthread_mutex_lock(&p->mu);
    while (p->in_flight > 0 && p->in_flight + bytes > p->budget) {
        waited = 1;
        if (interrupt && interrupt(opaque)) {
            r = 2;
            break;
        }
        if ((double)(reel__clock_ns() - t0) / 1e9 >= max_wait) {
            r = 1;
            break;
        }
        /* woken by a release, or every 10 ms to poll the interrupt */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p->cv, &p->mu, &ts);
    }
    if (r == 0) {
        p->in_flight += bytes;
        if (p->in_flight > p->peak) p->peak = p->in_flight;
    }
    pthread_mutex_unlock(&p->mu);
    if (waited && stats) {
        stats->budget_waits++;
        stats->budget_wait_seconds += (double)(reel__clock_ns() - t0) / 1e9;
        if (r == 1) stats->budget_skips++;
    }
    return r;
}

void reel__pool_release(reel_remote_pool *p, size_t bytes)
{
    if (!p || !bytes) return;
    pthread_mutex_lock(&p->mu);
    p->in_flight = p->in_flight > bytes ? p->in_flight - bytes : 0;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}
