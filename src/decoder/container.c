/* container.c: the frame table from the container's own index (mp4/mov
 * sample tables), so opening reads a few kilobytes instead of every packet.
 * FFmpeg's index gives dts, position, size and sync flags per sample (after
 * edit lists); the composition offsets (ctts) and durations (stts) are read
 * from the track's boxes here, matched by byte position, and the result is
 * checked against the first real packets before it is trusted. */
#include "decoder/internal.h"
#include "io/io_front.h"

#include <stdlib.h>
#include <string.h>

#define FOURCC(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d))
#define VALIDATE_PACKETS   48

typedef struct box {
    int64_t start, end;
    uint32_t type;
} box;

/* Reads the header of the box at the current position; 0 on success. */
static int box_read(AVIOContext *pb, int64_t limit, box *b)
{
    int64_t start = avio_tell(pb);
    if (start + 8 > limit) return -1;
    uint64_t size = avio_rb32(pb);
    b->type = avio_rb32(pb);
    int64_t hdr = 8;
    if (size == 1) {
        size = avio_rb64(pb);
        hdr = 16;
    } else if (size == 0)
        size = (uint64_t)(limit - start);
    if (size < (uint64_t)hdr || start + (int64_t)size > limit || pb->error || avio_feof(pb)) return -1;
    b->start = start + hdr;
    b->end = start + (int64_t)size;
    return 0;
}

/* Finds the first child box of `type` inside [start, end); 0 on success. */
static int box_find(AVIOContext *pb, int64_t start, int64_t end, uint32_t type, box *out)
{
    if (avio_seek(pb, start, SEEK_SET) < 0) return -1;
    while (avio_tell(pb) + 8 <= end) {
        box b;
        if (box_read(pb, end, &b)) return -1;
        if (b.type == type) {
            *out = b;
            return 0;
        }
        if (avio_seek(pb, b.end, SEEK_SET) < 0) return -1;
    }
    return -1;
}

typedef struct track_tables {
    int64_t n;      /* samples */
    int64_t *pos;   /* per sample, file offset */
    int32_t *ctts;  /* per sample composition offset */
    int64_t *delta; /* per sample stts duration */
} track_tables;

static void tables_free(track_tables *t)
{
    free(t->pos);
    free(t->ctts);
    free(t->delta);
    memset(t, 0, sizeof *t);
}

static int read_stbl(AVIOContext *pb, const box *stbl, track_tables *tt)
{
    box b;
    /* sample sizes */
    if (box_find(pb, stbl->start, stbl->end, FOURCC('s', 't', 's', 'z'), &b)) return -1;
    avio_rb32(pb);
    uint32_t uniform = avio_rb32(pb), count = avio_rb32(pb);
    if (count == 0 || count > (1u << 26)) return -1;
    int64_t n = count;
    int64_t *sizes = malloc((size_t)n * sizeof *sizes);
    tt->pos = malloc((size_t)n * sizeof *tt->pos);
    tt->ctts = calloc((size_t)n, sizeof *tt->ctts);
    tt->delta = calloc((size_t)n, sizeof *tt->delta);
    if (!sizes || !tt->pos || !tt->ctts || !tt->delta) {
        free(sizes);
        return -1;
    }
    tt->n = n;
    for (int64_t i = 0; i < n; i++) sizes[i] = uniform ? uniform : avio_rb32(pb);
    if (pb->error) {
        free(sizes);
        return -1;
    }

    /* chunk offsets */
    int co64 = 0;
    if (box_find(pb, stbl->start, stbl->end, FOURCC('s', 't', 'c', 'o'), &b)) {
        if (box_find(pb, stbl->start, stbl->end, FOURCC('c', 'o', '6', '4'), &b)) {
            free(sizes);
            return -1;
        }
        co64 = 1;
    }
    avio_rb32(pb);
    uint32_t nchunks = avio_rb32(pb);
    if (nchunks == 0 || nchunks > (1u << 26)) {
        free(sizes);
        return -1;
    }
    int64_t *chunk = malloc((size_t)nchunks * sizeof *chunk);
    if (!chunk) {
        free(sizes);
        return -1;
    }
    for (uint32_t i = 0; i < nchunks; i++) chunk[i] = co64 ? (int64_t)avio_rb64(pb) : (int64_t)avio_rb32(pb);

    /* sample-to-chunk: walk chunks, place samples */
    int ok = !box_find(pb, stbl->start, stbl->end, FOURCC('s', 't', 's', 'c'), &b);
    uint32_t nstsc = 0;
    uint32_t *first = NULL, *per = NULL;
    if (ok) {
        avio_rb32(pb);
        nstsc = avio_rb32(pb);
        ok = nstsc > 0 && nstsc < (1u << 24);
        first = ok ? malloc(nstsc * sizeof *first) : NULL;
        per = ok ? malloc(nstsc * sizeof *per) : NULL;
        ok = ok && first && per;
        for (uint32_t i = 0; ok && i < nstsc; i++) {
            first[i] = avio_rb32(pb);
            per[i] = avio_rb32(pb);
            avio_rb32(pb);
        }
    }
    int64_t s = 0;
    for (uint32_t e = 0; ok && e < nstsc; e++) {
        uint32_t c0 = first[e], c1 = e + 1 < nstsc ? first[e + 1] : nchunks + 1;
        if (c0 < 1 || c1 < c0 || c1 > nchunks + 1) {
            ok = 0;
            break;
        }
        for (uint32_t c = c0; c < c1 && s < n; c++) {
            int64_t off = chunk[c - 1];
            for (uint32_t k = 0; k < per[e] && s < n; k++) {
                tt->pos[s] = off;
                off += sizes[s];
                s++;
            }
        }
    }
    ok = ok && s == n && !pb->error;
    free(first);
    free(per);
    free(chunk);
    free(sizes);
    if (!ok) return -1;

    /* decode deltas */
    if (box_find(pb, stbl->start, stbl->end, FOURCC('s', 't', 't', 's'), &b)) return -1;
    avio_rb32(pb);
    uint32_t nstts = avio_rb32(pb);
    s = 0;
    for (uint32_t e = 0; e < nstts && s < n; e++) {
        uint32_t cnt = avio_rb32(pb), d = avio_rb32(pb);
        for (uint32_t k = 0; k < cnt && s < n; k++) tt->delta[s++] = d;
    }
    /* composition offsets (absent without B-frames: all zero) */
    if (!box_find(pb, stbl->start, stbl->end, FOURCC('c', 't', 't', 's'), &b)) {
        avio_rb32(pb);
        uint32_t nctts = avio_rb32(pb);
        s = 0;
        for (uint32_t e = 0; e < nctts && s < n; e++) {
            uint32_t cnt = avio_rb32(pb);
            int32_t off = (int32_t)avio_rb32(pb);
            for (uint32_t k = 0; k < cnt && s < n; k++) tt->ctts[s++] = off;
        }
    }
    return pb->error ? -1 : 0;
}

