/* decode.c: batched random access. Plans the least decoding for a set of
 * wanted frames (sort, dedupe, merge keyframe runs, seek only across gaps),
 * runs the plan, and hands each wanted frame to a visitor exactly once per
 * request position. Whether a keyframe is a clean start is keycheck.c's. */
#include "decoder/decode_plan.h"
#include "decoder/internal.h"
#include "io/io_front.h"

#include <stdlib.h>
#include <string.h>

#include <libavutil/hwcontext.h>

typedef reel__req req;
typedef reel__wanted wanted;

typedef struct run {
    reel_decoder *dec;
    reel_frame_fn fn;
    void *opaque;
    const req *reqs;
    wanted *w;
    size_t nw;
    reel_decode_stats st;
    reel_error *err;
    int64_t sent; /* packets sent since the last drain */
    /* COUNT mode safety: table frames passed and frames output since the
     * last seek; they must agree, or indices would silently shift */
    int64_t count_in, count_out;
    int64_t count_first_key;
    /* the keyframe (decode position) the current run seeked to, and the end
     * of its GOP; -1 when the run started at the beginning of the stream */
    int64_t seek_key, seek_key_end;
    int64_t unclean; /* set with REEL__E_UNCLEAN_KEY: the keyframe to give up on */
    int cold;        /* the call's last run drains too, and keeps no frame (reel__decoder_decode_cold) */
} run;

/* Internal status: the keyframe a run started from is not a clean starting
 * point (see reel_decoder.key_state); the plan is run again from an
 * earlier one. Never returned to the caller. */
#define REEL__E_UNCLEAN_KEY (-1000)
/* Internal status: under frame threads a keyframe came out unlike its decode
 * alone (see reel_decoder.key_hash); the plan runs again single-threaded. */
#define REEL__E_THREADS_DIVERGED (-1001)

static wanted *find_wanted(const run *r, int64_t frame)
{
    return reel__plan_find(r->w, r->nw, frame);
}

/* Presentation index of a table pts, or -1. */
static int64_t frame_of_pts(const reel_table *t, int64_t pts)
{
    int64_t lo = 0, hi = t->n;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (t->frames[mid].pts < pts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo < t->n && t->frames[lo].pts == pts) ? lo : -1;
}

/* Decode position of a demuxed packet, or -1 if it is not in the table
 * (before the first keyframe, or not seen by the scan). */
static int64_t packet_decode_pos(const reel_decoder *dec, const AVPacket *pkt)
{
    const reel_table *t = &dec->table;
    if (t->match_mode == REEL_MATCH_PTS) {
        if (pkt->pts == AV_NOPTS_VALUE) return -1;
        int64_t i = frame_of_pts(t, pkt->pts);
        if (i < 0) return (pkt->flags & AV_PKT_FLAG_DISCARD) ? reel__table_hidden_of_pts(t, pkt->pts) : -1;
        return t->frames[i].decode_order;
    }
    /* COUNT mode: the synthetic key is the dts, ascending in decode order */
    if (pkt->dts == AV_NOPTS_VALUE) return -1;
    int64_t lo = 0, hi = t->n_decode;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (t->pts_of_decode[mid] < pkt->dts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo < t->n_decode && t->pts_of_decode[lo] == pkt->dts) ? lo : -1;
}

static void reset_decoder(reel_decoder *dec)
{
    avcodec_flush_buffers(dec->avctx);
    reel__log_mark(dec); /* what was logged concerns the frames just flushed */
    dec->decoder_dirty = 0;
    dec->warm = 0;
}

/* Leaves the codec clean after an error, without draining: frames still in
 * flight are dropped, so the visitor is never called after a failure. */
static void abort_run(run *r)
{
    reset_decoder(r->dec);
    r->dec->avctx->skip_frame = AVDISCARD_DEFAULT;
    r->dec->next_decode = -1;
    r->sent = 0;
    r->count_in = r->count_out = 0;
}

