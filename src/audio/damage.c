/* damage.c: the damage a window reports (audio/damage.h): the holes a run
 * found (REEL_CORRUPT_SKIP's dropped packets) as spans of the output grid,
 * what a window says of spans, and what FAIL says of each hole's packet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "audio/damage.h"

/* Hole h's span on the output grid (the resampler mixes `reach` native
 * samples on each side of a gap into it). */
static reel__audio_span span_of(const reel_audio *a, const reel__audio_hole *h)
{
    const int64_t sr = a->info.native_sample_rate, r = a->info.sample_rate, reach = reel__audio_resample_reach(a);
    int64_t o0 = h->lo, o1 = h->hi;
    if (reach) {
        o0 = (int64_t)reel__audio_floor_div((__int128)(h->lo - reach) * r, sr);
        o1 = h->hi > h->lo ? (int64_t)-reel__audio_floor_div(-(__int128)(h->hi + reach) * r, sr) : o0;
    }
    return (reel__audio_span){ o0, o1, h->packets };
}

int reel__audio_span_touches(const reel__audio_span *p, int64_t lo, int64_t hi)
{
    return p->hi > p->lo ? p->hi > lo && p->lo < hi : p->lo >= lo && p->lo < hi;
}

typedef reel__audio_span (*span_fn)(const void *ctx, size_t i);

/* What the window [lo, hi) says of spans get(ctx, 0 .. n - 1) (reel__audio_damage_of). */
static void damage_run(span_fn get, const void *ctx, size_t n, int64_t lo, int64_t hi, reel_audio_window *w)
{
    const int64_t vlo = w->valid_lo, vhi = w->valid_hi; /* the stream's part, window-relative */
    int64_t run_lo = vlo, run_hi = vlo, at = vlo;       /* the longest clean run; where the next starts */
    int64_t cover = vlo;                                /* missing samples counted up to here */
    w->missing = w->missing_lo = w->missing_hi = w->corrupt_packets = 0;
    for (size_t i = 0; i < n; i++) {
        const reel__audio_span p = get(ctx, i);
        if (!reel__audio_span_touches(&p, lo, hi)) continue;
        w->corrupt_packets += p.packets;
        int64_t m0 = p.lo - lo > vlo ? p.lo - lo : vlo, m1 = p.hi - lo < vhi ? p.hi - lo : vhi;
        if (m0 < cover) m0 = cover; /* spans overlap where the resampler reaches across two */
        if (m1 <= m0) continue;
        if (w->missing == 0) w->missing_lo = m0;
        w->missing_hi = m1;
        w->missing += m1 - m0;
        cover = m1;
        if (m0 - at > run_hi - run_lo) {
            run_lo = at;
            run_hi = m0;
        }
        at = m1;
    }
    if (w->missing == 0) return;
    if (vhi - at > run_hi - run_lo) {
        run_lo = at;
        run_hi = vhi;
    }
    w->valid_lo = run_lo;
    w->valid_hi = run_hi;
}

static reel__audio_span span_at(const void *ctx, size_t i)
{
    return ((const reel__audio_span *)ctx)[i];
}

static reel__audio_span hole_at(const void *ctx, size_t i)
{
    const reel_audio *a = ctx;
    return span_of(a, &a->holes[i]);
}

void reel__audio_damage_of(const reel__audio_span *s, size_t n, int64_t lo, int64_t hi, reel_audio_window *w)
{
    damage_run(span_at, s, n, lo, hi, w);
}

void reel__audio_damage(const reel_audio *a, int64_t lo, int64_t hi, reel_audio_window *w)
{
    damage_run(hole_at, a, a->n_holes, lo, hi, w);
}

/* What rejected() says of hole h's first packet under REEL_CORRUPT_FAIL,
 * without the file's name, appended to text[cap] as a line. */
static void hole_line(const reel_audio *a, const reel__audio_hole *h, char *text, size_t cap)
{
    char eb[AV_ERROR_MAX_STRING_SIZE], at[48] = "";
    av_strerror(h->why, eb, sizeof eb);
    if (h->ts != AV_NOPTS_VALUE) snprintf(at, sizeof at, " at %.6f s", (double)h->ts * a->tb.num / a->tb.den);
    const size_t used = strlen(text);
    snprintf(text + used, cap - used, "corrupt audio packet%s: %s\n", at, eb);
}

int reel__audio_damage_spans(const reel_audio *a, int64_t lo, int64_t hi, reel__audio_span **out, size_t *n,
                             int64_t *stream_lo, int64_t *stream_hi, char **lines)
{
    *out = NULL;
    *n = 0;
    if (lines) *lines = NULL;
    *stream_lo = a->stream_lo;
    *stream_hi = a->stream_hi;
    size_t k = 0;
    for (size_t i = 0; i < a->n_holes; i++) {
        reel__audio_span p = span_of(a, &a->holes[i]);
        k += reel__audio_span_touches(&p, lo, hi);
    }
    if (!k) return 0;
    reel__audio_span *s = malloc(k * sizeof *s);
    const size_t cap = k * (AV_ERROR_MAX_STRING_SIZE + 80) + 1;
    char *text = lines ? calloc(cap, 1) : NULL;
    if (!s || (lines && !text)) {
        free(s);
        free(text);
        return -1;
    }
    k = 0;
    for (size_t i = 0; i < a->n_holes; i++) {
        reel__audio_span p = span_of(a, &a->holes[i]);
        if (!reel__audio_span_touches(&p, lo, hi)) continue;
        s[k++] = p;
        if (text) hole_line(a, &a->holes[i], text, cap);
    }
    if (lines) *lines = text;
    *out = s;
    *n = k;
    return 0;
}
