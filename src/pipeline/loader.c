/* loader.c: the batch loader: a feeder that plans batches into free ring
 * buffers, three stages with their own thread pools and bounded queues
 * (open+index, decode+transform, collate), the consumer side (next/release,
 * ordering, epochs, resume), the error policy and the metrics. */
#define _POSIX_C_SOURCE 200809L
#include "reel/pipeline.h"
#include "core/error.h"
#include "core/clock.h"
#include "pipeline/dataset.h"
#include "pipeline/geometry.h"
#include "pipeline/metrics.h"
#include "pipeline/plan.h"
#include "pipeline/queue.h"
#include "pipeline/ring.h"
#include "pipeline/rng.h"
#include "pipeline/sampler.h"
#include "pipeline/source.h"
#include "pipeline/trace.h"

#include <errno.h>
#include <stdatomic.h>
#if defined(__GLIBC__) || defined(__linux__)
#include <malloc.h>
#endif
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- types */

typedef struct stage {
    const char *name;
    char abandoned_label[32]; /* "<name> (abandoned)" for the trace */
    int threads;
    reel_queue q;            /* input queue */
    pthread_t *tids;
    int started;             /* threads running */
    int track0;              /* first trace track */
    _Atomic int64_t busy_ns;
    _Atomic int64_t items;
} stage;

typedef struct worker {
    struct reel_loader *l;
    int id;                  /* within its stage */
    int track;
    void *tls;               /* the source's per-thread state */
} worker;

struct reel_loader {
    reel_loader_settings s;
    reel_dataset *ds;
    const reel_source_ops *src;  /* videos or store records: chosen once, never branched on */
    void *src_ctx;
    int out_w, out_h, T, K;
    size_t esize;

    reel_plan plan;          /* feeder's */
    reel_ring ring;

    stage st[REEL_STAGE_COUNT];
    worker *workers;         /* all stage workers */
    pthread_t feeder;
    int feeder_started;
    pthread_t watchdog;      /* with a time limit: abandons stuck samples */
    int watchdog_started;
    pthread_mutex_t wd_mu;
    pthread_cond_t wd_cond;
    int feeder_track, consumer_track;
    _Atomic int stop;

    /* feeder position (guarded by ring.mu) */
    int64_t feed_epoch, feed_index, feed_seq;
    int64_t feed_start;      /* start position of feed_epoch */

    /* consumer position (consumer thread only, except restore) */
    int64_t cur_epoch;
    int64_t cur_start;       /* start position of cur_epoch */
    int64_t cur_batches;     /* batches in cur_epoch */
    int64_t delivered;       /* batches handed out in cur_epoch */
    int64_t next_seq;        /* ordered: next sequence number */
    uint8_t *seen;           /* unordered: delivered flags per batch of cur_epoch */
    int64_t prefix;          /* batches [0, prefix) of cur_epoch all delivered */
    int done;                /* all epochs handed out */
    int64_t epoch_ok, epoch_failed; /* samples of cur_epoch loaded / failed (for min_coverage) */
    int64_t restore_epoch, restore_pos;

    /* metrics */
    int64_t t_start, t_end;
    int64_t last_return;     /* consumer: when next() last returned, 0: never */
    _Atomic int64_t data_ns, model_ns;
    _Atomic int64_t frames, clips, batches;
    _Atomic int64_t successes, failures, replacements;
    _Atomic int64_t frames_decoded, frames_returned;
    _Atomic int64_t bytes_read;  /* by the source's stage 1 (store records) */
    reel_failure_log failures_log;
    reel_trace trace;
};

/* ------------------------------------------------------------ defaults */

void reel_loader_default_settings(reel_loader_settings *s)
{
    memset(s, 0, sizeof *s);
    s->sampler.kind = REEL_SAMPLE_RANDOM_INDICES;
    s->sampler.clips_per_video = 1;
    s->sampler.frames_per_clip = 8;
    s->sampler.frame_stride = 1;
    s->sampler.seconds_between_frames = 0;
    s->sampler.range_start = 0;
    s->sampler.range_end = 0;
    s->sampler.policy = REEL_CLIP_REPEAT_LAST;

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
    t->resize_mode = REEL_RESIZE_FUSED;
    t->apply_rotation = 1;
    t->dtype = REEL_DTYPE_UINT8;
    t->layout = REEL_BATCH_BTCHW;
    t->scale = 255.0f;
    for (int c = 0; c < 3; c++) { t->mean[c] = 0.0f; t->std[c] = 1.0f; }

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
}

/* ------------------------------------------------------------- helpers */

static int stopping(const reel_loader *l)
{
    return atomic_load_explicit(&((reel_loader *)l)->stop, memory_order_acquire);
}

static int64_t batches_in_epoch(const reel_loader *l, int64_t epoch)
{
    return reel__plan_batches(&l->plan, epoch == l->restore_epoch ? l->restore_pos : 0);
}

static int epoch_in_range(const reel_loader *l, int64_t epoch)
{
    return l->s.epochs <= 0 || epoch < l->s.epochs;
}

static const char *sample_path(const reel_loader *l, int64_t sample)
{
    return l->ds->items[sample].path;
}

