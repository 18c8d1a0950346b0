/* loader_resume.c: where the loader is and how it goes back there: the
 * consumer's position, the checkpoint (the one resume API) and its restore,
 * and the order settings other consumers plan with. */
#define _POSIX_C_SOURCE 200809L
#include "pipeline/loader_internal.h"
#include "core/error.h"
#include "core/clock.h"
#include "pipeline/dataset_internal.h"

#include <stdlib.h>
#include <string.h>

void reel__loader_set_position(reel_loader *l, int64_t epoch, int64_t seen)
{
    if (seen < 0) seen = 0;
    if (seen > l->plan.order.n) seen = l->plan.order.n;
    l->restore_epoch = epoch;
    l->restore_seen = seen;
    l->feed_epoch = epoch;
    l->feed_seen = seen;
    l->feed_index = 0;
    l->cur_epoch = epoch;
    l->cur_seen = seen;
    l->cur_batches = batches_in_epoch(l, epoch);
    l->delivered = 0;
    l->next_seq = l->feed_seq;
    l->prefix = 0;
    memset(l->seen, 0, (size_t)reel__plan_batches(&l->plan, 0) + 1);
    l->last_return = 0;
    pthread_mutex_lock(&l->ring.mu); /* metrics may be read from another thread */
    l->done = !epoch_in_range(l, epoch);
    l->t_start = reel__clock_ns();
    l->t_end = l->done ? l->t_start : 0;
    pthread_mutex_unlock(&l->ring.mu);
}

/* The epoch and its samples seen after the last batch handed out (in
 * unordered mode, after the first gap); a whole epoch is the next one's
 * start. */
static void consumed(const reel_loader *l, int64_t *epoch, int64_t *seen)
{
    reel_loader *ml = (reel_loader *)l;
    pthread_mutex_lock(&ml->ring.mu);
    *epoch = l->cur_epoch;
    *seen = l->cur_seen;
    if (l->prefix > 0) {
        reel_stripe_batch b;
        reel__plan_batch(&l->plan, l->cur_seen, l->prefix - 1, &b);
        *seen = b.samples_seen_after;
    }
    pthread_mutex_unlock(&ml->ring.mu);
    if (*seen >= l->plan.order.n && *epoch < REEL_EPOCH_MAX) { /* a whole epoch: the next one from its start */
        ++*epoch;
        *seen = 0;
    }
}

int reel_loader_checkpoint_init(reel_loader_checkpoint *cp, const reel_loader_settings *s, int64_t num_samples,
                                uint64_t dataset_hash, int64_t epoch, int64_t samples_seen, reel_error *err)
{
    if (!cp || !s) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_loader_checkpoint_init: NULL argument");
    if (num_samples < 0 || epoch < 0 || samples_seen < 0 || samples_seen > num_samples)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "checkpoint: epoch %lld, samples_seen %lld of %lld samples is not a position",
                               (long long)epoch, (long long)samples_seen, (long long)num_samples);
    memset(cp, 0, sizeof *cp);
    cp->version = REEL_CHECKPOINT_VERSION;
    cp->epoch = epoch;
    cp->samples_seen = samples_seen;
    cp->seed = s->seed;
    /* the canonical layout as reel_loader_create settles it: the settings'
     * own, else this topology's */
    cp->canonical_ranks = s->canonical_ranks > 0 ? s->canonical_ranks : s->world_size > 0 ? s->world_size : 1;
    cp->canonical_batch = s->canonical_batch > 0 ? s->canonical_batch : s->batch_size;
    if (cp->canonical_batch < 1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "checkpoint: batch_size %d must be >= 1", s->batch_size);
    cp->shuffle = s->shuffle ? 1 : 0;
    cp->shuffle_window = s->shuffle_window;
    cp->num_samples = num_samples;
    cp->dataset_hash = dataset_hash;
    cp->world_size = s->world_size;
    cp->batch_size = s->batch_size;
    cp->num_workers = s->num_workers > 0 ? s->num_workers : 1;
    return REEL_OK;
}

int reel_loader_get_checkpoint(const reel_loader *l, reel_loader_checkpoint *cp, reel_error *err)
{
    if (!l || !cp) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_loader_get_checkpoint: NULL argument");
    int64_t epoch, seen;
    consumed(l, &epoch, &seen);
    /* l->s.canonical_* follow the order's (a restore sets both) */
    return reel_loader_checkpoint_init(cp, &l->s, l->plan.order.n, l->dataset_hash, epoch, seen, err);
}

