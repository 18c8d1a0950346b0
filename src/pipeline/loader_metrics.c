/* loader_metrics.c: the loader's metrics (counters, stages, bottleneck,
 * remote requests), as a struct and as JSON, the trace and the failure
 * records. */
#define _POSIX_C_SOURCE 200809L
#include "pipeline/loader_internal.h"
#include "core/error.h"
#include "core/clock.h"

#include <stdlib.h>
#include <string.h>

int reel_loader_get_metrics(const reel_loader *cl, reel_loader_metrics *m, reel_error *err)
{
    reel_loader *l = (reel_loader *)cl; /* its locks and counters change; the loader does not */
    if (!l || !m) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_loader_get_metrics: NULL argument");
    memset(m, 0, sizeof *m);
    int64_t now = reel__clock_ns();
    pthread_mutex_lock(&l->ring.mu);
    int64_t end = l->t_end ? l->t_end : now;
    int64_t start = l->t_start;
    m->ring_bytes = (int64_t)l->ring.bytes_total; /* variable batches: changes as samples come */
    m->ring_memory = reel__ring_memory(&l->ring); /* and so does what its blocks are */
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
    reel__loader_gpu_metrics(l, m);
    m->gop_split_samples = atomic_load(&l->gop_split_samples);
    m->frames_returned = atomic_load(&l->frames_returned);
    m->audio_samples = atomic_load(&l->audio_samples);
    m->audio_decode_seconds = (double)atomic_load(&l->audio_ns) / 1e9;
    m->audio_corrupt_packets = atomic_load(&l->audio_corrupt_packets);
    m->amplification = m->frames_returned > 0 ? (double)m->frames_decoded / (double)m->frames_returned : 0;
    reel__rss(&m->rss_bytes, &m->peak_rss_bytes);
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
    reel_remote_stats_get_quantile(&m->remote, 0.5, &m->request_p50_s, NULL); /* q in range: cannot fail */
    reel_remote_stats_get_quantile(&m->remote, 0.99, &m->request_p99_s, NULL);
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
    reel_loader_get_metrics(l, &m, NULL);
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

int reel_loader_get_failures_by_cause(const reel_loader *cl, int status, int64_t *count, reel_error *err)
{
    reel_loader *l = (reel_loader *)cl; /* its locks and counters change; the loader does not */
    if (!l || !count)
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_loader_get_failures_by_cause: NULL argument");
    if (status < REEL_E_LAST || status >= REEL_OK)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "loader: failures_by_cause: status %d is not a failure (%d..-1)", status, REEL_E_LAST);
    *count = reel__failures_by_cause(&l->failures_log, status);
    return REEL_OK;
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
