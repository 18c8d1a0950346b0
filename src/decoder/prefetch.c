/* prefetch.c: a URL's bytes fetched before the demuxer asks for them: the
 * runs of a call's plan (reel_decoder_prefetch) or one run as it starts,
 * and the caller's frame indices resolved against the table. */
#include "decoder/decode_plan.h"
#include "decoder/internal.h"
#include "io/io_front.h"
#include <stdlib.h>
#include <string.h>

/* A video at a URL: fetch the bytes of the run [s, e] in one request
 * before the demuxer asks for them piece by piece (fetch by GOP). A failure
 * here is not final: the reads that follow retry and report it. */
void reel__decoder_prefetch_run(reel_decoder *dec, int64_t s, int64_t e)
{
    int64_t lo, hi;
    if (!dec->remote) return; /* remote runs end at e and drain (no warm tail to fetch) */
    if (reel__plan_byte_range(&dec->table, s, e, reel__io_size(dec->remote), &lo, &hi) != 0) return;
    reel__io_range rg = { lo, hi - lo };
    reel_error ignored;
    (void)reel__io_will_read(dec->remote, &rg, 1, &ignored);
}

/* A caller's frame index (negative: from the end) as a presentation index
 * of the table, or REEL_E_OUT_OF_RANGE naming it. */
int reel__decoder_resolve_index(const reel_decoder *dec, int64_t index, int64_t *frame, reel_error *err)
{
    const int64_t n = dec->table.n;
    const int64_t f = index < 0 ? index + n : index;
    if (f < 0 || f >= n)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: frame index %lld out of range (video has %lld frames)",
                               dec->name, (long long)index, (long long)n);
    *frame = f;
    return REEL_OK;
}

int reel_decoder_prefetch(reel_decoder *dec, const int64_t *indices, size_t n, reel_error *err)
{
    if (!dec || (n && !indices))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_prefetch: NULL argument");
    const reel_table *t = &dec->table;
    if (!dec->remote || n == 0) return REEL_OK;
    reel__req *reqs = malloc(n * sizeof *reqs);
    reel__wanted *w = malloc(n * sizeof *w);
    reel__interval *iv = malloc(n * sizeof *iv);
    reel__io_range *rg = malloc(n * sizeof *rg);
    int st = REEL_OK;
    if (!reqs || !w || !iv || !rg) st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dec->name);
    for (size_t i = 0; i < n && st == REEL_OK; i++) {
        st = reel__decoder_resolve_index(dec, indices[i], &reqs[i].frame, err);
        reqs[i].pos = i;
    }
    if (st == REEL_OK) {
        /* the runs the decode will make (pass 0), and their bytes */
        size_t nw = reel__plan_requests(reqs, n, w);
        size_t m = reel__plan_runs(t, dec->key_state, dec->reorder_depth, w, nw, 0, iv), k = 0;
        for (size_t i = 0; i < m; i++) {
            int64_t lo, hi;
            if (reel__plan_byte_range(t, iv[i].s, iv[i].e, reel__io_size(dec->remote), &lo, &hi) != 0) continue;
            rg[k].offset = lo;
            rg[k].length = hi - lo;
            k++;
        }
        st = reel__io_prefetch(dec->remote, rg, k, err);
    }
    free(reqs);
    free(w);
    free(iv);
    free(rg);
    return st;
}
