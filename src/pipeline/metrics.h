/* metrics.h: the loader's failure log (counts per cause for the whole run,
 * the most recent failures with path and reason, and a callback that sees
 * every one) and the metrics JSON export. The log is thread-safe. */
#ifndef REEL_PIPELINE_METRICS_H
#define REEL_PIPELINE_METRICS_H

#include <pthread.h>
#include "reel/pipeline.h"
#include "core/json.h"

typedef struct reel_failure_rec {
    const char *path; /* the dataset's string */
    char *reason;
    int status;
    int64_t epoch, position, sample;
} reel_failure_rec;

enum { REEL_FAILURE_CAUSES = 32 }; /* -status, 0..31 */
_Static_assert(-REEL_E_LAST < REEL_FAILURE_CAUSES, "a failure cause per status");

typedef struct reel_failure_log {
    pthread_mutex_t mu;
    reel_failure_rec *v; /* a ring of the `max` most recent */
    size_t n, head, max; /* kept; index of the oldest; capacity */
    int64_t total;
    int64_t by_cause[REEL_FAILURE_CAUSES];
    void (*fn)(void *opaque, const reel_failure *f); /* every failure, serialised */
    void *opaque;
    /* the first failures of the latest epochs, for the end-of-epoch error
     * (the feeder may run epochs ahead of the consumer) */
    struct {
        int64_t epoch;
        int count;
        char text[400];
    } firsts[16];
} reel_failure_log;

void reel__failures_init(reel_failure_log *log, size_t max, void (*fn)(void *, const reel_failure *), void *opaque);
void reel__failures_free(reel_failure_log *log);
void reel__failures_add(reel_failure_log *log, const char *path, int status, const char *reason, int64_t epoch,
                        int64_t position, int64_t sample);
/* Records kept (the most recent), and failures seen (kept or not). */
void reel__failures_count(reel_failure_log *log, int64_t *kept, int64_t *total);
/* The i-th kept record, oldest first. */
int reel__failures_get(reel_failure_log *log, int64_t i, reel_failure *out);
/* "reason; reason" of the first failures of `epoch` ("" if none is known). */
void reel__failures_first(reel_failure_log *log, int64_t epoch, char *out, size_t size);

/* Failures seen with this status, for the whole run. */
int64_t reel__failures_by_cause(reel_failure_log *log, int status);

/* Appends the metrics and the failure list as one JSON object. */
void reel__metrics_json(reel_buf *b, const reel_loader_metrics *m, reel_failure_log *log);

#endif