/* Replacement for the sample at `position` after `attempt` failures. */
static int64_t pick_replacement(const reel_loader *l, int64_t epoch, int64_t position, int attempt,
                                int64_t failed)
{
    int64_t n = l->plan.n;
    if (n <= 1) return 0;
    reel_rng_key k = { l->s.seed, (uint64_t)epoch, (uint64_t)position, REEL_RNG_REPLACE, (uint32_t)attempt };
    int64_t r = (int64_t)reel__rng_below(&k, 0, (uint64_t)n);
    if (r == failed) r = (r + 1) % n;
    return r;
}

/* A slot is done (success or final failure). The last slot hands the batch
 * to the collate stage. */
static void slot_finish(reel_loader *l, reel_slot *s)
{
    reel_batchbuf *bb = s->bb;
    if (atomic_fetch_sub_explicit(&bb->pending, 1, memory_order_acq_rel) == 1)
        reel__queue_push_force(&l->st[REEL_STAGE_COLLATE].q, bb);
}

/* Records a failed attempt and applies the error policy. */
/* Frees the source's per-sample state. */
static void slot_close(reel_loader *l, reel_slot *s)
{
    if (s->handle) l->src->close(l->src_ctx, s->handle);
    s->handle = NULL;
}

static void slot_failed(reel_loader *l, reel_slot *s, int status, const reel_error *e)
{
    slot_close(l, s);
    if (status == REEL_E_CANCELLED || stopping(l)) {
        s->status = REEL_E_CANCELLED;
        slot_finish(l, s);
        return;
    }
    const char *path = sample_path(l, s->sample);
    reel_error named;
    if (!e || strncmp(e->message, path, strlen(path)) != 0) {
        /* every record reads "<path>: <reason>" */
        reel__error_set(&named, status, "%s: %s", path, e && e->message[0] ? e->message : reel_strerror(status));
        e = &named;
    }
    atomic_fetch_add(&l->failures, 1);
    reel__failures_add(&l->failures_log, path, status, e->message, s->bb->epoch, s->position, s->sample);
    if (l->s.on_error == REEL_ON_ERROR_REPLACE && s->attempt < l->s.max_replacements) {
        s->attempt++;
        s->sample = pick_replacement(l, s->bb->epoch, s->position, s->attempt, s->sample);
        pthread_mutex_lock(&s->mu);
        s->work_ns = 0;
        pthread_mutex_unlock(&s->mu);
        atomic_fetch_add(&l->replacements, 1);
        if (reel__queue_push_force(&l->st[REEL_STAGE_OPEN].q, s) == 1)
            return;
        s->status = REEL_E_CANCELLED;
        slot_finish(l, s);
        return;
    }
    s->status = status;
    s->err = *e;
    slot_finish(l, s);
}

static int over_limit(const reel_loader *l, const reel_slot *s, int64_t extra_ns)
{
    return l->s.sample_time_limit > 0 &&
           (double)(s->work_ns + extra_ns) > l->s.sample_time_limit * 1e9;
}

static int timeout_error(const reel_loader *l, const reel_slot *s, reel_error *e)
{
    return reel__error_set(e, REEL_E_TIMEOUT, "%s: over the per-sample time limit of %g s",
                           sample_path(l, s->sample), l->s.sample_time_limit);
}

/* A worker takes a slot into a stage: the buffer cannot be reused until
 * work_release(), and the watchdog starts watching the clock. */
static void work_begin(reel_slot *s, int64_t now)
{
    atomic_fetch_add(&s->bb->busy, 1);
    pthread_mutex_lock(&s->mu);
    s->t_begin = now;
    pthread_mutex_unlock(&s->mu);
}

/* The stage's work is over. Returns 1 if the watchdog abandoned the slot
 * meanwhile: it was finished as a timeout, and the worker must only close
 * its decoder and let go. */
static int work_end(reel_slot *s, int64_t now)
{
    pthread_mutex_lock(&s->mu);
    int abandoned = s->abandoned;
    s->work_ns += now - s->t_begin;
    s->t_begin = 0;
    pthread_mutex_unlock(&s->mu);
    return abandoned;
}

/* The worker no longer touches anything of the buffer. */
static void work_release(reel_loader *l, reel_batchbuf *bb)
{
    if (atomic_fetch_sub_explicit(&bb->busy, 1, memory_order_acq_rel) == 1)
        reel__ring_wake(&l->ring); /* the feeder may wait for this buffer */
}

/* Names the calling thread ("reel-decode-3") for top, perf and gdb. */
static void name_thread(const char *stage_name, int id)
{
#ifdef __linux__
    char name[32]; /* the kernel keeps the first 15 characters */
    if (id >= 0) snprintf(name, sizeof name, "reel-%s-%d", stage_name, id);
    else snprintf(name, sizeof name, "reel-%s", stage_name);
    name[15] = '\0';
    prctl(PR_SET_NAME, name, 0, 0, 0);
#else
    (void)stage_name;
    (void)id;
#endif
}

/* ---------------------------------------------------------- stage 1: open */

/* The decoder's interrupt callback: shutdown or the watchdog cut the sample
 * short, so the worker returns from a long decode or a blocking read at the
 * next packet instead of finishing work nobody will use. */
static int sample_interrupt(void *opaque)
{
    const reel_slot *s = opaque;
    return atomic_load_explicit((_Atomic int *)s->stop, memory_order_relaxed) ||
           atomic_load_explicit((atomic_int *)&s->cut, memory_order_relaxed);
}