static int seek_to(run *r, int64_t d, int from_start)
{
    reel_decoder *dec = r->dec;
    const reel_table *t = &dec->table;
    int64_t ts;
    if (from_start) {
        ts = INT64_MIN;
        for (int64_t i = 0; i < t->n_decode && i < 64; i++) {
            int64_t v = t->dts[i] != AV_NOPTS_VALUE ? t->dts[i] : t->pts_of_decode[i];
            if (v != AV_NOPTS_VALUE && (ts == INT64_MIN || v < ts)) ts = v;
        }
        if (ts == INT64_MIN) ts = 0;
        ts -= 1;
    } else {
        /* dts is never after pts, and index timestamps are dts (mov, avi) or
         * pts (matroska): seeking backward to the dts lands on the keyframe
         * or before it; packets before it are then skipped unread by the codec.
         * A remote object seeks to the keyframe's pts instead: mov's index
         * timestamps can sit a little after the packets' dts, and the dts then
         * lands a whole GOP early, whose bytes would be fetched for nothing;
         * the pts lands on the keyframe unless a later keyframe's index time
         * is before it, which run_interval detects and recovers from. */
        int64_t pts = t->pts_of_decode[d];
        ts = t->dts[d] != AV_NOPTS_VALUE ? t->dts[d] : pts;
        if (dec->remote && pts != AV_NOPTS_VALUE) ts = pts;
    }
    int e = av_seek_frame(dec->fmt, dec->stream_index, ts, AVSEEK_FLAG_BACKWARD);
    if (e < 0) e = avformat_seek_file(dec->fmt, dec->stream_index, INT64_MIN, ts, ts, 0);
    if (e < 0 && !(dec->fmt->iformat->flags & AVFMT_NO_BYTE_SEEK))
        e = av_seek_frame(dec->fmt, dec->stream_index, 0, AVSEEK_FLAG_BYTE | AVSEEK_FLAG_BACKWARD);
    if (e < 0 && (e == AVERROR_EXIT || reel__interrupted(dec)))
        return reel__error_set(r->err, REEL_E_CANCELLED, "%s: interrupted while seeking to frame %lld", dec->name,
                               (long long)reel__table_frame_near(t, d));
    if (e < 0) {
        char eb[128];
        return reel__error_set(r->err, REEL_E_IO, "%s: seek to frame %lld failed: %s", dec->name,
                               (long long)reel__table_frame_near(t, d), reel__av_err(e, eb, sizeof eb));
    }
    r->st.seeks++;
    dec->next_decode = -1;
    return REEL_OK;
}

static void cache_put(reel_decoder *dec, const AVFrame *f, int64_t idx)
{
    for (int i = 0; i < REEL_FRAME_CACHE; i++)
        if (dec->cache_index[i] == idx) return;
    int k = dec->cache_next;
    if (!dec->cache[k] && !(dec->cache[k] = av_frame_alloc())) return;
    av_frame_unref(dec->cache[k]);
    if (av_frame_ref(dec->cache[k], f) < 0) {
        dec->cache_index[k] = -1;
        return;
    }
    dec->cache_index[k] = idx;
    dec->cache_next = (k + 1) % REEL_FRAME_CACHE;
}

static int give(run *r, wanted *w, const AVFrame *f, int64_t idx, int bad);

/* Serves wanted frames that an earlier call left in the cache. */
static int serve_from_cache(run *r)
{
    reel_decoder *dec = r->dec;
    for (int i = 0; i < REEL_FRAME_CACHE; i++) {
        if (dec->cache_index[i] < 0) continue;
        wanted *w = find_wanted(r, dec->cache_index[i]);
        if (w && !w->done) {
            int st = give(r, w, dec->cache[i], dec->cache_index[i], reel__frame_is_corrupt(dec->cache[i]));
            if (st != REEL_OK) return st;
        }
    }
    return REEL_OK;
}

