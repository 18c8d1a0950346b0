/* loader.c: the batch loader's public face: settings and their defaults,
 * create/destroy, the consumer side (next/release, ordering, epochs,
 * state and restore) and the metrics. The threads that fill the batches
 * are in loader_stages.c (stages, error policy, watchdog) and
 * loader_feed.c (feeder, start and stop); loader_internal.h has the state. */
#define _POSIX_C_SOURCE 200809L
#include "convert/convert_internal.h"
#include "pipeline/loader_internal.h"
#include "core/error.h"
#include "core/clock.h"
#include "pipeline/dataset_internal.h"
#include "pipeline/geometry.h"
#include "pipeline/sampler_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------ defaults */

void reel_loader_default_settings(reel_loader_settings *s)
{
    memset(s, 0, sizeof *s);
    reel_sampler_default_settings(&s->sampler);

    reel_clip_transform *t = &s->transform;
    t->resize = REEL_RESIZE_SHORT_SIDE;
    t->short_side = 256;
    t->crop = REEL_CROP_CENTER;
    t->crop_width = t->crop_height = 224;
    t->scale_min = 0.08;
    t->scale_max = 1.0;
    t->ratio_min = 3.0 / 4.0;
    t->ratio_max = 4.0 / 3.0;
    t->flip = REEL_FLIP_NONE;
    t->flip_probability = 0.5;
    t->filter = REEL_FILTER_BILINEAR;
    t->convert_path = REEL_CONVERT_PATH_FUSED;
    t->apply_rotation = 1;
    t->dtype = REEL_DTYPE_UINT8;
    t->layout = REEL_BATCH_BTCHW;
    t->scale = 255.0f;
    for (int c = 0; c < 3; c++) {
        t->mean[c] = 0.0f;
        t->std[c] = 1.0f;
    }

    s->batch_size = 32;
    s->drop_last = 0;
    s->shuffle = 1;
    s->seed = 0;
    s->epochs = 1;
    s->rank = 0;
    s->world_size = 1;
    s->shard_mode = REEL_SHARD_PAD;
    s->ordered = 1;
    s->on_error = REEL_ON_ERROR_SKIP;
    s->max_replacements = 16;
    s->sample_time_limit = 0;
    s->decoder_threads = 1;
    s->alignment = 4096;
    s->index_mode = REEL_INDEX_READ;
    s->corrupt_policy = REEL_CORRUPT_FAIL;
    s->trace = 0;
    s->trace_capacity = 16384;
    s->pin_memory = 0;
    s->min_coverage = 0;
    s->failure_log_size = 1000;
    s->on_failure = NULL;
    s->on_failure_opaque = NULL;
    s->shuffle_window = 0;
}

/* Positions feeder and consumer at `epoch` with `seen` samples of its order
 * consumed. Threads stopped. */
static void set_position(reel_loader *l, int64_t epoch, int64_t seen)
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

/* ------------------------------------------------------------ create */

