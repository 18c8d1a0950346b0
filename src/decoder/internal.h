/* internal.h: the decoder object's private layout, shared by the decoder's
 * source files (open.c, table.c, sidecar.c, decode.c, frames.c, near.c). */
#ifndef REEL_DECODER_INTERNAL_H
#define REEL_DECODER_INTERNAL_H

#include "reel/decoder.h"
#include "core/error.h"
#include "core/frame.h"

#include <stdatomic.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

/* How decoded frames are matched to table rows. */
enum {
    REEL_MATCH_PTS = 0,  /* every packet has a unique pts: match frame->pts */
    REEL_MATCH_COUNT = 1 /* no usable pts (AVI): count output frames from a
                             keyframe whose presentation index is known */
};

/* One packet of the stream, in decode order, as found by the scan. */
typedef struct reel_packet_info {
    int64_t pts, dts, duration, pos;
    int32_t size;
    uint8_t key;
    uint8_t discard; /* trimmed by an edit list (AV_PKT_FLAG_DISCARD): decoded, never shown */
} reel_packet_info;

/* The frame table plus what random access needs. Decode positions count
 * the stream's packets from its first keyframe, frames or not: a packet an
 * edit list trims (a hidden one) is decoded, never shown, and frames shown
 * may depend on it (an edit list that discards a GOP's keyframe). Hidden
 * packets are kept only where timestamps identify every packet
 * (REEL_MATCH_PTS); otherwise the table has none and n_decode == n. */
typedef struct reel_table {
    int64_t n;                /* frames */
    int64_t n_decode;         /* decode positions: n plus the hidden packets */
    reel_frame_entry *frames; /* presentation order */
    int64_t *dts;             /* per decode position: packet dts (AV_NOPTS_VALUE if none) */
    int64_t *pts_of_decode;   /* per decode position: packet pts (match key in PTS mode) */
    int64_t *frame_of_decode; /* per decode position: presentation index, -1 for a hidden packet */
    int64_t *pos_of_decode;   /* per decode position: byte position (-1 unknown) */
    uint8_t *key_of_decode;   /* per decode position: 1 for a keyframe (hidden ones too) */
    int64_t *hidden;          /* the hidden packets' decode positions, by ascending pts */
    int64_t n_hidden;
    int64_t *seek_from; /* per presentation index: decode position of the keyframe to start from */
    int64_t *keyframes; /* presentation indices of keyframes */
    int64_t n_keyframes;
    int match_mode;
    int damaged;     /* the scan stopped early on damage */
    int64_t lost_at; /* COUNT mode: first frame after missing packets (0: none) */
    int source;      /* reel_index_source */
} reel_table;

struct reel_decoder {
    char *name;     /* path or caller's name (a URL redacted: safe for messages) */
    char *open_url; /* a remote decoder's URL as given, credentials and all: only to open
                     * GOP-parallel contexts of the same object; never in a message */
    reel_decoder_settings settings;
    char *index_path; /* owned copy of settings.index_path or default */

    /* input */
    AVFormatContext *fmt;
    AVIOContext *avio; /* custom IO (memory / callbacks), or NULL */
    struct reel_mem_reader *mem;
    reel_io io;                       /* copy of the caller's callbacks */
    struct reel__io *remote;          /* an http(s)/s3 object read through src/io, or NULL */
    _Atomic int64_t log_errors;       /* FFmpeg error messages from this decoder's codec (log.c) */
    int64_t log_seen;                 /* the count at the last flush (reel__log_mark) */
    _Atomic int64_t probe_log_errors; /* the same for the keyframe probe (its codec's opaque is this field's address) */
    _Atomic int log_held;             /* log.c holds lines of this decoder's codec for the call's end */
    int64_t remote_pos;
    reel_error remote_err; /* the last failed read of the remote object */
    int is_file;
    int remote_sidecar; /* a remote object whose sidecar lives in the index cache (index_path) */
    int64_t file_size;
    int64_t file_mtime_ns;

    /* stream and codec */
    AVStream *st;
    int stream_index;
    const AVCodec *codec;
    AVCodecContext *avctx;
    int rotation;      /* clockwise degrees to apply for display: 0/90/180/270 */
    int reorder_depth; /* packets to decode past a wanted frame in COUNT mode */

