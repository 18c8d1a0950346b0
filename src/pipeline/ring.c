/* ring.c: allocation of the batch buffers (aligned, pre-faulted; optionally
 * page-locked, pinned.c) with their slots and metadata arrays, and the
 * buffer state machine. */
#include "convert/dtype.h"
#include "pipeline/ring.h"
#include "pipeline/geometry.h"
#include "core/error.h"
#include "reel/device_buffer.h"
#include "cuda/device.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char *reel__ring_memory(const reel_ring *r)
{
    if (r->device || r->vdevice) return "device";
    if (r->pinned == 0) return "plain";
    if (r->variable) return r->plain == 0 ? "pinned" : "mixed";
    return r->pinned == r->count ? "pinned" : "mixed";
}

/* Variable rings: a block of `bytes`, page-locked when pin_memory asks and
 * the CUDA runtime gives it (as fixed rings do), else plain aligned memory;
 * counted under mu. NULL: out of memory. */
static void *block_alloc(reel_ring *r, size_t bytes, int *pinned)
{
    void *p = r->pin ? reel__pinned_alloc(bytes, r->alignment) : NULL;
    *pinned = p != NULL;
    if (!p && posix_memalign(&p, r->alignment, bytes) != 0) return NULL;
    return p;
}

/* Frees a block from either allocator (NULL is fine). */
static void release(void *p, int pinned)
{
    if (pinned)
        reel__pinned_free(p);
    else
        free(p);
}

/* Frees a variable ring's block (NULL is fine); under mu for the counts. */
static void block_free(reel_ring *r, void *p, int pinned)
{
    if (!p) return;
    release(p, pinned);
    if (pinned)
        r->pinned--;
    else
        r->plain--;
}

/* One buffer of a fixed-shape ring: `cap` bytes of batch, index arrays for
 * `frames` frames; variable rings allocate as samples come (see
 * reel__ring_slot_reserve). */
static int buf_init(reel_ring *r, reel_batchbuf *bb, const reel_ring_config *c, size_t cap, reel_error *err)
{
    const int B = c->batch_size, K = c->clips_per_video, T = c->variable ? 0 : c->frames_per_clip;
    const size_t rows = (size_t)B * K, frames = rows * T;
    atomic_init(&bb->pending, 0);
    atomic_init(&bb->busy, 0);
    if (!c->variable && c->device) { /* device memory, held until the ring is freed */
        int st = reel_device_buffer_alloc(c->device, cap, &bb->dev, err);
        if (st != REEL_OK) return st;
        bb->data = (void *)(uintptr_t)reel_device_buffer_get_address(bb->dev);
        bb->bytes_cap = cap;
        bb->indices = malloc(frames * sizeof *bb->indices);
        bb->pts = malloc(frames * sizeof *bb->pts);
        bb->visited = calloc(frames, 1);
        if (!bb->indices || !bb->pts || !bb->visited) return REEL_E_NOMEM;
    } else if (!c->variable) {
        void *p = c->pin_memory ? reel__pinned_alloc(cap, c->alignment) : NULL;
        if (p) {
            bb->pinned = 1;
            r->pinned++;
        } else if (posix_memalign(&p, c->alignment, cap) != 0) {
            p = NULL;
        }
        bb->data = p;
        bb->bytes_cap = p ? cap : 0;
        bb->indices = malloc(frames * sizeof *bb->indices);
        bb->pts = malloc(frames * sizeof *bb->pts);
        bb->visited = calloc(frames, 1);
        if (!bb->data || !bb->indices || !bb->pts || !bb->visited) return REEL_E_NOMEM;
        memset(bb->data, 0, cap); /* fault the pages in now: RSS is flat from the start */
    }
    bb->slots = calloc((size_t)B, sizeof *bb->slots);
    bb->rows = calloc(rows, sizeof *bb->rows);
    bb->clips = calloc(rows, sizeof *bb->clips);
    bb->labels = calloc(rows, sizeof *bb->labels);
    bb->audio_win = calloc(rows * 2, sizeof *bb->audio_win);
    if (!bb->slots || !bb->rows || !bb->clips || !bb->labels || !bb->audio_win) return REEL_E_NOMEM;
    for (int j = 0; j < B; j++) {
        reel_slot *s = &bb->slots[j];
        s->bb = bb;
        s->index = j;
        s->audio_win = bb->audio_win + (size_t)j * K * 2;
        if (!c->variable) {
            s->indices = bb->indices + (size_t)j * K * T;
            s->pts = bb->pts + (size_t)j * K * T;
            s->visited = bb->visited + (size_t)j * K * T;
        }
        pthread_mutex_init(&s->mu, NULL);
    }
    bb->slots_ready = 1;
    reel_batch *b = &bb->batch;
    b->data = bb->data;
    b->device_buffer = bb->dev;
    b->dtype = c->dtype;
    b->layout = c->layout;
    b->ndim = 5;
    b->labels = bb->labels;
    b->clips = bb->clips;
    b->variable = c->variable;
    bb->state = REEL_BUF_FREE;
    r->bytes_total += bb->bytes_cap;
    return REEL_OK;
}

