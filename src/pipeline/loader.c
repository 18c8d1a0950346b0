/* loader.c: the batch loader's public face: settings and their defaults,
 * create/destroy and the consumer side (next/release, ordering, epochs).
 * State, checkpoints and restore are in loader_resume.c, the metrics in
 * loader_metrics.c; the threads that fill the batches in loader_stages.c
 * (stages, error policy, watchdog), loader_vary.c (variable batches) and
 * loader_feed.c (feeder, start and stop); loader_internal.h has the state. */
#define _POSIX_C_SOURCE 200809L
#include "convert/dtype.h"
#include "pipeline/loader_internal.h"
#include "core/error.h"
#include "core/clock.h"
#include "cuda/device.h"
#include "decoder/open.h"
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
    reel_pixel_default_settings(&t->pixels);
    t->layout = REEL_BATCH_BTCHW;

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
    s->alignment = 4096;
    s->trace = 0;
    s->trace_capacity = 16384;
    s->pin_memory = 0;
    s->min_coverage = 0;
    s->failure_log_size = 1000;
    s->on_failure = NULL;
    s->on_failure_opaque = NULL;
    s->shuffle_window = 0;
    /* qwen-vl-utils' budget, ready to switch on; FIXED: the transform's size */
    reel_size_policy_default_settings(&s->size_policy);
    s->size_policy.kind = REEL_SIZE_FIXED;
    s->pad = 0;
    s->ring_bytes = 0;
    s->gop_split = 1;
    s->audio.stream_index = -1; /* the best audio stream, when audio is on */
    s->audio.missing = REEL_AUDIO_MISSING_RAISE;
    /* the decoder's defaults, but where the loader's workers own the cores */
    reel_decoder_default_settings(&s->decoder);
    s->decoder.threads = 1;
    s->decoder.index_mode = REEL_INDEX_READ;
    s->decoder.gop_contexts = 0; /* gop_split splits a sample's runs itself, per call */
}

int reel_loader_settings_is_variable(const reel_loader_settings *s)
{
    if (!s) return 0;
    return s->size_policy.kind == REEL_SIZE_PIXEL_BUDGET || reel__sampler_fixed_count(&s->sampler) < 1;
}

/* ------------------------------------------------------------ create */

