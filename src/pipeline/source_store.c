/* source_store.c: the loader's source for packed-store records: stage 1
 * looks the record up and reads the sampled frames' bytes ("read"), stage 2
 * decodes them ("decode jpeg", "decode raw", "decode h264"). One store
 * reader per worker thread; the store itself is shared. */
#include "pipeline/source.h"
#include "store/store_internal.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

typedef struct store_sample {
    int64_t record;
    reel__store_blob blob;
    int (*interrupt)(void *opaque);
    void *interrupt_opaque;
} store_sample;

static int store_thread_init(void *ctx, const reel_source_open *o, void **tls, reel_error *err)
{
    reel_store_reader_settings s;
    reel_store_reader_default_settings(&s);
    s.decoder_threads = o->decoder_threads > 0 ? o->decoder_threads : 1;
    s.remote = o->remote;
    reel_store_reader *r = NULL;
    int st = reel_store_reader_create(&r, ((const reel_source_store_ctx *)ctx)->store, &s, err);
    *tls = r;
    return st;
}

static void store_thread_free(void *ctx, void *tls)
{
    (void)ctx;
    reel_store_reader *r = tls;
    reel_store_reader_destroy(&r);
}

static int store_open(void *ctx, void *tls, const reel_dataset_entry *entry, const reel_source_open *o, void **handle,
                      reel_source_info *info, reel_error *err)
{
    (void)tls;
    const reel_source_store_ctx *c = ctx;
    reel_store *s = c->store;
    int64_t record = entry->record;
    reel_store_record rec;
    int st = reel_store_get_record(s, record, &rec, err);
    if (st != REEL_OK) return st;
    if (rec.status != REEL_OK) {
        /* the recorded reason names the video already ("<path>: why") */
        const char *why = rec.reason ? rec.reason : "";
        size_t pl = strlen(rec.source_path);
        if (!strncmp(why, rec.source_path, pl) && !strncmp(why + pl, ": ", 2)) why += pl + 2;
        return reel__error_set(err, rec.status, "%s: not in the store %s (it failed to pack): %s", rec.source_path,
                               c->name, why);
    }
    store_sample *h = calloc(1, sizeof *h);
    if (!h) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", rec.source_path);
    h->record = record;
    h->interrupt = o->interrupt;
    h->interrupt_opaque = o->interrupt_opaque;
    reel_sampler_video *v = &info->video;
    v->table = reel_store_get_frame_table(s, record, &v->num_frames);
    v->time_base_num = rec.time_base_num;
    v->time_base_den = rec.time_base_den;
    v->average_fps = rec.avg_fps_den > 0 ? (double)rec.avg_fps_num / rec.avg_fps_den : 0;
    v->segment_start = 0; /* the segment was applied when packing */
    v->segment_end = -1;
    info->rotation = 0; /* stored upright */
    info->width = rec.width;
    info->height = rec.height;
    *handle = h;
    return REEL_OK;
}

static int store_prepare(void *ctx, void *tls, void *handle, const int64_t *indices, size_t n, reel_source_stats *st,
                         reel_error *err)
{
    (void)ctx;
    store_sample *h = handle;
    reel_store_read_stats rs = { 0 };
    reel__store_reader_set_interrupt(tls, h->interrupt, h->interrupt_opaque);
    int r = reel__store_fetch(tls, h->record, indices, n, &h->blob, &rs, err);
    st->bytes_read += rs.bytes_read;
    reel_remote_stats_add(&st->remote, &rs.remote);
    return r;
}

static int store_decode(void *ctx, void *tls, void *handle, const int64_t *indices, size_t n, reel_frame_fn fn,
                        reel__window_fn window, void *opaque, reel_source_stats *st, reel_error *err)
{
    (void)ctx;
    store_sample *h = handle;
    reel_store_read_stats rs = { 0 };
    reel__store_reader_set_interrupt(tls, h->interrupt, h->interrupt_opaque);
    int r = reel__store_decode(tls, &h->blob, indices, n, fn, window, opaque, &rs, err);
    st->frames_decoded += rs.frames_decoded;
    st->frames_returned += rs.frames_returned;
    return r;
}

static void store_close(void *ctx, void *handle)
{
    (void)ctx;
    store_sample *h = handle;
    if (!h) return;
    reel__store_blob_free(&h->blob);
    free(h);
}

/* Runs of dataset samples whose records lie in one shard. */
static int store_blocks(void *ctx, const reel_dataset_entry *entries, size_t n, int64_t **starts, size_t *nblocks,
                        reel_error *err)
{
    const reel_source_store_ctx *c = ctx;
    *starts = NULL;
    *nblocks = 0;
    if (n == 0) return REEL_OK;
    int64_t *b = malloc((n + 1) * sizeof *b);
    if (!b) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", c->name);
    size_t k = 0;
    const char *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        reel_store_record r;
        int st = reel_store_get_record(c->store, entries[i].record, &r, err);
        if (st != REEL_OK) {
            free(b);
            return st;
        }
        /* one name per shard file, shared by its records */
        if (!prev || strcmp(prev, r.shard) != 0) b[k++] = (int64_t)i;
        prev = r.shard;
    }
    b[k] = (int64_t)n;
    *starts = b;
    *nblocks = k;
    return REEL_OK;
}

/* At a URL too: the reader's I/O reads what the store names; the loader's
 * reel_source names stage 1 "fetch" there. */
const reel_source_ops reel__source_store = {
    "store",           { "read", "image decode" },
    store_thread_init, store_thread_free,
    store_open,        store_prepare,
    store_decode,      store_close,
    store_blocks,      NULL, /* no GOPs: each record frame is an image */
};
