/* store_internal.h: the packed store's internals: the in-memory record, the
 * index and journal byte formats (docs/STORE.md), checksums, and the pieces
 * that the formats (index.c), the encoders (encode.c), a build's files
 * (build.c), the reader (read.c) and the builder above the store (src/pack)
 * share. */
#ifndef REEL_STORE_STORE_INTERNAL_H
#define REEL_STORE_STORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "reel/store.h"
#include "core/error.h"
#include "core/frame.h"

#define REEL_STORE_INDEX_NAME    "store.idx"
#define REEL_STORE_MAGIC         "REELSTOR"
#define REEL_STORE_JOURNAL_MAGIC "REELJRNL"
#define REEL_STORE_VERSION       1
#define REEL_STORE_HEADER_BYTES  128
#define REEL_STORE_ALIGN         4096
#define REEL_STORE_REC_MAGIC     0x43455252u /* "RREC" little-endian */
#define REEL_STORE_FRAME_BYTES   40

/* One stored frame inside its record. */
typedef struct reel__store_frame {
    uint32_t offset, length; /* bytes inside the record */
    uint32_t crc;            /* CRC-32 of those bytes */
    uint32_t flags;          /* REEL_FRAME_KEY */
    int64_t source_index;    /* frame index in the source video */
    int64_t pts, duration;   /* source pts and duration, source time base */
} reel__store_frame;

/* One record: a video (or segment) and where its bytes are. */
typedef struct reel__store_rec {
    int64_t sample; /* dataset index of the source */
    uint32_t part, shard_seq;
    uint64_t offset, length; /* in the shard */
    uint32_t crc;            /* CRC-32 of the record's bytes */
    int32_t status;          /* REEL_OK or why it failed to pack */
    int64_t label;
    int64_t source_num_frames;
    uint32_t num_frames, width, height;
    int32_t tb_num, tb_den, fps_num, fps_den;
    int64_t source_size, source_mtime_ns;
    double seg_start, seg_end;
    char *path, *reason, *class_name;
    reel__store_frame *frames;
} reel__store_rec;

/* The build settings that the index and every journal carry. */
typedef struct reel__store_params {
    uint32_t format, zstd_level;
    int32_t short_side, width, height, quality, gop, crf, every;
    uint32_t part_count;
    double fps;
    uint64_t shard_size;
    /* whole-video sampling (reel_pack_settings.sampler; 0: none, then the
     * other three are 0) */
    int32_t sampler, min_frames, max_frames, frames, frame_factor;
} reel__store_params;

uint32_t reel__crc32(uint32_t crc, const void *data, size_t n);

/* Settings -> the params block (part_count included). */
void reel__store_params_from(reel__store_params *p, const reel_pack_settings *s);

/* Header block (REEL_STORE_HEADER_BYTES) with `magic` and the params. */
void reel__store_header_write(uint8_t *out, const char *magic, const reel__store_params *p, uint64_t num_records);
/* Parses a header; REEL_E_CORRUPT (message names `name`) when it is not one. */
int reel__store_header_parse(const uint8_t *in, size_t n, const char *magic, const char *name, reel__store_params *p,
                             uint64_t *num_records, reel_error *err);

/* Serialized size of a record entry (with its trailing CRC). */
size_t reel__store_rec_size(const reel__store_rec *r);
/* Writes the entry into out (reel__store_rec_size bytes). */
void reel__store_rec_write(uint8_t *out, const reel__store_rec *r);
/* Parses one entry at in[0..n): fills *r (allocating strings and frames;
 * free with reel__store_rec_free) and *used. REEL_E_CORRUPT on any bad
 * length, CRC or value; the message names `name`. */
int reel__store_rec_parse(const uint8_t *in, size_t n, const char *name, reel__store_rec *r, size_t *used,
                          reel_error *err);
void reel__store_rec_free(reel__store_rec *r);

/* Parses a whole index file in memory: header, records, trailing CRC.
 * Pure function over a buffer (a fuzz target). *recs is an array of *n. */
int reel__store_index_parse(const uint8_t *in, size_t n, const char *name, reel__store_params *p,
                            reel__store_rec **recs, int64_t *nrec, reel_error *err);

