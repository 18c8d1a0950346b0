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

#define SIDECAR_MAGIC   "REELIDX"
#define SIDECAR_VERSION 1u

typedef struct sidecar_header {
    char magic[8];
    uint32_t version;
    uint32_t endian; /* 0x01020304 as written */
    int64_t file_size;
    int64_t mtime_ns;
    int32_t stream_index;
    int32_t codec_id;
    int32_t match_mode;
    int32_t reserved;
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
             h.n < (INT64_C(1) << 31);
    /* the header's n is untrusted: the file must hold exactly n rows before
     * anything is allocated for them */
    if (ok) {
        long here = ftell(fp);
        ok = here >= 0 && fseek(fp, 0, SEEK_END) == 0;
        long end = ok ? ftell(fp) : -1;
        ok = ok && end >= here && (uint64_t)(end - here) == (uint64_t)h.n * sizeof *rows &&
             fseek(fp, here, SEEK_SET) == 0;
    }
    if (ok) {
        rows = malloc((size_t)h.n * sizeof *rows);
        ok = rows && fread(rows, sizeof *rows, (size_t)h.n, fp) == (size_t)h.n &&
             reel__fnv1a(REEL_FNV_OFFSET, rows, (size_t)h.n * sizeof *rows) == h.checksum;
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
    t->n = n;
    t->frames = malloc((size_t)n * sizeof *t->frames);
    t->dts = malloc((size_t)n * sizeof *t->dts);
    t->pts_of_decode = malloc((size_t)n * sizeof *t->pts_of_decode);
    t->frame_of_decode = malloc((size_t)n * sizeof *t->frame_of_decode);
    if (!t->frames || !t->dts || !t->pts_of_decode || !t->frame_of_decode) {
        free(rows);
        reel__table_free(t);
        return REEL_E_NOMEM;
    }
    for (int64_t d = 0; d < n; d++) t->frame_of_decode[d] = -1;
    for (int64_t i = 0; i < n; i++) {
        sidecar_row *r = &rows[i];
        if (r->decode_order < 0 || r->decode_order >= n || t->frame_of_decode[r->decode_order] != -1 ||
            r->duration <= 0 || r->duration > REEL_TS_LIMIT || r->pts < -REEL_TS_LIMIT || r->pts > REEL_TS_LIMIT ||
            (i > 0 && r->pts <= rows[i - 1].pts)) {
            free(rows);
            reel__table_free(t);
            return REEL_E_INDEX_STALE;
        }
        t->frames[i] = (reel_frame_entry){
            .pts = r->pts, .duration = r->duration, .pos = r->pos, .flags = r->flags, .decode_order = r->decode_order
        };
        t->frame_of_decode[r->decode_order] = i;
        t->dts[r->decode_order] = r->dts;
    }
    for (int64_t d = 0; d < n; d++) t->pts_of_decode[d] = t->frames[t->frame_of_decode[d]].pts;
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
    sidecar_row *rows = malloc((size_t)(t->n ? t->n : 1) * sizeof *rows);
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
    h.checksum = reel__fnv1a(REEL_FNV_OFFSET, rows, (size_t)t->n * sizeof *rows);

    size_t tl = strlen(path) + 32;
    char *tmp = malloc(tl);
    if (!tmp) {
        free(rows);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
    }
    snprintf(tmp, tl, "%s.tmp%ld", path, (long)getpid());
    FILE *fp = fopen(tmp, "wb");
    int ok = fp && fwrite(&h, sizeof h, 1, fp) == 1 && fwrite(rows, sizeof *rows, (size_t)t->n, fp) == (size_t)t->n;
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