/* Takes one decoded frame: identifies it and hands it to the visitor if wanted. */
static int deliver(run *r, AVFrame *f)
{
    reel_decoder *dec = r->dec;
    const reel_table *t = &dec->table;
    int64_t idx;
    r->st.frames_decoded++;
    /* damage: flagged on the frame, or only logged by FFmpeg for this
     * decoder's codec since it last started afresh (log.c) */
    const int bad = reel__frame_is_corrupt(f) || reel__log_errors_since_mark(dec);
    if (t->match_mode == REEL_MATCH_PTS) {
        int64_t pts = f->pts != AV_NOPTS_VALUE ? f->pts : f->best_effort_timestamp;
        idx = pts == AV_NOPTS_VALUE ? -1 : frame_of_pts(t, pts);
    } else {
        /* Packets were stamped with their decode-order key, so the first
         * frame after a seek must be the keyframe we started from. */
        if (r->count_out == 0 && f->pts != r->count_first_key)
            return reel__error_set(r->err, REEL_E_CORRUPT,
                                   "%s: frame indices cannot be established here (the file has no timestamps and the "
                                   "decoder did not start at keyframe %lld)",
                                   dec->name, (long long)dec->count_next);
        r->count_out++;
        idx = dec->count_next < t->n ? dec->count_next : -1;
        dec->count_next++;
    }
    if (idx < 0) return REEL_OK;
    if (dec->key_hash && r->seek_key >= 0 && t->frames[idx].decode_order == r->seek_key && dec->key_hash[r->seek_key] &&
        (dec->avctx->active_thread_type & FF_THREAD_FRAME) && reel__picture_hash(f) != dec->key_hash[r->seek_key]) {
        /* the frame threads put out the keyframe we started from unlike its
         * decode alone: damage they concealed in silence; nothing of this
         * run is used, and the decoder goes on single-threaded */
        return REEL__E_THREADS_DIVERGED;
    }
    if (r->seek_key > 0 && bad) {
        /* Errors inside the GOP we seeked into, wanted frame or not: the
         * keyframe may depend on state from before it (seen in real files:
         * ffmpeg -ss gives the same errors, a decode from the start none).
         * Later frames of the GOP can then be wrong without being flagged,
         * so nothing more is taken from this run; the plan starts over from
         * an earlier keyframe, through this one. Damage in the GOP is still
         * found there and handled by the corrupt policy. */
        int64_t d = t->frames[idx].decode_order;
        if (d >= r->seek_key && d < r->seek_key_end) {
            r->unclean = r->seek_key;
            return REEL__E_UNCLEAN_KEY;
        }
    }
    if (idx > dec->out_max) dec->out_max = idx;
    wanted *w = find_wanted(r, idx);
    if (!w || w->done) {
        /* only frames named by their timestamp may be kept: a count is
         * verified up to the wanted frames, not past them. Not in a cold
         * call (one run of a GOP-parallel call): its next call is another
         * run, and each kept frame pins a codec buffer (8 at 1080p: 25 MB
         * per context) while the codec allocates new ones */
        if (!r->cold && t->match_mode == REEL_MATCH_PTS && r->nw && idx > r->w[r->nw - 1].frame) cache_put(dec, f, idx);
        return REEL_OK;
    }
    return give(r, w, f, idx, bad);
}

/* Hands a wanted frame to the visitor, once per request position. */
static int give(run *r, wanted *w, const AVFrame *f, int64_t idx, int bad)
{
    reel_decoder *dec = r->dec;
    const reel_table *t = &dec->table;
    if (bad) {
        if (dec->settings.corrupt_policy == REEL_CORRUPT_FAIL)
            return reel__error_set(r->err, REEL_E_CORRUPT, "%s: frame %lld decoded with errors (corrupt data)",
                                   dec->name, (long long)idx);
        r->st.corrupt_packets++;
    }
    AVFrame *host = NULL;
    if (f->format == AV_PIX_FMT_CUDA && !dec->gpu_sink) {
        /* an NVDEC surface for a visitor that reads host memory */
        host = av_frame_alloc();
        int e = host ? av_hwframe_transfer_data(host, f, 0) : AVERROR(ENOMEM);
        if (e >= 0) e = av_frame_copy_props(host, f);
        if (e < 0) {
            av_frame_free(&host);
            char eb[128];
            return reel__error_set(r->err, REEL_E_CUDA,
                                   "%s: frame %lld: CUDA: NVDEC's surface cannot be copied to the host: %s", dec->name,
                                   (long long)idx, reel__av_err(e, eb, sizeof eb));
        }
        f = host;
    }
    w->done = 1;
    r->st.frames_returned++;
    struct reel_frame rf = { .av = f, .index = idx, .pts = t->frames[idx].pts, .rotation = dec->rotation };
    for (size_t k = 0; k < w->count; k++) {
        /* a visitor that fails may fill err itself (the converter does);
         * otherwise say who stopped the call */
        int before = r->err ? r->err->status : 0;
        if (r->err) r->err->status = REEL_OK;
        int cb = r->fn(r->opaque, &rf, r->reqs[w->first + k].pos);
        if (cb != 0) {
            int st = cb < 0 ? cb : REEL_E_CANCELLED;
            if (r->err && r->err->status == REEL_OK)
                reel__error_set(r->err, st, "%s: stopped by the frame visitor at frame %lld (status %d)", dec->name,
                                (long long)idx, cb);
            av_frame_free(&host);
            return st;
        }
        if (r->err) r->err->status = before;
    }
    av_frame_free(&host);
    return REEL_OK;
}

