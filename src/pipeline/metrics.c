/* metrics.c: failure records and the JSON form of reel_loader_metrics. */
#define _POSIX_C_SOURCE 200809L
#include "pipeline/metrics.h"

#include <stdlib.h>
#include <string.h>

void reel__failures_init(reel_failure_log *log, size_t max, void (*fn)(void *, const reel_failure *), void *opaque)
{
    memset(log, 0, sizeof *log);
    pthread_mutex_init(&log->mu, NULL);
    for (int i = 0; i < 16; i++) log->firsts[i].epoch = -1;
    log->max = max;
    log->fn = fn;
    log->opaque = opaque;
}

void reel__failures_free(reel_failure_log *log)
{
    for (size_t i = 0; i < log->n; i++) free(log->v[i].reason);
    free(log->v);
    pthread_mutex_destroy(&log->mu);
    memset(log, 0, sizeof *log);
}

static void fill(reel_failure *out, const reel_failure_rec *f)
{
    snprintf(out->path, sizeof out->path, "%s", f->path ? f->path : "");
    snprintf(out->reason, sizeof out->reason, "%s", f->reason ? f->reason : "");
    out->status = f->status;
    out->epoch = f->epoch;
    out->position = f->position;
    out->sample = f->sample;
}

void reel__failures_add(reel_failure_log *log, const char *path, int status, const char *reason, int64_t epoch,
                        int64_t position, int64_t sample)
{
    const char *text = reason && *reason ? reason : reel_strerror(status);
    if (log->fn) {
        /* the caller's callback sees every failure, in the order they happen */
        reel_failure_rec tmp = { path, (char *)text, status, epoch, position, sample };
        reel_failure f;
        fill(&f, &tmp);
        pthread_mutex_lock(&log->mu);
        log->fn(log->opaque, &f);
        pthread_mutex_unlock(&log->mu);
    }
    char *r = log->max ? strdup(text) : NULL;
    pthread_mutex_lock(&log->mu);
    log->total++;
    int cause = status <= 0 && -status < REEL_FAILURE_CAUSES ? -status : REEL_FAILURE_CAUSES - 1;
    log->by_cause[cause]++;
    if (epoch >= 0) {
        __typeof__(log->firsts[0]) *e = &log->firsts[epoch % 16];
        if (e->epoch != epoch) {
            e->epoch = epoch;
            e->count = 0;
            e->text[0] = '\0';
        }
        if (e->count++ < 3) {
            size_t l = strlen(e->text);
            snprintf(e->text + l, sizeof e->text - l, "%s%s", l ? "; " : "", text);
        }
    }
    if (r && !log->v) {
        log->v = calloc(log->max, sizeof *log->v);
        if (!log->v) {
            free(r);
            r = NULL;
        }
    }
    if (r) {
        reel_failure_rec *f;
        if (log->n < log->max) {
            f = &log->v[(log->head + log->n++) % log->max];
        } else { /* full: the oldest goes */
            f = &log->v[log->head];
            free(f->reason);
            log->head = (log->head + 1) % log->max;
        }
        f->path = path;
        f->reason = r;
        f->status = status;
        f->epoch = epoch;
        f->position = position;
        f->sample = sample;
    }
    pthread_mutex_unlock(&log->mu);
}

void reel__failures_count(reel_failure_log *log, int64_t *kept, int64_t *total)
{
    pthread_mutex_lock(&log->mu);
    if (kept) *kept = (int64_t)log->n;
    if (total) *total = log->total;
    pthread_mutex_unlock(&log->mu);
}

int reel__failures_get(reel_failure_log *log, int64_t i, reel_failure *out)
{
    pthread_mutex_lock(&log->mu);
    if (i < 0 || (size_t)i >= log->n) {
        pthread_mutex_unlock(&log->mu);
        return REEL_E_OUT_OF_RANGE;
    }
    fill(out, &log->v[(log->head + (size_t)i) % log->max]);
    pthread_mutex_unlock(&log->mu);
    return REEL_OK;
}

void reel__failures_first(reel_failure_log *log, int64_t epoch, char *out, size_t size)
{
    pthread_mutex_lock(&log->mu);
    const __typeof__(log->firsts[0]) *e = &log->firsts[(epoch >= 0 ? epoch : 0) % 16];
    snprintf(out, size, "%s", e->epoch == epoch ? e->text : "");
    pthread_mutex_unlock(&log->mu);
}

int64_t reel__failures_by_cause(reel_failure_log *log, int status)
{
    int cause = status <= 0 && -status < REEL_FAILURE_CAUSES ? -status : REEL_FAILURE_CAUSES - 1;
    pthread_mutex_lock(&log->mu);
    int64_t v = log->by_cause[cause];
    pthread_mutex_unlock(&log->mu);
    return v;
}

static void kv_i(reel_buf *b, const char *k, int64_t v, int comma)
{
    reel__buf_printf(b, "%s\"%s\":%lld", comma ? "," : "", k, (long long)v);
}

static void kv_d(reel_buf *b, const char *k, double v)
{
    reel__buf_printf(b, ",\"%s\":", k);
    reel__buf_json_double(b, v);
}

