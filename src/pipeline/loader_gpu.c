/* loader_gpu.c: the Loader on a GPU (decoder.device "cuda[:N]"): the
 * device opened (or the CPU fallback), the refusals by name, one device
 * (stream, staging, pool) per decode worker lent to its samples' decoders,
 * a sample written by its source straight into its rows of the batch in
 * device memory clip by clip (a source of host pixels, a packed store:
 * converted on the CPU into a worker's host staging and uploaded), the
 * collate's row moves there, and the metrics of every device and pinned byte. */
#include "pipeline/loader_internal.h"
#include "core/error.h"
#include "cuda/device.h"
#include "pipeline/geometry.h"
#include "pipeline/pinned.h"
#include "reel/device_buffer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int reel__loader_gpu_open(reel_loader_settings *s, const reel_source *src, int variable, reel__cuda **out,
                          reel_error *err)
{
    *out = NULL;
    int index = -1;
    reel_error e;
    reel_error_clear(&e);
    if (reel__device_parse(s->decoder.device, &index, &e) != REEL_OK || index < 0) {
        s->decoder.device = NULL; /* checked before: "cpu" */
        s->decoder.device_fallback = NULL;
        return REEL_OK;
    }
    const int fallback = s->decoder.device_fallback && *s->decoder.device_fallback;
    int r = reel__cuda_open(index, 0, out, &e);
    if (r != REEL_OK) {
        if (fallback) { /* asked for: the CPU serves */
            s->decoder.device = NULL;
            s->decoder.device_fallback = NULL;
            return REEL_OK;
        }
        return reel__error_set(err, r, "loader: %s (device_fallback=\"cpu\" decodes on the CPU instead)", e.message);
    }
    /* the device serves: a sample's decoder on it never falls back to the
     * CPU by itself (it would write host pixels to a device address) */
    s->decoder.device_fallback = NULL;
    /* what the GPU Loader does not do yet, by name (never done otherwise) */
    const char *why = NULL;
    (void)src; /* a source of host pixels (a packed store) is uploaded (below) */
    if (variable && s->pad) why = "padding variable batches (pad)";
    if (why) {
        reel__cuda_close(out);
        return reel__error_set(err, REEL_E_CUDA, "loader: %s is not done on the GPU yet (device \"%s\")", why,
                               s->decoder.device);
    }
    return REEL_OK;
}

int reel__loader_gpu_workers_open(reel_loader *l, reel_error *err)
{
    if (!l->cuda) return REEL_OK;
    reel__cuda_set_tally(l->cuda, &l->gpu_tally);
    reel__cuda_tally_add(&l->gpu_tally, (int64_t)l->ring.bytes_total, 0); /* the ring's batch buffers */
    l->ring.tally = &l->gpu_tally; /* variable: the samples' buffers, as they are sized */
    const stage *sg = &l->st[REEL_STAGE_DECODE];
    for (int k = 0; k < sg->threads; k++) {
        worker *w = &l->workers[sg->track0 - 1 + k];
        reel_error e;
        reel_error_clear(&e);
        int st = reel__cuda_open(reel__cuda_index(l->cuda), 0, &w->cuda, &e);
        if (st != REEL_OK) return reel__error_set(err, st, "loader: decode worker %d's device: %s", k, e.message);
        reel__cuda_set_tally(w->cuda, &l->gpu_tally);
    }
    return REEL_OK;
}

void reel__loader_gpu_workers_close(reel_loader *l)
{
    const stage *sg = &l->st[REEL_STAGE_DECODE];
    for (int k = 0; k < sg->threads && sg->track0 > 0; k++) reel__cuda_close(&l->workers[sg->track0 - 1 + k].cuda);
}

/* One clip into its row. Without a time limit the worker alone writes the
 * row (no watchdog runs), so the source writes it directly; with one, the
 * watchdog may abandon the sample while its kernel runs, and the batch may
 * then move rows over this one: the clip goes to the worker's own device
 * buffer and is copied into the row under the slot's lock, unless the
 * sample was abandoned meanwhile. */
