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
    memset(out, 0, sizeof *out); /* reserved too (common.h) */
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

/* One field of `base` as "key":value, from its reel_field entry. */
static void json_field(reel_buf *b, const reel_field *f, const void *base, const char *key, int comma)
{
    const char *p = (const char *)base + f->offset;
    reel__buf_printf(b, "%s\"%s\":", comma ? "," : "", key);
    switch (f->type) {
    case REEL_FIELD_INT: reel__buf_printf(b, "%d", *(const int *)p); break;
    case REEL_FIELD_INT64: reel__buf_printf(b, "%lld", (long long)*(const int64_t *)p); break;
    case REEL_FIELD_UINT64: reel__buf_printf(b, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case REEL_FIELD_SIZE: reel__buf_printf(b, "%zu", *(const size_t *)p); break;
    case REEL_FIELD_DOUBLE: reel__buf_json_double(b, *(const double *)p); break;
    case REEL_FIELD_FLOAT: reel__buf_json_double(b, (double)*(const float *)p); break;
    case REEL_FIELD_FLOAT3:
        for (int i = 0; i < 3; i++) {
            reel__buf_puts(b, i ? "," : "[");
            reel__buf_json_double(b, (double)((const float *)p)[i]);
        }
        reel__buf_puts(b, "]");
        break;
    case REEL_FIELD_STRING: {
        const char *str = *(const char *const *)p;
        reel__buf_json_string(b, str ? str : "");
        break;
    }
    case REEL_FIELD_BY_CAUSE:
        reel__buf_puts(b, "{");
        for (int c = 0; c < REEL_REMOTE_CAUSE_COUNT; c++)
            kv_i(b, reel_remote_cause_name((reel_remote_cause)c), ((const int64_t *)p)[c], c > 0);
        reel__buf_puts(b, "}");
        break;
    }
}

/* The fields of a table; names "group.key" become nested objects (a
 * table keeps each group's entries together). */
static void json_fields(reel_buf *b, const reel_field *t, size_t n, const void *base, int comma)
{
    const char *group = NULL;
    size_t glen = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = t[i].name, *dot = strchr(name, '.');
        size_t len = dot ? (size_t)(dot - name) : 0;
        if (group && (len != glen || strncmp(group, name, len) != 0)) {
            reel__buf_puts(b, "}");
            group = NULL;
        }
        if (dot && !group) {
            reel__buf_printf(b, "%s\"%.*s\":{", comma ? "," : "", (int)len, name);
            group = name;
            glen = len;
            comma = 0;
        }
        json_field(b, &t[i], base, dot ? dot + 1 : name, comma);
        comma = 1;
    }
    if (group) reel__buf_puts(b, "}");
}

void reel__metrics_json(reel_buf *b, const reel_loader_metrics *m, reel_failure_log *log)
{
    size_t n = 0;
    const reel_field *t = reel_loader_metrics_get_fields(&n);
    reel__buf_puts(b, "{");
    json_fields(b, t, n, m, 0);
    t = reel_stage_metrics_get_fields(&n);
    reel__buf_puts(b, ",\"stages\":[");
    for (int i = 0; i < REEL_STAGE_COUNT; i++) {
        reel__buf_puts(b, i ? ",{" : "{");
        json_fields(b, t, n, &m->stages[i], 0);
        reel__buf_puts(b, "}");
    }
    /* the failure log: its records (the most recent), counts for the run */
    reel__buf_puts(b, "],\"failures\":[");
    pthread_mutex_lock(&log->mu);
    for (size_t i = 0; i < log->n; i++) {
        const reel_failure_rec *f = &log->v[(log->head + i) % log->max];
        reel__buf_puts(b, i ? ",{\"path\":" : "{\"path\":");
        reel__buf_json_string(b, f->path);
        reel__buf_puts(b, ",\"reason\":");
        reel__buf_json_string(b, f->reason);
        kv_i(b, "status", f->status, 1);
        reel__buf_puts(b, ",\"cause\":");
        reel__buf_json_string(b, reel_strerror(f->status));
        kv_i(b, "epoch", f->epoch, 1);
        kv_i(b, "position", f->position, 1);
        kv_i(b, "sample", f->sample, 1);
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