/* Reads the sample tables of the trak whose track_ID is `id`. */
static int read_track(AVIOContext *pb, int64_t file_end, int id, track_tables *tt)
{
    box moov, trak, b;
    if (box_find(pb, 0, file_end, FOURCC('m', 'o', 'o', 'v'), &moov)) return -1;
    /* fragmented files keep samples outside moov */
    if (!box_find(pb, moov.start, moov.end, FOURCC('m', 'v', 'e', 'x'), &b)) return -1;
    int64_t at = moov.start;
    for (;;) {
        if (box_find(pb, at, moov.end, FOURCC('t', 'r', 'a', 'k'), &trak)) return -1;
        at = trak.end;
        if (box_find(pb, trak.start, trak.end, FOURCC('t', 'k', 'h', 'd'), &b)) continue;
        int version = avio_r8(pb);
        avio_skip(pb, 3 + (version == 1 ? 16 : 8));
        if ((int)avio_rb32(pb) != id) continue;
        box mdia, minf, stbl;
        if (box_find(pb, trak.start, trak.end, FOURCC('m', 'd', 'i', 'a'), &mdia) ||
            box_find(pb, mdia.start, mdia.end, FOURCC('m', 'i', 'n', 'f'), &minf) ||
            box_find(pb, minf.start, minf.end, FOURCC('s', 't', 'b', 'l'), &stbl))
            return -1;
        return read_stbl(pb, &stbl, tt);
    }
}

typedef struct pos_idx {
    int64_t pos;
    int64_t sample;
} pos_idx;

