/* sidecar.c: the persistent frame index ("<video>.reelidx"), so reopening a
 * large dataset costs no scan. Validated against the video's size, mtime,
 * stream and codec, and a checksum; written atomically (temp + rename). */
#include "decoder/internal.h"
#include "core/hash.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIDECAR_MAGIC "REELIDX"
/* 2: the packets an edit list trims (decoded, never shown) follow the
 * frames as hidden rows, and decode_order counts them. A version 1 file is
 * stale (its table left them out) and is rebuilt. */
#define SIDECAR_VERSION 2u

typedef struct sidecar_header {
    char magic[8];
    uint32_t version;
    uint32_t endian; /* 0x01020304 as written */
    int64_t file_size;
    int64_t mtime_ns;
    int32_t stream_index;
    int32_t codec_id;
    int32_t match_mode;
    int32_t hidden; /* hidden rows after the n frame rows */
    int64_t n;
    uint64_t checksum; /* FNV-1a over the body */
} sidecar_header;

typedef struct sidecar_row {
    int64_t pts, duration, pos, dts;
    int32_t flags, decode_order;
} sidecar_row;


int reel__sidecar_load(reel_decoder *dec, const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return REEL_E_INDEX_STALE;
    sidecar_header h;
    sidecar_row *rows = NULL;
    int ok = fread(&h, sizeof h, 1, fp) == 1 && !memcmp(h.magic, SIDECAR_MAGIC, 8) && h.version == SIDECAR_VERSION &&
             h.endian == 0x01020304u && h.file_size == dec->file_size && h.mtime_ns == dec->file_mtime_ns &&
             h.stream_index == dec->stream_index && h.codec_id == (int32_t)dec->st->codecpar->codec_id &&
             (h.match_mode == REEL_MATCH_PTS || h.match_mode == REEL_MATCH_COUNT) && h.n > 0 &&
             h.n < (INT64_C(1) << 31) && h.hidden >= 0 && (h.hidden == 0 || h.match_mode == REEL_MATCH_PTS);
    const int64_t nd = ok ? h.n + h.hidden : 0; /* rows: frames, then hidden packets */
    /* the header's n is untrusted: the file must hold exactly n rows before
     * anything is allocated for them */
    if (ok) {
        long here = ftell(fp);
        ok = here >= 0 && fseek(fp, 0, SEEK_END) == 0;
        long end = ok ? ftell(fp) : -1;
        ok = ok && end >= here && (uint64_t)(end - here) == (uint64_t)nd * sizeof *rows &&
             fseek(fp, here, SEEK_SET) == 0;
    }
    if (ok) {
        rows = malloc((size_t)nd * sizeof *rows);
        ok = rows && fread(rows, sizeof *rows, (size_t)nd, fp) == (size_t)nd &&
             reel__fnv1a(REEL_FNV_OFFSET, rows, (size_t)nd * sizeof *rows) == h.checksum;
        /* nothing may follow */
        ok = ok && fgetc(fp) == EOF;
    }
    fclose(fp);
    if (!ok) {
        free(rows);
        return REEL_E_INDEX_STALE;
    }

    reel_table *t = &dec->table;
    reel__table_free(t);
    int64_t n = h.n;
    if (reel__table_alloc(t, n, nd) != REEL_OK) {
        free(rows);
        reel__table_free(t);
        return REEL_E_NOMEM;
    }
    for (int64_t i = 0; i < nd; i++) {
        sidecar_row *r = &rows[i];
        const int shown = i < n;
        if (r->decode_order < 0 || r->decode_order >= nd || t->key_of_decode[r->decode_order] & 2 ||
            (shown && (r->duration <= 0 || r->duration > REEL_TS_LIMIT)) || r->pts < -REEL_TS_LIMIT ||
            r->pts > REEL_TS_LIMIT || (shown && i > 0 && r->pts <= rows[i - 1].pts)) {
            free(rows);
            reel__table_free(t);
            return REEL_E_INDEX_STALE;
        }
        if (shown)
            t->frames[i] = (reel_frame_entry){ .pts = r->pts,
                                               .duration = r->duration,
                                               .pos = r->pos,
                                               .flags = r->flags,
                                               .decode_order = r->decode_order };
        t->frame_of_decode[r->decode_order] = shown ? i : -1;
        t->dts[r->decode_order] = r->dts;
        t->pts_of_decode[r->decode_order] = r->pts;
        t->pos_of_decode[r->decode_order] = r->pos;
        t->key_of_decode[r->decode_order] = 2 | ((r->flags & REEL_FRAME_KEY) != 0); /* 2: seen */
    }
    for (int64_t d = 0; d < nd; d++) t->key_of_decode[d] &= 1;
    /* hidden packets are found by their pts: one each, unlike any other */
    if (reel__table_index_hidden(t) != REEL_OK) {
        free(rows);
        reel__table_free(t);
        return REEL_E_INDEX_STALE;
    }
    free(rows);
    t->match_mode = h.match_mode;
    t->source = REEL_INDEX_FROM_SIDECAR;
    reel_error e;
    if (reel__table_finish(dec, &e) != REEL_OK) {
        reel__table_free(t);
        return REEL_E_INDEX_STALE;
    }
    return REEL_OK;
}

