/* frames.c: the convenience calls on top of reel_decoder_decode: frames at
 * indices, at timestamps, over a range, into a caller's or a library
 * buffer, converted in request order; GOP-parallel decoding of one call
 * over several decoder contexts of the same input (gop_contexts). */
#include "decoder/decode_plan.h"
#include "decoder/internal.h"
#include "decoder/decoder_for_loader.h"
#include "decoder/open.h"
#include "cuda/device.h"

#ifdef __linux__
#include <malloc.h> /* malloc_trim (glibc) */
#endif
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int reel_decoder_get_index_at_time(const reel_decoder *dec, double seconds, int64_t *index, reel_error *err)
{
    if (!dec || !index)
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_index_at_time: NULL argument");
    const reel_table *t = &dec->table;
    AVRational tb = dec->st->time_base;
    if (!isfinite(seconds))
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: timestamp is not a finite number", dec->name);
    /* seconds -> ticks, tolerant of the rounding in pts * time_base */
    double ticks_d = seconds * (double)tb.den / (double)tb.num;
    int64_t ticks = (int64_t)floor(ticks_d + 1e-6);
    const reel_frame_entry *f = t->frames;
    if (t->n == 0 || ticks < f[0].pts)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: timestamp %.6f s is before the first frame (%.6f s)",
                               dec->name, seconds, t->n ? (double)f[0].pts * av_q2d(tb) : 0.0);
    int64_t lo = 0, hi = t->n; /* last frame with pts <= ticks */
    while (hi - lo > 1) {
        int64_t mid = (lo + hi) / 2;
        if (f[mid].pts <= ticks)
            lo = mid;
        else
            hi = mid;
    }
    if (lo == t->n - 1 && ticks >= f[lo].pts + f[lo].duration)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE,
                               "%s: timestamp %.6f s is at or after the end of the video (%.6f s)", dec->name, seconds,
                               (double)(f[lo].pts + f[lo].duration) * av_q2d(tb));
    *index = lo;
    return REEL_OK;
}

int reel_decoder_get_output_size(const reel_decoder *dec, const reel_transform *t, int *width, int *height,
                                 size_t *frame_bytes, reel_error *err)
{
    reel_transform def;
    if (!dec) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_output_size: decoder is NULL");
    if (!t) {
        reel_transform_default_settings(&def);
        t = &def;
    }
    int w = dec->info.source_width, h = dec->info.source_height;
    if (t->pixels.apply_rotation && (dec->rotation == 90 || dec->rotation == 270)) {
        int x = w;
        w = h;
        h = x;
    }
    int r = reel_transform_get_output_size(t, w, h, width, height, frame_bytes, err);
    if (r != REEL_OK && err) {
        char msg[REEL_ERROR_MSG_SIZE];
        memcpy(msg, err->message, sizeof msg);
        snprintf(err->message, sizeof err->message, "%.255s: %.250s", dec->name, msg);
    }
    return r;
}

typedef struct sink {
    reel_decoder *dec;
    reel_transform t; /* with explicit output size */
    uint8_t *dst;
    size_t frame_bytes;
    size_t frame_step;  /* bytes from one frame's first element to the next's: frame_bytes when dense */
    size_t plane_step;  /* channel-major output (CTHW): bytes between a frame's planes; 0: a frame is one block */
    int sized;          /* the caller asked for an output size */
    int64_t last_index; /* frame converted last, for repeated requests */
    size_t last_pos;
    const size_t *pos_map; /* request position -> output slot (GOP-parallel); NULL: the same */
    uint8_t *const *slots; /* output slot -> its address (reel_decode_near); NULL: dst + slot * frame_step */
    reel_error *err;
} sink;

static uint8_t *sink_slot(const sink *s, size_t pos)
{
    return s->slots ? s->slots[pos] : s->dst + pos * s->frame_step;
}

