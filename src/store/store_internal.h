/* store_internal.h: the packed store's internals, for src/store alone: the
 * index and journal byte formats (docs/STORE.md), the JPEG window decoder and
 * the open store, which the formats (index.c), the encoders (encode.c), a
 * build's files (build.c) and the reader (read.c) share. What the modules
 * above use is store_for_pack.h (the builder) and store_for_pipeline.h (the
 * loader's store source, the dataset). */
#ifndef REEL_STORE_STORE_INTERNAL_H
#define REEL_STORE_STORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "reel/store.h"
#include "core/error.h"
#include "core/frame.h"
#include "store/store_for_pack.h"
#include "store/store_for_pipeline.h"

#define REEL_STORE_INDEX_NAME    "store.idx"
#define REEL_STORE_MAGIC         "REELSTOR"
#define REEL_STORE_JOURNAL_MAGIC "REELJRNL"
#define REEL_STORE_VERSION       1
#define REEL_STORE_VERSION_AUDIO \
    3 /* version 1 with audio: the header's audio settings, each entry's audio block
                                     and its damage (version 2, without the damage, is refused by name) */
#define REEL_STORE_HEADER_BYTES 128
#define REEL_STORE_REC_MAGIC    0x43455252u /* "RREC" little-endian */
#define REEL_STORE_FRAME_BYTES  40

/* Header block (REEL_STORE_HEADER_BYTES) with `magic` and the params. */
void reel__store_header_write(uint8_t *out, const char *magic, const reel__store_params *p, uint64_t num_records);
/* Parses a header; REEL_E_CORRUPT (message names `name`) when it is not one. */
int reel__store_header_parse(const uint8_t *in, size_t n, const char *magic, const char *name, reel__store_params *p,
                             uint64_t *num_records, reel_error *err);

/* Serialized size of a record entry (with its trailing CRC). */
size_t reel__store_rec_size(const reel__store_rec *r);
/* Writes the entry into out (reel__store_rec_size bytes). */
void reel__store_rec_write(uint8_t *out, const reel__store_rec *r);
/* Parses one entry at in[0..n) of a store with (`audio` 1: version 3) or
 * without audio: fills *r (allocating strings and frames; free with
 * reel__store_rec_free, store_for_pack.h) and *used. REEL_E_CORRUPT on any
 * bad length, CRC or value; the message names `name`. */
int reel__store_rec_parse(const uint8_t *in, size_t n, const char *name, int audio, reel__store_rec *r, size_t *used,
                          reel_error *err);

/* Parses a whole index file in memory: header, records, trailing CRC.
 * Pure function over a buffer (a fuzz target). *recs is an array of *n. */
int reel__store_index_parse(const uint8_t *in, size_t n, const char *name, reel__store_params *p,
                            reel__store_rec **recs, int64_t *nrec, reel_error *err);

/* "shard-PPPPP-SSSSS.bin" */
void reel__store_shard_name(char *out, size_t size, uint32_t part, uint32_t seq);

/* Joins dir and name into out ("dir/name"); 0 or -1 when too long. */
int reel__store_join(char *out, size_t size, const char *dir, const char *name);

/* A window of a stored JPEG (jpeg.c); one per reader thread. */
typedef struct reel__jpeg reel__jpeg;
int reel__jpeg_create(reel__jpeg **out);
void reel__jpeg_destroy(reel__jpeg **pj);
/* Decodes the part win = {x, y, w, h} of a w x h JPEG, scaled by 1/d (1, 2,
 * 4 or 8) and widened to whole iMCU columns (win is updated to what was
 * decoded, in scaled coordinates), into RGB24 rows owned by j (*pix,
 * *stride; valid until the next call). 0, or -1 with why. */
int reel__jpeg_decode_window(reel__jpeg *j, const uint8_t *src, size_t n, int w, int h, int d, int win[4],
                             const uint8_t **pix, int *stride, char *why, size_t why_size);

/* The open store (index in memory). */
struct reel_store {
    char *dir;
    reel__store_params params;
    reel__store_rec *recs;
    int64_t nrec;
    reel_frame_entry **tables; /* per record, built on open */
    char (*shard_names)[32];   /* per record */
    char **classes;            /* sorted unique class names */
    int64_t nclasses;
    int64_t nframes, nfailed, bytes;
    int nshards;
};

#endif