static int receive_all(run *r)
{
    reel_decoder *dec = r->dec;
    for (;;) {
        int e = avcodec_receive_frame(dec->avctx, dec->frame);
        if (e == AVERROR(EAGAIN) || e == AVERROR_EOF) return REEL_OK;
        if (e < 0) {
            char eb[128];
            if (dec->settings.corrupt_policy == REEL_CORRUPT_SKIP && e == AVERROR_INVALIDDATA) {
                r->st.corrupt_packets++;
                continue;
            }
            return reel__error_set(r->err, e == AVERROR_INVALIDDATA ? REEL_E_CORRUPT : reel__status_from_av(e),
                                   "%s: decoding failed: %s", dec->name, reel__av_err(e, eb, sizeof eb));
        }
        int s = deliver(r, dec->frame);
        av_frame_unref(dec->frame);
        if (s != REEL_OK) return s;
    }
}

static int send_packet(run *r, AVPacket *pkt, int64_t d)
{
    reel_decoder *dec = r->dec;
    for (;;) {
        int e = avcodec_send_packet(dec->avctx, pkt);
        if (e == AVERROR(EAGAIN)) {
            int s = receive_all(r);
            if (s != REEL_OK) return s;
            continue;
        }
        if (e < 0 && e != AVERROR_EOF) {
            char eb[128];
            if (dec->settings.corrupt_policy == REEL_CORRUPT_SKIP) {
                r->st.corrupt_packets++;
                return REEL_OK;
            }
            return reel__error_set(r->err, e == AVERROR_INVALIDDATA ? REEL_E_CORRUPT : reel__status_from_av(e),
                                   "%s: corrupt packet at frame %lld: %s", dec->name,
                                   d >= 0 ? (long long)reel__table_frame_near(&dec->table, d) : -1LL,
                                   reel__av_err(e, eb, sizeof eb));
        }
        if (pkt) {
            r->sent++;
            r->st.packets_read++;
            dec->decoder_dirty = 1;
        }
        return receive_all(r);
    }
}

/* Drains the codec at the end of a run of packets and resets it for the
 * next seek. Draining is free, unlike decoding extra packets to push the
 * reordered frames out. */
static int drain(run *r)
{
    reel_decoder *dec = r->dec;
    if (!dec->decoder_dirty) return REEL_OK;
    int s = send_packet(r, NULL, -1);
    reset_decoder(dec);
    r->sent = 0;
    if (s == REEL_OK && dec->table.match_mode == REEL_MATCH_COUNT && r->count_in != r->count_out)
        s = reel__error_set(r->err, REEL_E_CORRUPT,
                            "%s: the decoder dropped %lld frame(s) after frame %lld; without timestamps the following "
                            "frame indices cannot be trusted (damaged file?)",
                            dec->name, (long long)(r->count_in - r->count_out),
                            (long long)(dec->count_next - r->count_out));
    r->count_in = r->count_out = 0;
    return s;
}

/* Smallest frame index still wanted whose packet lies in [s, e], or
 * INT64_MAX when all of them are delivered. */
static int64_t span_first_undone(const run *r, int64_t s, int64_t e)
{
    const reel_table *t = &r->dec->table;
    for (size_t i = 0; i < r->nw; i++) { /* w is sorted by frame index */
        int64_t d = t->frames[r->w[i].frame].decode_order;
        if (d >= s && d <= e && !r->w[i].done) return r->w[i].frame;
    }
    return INT64_MAX;
}

static int span_done(const run *r, int64_t s, int64_t e)
{
    return span_first_undone(r, s, e) == INT64_MAX;
}

static int all_done(const run *r)
{
    return r->st.frames_returned >= (int64_t)r->nw;
}

/* Ends what the codec is doing and seeks to keyframe s (the stream's start
 * with force_start); notes the keyframe and the end of its GOP. */