static int sink_frame(void *opaque, const reel_frame *f, size_t pos)
{
    sink *s = opaque;
    if (s->pos_map) pos = s->pos_map[pos];
    uint8_t *out = sink_slot(s, pos);
    if (s->last_index == f->index && !s->dec->cuda) {
        /* the same frame asked for again: copy the converted bytes */
        const uint8_t *from = sink_slot(s, s->last_pos);
        if (!s->plane_step)
            memcpy(out, from, s->frame_bytes);
        else
            for (int c = 0; c < 3; c++)
                memcpy(out + (size_t)c * s->plane_step, from + (size_t)c * s->plane_step, s->frame_bytes / 3);
        return 0;
    }
    const reel_transform *t = &s->t;
    reel_transform scaled;
    int fw, fh;
    reel_frame_get_size(f, &fw, &fh, NULL);
    if (!s->sized && (fw != s->dec->info.source_width || fh != s->dec->info.source_height)) {
        /* The coded size changed mid-stream and the caller asked for no
         * resize: rescale to the stream's size in one bicubic pass, exactly
         * as the ffmpeg CLI does for such a stream. */
        scaled = s->t;
        scaled.pixels.filter = REEL_FILTER_BICUBIC;
        t = &scaled;
    }
    if (s->dec->cuda) return reel__decoder_gpu_frame(s->dec, f, t, (uint64_t)(uintptr_t)out, s->err);
    int r = reel_converter_run(s->dec->conv, f, t, out, s->frame_bytes, s->err);
    if (r != REEL_OK) return r;
    s->last_index = f->index;
    s->last_pos = pos;
    return 0;
}

/* ---- GOP-parallel decoding ----------------------------------------------
 * The call's decode plan (the same reel__plan_* the decoder runs) gives its
 * keyframe runs in decode order. Up to gop_contexts decoder contexts take
 * them one at a time from a shared cursor, in decode order, until none is
 * left: whoever is free takes the next run, so the contexts finish within
 * about one run of each other whatever the runs cost (their lengths, the
 * frames skipped, the wanted frames converted), which a split fixed in
 * advance cannot promise. Runs never touch (the plan merges those that do),
 * so taking them apart costs no seek the serial plan would not make.
 * Context 0 is `dec` in the calling thread, each other a decoder context of
 * its own (the same path or URL, one codec thread; opened on first use and
 * kept in dec->gop_ctx for later calls) on a thread of its own. Every
 * context's sink writes straight into the caller's output through a map
 * from the run's request positions to the caller's. */

typedef struct par_runs {
    pthread_mutex_t mu;
    size_t next;         /* the next run to hand out */
    int failed;          /* a context failed: hand out no more */
    size_t nr;           /* runs */
    const size_t *start; /* run i's requests: idx/map[start[i] .. start[i+1]) */
    const int64_t *idx;  /* frame indices, run by run */
    const size_t *map;   /* their positions in the caller's list */
    int active;          /* contexts still taking runs */
} par_runs;

typedef struct par_group {
    reel_decoder *dec; /* dec itself for context 0, else one of dec->gop_ctx */
    /* contexts 1..: the slot in dec->gop_ctx, opened by the context's own
     * thread when empty (from open_src with open_settings) */
    reel_decoder **slot;
    const char *open_src;
    const reel_decoder_settings *open_settings;
    int remote;
    int64_t frames; /* the video's frame count: a context that sees another takes no run */
    par_runs *runs;
    sink s;
    reel_decode_stats st;
    reel_error err;
    int status;
} par_group;

static void stats_add(reel_decode_stats *a, const reel_decode_stats *b)
{
    a->frames_requested += b->frames_requested;
    a->frames_returned += b->frames_returned;
    a->frames_decoded += b->frames_decoded;
    a->frames_skipped += b->frames_skipped;
    a->packets_read += b->packets_read;
    a->seeks += b->seeks;
    a->corrupt_packets += b->corrupt_packets;
    a->key_restarts += b->key_restarts;
    a->keys_probed += b->keys_probed;
    a->thread_fallbacks |= b->thread_fallbacks;
}

static void *par_run(void *arg)
{
    par_group *g = arg;
    par_runs *p = g->runs;
    if (g->slot) {
        /* opened here, not in the caller: the contexts open at the same
         * time, and the codec's first buffers come from this thread's
         * malloc arena, where its decoding allocates (and frees) the rest */
        if (!*g->slot) {
            reel_error e;
            reel_error_clear(&e);
            if (reel__decoder_open_as(g->slot, g->open_src, g->remote, g->open_settings, NULL, &e) != REEL_OK) goto out;
        }
        if ((*g->slot)->table.n != g->frames) goto out; /* not the same video (a changed file): kept, never used */
        g->dec = *g->slot;
    }
    g->s.dec = g->dec;
    g->s.err = &g->err;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next;
        int stop = p->failed || i >= p->nr;
        if (!stop) p->next++;
        pthread_mutex_unlock(&p->mu);
        if (stop) break;
        reel_decode_stats st;
        g->s.pos_map = p->map + p->start[i];
        g->status = reel__decoder_decode_cold(g->dec, p->idx + p->start[i], p->start[i + 1] - p->start[i], sink_frame,
                                              &g->s, &st, &g->err);
        stats_add(&g->st, &st);
        if (g->status != REEL_OK) {
            pthread_mutex_lock(&p->mu);
            p->failed = 1;
            pthread_mutex_unlock(&p->mu);
            break;
        }
    }
