/* ring.c: allocation of the batch buffers (aligned, pre-faulted; optionally
 * page-locked, pinned.c) with their slots and metadata arrays, and the
 * buffer state machine. */
#include "convert/convert_internal.h"
#include "pipeline/ring.h"
#include "pipeline/geometry.h"
#include "core/error.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char *reel__ring_memory(const reel_ring *r)
{
    if (r->pinned == 0) return "plain";
    return r->pinned == r->count ? "pinned" : "mixed";
}

int reel__ring_init(reel_ring *r, const reel_ring_config *c, reel_error *err)
{
    memset(r, 0, sizeof *r);
    const int B = c->batch_size, K = c->clips_per_video, T = c->frames_per_clip;
    const size_t rows = (size_t)B * K, frames = rows * T;
    int64_t shape[5], strides[5];
    reel__layout_shape(c->layout, (int64_t)rows, T, c->height, c->width, shape, strides);
    size_t esize = reel__dtype_size(c->dtype);
    double dbytes = (double)rows * (double)strides[0] * (double)esize;
    if (dbytes > 1e15)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: a batch of %.0f bytes is too large", dbytes);
    size_t bytes = rows * (size_t)strides[0] * esize;
    size_t align = c->alignment;
    size_t cap = (bytes + align - 1) / align * align;

    r->bufs = calloc((size_t)c->count, sizeof *r->bufs);
    if (!r->bufs) return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory");
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cond, NULL);
    r->inited = 1;
    r->count = c->count;
    r->batch_size = B;
    for (int i = 0; i < c->count; i++) {
        reel_batchbuf *bb = &r->bufs[i];
        atomic_init(&bb->pending, 0);
        atomic_init(&bb->busy, 0);
        void *p = c->pin_memory ? reel__pinned_alloc(cap, align) : NULL;
        if (p) {
            bb->pinned = 1;
            r->pinned++;
        } else if (posix_memalign(&p, align, cap) != 0) {
            p = NULL;
        }
        bb->data = p;
        bb->bytes_cap = cap;
        bb->slots = calloc((size_t)B, sizeof *bb->slots);
        bb->indices = malloc(frames * sizeof *bb->indices);
        bb->pts = malloc(frames * sizeof *bb->pts);
        bb->visited = calloc(frames, 1);
        bb->rows = calloc(rows, sizeof *bb->rows);
        bb->clips = calloc(rows, sizeof *bb->clips);
        bb->labels = calloc(rows, sizeof *bb->labels);
        if (!bb->data || !bb->slots || !bb->indices || !bb->pts || !bb->visited || !bb->rows || !bb->clips ||
            !bb->labels) {
            reel__ring_free(r);
            return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for %d batch buffers of %zu bytes",
                                   c->count, cap);
        }
        memset(bb->data, 0, cap); /* fault the pages in now: RSS is flat from the start */
        for (int j = 0; j < B; j++) {
            reel_slot *s = &bb->slots[j];
            s->bb = bb;
            s->index = j;
            s->indices = bb->indices + (size_t)j * K * T;
            s->pts = bb->pts + (size_t)j * K * T;
            s->visited = bb->visited + (size_t)j * K * T;
            pthread_mutex_init(&s->mu, NULL);
        }
        bb->slots_ready = 1;
        reel_batch *b = &bb->batch;
        b->data = bb->data;
        b->dtype = c->dtype;
        b->layout = c->layout;
        b->ndim = 5;
        memcpy(b->shape, shape, sizeof shape);
        memcpy(b->strides, strides, sizeof strides);
        b->labels = bb->labels;
        b->clips = bb->clips;
        bb->state = REEL_BUF_FREE;
        r->bytes_total += cap;
    }
    return REEL_OK;
}

void reel__ring_free(reel_ring *r)
{
    if (!r->inited) return;
    for (int i = 0; i < r->count; i++) {
        reel_batchbuf *bb = &r->bufs[i];
        if (bb->pinned)
            reel__pinned_free(bb->data);
        else
            free(bb->data);
        if (bb->slots_ready)
            for (int j = 0; j < r->batch_size; j++) pthread_mutex_destroy(&bb->slots[j].mu);
        free(bb->slots);
        free(bb->indices);
        free(bb->pts);
        free(bb->visited);
        free(bb->rows);
        free(bb->clips);
        free(bb->labels);
    }
    free(r->bufs);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cond);
    memset(r, 0, sizeof *r);
}

reel_batchbuf *reel__ring_take_free(reel_ring *r)
{
    for (int i = 0; i < r->count; i++)
        if (r->bufs[i].state == REEL_BUF_FREE && atomic_load(&r->bufs[i].busy) == 0) {
            r->bufs[i].state = REEL_BUF_FILLING;
            return &r->bufs[i];
        }
    return NULL;
}

reel_batchbuf *reel__ring_find_ready_seq(reel_ring *r, int64_t seq)
{
    for (int i = 0; i < r->count; i++)
        if (r->bufs[i].state == REEL_BUF_READY && r->bufs[i].seq == seq) return &r->bufs[i];
    return NULL;
}

reel_batchbuf *reel__ring_find_ready_epoch(reel_ring *r, int64_t epoch)
{
    reel_batchbuf *best = NULL;
    for (int i = 0; i < r->count; i++) {
        reel_batchbuf *bb = &r->bufs[i];
        if (bb->state == REEL_BUF_READY && bb->epoch == epoch && (!best || bb->seq < best->seq)) best = bb;
    }
    return best;
}

void reel__ring_set_ready(reel_ring *r, reel_batchbuf *bb)
{
    pthread_mutex_lock(&r->mu);
    bb->state = REEL_BUF_READY;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
}

int reel__ring_release(reel_ring *r, reel_batch *batch)
{
    uintptr_t p = (uintptr_t)batch, lo = (uintptr_t)r->bufs + offsetof(reel_batchbuf, batch);
    uintptr_t hi = (uintptr_t)(r->bufs + r->count);
    if (!r->bufs || p < lo || p >= hi || (p - lo) % sizeof(reel_batchbuf) != 0) return REEL_E_INVALID_ARG;
    reel_batchbuf *bb = &r->bufs[(p - lo) / sizeof(reel_batchbuf)];
    pthread_mutex_lock(&r->mu);
    int st = REEL_OK;
    if (bb->state != REEL_BUF_OUT)
        st = REEL_E_INVALID_ARG;
    else {
        bb->state = REEL_BUF_FREE;
        pthread_cond_broadcast(&r->cond);
    }
    pthread_mutex_unlock(&r->mu);
    return st;
}

void reel__ring_wake(reel_ring *r)
{
    if (!r->inited) return;
    pthread_mutex_lock(&r->mu);
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
}

void reel__ring_reset_unheld(reel_ring *r)
{
    if (!r->inited) return;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->count; i++)
        if (r->bufs[i].state != REEL_BUF_OUT) {
            r->bufs[i].state = REEL_BUF_FREE;
            atomic_store(&r->bufs[i].pending, 0);
        }
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
}
