/* metrics.h: the loader's failure log (every failed attempt with path and
 * reason) and the metrics JSON export. The log is thread-safe. */
#ifndef REEL_PIPELINE_METRICS_H
#define REEL_PIPELINE_METRICS_H

#include <pthread.h>
#include "reel/pipeline.h"
#include "core/json.h"

typedef struct reel_failure_rec {
    const char *path;   /* the dataset's string */
    char *reason;
    int status;
    int64_t epoch, position, sample;
} reel_failure_rec;

typedef struct reel_failure_log {
    pthread_mutex_t mu;
    reel_failure_rec *v;
    size_t n, alloc, max;  /* records beyond `max` are counted, not kept */
    int64_t total;
} reel_failure_log;

void reel__failures_init(reel_failure_log *log, size_t max);
void reel__failures_free(reel_failure_log *log);
void reel__failures_add(reel_failure_log *log, const char *path, int status, const char *reason,
                        int64_t epoch, int64_t position, int64_t sample);
/* Records kept, and failures seen (kept or not). */
void reel__failures_count(reel_failure_log *log, int64_t *kept, int64_t *total);
int reel__failures_get(reel_failure_log *log, int64_t i, reel_failure *out);

/* Appends the metrics and the failure list as one JSON object. */
void reel__metrics_json(reel_buf *b, const reel_loader_metrics *m, reel_failure_log *log);

#endif