static int check_settings(const reel_loader_settings *s, reel_error *err)
{
    int st = reel__sampler_check(&s->sampler, err);
    if (st != REEL_OK) return st;
    if (reel__sampler_fixed_count(&s->sampler) < 1)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: the fps sampler gives each video its own frame count; the loader's batches "
                               "are fixed-shape (use the count sampler, or reel.vlm per video)");
    if (s->batch_size < 1 || s->batch_size > (1 << 20))
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: batch_size %d not in [1, 2^20]", s->batch_size);
    if (s->on_error < REEL_ON_ERROR_SKIP || s->on_error > REEL_ON_ERROR_RAISE)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: unknown error policy %d", s->on_error);
    if (s->max_replacements < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: max_replacements must be >= 0");
    if (!(s->sample_time_limit >= 0))
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: sample_time_limit must be >= 0");
    if (s->epochs < 0) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: epochs must be >= 0");
    if (s->open_threads < 0 || s->decode_threads < 0 || s->collate_threads < 0 || s->decoder_threads < 0 ||
        s->open_threads > 1024 || s->decode_threads > 1024 || s->collate_threads > 64)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: thread counts must be in [0, 1024]");
    if (s->prefetch_batches < 0 || s->prefetch_batches > 64)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: prefetch_batches must be in [0, 64]");
    if (s->queue_capacity < 0) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: queue_capacity must be >= 0");
    if (s->alignment && (s->alignment & (s->alignment - 1)))
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: alignment %zu is not a power of two", s->alignment);
    if (s->trace_capacity < 0) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: trace_capacity must be >= 0");
    if (s->shuffle_window < REEL_SHUFFLE_WINDOW_FULL)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: shuffle_window must be >= 0, or REEL_SHUFFLE_WINDOW_FULL (-1)");
    if (s->pin_memory != 0 && s->pin_memory != 1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: pin_memory must be 0 or 1");
    if (!(s->min_coverage >= 0 && s->min_coverage <= 1))
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: min_coverage must be in [0, 1]");
    if (s->failure_log_size < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: failure_log_size must be >= 0");
    if (s->first_epoch < 0) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: first_epoch must be >= 0");
    if (s->samples ? s->num_samples < 1 : s->num_samples != 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: samples needs num_samples >= 1 (and none without it)");
    if (s->canonical_ranks < 0 || s->canonical_batch < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: canonical_ranks and canonical_batch must be >= 0");
    if (s->num_workers < 0 || s->worker < 0 || s->worker >= (s->num_workers ? s->num_workers : 1))
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: worker %d not in [0, num_workers %d)", s->worker,
                               s->num_workers ? s->num_workers : 1);
    return REEL_OK;
}

/* Fills the automatic (0) thread counts, prefetch depth, alignment and
 * trace size. Returns whether the prefetch depth was automatic. */
static int resolve_settings(reel_loader_settings *s, const reel_source *src)
{
    int cores = reel__cpu_count();
    if (s->decode_threads == 0) s->decode_threads = cores;
    if (s->open_threads == 0) s->open_threads = reel__source_open_threads(src, cores);
    if (s->collate_threads == 0) s->collate_threads = 1;
    if (s->decoder_threads == 0) s->decoder_threads = 1;
    const int auto_prefetch = s->prefetch_batches == 0;
    if (auto_prefetch) s->prefetch_batches = 2 + (s->decode_threads + s->batch_size - 1) / s->batch_size;
    if (s->prefetch_batches > 64) s->prefetch_batches = 64;
    if (s->alignment == 0) s->alignment = 4096; /* the documented default */
    if (s->alignment < sizeof(void *)) s->alignment = sizeof(void *);
    if (s->trace_capacity == 0) s->trace_capacity = 16384;
    if (s->num_workers == 0) s->num_workers = 1;
    if (s->canonical_ranks == 0) s->canonical_ranks = s->world_size > 0 ? s->world_size : 1;
    if (s->canonical_batch == 0) s->canonical_batch = s->batch_size;
    return auto_prefetch;
}

/* The dataset frozen and the epoch plan (order, stripe, batches). */
static int init_plan(reel_loader *l, reel_error *err)
{
    const reel_loader_settings *s = &l->s;
    int st = reel__dataset_freeze(l->ds, err);
    if (st != REEL_OK) return st;
    l->dataset_hash = reel_dataset_get_fingerprint(l->ds);
    reel_order_settings os;
    reel_order_default_settings(&os);
    os.num_samples = s->samples ? s->num_samples : (int64_t)l->ds->n; /* a caller's list, or the dataset */
    os.seed = s->seed;
    os.shuffle = s->samples ? 0 : s->shuffle;
    os.shuffle_window = s->shuffle_window;
    os.canonical_ranks = s->canonical_ranks;
    os.canonical_batch = s->canonical_batch;
    int64_t *starts = NULL;
    size_t nb = 0;
    if (s->shuffle_window == 0 && s->shuffle && !s->samples && l->src.ops->blocks) {
        /* the source's read blocks (a store's shards), one window each */
        st = l->src.ops->blocks(l->src.ctx, l->ds->items, l->ds->n, &starts, &nb, err);
        if (st != REEL_OK) return st;
        os.block_starts = starts;
        os.num_blocks = nb;
    }
    reel_stripe sp = reel_stripe_make(os.num_samples, s->batch_size);
    sp.world_size = s->world_size;
    sp.rank = s->rank;
    sp.num_workers = s->num_workers;
    sp.worker = s->worker;
    sp.shard_mode = s->shard_mode;
    sp.drop_last = s->drop_last ? 1 : 0;
    st = reel__plan_init(&l->plan, &os, &sp, err);
    free(starts);
    if (st == REEL_OK && s->samples) {
        st = reel__order_set_fixed(&l->plan.order, s->samples, (int64_t)l->ds->n, err);
        l->s.samples = NULL; /* copied: the caller's array may go */
    }
    if (st != REEL_OK) return st;
    l->seen = calloc((size_t)reel__plan_batches(&l->plan, 0) + 1, 1);
    if (!l->seen) return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory");
    return REEL_OK;
}

/* The batch buffers. */
static int init_ring(reel_loader *l, int auto_prefetch, reel_error *err)
{
    reel_loader_settings *s = &l->s;
    /* A small dataset needs no more buffers, or rows, than it can fill. */
    if (auto_prefetch && s->prefetch_batches > reel__plan_batches(&l->plan, 0) + 1)
        s->prefetch_batches = (int)reel__plan_batches(&l->plan, 0) + 1;
    reel_ring_config rc;
    rc.count = s->prefetch_batches;
    rc.batch_size = l->plan.per_rank < s->batch_size ? (int)l->plan.per_rank : s->batch_size;
    rc.clips_per_video = l->K;
    rc.frames_per_clip = l->T;
    rc.width = l->out_w;
    rc.height = l->out_h;
    rc.layout = s->transform.layout;
    rc.dtype = s->transform.dtype;
    rc.alignment = s->alignment;
    rc.pin_memory = s->pin_memory;
    return reel__ring_init(&l->ring, &rc, err);
}

/* The stages (named by the source), their queues and workers, and the
 * trace's tracks: feeder, stage threads, consumer. */
static int init_stages(reel_loader *l, reel_error *err)
{
    const reel_loader_settings *s = &l->s;
    const int threads[REEL_STAGE_COUNT] = { s->open_threads, s->decode_threads, s->collate_threads };
    const char *const names[REEL_STAGE_COUNT] = { l->src.stage_names[0], l->src.stage_names[1], "collate" };
    size_t caps[REEL_STAGE_COUNT];
    caps[REEL_STAGE_OPEN] = s->queue_capacity ? (size_t)s->queue_capacity : (size_t)(2 * s->open_threads + 2);
    caps[REEL_STAGE_DECODE] = s->queue_capacity ? (size_t)s->queue_capacity : (size_t)(2 * s->decode_threads);
    caps[REEL_STAGE_COLLATE] = (size_t)s->prefetch_batches;
    int total = 0;
    for (int i = 0; i < REEL_STAGE_COUNT; i++) total += threads[i];
    l->workers = calloc((size_t)total, sizeof *l->workers);
    if (!l->workers) return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory");
    l->feeder_track = 0;
    l->consumer_track = total + 1;
    if (reel__trace_init(&l->trace, total + 2, (size_t)s->trace_capacity, s->trace, reel__clock_ns()) != 0)
        return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for the trace");
    reel__trace_name(&l->trace, l->feeder_track, "feeder", -1);
    reel__trace_name(&l->trace, l->consumer_track, "consumer", -1);
    int wi = 0;
    for (int i = 0; i < REEL_STAGE_COUNT; i++) {
        stage *sg = &l->st[i];
        sg->name = names[i];
        snprintf(sg->abandoned_label, sizeof sg->abandoned_label, "%s (abandoned)", names[i]);
        sg->threads = threads[i];
        sg->track0 = wi + 1;
        sg->tids = calloc((size_t)threads[i], sizeof *sg->tids);
        if (!sg->tids || reel__queue_init(&sg->q, caps[i]) != 0)
            return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory");
        for (int k = 0; k < threads[i]; k++, wi++) {
            l->workers[wi].l = l;
            l->workers[wi].id = k;
            l->workers[wi].track = wi + 1;
            reel__trace_name(&l->trace, wi + 1, names[i], k);
        }
    }
    return REEL_OK;
}

int reel_loader_create(reel_loader **out, reel_dataset *ds, const reel_loader_settings *settings, reel_error *err)
{
    if (!out) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: out is NULL");
    *out = NULL;
    if (!ds) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: dataset is NULL");
    reel_loader_settings s;
    if (settings)
        s = *settings;
    else
        reel_loader_default_settings(&s);
    int st = check_settings(&s, err);
    if (st != REEL_OK) return st;
    int ow, oh;
    st = reel__geometry_check(&s.transform, &ow, &oh, err);
    if (st != REEL_OK) return st;
    if (ds->n == 0) return reel__error_set(err, REEL_E_EMPTY, "loader: the dataset is empty");

    reel_loader *l = calloc(1, sizeof *l);
    if (!l) return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory");
    if (s.remote)
        l->remote_settings = *s.remote;
    else
        reel_remote_default_settings(&l->remote_settings);
    s.remote = &l->remote_settings;
    st = reel__source_init(&l->src, ds, &l->remote_settings, err);
    if (st != REEL_OK) {
        free(l);
        return st;
    }
    const int auto_prefetch = resolve_settings(&s, &l->src);
    l->s = s;
    l->ds = ds;
    l->out_w = ow;
    l->out_h = oh;
    /* the count sampler rounds its count to the frame factor */
    l->T = (int)(reel__sampler_fixed_count(&s.sampler) / s.sampler.clips_per_video);
    l->K = s.sampler.clips_per_video;
    l->esize = reel__dtype_size(s.transform.dtype);
    reel__failures_init(&l->failures_log, (size_t)s.failure_log_size, s.on_failure, s.on_failure_opaque);
    pthread_mutex_init(&l->wd_mu, NULL);
    pthread_mutex_init(&l->remote_mu, NULL);
    pthread_cond_init(&l->wd_cond, NULL);

    st = init_plan(l, err);
    if (st == REEL_OK) st = init_ring(l, auto_prefetch, err);
    if (st == REEL_OK) st = init_stages(l, err);
    if (st == REEL_OK) {
        set_position(l, s.first_epoch, 0);
        st = reel__loader_start_threads(l, err);
    }
    if (st != REEL_OK) {
        reel_loader_destroy(&l);
        return st;
    }
    *out = l;
    return REEL_OK;
}

void reel_loader_destroy(reel_loader **pl)
{
    if (!pl || !*pl) return;
    reel_loader *l = *pl;
    reel__loader_stop_threads(l);
    for (int i = 0; i < REEL_STAGE_COUNT; i++) {
        reel__queue_destroy(&l->st[i].q);
        free(l->st[i].tids);
    }
    reel__ring_free(&l->ring);
    reel__plan_free(&l->plan);
    reel__trace_free(&l->trace);
    reel__failures_free(&l->failures_log);
    reel__source_free(&l->src); /* after the threads: every object is closed */
    pthread_mutex_destroy(&l->wd_mu);
    pthread_mutex_destroy(&l->remote_mu);
    pthread_cond_destroy(&l->wd_cond);
    free(l->workers);
    free(l->seen);
    free(l);
    *pl = NULL;
}

int reel_dataset_get_read_blocks(const reel_dataset *ds, int64_t **starts, size_t *nblocks, reel_error *err)
{
    if (!ds || !starts || !nblocks) return reel__error_set(err, REEL_E_INVALID_ARG, "read blocks: NULL argument");
    *starts = NULL;
    *nblocks = 0;
    if (ds->n == 0) return reel__error_set(err, REEL_E_EMPTY, "read blocks: the dataset is empty");
    reel_remote_settings remote;
    reel_remote_default_settings(&remote);
    reel_source src;
    int st = reel__source_init(&src, ds, &remote, err);
    if (st != REEL_OK) return st;
    if (src.ops->blocks) st = src.ops->blocks(src.ctx, ds->items, ds->n, starts, nblocks, err);
    reel__source_free(&src);
    if (st != REEL_OK || *nblocks > 0) return st;
    free(*starts);
    *starts = NULL;
    int64_t *b = malloc(2 * sizeof *b); /* one run: the whole dataset */
    if (!b) return reel__error_set(err, REEL_E_NOMEM, "read blocks: out of memory");
    b[0] = 0;
    b[1] = (int64_t)ds->n;
    *starts = b;
    *nblocks = 1;
    return REEL_OK;
}

/* ----------------------------------------------------------- consumer */

int64_t reel_loader_get_batches_per_epoch(const reel_loader *l)
{
    return l ? reel__plan_batches(&l->plan, 0) : 0;
}

static void end_epoch(reel_loader *l)
{
    l->cur_epoch++;
    l->cur_seen = 0;
    l->cur_batches = batches_in_epoch(l, l->cur_epoch);
    l->delivered = 0;
    l->prefix = 0;
    memset(l->seen, 0, (size_t)reel__plan_batches(&l->plan, 0) + 1);
    if (!epoch_in_range(l, l->cur_epoch)) {
        l->done = 1;
        l->t_end = reel__clock_ns();
    }
}

/* At the end of an epoch: no sample loaded, or fewer than min_coverage of
 * them, is an error naming the first failures, so an epoch of nothing is
 * never silent. */
static int epoch_check(reel_loader *l, int64_t epoch, int64_t ok, int64_t failed, reel_error *err)
{
    if (ok + failed == 0) return REEL_OK;
    double coverage = (double)ok / (double)(ok + failed);
    if (ok > 0 && coverage >= l->s.min_coverage) return REEL_OK;
    char first[400];
    reel__failures_first(&l->failures_log, epoch, first, sizeof first);
    if (ok == 0)
        return reel__error_set(err, REEL_E_NO_DATA,
                               "loader: no sample of epoch %lld could be loaded (%lld failed); first: %s",
                               (long long)epoch, (long long)failed, first[0] ? first : "(no record)");
    return reel__error_set(
        err, REEL_E_NO_DATA,
        "loader: epoch %lld coverage %.1f%% is below min_coverage %.1f%% (%lld of %lld failed); first: %s",
        (long long)epoch, 100 * coverage, 100 * l->s.min_coverage, (long long)failed, (long long)(ok + failed),
        first[0] ? first : "(no record)");
}

/* The consumer waited from t_in until now: data time, a trace event, and
 * the start of its model time. */
static void end_wait(reel_loader *l, int64_t t_in, const char *what, int64_t seq)
{
    int64_t t_out = reel__clock_ns();
    atomic_fetch_add(&l->data_ns, t_out - t_in);
    reel__trace_add(&l->trace, l->consumer_track, what, NULL, t_in, t_out, seq);
    l->last_return = t_out;
}

/* timeout_s < 0: wait as long as it takes. */
static int loader_next(reel_loader *l, reel_batch **out, double timeout_s, reel_error *err)
{
    if (!l || !out) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: NULL argument");
    *out = NULL;
    if (timeout_s != timeout_s) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: timeout is NaN");
    l->has_raised = 0;
    int64_t t_in = reel__clock_ns();
    struct timespec deadline;
    if (timeout_s >= 0) reel__deadline_in(&deadline, (int64_t)((timeout_s > 1e9 ? 1e9 : timeout_s) * 1e9));
    if (l->last_return) {
        atomic_fetch_add(&l->model_ns, t_in - l->last_return);
        reel__trace_add(&l->trace, l->consumer_track, "model", NULL, l->last_return, t_in, -1);
    }
    int st = REEL_OK;
    reel_ring *r = &l->ring;
    pthread_mutex_lock(&r->mu);
    if (l->done) {
        pthread_mutex_unlock(&r->mu);
        l->last_return = 0;
        return REEL_OK;
    }
    if (l->delivered >= l->cur_batches) {
        int64_t ok = l->epoch_ok, failed = l->epoch_failed, epoch = l->cur_epoch;
        l->epoch_ok = l->epoch_failed = 0;
        end_epoch(l);
        pthread_mutex_unlock(&r->mu);
        l->last_return = 0;
        return epoch_check(l, epoch, ok, failed, err);
    }
    reel_batchbuf *bb = NULL;
    int timed_out = 0;
    for (;;) {
        bb = l->s.ordered ? reel__ring_find_ready_seq(r, l->next_seq) : reel__ring_find_ready_epoch(r, l->cur_epoch);
        if (bb) break;
        if (stopping(l)) break;
        if (timeout_s < 0) {
            pthread_cond_wait(&r->cond, &r->mu);
        } else if (timed_out) {
            break;
        } else if (pthread_cond_timedwait(&r->cond, &r->mu, &deadline) == ETIMEDOUT) {
            timed_out = 1; /* one last look for a batch, then give up */
        }
    }
    if (!bb && timed_out && !stopping(l)) {
        pthread_mutex_unlock(&r->mu);
        /* the wait so far was data time; what the caller does before asking
         * again is its own (model) time, as after a batch */
        end_wait(l, t_in, "wait for batch (timed out)", -1);
        return reel__error_set(err, REEL_E_AGAIN, "loader: no batch within %g s", timeout_s);
    }
    if (!bb) {
        pthread_mutex_unlock(&r->mu);
        return reel__error_set(err, REEL_E_CANCELLED, "loader: stopped");
    }
    bb->state = REEL_BUF_OUT;
    if (l->s.ordered) l->next_seq++;
    l->delivered++;
    if (bb->index >= 0 && bb->index <= reel__plan_batches(&l->plan, 0)) l->seen[bb->index] = 1;
    while (l->prefix < l->cur_batches && l->seen[l->prefix]) l->prefix++;
    pthread_mutex_unlock(&r->mu);

    /* what the consumer needs from the buffer is read before a release hands
     * it back to the feeder, which may reuse it at once */
    const int64_t seq = bb->seq;
    l->epoch_ok += bb->batch.num_samples - bb->batch.num_failed;
    l->epoch_failed += bb->batch.num_failed;
    if (bb->status != REEL_OK && l->s.on_error == REEL_ON_ERROR_RAISE) {
        if (err) *err = bb->err;
        st = bb->status;
        if (bb->err_sample >= 0) {
            reel_failure *f = &l->raised;
            memset(f, 0, sizeof *f);
            snprintf(f->path, sizeof f->path, "%s", sample_name(l, bb->err_sample));
            snprintf(f->reason, sizeof f->reason, "%s", bb->err.message);
            f->status = bb->status;
            f->epoch = bb->epoch;
            f->position = bb->err_position;
            f->sample = bb->err_sample;
            l->has_raised = 1;
        }
        reel_loader_release(l, &bb->batch);
    } else {
        atomic_fetch_add(&l->batches, 1);
        atomic_fetch_add(&l->clips, bb->batch.num_clips);
        atomic_fetch_add(&l->frames, bb->batch.num_clips * l->T);
        *out = &bb->batch;
    }
    end_wait(l, t_in, "wait for batch", seq);
    return st;
}

int reel_loader_next(reel_loader *l, reel_batch **out, reel_error *err)
{
    return loader_next(l, out, -1.0, err);
}

int reel_loader_next_timed(reel_loader *l, reel_batch **out, double timeout_s, reel_error *err)
{
    if (timeout_s < 0) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: timeout must be >= 0");
    return loader_next(l, out, timeout_s, err);
}

int reel_loader_release(reel_loader *l, reel_batch *batch)
{
    if (!l || !batch) return REEL_E_INVALID_ARG;
    return reel__ring_release(&l->ring, batch);
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
    if (*seen >= l->plan.order.n) { /* a whole epoch: the next one from its start */
        ++*epoch;
        *seen = 0;
    }
}

/* Rank-local positions of a whole epoch of this topology <-> global samples
 * seen (the deprecated same-topology state). -1: not on this topology's grid. */
static int64_t local_of_seen(const reel_loader *l, int64_t seen)
{
    const reel_stripe *s = &l->plan.stripe;
    const int64_t n = l->plan.order.n, V = (int64_t)s->world_size * s->num_workers, B = s->batch_size;
    if (seen >= n) return l->plan.per_rank;
    const int64_t full = n / (V * B);
    if (seen <= full * V * B) return (seen / (V * B)) * B + (seen % (V * B)) / V;
    return full * B + (seen - full * V * B) / V;
}

static int64_t seen_of_local(const reel_loader *l, int64_t pos)
{
    const reel_stripe *s = &l->plan.stripe;
    const int64_t n = l->plan.order.n, V = (int64_t)s->world_size * s->num_workers, B = s->batch_size;
    if (pos >= l->plan.per_rank) return n;
    const int64_t full = n / (V * B);
    int64_t seen;
    if (pos <= full * B) {
        if (V > 1 && pos % B) return -1;
        seen = (pos / B) * V * B + pos % B;
    } else {
        if (V > 1) return -1;
        seen = pos;
    }
    return seen > n ? n : seen;
}

int reel_loader_get_state(const reel_loader *l, reel_loader_state *state)
{
    if (!l || !state) return REEL_E_INVALID_ARG;
    memset(state, 0, sizeof *state); /* reserved too (common.h) */
    int64_t seen;
    consumed(l, &state->epoch, &seen);
    state->position = local_of_seen(l, seen);
    return REEL_OK;
}

int reel_loader_restore(reel_loader *l, const reel_loader_state *state, reel_error *err)
{
    if (!l || !state) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: NULL argument");
    if (state->epoch < 0 || state->position < 0 || state->position > l->plan.per_rank)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: state (%lld, %lld) outside epochs x [0, %lld]",
                               (long long)state->epoch, (long long)state->position, (long long)l->plan.per_rank);
    const int64_t seen = seen_of_local(l, state->position);
    if (seen < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: position %lld is not at a batch of this topology; use a checkpoint "
                               "(reel_loader_get_checkpoint)",
                               (long long)state->position);
    reel__loader_stop_threads(l);
    set_position(l, state->epoch, seen);
    return reel__loader_start_threads(l, err);
}

int reel_loader_get_checkpoint(const reel_loader *l, reel_loader_checkpoint *cp)
{
    if (!l || !cp) return REEL_E_INVALID_ARG;
    memset(cp, 0, sizeof *cp);
    cp->version = REEL_CHECKPOINT_VERSION;
    consumed(l, &cp->epoch, &cp->samples_seen);
    cp->seed = l->s.seed;
    cp->canonical_ranks = l->plan.order.canon_ranks;
    cp->canonical_batch = l->plan.order.canon_batch;
    cp->shuffle = l->s.shuffle ? 1 : 0;
    cp->shuffle_window = l->s.shuffle_window;
    cp->num_samples = l->plan.order.n;
    cp->dataset_hash = l->dataset_hash;
    cp->world_size = l->s.world_size;
    cp->batch_size = l->s.batch_size;
    cp->num_workers = l->s.num_workers;
    return REEL_OK;
}

/* Why a checkpoint does not fit this loader (REEL_OK: it does). */
static int checkpoint_check(const reel_loader *l, const reel_loader_checkpoint *cp, reel_error *err)
{
    if (cp->version < 1 || cp->version > REEL_CHECKPOINT_VERSION)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: checkpoint version %d is not one this reel reads (1..%d): it was written "
                               "by a newer reel, or is not a checkpoint",
                               (int)cp->version, REEL_CHECKPOINT_VERSION);
    if (cp->num_samples != l->plan.order.n || cp->dataset_hash != l->dataset_hash)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: checkpoint is for another dataset (%lld samples, hash %016llx; this loader "
                               "has %lld, %016llx)",
                               (long long)cp->num_samples, (unsigned long long)cp->dataset_hash,
                               (long long)l->plan.order.n, (unsigned long long)l->dataset_hash);
    if (cp->seed != l->s.seed)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: checkpoint is for seed %llu, this loader has %llu",
                               (unsigned long long)cp->seed, (unsigned long long)l->s.seed);
    if ((cp->shuffle != 0) != (l->s.shuffle != 0) || cp->shuffle_window != l->s.shuffle_window)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: checkpoint is for shuffle=%d, shuffle_window=%lld; this loader has %d, %lld",
                               (int)cp->shuffle, (long long)cp->shuffle_window, l->s.shuffle ? 1 : 0,
                               (long long)l->s.shuffle_window);
    if (cp->epoch < 0 || (l->s.epochs > 0 && cp->epoch > l->s.epochs) || cp->samples_seen < 0 ||
        cp->samples_seen > cp->num_samples)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: checkpoint at epoch %lld, samples_seen %lld is outside epochs [0, %lld) x "
                               "[0, %lld]",
                               (long long)cp->epoch, (long long)cp->samples_seen, (long long)l->s.epochs,
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
    int st = checkpoint_check(l, cp, err);
    if (st != REEL_OK) return st;
    reel__loader_stop_threads(l);
    reel__order_set_canonical(&l->plan.order, cp->canonical_ranks, cp->canonical_batch, NULL);
    l->s.canonical_ranks = cp->canonical_ranks;
    l->s.canonical_batch = cp->canonical_batch;
    set_position(l, cp->epoch, cp->samples_seen);
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