static void source_options(const reel_loader *l, reel_slot *s, reel_source_open *o)
{
    o->decoder_threads = l->s.decoder_threads;
    o->index_mode = l->s.index_mode;
    o->corrupt_policy = l->s.corrupt_policy;
    o->interrupt = sample_interrupt;
    o->interrupt_opaque = s;
}

/* Stage 1: the source opens the sample, the sampler picks its frames, and
 * the source fetches what decoding them needs. */
static int open_sample(reel_loader *l, worker *w, reel_slot *s, reel_error *e)
{
    reel_source_open o;
    source_options(l, s, &o);
    reel_source_info info;
    memset(&info, 0, sizeof info);
    int st = l->src->open(l->src_ctx, w->tls, l->ds, s->sample, &o, &s->handle, &info, e);
    if (st != REEL_OK) return st;
    reel_sampler_input in;
    in.table = info.table;
    in.n = info.n;
    in.tb_num = info.tb_num;
    in.tb_den = info.tb_den;
    in.avg_fps = info.avg_fps;
    in.seg_start = info.seg_start;
    in.seg_end = info.seg_end;
    reel_rng_key key = { l->s.seed, (uint64_t)s->bb->epoch, (uint64_t)s->sample, REEL_RNG_SAMPLER,
                         (uint32_t)s->attempt };
    st = reel__sampler_run(&l->s.sampler, &in, &key, sample_path(l, s->sample), s->indices, e);
    if (st != REEL_OK) return st;
    s->tb_num = info.tb_num;
    s->tb_den = info.tb_den;
    s->rotation = info.rotation;
    if (l->src->prepare) {
        reel_source_stats ss = { 0 };
        st = l->src->prepare(l->src_ctx, w->tls, s->handle, s->indices, (size_t)l->K * (size_t)l->T, &ss, e);
        atomic_fetch_add(&l->bytes_read, ss.bytes_read);
    }
    return st;
}

/* Per-thread source state for a stage worker; on failure every sample the
 * worker takes fails with the reason (as the converter's does). */
static int worker_source_init(reel_loader *l, worker *w, reel_error *e)
{
    if (!l->src->thread_init) return REEL_OK;
    reel_source_open o;
    memset(&o, 0, sizeof o);
    o.decoder_threads = l->s.decoder_threads;
    o.index_mode = l->s.index_mode;
    o.corrupt_policy = l->s.corrupt_policy;
    return l->src->thread_init(l->src_ctx, &o, &w->tls, e);
}

static void worker_source_free(reel_loader *l, worker *w)
{
    if (l->src->thread_free && w->tls) l->src->thread_free(l->src_ctx, w->tls);
    w->tls = NULL;
}

static void *open_main(void *arg)
{
    worker *w = arg;
    reel_loader *l = w->l;
    stage *sg = &l->st[REEL_STAGE_OPEN];
    name_thread(sg->name, w->id);
    reel_error terr;
    int tst = worker_source_init(l, w, &terr);
    void *item;
    while (reel__queue_pop(&sg->q, &item)) {
        reel_slot *s = item;
        reel_batchbuf *bb = s->bb;
        if (stopping(l)) { slot_failed(l, s, REEL_E_CANCELLED, NULL); continue; }
        if (tst != REEL_OK) { slot_failed(l, s, tst, &terr); continue; }
        int64_t t0 = reel__clock_ns();
        work_begin(s, t0);
        const char *path = sample_path(l, s->sample);
        int64_t sample = s->sample;
        reel_error e;
        reel_error_clear(&e);
        int st = open_sample(l, w, s, &e);
        int64_t t1 = reel__clock_ns();
        int abandoned = work_end(s, t1);
        atomic_fetch_add(&sg->busy_ns, t1 - t0);
        atomic_fetch_add(&sg->items, 1);
        reel__trace_add(&l->trace, w->track, abandoned ? sg->abandoned_label : sg->name, path, t0, t1, sample);
        if (abandoned) {
            slot_close(l, s);
            work_release(l, bb);
            continue;
        }
        if (st == REEL_OK && over_limit(l, s, 0)) st = timeout_error(l, s, &e);
        if (st != REEL_OK) slot_failed(l, s, st, &e);
        else if (reel__queue_push(&l->st[REEL_STAGE_DECODE].q, s) != 1)
            slot_failed(l, s, REEL_E_CANCELLED, NULL);
        work_release(l, bb);
    }
    worker_source_free(l, w);
    return NULL;
}

/* ------------------------------------------------- stage 2: decode+convert */

typedef struct visit_ctx {
    reel_loader *l;
    reel_slot *s;
    reel_converter *conv;
    int64_t t_decode;       /* when this decode began */
    int64_t visited;
    int last_clip, last_w, last_h;  /* cached geometry */
    reel_transform t;
    reel_error err;
} visit_ctx;

static int visit_locked(visit_ctx *c, const reel_frame *frame, size_t pos);

static int visit(void *opaque, const reel_frame *frame, size_t pos)
{
    visit_ctx *c = opaque;
    reel_loader *l = c->l;
    reel_slot *s = c->s;
    if (stopping(l))
        return reel__error_set(&c->err, REEL_E_CANCELLED, "%s: cancelled", sample_path(l, s->sample));
    if (over_limit(l, s, reel__clock_ns() - c->t_decode))
        return timeout_error(l, s, &c->err);
    pthread_mutex_lock(&s->mu); /* the watchdog cannot abandon the slot mid-write */
    int st = s->abandoned ? reel__error_set(&c->err, REEL_E_CANCELLED, "%s: abandoned", sample_path(l, s->sample))
                          : visit_locked(c, frame, pos);
    pthread_mutex_unlock(&s->mu);
    return st;
}