out:
    pthread_mutex_lock(&p->mu);
    int others = --p->active;
    pthread_mutex_unlock(&p->mu);
    /* No run left for this context while others still decode: its pictures
     * go back now, not when the decoder closes, so that they are not held
     * while the others write the call's last frames (1080p, two contexts:
     * peak RSS 23 MB lower, docs/BENCHMARKS.md). The last context keeps
     * its own (the call is about to end; no cost on its critical path).
     * Failing to release is harmless: they stay. */
    if (others > 0 && g->status == REEL_OK && g->st.frames_decoded > 0 &&
        reel__decoder_release_pictures(g->dec) == REEL_OK) {
#ifdef __GLIBC__
        /* glibc keeps freed pictures in its arenas (its mmap threshold rises
         * to a picture's size once one is freed), so the free pages are
         * handed back explicitly. Process-wide but thread-safe: it returns
         * only free memory, of every arena. */
        malloc_trim(0);
#endif
    }
    return NULL;
}

/* The run (index into iv, decode order) whose [s, e] holds decode position d. */
static size_t run_of(const reel__interval *iv, size_t nr, int64_t d)
{
    size_t lo = 0, hi = nr; /* the last run with s <= d */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (iv[mid].s <= d)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int reel__gop_contexts(const reel_decoder *dec)
{
    const reel_decoder_settings *s = &dec->settings;
    /* auto: a file's runs over the cores; a URL's only when asked for, as
     * each other context fetches the object's head and index again and
     * misses what the decoder fetched ahead (reel_decoder_prefetch) */
    int k = s->gop_contexts >= 0 ? s->gop_contexts : dec->remote ? 1 : reel__cpu_count();
    return k > REEL_GOP_CONTEXTS ? REEL_GOP_CONTEXTS : k;
}

static int get_frames_parallel(reel_decoder *dec, const int64_t *indices, size_t n, const sink *proto,
                               reel_decode_stats *stats, int *handled, reel_error *err)
{
    const reel_table *t = &dec->table;
    int k = reel__gop_contexts(dec);
    *handled = 0;
    reel__req *reqs = malloc(n * sizeof *reqs);
    reel__wanted *w = malloc(n * sizeof *w);
    reel__interval *iv = malloc(n * sizeof *iv);
    size_t *start = calloc(n + 2, sizeof *start);
    int64_t *idx = malloc(n * sizeof *idx);
    size_t *map = malloc(n * sizeof *map);
    size_t *runs_of = malloc(n * sizeof *runs_of), *fill = malloc(n * sizeof *fill);
    par_group *g = calloc((size_t)k, sizeof *g);
    par_runs runs = { .nr = 0 };
    int st = REEL_OK;
    if (!reqs || !w || !iv || !start || !idx || !map || !runs_of || !fill || !g)
        goto out; /* not handled: the serial path reports it */
    for (size_t i = 0; i < n; i++) {
        int64_t f = indices[i] < 0 ? indices[i] + t->n : indices[i];
        if (f < 0 || f >= t->n || (t->lost_at > 0 && f >= t->lost_at)) goto out; /* the serial path says why */
        reqs[i].frame = f;
        reqs[i].pos = i;
    }
    size_t nw = reel__plan_requests(reqs, n, w);
    size_t nr = reel__plan_runs(t, dec->key_state, dec->reorder_depth, w, nw, 0, iv);
    if (nr < 2) goto out;
    int used = nr < (size_t)k ? (int)nr : k;
    if (used < 2) goto out;
    /* the requests run by run: counts, offsets, then the lists (fill[] is
     * each run's next free slot) */
    for (size_t j = 0; j < nw; j++) {
        runs_of[j] = run_of(iv, nr, t->frames[w[j].frame].decode_order);
        start[runs_of[j] + 1] += w[j].count;
    }
    for (size_t i = 0; i < nr; i++) {
        start[i + 1] += start[i];
        fill[i] = start[i];
    }
    for (size_t j = 0; j < nw; j++)
        for (size_t r = w[j].first; r < w[j].first + w[j].count; r++) {
            size_t o = fill[runs_of[j]]++;
            idx[o] = w[j].frame;
            map[o] = reqs[r].pos;
        }
    /* the other contexts: the same input, one codec thread each, opened
     * once (by their threads, in par_run) and kept in dec->gop_ctx; their
     * remote requests go to the same tally as dec's (added when dec closes
     * them). The same object: a URL as given (dec->name is redacted, and a
     * signed URL would not open from it), a file by its path. */
    reel_decoder_settings ss = dec->settings;
    ss.threads = 1;
    ss.gop_contexts = 0; /* off: a context of the call's set starts none of its own */
    if (ss.index_mode == REEL_INDEX_READ_WRITE) ss.index_mode = REEL_INDEX_READ;
    g[0].dec = dec;
    for (int q = 1; q < used; q++) {
        g[q].slot = &dec->gop_ctx[q - 1];
        g[q].open_src = dec->remote ? dec->open_url : dec->name;
        g[q].open_settings = &ss;
        g[q].remote = dec->remote != NULL;
        g[q].frames = t->n;
    }
    if (pthread_mutex_init(&runs.mu, NULL) != 0) goto out;
    runs.nr = nr;
    runs.start = start;
    runs.idx = idx;
    runs.map = map;
    *handled = 1;
    pthread_t th[REEL_GOP_CONTEXTS];
    int started[REEL_GOP_CONTEXTS] = { 0 };
    for (int q = 0; q < used; q++) {
        g[q].s = *proto;
        g[q].runs = &runs;
        reel_error_clear(&g[q].err);
    }
    runs.active = used;
    for (int q = 1; q < used; q++) {
        started[q] = pthread_create(&th[q], NULL, par_run, &g[q]) == 0;
        if (!started[q]) {
            pthread_mutex_lock(&runs.mu);
            runs.active--;
            pthread_mutex_unlock(&runs.mu);
        }
    }
    par_run(&g[0]); /* contexts without a thread take no run: the others take them all */
    for (int q = 1; q < used; q++)
        if (started[q]) pthread_join(th[q], NULL);
    pthread_mutex_destroy(&runs.mu);
    /* the contexts that opened, first (one that failed to open left its
     * slot empty; the next call tries again) */
    int open = 0;
    for (int q = 0; q < REEL_GOP_CONTEXTS - 1; q++)
        if (dec->gop_ctx[q]) dec->gop_ctx[open++] = dec->gop_ctx[q];
    for (int q = open; q < REEL_GOP_CONTEXTS - 1; q++) dec->gop_ctx[q] = NULL;
    dec->gop_open = open;
    reel_decode_stats sum;
    memset(&sum, 0, sizeof sum);
    for (int q = 0; q < used; q++) {
        stats_add(&sum, &g[q].st);
        if (st == REEL_OK && g[q].status != REEL_OK) {
            st = g[q].status;
            if (err) *err = g[q].err;
        }
    }
    sum.amplification = sum.frames_returned ? (double)sum.frames_decoded / (double)sum.frames_returned : 0;
    sum.gop_contexts = used;
    if (stats) *stats = sum;
out:
    free(g);
    free(reqs);
    free(w);
    free(iv);
    free(start);
    free(idx);
    free(map);
    free(runs_of);
    free(fill);
    return st;
}

/* cthw: channel-major over the call (reel__decoder_get_frames_cthw); slots
 * (not with cthw): request i's frame goes to slots[i] (reel_decode_near,
 * whose caller checked each one's room), dst and dst_size unused */
static int get_frames(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t, int cthw, void *dst,
                      size_t dst_size, uint8_t *const *slots, reel_decode_stats *stats, reel_error *err)
{
    sink s;
    memset(&s, 0, sizeof s);
    if (t)
        s.t = *t;
    else
        reel_transform_default_settings(&s.t);
    if (s.t.stride_c || s.t.stride_y || s.t.stride_x)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: get_frames writes dense frames; explicit strides are for reel_converter_run",
                               dec->name);
    int w, h;
    size_t fb;
    int r = reel_decoder_get_output_size(dec, &s.t, &w, &h, &fb, err);
    if (r != REEL_OK) return r;
    if (n && !dst && !slots) return reel__error_set(err, REEL_E_INVALID_ARG, "%s: output buffer is NULL", dec->name);
    if (n && !slots && dst_size / n < fb)
        return reel__error_set(err, REEL_E_BUFFER_TOO_SMALL, "%s: output buffer holds %zu bytes, %zu frames need %zu",
                               dec->name, dst_size, n, n * fb);
    /* pin the output size so frames whose coded size changes mid-stream
     * still fill exactly one slot */
    s.sized = s.t.width > 0 || s.t.height > 0;
    s.t.width = w;
    s.t.height = h;
    s.dec = dec;
    s.dst = dst;
    s.frame_bytes = fb;
    s.frame_step = fb;
    s.slots = slots;
    if (cthw && !slots) {
        if (s.t.layout != REEL_LAYOUT_CHW)
            return reel__error_set(err, REEL_E_INVALID_ARG, "%s: a channel-major output needs layout CHW", dec->name);
        /* frame i of channel c at plane c * n + i: the converter's strided
         * planar path writes each of a frame's planes n planes apart */
        s.frame_step = fb / 3;
        s.plane_step = n * (fb / 3);
        s.t.stride_c = (int64_t)n * w * h;
        s.t.stride_y = w;
        s.t.stride_x = 1;
    }
    s.last_index = -1;
    s.err = err;
    if (dec->cuda) { /* one context: its batches go to the kernel (gpu.c) */
        dec->gpu_sink = 1;
        dec->gpu_nvdec = dec->gpu_uploaded = 0;
        r = reel_decoder_decode(dec, indices, n, sink_frame, &s, stats, err);
        dec->gpu_sink = 0;
        r = reel__decoder_gpu_finish(dec, r, err);
        if (stats) {
            stats->frames_nvdec = dec->gpu_nvdec;
            stats->frames_uploaded = dec->gpu_uploaded;
        }
        return r;
    }
    if (reel__gop_contexts(dec) > 1 && n > 1 && (dec->is_file || dec->remote)) {
        int handled = 0;
        r = get_frames_parallel(dec, indices, n, &s, stats, &handled, err);
        if (handled) return r;
    }
    return reel_decoder_decode(dec, indices, n, sink_frame, &s, stats, err);
}

