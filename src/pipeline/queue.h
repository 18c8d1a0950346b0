/* queue.h: a bounded, blocking, multi-producer multi-consumer FIFO of
 * pointers, with close() for shutdown and a time-averaged depth for metrics.
 * Thread-safe: every call may come from any thread. */
#ifndef REEL_PIPELINE_QUEUE_H
#define REEL_PIPELINE_QUEUE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct reel_queue {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    void **items; /* circular, `alloc` slots */
    size_t alloc, capacity, head, count;
    int closed;
    /* metrics: integral of depth over time */
    int64_t t_start, t_last;
    double depth_integral;
    int64_t pushed, popped;
} reel_queue;

/* capacity >= 1: pushes block while `capacity` items wait. Returns 0 or
 * REEL_E_NOMEM. */
int reel__queue_init(reel_queue *q, size_t capacity);
void reel__queue_destroy(reel_queue *q);

/* Blocks while full. Returns 1 when pushed, 0 when the queue is closed (the
 * item was not taken). */
int reel__queue_push(reel_queue *q, void *item);

/* Pushes even when full (the storage grows): for work that re-enters a stage
 * from a later one, which must never block on its own upstream. Returns 1,
 * 0 when closed, or a negative status on allocation failure. */
int reel__queue_push_force(reel_queue *q, void *item);

/* Blocks while empty. Returns 1 with *item set, 0 when closed and empty. */
int reel__queue_pop(reel_queue *q, void **item);

/* Non-blocking pop: 1 with *item, 0 when empty. */
int reel__queue_try_pop(reel_queue *q, void **item);

/* Wakes every waiter; later pushes fail, pops drain what is left. */
void reel__queue_close(reel_queue *q);

/* Re-opens a closed, drained queue and restarts its depth metrics. */
void reel__queue_reopen(reel_queue *q);

/* Current depth and time-averaged depth since init/reopen. */
void reel__queue_depth(reel_queue *q, int64_t *now_depth, double *avg_depth);

#endif