static int visit_locked(visit_ctx *c, const reel_frame *frame, size_t pos)
{
    reel_loader *l = c->l;
    reel_slot *s = c->s;
    reel_batchbuf *bb = s->bb;
    const int T = l->T;
    int st;
    if (pos >= (size_t)l->K * (size_t)T)
        return reel__error_set(&c->err, REEL_E_INTERNAL, "%s: request position %zu out of range",
                               sample_path(l, s->sample), pos);
    if (s->visited[pos])
        return reel__error_set(&c->err, REEL_E_INTERNAL, "%s: request position %zu delivered twice",
                               sample_path(l, s->sample), pos);
    int clip = (int)(pos / (size_t)T), t = (int)(pos % (size_t)T);
    int64_t idx = reel_frame_index(frame);
    if (idx != s->indices[pos])
        return reel__error_set(&c->err, REEL_E_INTERNAL, "%s: decoder returned frame %lld for frame %lld",
                               sample_path(l, s->sample), (long long)idx, (long long)s->indices[pos]);
    int fw = 0, fh = 0;
    reel_frame_size(frame, &fw, &fh);
    if (l->s.transform.apply_rotation && (s->rotation == 90 || s->rotation == 270)) {
        int tmp = fw; fw = fh; fh = tmp;
    }
    if (clip != c->last_clip || fw != c->last_w || fh != c->last_h) {
        reel_rng_key key = { l->s.seed, (uint64_t)bb->epoch, (uint64_t)s->sample, REEL_RNG_CROP,
                             (uint32_t)s->attempt };
        st = reel__geometry_frame(&l->s.transform, fw, fh, &key, clip, &c->t, &c->err);
        if (st != REEL_OK) return st;
        c->last_clip = clip;
        c->last_w = fw;
        c->last_h = fh;
    }
    int64_t row = (int64_t)s->index * l->K + clip;
    int64_t off, sc, sy, sx;
    reel__layout_frame(l->s.transform.layout, T, l->out_h, l->out_w, row, t, &off, &sc, &sy, &sx);
    c->t.stride_c = sc;
    c->t.stride_y = sy;
    c->t.stride_x = sx;
    size_t boff = (size_t)off * l->esize;
    st = reel_converter_run(c->conv, frame, &c->t, (uint8_t *)bb->data + boff, bb->bytes_cap - boff, &c->err);
    if (st != REEL_OK) return st;
    s->pts[pos] = reel_frame_pts(frame);
    reel_clip_info *ci = &bb->rows[row];
    if (t == 0 || ci->crop_w == 0) {
        ci->flipped = c->t.flip_horizontal;
        if (c->t.crop_w > 0) {
            ci->crop_x = c->t.crop_x; ci->crop_y = c->t.crop_y;
            ci->crop_w = c->t.crop_w; ci->crop_h = c->t.crop_h;
        } else {
            ci->crop_x = ci->crop_y = 0;
            ci->crop_w = fw; ci->crop_h = fh;
        }
    }
    s->visited[pos] = 1;
    c->visited++;
    return 0;
}

static void *decode_main(void *arg)
{
    worker *w = arg;
    reel_loader *l = w->l;
    stage *sg = &l->st[REEL_STAGE_DECODE];
    name_thread(sg->name, w->id);
    reel_converter *conv = NULL;
    reel_error cerr;
    int conv_st = reel_converter_create(&conv, &cerr);
    if (conv_st == REEL_OK) conv_st = worker_source_init(l, w, &cerr);
    void *item;
    while (reel__queue_pop(&sg->q, &item)) {
        reel_slot *s = item;
        reel_batchbuf *bb = s->bb;
        if (stopping(l)) { slot_failed(l, s, REEL_E_CANCELLED, NULL); continue; }
        if (conv_st != REEL_OK) { slot_failed(l, s, conv_st, &cerr); continue; }
        int64_t t0 = reel__clock_ns();
        work_begin(s, t0);
        const char *path = sample_path(l, s->sample);
        int64_t sample = s->sample;
        const size_t n = (size_t)l->K * (size_t)l->T;
        visit_ctx c;
        memset(&c, 0, sizeof c);
        c.l = l;
        c.s = s;
        c.conv = conv;
        c.t_decode = t0;
        c.last_clip = -1;
        for (int k = 0; k < l->K; k++)
            s->bb->rows[(int64_t)s->index * l->K + k].crop_w = 0;
        memset(s->visited, 0, n);
        reel_source_stats stats;
        memset(&stats, 0, sizeof stats);
        reel_error e;
        reel_error_clear(&e);
        int st = l->src->decode(l->src_ctx, w->tls, s->handle, s->indices, n, visit, &c, &stats, &e);
        if (st != REEL_OK && c.err.status != REEL_OK) e = c.err; /* our visitor's reason wins */
        if (st == REEL_OK && c.visited != (int64_t)n)
            st = reel__error_set(&e, REEL_E_INTERNAL, "%s: %lld of %zu requested frames were delivered",
                                 path, (long long)c.visited, n);
        slot_close(l, s);
        int64_t t1 = reel__clock_ns();
        int abandoned = work_end(s, t1);
        atomic_fetch_add(&sg->busy_ns, t1 - t0);
        atomic_fetch_add(&sg->items, 1);
        atomic_fetch_add(&l->frames_decoded, stats.frames_decoded);
        atomic_fetch_add(&l->frames_returned, stats.frames_returned);
        reel__trace_add(&l->trace, w->track, abandoned ? sg->abandoned_label : sg->name, path, t0, t1, sample);
        if (abandoned) {
            work_release(l, bb);
            continue;
        }
        if (st != REEL_OK) {
            slot_failed(l, s, st, &e);
        } else {
            atomic_fetch_add(&l->successes, 1);
            s->status = REEL_OK;
            slot_finish(l, s);
        }
        work_release(l, bb);
    }
    reel_converter_destroy(&conv);
    worker_source_free(l, w);
    return NULL;
}