int reel__ring_init(reel_ring *r, const reel_ring_config *c, reel_error *err)
{
    memset(r, 0, sizeof *r);
    const int B = c->batch_size, K = c->clips_per_video, T = c->frames_per_clip;
    const size_t rows = (size_t)B * K;
    int64_t shape[5] = { 0 }, strides[5] = { 0 };
    size_t cap = 0, align = c->alignment;
    if (!c->variable) {
        reel__layout_shape(c->layout, (int64_t)rows, T, c->height, c->width, c->channels, shape, strides);
        size_t esize = reel__dtype_size(c->dtype);
        double dbytes = (double)rows * (double)strides[0] * (double)esize;
        if (dbytes > 1e15)
            return reel__error_set(err, REEL_E_INVALID_ARG, "loader: a batch of %.0f bytes is too large", dbytes);
        size_t bytes = rows * (size_t)strides[0] * esize;
        cap = (bytes + align - 1) / align * align;
    }
    r->bufs = calloc((size_t)c->count, sizeof *r->bufs);
    if (!r->bufs) return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory");
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cond, NULL);
    r->inited = 1;
    r->count = c->count;
    r->batch_size = B;
    r->variable = c->variable;
    r->pin = c->variable && c->pin_memory;
    r->budget = c->budget;
    r->alignment = align;
    r->device = c->device && !c->variable;
    r->vdevice = c->variable ? c->device : NULL;
    if (r->device && c->budget > 0 && (double)cap * c->count > (double)c->budget) {
        reel__ring_free(r);
        return reel__error_set(err, REEL_E_CUDA,
                               "loader: %d batch buffers of %zu bytes on %s pass the bound of %lld bytes (ring_bytes)",
                               c->count, cap, c->device, (long long)c->budget);
    }
    for (int i = 0; i < c->count; i++) {
        reel_batchbuf *bb = &r->bufs[i];
        reel_error be;
        reel_error_clear(&be);
        int st = buf_init(r, bb, c, cap, &be);
        if (st != REEL_OK) {
            reel__ring_free(r);
            if (st == REEL_E_CUDA)
                return reel__error_set(err, st, "loader: %d batch buffers of %zu bytes on the GPU: %s", c->count, cap,
                                       be.message);
            return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for %d batch buffers of %zu bytes",
                                   c->count, cap);
        }
        memcpy(bb->batch.shape, shape, sizeof shape);
        memcpy(bb->batch.strides, strides, sizeof strides);
    }
    return REEL_OK;
}

void reel__ring_free(reel_ring *r)
{
    if (!r->inited) return;
    for (int i = 0; i < r->count; i++) {
        reel_batchbuf *bb = &r->bufs[i];
        if (r->device)
            reel_device_buffer_free(&bb->dev); /* waits for nothing: every write was waited for */
        else
            release(bb->data, bb->pinned);
        if (bb->slots_ready)
            for (int j = 0; j < r->batch_size; j++) {
                reel_slot *s = &bb->slots[j];
                pthread_mutex_destroy(&s->mu);
                free(s->audio);
                if (r->variable && s->data_dev) {
                    if (r->tally) reel__cuda_tally_add(r->tally, -(int64_t)s->data_cap, 0);
                    reel_device_buffer_free(&s->data_dev);
                } else if (r->variable) {
                    release(s->data, s->data_pinned);
                }
                if (r->variable) {
                    free(s->indices);
                    free(s->pts);
                    free(s->visited);
                }
            }
        free(bb->slots);
        free(bb->indices);
        free(bb->pts);
        free(bb->visited);
        free(bb->rows);
        free(bb->clips);
        free(bb->labels);
        free(bb->audio_win);
        free(bb->audio);
    }
    free(r->bufs);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cond);
    memset(r, 0, sizeof *r);
}