int reel_loader_checkpoint_check(const reel_loader_checkpoint *cp, const reel_loader_settings *s, int64_t num_samples,
                                 uint64_t dataset_hash, reel_error *err)
{
    if (!cp || !s) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_loader_checkpoint_check: NULL argument");
    if (cp->version < 1 || cp->version > REEL_CHECKPOINT_VERSION)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: checkpoint version %d is not one this reel reads (1..%d): it was written "
                               "by a newer reel, or is not a checkpoint",
                               (int)cp->version, REEL_CHECKPOINT_VERSION);
    if (cp->num_samples != num_samples || cp->dataset_hash != dataset_hash)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: checkpoint is for another dataset (%lld samples, hash %016llx; this loader "
                               "has %lld, %016llx)",
                               (long long)cp->num_samples, (unsigned long long)cp->dataset_hash, (long long)num_samples,
                               (unsigned long long)dataset_hash);
    if (cp->seed != s->seed)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: checkpoint is for seed %llu, this loader has %llu",
                               (unsigned long long)cp->seed, (unsigned long long)s->seed);
    if ((cp->shuffle != 0) != (s->shuffle != 0) || cp->shuffle_window != s->shuffle_window)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: checkpoint is for shuffle=%d, shuffle_window=%lld; this loader has %d, %lld",
                               (int)cp->shuffle, (long long)cp->shuffle_window, s->shuffle ? 1 : 0,
                               (long long)s->shuffle_window);
    /* epochs 0 .. first_epoch + epochs (that one: every epoch consumed) */
    const int64_t last =
        s->epochs <= 0 || s->epochs > REEL_EPOCH_MAX - s->first_epoch ? REEL_EPOCH_MAX : s->first_epoch + s->epochs;
    if (cp->epoch < 0 || cp->epoch > last || cp->samples_seen < 0 || cp->samples_seen > cp->num_samples)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: checkpoint at epoch %lld, samples_seen %lld is outside epochs [0, %lld] x "
                               "[0, %lld]",
                               (long long)cp->epoch, (long long)cp->samples_seen, (long long)last,
                               (long long)cp->num_samples);
    if (cp->canonical_ranks < 1 || cp->canonical_batch < 1)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: checkpoint has canonical_ranks %d, canonical_batch %d (both must be >= 1)",
                               (int)cp->canonical_ranks, (int)cp->canonical_batch);
    return REEL_OK;
}

int reel_loader_restore_checkpoint(reel_loader *l, const reel_loader_checkpoint *cp, reel_error *err)
{
    if (!l || !cp) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: NULL argument");
    int st = reel_loader_checkpoint_check(cp, &l->s, l->plan.order.n, l->dataset_hash, err);
    if (st != REEL_OK) return st;
    reel__loader_stop_threads(l);
    reel__order_set_canonical(&l->plan.order, cp->canonical_ranks, cp->canonical_batch, NULL);
    l->s.canonical_ranks = cp->canonical_ranks;
    l->s.canonical_batch = cp->canonical_batch;
    reel__loader_set_position(l, cp->epoch, cp->samples_seen);
    return reel__loader_start_threads(l, err);
}

int reel_order_create_for_dataset(reel_order **out, reel_dataset *ds, const reel_order_settings *s, reel_error *err)
{
    if (!out || !ds || !s) return reel__error_set(err, REEL_E_INVALID_ARG, "order: NULL argument");
    *out = NULL;
    int st = reel__dataset_freeze(ds, err);
    if (st != REEL_OK) return st;
    reel_order_settings os = *s;
    os.num_samples = (int64_t)ds->n;
    os.block_starts = NULL;
    os.num_blocks = 0;
    int64_t *starts = NULL;
    if (os.shuffle && os.shuffle_window == 0) {
        reel_remote_settings remote;
        reel_remote_default_settings(&remote);
        reel_source src;
        st = reel__source_init(&src, ds, &remote, err);
        if (st == REEL_OK && src.ops->blocks)
            st = src.ops->blocks(src.ctx, ds->items, ds->n, &starts, &os.num_blocks, err);
        reel__source_free(&src);
        if (st != REEL_OK) return st;
        os.block_starts = starts;
    }
    st = reel_order_create(out, &os, err);
    free(starts);
    return st;
}

int reel_loader_get_order_settings(const reel_loader *l, reel_order_settings *out, reel_error *err)
{
    if (!l || !out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_loader_get_order_settings: NULL argument");
    const reel_order *o = &l->plan.order;
    reel_order_default_settings(out);
    out->num_samples = o->n;
    out->seed = o->seed;
    out->shuffle = o->shuffle;
    out->shuffle_window = l->s.shuffle_window;
    out->block_starts = o->starts;
    out->num_blocks = o->starts ? o->nstarts - 1 : 0;
    out->canonical_ranks = o->canon_ranks;
    out->canonical_batch = o->canon_batch;
    return REEL_OK;
}