static int write_clip(reel_loader *l, worker *w, reel_slot *s, const int64_t *indices, size_t n,
                      const reel_transform *t, int cthw, uint8_t *dst, size_t bytes, int64_t *pts,
                      reel_source_stats *stats, reel_error *e)
{
    if (l->s.sample_time_limit <= 0)
        return l->src.ops->decode_dense(l->src.ctx, w->tls, s->handle, indices, n, t, cthw, dst, bytes, 1, pts, stats,
                                        e);
    if (reel_device_buffer_get_size(w->scratch) < bytes) {
        reel__cuda_tally_add(&l->gpu_tally, -(int64_t)reel_device_buffer_get_size(w->scratch), 0);
        reel_device_buffer_free(&w->scratch);
        int st = reel_device_buffer_alloc(l->device, bytes, &w->scratch, e);
        if (st != REEL_OK) return st;
        reel__cuda_tally_add(&l->gpu_tally, (int64_t)bytes, 0);
    }
    const uint64_t tmp = reel_device_buffer_get_address(w->scratch);
    int st = l->src.ops->decode_dense(l->src.ctx, w->tls, s->handle, indices, n, t, cthw, (void *)(uintptr_t)tmp, bytes,
                                      1, pts, stats, e);
    if (st != REEL_OK) return st;
    pthread_mutex_lock(&s->mu);
    if (s->abandoned)
        st = reel__error_set(e, REEL_E_CANCELLED, "%s: abandoned", sample_name(l, s->sample));
    else
        st = reel__cuda_copy_device(w->cuda, (uint64_t)(uintptr_t)dst, tmp, bytes, e); /* the worker's stream */
    pthread_mutex_unlock(&s->mu);
    return st;
}

void reel__loader_gpu_worker_free(worker *w)
{
    reel__cuda_tally_add(&w->l->gpu_tally, -(int64_t)reel_device_buffer_get_size(w->scratch), 0);
    reel_device_buffer_free(&w->scratch);
}

int reel__loader_gpu_decode(reel_loader *l, worker *w, reel_slot *s, reel_source_stats *stats, reel_error *e)
{
    const reel_clip_transform ct = l->s.transform; /* fixed shapes (variable: reel__loader_vary_decode_split) */
    reel_rng_key key = { l->s.seed, (uint64_t)s->bb->epoch, (uint64_t)s->sample, REEL_RNG_CROP, (uint32_t)s->attempt };
    const int layout = l->s.transform.layout, T = l->frames_per_clip, K = l->clips_per_sample;
    const int cthw = layout == REEL_BATCH_BCTHW; /* a clip's [C, T, H, W]: channel after channel */
    const size_t row_bytes = (size_t)s->bb->batch.strides[0] * l->element_bytes;
    for (int k = 0; k < K; k++) {
        reel_transform t;
        int st = reel__geometry_frame(&ct, s->display_width, s->display_height, &key, k, &t, e);
        if (st != REEL_OK) return st;
        t.layout = layout == REEL_BATCH_BTHWC ? REEL_LAYOUT_HWC : REEL_LAYOUT_CHW;
        t.stride_c = t.stride_y = t.stride_x = 0;
        const int64_t row = (int64_t)s->index * K + k;
        uint8_t *dst = (uint8_t *)s->bb->data + (size_t)row * row_bytes;
        const size_t at = (size_t)k * (size_t)T;
        st = write_clip(l, w, s, s->indices + at, (size_t)T, &t, cthw, dst, row_bytes, s->pts + at, stats, e);
        if (st != REEL_OK) return st;
        reel__geometry_clip_info(&t, s->display_width, s->display_height, &s->bb->rows[row]);
    }
    return REEL_OK;
}

int reel__loader_gpu_move_row(reel_loader *l, void *base, int64_t to, int64_t from, size_t row_bytes, reel_error *e)
{
    const uint64_t b = (uint64_t)(uintptr_t)base;
    return reel__cuda_copy_device(l->cuda, b + (uint64_t)to * row_bytes, b + (uint64_t)from * row_bytes, row_bytes, e);
}