/* Variable rings: bytes a buffer holds (its slots' and its padded batch). */
static size_t buf_bytes(const reel_ring *r, const reel_batchbuf *bb)
{
    size_t n = bb->bytes_cap;
    for (int j = 0; j < r->batch_size; j++) n += bb->slots[j].data_cap;
    return n;
}

/* Variable rings, under mu: gives back the memory of FREE buffers (but
 * `keep`) while the ring holds more than its budget. */
static void trim(reel_ring *r, const reel_batchbuf *keep)
{
    for (int i = 0; i < r->count && (int64_t)r->bytes_total > r->budget; i++) {
        reel_batchbuf *bb = &r->bufs[i];
        if (bb == keep || bb->state != REEL_BUF_FREE || atomic_load(&bb->busy) != 0) continue;
        for (int j = 0; j < r->batch_size; j++) {
            reel_slot *s = &bb->slots[j];
            r->bytes_total -= s->data_cap;
            if (s->data_dev) {
                if (r->tally) reel__cuda_tally_add(r->tally, -(int64_t)s->data_cap, 0);
                reel_device_buffer_free(&s->data_dev);
            } else {
                block_free(r, s->data, s->data_pinned);
            }
            s->data = NULL;
            s->data_cap = 0;
        }
        r->bytes_total -= bb->bytes_cap;
        block_free(r, bb->data, bb->pinned);
        bb->data = NULL;
        bb->bytes_cap = 0;
    }
}

reel_batchbuf *reel__ring_take_free(reel_ring *r)
{
    if (r->variable) {
        /* A batch's samples are sized in stage 1, after it is planned: one
         * still filling may hold less than it will, so it counts at least
         * as the largest batch yet, and before any sample has been sized,
         * one batch in flight is all (else an epoch's start would plan
         * prefetch_batches of them, sizes unknown, past any budget). */
        int in_flight = 0;
        size_t held = 0;
        for (int i = 0; i < r->count; i++) {
            const reel_batchbuf *bb = &r->bufs[i];
            if (bb->state == REEL_BUF_FILLING || bb->state == REEL_BUF_READY) in_flight = 1;
            if (bb->state == REEL_BUF_FREE) continue;
            size_t n = buf_bytes(r, bb);
            held += bb->state == REEL_BUF_FILLING && n < r->est ? r->est : n;
        }
        if (in_flight && (r->est == 0 || (int64_t)held >= r->budget)) return NULL;
    }
    for (int i = 0; i < r->count; i++)
        if (r->bufs[i].state == REEL_BUF_FREE && atomic_load(&r->bufs[i].busy) == 0) {
            r->bufs[i].state = REEL_BUF_FILLING;
            if (r->variable) trim(r, &r->bufs[i]);
            return &r->bufs[i];
        }
    return NULL;
}

/* Grows *p to `bytes` (contents not kept), aligned, page-locked with
 * pin_memory where it can be; accounting under mu. */
static int grow_block(reel_ring *r, void **p, size_t *cap, int *pinned, size_t bytes)
{
    if (bytes <= *cap) return REEL_OK;
    size_t want = (bytes + r->alignment - 1) / r->alignment * r->alignment;
    /* the old block goes first: never both at once */
    pthread_mutex_lock(&r->mu);
    block_free(r, *p, *pinned);
    r->bytes_total -= *cap;
    *p = NULL;
    *cap = 0;
    *pinned = 0;
    pthread_mutex_unlock(&r->mu);
    int q_pinned = 0;
    void *q = block_alloc(r, want, &q_pinned);
    if (!q) return REEL_E_NOMEM;
    pthread_mutex_lock(&r->mu);
    if (q_pinned)
        r->pinned++;
    else
        r->plain++;
    r->bytes_total += want;
    *p = q;
    *cap = want;
    *pinned = q_pinned;
    pthread_mutex_unlock(&r->mu);
    return REEL_OK;
}

/* A variable ring on a GPU: a slot's device buffer grown to `bytes`
 * (contents not kept; the old one goes first), counted in the tally. */