static int check_settings(const reel_loader_settings *s, reel_error *err)
{
    int st = reel__sampler_check(&s->sampler, err);
    if (st != REEL_OK) return st;
    st = reel__decoder_settings_check(&s->decoder, "loader", "decoder.", err);
    if (st != REEL_OK) return st;
    if (s->decoder.index_path || s->decoder.interrupt || s->decoder.interrupt_opaque || s->decoder.remote_stats)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: decoder.index_path, .interrupt, .interrupt_opaque and .remote_stats must be "
                               "NULL (the loader sets them per video and sample)");
    const reel_size_policy *sp = &s->size_policy;
    if (sp->kind != REEL_SIZE_FIXED && sp->kind != REEL_SIZE_PIXEL_BUDGET)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: unknown size policy kind %d", sp->kind);
    if (sp->kind == REEL_SIZE_FIXED && (sp->width || sp->height))
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: a fixed size policy takes the transform's size (width and height must be 0)");
    if (sp->kind == REEL_SIZE_PIXEL_BUDGET) {
        if (s->transform.crop != REEL_CROP_NONE)
            return reel__error_set(err, REEL_E_INVALID_ARG,
                                   "loader: the pixel-budget size policy gives each video its own size: it needs "
                                   "transform.crop NONE");
        int w = 0, h = 0; /* the policy's own checks, on a plausible video */
        st = reel_size_policy_apply(sp, 640, 480, 16, s->sampler.frame_factor, &w, &h, err);
        if (st != REEL_OK) return st;
    }
    if (reel_loader_settings_is_variable(s) && s->sampler.clips_per_video != 1)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: samples of their own length or size take one clip per video "
                               "(clips_per_video %d)",
                               s->sampler.clips_per_video);
    st = reel__loader_audio_check(&s->audio, err);
    if (st != REEL_OK) return st;
    if (s->pad != 0 && s->pad != 1) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: pad must be 0 or 1");
    if (s->gop_split != 0 && s->gop_split != 1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: gop_split must be 0 or 1");
    if (s->ring_bytes < 0) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: ring_bytes must be >= 0");
    if (s->batch_size < 1 || s->batch_size > (1 << 20))
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: batch_size %d not in [1, 2^20]", s->batch_size);
    if (s->on_error < REEL_ON_ERROR_SKIP || s->on_error > REEL_ON_ERROR_RAISE)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: unknown error policy %d", s->on_error);
    if (s->max_replacements < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: max_replacements must be >= 0");
    if (!(s->sample_time_limit >= 0))
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: sample_time_limit must be >= 0");
    if (s->epochs < 0) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: epochs must be >= 0");
    if (s->open_threads < 0 || s->decode_threads < 0 || s->collate_threads < 0 || s->open_threads > 1024 ||
        s->decode_threads > 1024 || s->collate_threads > 64)
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
    rc.clips_per_video = l->clips_per_sample;
    rc.frames_per_clip = l->frames_per_clip;
    rc.width = l->clip_width;
    rc.height = l->clip_height;
    rc.layout = s->transform.layout;
    rc.dtype = s->transform.pixels.dtype;
    rc.channels = l->channels;
    rc.alignment = s->alignment;
    rc.pin_memory = s->pin_memory;
    rc.variable = l->shapes_vary;
    rc.budget = s->ring_bytes > 0 ? s->ring_bytes : (int64_t)1 << 30;
    rc.device = l->cuda ? l->device : NULL;
    int st = reel__ring_init(&l->ring, &rc, err);
    for (int i = 0; st == REEL_OK && i < l->ring.count; i++) l->ring.bufs[i].batch.device = l->device;
    return st;
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
    const int sizes_vary = s.size_policy.kind == REEL_SIZE_PIXEL_BUDGET;
    reel_clip_transform checked = s.transform;
    if (sizes_vary) { /* each video's size comes from the policy */
        checked.resize = REEL_RESIZE_EXACT;
        checked.resize_width = checked.resize_height = 1;
    }
    st = reel__geometry_check(&checked, &ow, &oh, err);
    if (st != REEL_OK) return st;
    if (ds->n == 0) return reel__error_set(err, REEL_E_EMPTY, "loader: the dataset is empty");

    reel_loader *l = calloc(1, sizeof *l);
    if (!l) return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory");
    if (s.decoder.remote)
        l->remote_settings = *s.decoder.remote;
    else
        reel_remote_default_settings(&l->remote_settings);
    s.decoder.remote = &l->remote_settings;
    st = reel__source_init(&l->src, ds, &l->remote_settings, err);
    if (st == REEL_OK && l->src.ops->check) st = l->src.ops->check(l->src.ctx, &s, err);
    if (st == REEL_OK && s.audio.enabled && !l->src.ops->audio)
        st = reel__error_set(err, REEL_E_INVALID_ARG, "loader: the %s source gives no audio (audio.enabled)",
                             l->src.ops->kind);
    if (st == REEL_OK) st = reel__loader_gpu_open(&s, &l->src, reel_loader_settings_is_variable(&s), &l->cuda, err);
    if (st != REEL_OK) {
        reel__source_free(&l->src);
        free(l);
        return st;
    }
    if (l->cuda)
        snprintf(l->device, sizeof l->device, "cuda:%d", reel__cuda_index(l->cuda));
    else
        snprintf(l->device, sizeof l->device, "cpu");
    const int auto_prefetch = resolve_settings(&s, &l->src);
    l->s = s;
    l->ds = ds;
    l->clip_width = ow;
    l->clip_height = oh;
    l->sizes_vary = sizes_vary;
    l->shapes_vary = reel_loader_settings_is_variable(&s);
    /* the count sampler rounds its count to the frame factor */
    l->frames_per_clip = l->shapes_vary ? 0 : (int)(reel__sampler_fixed_count(&s.sampler) / s.sampler.clips_per_video);
    l->clips_per_sample = s.sampler.clips_per_video;
    l->element_bytes = reel__dtype_size(s.transform.pixels.dtype);
    reel__loader_audio_settings(&s.audio, s.decoder.corrupt_policy, &l->audio);
    l->channels = reel__color_channels(s.transform.pixels.color);
    reel__failures_init(&l->failures_log, (size_t)s.failure_log_size, s.on_failure, s.on_failure_opaque);
    for (size_t i = 0; i < reel_dataset_get_num_skipped(ds); i++) { /* what the folder scan did not follow */
        const char *note = "";
        reel_dataset_get_skipped(ds, i, &note, NULL); /* i < the count: cannot fail */
        reel__failures_add(&l->failures_log, note, REEL_E_INVALID_ARG, note, -1, -1, -1);
    }
    pthread_mutex_init(&l->wd_mu, NULL);
    pthread_mutex_init(&l->remote_mu, NULL);
    pthread_cond_init(&l->wd_cond, NULL);

    st = init_plan(l, err);
    if (st == REEL_OK) st = init_ring(l, auto_prefetch, err);
    if (st == REEL_OK) st = init_stages(l, err);
    if (st == REEL_OK) st = reel__loader_gpu_workers_open(l, err);
    if (st == REEL_OK) {
        reel__loader_set_position(l, s.first_epoch, 0);
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
    if (l->workers) reel__loader_gpu_workers_close(l); /* after the threads: every sample's decoder is closed */
    reel__cuda_close(&l->cuda);                        /* after the ring and the workers' devices */
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

size_t reel_loader_get_ring_size(const reel_loader *l)
{
    return l ? (size_t)l->ring.count : 0;
}

int64_t reel_loader_get_epoch(const reel_loader *l)
{
    return l ? l->cur_epoch : 0;
}

int64_t reel_loader_get_batches_left(const reel_loader *l)
{
    if (!l || l->done || l->delivered >= l->cur_batches) return 0;
    return l->cur_batches - l->delivered;
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
    /* a failed copy on the GPU left a stale row: raised whatever the policy */
    if (bb->status != REEL_OK && (l->s.on_error == REEL_ON_ERROR_RAISE || bb->stale)) {
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
        int64_t frames = 0;
        for (int64_t i = 0; i < bb->batch.num_clips; i++) frames += bb->clips[i].num_frames;
        atomic_fetch_add(&l->frames, frames);
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
    if (!(timeout_s >= 0)) /* NaN too */
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: timeout %g s must be >= 0", timeout_s);
    return loader_next(l, out, timeout_s, err);
}

int reel_loader_release(reel_loader *l, reel_batch *batch)
{
    if (!l || !batch) return REEL_E_INVALID_ARG;
    return reel__ring_release(&l->ring, batch);
}