int reel_decoder_get_frames(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t, void *dst,
                            size_t dst_size, reel_decode_stats *stats, reel_error *err)
{
    if (!dec || (n && !indices))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_frames: NULL argument");
    return get_frames(dec, indices, n, t, 0, dst, dst_size, NULL, stats, err);
}

int reel__decoder_get_frames_cthw(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t,
                                  void *dst, size_t dst_size, reel_decode_stats *stats, reel_error *err)
{
    if (!dec || !t || (n && !indices))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel__decoder_get_frames_cthw: NULL argument");
    return get_frames(dec, indices, n, t, 1, dst, dst_size, NULL, stats, err);
}

int reel__decoder_get_sample(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t, int cthw,
                             int contexts, struct reel__cuda *device, void *dst, size_t dst_size,
                             reel_decode_stats *stats, reel_error *err)
{
    if (!dec || (cthw && !t) || (n && !indices))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel__decoder_get_sample: NULL argument");
    reel__decoder_gpu_lend(dec, device);
    int kept = dec->settings.gop_contexts; /* this call's contexts only */
    dec->settings.gop_contexts = contexts;
    int r = get_frames(dec, indices, n, t, cthw, dst, dst_size, NULL, stats, err);
    dec->settings.gop_contexts = kept;
    return r;
}