static int cmp_pos(const void *a, const void *b)
{
    const pos_idx *x = a, *y = b;
    return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

/* The first packets (up to VALIDATE_PACKETS of the `ne` index entries), as
 * the demuxer really returns them (the demuxer is still at the start here).
 * A remote object: only those among the bytes fetched already (the head; at
 * least one packet), so checking the index costs no request for the first
 * GOP's packets. Returns how many, or -1 when out of memory. */
static int probe_packets(reel_decoder *dec, int ne, reel_packet_info probe[VALIDATE_PACKETS])
{
    AVStream *st = dec->st;
    int nprobe = 0;
    AVPacket *pkt = av_packet_alloc();
    if (!pkt) return -1;
    while (nprobe < VALIDATE_PACKETS && nprobe < ne) {
        const AVIndexEntry *next = avformat_index_get_entry(st, nprobe);
        if (dec->remote && nprobe > 0 && (!next || !reel__io_is_held(dec->remote, next->pos, next->size))) break;
        int e = av_read_frame(dec->fmt, pkt);
        if (e < 0) break;
        if (pkt->stream_index == dec->stream_index) {
            probe[nprobe++] = (reel_packet_info){ .pts = pkt->pts,
                                                  .dts = pkt->dts,
                                                  .duration = pkt->duration,
                                                  .pos = pkt->pos,
                                                  .size = pkt->size,
                                                  .key = (pkt->flags & AV_PKT_FLAG_KEY) != 0,
                                                  .discard = (pkt->flags & AV_PKT_FLAG_DISCARD) != 0 };
        }
        av_packet_unref(pkt);
    }
    av_packet_free(&pkt);
    return nprobe;
}

int reel__table_from_container(reel_decoder *dec)
{
    const char *names = dec->fmt->iformat->name;
    if (!strstr(names, "mov") && !strstr(names, "mp4")) return REEL_E_INDEX_STALE;
    AVStream *st = dec->st;
    int ne = avformat_index_get_entries_count(st);
    if (ne <= 0 || dec->file_size <= 0) return REEL_E_INDEX_STALE;

    /* 1. The first packets, as the demuxer returns them. */
    reel_packet_info probe[VALIDATE_PACKETS];
    int nprobe = probe_packets(dec, ne, probe);
    if (nprobe < 0) return REEL_E_NOMEM;
    if (nprobe == 0) return REEL_E_INDEX_STALE;

    /* 2. The track's own sample tables. */
    track_tables tt = { 0 };
    pos_idx *byp = NULL;
    reel_packet_info *pk = NULL;
    int ok = !read_track(dec->fmt->pb, dec->file_size, st->id, &tt);
    if (ok) {
        byp = malloc((size_t)tt.n * sizeof *byp);
        pk = malloc((size_t)ne * sizeof *pk);
        ok = byp && pk;
    }
    for (int64_t i = 0; ok && i < tt.n; i++) {
        byp[i].pos = tt.pos[i];
        byp[i].sample = i;
    }
    if (ok) qsort(byp, (size_t)tt.n, sizeof *byp, cmp_pos);

    /* 3. Packets in decode order from FFmpeg's index + our ctts/stts. */
    int64_t np = 0, offset = 0;
    for (int i = 0; ok && i < ne; i++) {
        const AVIndexEntry *e = avformat_index_get_entry(st, i);
        if (!e || e->pos < 0 || e->size <= 0 || e->pos + e->size > dec->file_size) {
            ok = 0;
            break;
        }
        size_t lo = 0, hi = (size_t)tt.n;
        while (lo < hi) {
            size_t m = (lo + hi) / 2;
            if (byp[m].pos < e->pos)
                lo = m + 1;
            else
                hi = m;
        }
        if (lo >= (size_t)tt.n || byp[lo].pos != e->pos) {
            ok = 0;
            break;
        }
        int64_t smp = byp[lo].sample;
        reel_packet_info p = { .dts = e->timestamp,
                               .pos = e->pos,
                               .size = e->size,
                               .key = (e->flags & AVINDEX_KEYFRAME) != 0,
                               .discard = (e->flags & AVINDEX_DISCARD_FRAME) != 0,
                               .duration = tt.delta[smp],
                               .pts = e->timestamp + tt.ctts[smp] };
        pk[np++] = p;
    }
    /* 4. Calibrate FFmpeg's constant composition shift on the first packet
     *    and require every probed packet to agree exactly. */
    /* Key flags come from the sync-sample table (stss), which is the
     * container's statement; a parser may clear them on damaged data, so
     * they are not compared. */
    if (ok && np >= nprobe) {
        offset = probe[0].pts - pk[0].pts;
        for (int i = 0; i < nprobe && ok; i++)
            ok = pk[i].pos == probe[i].pos && pk[i].dts == probe[i].dts && pk[i].size == probe[i].size &&
                 pk[i].pts + offset == probe[i].pts && pk[i].discard == probe[i].discard;
    } else {
        ok = 0;
    }
    /* 5. Every packet, the DISCARD ones too: they are decoded, never shown,
     *    and the frames shown may need them (the table keeps them hidden). */
    for (int64_t i = 0; ok && i < np; i++) pk[i].pts += offset;
    int r = REEL_E_INDEX_STALE;
    if (ok) {
        reel_error e;
        reel__table_free(&dec->table);
        if (reel__table_from_packet_list(dec, pk, np, &e) == REEL_OK) {
            dec->table.source = REEL_INDEX_FROM_CONTAINER;
            r = REEL_OK;
        } else {
            reel__table_free(&dec->table);
        }
    }
    free(byp);
    free(pk);
    tables_free(&tt);
    /* the scan that may follow must start from the first packet again */
    if (r != REEL_OK) {
        const AVIndexEntry *e0 = avformat_index_get_entry(st, 0);
        if (e0) av_seek_frame(dec->fmt, dec->stream_index, e0->timestamp, AVSEEK_FLAG_BACKWARD | AVSEEK_FLAG_ANY);
    }
    return r;
}
