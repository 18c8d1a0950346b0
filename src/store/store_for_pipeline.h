/* store_for_pipeline.h: what the pipeline asks of a packed store beyond the
 * public reader: the loader's store source fetches a sample's bytes in stage
 * 1 and decodes them in stage 2 (pipeline/source_store.c, read.c), and the
 * dataset tells a store's folder from a folder of videos (index.c). */
#ifndef REEL_STORE_STORE_FOR_PIPELINE_H
#define REEL_STORE_STORE_FOR_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "reel/store.h"
#include "core/frame.h"

/* 1 when the local folder `dir` holds a packed store's index, else 0. */
int reel__store_dir_has_index(const char *dir);

/* Bytes of some frames of one record, fetched by a reader (stage 1 of the
 * loader) and decoded later (stage 2), possibly by another reader. */
typedef struct reel__store_blob {
    int64_t record;
    uint8_t *data;
    size_t len, cap;
    int whole;    /* H264: the whole record */
    int64_t *u;   /* the distinct fetched positions, ascending */
    uint64_t *at; /* offset of each in data */
    size_t m, ucap;
} reel__store_blob;

/* Fetches the frames at `positions` (n, stored positions) of `record` into
 * *b; a position out of range is REEL_E_OUT_OF_RANGE naming the record. */
int reel__store_fetch(reel_store_reader *r, int64_t record, const int64_t *positions, size_t n, reel__store_blob *b,
                      reel_store_read_stats *stats, reel_error *err);
/* Decodes the fetched frames to fn. With `window` (may be NULL), a JPEG
 * frame is decoded only over the union of the windows its requests need. */
int reel__store_decode(reel_store_reader *r, const reel__store_blob *b, const int64_t *positions, size_t n,
                       reel_frame_fn fn, reel__window_fn window, void *opaque, reel_store_read_stats *stats,
                       reel_error *err);
void reel__store_blob_free(reel__store_blob *b);
/* What a clip [lo, hi) of record `record`'s stored audio window (it lies
 * inside it) says of the damage, as reel_audio says it of the video's:
 * w->valid_lo/hi (clip-relative, the record's stream part seen from the
 * clip), missing, missing_lo/hi, corrupt_packets, from the record's spans
 * (audio/damage.h). Only w's damage fields and valid are set. */
void reel__store_audio_clip_damage(const reel_store *s, int64_t record, int64_t lo, int64_t hi, reel_audio_window *w);
/* What REEL_CORRUPT_FAIL says of the clip [lo, hi) of record `record`'s
 * stored audio when damage touches it: the first such span's line of the
 * record's reason ("corrupt audio packet at T s: <the codec's reason>",
 * as the video's decode says it; *len bytes at the returned pointer, no
 * newline), or NULL (no damage there, or a store packed before the lines
 * were kept). */
const char *reel__store_audio_clip_fail(const reel_store *s, int64_t record, int64_t lo, int64_t hi, size_t *len);
/* The interrupt callback for the reader's next calls (the loader's per-sample one). */
void reel__store_reader_set_interrupt(reel_store_reader *r, int (*fn)(void *), void *opaque);

#endif