int reel__decoder_get_frames_to(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t,
                                int contexts, uint8_t *const *slots, reel_decode_stats *stats, reel_error *err)
{
    if (!dec || !slots || (n && !indices))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel__decoder_get_frames_to: NULL argument");
    int kept = dec->settings.gop_contexts; /* this call's contexts only */
    dec->settings.gop_contexts = contexts;
    int r = get_frames(dec, indices, n, t, 0, NULL, 0, slots, stats, err);
    dec->settings.gop_contexts = kept;
    return r;
}

int reel_decoder_get_frames_alloc(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t,
                                  void **out, size_t *out_size, reel_decode_stats *stats, reel_error *err)
{
    if (!dec || !out || (n && !indices))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_frames_alloc: NULL argument");
    *out = NULL;
    if (out_size) *out_size = 0;
    if (dec->cuda)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: a decoder on a GPU writes device memory: reel_decoder_get_frames_device",
                               dec->name);
    size_t fb;
    int r = reel_decoder_get_output_size(dec, t, NULL, NULL, &fb, err);
    if (r != REEL_OK) return r;
    size_t total = fb * (n ? n : 1);
    void *buf = malloc(total);
    if (!buf)
        return reel__error_set(err, REEL_E_NOMEM, "%s: cannot allocate %zu bytes for %zu frames", dec->name, total, n);
    r = get_frames(dec, indices, n, t, 0, buf, total, NULL, stats, err);
    if (r != REEL_OK) {
        free(buf);
        return r;
    }
    *out = buf;
    if (out_size) *out_size = fb * n;
    return REEL_OK;
}

