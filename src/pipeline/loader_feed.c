/* loader_feed.c: the loader's feeder thread (plans each batch of the
 * epoch into a free ring buffer and queues its samples to stage 1), and
 * starting and stopping all of the loader's threads. */
#define _POSIX_C_SOURCE 200809L
#include "pipeline/loader_internal.h"
#include "core/error.h"
#include "core/clock.h"

#if defined(__GLIBC__) || defined(__linux__)
#include <malloc.h>
#endif
#include <stddef.h>
#include <string.h>

/* ---------------------------------------------------------------- feeder */

static void *feeder_main(void *arg)
{
    reel_loader *l = arg;
    reel_ring *r = &l->ring;
    reel__loader_name_thread("feeder", -1);
    for (;;) {
        int64_t tw = reel__clock_ns();
        pthread_mutex_lock(&r->mu);
        reel_batchbuf *bb = NULL;
        for (;;) {
            if (stopping(l)) break;
            /* advance past finished epochs */
            while (epoch_in_range(l, l->feed_epoch) && l->feed_index >= reel__plan_batches(&l->plan, l->feed_seen)) {
                l->feed_epoch++;
                l->feed_index = 0;
                l->feed_seen = 0;
            }
            if (!epoch_in_range(l, l->feed_epoch)) break;
            bb = reel__ring_take_free(r);
            if (bb) break;
            pthread_cond_wait(&r->cond, &r->mu);
        }
        if (!bb) {
            pthread_mutex_unlock(&r->mu);
            break;
        }
        int64_t epoch = l->feed_epoch, index = l->feed_index++, seen = l->feed_seen;
        int64_t seq = l->feed_seq++;
        pthread_mutex_unlock(&r->mu);
        int64_t t0 = reel__clock_ns();
        reel__trace_add(&l->trace, l->feeder_track, "wait for buffer", NULL, tw, t0, -1);

        reel__plan_epoch(&l->plan, epoch);
        reel_stripe_batch sb;
        reel__plan_batch(&l->plan, seen, index, &sb);
        const int64_t pos = sb.first, count = sb.count;
        bb->seq = seq;
        bb->epoch = epoch;
        bb->index = index;
        bb->position = pos;
        bb->nsamples = count;
        bb->samples_seen = sb.samples_seen_after;
        atomic_store(&bb->pending, (int)count);
        for (int64_t j = 0; j < count; j++) {
            reel_slot *s = &bb->slots[j];
            s->position = pos + j;
            s->requested = s->sample = reel__plan_sample(&l->plan, pos + j, &s->padded);
            s->attempt = 0;
            s->status = REEL_E_INTERNAL;
            pthread_mutex_lock(&s->mu);
            s->work_ns = 0;
            s->t_begin = 0;
            s->abandoned = 0;
            pthread_mutex_unlock(&s->mu);
            atomic_store(&s->cut, 0);
            s->stop = &l->stop;
            s->handle = NULL;
            reel_error_clear(&s->err);
        }
        int closed = 0;
        for (int64_t j = 0; j < count; j++) {
            if (closed || reel__queue_push(&l->st[REEL_STAGE_OPEN].q, &bb->slots[j]) != 1) {
                closed = 1;
                bb->slots[j].status = REEL_E_CANCELLED;
                reel__loader_slot_finish(l, &bb->slots[j]);
            }
        }
        reel__trace_add(&l->trace, l->feeder_track, "plan batch", NULL, t0, reel__clock_ns(), seq);
        if (closed) break;
#if defined(__GLIBC__)
        /* Decoders come and go on many threads; give the freed memory of
         * every malloc arena back now and then so RSS stays flat. */
        if (seq % 16 == 15) {
            int64_t tt = reel__clock_ns();
            malloc_trim(0);
            reel__trace_add(&l->trace, l->feeder_track, "malloc_trim", NULL, tt, reel__clock_ns(), -1);
        }
#endif
    }
    return NULL;
}

/* ------------------------------------------------------- start and stop */

static void *(*const stage_main[REEL_STAGE_COUNT])(void *) = { reel__loader_open_main, reel__loader_decode_main,
                                                               reel__loader_collate_main };

void reel__loader_stop_threads(reel_loader *l)
{
    atomic_store_explicit(&l->stop, 1, memory_order_release);
    for (int i = 0; i < REEL_STAGE_COUNT; i++) reel__queue_close(&l->st[i].q);
    reel__ring_wake(&l->ring);
    pthread_mutex_lock(&l->wd_mu);
    pthread_cond_broadcast(&l->wd_cond);
    pthread_mutex_unlock(&l->wd_mu);
    if (l->watchdog_started) {
        pthread_join(l->watchdog, NULL);
        l->watchdog_started = 0;
    }
    if (l->feeder_started) {
        pthread_join(l->feeder, NULL);
        l->feeder_started = 0;
    }
    for (int i = 0; i < REEL_STAGE_COUNT; i++) {
        stage *sg = &l->st[i];
        for (int k = 0; k < sg->started; k++) pthread_join(sg->tids[k], NULL);
        sg->started = 0;
    }
    /* Drain: slots left in queues, decoders left open, batches in flight. */
    void *item;
    for (int i = 0; i < REEL_STAGE_COUNT; i++)
        while (reel__queue_try_pop(&l->st[i].q, &item)) {}
    for (int b = 0; b < l->ring.count; b++) {
        reel_batchbuf *bb = &l->ring.bufs[b];
        for (int j = 0; j < l->ring.batch_size; j++) {
            reel_slot *s = &bb->slots[j];
            reel__loader_slot_close(l, s);
            s->t_begin = 0;
            s->abandoned = 0;
        }
    }
    reel__ring_reset_unheld(&l->ring);
}

int reel__loader_start_threads(reel_loader *l, reel_error *err)
{
    atomic_store_explicit(&l->stop, 0, memory_order_release);
    for (int i = 0; i < REEL_STAGE_COUNT; i++) reel__queue_reopen(&l->st[i].q);
    int wi = 0;
    for (int i = 0; i < REEL_STAGE_COUNT; i++) {
        stage *sg = &l->st[i];
        for (int k = 0; k < sg->threads; k++, wi++) {
            if (pthread_create(&sg->tids[k], NULL, stage_main[i], &l->workers[wi]) != 0) {
                reel__loader_stop_threads(l);
                return reel__error_set(err, REEL_E_NOMEM, "loader: cannot start a %s thread", sg->name);
            }
            sg->started++;
        }
    }
    if (pthread_create(&l->feeder, NULL, feeder_main, l) != 0) {
        reel__loader_stop_threads(l);
        return reel__error_set(err, REEL_E_NOMEM, "loader: cannot start the feeder thread");
    }
    l->feeder_started = 1;
    if (l->s.sample_time_limit > 0) {
        if (pthread_create(&l->watchdog, NULL, reel__loader_watchdog_main, l) != 0) {
            reel__loader_stop_threads(l);
            return reel__error_set(err, REEL_E_NOMEM, "loader: cannot start the watchdog thread");
        }
        l->watchdog_started = 1;
    }
    return REEL_OK;
}
