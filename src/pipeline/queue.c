/* queue.c: the bounded blocking FIFO between pipeline stages. */
#include "pipeline/queue.h"
#include "core/clock.h"
#include "reel/common.h"

#include <stdlib.h>

static void account(reel_queue *q)
{
    int64_t now = reel__clock_ns();
    q->depth_integral += (double)q->count * (double)(now - q->t_last);
    q->t_last = now;
}

int reel__queue_init(reel_queue *q, size_t capacity)
{
    if (capacity < 1) capacity = 1;
    q->items = malloc(capacity * sizeof *q->items);
    if (!q->items) return REEL_E_NOMEM;
    q->alloc = capacity;
    q->capacity = capacity;
    q->head = q->count = 0;
    q->closed = 0;
    q->t_start = q->t_last = reel__clock_ns();
    q->depth_integral = 0;
    q->pushed = q->popped = 0;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    return 0;
}

void reel__queue_destroy(reel_queue *q)
{
    if (!q->items) return;
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    free(q->items);
    q->items = NULL;
}

static int grow(reel_queue *q)
{
    size_t na = q->alloc * 2;
    void **ni = malloc(na * sizeof *ni);
    if (!ni) return REEL_E_NOMEM;
    for (size_t i = 0; i < q->count; i++) ni[i] = q->items[(q->head + i) % q->alloc];
    free(q->items);
    q->items = ni;
    q->alloc = na;
    q->head = 0;
    return 0;
}

static void put(reel_queue *q, void *item)
{
    account(q);
    q->items[(q->head + q->count) % q->alloc] = item;
    q->count++;
    q->pushed++;
    pthread_cond_signal(&q->not_empty);
}

int reel__queue_push(reel_queue *q, void *item)
{
    pthread_mutex_lock(&q->mu);
    while (!q->closed && q->count >= q->capacity) pthread_cond_wait(&q->not_full, &q->mu);
    if (q->closed) {
        pthread_mutex_unlock(&q->mu);
        return 0;
    }
    put(q, item); /* count < capacity <= alloc: there is room */
    pthread_mutex_unlock(&q->mu);
    return 1;
}

int reel__queue_push_force(reel_queue *q, void *item)
{
    pthread_mutex_lock(&q->mu);
    if (q->closed) {
        pthread_mutex_unlock(&q->mu);
        return 0;
    }
    if (q->count >= q->alloc) {
        int st = grow(q);
        if (st < 0) {
            pthread_mutex_unlock(&q->mu);
            return st;
        }
    }
    put(q, item);
    pthread_mutex_unlock(&q->mu);
    return 1;
}

static void *take(reel_queue *q)
{
    account(q);
    void *it = q->items[q->head];
    q->head = (q->head + 1) % q->alloc;
    q->count--;
    q->popped++;
    pthread_cond_signal(&q->not_full);
    return it;
}

int reel__queue_pop(reel_queue *q, void **item)
{
    pthread_mutex_lock(&q->mu);
    while (!q->closed && q->count == 0) pthread_cond_wait(&q->not_empty, &q->mu);
    if (q->count == 0) {
        pthread_mutex_unlock(&q->mu);
        return 0;
    }
    *item = take(q);
    pthread_mutex_unlock(&q->mu);
    return 1;
}

int reel__queue_try_pop(reel_queue *q, void **item)
{
    if (!q->items) return 0;
    pthread_mutex_lock(&q->mu);
    if (q->count == 0) {
        pthread_mutex_unlock(&q->mu);
        return 0;
    }
    *item = take(q);
    pthread_mutex_unlock(&q->mu);
    return 1;
}

void reel__queue_close(reel_queue *q)
{
    if (!q->items) return; /* never initialised */
    pthread_mutex_lock(&q->mu);
    q->closed = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->mu);
}

void reel__queue_reopen(reel_queue *q)
{
    if (!q->items) return;
    pthread_mutex_lock(&q->mu);
    q->closed = 0;
    q->t_start = q->t_last = reel__clock_ns();
    q->depth_integral = 0;
    pthread_mutex_unlock(&q->mu);
}

void reel__queue_depth(reel_queue *q, int64_t *now_depth, double *avg_depth)
{
    if (!q->items) {
        if (now_depth) *now_depth = 0;
        if (avg_depth) *avg_depth = 0;
        return;
    }
    pthread_mutex_lock(&q->mu);
    account(q);
    int64_t span = q->t_last - q->t_start;
    if (now_depth) *now_depth = (int64_t)q->count;
    if (avg_depth) *avg_depth = span > 0 ? q->depth_integral / (double)span : (double)q->count;
    pthread_mutex_unlock(&q->mu);
}
