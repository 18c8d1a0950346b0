/* loader_stages.c: the loader's stage workers (stage 1 opens a sample
 * through its source and samples its frames, stage 2 decodes them through
 * the source into the batch slot, stage 3 collates), the error policy
 * (skip/replace/raise, failure records) and the time-limit watchdog. */
#define _POSIX_C_SOURCE 200809L
#include "pipeline/loader_internal.h"
#include "core/error.h"
#include "core/clock.h"
#include "pipeline/dataset_internal.h"
#include "pipeline/geometry.h"
#include "pipeline/rng.h"
#include "pipeline/sampler_internal.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* -------------------------------------------------------- error policy */

/* Replacement for the sample the plan chose (`requested`) after `attempt`
 * failures: a function of (seed, epoch, sample, attempt), so a run resumed on
 * any topology replaces the same way. */
static int64_t pick_replacement(const reel_loader *l, int64_t epoch, int64_t requested, int attempt, int64_t failed)
{
    int64_t n = (int64_t)l->ds->n; /* the dataset, even when the epoch is a list of samples */
    if (n <= 1) return 0;
    reel_rng_key k = { l->s.seed, (uint64_t)epoch, (uint64_t)requested, REEL_RNG_REPLACE, (uint32_t)attempt };
    int64_t r = (int64_t)reel__rng_below(&k, 0, (uint64_t)n);
    if (r == failed) r = (r + 1) % n;
    return r;
}

/* A slot is done (success or final failure). The last slot hands the batch
 * to the collate stage. */
void reel__loader_slot_finish(reel_loader *l, reel_slot *s)
{
    reel_batchbuf *bb = s->bb;
    if (atomic_fetch_sub_explicit(&bb->pending, 1, memory_order_acq_rel) == 1)
        reel__queue_push_force(&l->st[REEL_STAGE_COLLATE].q, bb);
}

void reel__loader_slot_close(reel_loader *l, reel_slot *s)
{
    if (s->handle) l->src.ops->close(l->src.ctx, s->handle);
    s->handle = NULL;
    /* what its remote objects cost, failed opens included */
    reel__loader_add_remote(l, &s->tally);
    memset(&s->tally, 0, sizeof s->tally);
}

/* Records a failed attempt and applies the error policy. */
static void slot_failed(reel_loader *l, reel_slot *s, int status, const reel_error *e)
{
    reel__loader_slot_close(l, s);
    if (status == REEL_E_CANCELLED || stopping(l)) {
        s->status = REEL_E_CANCELLED;
        reel__loader_slot_finish(l, s);
        return;
    }
    const char *path = sample_name(l, s->sample);
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
        s->sample = pick_replacement(l, s->bb->epoch, s->requested, s->attempt, s->sample);
        pthread_mutex_lock(&s->mu);
        s->work_ns = 0;
        pthread_mutex_unlock(&s->mu);
        atomic_fetch_add(&l->replacements, 1);
        if (reel__queue_push_force(&l->st[REEL_STAGE_OPEN].q, s) == 1) return;
        s->status = REEL_E_CANCELLED;
        reel__loader_slot_finish(l, s);
        return;
    }
    s->status = status;
    s->err = *e;
    reel__loader_slot_finish(l, s);
}

static int over_limit(const reel_loader *l, const reel_slot *s, int64_t extra_ns)
{
    return l->s.sample_time_limit > 0 && (double)(s->work_ns + extra_ns) > l->s.sample_time_limit * 1e9;
}

