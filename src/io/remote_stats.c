/* remote_stats.c: the public face of remote input that is not a transfer:
 * reel_remote_settings' defaults, and reel_remote_stats: adding, deltas,
 * latency quantiles, the names of failure causes. */
#include "io/remote.h"
#include "core/error.h"

#include <math.h>
#include <string.h>

void reel_remote_default_settings(reel_remote_settings *s)
{
    memset(s, 0, sizeof *s);
    s->request_timeout = 30.0;
    s->connect_timeout = 10.0;
    s->max_retries = 5;
    s->retry_budget = 60.0;
    s->readahead_min = 256 << 10;
    s->readahead_max = 8 << 20;
    s->whole_object_max = 16 << 20;
    s->verify_tls = 1;
    s->max_bytes_in_flight = (size_t)256 << 20;
}

/* The latency bucket of a request of `ns` nanoseconds (see REEL_LATENCY_BUCKETS). */
int reel__remote_latency_bucket(int64_t ns)
{
    double us = (double)ns / 1e3;
    int b = us <= 1 ? 0 : (int)(4.0 * log2(us));
    return b < 0 ? 0 : b >= REEL_LATENCY_BUCKETS ? REEL_LATENCY_BUCKETS - 1 : b;
}

/* The middle of latency bucket i, in seconds. */
static double bucket_seconds(double i)
{
    return pow(2.0, (i + 0.5) / 4.0) / 1e6;
}

int reel_remote_stats_get_quantile(const reel_remote_stats *s, double q, double *seconds, reel_error *err)
{
    if (!s || !seconds)
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_remote_stats_get_quantile: NULL argument");
    if (!(q >= 0 && q <= 1))
        return reel__error_set(err, REEL_E_INVALID_ARG, "remote stats: quantile %g is not in 0..1", q);
    *seconds = 0;
    if (s->requests <= 0) return REEL_OK;
    int64_t total = 0;
    for (int i = 0; i < REEL_LATENCY_BUCKETS; i++) total += s->latency[i];
    if (total <= 0) return REEL_OK;
    double want = q <= 0 ? 1 : q * (double)total;
    int64_t seen = 0;
    *seconds = bucket_seconds(REEL_LATENCY_BUCKETS - 1);
    for (int i = 0; i < REEL_LATENCY_BUCKETS; i++) {
        seen += s->latency[i];
        if ((double)seen >= want) {
            *seconds = bucket_seconds(i);
            break;
        }
    }
    return REEL_OK;
}

/* a += k * b, field by field: the one list of the counters (add: k = 1;
 * a delta: after, then before with k = -1). */
static void stats_scaled_add(reel_remote_stats *a, const reel_remote_stats *b, int k)
{
    a->requests += k * b->requests;
    a->retries += k * b->retries;
    a->failures += k * b->failures;
    a->bytes_fetched += k * b->bytes_fetched;
    a->request_seconds += k * b->request_seconds;
    a->connections += k * b->connections;
    a->object_bytes += k * b->object_bytes;
    for (int i = 0; i < REEL_REMOTE_CAUSE_COUNT; i++) {
        a->retries_by_cause[i] += k * b->retries_by_cause[i];
        a->failures_by_cause[i] += k * b->failures_by_cause[i];
    }
    a->budget_waits += k * b->budget_waits;
    a->budget_skips += k * b->budget_skips;
    a->budget_wait_seconds += k * b->budget_wait_seconds;
    for (int i = 0; i < REEL_LATENCY_BUCKETS; i++) a->latency[i] += k * b->latency[i];
}

void reel_remote_stats_add(reel_remote_stats *a, const reel_remote_stats *b)
{
    if (a && b) stats_scaled_add(a, b, 1);
}

void reel__remote_stats_delta(reel_remote_stats *acc, const reel_remote_stats *after, const reel_remote_stats *before)
{
    stats_scaled_add(acc, after, 1);
    stats_scaled_add(acc, before, -1);
}

const char *reel_remote_cause_name(reel_remote_cause c)
{
    static const char *const names[REEL_REMOTE_CAUSE_COUNT] = { "connection", "timeout", "throttled", "server",
                                                                "short_body", "client",  "tls" };
    return (unsigned)c < REEL_REMOTE_CAUSE_COUNT ? names[c] : "unknown";
}