int reel_loader_get_order_settings(const reel_loader *l, reel_order_settings *out)
{
    if (!l || !out) return REEL_E_INVALID_ARG;
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

/* ------------------------------------------------------------- metrics */

int reel_loader_get_metrics(const reel_loader *cl, reel_loader_metrics *m)
{
    reel_loader *l = (reel_loader *)cl; /* its locks and counters change; the loader does not */
    if (!l || !m) return REEL_E_INVALID_ARG;
    memset(m, 0, sizeof *m);
    int64_t now = reel__clock_ns();
    pthread_mutex_lock(&l->ring.mu);
    int64_t end = l->t_end ? l->t_end : now;
    int64_t start = l->t_start;
    pthread_mutex_unlock(&l->ring.mu);
    m->seconds = (double)(end - start) / 1e9;
    m->frames = atomic_load(&l->frames);
    m->clips = atomic_load(&l->clips);
    m->batches = atomic_load(&l->batches);
    m->frames_per_second = m->seconds > 0 ? (double)m->frames / m->seconds : 0;
    m->clips_per_second = m->seconds > 0 ? (double)m->clips / m->seconds : 0;
    m->successes = atomic_load(&l->successes);
    m->failures = atomic_load(&l->failures);
    m->attempts = m->successes + m->failures; /* cancelled attempts count as neither */
    m->replacements = atomic_load(&l->replacements);
    m->coverage = m->attempts > 0 ? (double)m->successes / (double)m->attempts : 1.0;
    m->frames_decoded = atomic_load(&l->frames_decoded);
    m->frames_returned = atomic_load(&l->frames_returned);
    m->amplification = m->frames_returned > 0 ? (double)m->frames_decoded / (double)m->frames_returned : 0;
    reel__rss(&m->rss_bytes, &m->peak_rss_bytes);
    m->ring_bytes = (int64_t)l->ring.bytes_total;
    m->ring_memory = reel__ring_memory(&l->ring);
    m->data_time_s = (double)atomic_load(&l->data_ns) / 1e9;
    m->model_time_s = (double)atomic_load(&l->model_ns) / 1e9;
    double best = -1;
    int best_i = REEL_STAGE_DECODE;
    for (int i = 0; i < REEL_STAGE_COUNT; i++) {
        stage *sg = &l->st[i];
        reel_stage_metrics *sm = &m->stages[i];
        sm->name = sg->name;
        sm->threads = sg->threads;
        sm->busy_seconds = (double)atomic_load(&sg->busy_ns) / 1e9;
        sm->busy_fraction = m->seconds > 0 && sg->threads > 0 ? sm->busy_seconds / (m->seconds * sg->threads) : 0;
        if (sm->busy_fraction > 1) sm->busy_fraction = 1;
        sm->items = atomic_load(&sg->items);
        reel__queue_depth(&sg->q, &sm->queue_depth, &sm->queue_depth_avg);
        sm->queue_capacity = (int64_t)sg->q.capacity;
        if (sm->busy_fraction > best) {
            best = sm->busy_fraction;
            best_i = i;
        }
    }
    pthread_mutex_lock(&l->remote_mu);
    m->remote = l->remote;
    pthread_mutex_unlock(&l->remote_mu);
    m->request_p50_s = reel_remote_stats_get_quantile(&m->remote, 0.5);
    m->request_p99_s = reel_remote_stats_get_quantile(&m->remote, 0.99);
    m->bytes_in_flight_peak = reel_remote_pool_get_peak_bytes(l->remote_settings.pool);
    /* The consumer is the bottleneck when it rarely waits for data. */
    double total = m->data_time_s + m->model_time_s;
    if (total > 0 && m->data_time_s < 0.1 * total)
        m->bottleneck = "consumer";
    else if (best_i == REEL_STAGE_OPEN && m->remote.request_seconds > 0.5 * m->stages[REEL_STAGE_OPEN].busy_seconds)
        m->bottleneck = "network"; /* stage 1 spends most of its time waiting on requests */
    else
        m->bottleneck = m->stages[best_i].name;
    return REEL_OK;
}

int reel_loader_get_metrics_json(const reel_loader *cl, char **json, reel_error *err)
{
    reel_loader *l = (reel_loader *)cl; /* its locks and counters change; the loader does not */
    if (!l || !json) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: NULL argument");
    *json = NULL;
    reel_loader_metrics m;
    reel_loader_get_metrics(l, &m);
    reel_buf b;
    reel__buf_init(&b);
    reel__metrics_json(&b, &m, &l->failures_log);
    *json = reel__buf_take(&b);
    if (!*json) return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for the metrics");
    return REEL_OK;
}

int reel_loader_write_trace(reel_loader *l, const char *path, reel_error *err)
{
    if (!l) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: NULL");
    return reel__trace_write(&l->trace, path, err);
}

int64_t reel_loader_get_failures_by_cause(const reel_loader *cl, int status)
{
    reel_loader *l = (reel_loader *)cl; /* its locks and counters change; the loader does not */
    return l ? reel__failures_by_cause(&l->failures_log, status) : 0;
}

int64_t reel_loader_get_num_failures(const reel_loader *cl)
{
    reel_loader *l = (reel_loader *)cl; /* its locks and counters change; the loader does not */
    int64_t kept = 0;
    if (l) reel__failures_count(&l->failures_log, &kept, NULL);
    return kept;
}

int reel_loader_get_raised_failure(const reel_loader *l, reel_failure *out, reel_error *err)
{
    if (!l || !out) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: NULL argument");
    if (!l->has_raised) return reel__error_set(err, REEL_E_NO_DATA, "loader: the last call raised no sample's failure");
    *out = l->raised;
    return REEL_OK;
}

int reel_loader_get_failure(const reel_loader *cl, int64_t i, reel_failure *out, reel_error *err)
{
    reel_loader *l = (reel_loader *)cl; /* its locks and counters change; the loader does not */
    if (!l || !out) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: NULL argument");
    if (reel__failures_get(&l->failures_log, i, out) != REEL_OK)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "loader: failure %lld does not exist", (long long)i);
    return REEL_OK;
}