static int timeout_error(const reel_loader *l, const reel_slot *s, reel_error *e)
{
    return reel__error_set(e, REEL_E_TIMEOUT, "%s: over the per-sample time limit of %g s", sample_name(l, s->sample),
                           l->s.sample_time_limit);
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
void reel__loader_name_thread(const char *stage_name, int id)
{
#ifdef __linux__
    char name[32]; /* the kernel keeps the first 15 characters */
    if (id >= 0)
        snprintf(name, sizeof name, "reel-%s-%d", stage_name, id);
    else
        snprintf(name, sizeof name, "reel-%s", stage_name);
    name[15] = '\0';
    prctl(PR_SET_NAME, name, 0, 0, 0);
#else
    (void)stage_name;
    (void)id;
#endif
}

/* ------------------------------------------------- the stage-worker loop */

/* What a stage does to a slot (timed, traced, watched by the watchdog), and
 * what follows from its status unless the watchdog abandoned the slot. */
typedef int (*stage_work_fn)(reel_loader *l, worker *w, reel_slot *s, void *state, int64_t t0, reel_error *e);
typedef void (*stage_done_fn)(reel_loader *l, reel_slot *s, int st, reel_error *e);

/* The loop of stages 1 and 2: take slots until the queue closes; a slot
 * taken while stopping is cancelled, and one taken by a worker whose
 * set-up failed (init_st) fails with that reason. */
static void stage_loop(worker *w, stage *sg, int init_st, const reel_error *init_err, stage_work_fn work,
                       stage_done_fn done, void *state)
{
    reel_loader *l = w->l;
    void *item;
    while (reel__queue_pop(&sg->q, &item)) {
        reel_slot *s = item;
        reel_batchbuf *bb = s->bb;
        if (stopping(l)) {
            slot_failed(l, s, REEL_E_CANCELLED, NULL);
            continue;
        }
        if (init_st != REEL_OK) {
            slot_failed(l, s, init_st, init_err);
            continue;
        }
        int64_t t0 = reel__clock_ns();
        work_begin(s, t0);
        const char *name = sample_name(l, s->sample);
        int64_t sample = s->sample;
        reel_error e;
        reel_error_clear(&e);
        int st = work(l, w, s, state, t0, &e);
        int64_t t1 = reel__clock_ns();
        int abandoned = work_end(s, t1);
        atomic_fetch_add(&sg->busy_ns, t1 - t0);
        atomic_fetch_add(&sg->items, 1);
        reel__trace_add(&l->trace, w->track, abandoned ? sg->abandoned_label : sg->name, name, t0, t1, sample);
        if (abandoned) {
            /* the watchdog finished it as a timeout: only let go */
            reel__loader_slot_close(l, s);
        } else {
            done(l, s, st, &e);
        }
        work_release(l, bb);
    }
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
    o->decoder = &l->s.decoder;
    o->interrupt = sample_interrupt;
    o->interrupt_opaque = s;
    o->tally = &s->tally;
    o->audio = l->s.audio.enabled ? &l->audio : NULL;
    o->device = l->cuda;
}

/* Stage 1: the source opens the sample, the sampler picks its frames, and
 * the source fetches what decoding them needs. */
static int open_sample(reel_loader *l, worker *w, reel_slot *s, reel_error *e)
{
    reel_source_open o;
    source_options(l, s, &o);
    reel_source_info info;
    memset(&info, 0, sizeof info);
    int st = l->src.ops->open(l->src.ctx, w->tls, sample_entry(l, s->sample), &o, &s->handle, &info, e);
    if (st != REEL_OK) return st;
    info.video.name = sample_name(l, s->sample);
    reel_rng_key key = { l->s.seed, (uint64_t)s->bb->epoch, (uint64_t)s->sample, REEL_RNG_SAMPLER,
                         (uint32_t)s->attempt };
    if (l->shapes_vary)
        st = reel__loader_vary_sample(l, s, &info, &key, e);
    else if (info.presampled)
        st = reel__loader_take_all(&info, s->indices, slot_frames(l, s), e);
    else
        st = reel__sampler_run(&l->s.sampler, &info.video, &key, s->indices, e);
    if (st != REEL_OK) return st;
    s->tb_num = info.video.time_base_num;
    s->tb_den = info.video.time_base_den;
    s->rotation = info.rotation;
    if (!l->shapes_vary) { /* the display size (variable shapes: set by their sizing) */
        const int turned = l->s.transform.pixels.apply_rotation && (info.rotation == 90 || info.rotation == 270);
        s->display_width = turned ? info.height : info.width;
        s->display_height = turned ? info.width : info.height;
    }
    if (l->s.audio.enabled) { /* each clip's window, from its frames' entries */
        st = reel__loader_audio_windows(l, s, &info, e);
        if (st != REEL_OK) return st;
    }
    if (l->src.ops->prepare) {
        reel_source_stats ss = { 0 };
        st = l->src.ops->prepare(l->src.ctx, w->tls, s->handle, s->indices, slot_frames(l, s), &ss, e);
        atomic_fetch_add(&l->bytes_read, ss.bytes_read);
        reel__loader_add_remote(l, &ss.remote);
    }
    return st;
}

/* Per-thread source state for a stage worker; on failure every sample the
 * worker takes fails with the reason (as the converter's does). */
static int worker_source_init(reel_loader *l, worker *w, reel_error *e)
{
    if (!l->src.ops->thread_init) return REEL_OK;
    reel_source_open o;
    memset(&o, 0, sizeof o);
    o.decoder = &l->s.decoder;
    o.device = w->cuda; /* a GPU loader's decode worker's device; NULL elsewhere */
    return l->src.ops->thread_init(l->src.ctx, &o, &w->tls, e);
}

static void worker_source_free(reel_loader *l, worker *w)
{
    if (l->src.ops->thread_free && w->tls) l->src.ops->thread_free(l->src.ctx, w->tls);
    w->tls = NULL;
}

/* Stage 1's outcome: on to stage 2, or the error policy. */
static void open_done(reel_loader *l, reel_slot *s, int st, reel_error *e)
{
    if (st == REEL_OK && over_limit(l, s, 0)) st = timeout_error(l, s, e);
    if (st != REEL_OK)
        slot_failed(l, s, st, e);
    else if (reel__queue_push(&l->st[REEL_STAGE_DECODE].q, s) != 1)
        slot_failed(l, s, REEL_E_CANCELLED, NULL);
}

static int open_work(reel_loader *l, worker *w, reel_slot *s, void *state, int64_t t0, reel_error *e)
{
    (void)state;
    (void)t0;
    return open_sample(l, w, s, e);
}

void *reel__loader_open_main(void *arg)
{
    worker *w = arg;
    reel_loader *l = w->l;
    stage *sg = &l->st[REEL_STAGE_OPEN];
    reel__loader_name_thread(sg->name, w->id);
    reel_error terr;
    int tst = worker_source_init(l, w, &terr);
    stage_loop(w, sg, tst, &terr, open_work, open_done, NULL);
    worker_source_free(l, w);
    return NULL;
}

/* ------------------------------------------------- stage 2: decode+convert */

typedef struct visit_ctx {
    reel_loader *l;
    reel_slot *s;
    reel_converter *conv;
    int64_t t_decode; /* when this decode began */
    int64_t visited;
    int last_clip, last_w, last_h; /* cached geometry */
    size_t n;                      /* frames requested */
    reel_clip_transform ct;        /* the slot's clip transform */
    reel_transform t;
    reel_error err;
    /* on a GPU over host pixels: the worker's staging of the sample's rows
     * (row k: its clip k), uploaded after the decode; NULL: the batch itself */
    uint8_t *host;
    size_t host_cap;
} visit_ctx;

static int visit_locked(visit_ctx *c, const reel_frame *frame, size_t pos);

/* c->t for clip `clip` of pictures of fw x fh (display size), cached. */
static int clip_geometry(visit_ctx *c, int clip, int fw, int fh)
{
    if (clip == c->last_clip && fw == c->last_w && fh == c->last_h) return REEL_OK;
    reel_loader *l = c->l;
    reel_slot *s = c->s;
    reel_rng_key key = { l->s.seed, (uint64_t)s->bb->epoch, (uint64_t)s->sample, REEL_RNG_CROP, (uint32_t)s->attempt };
    int st = reel__geometry_frame(&c->ct, fw, fh, &key, clip, &c->t, &c->err);
    c->last_clip = st == REEL_OK ? clip : -1;
    c->last_w = fw;
    c->last_h = fh;
    return st;
}

/* The source asks which part of a w x h picture position `pos` needs: the
 * crop its clip's geometry takes (the resize reads only inside it). */
static int window(void *opaque, size_t pos, int w, int h, int win[6])
{
    visit_ctx *c = opaque;
    reel_loader *l = c->l;
    if (pos >= c->n) return 0;
    if (l->s.transform.pixels.apply_rotation && c->s->rotation) return 0;
    if (clip_geometry(c, l->shapes_vary ? 0 : (int)(pos / (size_t)l->frames_per_clip), w, h) != REEL_OK ||
        c->t.crop_w <= 0)
        return 0;
    win[0] = c->t.crop_x;
    win[1] = c->t.crop_y;
    win[2] = c->t.crop_w;
    win[3] = c->t.crop_h;
    win[4] = c->t.width > 0 ? c->t.width : c->t.crop_w;
    win[5] = c->t.height > 0 ? c->t.height : c->t.crop_h;
    return 1;
}

static int visit(void *opaque, const reel_frame *frame, size_t pos)
{
    visit_ctx *c = opaque;
    reel_loader *l = c->l;
    reel_slot *s = c->s;
    if (stopping(l)) return reel__error_set(&c->err, REEL_E_CANCELLED, "%s: cancelled", sample_name(l, s->sample));
    if (over_limit(l, s, reel__clock_ns() - c->t_decode)) return timeout_error(l, s, &c->err);
    pthread_mutex_lock(&s->mu); /* the watchdog cannot abandon the slot mid-write */
    int st = s->abandoned ? reel__error_set(&c->err, REEL_E_CANCELLED, "%s: abandoned", sample_name(l, s->sample))
                          : visit_locked(c, frame, pos);
    pthread_mutex_unlock(&s->mu);
    return st;
}

static int visit_locked(visit_ctx *c, const reel_frame *frame, size_t pos)
{
    reel_loader *l = c->l;
    reel_slot *s = c->s;
    reel_batchbuf *bb = s->bb;
    const int T = l->shapes_vary ? s->num_frames : l->frames_per_clip;
    int st;
    if (pos >= c->n)
        return reel__error_set(&c->err, REEL_E_INTERNAL, "%s: request position %zu out of range",
                               sample_name(l, s->sample), pos);
    if (s->visited[pos])
        return reel__error_set(&c->err, REEL_E_INTERNAL, "%s: request position %zu delivered twice",
                               sample_name(l, s->sample), pos);
    int clip = (int)(pos / (size_t)T), t = (int)(pos % (size_t)T);
    int64_t idx = reel_frame_get_index(frame);
    if (idx != s->indices[pos])
        return reel__error_set(&c->err, REEL_E_INTERNAL, "%s: decoder returned frame %lld for frame %lld",
                               sample_name(l, s->sample), (long long)idx, (long long)s->indices[pos]);
    int fw = 0, fh = 0;
    reel_frame_get_size(frame, &fw, &fh, NULL);
    if (l->s.transform.pixels.apply_rotation && (s->rotation == 90 || s->rotation == 270)) {
        int tmp = fw;
        fw = fh;
        fh = tmp;
    }
    st = clip_geometry(c, clip, fw, fh);
    if (st != REEL_OK) return st;
    int64_t row = (int64_t)s->index * l->clips_per_sample + clip;
    int64_t off, sc, sy, sx;
    /* fixed shapes: the clip's row of the batch (or of the staging, row k
     * for clip k); variable: the slot's own buffer */
    uint8_t *base = c->host ? c->host : l->shapes_vary ? s->data : bb->data;
    size_t cap = c->host ? c->host_cap : l->shapes_vary ? s->data_cap : bb->bytes_cap;
    if (l->shapes_vary)
        reel__layout_frame(l->s.transform.layout, T, s->height, s->width, l->channels, 0, t, &off, &sc, &sy, &sx);
    else
        reel__layout_frame(l->s.transform.layout, T, l->clip_height, l->clip_width, l->channels, c->host ? clip : row,
                           t, &off, &sc, &sy, &sx);
    c->t.stride_c = sc;
    c->t.stride_y = sy;
    c->t.stride_x = sx;
    size_t boff = (size_t)off * l->element_bytes;
    st = reel_converter_run(c->conv, frame, &c->t, base + boff, cap - boff, &c->err);
    if (st != REEL_OK) return st;
    s->pts[pos] = reel_frame_get_pts(frame);
    reel_clip_info *ci = &bb->rows[row];
    if (t == 0 || ci->crop_w == 0) reel__geometry_clip_info(&c->t, fw, fh, ci);
    s->visited[pos] = 1;
    c->visited++;
    return 0;
}

/* Stage 2: the source decodes the sampled frames into the batch slot
 * through the visitor; the sample's source state is closed after. */
static int decode_work(reel_loader *l, worker *w, reel_slot *s, void *state, int64_t t0, reel_error *e)
{
    const size_t n = slot_frames(l, s);
    visit_ctx c;
    memset(&c, 0, sizeof c);
    c.l = l;
    c.s = s;
    c.n = n;
    reel__loader_slot_transform(l, s, &c.ct);
    c.conv = state;
    c.t_decode = t0;
    c.last_clip = -1;
    for (int k = 0; k < l->clips_per_sample; k++) s->bb->rows[(int64_t)s->index * l->clips_per_sample + k].crop_w = 0;
    memset(s->visited, 0, n);
    reel_source_stats stats;
    memset(&stats, 0, sizeof stats);
    atomic_fetch_add(&l->decoding, 1);
    const int contexts = l->shapes_vary ? reel__loader_vary_contexts(l, s) : 1;
    int st;
    if (l->cuda && l->src.ops->decode_dense) { /* on a GPU: the source writes the slot's rows in device memory */
        /* (variable: the sample's own device buffer, written in one go) */
        st = l->shapes_vary ? reel__loader_vary_decode_split(l, w, s, 1, &stats, e)
                            : reel__loader_gpu_decode(l, w, s, &stats, e);
        c.visited = st == REEL_OK ? (int64_t)n : 0;
        if (st == REEL_OK && over_limit(l, s, reel__clock_ns() - t0)) st = timeout_error(l, s, e);
    } else if (contexts >= 2) {
        st = reel__loader_vary_decode_split(l, w, s, contexts, &stats, e);
        c.visited = st == REEL_OK ? (int64_t)n : 0;
        if (st == REEL_OK && over_limit(l, s, reel__clock_ns() - t0)) st = timeout_error(l, s, e);
    } else {
        /* on a GPU, a source of host pixels: converted as on the CPU into
         * the worker's staging, then uploaded into the slot's rows */
        const size_t rows =
            !l->cuda ? 0
            : l->shapes_vary
                ? (size_t)s->num_frames * (size_t)l->channels * (size_t)s->width * (size_t)s->height * l->element_bytes
                : (size_t)l->clips_per_sample * (size_t)s->bb->batch.strides[0] * l->element_bytes;
        st = l->cuda ? reel__loader_gpu_staging(l, w, rows, &c.host, e) : REEL_OK;
        c.host_cap = rows;
        if (st == REEL_OK) {
            st = l->src.ops->decode(l->src.ctx, w->tls, s->handle, s->indices, n, visit, window, &c, &stats, e);
            if (st != REEL_OK && c.err.status != REEL_OK) *e = c.err; /* our visitor's reason wins */
        }
        if (st == REEL_OK && c.host && c.visited == (int64_t)n) {
            st = reel__loader_gpu_upload(l, w, s, c.host, rows, e);
            if (st == REEL_OK) stats.frames_uploaded += (int64_t)n;
        }
    }
    atomic_fetch_sub(&l->decoding, 1);
    if (st == REEL_OK && c.visited != (int64_t)n)
        st = reel__error_set(e, REEL_E_INTERNAL, "%s: %lld of %zu requested frames were delivered",
                             sample_name(l, s->sample), (long long)c.visited, n);
    if (st == REEL_OK && l->s.audio.enabled) {
        st = reel__loader_audio_decode(l, w, s, e);
        if (st == REEL_OK && over_limit(l, s, reel__clock_ns() - t0)) st = timeout_error(l, s, e);
    }
    if (st == REEL_OK && l->src.ops->source_indices) /* frame i is source frame i on every source */
        st = l->src.ops->source_indices(l->src.ctx, s->handle, s->indices, n, e);
    reel__loader_slot_close(l, s);
    atomic_fetch_add(&l->frames_decoded, stats.frames_decoded);
    atomic_fetch_add(&l->frames_returned, stats.frames_returned);
    atomic_fetch_add(&l->frames_nvdec, stats.frames_nvdec);
    atomic_fetch_add(&l->frames_uploaded, stats.frames_uploaded);
    return st;
}

/* Stage 2's outcome: a loaded sample, or the error policy. */
static void decode_done(reel_loader *l, reel_slot *s, int st, reel_error *e)
{
    if (st != REEL_OK) {
        slot_failed(l, s, st, e);
        return;
    }
    atomic_fetch_add(&l->successes, 1);
    s->status = REEL_OK;
    reel__loader_slot_finish(l, s);
}

void *reel__loader_decode_main(void *arg)
{
    worker *w = arg;
    reel_loader *l = w->l;
    stage *sg = &l->st[REEL_STAGE_DECODE];
    reel__loader_name_thread(sg->name, w->id);
    reel_converter *conv = NULL;
    reel_error cerr;
    int conv_st = reel_converter_create(&conv, &cerr);
    if (conv_st == REEL_OK) conv_st = worker_source_init(l, w, &cerr);
    stage_loop(w, sg, conv_st, &cerr, decode_work, decode_done, conv);
    reel_converter_destroy(&conv);
    reel__loader_gpu_worker_free(w);
    reel__loader_gpu_staging_free(w);
    worker_source_free(l, w);
    return NULL;
}

/* ------------------------------------------------------ stage 3: collate */

static void collate_frames(reel_loader *l, reel_batchbuf *bb)
{
    if (l->shapes_vary) {
        reel__loader_collate_variable(l, bb);
        return;
    }
    const int K = l->clips_per_sample;
    const size_t row_bytes = (size_t)bb->batch.strides[0] * l->element_bytes;
    int64_t out = 0;
    bb->status = REEL_OK;
    bb->err_sample = bb->err_position = -1;
    int64_t failed = 0;
    int moved_err = 0; /* on a GPU: a row's copy failed */
    for (int64_t j = 0; j < bb->nsamples; j++) {
        reel_slot *s = &bb->slots[j];
        if (s->status != REEL_OK) {
            failed++;
            reel__batchbuf_note_failure(bb, s);
            continue;
        }
        const char *path = sample_name(l, s->sample); /* a URL redacted: the clip shows it */
        int64_t label = reel__dataset_label(l->ds, (size_t)s->sample);
        for (int k = 0; k < K; k++) {
            int64_t src = j * K + k;
            if (out != src && l->cuda) {
                reel_error ce;
                if (reel__loader_gpu_move_row(l, bb->data, out, src, row_bytes, &ce) != REEL_OK && !moved_err) {
                    bb->err = ce;
                    moved_err = REEL_E_CUDA;
                }
            } else if (out != src) {
                memmove((uint8_t *)bb->data + (size_t)out * row_bytes, (uint8_t *)bb->data + (size_t)src * row_bytes,
                        row_bytes);
            }
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
            ci->frame_indices = s->indices + (size_t)k * l->frames_per_clip;
            ci->pts = s->pts + (size_t)k * l->frames_per_clip;
            ci->time_base_num = s->tb_num;
            ci->time_base_den = s->tb_den;
            ci->data = (uint8_t *)bb->data + (size_t)out * row_bytes;
            ci->bytes = row_bytes;
            ci->num_frames = l->frames_per_clip;
            ci->width = l->clip_width;
            ci->height = l->clip_height;
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
    b->samples_seen = bb->samples_seen;
    bb->stale = moved_err != 0; /* never a batch with a stale row: raised whatever the policy */
    if (moved_err) {
        bb->status = moved_err;
        bb->err_sample = -1;
    }
}

/* The clips, then their audio (a failure to lay it out fails the batch, as
 * a failure to pad does). */
static void collate(reel_loader *l, reel_batchbuf *bb)
{
    collate_frames(l, bb);
    if (l->s.audio.enabled && bb->status != REEL_E_CANCELLED && reel__loader_audio_collate(l, bb) != REEL_OK)
        bb->status = REEL_E_NOMEM;
}

void *reel__loader_collate_main(void *arg)
{
    worker *w = arg;
    reel_loader *l = w->l;
    stage *sg = &l->st[REEL_STAGE_COLLATE];
    reel__loader_name_thread(sg->name, w->id);
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
void *reel__loader_watchdog_main(void *arg)
{
    reel_loader *l = arg;
    reel__loader_name_thread("watchdog", -1);
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
                const char *path = sample_name(l, s->sample);
                reel__error_set(&s->err, REEL_E_TIMEOUT,
                                "%s: over the per-sample time limit of %g s (abandoned while decoding)", path,
                                l->s.sample_time_limit);
                s->status = REEL_E_TIMEOUT;
                atomic_fetch_add(&l->failures, 1);
                reel__failures_add(&l->failures_log, path, REEL_E_TIMEOUT, s->err.message, s->bb->epoch, s->position,
                                   s->sample);
                reel__loader_slot_finish(l, s);
            }
        pthread_mutex_lock(&l->wd_mu);
    }
    pthread_mutex_unlock(&l->wd_mu);
    return NULL;
}
