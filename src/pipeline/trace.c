/* trace.c: per-thread event rings and the Chrome trace-event JSON writer
 * (one pid, one tid per track, thread_name metadata, complete "X" events). */
#include "pipeline/trace.h"
#include "core/json.h"
#include "core/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int reel__trace_init(reel_trace *tr, int ntracks, size_t cap, int enabled, int64_t t0)
{
    memset(tr, 0, sizeof *tr);
    tr->enabled = enabled;
    tr->cap = cap ? cap : 1;
    tr->t0 = t0;
    tr->tracks = calloc((size_t)ntracks, sizeof *tr->tracks);
    if (!tr->tracks) return REEL_E_NOMEM;
    tr->ntracks = ntracks;
    for (int i = 0; i < ntracks; i++) {
        pthread_mutex_init(&tr->tracks[i].mu, NULL);
        if (enabled) {
            tr->tracks[i].ev = malloc(tr->cap * sizeof *tr->tracks[i].ev);
            if (!tr->tracks[i].ev) {
                reel__trace_free(tr);
                return REEL_E_NOMEM;
            }
        }
    }
    return 0;
}

void reel__trace_free(reel_trace *tr)
{
    if (!tr->tracks) return;
    for (int i = 0; i < tr->ntracks; i++) {
        pthread_mutex_destroy(&tr->tracks[i].mu);
        free(tr->tracks[i].ev);
    }
    free(tr->tracks);
    tr->tracks = NULL;
    tr->ntracks = 0;
}

void reel__trace_name(reel_trace *tr, int i, const char *name, int num)
{
    if (i < 0 || i >= tr->ntracks) return;
    if (num >= 0)
        snprintf(tr->tracks[i].name, sizeof tr->tracks[i].name, "%s-%d", name, num);
    else
        snprintf(tr->tracks[i].name, sizeof tr->tracks[i].name, "%s", name);
}

void reel__trace_add(reel_trace *tr, int i, const char *name, const char *detail, int64_t t0, int64_t t1, int64_t arg)
{
    if (!tr->enabled || i < 0 || i >= tr->ntracks) return;
    reel_trace_track *t = &tr->tracks[i];
    pthread_mutex_lock(&t->mu);
    size_t slot = (t->head + t->count) % tr->cap;
    if (t->count == tr->cap) {
        t->head = (t->head + 1) % tr->cap;
        t->dropped++;
    } else {
        t->count++;
    }
    reel_trace_event *e = &t->ev[slot];
    e->name = name;
    e->detail = detail;
    e->t0 = t0;
    e->t1 = t1;
    e->arg = arg;
    pthread_mutex_unlock(&t->mu);
}

int reel__trace_write(reel_trace *tr, const char *path, reel_error *err)
{
    if (!path || !*path) return reel__error_set(err, REEL_E_INVALID_ARG, "trace: no path");
    FILE *f = fopen(path, "w");
    if (!f) return reel__error_set(err, REEL_E_IO, "%s: %s", path, strerror(errno));
    reel_buf b;
    reel__buf_init(&b);
    reel__buf_puts(&b, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    reel__buf_puts(&b,
                   "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"reel loader\"}}");
    int failed = 0;
    for (int i = 0; i < tr->ntracks && !failed; i++) {
        reel_trace_track *t = &tr->tracks[i];
        reel__buf_printf(&b,
                         ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":", i + 1);
        reel__buf_json_string(&b, t->name);
        reel__buf_printf(
            &b, "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
            i + 1, i);
        pthread_mutex_lock(&t->mu);
        for (size_t k = 0; k < t->count; k++) {
            const reel_trace_event *e = &t->ev[(t->head + k) % tr->cap];
            double ts = (double)(e->t0 - tr->t0) / 1e3, dur = (double)(e->t1 - e->t0) / 1e3;
            reel__buf_puts(&b, ",\n{\"name\":");
            reel__buf_json_string(&b, e->name);
            reel__buf_printf(&b, ",\"cat\":\"reel\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f", i + 1,
                             ts, dur < 0 ? 0 : dur);
            if (e->detail || e->arg >= 0) {
                reel__buf_puts(&b, ",\"args\":{");
                if (e->arg >= 0) reel__buf_printf(&b, "\"id\":%lld", (long long)e->arg);
                if (e->detail) {
                    reel__buf_puts(&b, e->arg >= 0 ? ",\"path\":" : "\"path\":");
                    reel__buf_json_string(&b, e->detail);
                }
                reel__buf_puts(&b, "}");
            }
            reel__buf_puts(&b, "}");
            if (b.len > (1u << 20)) {
                if (fwrite(b.data, 1, b.len, f) != b.len) failed = 1;
                b.len = 0;
                b.data[0] = '\0';
            }
        }
        pthread_mutex_unlock(&t->mu);
    }
    reel__buf_puts(&b, "\n]}\n");
    if (b.oom)
        failed = 2;
    else if (fwrite(b.data, 1, b.len, f) != b.len)
        failed = 1;
    reel__buf_free(&b);
    if (fclose(f) != 0 && !failed) failed = 1;
    if (failed == 2) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory writing the trace", path);
    if (failed) return reel__error_set(err, REEL_E_IO, "%s: write error", path);
    return REEL_OK;
}
