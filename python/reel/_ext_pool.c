/* _ext_pool.c: the large buffers of Frames arrays: the last few freed kept
 * (at most POOL_KEEP, POOL_BYTES in all) for the next array of the same
 * size, so that a loop holding its previous clip while it asks for the next
 * does not fault a fresh buffer's pages in (and the kernel zero them) each time. */
#include <pthread.h>

#include "_ext.h"

#define POOL_MIN   ((size_t)1 << 20) /* smaller ones: malloc's own bins serve them again */
#define POOL_KEEP  4
#define POOL_BYTES ((size_t)64 << 20)

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    void *p;
    size_t n;
} pool[POOL_KEEP]; /* oldest first */
static int pool_count;
static size_t pool_bytes;

static size_t rounded(size_t n)
{
    return n > REEL_PY_ALIGN ? n : REEL_PY_ALIGN;
}

void *rx_pool_alloc(size_t n)
{
    n = rounded(n);
    void *p = NULL;
    if (n >= POOL_MIN) {
        pthread_mutex_lock(&pool_lock);
        for (int i = pool_count - 1; i >= 0 && !p; i--) {
            if (pool[i].n != n) continue;
            p = pool[i].p;
            pool_bytes -= n;
            for (int k = i; k + 1 < pool_count; k++) pool[k] = pool[k + 1];
            pool_count--;
        }
        pthread_mutex_unlock(&pool_lock);
        if (p) return p;
    }
    return posix_memalign(&p, REEL_PY_ALIGN, n) == 0 ? p : NULL;
}

void rx_pool_free(void *p, size_t n)
{
    if (!p) return;
    n = rounded(n);
    if (n < POOL_MIN || n > POOL_BYTES / 2) {
        free(p);
        return;
    }
    void *out[POOL_KEEP];
    int n_out = 0;
    pthread_mutex_lock(&pool_lock);
    while (pool_count && (pool_count == POOL_KEEP || pool_bytes + n > POOL_BYTES)) { /* the oldest go */
        out[n_out++] = pool[0].p;
        pool_bytes -= pool[0].n;
        for (int k = 0; k + 1 < pool_count; k++) pool[k] = pool[k + 1];
        pool_count--;
    }
    pool[pool_count].p = p;
    pool[pool_count].n = n;
    pool_count++;
    pool_bytes += n;
    pthread_mutex_unlock(&pool_lock);
    for (int i = 0; i < n_out; i++) free(out[i]);
}