/* "shard-PPPPP-SSSSS.bin" */
void reel__store_shard_name(char *out, size_t size, uint32_t part, uint32_t seq);

/* Joins dir and name into out ("dir/name"); 0 or -1 when too long. */
int reel__store_join(char *out, size_t size, const char *dir, const char *name);

/* Encoders (encode.c). The frame source is `n` RGB24 HWC images of w x h
 * at `rgb`, `stride` bytes apart. Output appends to a growable buffer. */
typedef struct reel__bytes {
    uint8_t *data;
    size_t len, cap;
} reel__bytes;
int reel__bytes_reserve(reel__bytes *b, size_t extra);
void reel__bytes_free(reel__bytes *b);

typedef struct reel__encoder reel__encoder;
/* REEL_OK where this FFmpeg has the libx264 encoder the h264 format needs;
 * else REEL_E_UNSUPPORTED_CODEC with a message that says how to get it. */
int reel__encoder_h264_check(const char *name, reel_error *err);
int reel__encoder_create(reel__encoder **out, const reel__store_params *p, reel_error *err);
void reel__encoder_destroy(reel__encoder **e);
/* Starts a record of w x h frames (for H264: a new stream). */
int reel__encoder_begin(reel__encoder *e, int w, int h, const char *name, reel_error *err);
/* Adds frames; for JPEG/RAW their payloads go to out at once and the frame
 * offsets/lengths are set; for H264 they are buffered in the encoder. */
int reel__encoder_add(reel__encoder *e, const uint8_t *rgb, size_t stride, int64_t first, int n,
                      reel__store_frame *frames, reel__bytes *out, const char *name, reel_error *err);
/* Ends the record (H264: flushes the encoder and writes the stream). */
int reel__encoder_end(reel__encoder *e, reel__store_frame *frames, int64_t nframes, reel__bytes *out, const char *name,
                      reel_error *err);

/* Writing one part of a build (build.c): its journal and shard files. */
typedef struct reel__store_part {
    const char *dir;
    int part, count;
    int jfd; /* the journal */
    int64_t jlen;
    int sfd; /* the current shard */
    uint32_t seq;
    int64_t off; /* end of the current shard's data */
    uint64_t shard_size;
} reel__store_part;

/* Creates dir (and its parents) and opens part `part` of `count` for
 * writing records of the dataset indices `list` (n, in order). A journal of
 * the part from a killed build with the same params is resumed: its torn
 * last entry dropped, the shard truncated after its last journaled record,
 * later shards deleted; *done is how many of `list` are already written. A
 * journal written with other params is REEL_E_INVALID_ARG. */
int reel__store_part_open(reel__store_part *o, const char *dir, int part, int count, const reel__store_params *p,
                          const int64_t *list, int64_t n, int64_t *done, reel_error *err);
/* Appends a record: its bytes (b, may be empty) at the next 4 KiB boundary
 * of the current shard, or at the start of a new one when they would pass
 * the shard size, synced; then its entry to the journal, synced. Sets
 * rec->part, shard_seq and offset. */
int reel__store_part_write(reel__store_part *o, reel__store_rec *rec, const reel__bytes *b, reel_error *err);
/* Closes the part's files; with records >= 0 (the part is complete), writes
 * its done marker holding that count. */
int reel__store_part_close(reel__store_part *o, int64_t records, reel_error *err);

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

int reel__store_fetch(reel_store_reader *r, int64_t record, const int64_t *positions, size_t n, reel__store_blob *b,
                      reel_store_read_stats *stats, reel_error *err);
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

/* Decodes the fetched frames to fn. With `window` (may be NULL), a JPEG
 * frame is decoded only over the union of the windows its requests need. */
int reel__store_decode(reel_store_reader *r, const reel__store_blob *b, const int64_t *positions, size_t n,
                       reel_frame_fn fn, reel__window_fn window, void *opaque, reel_store_read_stats *stats,
                       reel_error *err);
void reel__store_blob_free(reel__store_blob *b);
/* The interrupt callback for the reader's next calls (the loader's per-sample one). */
void reel__store_reader_set_interrupt(reel_store_reader *r, int (*fn)(void *), void *opaque);

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