/* ------------------------------------------------------ stage 3: collate */

static void collate(reel_loader *l, reel_batchbuf *bb)
{
    const int K = l->K;
    const size_t row_bytes = (size_t)bb->batch.strides[0] * l->esize;
    int64_t out = 0;
    bb->status = REEL_OK;
    int64_t failed = 0;
    for (int64_t j = 0; j < bb->nsamples; j++) {
        reel_slot *s = &bb->slots[j];
        if (s->status != REEL_OK) {
            failed++;
            if (bb->status == REEL_OK && s->status != REEL_E_CANCELLED) {
                bb->status = s->status;
                bb->err = s->err;
            }
            if (s->status == REEL_E_CANCELLED && bb->status == REEL_OK) {
                bb->status = REEL_E_CANCELLED;
                reel__error_set(&bb->err, REEL_E_CANCELLED, "loader: cancelled");
            }
            continue;
        }
        const char *path = sample_path(l, s->sample);
        int64_t label = reel__dataset_label(l->ds, (size_t)s->sample);
        for (int k = 0; k < K; k++) {
            int64_t src = j * K + k;
            if (out != src)
                memmove((uint8_t *)bb->data + (size_t)out * row_bytes,
                        (uint8_t *)bb->data + (size_t)src * row_bytes, row_bytes);
            reel_clip_info *ci = &bb->clips[out];
            *ci = bb->rows[src];
            ci->sample = s->sample;
            ci->requested = s->requested;
            ci->position = s->position;
            ci->path = path;
            ci->label = label;
            ci->clip = k;
            ci->attempt = s->attempt;
            ci->padded = s->padded;
            ci->frame_indices = s->indices + (size_t)k * l->T;
            ci->pts = s->pts + (size_t)k * l->T;
            ci->time_base_num = s->tb_num;
            ci->time_base_den = s->tb_den;
            bb->labels[out] = label;
            out++;
        }
    }
    reel_batch *b = &bb->batch;
    b->shape[0] = out;
    b->num_clips = out;
    b->bytes = (size_t)out * row_bytes;
    b->epoch = bb->epoch;
    b->index = bb->index;
    b->position = bb->position;
    b->num_samples = bb->nsamples;
    b->num_failed = failed;
}

static void *collate_main(void *arg)
{
    worker *w = arg;
    reel_loader *l = w->l;
    stage *sg = &l->st[REEL_STAGE_COLLATE];
    name_thread(sg->name, w->id);
    void *item;
    while (reel__queue_pop(&sg->q, &item)) {
        reel_batchbuf *bb = item;
        int64_t t0 = reel__clock_ns();
        if (!stopping(l)) collate(l, bb);
        int64_t t1 = reel__clock_ns();
        atomic_fetch_add(&sg->busy_ns, t1 - t0);
        atomic_fetch_add(&sg->items, 1);
        reel__trace_add(&l->trace, w->track, "collate", NULL, t0, t1, bb->seq);
        reel__ring_set_ready(&l->ring, bb);
    }
    return NULL;
}

/* -------------------------------------------------------------- watchdog */

/* With a per-sample time limit, a sample whose worker stays inside FFmpeg
 * (a long GOP, a slow read) past the limit is abandoned: recorded as a
 * timeout and finished, so its batch goes on without it. The worker drops
 * the slot when it comes back; the buffer is not reused before that. */
