/* table.c: the exact frame table. A packet scan that decodes nothing, and
 * the derivation of presentation order, durations, keyframes and the
 * keyframe each frame must be decoded from. */
#include "decoder/internal.h"

#include <stdlib.h>
#include <string.h>

void reel__table_free(reel_table *t)
{
    free(t->frames);
    free(t->dts);
    free(t->pts_of_decode);
    free(t->frame_of_decode);
    free(t->pos_of_decode);
    free(t->key_of_decode);
    free(t->hidden);
    free(t->seek_from);
    free(t->keyframes);
    memset(t, 0, sizeof *t);
}

int reel__table_alloc(reel_table *t, int64_t n, int64_t nd)
{
    t->n = n;
    t->n_decode = nd;
    t->frames = calloc((size_t)(n ? n : 1), sizeof *t->frames);
    t->dts = malloc((size_t)(nd ? nd : 1) * sizeof *t->dts);
    t->pts_of_decode = malloc((size_t)(nd ? nd : 1) * sizeof *t->pts_of_decode);
    t->frame_of_decode = malloc((size_t)(nd ? nd : 1) * sizeof *t->frame_of_decode);
    t->pos_of_decode = malloc((size_t)(nd ? nd : 1) * sizeof *t->pos_of_decode);
    t->key_of_decode = calloc((size_t)(nd ? nd : 1), 1);
    if (!t->frames || !t->dts || !t->pts_of_decode || !t->frame_of_decode || !t->pos_of_decode || !t->key_of_decode)
        return REEL_E_NOMEM;
    for (int64_t d = 0; d < nd; d++) {
        t->frame_of_decode[d] = -1;
        t->pos_of_decode[d] = -1;
    }
    return REEL_OK;
}

int64_t reel__table_frame_near(const reel_table *t, int64_t d)
{
    for (int64_t k = d < 0 ? 0 : d; k < t->n_decode; k++)
        if (t->frame_of_decode[k] >= 0) return t->frame_of_decode[k];
    return t->n - 1;
}

/* Growable packet list for the scan. */
typedef struct pkt_list {
    reel_packet_info *v;
    int64_t n, cap;
} pkt_list;

