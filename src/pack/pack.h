/* pack.h: the builder's internals (src/pack): a build's context and one
 * record made from one dataset entry. The builder is the layer above the
 * pipeline and the store: it reads a dataset through the public dataset and
 * sampler API (reel/dataset.h, reel/sampler.h), decodes with the public
 * decoder, and writes through the store's writing side
 * (store/store_for_pack.h). Nothing below it calls it. */
#ifndef REEL_PACK_PACK_H
#define REEL_PACK_PACK_H

#include <stdint.h>

#include "reel/store.h"
#include "core/error.h"
#include "store/store_for_pack.h"

/* One dataset entry, read once before the workers start (the dataset is
 * not touched by them). Strings are the dataset's but `shown`. */
typedef struct reel__pack_entry {
    const char *path;       /* as given: what the decoder opens */
    const char *shown;      /* as messages and the store's record show it: a URL redacted
                               (read_entries' own copy), else == path */
    int64_t label;          /* the dataset's (class names: their sorted rank) */
    const char *class_name; /* NULL with integer labels */
    double start, end;      /* segment, seconds (end < 0: to the end) */
} reel__pack_entry;

/* What every worker of a build reads; immutable while they run. */
typedef struct reel__pack_ctx {
    const reel_pack_settings *s;
    reel__store_params params;
    const reel__pack_entry *entries; /* by dataset index */
    const int64_t *list;             /* the dataset indices of this part, in order */
    int64_t n;
} reel__pack_ctx;

/* Decodes dataset entry `sample` at the stored size and encodes the frames
 * it keeps into *rec and *bytes (rec is reset; free it with
 * reel__store_rec_free). A video that cannot be packed becomes the
 * record's status and reason, and REEL_OK is returned; only an internal
 * error (out of memory, cancelled) returns another status. */
int reel__pack_record(const reel__pack_ctx *c, int64_t sample, reel__encoder *enc, reel__store_rec *rec,
                      reel__bytes *bytes, reel_error *err);

#endif