    reel_table table;
    reel_video_info info;

    /* decode state */
    AVPacket *pkt;
    AVFrame *frame;
    int64_t next_decode; /* decode position of the next packet the demuxer returns, -1 unknown */
    int decoder_dirty;   /* packets sent since the last flush */
    int warm;            /* PTS mode: the codec holds a continuous run from keyframe
                                   warm_from up to next_decode - 1, not drained */
    int64_t warm_from;
    int64_t out_max; /* highest frame index the warm run has put out */
    /* frames the codec put out after the last wanted frame of a call, kept
     * (by reference) for a following call: a frame-by-frame reader's next
     * frame is often already decoded */
#define REEL_FRAME_CACHE 8
    AVFrame *cache[REEL_FRAME_CACHE];
    int64_t cache_index[REEL_FRAME_CACHE];
    int cache_next;
    int64_t count_next; /* REEL_MATCH_COUNT: presentation index of the next output frame */
    /* What is known of each keyframe as a starting point, by decode
     * position (REEL_KEY_* bits; NULL until the first is learned).
     * UNCLEAN: decoding from it gave errors in its own GOP that decoding
     * through it from an earlier keyframe does not; never seeked to again.
     * PROBED: checked once, decoded alone on `probe`, a single-threaded
     * codec opened on first use, because under frame threading FFmpeg does
     * not flag decoding errors reliably. */
#define REEL_KEY_PROBED  1
#define REEL_KEY_UNCLEAN 2
    uint8_t *key_state;
    /* By decode position: a hash of the keyframe's picture as the probe
     * decoded it alone (0: not probed). Frame threads that put out a
     * different picture for it (FFmpeg 5.1 conceals some damage there in
     * silence) are caught by it, and the decoder goes on single-threaded. */
    uint64_t *key_hash;
    int threads_dropped; /* the codec was reopened single-threaded after such a divergence */
    AVCodecContext *probe;
    reel_converter *conv; /* for get_frames */
    /* GOP-parallel decoding's other contexts (frames.c): the same input,
     * opened on first use, kept for the calls that follow, closed with this
     * decoder (which then adds their remote tallies); [0, gop_open) */
#define REEL_GOP_CONTEXTS 64
    struct reel_decoder *gop_ctx[REEL_GOP_CONTEXTS - 1];
    int gop_open;

    /* settings.device "cuda[:N]" (gpu.c): the device, its batch of frames
     * for the kernel, FFmpeg's CUDA device when NVDEC may decode (NULL:
     * frames are decoded on the CPU and uploaded), why not (gpu_note, ""
     * while NVDEC decodes), and the current call's counts */
    struct reel__cuda *cuda;
    /* A GPU loader's decoder: the loader's device it was opened with (its
     * primary context; not owned), and cuda then a decode worker's, lent
     * for each call (reel__decoder_gpu_lend): never opened or closed here */
    struct reel__cuda *cuda_home;
    struct reel__cuda_batch *batch;
    AVBufferRef *hw_device;
    int gpu_asked_nvdec; /* get_format chose AV_PIX_FMT_CUDA once */
    int gpu_sink;        /* a get_frames call takes CUDA surfaces as they are */
    int64_t gpu_nvdec, gpu_uploaded;
    char gpu_note[256];
    char gpu_device[16]; /* reel_decoder_get_device: "cpu" or "cuda:N" */
};

/* Builds dec->table by scanning packets (no decoding). */
/* 1 if the caller's interrupt callback asks to stop (see reel_decoder_settings). */
static inline int reel__interrupted(const reel_decoder *dec)
{
    return dec->settings.interrupt && dec->settings.interrupt(dec->settings.interrupt_opaque);
}

/* Timestamps and durations from a file or a sidecar are untrusted: beyond
 * +-2^60 they are impossible (and sums or differences of two could
 * overflow int64), so such a table is corrupt (or a sidecar stale). */
#define REEL_TS_LIMIT (INT64_C(1) << 60)

/* Allocates and opens a codec context for the stream with `threads` threads
 * (frame and slice threading); `opaque` becomes its opaque (the decoder for
 * the main context, whose FFmpeg errors log.c routes back; NULL otherwise). Returns 0 or the FFmpeg error; *opening is 1
 * if it failed in avcodec_open2, 0 if before (parameters, memory). */
