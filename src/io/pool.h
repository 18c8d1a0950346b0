/* pool.h: what the http backend uses of a reel_remote_pool (pool.c): lent
 * multi handles (connections), the shared DNS/TLS caches, the byte budget. */
#ifndef REEL_IO_POOL_H
#define REEL_IO_POOL_H

#include <curl/curl.h>

#include "reel/io.h"

/* curl_global_init, once per process (the only process-wide state of src/io;
 * libcurl requires it before any other call). */
void reel__curl_init(void);

/* The share of DNS and TLS sessions, for CURLOPT_SHARE. */
CURLSH *reel__pool_share(reel_remote_pool *p);

/* A multi handle (with the connections it keeps alive) for one transfer;
 * NULL when out of memory. Give it back with reel__pool_give. */
CURLM *reel__pool_take(reel_remote_pool *p);
void reel__pool_give(reel_remote_pool *p, CURLM *m);

/* Takes `bytes` of the fetch-ahead budget, waiting while it is spent (and
 * something holds it) for at most max_wait seconds: 0 taken, 1 not taken
 * (waited too long), 2 interrupted. Waits are counted in stats. */
int reel__pool_reserve(reel_remote_pool *p, size_t bytes, double max_wait, int (*interrupt)(void *), void *opaque,
                       reel_remote_stats *stats);

/* Gives back bytes taken with reel__pool_reserve. */
void reel__pool_release(reel_remote_pool *p, size_t bytes);

#endif