int reel__sidecar_save(const reel_decoder *dec, const char *path, reel_error *err)
{
    const reel_table *t = &dec->table;
    if (!dec->is_file && !dec->remote_sidecar)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: sidecar indexes are for files, and for URLs with an index cache "
                               "(REEL_INDEX_CACHE) whose server gives an ETag or Last-Modified",
                               dec->name);
    const int64_t nd = t->n + t->n_hidden;
    sidecar_row *rows = malloc((size_t)(nd ? nd : 1) * sizeof *rows);
    if (!rows) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
    for (int64_t i = 0; i < t->n; i++) {
        const reel_frame_entry *f = &t->frames[i];
        memset(&rows[i], 0, sizeof rows[i]);
        rows[i].pts = f->pts;
        rows[i].duration = f->duration;
        rows[i].pos = f->pos;
        rows[i].dts = t->dts[f->decode_order];
        rows[i].flags = f->flags;
        rows[i].decode_order = f->decode_order;
    }
    for (int64_t k = 0; k < t->n_hidden; k++) {
        const int64_t d = t->hidden[k];
        sidecar_row *r = &rows[t->n + k];
        memset(r, 0, sizeof *r);
        r->pts = t->pts_of_decode[d];
        r->pos = t->pos_of_decode[d];
        r->dts = t->dts[d];
        r->flags = t->key_of_decode[d] ? REEL_FRAME_KEY : 0;
        r->decode_order = (int32_t)d;
    }
    sidecar_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, SIDECAR_MAGIC, 8);
    h.version = SIDECAR_VERSION;
    h.endian = 0x01020304u;
    h.file_size = dec->file_size;
    h.mtime_ns = dec->file_mtime_ns;
    h.stream_index = dec->stream_index;
    h.codec_id = (int32_t)dec->st->codecpar->codec_id;
    h.match_mode = t->match_mode;
    h.n = t->n;
    h.hidden = (int32_t)t->n_hidden;
    h.checksum = reel__fnv1a(REEL_FNV_OFFSET, rows, (size_t)nd * sizeof *rows);

    size_t tl = strlen(path) + 32;
    char *tmp = malloc(tl);
    if (!tmp) {
        free(rows);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
    }
    snprintf(tmp, tl, "%s.tmp%ld", path, (long)getpid());
    FILE *fp = fopen(tmp, "wb");
    int ok = fp && fwrite(&h, sizeof h, 1, fp) == 1 && fwrite(rows, sizeof *rows, (size_t)nd, fp) == (size_t)nd;
    int saved_errno = errno;
    if (fp && fclose(fp) != 0) ok = 0;
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        saved_errno = errno;
    }
    if (!ok) unlink(tmp);
    free(tmp);
    free(rows);
    if (!ok) return reel__error_set(err, REEL_E_IO, "%s: cannot write index: %s", path, strerror(saved_errno));
    return REEL_OK;
}