int reel__codec_context(const reel_decoder *dec, int threads, void *opaque, AVCodecContext **out, int *opening);

/* log.c: FFmpeg's error messages for a decoder (its codec's opaque). */
void reel__log_register(reel_decoder *dec);
void reel__log_unregister(reel_decoder *dec); /* shows what is still held */
/* The end of a run of decoding: keep = 1 shows the lines its codec logged
 * (naming the file), keep = 0 drops them (the run's frames were thrown away). */
void reel__log_flush(reel_decoder *dec, int keep);
/* dec while this thread opens it (its stream probing is not shown), NULL after. */
void reel__log_opening(const reel_decoder *dec);
/* Marks where the decoder's codec starts afresh (a flush): what it logged
 * before concerns frames that are gone. */
void reel__log_mark(reel_decoder *dec);
/* 1 if the codec logged an error since the mark. Under frame threading a
 * message cannot be tied to one frame, so every frame after it in the same
 * run counts as damaged: never a silently wrong frame, at worst a clean
 * frame reported with the damage that follows it. */
int reel__log_errors_since_mark(const reel_decoder *dec);

/* reel_decoder_decode, except that the call's last run drains the codec
 * instead of keeping it warm, and keeps no frame put out after the wanted
 * ones, for a next call (decode.c): for GOP-parallel
 * decoding (frames.c), whose calls are one keyframe run each and whose
 * next run starts elsewhere. */
int reel__decoder_decode_cold(reel_decoder *dec, const int64_t *indices, size_t n, reel_frame_fn fn, void *opaque,
                              reel_decode_stats *stats, reel_error *err);

/* Gives the codec's decoded pictures back (decode.c): the codec is
 * replaced by a fresh one of the same settings. For a decoder with no frame
 * in flight (after a cold call): a GOP-parallel context calls it when it
 * finds no run left while others still decode, so that it does not hold its
 * pictures while they write the call's last frames. REEL_OK, or
 * REEL_E_NOMEM with the decoder as it was. */
int reel__decoder_release_pictures(reel_decoder *dec);

/* prefetch.c: a caller's frame index (negative: from the end) as a
 * presentation index, or REEL_E_OUT_OF_RANGE naming it; and a URL's run
 * [s, e] fetched in one request before the demuxer reads it (a failure is
 * not final: the reads that follow retry and report it). */
int reel__decoder_resolve_index(const reel_decoder *dec, int64_t index, int64_t *frame, reel_error *err);
void reel__decoder_prefetch_run(reel_decoder *dec, int64_t s, int64_t e);

/* frames.c: how many GOP-parallel contexts a call of dec may use (for
 * REEL_GOP_CONTEXTS_AUTO: the core count for a file, 1 for a URL), at most
 * REEL_GOP_CONTEXTS. */
int reel__gop_contexts(const reel_decoder *dec);

/* reel_decoder_get_frames (GOP-parallel too, per dec->settings.gop_contexts)
 * with t's layout CHW written channel-major over the call (frames.c): dst
 * is [3][n][H][W], frame i of channel c at (c * n + i) * H * W elements, the
 * [C, T, H, W] of one sample (the loader's BCTHW). t must set no strides;
 * dst_size must hold n frames (the loader reaches it through
 * reel__decoder_get_sample, decoder_for_loader.h). */
int reel__decoder_get_frames_cthw(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t,
                                  void *dst, size_t dst_size, reel_decode_stats *stats, reel_error *err);

/* reel_decoder_get_frames on up to `contexts` GOP-parallel contexts for this
 * call only, request i's frame written at slots[i] (frames.c; each slot
 * holds one frame under t, as the caller checked): reel_decode_near
 * (near.c), whose requests go to several jobs' outputs. */
int reel__decoder_get_frames_to(reel_decoder *dec, const int64_t *indices, size_t n, const reel_transform *t,
                                int contexts, uint8_t *const *slots, reel_decode_stats *stats, reel_error *err);