static int grow_device(reel_ring *r, reel_slot *s, size_t bytes, reel_error *err)
{
    if (bytes <= s->data_cap) return REEL_OK;
    size_t want = (bytes + r->alignment - 1) / r->alignment * r->alignment;
    /* data and data_cap under mu: the feeder sums the slots' caps
     * (buf_bytes) while a worker grows its slot */
    pthread_mutex_lock(&r->mu);
    const size_t old = s->data_cap;
    r->bytes_total -= old;
    s->data = NULL;
    s->data_cap = 0;
    pthread_mutex_unlock(&r->mu);
    if (r->tally) reel__cuda_tally_add(r->tally, -(int64_t)old, 0);
    reel_device_buffer_free(&s->data_dev);
    int st = reel_device_buffer_alloc(r->vdevice, want, &s->data_dev, err);
    if (st != REEL_OK) return st;
    if (r->tally) reel__cuda_tally_add(r->tally, (int64_t)want, 0);
    pthread_mutex_lock(&r->mu);
    s->data = (void *)(uintptr_t)reel_device_buffer_get_address(s->data_dev);
    s->data_cap = want;
    r->bytes_total += want;
    pthread_mutex_unlock(&r->mu);
    return REEL_OK;
}

/* A sample of `bytes` was sized: the planned size of a batch grows to
 * batch_size of them; the feeder may be waiting for it. */
static void note_sample(reel_ring *r, size_t bytes)
{
    pthread_mutex_lock(&r->mu);
    size_t batch = bytes * (size_t)r->batch_size;
    if (batch > r->est || r->est == 0) {
        r->est = batch > 0 ? batch : 1;
        pthread_cond_broadcast(&r->cond);
    }
    pthread_mutex_unlock(&r->mu);
}

int reel__ring_slot_reserve(reel_ring *r, reel_slot *s, int64_t frames, size_t bytes, reel_error *err)
{
    if (frames > s->frames_cap) {
        int64_t *ix = realloc(s->indices, (size_t)frames * sizeof *ix);
        if (ix) s->indices = ix;
        int64_t *pts = realloc(s->pts, (size_t)frames * sizeof *pts);
        if (pts) s->pts = pts;
        uint8_t *v = realloc(s->visited, (size_t)frames);
        if (v) s->visited = v;
        if (!ix || !pts || !v)
            return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for %lld frame indices",
                                   (long long)frames);
        s->frames_cap = frames;
    }
    note_sample(r, bytes);
    if (r->vdevice) {
        reel_error de;
        reel_error_clear(&de);
        int st = grow_device(r, s, bytes, &de);
        if (st != REEL_OK)
            return reel__error_set(err, st, "loader: a sample of %zu bytes on %s: %s", bytes, r->vdevice, de.message);
        return REEL_OK;
    }
    if (grow_block(r, &s->data, &s->data_cap, &s->data_pinned, bytes) != REEL_OK)
        return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for a sample of %zu bytes", bytes);
    return REEL_OK;
}

int reel__ring_batch_reserve(reel_ring *r, reel_batchbuf *bb, size_t bytes, reel_error *err)
{
    if (grow_block(r, &bb->data, &bb->bytes_cap, &bb->pinned, bytes) != REEL_OK)
        return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for a padded batch of %zu bytes", bytes);
    return REEL_OK;
}

int reel__ring_audio_reserve(reel_ring *r, reel_batchbuf *bb, size_t bytes, reel_error *err)
{
    if (bytes <= bb->audio_bytes) return REEL_OK;
    void *p = NULL;
    size_t want = (bytes + r->alignment - 1) / r->alignment * r->alignment;
    if (posix_memalign(&p, r->alignment, want) != 0)
        return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for a batch's audio of %zu bytes", bytes);
    free(bb->audio);
    pthread_mutex_lock(&r->mu);
    r->bytes_total += want - bb->audio_bytes;
    pthread_mutex_unlock(&r->mu);
    bb->audio = p;
    bb->audio_bytes = want;
    return REEL_OK;
}

int reel__ring_slot_audio_reserve(reel_slot *s, size_t floats, reel_error *err)
{
    if (floats <= s->audio_cap) return REEL_OK;
    float *p = realloc(s->audio, floats * sizeof *p);
    if (!p) return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for %zu audio samples", floats);
    s->audio = p;
    s->audio_cap = floats;
    return REEL_OK;
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

void reel__batchbuf_note_failure(reel_batchbuf *bb, const reel_slot *s)
{
    if (bb->status == REEL_OK && s->status != REEL_E_CANCELLED) {
        bb->status = s->status;
        bb->err = s->err;
        bb->err_sample = s->sample;
        bb->err_position = s->position;
    }
    if (s->status == REEL_E_CANCELLED && bb->status == REEL_OK) {
        bb->status = REEL_E_CANCELLED;
        reel__error_set(&bb->err, REEL_E_CANCELLED, "loader: cancelled");
    }
}