void reel__loader_gpu_metrics(const reel_loader *l, reel_loader_metrics *m)
{
    m->frames_nvdec = atomic_load(&l->frames_nvdec);
    m->frames_uploaded = atomic_load(&l->frames_uploaded);
    m->staging_bytes = atomic_load(&l->staging_bytes);
    m->upload_bytes = atomic_load(&l->upload_bytes);
    if (!l->cuda) return;
    reel__cuda_tally *t = (reel__cuda_tally *)&l->gpu_tally; /* atomics: read only */
    m->device_bytes = atomic_load(&t->device);
    m->device_bytes_peak = atomic_load(&t->device_peak);
    m->pinned_bytes = atomic_load(&t->pinned);
    m->pinned_bytes_peak = atomic_load(&t->pinned_peak);
    m->pinned_failures = atomic_load(&t->pinned_failures);
}

/* ---- a source of host pixels (a packed store's records): a decode
 * worker's host staging for one sample's rows, uploaded into them ---- */

enum { STAGING_ALIGN = 64 };

static void staging_release(worker *w)
{
    if (w->staging_pinned)
        reel__pinned_free(w->staging);
    else
        free(w->staging);
    w->staging = NULL;
    w->staging_cap = 0;
    w->staging_pinned = 0;
}

int reel__loader_gpu_staging(reel_loader *l, worker *w, size_t bytes, uint8_t **host, reel_error *e)
{
    *host = NULL;
    if (w->staging_cap < bytes) {
        atomic_fetch_sub(&l->staging_bytes, (int64_t)w->staging_cap);
        staging_release(w);
        const size_t cap = (bytes + STAGING_ALIGN - 1) / STAGING_ALIGN * STAGING_ALIGN;
        /* page-locked when a CUDA runtime is there (the copy then goes
         * straight from it); plain memory otherwise, copied the same */
        uint8_t *p = reel__pinned_alloc(cap, STAGING_ALIGN);
        w->staging_pinned = p != NULL;
        if (!p) p = aligned_alloc(STAGING_ALIGN, cap);
        if (!p)
            return reel__error_set(e, REEL_E_NOMEM, "loader: out of memory for %zu bytes of host staging on %s", cap,
                                   l->device);
        w->staging = p;
        w->staging_cap = cap;
        atomic_fetch_add(&l->staging_bytes, (int64_t)cap);
    }
    *host = w->staging;
    return REEL_OK;
}

int reel__loader_gpu_upload(reel_loader *l, worker *w, reel_slot *s, const uint8_t *host, size_t bytes, reel_error *e)
{
    const size_t row_bytes = (size_t)s->bb->batch.strides[0] * l->element_bytes;
    const uint64_t dst = l->shapes_vary
                             ? (uint64_t)(uintptr_t)s->data /* the sample's own buffer */
                             : (uint64_t)(uintptr_t)s->bb->data + (uint64_t)s->index * l->clips_per_sample * row_bytes;
    int st;
    /* the watchdog may abandon the sample and the batch move rows over
     * its own: the rows are written under the slot's lock, or not at all */
    pthread_mutex_lock(&s->mu);
    if (s->abandoned) {
        st = reel__error_set(e, REEL_E_CANCELLED, "%s: abandoned", sample_name(l, s->sample));
    } else {
        reel_error ce;
        reel_error_clear(&ce);
        st = reel__cuda_upload(w->cuda ? w->cuda : l->cuda, dst, host, bytes, &ce); /* the worker's stream */
        if (st != REEL_OK)
            reel__error_set(e, st, "%s: uploading its rows to %s: %s", sample_name(l, s->sample), l->device,
                            ce.message);
    }
    pthread_mutex_unlock(&s->mu);
    if (st == REEL_OK) atomic_fetch_add(&l->upload_bytes, (int64_t)bytes);
    return st;
}

void reel__loader_gpu_staging_free(worker *w)
{
    atomic_fetch_sub(&w->l->staging_bytes, (int64_t)w->staging_cap);
    staging_release(w);
}