static void *watchdog_main(void *arg)
{
    reel_loader *l = arg;
    name_thread("watchdog", -1);
    const int64_t limit = (int64_t)(l->s.sample_time_limit * 1e9);
    int64_t grace = limit / 4; /* ordinary timeouts are the visitor's to report */
    if (grace < 20000000) grace = 20000000;
    int64_t period = limit / 4;
    if (period < 5000000) period = 5000000;
    if (period > 250000000) period = 250000000;
    pthread_mutex_lock(&l->wd_mu);
    while (!stopping(l)) {
        struct timespec ts;
        reel__deadline_in(&ts, period);
        pthread_cond_timedwait(&l->wd_cond, &l->wd_mu, &ts);
        if (stopping(l)) break;
        pthread_mutex_unlock(&l->wd_mu);
        int64_t now = reel__clock_ns();
        for (int b = 0; b < l->ring.count; b++)
            for (int j = 0; j < l->ring.batch_size; j++) {
                reel_slot *s = &l->ring.bufs[b].slots[j];
                pthread_mutex_lock(&s->mu);
                int late = s->t_begin != 0 && !s->abandoned && s->work_ns + (now - s->t_begin) > limit + grace;
                if (late) {
                    s->abandoned = 1;
                    atomic_store(&s->cut, 1); /* the decoder's interrupt: back from FFmpeg soon */
                }
                pthread_mutex_unlock(&s->mu);
                if (!late) continue;
                /* the worker no longer writes to the slot's results */
                const char *path = sample_path(l, s->sample);
                reel__error_set(&s->err, REEL_E_TIMEOUT,
                                "%s: over the per-sample time limit of %g s (abandoned while decoding)", path,
                                l->s.sample_time_limit);
                s->status = REEL_E_TIMEOUT;
                atomic_fetch_add(&l->failures, 1);
                reel__failures_add(&l->failures_log, path, REEL_E_TIMEOUT, s->err.message, s->bb->epoch,
                                   s->position, s->sample);
                slot_finish(l, s);
            }
        pthread_mutex_lock(&l->wd_mu);
    }
    pthread_mutex_unlock(&l->wd_mu);
    return NULL;
}

/* ---------------------------------------------------------------- feeder */

