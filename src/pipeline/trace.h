/* trace.h: per-thread event tracks for a Chrome trace (Perfetto,
 * chrome://tracing). Each track is a fixed ring of events (the newest are
 * kept), written only by its own thread; a per-track mutex lets the writer
 * read while threads run. */
#ifndef REEL_PIPELINE_TRACE_H
#define REEL_PIPELINE_TRACE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "reel/common.h"

typedef struct reel_trace_event {
    const char *name;   /* static string */
    const char *detail; /* string that outlives the trace (a dataset path), or NULL */
    int64_t t0, t1;     /* ns, monotonic */
    int64_t arg;        /* a sample or batch number; -1: none */
} reel_trace_event;

typedef struct reel_trace_track {
    char name[32];
    pthread_mutex_t mu;
    reel_trace_event *ev;
    size_t head, count;
    int64_t dropped;
} reel_trace_track;

typedef struct reel_trace {
    int enabled;
    size_t cap; /* events per track */
    int ntracks;
    reel_trace_track *tracks;
    int64_t t0; /* time origin */
} reel_trace;

/* Creates `ntracks` tracks of `cap` events each (no event storage when not
 * enabled). Returns 0 or REEL_E_NOMEM. */
int reel__trace_init(reel_trace *tr, int ntracks, size_t cap, int enabled, int64_t t0);
void reel__trace_free(reel_trace *tr);

/* Names track i (e.g. "decode-3"). */
void reel__trace_name(reel_trace *tr, int i, const char *name, int num);

/* Records an event on track i (no-op when disabled). */
void reel__trace_add(reel_trace *tr, int i, const char *name, const char *detail, int64_t t0, int64_t t1, int64_t arg);

/* Writes {"traceEvents": [...]} to path. */
int reel__trace_write(reel_trace *tr, const char *path, reel_error *err);

#endif
