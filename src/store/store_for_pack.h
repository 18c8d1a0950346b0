/* store_for_pack.h: the store's writing side, which the builder above it
 * (src/pack) drives: the record and the build settings a store keeps, the
 * encoders, and one part's journal and shard files (build.c, encode.c). */
#ifndef REEL_STORE_STORE_FOR_PACK_H
#define REEL_STORE_STORE_FOR_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "audio/damage.h"
#include "reel/store.h"

/* Records start on this boundary of their shard; the least shard size. */
#define REEL_STORE_ALIGN 4096

/* One stored frame inside its record. */
typedef struct reel__store_frame {
    uint32_t offset, length; /* bytes inside the record */
    uint32_t crc;            /* CRC-32 of those bytes */
    uint32_t flags;          /* REEL_FRAME_KEY */
    int64_t source_index;    /* frame index in the source video */
    int64_t pts, duration;   /* source pts and duration, source time base */
} reel__store_frame;

/* The samples of a record's frames (its entry's bytes 136-139: u16 kind,
 * u16 depth): RGB24; 8-bit gray; RGB48LE (ffmpeg's rgb48le); gray codes of
 * `depth` bits (9..16) in 16-bit little-endian words. */
enum { REEL__STORE_PIX_RGB24 = 0, REEL__STORE_PIX_GRAY8 = 1, REEL__STORE_PIX_RGB48 = 2, REEL__STORE_PIX_GRAY16 = 3 };

/* Bytes per pixel of a kind (0: unknown). */
static inline size_t reel__store_pixel_bytes(int kind)
{
    return kind == REEL__STORE_PIX_RGB24    ? 3
           : kind == REEL__STORE_PIX_GRAY8  ? 1
           : kind == REEL__STORE_PIX_RGB48  ? 6
           : kind == REEL__STORE_PIX_GRAY16 ? 2
                                            : 0;
}

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
    uint16_t pixels; /* REEL__STORE_PIX_*: what its frames hold */
    uint16_t depth;  /* GRAY16: bits of a code (9..16); else 0 */
    /* The audio block (docs/STORE.md), in every entry of a store packed
     * with audio (reel__store_params.audio) and in no other: the samples
     * s(T0) .. s(T1) - 1 of the stored frames' window [T0, T1), float32
     * [audio_channels, audio_samples] little-endian, audio_length bytes at
     * audio_offset of the record (after its frames), checksum audio_crc.
     * audio_status REEL_OK; REEL_E_NO_AUDIO_STREAM (the video has none: no
     * samples, the loader's `missing` decides); or another status why the
     * audio could not be read (the reason string says it, the video's frames
     * are stored). a0 = a0_pts x a0_tb_num / a0_tb_den s, the grid's anchor. */
    uint32_t audio; /* 1: the entry has the block */
    uint64_t audio_offset, audio_length;
    uint32_t audio_crc;
    int32_t audio_status, audio_rate, audio_channels;
    int64_t audio_first, audio_samples, audio_valid_lo, audio_valid_hi;
    int64_t a0_pts;
    int32_t a0_tb_num, a0_tb_den;
    /* the damage (a packing under REEL_CORRUPT_SKIP): the window's part
     * from the stream before valid was narrowed to its longest clean run
     * (record-relative), and the dropped packets' spans on the grid that
     * touch the window (audio/damage.h; reel__audio_damage_of gives the
     * record's and each clip's missing, missing_lo/hi, corrupt_packets and
     * valid from them, as reel_audio gives the video's) */
    int64_t audio_stream_lo, audio_stream_hi;
    uint32_t audio_n_spans, audio_zero; /* audio_zero: the block's padding, 0 */
    reel__audio_span *audio_spans;
} reel__store_rec;

/* The build settings that the index and every journal carry. */
typedef struct reel__store_params {
    uint32_t format, zstd_level;
    int32_t short_side, width, height, quality, gop, crf, every;
    uint32_t part_count;
    double fps;
    uint64_t shard_size;
    /* whole-video sampling (reel_pack_settings.sampler, mapped by
     * reel__store_params_from and reel_store_get_info): its kind, 0 for
     * none (REEL_SAMPLER_NONE); fps above is then the fps sampler's rate;
     * what the kind does not use is 0 */
    int32_t sampler, min_frames, max_frames, frames, frame_factor;
    int32_t color, dtype; /* reel_pack_settings.color and .dtype */
    /* the audio (reel_pack_settings.audio): 1 when packed with it (a
     * version-3 store, whose entries carry the audio block), its rate (0:
     * each video's own), channels (0: each video's own, 1: their mean) and
     * stream index (-1: the best); all 0 without audio */
    int32_t audio, audio_rate, audio_channels, audio_stream;
} reel__store_params;

/* CRC-32 of n bytes continuing `crc` (0 to start; crc32.c). */
uint32_t reel__crc32(uint32_t crc, const void *data, size_t n);

/* Settings -> the params block (part_count included). */
void reel__store_params_from(reel__store_params *p, const reel_pack_settings *s);

/* Frees what a record owns (its strings and frames) and zeroes it. */
void reel__store_rec_free(reel__store_rec *r);

/* Encoders (encode.c). The frame source is `n` HWC images of w x h at
 * `rgb`, `stride` bytes apart: RGB24, or for raw records any
 * REEL__STORE_PIX_* kind. Output appends to a growable buffer. */
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
/* Starts a record of w x h frames of REEL__STORE_PIX_* `pixels` (for H264:
 * a new stream); jpeg and h264 take RGB24 alone (REEL_E_INVALID_ARG). */
int reel__encoder_begin(reel__encoder *e, int w, int h, int pixels, const char *name, reel_error *err);
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

#endif
