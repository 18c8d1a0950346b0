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
    free(t->seek_from);
    free(t->keyframes);
    memset(t, 0, sizeof *t);
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

/* Turns a decode-order packet list into the table (copies what it needs). Packets before the first keyframe cannot be decoded
 * and are dropped, as FFmpeg's decoders drop them. */
int reel__table_from_packet_list(reel_decoder *dec, const reel_packet_info *p, int64_t np, reel_error *err)
{
    reel_table *t = &dec->table;
    int64_t first = 0;
    while (first < np && !p[first].key) first++;
    t->n = np - first;
    if (t->n <= 0) { /* no packet (or no keyframe): an empty table; p may be NULL */
        t->n = 0;
        return REEL_OK;
    }
    p += first;
    np -= first;

    t->frames = calloc((size_t)np, sizeof *t->frames);
    t->dts = malloc((size_t)np * sizeof *t->dts);
    t->pts_of_decode = malloc((size_t)np * sizeof *t->pts_of_decode);
    t->frame_of_decode = malloc((size_t)np * sizeof *t->frame_of_decode);
    pts_pos *order = malloc((size_t)np * sizeof *order);
    if (!t->frames || !t->dts || !t->pts_of_decode || !t->frame_of_decode || !order) {
        free(order);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory for the frame table", dec->name);
    }

    /* PTS matching needs every packet to carry a distinct pts. */
    int have_pts = 1;
    for (int64_t i = 0; i < np; i++) {
        t->dts[i] = p[i].dts;
        t->pts_of_decode[i] = p[i].pts;
        if (p[i].pts == AV_NOPTS_VALUE) have_pts = 0;
        order[i].pts = p[i].pts;
        order[i].pos = i;
    }
    if (have_pts) {
        qsort(order, (size_t)np, sizeof *order, cmp_pts_pos);
        for (int64_t i = 1; i < np; i++)
            if (order[i].pts == order[i - 1].pts) {
                have_pts = 0;
                break;
            }
    }
    if (have_pts) {
        t->match_mode = REEL_MATCH_PTS;
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

    for (int64_t i = 0; i < np; i++) {
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
    return REEL_OK;
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
         * decoded but never output, so they are not frames. */
        if (pkt->stream_index == dec->stream_index && pkt->size > 0 && !(pkt->flags & AV_PKT_FLAG_DISCARD)) {
            reel_packet_info pi = {
                .pts = pkt->pts,
                .dts = pkt->dts,
                .duration = pkt->duration,
                .pos = pkt->pos,
                .size = pkt->size,
                .key = (pkt->flags & AV_PKT_FLAG_KEY) != 0,
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
    int64_t *last_key_at = malloc((size_t)n * sizeof *last_key_at); /* per decode pos: last key at or before */
    if (!t->keyframes || !t->seek_from || !last_key_at) {
        free(last_key_at);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory for the frame table", dec->name);
    }
    for (int64_t i = 0, k = 0; i < n; i++)
        if (t->frames[i].flags & REEL_FRAME_KEY) t->keyframes[k++] = i;

    int64_t lk = -1;
    for (int64_t d = 0; d < n; d++) {
        if (t->frames[t->frame_of_decode[d]].flags & REEL_FRAME_KEY) lk = d;
        last_key_at[d] = lk;
    }
    /* The keyframe to start from: the last one in decode order at or before
     * the frame's packet whose presentation index is not after the frame.
     * A frame shown before its GOP's keyframe (a leading frame of an open
     * GOP) needs the previous GOP. */
    for (int64_t i = 0; i < n; i++) {
        int64_t d = t->frames[i].decode_order;
        int64_t k = last_key_at[d];
        while (k > 0 && t->frame_of_decode[k] > i) k = last_key_at[k - 1];
        t->seek_from[i] = k < 0 ? 0 : k;
    }
    free(last_key_at);
    return REEL_OK;
}
