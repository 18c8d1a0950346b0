/* loader_upload.c: the GPU Loader over a source of host pixels (a packed
 * store's records): a decode worker's host staging for one sample's rows,
 * and their upload into the sample's rows of the batch in device memory. */
#include "pipeline/loader_internal.h"
#include "core/error.h"
#include "cuda/device.h"
#include "pipeline/pinned.h"

#include <stdint.h>
#include <stdlib.h>

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

int reel__loader_gpu_upload(reel_loader *l, reel_slot *s, const uint8_t *host, size_t bytes, reel_error *e)
{
    const size_t row_bytes = (size_t)s->bb->batch.strides[0] * l->element_bytes;
    const uint64_t dst = (uint64_t)(uintptr_t)s->bb->data + (uint64_t)s->index * l->clips_per_sample * row_bytes;
    int st;
    /* the watchdog may abandon the sample and the batch move rows over
     * its own: the rows are written under the slot's lock, or not at all */
    pthread_mutex_lock(&s->mu);
    if (s->abandoned) {
        st = reel__error_set(e, REEL_E_CANCELLED, "%s: abandoned", sample_name(l, s->sample));
    } else {
        reel_error ce;
        reel_error_clear(&ce);
        st = reel__cuda_upload(l->cuda, dst, host, bytes, &ce);
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