static int reseek(run *r, int64_t s, int force_start)
{
    reel_decoder *dec = r->dec;
    const reel_table *t = &dec->table;
    int st;
    /* a warm run that cannot serve this span is dropped, not drained:
     * what it holds gets decoded again from the keyframe, so the work
     * reported is the same as from a cold start */
    if (dec->warm && r->sent == 0)
        reset_decoder(dec);
    else if ((st = drain(r)) != REEL_OK)
        return st;
    if ((st = seek_to(r, s, force_start)) != REEL_OK) return st;
    r->seek_key = force_start ? -1 : s;
    r->seek_key_end = t->n_decode;
    for (int64_t d = s + 1; d < t->n_decode; d++)
        if (t->key_of_decode[d]) {
            r->seek_key_end = d;
            break;
        }
    return REEL_OK;
}

/* Sets a run over decode positions [s, e] going: continues a warm run
 * that can serve it (*pump: it has sent e already, only the frames are
 * still inside the codec), else seeks to keyframe s unless the demuxer is
 * there already (*landed 0: until the packet of s arrives). */
static int begin_interval(run *r, int64_t s, int64_t e, int force_seek_start, int *landed, int *pump)
{
    reel_decoder *dec = r->dec;
    const reel_table *t = &dec->table;
    int st;
    /* A warm run (it passed keyframe s and has not sent e yet) puts frames
     * out in increasing order, so it can serve this span only if it has not
     * yet put out any frame the span still wants. */
    int cont = !force_seek_start && dec->warm && dec->next_decode >= s && s >= dec->warm_from &&
               span_first_undone(r, s, e) > dec->out_max;
    *pump = cont && dec->next_decode > e;
    *landed = 1;
    if (!cont && (force_seek_start || dec->next_decode != s || dec->warm)) {
        if ((st = reseek(r, s, force_seek_start)) != REEL_OK) return st;
        *landed = 0;
    }
    if (!cont) {
        dec->warm_from = s;
        dec->out_max = -1;
        dec->count_next = t->frame_of_decode[s];
        r->count_in = r->count_out = 0;
        r->count_first_key = t->pts_of_decode[s];
    }
    return REEL_OK;
}

/* Reads the next packet into dec->pkt: 1 when there is one; 0 at the end
 * of the file, or at damage the corrupt policy lets pass (what was decoded
 * stands; the caller reports frames that never arrived); else a status,
 * the run aborted (an interrupt, a failed remote read, damage under
 * REEL_CORRUPT_FAIL). `e`: the run's last decode position, for messages. */
static int read_packet(run *r, int64_t e)
{
    reel_decoder *dec = r->dec;
    const reel_table *t = &dec->table;
    for (;;) {
        int rd = reel__interrupted(dec) ? AVERROR_EXIT : av_read_frame(dec->fmt, dec->pkt);
        if (rd == AVERROR(EAGAIN)) continue;
        if (rd >= 0) return 1;
        if (rd == AVERROR_EXIT) {
            abort_run(r);
            return reel__error_set(r->err, REEL_E_CANCELLED, "%s: interrupted before frame %lld", dec->name,
                                   (long long)reel__table_frame_near(t, e));
        }
        if (rd != AVERROR_EOF && reel__remote_failure(dec, r->err)) {
            abort_run(r);
            return r->err ? r->err->status : REEL_E_IO;
        }
        if (rd != AVERROR_EOF && dec->settings.corrupt_policy == REEL_CORRUPT_FAIL) {
            char eb[128];
            abort_run(r);
            return reel__error_set(r->err, REEL_E_CORRUPT, "%s: read error before frame %lld: %s", dec->name,
                                   (long long)reel__table_frame_near(t, e), reel__av_err(rd, eb, sizeof eb));
        }
        return 0;
    }
}

/* A packet that is not a frame of the table (trimmed by an edit list, or
 * before the first keyframe). Once decoding has started it may still be a
 * reference for later frames, so the codec gets it. Unrefs the packet. */
static int feed_unlisted(run *r, int landed)
{
    reel_decoder *dec = r->dec;
    int st = REEL_OK;
    if (landed && dec->decoder_dirty) {
        dec->avctx->skip_frame = AVDISCARD_DEFAULT;
        st = send_packet(r, dec->pkt, -1);
    }
    av_packet_unref(dec->pkt);
    if (st != REEL_OK) abort_run(r);
    return st;
}

/* First visit to keyframe s by a frame-threaded decoder: a copy of its
 * packet to check once on its own (see reel_decoder.probe) after the main
 * codec has it: its frame threads decode the keyframe while this thread
 * probes it, and they put out no frame before a few more packets, so
 * nothing reaches the visitor before the verdict. NULL: no check. */
