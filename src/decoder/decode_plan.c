/* decode_plan.c: the decode plan (see decode_plan.h): request sort and
 * dedupe, and the keyframe runs that cover the wanted frames. */
#include "decoder/decode_plan.h"

#include <stdlib.h>

static int cmp_req(const void *a, const void *b)
{
    const reel__req *x = a, *y = b;
    if (x->frame != y->frame) return x->frame < y->frame ? -1 : 1;
    return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

static int cmp_interval(const void *a, const void *b)
{
    const reel__interval *x = a, *y = b;
    if (x->s != y->s) return x->s < y->s ? -1 : 1;
    return x->e < y->e ? -1 : (x->e > y->e);
}

size_t reel__plan_requests(reel__req *reqs, size_t n, reel__wanted *w)
{
    qsort(reqs, n, sizeof *reqs, cmp_req);
    size_t nw = 0;
    for (size_t i = 0; i < n; i++) {
        if (nw && w[nw - 1].frame == reqs[i].frame) {
            w[nw - 1].count++;
            continue;
        }
        w[nw].frame = reqs[i].frame;
        w[nw].first = i;
        w[nw].count = 1;
        w[nw].done = 0;
        nw++;
    }
    return nw;
}

reel__wanted *reel__plan_find(reel__wanted *w, size_t nw, int64_t frame)
{
    size_t lo = 0, hi = nw;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w[mid].frame < frame)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo < nw && w[lo].frame == frame) ? &w[lo] : NULL;
}

static int is_unclean(const uint8_t *key_state, int64_t d)
{
    return d > 0 && key_state && (key_state[d] & REEL_KEY_UNCLEAN);
}

int64_t reel__plan_clean_key_before(const reel_table *t, const uint8_t *key_state, int64_t d)
{
    do {
        int64_t k = d - 1;
        while (k > 0 && !t->key_of_decode[k]) k--;
        d = k < 0 ? 0 : k;
    } while (is_unclean(key_state, d));
    return d;
}

size_t reel__plan_runs(const reel_table *t, const uint8_t *key_state, int reorder_depth, const reel__wanted *w,
                       size_t nw, int retry, reel__interval *iv)
{
    size_t ni = 0;
    for (size_t i = 0; i < nw; i++) {
        if (w[i].done) continue;
        int64_t f = w[i].frame;
        int64_t s = t->seek_from[f];
        if (is_unclean(key_state, s)) s = reel__plan_clean_key_before(t, key_state, s);
        /* second chance for a frame the decoder did not produce: start one
         * keyframe earlier (damaged or unmarked open GOPs) */
        if (retry) s = reel__plan_clean_key_before(t, key_state, s);
        iv[ni].s = s;
        iv[ni].e = t->frames[f].decode_order;
        if (t->match_mode == REEL_MATCH_COUNT) {
            int64_t e = iv[ni].e + reorder_depth;
            for (int64_t d = iv[ni].e + 1; d <= e && d < t->n_decode; d++)
                if (t->key_of_decode[d]) {
                    e = d - 1;
                    break;
                }
            iv[ni].e = e < t->n_decode ? e : t->n_decode - 1;
        }
        ni++;
    }
    qsort(iv, ni, sizeof *iv, cmp_interval);
    /* merge: a run that starts at or before the end of the previous one (plus
     * one) needs no seek; decoding simply continues */
    size_t m = 0;
    for (size_t i = 0; i < ni; i++) {
        if (m > 0 && iv[i].s <= iv[m - 1].e + 1) {
            if (iv[i].e > iv[m - 1].e) iv[m - 1].e = iv[i].e;
        } else {
            iv[m++] = iv[i];
        }
    }
    return m;
}

int reel__plan_byte_range(const reel_table *t, int64_t s, int64_t e, int64_t file_size, int64_t *lo, int64_t *hi)
{
    if (s < 0 || e < s || e >= t->n_decode) return -1;
    int64_t a = INT64_MAX, b = -1;
    for (int64_t d = s; d <= e; d++) {
        int64_t p = t->pos_of_decode[d];
        if (p < 0) return -1;
        if (p < a) a = p;
        if (p > b) b = p;
    }
    /* the run's last packet ends where the next packet of the stream begins */
    int64_t end = file_size;
    for (int64_t d = 0; d < t->n_decode; d++) {
        int64_t p = t->pos_of_decode[d];
        if (p > b && p < end) end = p;
    }
    if (end <= b) return -1;
    *lo = a;
    *hi = end;
    return 0;
}