static int pkt_push(pkt_list *l, const reel_packet_info *p)
{
    if (l->n == l->cap) {
        int64_t cap = l->cap ? l->cap * 2 : 1024;
        reel_packet_info *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return REEL_E_NOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *p;
    return REEL_OK;
}

/* Sorting decode positions by pts (qsort has no context argument in C11,
 * so sort (pts, decode position) pairs instead). */
typedef struct pts_pos {
    int64_t pts;
    int64_t pos;
} pts_pos;

static int cmp_pts_pos(const void *a, const void *b)
{
    const pts_pos *x = a, *y = b;
    if (x->pts != y->pts) return x->pts < y->pts ? -1 : 1;
    return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

int reel__table_index_hidden(reel_table *t)
{
    free(t->hidden);
    t->hidden = NULL;
    t->n_hidden = t->n_decode - t->n;
    if (t->n_hidden <= 0) {
        t->n_hidden = 0;
        return REEL_OK;
    }
    pts_pos *h = malloc((size_t)t->n_hidden * sizeof *h);
    t->hidden = malloc((size_t)t->n_hidden * sizeof *t->hidden);
    if (!h || !t->hidden) {
        free(h);
        return REEL_E_NOMEM;
    }
    int64_t k = 0;
    for (int64_t d = 0; d < t->n_decode && k < t->n_hidden; d++)
        if (t->frame_of_decode[d] < 0) h[k++] = (pts_pos){ t->pts_of_decode[d], d };
    int ok = k == t->n_hidden;
    qsort(h, (size_t)k, sizeof *h, cmp_pts_pos);
    /* a hidden packet is found by its pts: it must have one, unlike every
     * other packet's (frames' pts are distinct already, and sorted) */
    for (int64_t i = 0; ok && i < k; i++) {
        ok = h[i].pts != AV_NOPTS_VALUE && (i == 0 || h[i].pts != h[i - 1].pts);
        int64_t lo = 0, hi = t->n;
        while (ok && lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (t->frames[mid].pts < h[i].pts)
                lo = mid + 1;
            else
                hi = mid;
        }
        ok = ok && !(lo < t->n && t->frames[lo].pts == h[i].pts);
        t->hidden[i] = h[i].pos;
    }
    free(h);
    return ok ? REEL_OK : REEL_E_CORRUPT;
}

int64_t reel__table_hidden_of_pts(const reel_table *t, int64_t pts)
{
    int64_t lo = 0, hi = t->n_hidden;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (t->pts_of_decode[t->hidden[mid]] < pts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo < t->n_hidden && t->pts_of_decode[t->hidden[lo]] == pts) ? t->hidden[lo] : -1;
}

/* The table from packets in decode order, all of them kept as decode
 * positions, the hidden (discard) ones as no frame. Packets before the
 * first keyframe cannot be decoded and are dropped, as FFmpeg's decoders
 * drop them. *count_mode: 1 when the rows had to be matched by count
 * (the caller then rebuilds them without hidden packets). */
static int rows_from_packets(reel_decoder *dec, const reel_packet_info *p, int64_t np, int *count_mode, reel_error *err)
{
    reel_table *t = &dec->table;
    int64_t first = 0;
    while (first < np && !p[first].key) first++;
    if (p) p += first; /* an empty list may be NULL: no offset on it (UB) */
    np -= first;
    int64_t n = 0;
    for (int64_t i = 0; i < np; i++) n += !p[i].discard;
    *count_mode = 0;
    if (np <= 0 || n <= 0) { /* no packet (or no keyframe): an empty table; p may be NULL */
        t->n = t->n_decode = 0;
        return REEL_OK;
    }

    pts_pos *order = malloc((size_t)n * sizeof *order);
    if (reel__table_alloc(t, n, np) != REEL_OK || !order) {
        free(order);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory for the frame table", dec->name);
    }

    /* PTS matching needs every packet to carry a distinct pts. */
    int have_pts = 1;
    for (int64_t i = 0, k = 0; i < np; i++) {
        t->dts[i] = p[i].dts;
        t->pts_of_decode[i] = p[i].pts;
        t->pos_of_decode[i] = p[i].pos;
        t->key_of_decode[i] = p[i].key != 0;
        if (p[i].discard) continue;
        if (p[i].pts == AV_NOPTS_VALUE) have_pts = 0;
        order[k].pts = p[i].pts;
        order[k].pos = i;
        k++;
    }
    if (have_pts) {
        qsort(order, (size_t)n, sizeof *order, cmp_pts_pos);
        for (int64_t i = 1; i < n; i++)
            if (order[i].pts == order[i - 1].pts) {
                have_pts = 0;
                break;
            }
    }
    if (have_pts) {
        t->match_mode = REEL_MATCH_PTS;
    } else if (n < np) {
        free(order);
        *count_mode = 1;
        return REEL_OK;
    } else {
        /* No usable pts (AVI and raw streams): presentation order is the
         * order the decoder outputs frames, which is decode order shifted by
         * the reorder delay; a keyframe of a closed GOP keeps its position.
         * Timestamps are synthesised from dts (frame numbers in AVI). */
        t->match_mode = REEL_MATCH_COUNT;
        int have_dts = 1;
        for (int64_t i = 0; i < np; i++)
            if (p[i].dts == AV_NOPTS_VALUE) {
                have_dts = 0;
                break;
            }
        for (int64_t i = 0; i < np; i++) {
            order[i].pos = i;
            order[i].pts = have_dts ? p[i].dts : i;
        }
        /* dts is ascending in decode order; if a broken file says otherwise,
         * fall back to frame numbers */
        for (int64_t i = 1; have_dts && i < np; i++)
            if (order[i].pts <= order[i - 1].pts) { have_dts = 0; }
        /* Without timestamps a frame is known by its position. If the
         * demuxer skipped packets (dts jumps by more than the usual step),
         * positions after the gap no longer name the right frames. */
        if (have_dts && np > 2) {
            int64_t step = INT64_MAX;
            for (int64_t i = 1; i < np; i++)
                if (order[i].pts - order[i - 1].pts < step) step = order[i].pts - order[i - 1].pts;
            for (int64_t i = 1; i < np; i++)
                if (order[i].pts - order[i - 1].pts > 2 * step) {
                    t->lost_at = i;
                    t->damaged = 1;
                    break;
                }
        }
        if (!have_dts)
            for (int64_t i = 0; i < np; i++) order[i].pts = i;
    }

    for (int64_t i = 0; i < n; i++) {
        int64_t d = order[i].pos;
        reel_frame_entry *f = &t->frames[i];
        f->pts = order[i].pts;
        f->pos = p[d].pos;
        f->decode_order = (int32_t)d;
        f->flags = p[d].key ? REEL_FRAME_KEY : 0;
        f->duration = p[d].duration;
        t->frame_of_decode[d] = i;
    }
    if (t->match_mode == REEL_MATCH_COUNT) {
        /* order is the identity here, so keyframe flags stay with their
         * decode positions: for closed GOPs a keyframe's presentation index
         * equals its decode index. Packets are matched by this synthetic key. */
        for (int64_t i = 0; i < np; i++) t->pts_of_decode[i] = t->frames[i].pts;
    }
    free(order);
    /* hidden packets are found by their pts, which must name them alone;
     * else they are left out (count_mode asks for the rows without them) */
    int hs = reel__table_index_hidden(t);
    if (hs == REEL_E_NOMEM)
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory for the frame table", dec->name);
    if (hs != REEL_OK) *count_mode = 1;
    return REEL_OK;
}

/* Turns a decode-order packet list into the table (copies what it needs).
 * Hidden packets (an edit list's DISCARD) stay decode positions where
 * timestamps name every packet: the frames shown after an edit list that
 * trims a GOP's keyframe need it decoded. Without such timestamps they
 * are left out, as before, and decoding feeds them on the way (a frame
 * that needs a trimmed keyframe then cannot be had). */
int reel__table_from_packet_list(reel_decoder *dec, const reel_packet_info *p, int64_t np, reel_error *err)
{
    int without = 0;
    int64_t lost = dec->table.lost_at;
    int damaged = dec->table.damaged;
    int r = rows_from_packets(dec, p, np, &without, err);
    if (r != REEL_OK || !without) return r;
    reel__table_free(&dec->table);
    dec->table.lost_at = lost;
    dec->table.damaged = damaged;
    reel_packet_info *shown = malloc((size_t)(np ? np : 1) * sizeof *shown);
    if (!shown) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory for the frame table", dec->name);
    int64_t m = 0;
    for (int64_t i = 0; i < np; i++)
        if (!p[i].discard) shown[m++] = p[i];
    r = rows_from_packets(dec, shown, m, &without, err);
    free(shown);
    return r;
}

/* For containers that index every frame by position (AVI's idx1), a scan
 * that finds fewer packets than the index, or other positions, has read
 * past damage where the demuxer resynchronised. Frames are then known only
 * by position up to the first missing one; remember where that is. */
static void check_against_index(reel_decoder *dec, const pkt_list *l)
{
    int has_pts = 1;
    for (int64_t i = 0; i < l->n; i++)
        if (l->v[i].pts == AV_NOPTS_VALUE) {
            has_pts = 0;
            break;
        }
    if (has_pts) return; /* timestamps identify frames: damage cannot renumber them */
    int ne = avformat_index_get_entries_count(dec->st);
    if (ne <= 0) return;
    int64_t k = 0, first_bad = -1;
    for (int i = 0; i < ne && first_bad < 0; i++) {
        const AVIndexEntry *e = avformat_index_get_entry(dec->st, i);
        if (!e || e->size <= 0) continue;
        /* AVI's index points at the chunk header, packets at its payload */
        int64_t delta = k < l->n ? l->v[k].pos - e->pos : -1;
        if (k >= l->n || delta < 0 || delta > 8 || l->v[k].size != e->size) first_bad = k;
        k++;
    }
    if (first_bad < 0 && k < l->n) first_bad = k; /* more packets than indexed: also suspicious */
    if (first_bad < 0) return;
    /* rows are counted from the first keyframe */
    int64_t first_key = 0;
    while (first_key < l->n && !l->v[first_key].key) first_key++;
    int64_t row = first_bad - first_key;
    dec->table.damaged = 1;
    if (row < 1) row = 1;
    if (dec->table.lost_at == 0 || row < dec->table.lost_at) dec->table.lost_at = row;
}

int reel__table_scan(reel_decoder *dec, reel_error *err)
{
    AVPacket *pkt = av_packet_alloc();
    pkt_list l = { 0 };
    char eb[128];
    int r = REEL_OK, last_cut = 0;
    if (!pkt) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dec->name);
    reel__table_free(&dec->table);
    for (;;) {
        int e = reel__interrupted(dec) ? AVERROR_EXIT : av_read_frame(dec->fmt, pkt);
        if (e == AVERROR_EOF) break;
        if (e == AVERROR_EXIT) {
            r = reel__error_set(err, REEL_E_CANCELLED, "%s: interrupted while indexing", dec->name);
            break;
        }
        if (e < 0) {
            if (e == AVERROR(EAGAIN)) continue;
            /* a remote read that failed after its retries is not damage:
             * the video is not shorter than it is */
            if (reel__remote_failure(dec, err)) {
                r = err ? err->status : REEL_E_IO;
                break;
            }
            /* Damage: keep every frame before it. Decoding them stays exact;
             * the decoder reports the damage when asked for later frames. */
            dec->table.damaged = 1;
            (void)eb;
            break;
        }
        /* Packets the demuxer marks DISCARD (trimmed by an edit list) are
         * decoded but never output: not frames, but kept (hidden), since
         * frames shown may depend on them. */
        if (pkt->stream_index == dec->stream_index && pkt->size > 0) {
            reel_packet_info pi = {
                .pts = pkt->pts,
                .dts = pkt->dts,
                .duration = pkt->duration,
                .pos = pkt->pos,
                .size = pkt->size,
                .key = (pkt->flags & AV_PKT_FLAG_KEY) != 0,
                .discard = (pkt->flags & AV_PKT_FLAG_DISCARD) != 0,
            };
            if (pkt->flags & AV_PKT_FLAG_CORRUPT) dec->table.damaged = 1;
            /* cut off by truncation: its bytes run past the end of the file,
             * or the demuxer says so (only the last packet can be; checked
             * after the loop) */
            last_cut = (pkt->flags & AV_PKT_FLAG_CORRUPT) ||
                       (dec->file_size > 0 && pkt->pos >= 0 && pkt->pos + pkt->size > dec->file_size);
            if (pkt_push(&l, &pi) != REEL_OK) {
                r = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory for the frame table", dec->name);
                av_packet_unref(pkt);
                break;
            }
        }
        av_packet_unref(pkt);
    }
    av_packet_free(&pkt);
    /* a last packet cut short decodes to no frame (ffmpeg decodes one frame
     * fewer): it is not counted, so the table, `reel info` and len() agree
     * with what can be decoded */
    if (r == REEL_OK && last_cut && l.n > 0) {
        l.n--;
        dec->table.damaged = 1;
    }
    if (r == REEL_OK) check_against_index(dec, &l);
    if (r == REEL_OK) {
        int damaged = dec->table.damaged;
        r = reel__table_from_packet_list(dec, l.v, l.n, err);
        dec->table.damaged |= damaged;
        dec->table.source = REEL_INDEX_FROM_SCAN;
    }
    free(l.v);
    return r;
}

int reel__table_finish(reel_decoder *dec, reel_error *err)
{
    reel_table *t = &dec->table;
    int64_t n = t->n;
    if (n == 0) return REEL_OK;
    for (int64_t i = 0; i < n; i++)
        if (t->frames[i].pts < -REEL_TS_LIMIT || t->frames[i].pts > REEL_TS_LIMIT || t->frames[i].duration < 0 ||
            t->frames[i].duration > REEL_TS_LIMIT)
            return reel__error_set(err, REEL_E_CORRUPT, "%s: impossible timestamp %lld (duration %lld) at frame %lld",
                                   dec->name, (long long)t->frames[i].pts, (long long)t->frames[i].duration,
                                   (long long)i);

    /* Durations: the gap to the next frame in presentation order (packet
     * durations are per decode order and wrong under reordering and some
     * edit lists); the last frame keeps its packet's duration, else the
     * average gap. */
    int64_t known = 0, known_sum = 0;
    for (int64_t i = 0; i + 1 < n; i++) {
        int64_t gap = t->frames[i + 1].pts - t->frames[i].pts;
        if (gap > 0) {
            t->frames[i].duration = gap;
            known++;
            known_sum += gap;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        if (t->frames[i].duration > 0) continue;
        if (known)
            t->frames[i].duration = known_sum / known;
        else if (n > 1)
            t->frames[i].duration = (t->frames[n - 1].pts - t->frames[0].pts) / (n - 1);
        if (t->frames[i].duration <= 0) {
            /* last resort: the nominal rate */
            AVRational fr = dec->st->avg_frame_rate.num ? dec->st->avg_frame_rate : dec->st->r_frame_rate;
            t->frames[i].duration = fr.num > 0 ? av_rescale_q(1, av_inv_q(fr), dec->st->time_base) : 1;
            if (t->frames[i].duration <= 0) t->frames[i].duration = 1;
        }
    }

    /* Frames of the GOP where packets went missing may reference the lost
     * ones (B-frames point forward), so trust ends at that GOP's keyframe. */
    if (t->lost_at > 0) {
        int64_t k = t->lost_at < n ? t->lost_at : n - 1;
        while (k > 0 && !(t->frames[k].flags & REEL_FRAME_KEY)) k--;
        t->lost_at = k > 0 ? k : 1;
    }

    /* keyframes in presentation order */
    free(t->keyframes);
    t->n_keyframes = 0;
    for (int64_t i = 0; i < n; i++)
        if (t->frames[i].flags & REEL_FRAME_KEY) t->n_keyframes++;
    t->keyframes = malloc((size_t)(t->n_keyframes ? t->n_keyframes : 1) * sizeof *t->keyframes);
    free(t->seek_from);
    t->seek_from = malloc((size_t)n * sizeof *t->seek_from);
    int64_t *last_key_at =
        malloc((size_t)t->n_decode * sizeof *last_key_at); /* per decode pos: last key at or before */
    if (!t->keyframes || !t->seek_from || !last_key_at) {
        free(last_key_at);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory for the frame table", dec->name);
    }
    /* keyframes shown; a hidden keyframe (trimmed by an edit list) is no
     * frame, so the frames shown before the next keyframe are not keyframes,
     * as ffprobe says, though decoding starts at the hidden one for them */
    for (int64_t i = 0, k = 0; i < n; i++)
        if (t->frames[i].flags & REEL_FRAME_KEY) t->keyframes[k++] = i;

    int64_t lk = -1;
    for (int64_t d = 0; d < t->n_decode; d++) {
        if (t->key_of_decode[d]) lk = d;
        last_key_at[d] = lk;
    }
    /* The keyframe to start from: the last one in decode order at or before
     * the frame's packet that is not shown after the frame (pts order is
     * presentation order, hidden packets included). A frame shown before
     * its GOP's keyframe (a leading frame of an open GOP) needs the
     * previous GOP. */
    for (int64_t i = 0; i < n; i++) {
        int64_t d = t->frames[i].decode_order;
        int64_t k = last_key_at[d];
        while (k > 0 && t->pts_of_decode[k] > t->frames[i].pts) k = last_key_at[k - 1];
        t->seek_from[i] = k < 0 ? 0 : k;
    }
    free(last_key_at);
    return REEL_OK;
}