static void *feeder_main(void *arg)
{
    reel_loader *l = arg;
    reel_ring *r = &l->ring;
    name_thread("feeder", -1);
    for (;;) {
        int64_t tw = reel__clock_ns();
        pthread_mutex_lock(&r->mu);
        reel_batchbuf *bb = NULL;
        for (;;) {
            if (stopping(l)) break;
            /* advance past finished epochs */
            while (epoch_in_range(l, l->feed_epoch) &&
                   l->feed_index >= reel__plan_batches(&l->plan, l->feed_start)) {
                l->feed_epoch++;
                l->feed_index = 0;
                l->feed_start = 0;
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
        int64_t epoch = l->feed_epoch, index = l->feed_index++, start = l->feed_start;
        int64_t seq = l->feed_seq++;
        pthread_mutex_unlock(&r->mu);
        int64_t t0 = reel__clock_ns();
        reel__trace_add(&l->trace, l->feeder_track, "wait for buffer", NULL, tw, t0, -1);

        reel__plan_epoch(&l->plan, epoch);
        int64_t pos, count;
        reel__plan_batch(&l->plan, start, index, &pos, &count);
        bb->seq = seq;
        bb->epoch = epoch;
        bb->index = index;
        bb->position = pos;
        bb->nsamples = count;
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
                slot_finish(l, &bb->slots[j]);
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

static void *(*const stage_main[REEL_STAGE_COUNT])(void *) = { open_main, decode_main, collate_main };

static void stop_threads(reel_loader *l)
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
            slot_close(l, s);
            s->t_begin = 0;
            s->abandoned = 0;
        }
    }
    reel__ring_reset_unheld(&l->ring);
}

static int start_threads(reel_loader *l, reel_error *err)
{
    atomic_store_explicit(&l->stop, 0, memory_order_release);
    for (int i = 0; i < REEL_STAGE_COUNT; i++) reel__queue_reopen(&l->st[i].q);
    int wi = 0;
    for (int i = 0; i < REEL_STAGE_COUNT; i++) {
        stage *sg = &l->st[i];
        for (int k = 0; k < sg->threads; k++, wi++) {
            if (pthread_create(&sg->tids[k], NULL, stage_main[i], &l->workers[wi]) != 0) {
                stop_threads(l);
                return reel__error_set(err, REEL_E_NOMEM, "loader: cannot start a %s thread", sg->name);
            }
            sg->started++;
        }
    }
    if (pthread_create(&l->feeder, NULL, feeder_main, l) != 0) {
        stop_threads(l);
        return reel__error_set(err, REEL_E_NOMEM, "loader: cannot start the feeder thread");
    }
    l->feeder_started = 1;
    if (l->s.sample_time_limit > 0) {
        if (pthread_create(&l->watchdog, NULL, watchdog_main, l) != 0) {
            stop_threads(l);
            return reel__error_set(err, REEL_E_NOMEM, "loader: cannot start the watchdog thread");
        }
        l->watchdog_started = 1;
    }
    return REEL_OK;
}

/* Positions feeder and consumer at (epoch, position). Threads stopped. */
static void set_position(reel_loader *l, int64_t epoch, int64_t position)
{
    if (position < 0) position = 0;
    if (position > l->plan.per_rank) position = l->plan.per_rank;
    l->restore_epoch = epoch;
    l->restore_pos = position;
    l->feed_epoch = epoch;
    l->feed_start = position;
    l->feed_index = 0;
    l->cur_epoch = epoch;
    l->cur_start = position;
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
    if (s->batch_size < 1 || s->batch_size > (1 << 20))
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: batch_size %d not in [1, 2^20]", s->batch_size);
    if (s->on_error < REEL_ON_ERROR_SKIP || s->on_error > REEL_ON_ERROR_RAISE)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: unknown error policy %d", s->on_error);
    if (s->max_replacements < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: max_replacements must be >= 0");
    if (!(s->sample_time_limit >= 0))
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: sample_time_limit must be >= 0");
    if (s->epochs < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: epochs must be >= 0");
    if (s->open_threads < 0 || s->decode_threads < 0 || s->collate_threads < 0 || s->decoder_threads < 0 ||
        s->open_threads > 1024 || s->decode_threads > 1024 || s->collate_threads > 64)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: thread counts must be in [0, 1024]");
    if (s->prefetch_batches < 0 || s->prefetch_batches > 64)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: prefetch_batches must be in [0, 64]");
    if (s->queue_capacity < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: queue_capacity must be >= 0");
    if (s->alignment && (s->alignment & (s->alignment - 1)))
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: alignment %zu is not a power of two", s->alignment);
    if (s->trace_capacity < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: trace_capacity must be >= 0");
    if (s->pin_memory != 0 && s->pin_memory != 1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: pin_memory must be 0 or 1");
    if (!(s->min_coverage >= 0 && s->min_coverage <= 1))
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: min_coverage must be in [0, 1]");
    if (s->failure_log_size < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: failure_log_size must be >= 0");
    return REEL_OK;
}

int reel_loader_create(reel_loader **out, reel_dataset *ds, const reel_loader_settings *settings,
                       reel_error *err)
{
    if (!out) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: out is NULL");
    *out = NULL;
    if (!ds) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: dataset is NULL");
    reel_loader_settings s;
    if (settings) s = *settings;
    else reel_loader_default_settings(&s);
    int st = check_settings(&s, err);
    if (st != REEL_OK) return st;
    int ow, oh;
    st = reel__geometry_check(&s.transform, &ow, &oh, err);
    if (st != REEL_OK) return st;
    if (ds->n == 0) return reel__error_set(err, REEL_E_EMPTY, "loader: the dataset is empty");

    int cores = reel__cpu_count();
    if (s.decode_threads == 0) s.decode_threads = cores;
    if (s.open_threads == 0) s.open_threads = cores / 4 > 1 ? cores / 4 : 1;
    if (s.collate_threads == 0) s.collate_threads = 1;
    if (s.decoder_threads == 0) s.decoder_threads = 1;
    const int auto_prefetch = s.prefetch_batches == 0;
    if (auto_prefetch)
        s.prefetch_batches = 2 + (s.decode_threads + s.batch_size - 1) / s.batch_size;
    if (s.prefetch_batches > 64) s.prefetch_batches = 64;
    if (s.alignment == 0) s.alignment = 64;
    if (s.alignment < sizeof(void *)) s.alignment = sizeof(void *);
    if (s.trace_capacity == 0) s.trace_capacity = 16384;

    reel_loader *l = calloc(1, sizeof *l);
    if (!l) return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory");
    l->s = s;
    l->ds = ds;
    l->src = reel__source_of(ds, &l->src_ctx);
    l->out_w = ow;
    l->out_h = oh;
    l->T = s.sampler.frames_per_clip;
    l->K = s.sampler.clips_per_video;
    l->esize = reel__elem_size(s.transform.dtype);
    reel__failures_init(&l->failures_log, (size_t)s.failure_log_size, s.on_failure, s.on_failure_opaque);
    pthread_mutex_init(&l->wd_mu, NULL);
    pthread_cond_init(&l->wd_cond, NULL);

    st = reel__dataset_freeze(ds, err);
    if (st == REEL_OK)
        st = reel__plan_init(&l->plan, (int64_t)ds->n, s.world_size, s.rank, s.shard_mode, s.batch_size,
                             s.drop_last, s.shuffle, s.seed, err);
    if (st != REEL_OK) goto fail;

    l->seen = calloc((size_t)reel__plan_batches(&l->plan, 0) + 1, 1);
    if (!l->seen) { st = reel__error_set(err, REEL_E_NOMEM, "loader: out of memory"); goto fail; }

    /* A small dataset needs no more buffers, or rows, than it can fill. */
    if (auto_prefetch && s.prefetch_batches > reel__plan_batches(&l->plan, 0) + 1)
        s.prefetch_batches = l->s.prefetch_batches = (int)reel__plan_batches(&l->plan, 0) + 1;
    reel_ring_config rc;
    rc.count = s.prefetch_batches;
    rc.batch_size = l->plan.per_rank < s.batch_size ? (int)l->plan.per_rank : s.batch_size;
    rc.clips_per_video = l->K;
    rc.frames_per_clip = l->T;
    rc.width = ow;
    rc.height = oh;
    rc.layout = s.transform.layout;
    rc.dtype = s.transform.dtype;
    rc.alignment = s.alignment;
    rc.pin_memory = s.pin_memory;
    st = reel__ring_init(&l->ring, &rc, err);
    if (st != REEL_OK) goto fail;

    /* stages */
    const int threads[REEL_STAGE_COUNT] = { s.open_threads, s.decode_threads, s.collate_threads };
    const char *const names[REEL_STAGE_COUNT] = { l->src->stage_names[0], l->src->stage_names[1], "collate" };
    size_t caps[REEL_STAGE_COUNT];
    caps[REEL_STAGE_OPEN] = s.queue_capacity ? (size_t)s.queue_capacity : (size_t)(2 * s.open_threads + 2);
    caps[REEL_STAGE_DECODE] = s.queue_capacity ? (size_t)s.queue_capacity : (size_t)(2 * s.decode_threads);
    caps[REEL_STAGE_COLLATE] = (size_t)s.prefetch_batches;
    int total = 0;
    for (int i = 0; i < REEL_STAGE_COUNT; i++) total += threads[i];
    l->workers = calloc((size_t)total, sizeof *l->workers);
    if (!l->workers) { st = reel__error_set(err, REEL_E_NOMEM, "loader: out of memory"); goto fail; }
    /* trace tracks: feeder, stage threads, consumer */
    l->feeder_track = 0;
    l->consumer_track = total + 1;
    if (reel__trace_init(&l->trace, total + 2, (size_t)s.trace_capacity, s.trace, reel__clock_ns()) != 0) {
        st = reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for the trace");
        goto fail;
    }
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
        if (!sg->tids || reel__queue_init(&sg->q, caps[i]) != 0) {
            st = reel__error_set(err, REEL_E_NOMEM, "loader: out of memory");
            goto fail;
        }
        for (int k = 0; k < threads[i]; k++, wi++) {
            l->workers[wi].l = l;
            l->workers[wi].id = k;
            l->workers[wi].track = wi + 1;
            reel__trace_name(&l->trace, wi + 1, names[i], k);
        }
    }
    set_position(l, 0, 0);
    st = start_threads(l, err);
    if (st != REEL_OK) goto fail;
    *out = l;
    return REEL_OK;

fail:
    reel_loader_destroy(&l);
    return st;
}

void reel_loader_destroy(reel_loader **pl)
{
    if (!pl || !*pl) return;
    reel_loader *l = *pl;
    stop_threads(l);
    for (int i = 0; i < REEL_STAGE_COUNT; i++) {
        reel__queue_destroy(&l->st[i].q);
        free(l->st[i].tids);
    }
    reel__ring_free(&l->ring);
    reel__plan_free(&l->plan);
    reel__trace_free(&l->trace);
    reel__failures_free(&l->failures_log);
    pthread_mutex_destroy(&l->wd_mu);
    pthread_cond_destroy(&l->wd_cond);
    free(l->workers);
    free(l->seen);
    free(l);
    *pl = NULL;
}

/* ----------------------------------------------------------- consumer */

int64_t reel_loader_batches_per_epoch(const reel_loader *l)
{
    return l ? reel__plan_batches(&l->plan, 0) : 0;
}

static void end_epoch(reel_loader *l)
{
    l->cur_epoch++;
    l->cur_start = 0;
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
        return reel__error_set(err, REEL_E_NO_DATA, "loader: no sample of epoch %lld could be loaded (%lld failed); first: %s",
                               (long long)epoch, (long long)failed, first[0] ? first : "(no record)");
    return reel__error_set(err, REEL_E_NO_DATA, "loader: epoch %lld coverage %.1f%% is below min_coverage %.1f%% (%lld of %lld failed); first: %s",
                           (long long)epoch, 100 * coverage, 100 * l->s.min_coverage, (long long)failed,
                           (long long)(ok + failed), first[0] ? first : "(no record)");
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
        bb = l->s.ordered ? reel__ring_find_ready_seq(r, l->next_seq)
                          : reel__ring_find_ready_epoch(r, l->cur_epoch);
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

int reel_loader_get_state(const reel_loader *l, reel_loader_state *state)
{
    if (!l || !state) return REEL_E_INVALID_ARG;
    reel_loader *ml = (reel_loader *)l;
    pthread_mutex_lock(&ml->ring.mu);
    state->epoch = l->cur_epoch;
    int64_t pos, count;
    if (l->prefix >= l->cur_batches) {
        pos = l->plan.per_rank;
    } else {
        reel__plan_batch(&l->plan, l->cur_start, l->prefix, &pos, &count);
    }
    state->position = pos;
    pthread_mutex_unlock(&ml->ring.mu);
    return REEL_OK;
}

int reel_loader_restore(reel_loader *l, const reel_loader_state *state, reel_error *err)
{
    if (!l || !state) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: NULL argument");
    if (state->epoch < 0 || state->position < 0 || state->position > l->plan.per_rank)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: state (%lld, %lld) outside epochs x [0, %lld]",
                               (long long)state->epoch, (long long)state->position, (long long)l->plan.per_rank);
    stop_threads(l);
    set_position(l, state->epoch, state->position);
    return start_threads(l, err);
}

/* ------------------------------------------------------------- metrics */

int reel_loader_get_metrics(reel_loader *l, reel_loader_metrics *m)
{
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
        if (sm->busy_fraction > best) { best = sm->busy_fraction; best_i = i; }
    }
    /* The consumer is the bottleneck when it rarely waits for data. */
    double total = m->data_time_s + m->model_time_s;
    if (total > 0 && m->data_time_s < 0.1 * total) m->bottleneck = "consumer";
    else m->bottleneck = m->stages[best_i].name;
    return REEL_OK;
}

int reel_loader_metrics_json(reel_loader *l, char **json, reel_error *err)
{
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

int64_t reel_loader_failures_by_cause(reel_loader *l, int status)
{
    return l ? reel__failures_by_cause(&l->failures_log, status) : 0;
}

int64_t reel_loader_num_failures(reel_loader *l)
{
    int64_t kept = 0;
    if (l) reel__failures_count(&l->failures_log, &kept, NULL);
    return kept;
}

int reel_loader_failure(reel_loader *l, int64_t i, reel_failure *out, reel_error *err)
{
    if (!l || !out) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: NULL argument");
    if (reel__failures_get(&l->failures_log, i, out) != REEL_OK)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "loader: failure %lld does not exist", (long long)i);
    return REEL_OK;
}