/* A decoder on a GPU: the frames into a device buffer of their own (gpu.c
 * holds the rest of the GPU path). */
int reel_decoder_get_frames_device(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t,
                                   reel_device_buffer **out, reel_decode_stats *stats, reel_error *err)
{
    if (!dec || !out || (n && !indices))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_frames_device: NULL argument");
    *out = NULL;
    if (!dec->cuda)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: the decoder is on the CPU (device \"%s\"): reel_decoder_get_frames_alloc",
                               dec->name, dec->settings.device && *dec->settings.device ? dec->settings.device : "cpu");
    size_t fb;
    int r = reel_decoder_get_output_size(dec, t, NULL, NULL, &fb, err);
    if (r != REEL_OK) return r;
    char device[16];
    snprintf(device, sizeof device, "cuda:%d", reel__cuda_index(dec->cuda));
    reel_device_buffer *b = NULL;
    r = reel_device_buffer_alloc(device, fb * (n ? n : 1), &b, err);
    if (r != REEL_OK) return reel__decoder_gpu_failed(dec, r, err);
    r = reel_decoder_get_frames(dec, indices, n, t, (void *)(uintptr_t)reel_device_buffer_get_address(b), fb * n, stats,
                                err);
    if (r == REEL_OK && (r = reel__device_buffer_record(b, dec->cuda, err)) != REEL_OK)
        r = reel__decoder_gpu_failed(dec, r, err);
    if (r != REEL_OK) {
        reel_device_buffer_free(&b);
        return r;
    }
    *out = b;
    return REEL_OK;
}

int reel_decoder_get_frames_at_times(reel_decoder *dec, const double *seconds, size_t n, const reel_transform *t,
                                     void *dst, size_t dst_size, int64_t *indices_out, reel_decode_stats *stats,
                                     reel_error *err)
{
    if (!dec || (n && !seconds))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_frames_at_times: NULL argument");
    int64_t *idx = indices_out ? indices_out : malloc((n ? n : 1) * sizeof *idx);
    if (!idx) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dec->name);
    int r = REEL_OK;
    for (size_t i = 0; i < n && r == REEL_OK; i++) r = reel_decoder_get_index_at_time(dec, seconds[i], &idx[i], err);
    if (r == REEL_OK) r = get_frames(dec, idx, n, t, 0, dst, dst_size, NULL, stats, err);
    if (idx != indices_out) free(idx);
    return r;
}

int reel_decoder_get_range(reel_decoder *dec, int64_t start, int64_t stop, int64_t step, const reel_transform *t,
                           void *dst, size_t dst_size, size_t *n_out, reel_decode_stats *stats, reel_error *err)
{
    if (!dec) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_range: decoder is NULL");
    if (n_out) *n_out = 0;
    if (step <= 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: range step must be positive (got %lld)", dec->name,
                               (long long)step);
    int64_t nf = dec->table.n;
    if (start < 0) start += nf;
    if (stop < 0) stop += nf;
    if (start < 0) start = 0;
    if (stop > nf) stop = nf;
    if (start >= nf && nf > 0 && stop > start)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: range start %lld out of range (video has %lld frames)",
                               dec->name, (long long)start, (long long)nf);
    size_t n = stop > start ? (size_t)((stop - start + step - 1) / step) : 0;
    int64_t *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dec->name);
    for (size_t i = 0; i < n; i++) idx[i] = start + (int64_t)i * step;
    int r = get_frames(dec, idx, n, t, 0, dst, dst_size, NULL, stats, err);
    free(idx);
    if (r == REEL_OK && n_out) *n_out = n;
    return r;
}