static AVPacket *probe_begin(run *r, int64_t s)
{
    reel_decoder *dec = r->dec;
    if (r->seek_key != s || !dec->settings.check_keyframes || !(dec->avctx->active_thread_type & FF_THREAD_FRAME))
        return NULL;
    uint8_t *ks = reel__key_state(dec);
    if (!ks || (ks[s] & REEL_KEY_PROBED)) return NULL;
    ks[s] |= REEL_KEY_PROBED;
    r->st.keys_probed++;
    AVPacket *p = av_packet_clone(dec->pkt);
    /* a keyframe an edit list trims is decoded all the same: the probe must
     * see its picture (with the flag, the codec would drop it) */
    if (p) p->flags &= ~AV_PKT_FLAG_DISCARD;
    return p;
}

/* The probe's verdict on keyframe s (sent: the status of sending it to the
 * main codec): REEL_OK, or REEL__E_UNCLEAN_KEY with the run aborted. */
static int probe_end(run *r, int64_t s, AVPacket **probe_pkt, int sent)
{
    reel_decoder *dec = r->dec;
    uint64_t hash = 0;
    int clean = sent != REEL_OK || reel__key_decodes_alone(dec, *probe_pkt, &hash);
    if (clean && hash &&
        (dec->key_hash || (dec->key_hash = calloc((size_t)dec->table.n_decode, sizeof *dec->key_hash))))
        dec->key_hash[s] = hash;
    av_packet_free(probe_pkt);
    if (clean) return REEL_OK;
    abort_run(r);
    r->unclean = s;
    return REEL__E_UNCLEAN_KEY;
}

/* Runs decode positions [s, e], starting at keyframe s. The last run of a
 * call (`last`) is not drained when timestamps identify frames: it feeds
 * only the few packets reordering needs to push the wanted frames out and
 * leaves the codec warm, so a following call for later frames (a
 * frame-by-frame reader) continues without seeking or re-decoding. */
static int run_interval(run *r, int64_t s, int64_t e, int force_seek_start, int last)
{
    reel_decoder *dec = r->dec;
    const reel_table *t = &dec->table;
    AVPacket *pkt = dec->pkt;
    int landed, pump, st;
    int nonref_ok = dec->settings.skip_nonref && t->match_mode == REEL_MATCH_PTS;
    /* not for a remote object: the packets after e would be fetched for a
     * next call that a loader never makes; draining gives the same frames */
    int keep_warm = last && !r->cold && t->match_mode == REEL_MATCH_PTS && !dec->remote;
    if ((st = begin_interval(r, s, e, force_seek_start, &landed, &pump)) != REEL_OK) return st;
    int64_t budget = dec->reorder_depth + dec->avctx->thread_count + 2;
    int64_t tail = pump ? budget : -1; /* packets left to feed after e to push wanted frames out */
    if (pump && (keep_warm ? all_done(r) : span_done(r, s, e))) return REEL_OK;
    while (tail != 0) {
        int rd = read_packet(r, e);
        if (rd < 0) return rd;
        if (rd == 0) {
            dec->next_decode = -1;
            break;
        }
        if (pkt->stream_index != dec->stream_index || pkt->size == 0) {
            av_packet_unref(pkt);
            continue;
        }
        int64_t d = packet_decode_pos(dec, pkt);
        if (d < 0) {
            if ((st = feed_unlisted(r, landed)) != REEL_OK) return st;
            continue;
        }
        if (d < s) {
            av_packet_unref(pkt);
            continue;
        }
        AVPacket *probe_pkt = !landed && d == s ? probe_begin(r, s) : NULL;
        if (!landed) {
            if (d > s) {
                /* the demuxer jumped past our keyframe: go back to the start */
                av_packet_unref(pkt);
                if (force_seek_start)
                    return reel__error_set(r->err, REEL_E_INTERNAL, "%s: cannot seek to frame %lld", dec->name,
                                           (long long)reel__table_frame_near(t, s));
                return run_interval(r, s, e, 1, last);
            }
            landed = 1;
        }
        if (d > e && tail < 0) {
            /* continuing from a previous interval over a gap of unknown packets */
            av_packet_unref(pkt);
            dec->next_decode = -1;
            break;
        }
        int64_t fi = t->frame_of_decode[d];
        if (t->match_mode == REEL_MATCH_COUNT) {
            pkt->pts = t->pts_of_decode[d];
            r->count_in++;
        }
        /* in the tail nothing is skipped: the next call may want those frames */
        dec->avctx->skip_frame = (tail < 0 && nonref_ok && !find_wanted(r, fi)) ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
        st = send_packet(r, pkt, d);
        av_packet_unref(pkt);
        if (probe_pkt) {
            int verdict = probe_end(r, s, &probe_pkt, st);
            if (verdict != REEL_OK) return verdict;
        }
        if (st != REEL_OK) {
            abort_run(r);
            return st;
        }
        dec->next_decode = d + 1;
        if (tail > 0) tail--;
        if (d == e && tail < 0) {
            if (!keep_warm) break;
            tail = budget;
        }
        if (tail >= 0 && (keep_warm ? all_done(r) : span_done(r, s, e))) {
            dec->avctx->skip_frame = AVDISCARD_DEFAULT;
            if (!keep_warm) break;
            dec->warm = 1;
            return REEL_OK;
        }
    }
    dec->avctx->skip_frame = AVDISCARD_DEFAULT;
    return drain(r);
}