void reel__metrics_json(reel_buf *b, const reel_loader_metrics *m, reel_failure_log *log)
{
    reel__buf_puts(b, "{");
    kv_i(b, "frames", m->frames, 0);
    kv_i(b, "clips", m->clips, 1);
    kv_i(b, "batches", m->batches, 1);
    kv_d(b, "seconds", m->seconds);
    kv_d(b, "frames_per_second", m->frames_per_second);
    kv_d(b, "clips_per_second", m->clips_per_second);
    kv_d(b, "coverage", m->coverage);
    kv_i(b, "attempts", m->attempts, 1);
    kv_i(b, "successes", m->successes, 1);
    kv_i(b, "failures", m->failures, 1);
    kv_i(b, "replacements", m->replacements, 1);
    kv_i(b, "frames_decoded", m->frames_decoded, 1);
    kv_i(b, "frames_returned", m->frames_returned, 1);
    kv_d(b, "decode_amplification", m->amplification);
    kv_d(b, "data_time_s", m->data_time_s);
    kv_d(b, "model_time_s", m->model_time_s);
    kv_i(b, "rss_bytes", m->rss_bytes, 1);
    kv_i(b, "peak_rss_bytes", m->peak_rss_bytes, 1);
    kv_i(b, "ring_bytes", m->ring_bytes, 1);
    reel__buf_puts(b, ",\"ring_memory\":");
    reel__buf_json_string(b, m->ring_memory ? m->ring_memory : "plain");
    reel__buf_puts(b, ",\"bottleneck\":");
    reel__buf_json_string(b, m->bottleneck);
    /* remote input: requests, retries, bytes and latency (zeros for local) */
    reel__buf_puts(b, ",\"remote\":{");
    kv_i(b, "requests", m->remote.requests, 0);
    kv_i(b, "retries", m->remote.retries, 1);
    kv_i(b, "failures", m->remote.failures, 1);
    kv_i(b, "bytes_fetched", m->remote.bytes_fetched, 1);
    kv_d(b, "request_seconds", m->remote.request_seconds);
    kv_d(b, "request_p50_s", m->request_p50_s);
    kv_d(b, "request_p99_s", m->request_p99_s);
    kv_i(b, "object_bytes", m->remote.object_bytes, 1);
    kv_i(b, "connections", m->remote.connections, 1);
    kv_i(b, "budget_waits", m->remote.budget_waits, 1);
    kv_i(b, "budget_skips", m->remote.budget_skips, 1);
    kv_d(b, "budget_wait_seconds", m->remote.budget_wait_seconds);
    kv_i(b, "bytes_in_flight_peak", m->bytes_in_flight_peak, 1);
    for (int k = 0; k < 2; k++) {
        const int64_t *v = k ? m->remote.failures_by_cause : m->remote.retries_by_cause;
        reel__buf_puts(b, k ? ",\"failures_by_cause\":{" : ",\"retries_by_cause\":{");
        for (int c = 0; c < REEL_REMOTE_CAUSE_COUNT; c++) kv_i(b, reel_remote_cause_name(c), v[c], c > 0);
        reel__buf_puts(b, "}");
    }
    reel__buf_puts(b, "}");
    reel__buf_puts(b, ",\"stages\":[");
    for (int i = 0; i < REEL_STAGE_COUNT; i++) {
        const reel_stage_metrics *s = &m->stages[i];
        reel__buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        reel__buf_json_string(b, s->name);
        kv_i(b, "threads", s->threads, 1);
        kv_d(b, "busy_fraction", s->busy_fraction);
        kv_d(b, "busy_seconds", s->busy_seconds);
        kv_i(b, "items", s->items, 1);
        kv_i(b, "queue_depth", s->queue_depth, 1);
        kv_d(b, "queue_depth_avg", s->queue_depth_avg);
        kv_i(b, "queue_capacity", s->queue_capacity, 1);
        reel__buf_puts(b, "}");
    }
    reel__buf_puts(b, "],\"failed\":[");
    pthread_mutex_lock(&log->mu);
    for (size_t i = 0; i < log->n; i++) {
        const reel_failure_rec *f = &log->v[(log->head + i) % log->max];
        reel__buf_puts(b, i ? ",{\"path\":" : "{\"path\":");
        reel__buf_json_string(b, f->path);
        reel__buf_puts(b, ",\"reason\":");
        reel__buf_json_string(b, f->reason);
        reel__buf_puts(b, ",\"status\":");
        reel__buf_json_string(b, reel_strerror(f->status));
        kv_i(b, "epoch", f->epoch, 1);
        kv_i(b, "position", f->position, 1);
        reel__buf_puts(b, "}");
    }
    int64_t dropped = log->total - (int64_t)log->n;
    reel__buf_puts(b, "],\"failures_by_cause\":{");
    int first = 1;
    for (int c = 0; c < REEL_FAILURE_CAUSES; c++) {
        if (!log->by_cause[c]) continue;
        reel__buf_puts(b, first ? "" : ",");
        reel__buf_json_string(b, reel_strerror(-c));
        reel__buf_printf(b, ":%lld", (long long)log->by_cause[c]);
        first = 0;
    }
    pthread_mutex_unlock(&log->mu);
    reel__buf_puts(b, "}");
    kv_i(b, "failed_not_listed", dropped, 1);
    reel__buf_puts(b, "}");
}