/* gpu.c: a decoder on a CUDA device. open: the device (settings.device;
 * REEL_E_CUDA naming the cause, or a CPU decoder under device_fallback
 * "cpu") and FFmpeg's, before the codec opens; codec: a main codec context
 * made NVDEC's when it may be; frame: one frame of a get_frames call queued
 * for the kernel at device address dst; finish: the call's end (status:
 * the decode's), the rest launched or, on a failure, dropped; failed: the
 * batch dropped, the message made to name the file. */
int reel__decoder_gpu_open(reel_decoder *dec, reel_error *err);
void reel__decoder_gpu_codec(const reel_decoder *dec, AVCodecContext *c, void *opaque);
void reel__decoder_gpu_close(reel_decoder *dec);
/* A lent decoder's calls from now on run on c (a decode worker's device);
 * nothing for other decoders or a NULL c. */
void reel__decoder_gpu_lend(reel_decoder *dec, struct reel__cuda *c);
int reel__decoder_gpu_frame(reel_decoder *dec, const reel_frame *f, const reel_transform *t, uint64_t dst,
                            reel_error *err);
int reel__decoder_gpu_finish(reel_decoder *dec, int status, reel_error *err);
int reel__decoder_gpu_failed(reel_decoder *dec, int status, reel_error *err);

int reel__table_scan(reel_decoder *dec, reel_error *err);
/* Builds dec->table from the mp4/mov sample tables if they are complete;
 * returns REEL_E_INDEX_STALE (no error filled) when it cannot, so the caller scans. */
int reel__table_from_container(reel_decoder *dec);
/* Builds the table's rows from packets in decode order (drops packets
 * before the first keyframe; chooses PTS or COUNT matching; keeps the
 * hidden (discard) packets as decode positions under PTS matching, drops
 * them under COUNT). */
int reel__table_from_packet_list(reel_decoder *dec, const reel_packet_info *p, int64_t np, reel_error *err);
/* Allocates the table's arrays for n frames over nd decode positions
 * (frames zeroed, frame_of_decode -1); REEL_E_NOMEM. */
int reel__table_alloc(reel_table *t, int64_t n, int64_t nd);
/* Fills t->hidden from frame_of_decode (-1) and pts_of_decode; fails
 * (REEL_E_CORRUPT, no message) when a hidden packet's pts is unknown or
 * equals another packet's, since packets are then not named by their pts. */
int reel__table_index_hidden(reel_table *t);
/* Decode position of the hidden packet with this pts, or -1. */
int64_t reel__table_hidden_of_pts(const reel_table *t, int64_t pts);
/* The frame a decode position leads to, for messages: its own, or for a
 * hidden packet the first frame decoded after it (n - 1 at worst). */
int64_t reel__table_frame_near(const reel_table *t, int64_t d);
/* Derives seek_from, keyframes, durations from a table whose frames[] and
 * per-decode arrays are filled. */
int reel__table_finish(reel_decoder *dec, reel_error *err);
void reel__table_free(reel_table *t);

/* Sidecar: returns REEL_OK when loaded, REEL_E_INDEX_STALE if absent or stale. */
int reel__sidecar_load(reel_decoder *dec, const char *path);
int reel__sidecar_save(const reel_decoder *dec, const char *path, reel_error *err);


/* keycheck.c. dec->key_state, allocated on first use; NULL when out of memory. */
uint8_t *reel__key_state(reel_decoder *dec);
/* 1 when FFmpeg flagged the frame as damaged. */
int reel__frame_is_corrupt(const AVFrame *f);
/* A hash of a decoded picture's visible bytes (never 0). */
uint64_t reel__picture_hash(const AVFrame *f);
/* Decodes keyframe packet `pkt` alone on a single-threaded codec (dec->probe).
 * Returns 1 if it comes out without errors, 0 if not; 1 too if no probe codec
 * can be had. *hash (may be NULL): the picture's. */
int reel__key_decodes_alone(reel_decoder *dec, const AVPacket *pkt, uint64_t *hash);

/* A read of the remote object failed (after its retries): the reason to
 * report instead of FFmpeg's generic "I/O error", and never to be taken for
 * damage in the file. Copies it into err and returns its status, else 0. */
static inline int reel__remote_failure(const reel_decoder *dec, reel_error *err)
{
    if (!dec->remote || dec->remote_err.status == 0) return 0;
    if (err) *err = dec->remote_err;
    return dec->remote_err.status;
}

#endif