static int run_plan(run *r, int retry)
{
    reel_decoder *dec = r->dec;
    reel__interval *iv = malloc((r->nw ? r->nw : 1) * sizeof *iv);
    if (!iv) return reel__error_set(r->err, REEL_E_NOMEM, "%s: out of memory", dec->name);
    size_t m = reel__plan_runs(&dec->table, dec->key_state, dec->reorder_depth, r->w, r->nw, retry, iv);
    int st = REEL_OK;
    for (size_t i = 0; i < m && st == REEL_OK; i++) {
        reel__decoder_prefetch_run(dec, iv[i].s, iv[i].e);
        st = run_interval(r, iv[i].s, iv[i].e, 0, i + 1 == m);
    }
    free(iv);
    return st;
}

/* After a divergence of the frame threads: the codec reopened on one thread
 * for the rest of this decoder's life (once; a second divergence would be a
 * bug, reported as such). */
static int drop_threads(run *r)
{
    reel_decoder *dec = r->dec;
    abort_run(r);
    r->seek_key = -1;
    if (dec->threads_dropped)
        return reel__error_set(r->err, REEL_E_INTERNAL, "%s: a keyframe decodes differently even on one thread",
                               dec->name);
    AVCodecContext *one = NULL;
    int opening = 0;
    if (reel__codec_context(dec, 1, dec, &one, &opening) < 0)
        return reel__error_set(r->err, REEL_E_NOMEM, "%s: cannot reopen the decoder on one thread", dec->name);
    avcodec_free_context(&dec->avctx);
    dec->avctx = one;
    dec->threads_dropped = 1;
    r->st.thread_fallbacks++;
    dec->warm = 0;
    dec->next_decode = -1;
    reel__log_mark(dec);
    return REEL_OK;
}

