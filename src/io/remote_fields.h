/* io/remote_fields.h: the field lists of reel_remote_settings and
 * reel_remote_stats, written once as X-macros: X(name, type, member). The
 * public tables (reel_remote_*_fields) and the loader's metrics table
 * (src/pipeline/fields.c, as "remote.<name>") expand them. */
#ifndef REEL_IO_REMOTE_FIELDS_H
#define REEL_IO_REMOTE_FIELDS_H

#include "reel/io.h"

/* The settings a caller sets by name (pointers to structs, e.g. headers and
 * pool, are not settable by name). */
#define REEL__REMOTE_SETTINGS_FIELDS(X)                      \
    X("request_timeout", REEL_FIELD_DOUBLE, request_timeout) \
    X("connect_timeout", REEL_FIELD_DOUBLE, connect_timeout) \
    X("max_retries", REEL_FIELD_INT, max_retries)            \
    X("retry_budget", REEL_FIELD_DOUBLE, retry_budget)       \
    X("readahead_min", REEL_FIELD_SIZE, readahead_min)       \
    X("readahead_max", REEL_FIELD_SIZE, readahead_max)       \
    X("whole_object_max", REEL_FIELD_SIZE, whole_object_max) \
    X("verify_tls", REEL_FIELD_INT, verify_tls)              \
    X("ca_bundle", REEL_FIELD_STRING, ca_bundle)             \
    X("bearer_token", REEL_FIELD_STRING, bearer_token)       \
    X("max_bytes_in_flight", REEL_FIELD_SIZE, max_bytes_in_flight)

/* The counters (the latency histogram is summed up by quantiles instead). */
#define REEL__REMOTE_STATS_FIELDS(X)                                 \
    X("requests", REEL_FIELD_INT64, requests)                        \
    X("retries", REEL_FIELD_INT64, retries)                          \
    X("failures", REEL_FIELD_INT64, failures)                        \
    X("bytes_fetched", REEL_FIELD_INT64, bytes_fetched)              \
    X("request_seconds", REEL_FIELD_DOUBLE, request_seconds)         \
    X("object_bytes", REEL_FIELD_INT64, object_bytes)                \
    X("connections", REEL_FIELD_INT64, connections)                  \
    X("budget_waits", REEL_FIELD_INT64, budget_waits)                \
    X("budget_skips", REEL_FIELD_INT64, budget_skips)                \
    X("budget_wait_seconds", REEL_FIELD_DOUBLE, budget_wait_seconds) \
    X("retries_by_cause", REEL_FIELD_BY_CAUSE, retries_by_cause)     \
    X("failures_by_cause", REEL_FIELD_BY_CAUSE, failures_by_cause)

#endif
