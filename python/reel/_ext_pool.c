/* _ext_pool.c: the large buffers of Frames arrays: the last few freed kept
 * in the module's state (at most RX_POOL_KEEP, POOL_BYTES in all) for the
 * next array of the same size, so that a loop holding its previous clip
 * while it asks for the next does not fault a fresh buffer's pages in (and
 * the kernel zero them) each time. Both ends run with the GIL held. */
#include "_ext.h"

#define POOL_MIN   ((size_t)1 << 20) /* smaller ones: malloc's own bins serve them again */
#define POOL_BYTES ((size_t)64 << 20)

static size_t rounded(size_t n)
{
    return n > REEL_PY_ALIGN ? n : REEL_PY_ALIGN;
}

void *rx_pool_alloc(rx_pool *pool, size_t n)
{
    n = rounded(n);
    if (n >= POOL_MIN) {
        for (int i = pool->count - 1; i >= 0; i--) {
            if (pool->n[i] != n) continue;
            void *p = pool->p[i];
            pool->bytes -= n;
            for (int k = i; k + 1 < pool->count; k++) {
                pool->p[k] = pool->p[k + 1];
                pool->n[k] = pool->n[k + 1];
            }
            pool->count--;
            return p;
        }
    }
    void *p = NULL;
    return posix_memalign(&p, REEL_PY_ALIGN, n) == 0 ? p : NULL;
}

void rx_pool_free(rx_pool *pool, void *p, size_t n)
{
    if (!p) return;
    n = rounded(n);
    if (!pool || n < POOL_MIN || n > POOL_BYTES / 2) {
        free(p);
        return;
    }
    while (pool->count && (pool->count == RX_POOL_KEEP || pool->bytes + n > POOL_BYTES)) { /* the oldest go */
        free(pool->p[0]);
        pool->bytes -= pool->n[0];
        for (int k = 0; k + 1 < pool->count; k++) {
            pool->p[k] = pool->p[k + 1];
            pool->n[k] = pool->n[k + 1];
        }
        pool->count--;
    }
    pool->p[pool->count] = p;
    pool->n[pool->count] = n;
    pool->count++;
    pool->bytes += n;
}

void rx_pool_clear(rx_pool *pool)
{
    for (int i = 0; i < pool->count; i++) free(pool->p[i]);
    pool->count = 0;
    pool->bytes = 0;
}