static int decode_call(reel_decoder *dec, const int64_t *indices, size_t n, reel_frame_fn fn, void *opaque,
                       reel_decode_stats *stats, reel_error *err, int cold)
{
    if (!dec || !fn || (n && !indices))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_decode: NULL argument");
    reel_error_clear(&dec->remote_err); /* a failure of an earlier call is not this one's */
    const reel_table *t = &dec->table;
    run r = { .dec = dec, .fn = fn, .opaque = opaque, .err = err, .cold = cold };
    r.st.frames_requested = (int64_t)n;
    if (n == 0) {
        if (stats) *stats = r.st;
        return REEL_OK;
    }
    req *reqs = malloc(n * sizeof *reqs);
    wanted *w = malloc(n * sizeof *w);
    if (!reqs || !w) {
        free(reqs);
        free(w);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dec->name);
    }
    for (size_t i = 0; i < n; i++) {
        int64_t f = 0;
        if (reel__decoder_resolve_index(dec, indices[i], &f, err) != REEL_OK) {
            free(reqs);
            free(w);
            return REEL_E_OUT_OF_RANGE;
        }
        if (t->lost_at > 0 && f >= t->lost_at && dec->settings.corrupt_policy == REEL_CORRUPT_FAIL) {
            free(reqs);
            free(w);
            return reel__error_set(err, REEL_E_CORRUPT,
                                   "%s: frame %lld lies after a damaged stretch where packets are missing; "
                                   "without timestamps its index cannot be trusted",
                                   dec->name, (long long)f);
        }
        reqs[i].frame = f;
        reqs[i].pos = i;
    }
    size_t nw = reel__plan_requests(reqs, n, w);
    r.reqs = reqs;
    r.w = w;
    r.nw = nw;

    r.seek_key = -1;
    int st = serve_from_cache(&r);
    /* pass 1 starts one keyframe earlier for frames pass 0 did not produce */
    for (int pass = 0; pass < 2 && st == REEL_OK && r.st.frames_returned < (int64_t)nw; pass++) {
        st = run_plan(&r, pass);
        while (st == REEL__E_THREADS_DIVERGED || st == REEL__E_UNCLEAN_KEY) {
            if (st == REEL__E_THREADS_DIVERGED) {
                st = drop_threads(&r);
                if (st == REEL_OK) st = run_plan(&r, pass);
                continue;
            }
            /* give up on that keyframe for good, and plan what is left again;
             * each round marks another keyframe, so this ends */
            abort_run(&r);
            reel__log_flush(dec, 0); /* what that run logged concerns frames thrown away */
            r.seek_key = -1;
            uint8_t *ks = reel__key_state(dec);
            if (!ks) {
                st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dec->name);
                break;
            }
            if (ks[r.unclean] & REEL_KEY_UNCLEAN) {
                st = reel__error_set(err, REEL_E_INTERNAL, "%s: keyframe at decode position %lld tried twice",
                                     dec->name, (long long)r.unclean);
                break;
            }
            ks[r.unclean] |= REEL_KEY_UNCLEAN;
            r.st.key_restarts++;
            /* the plan now decodes through that keyframe from an earlier one;
             * frame threads may conceal its damage in silence there, so the
             * decoder goes on single-threaded */
            if (!dec->threads_dropped && (dec->avctx->active_thread_type & FF_THREAD_FRAME)) {
                st = drop_threads(&r);
                if (st != REEL_OK) break;
            }
            st = run_plan(&r, pass);
        }
    }
    if (st == REEL_OK && r.st.frames_returned < (int64_t)nw) {
        int64_t missing = -1;
        for (size_t i = 0; i < nw; i++)
            if (!w[i].done) {
                missing = w[i].frame;
                break;
            }
        st = reel__error_set(err, REEL_E_CORRUPT,
                             "%s: frame %lld could not be decoded (the file is damaged or truncated before it)",
                             dec->name, (long long)missing);
    }
    if (st != REEL_OK) {
        reset_decoder(dec);
        dec->next_decode = -1;
    }
    r.st.gop_contexts = r.st.frames_decoded > 0;
    int64_t skipped = r.st.packets_read - r.st.frames_decoded;
    r.st.frames_skipped = skipped > 0 ? skipped : 0;
    r.st.amplification = r.st.frames_returned ? (double)r.st.frames_decoded / (double)r.st.frames_returned : 0.0;
    if (stats) *stats = r.st;
    free(reqs);
    free(w);
    reel__log_flush(dec, 1);
    return st;
}

int reel_decoder_decode(reel_decoder *dec, const int64_t *indices, size_t n, reel_frame_fn fn, void *opaque,
                        reel_decode_stats *stats, reel_error *err)
{
    return decode_call(dec, indices, n, fn, opaque, stats, err, 0);
}

int reel__decoder_decode_cold(reel_decoder *dec, const int64_t *indices, size_t n, reel_frame_fn fn, void *opaque,
                              reel_decode_stats *stats, reel_error *err)
{
    return decode_call(dec, indices, n, fn, opaque, stats, err, 1);
}

int reel__decoder_release_pictures(reel_decoder *dec)
{
    /* The codec's frame pool keeps every picture it ever allocated until the
     * codec is freed (a 1080p H.264 DPB: about 22 MB), so the codec is
     * replaced by a fresh one of the same settings, which allocates nothing
     * until it decodes (about a millisecond to open). */
    AVCodecContext *fresh = NULL;
    int opening = 0;
    if (reel__codec_context(dec, dec->avctx->thread_count, dec, &fresh, &opening) < 0) return REEL_E_NOMEM;
    avcodec_free_context(&dec->avctx);
    dec->avctx = fresh;
    dec->decoder_dirty = 0;
    dec->warm = 0;
    dec->next_decode = -1;
    reel__log_mark(dec);
    return REEL_OK;
}
