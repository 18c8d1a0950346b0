/* audio_internal.h: the audio object (reel/audio.h) shared by audio.c (opening,
 * the public calls, the damage a window reports), audio_run.c (the running
 * decode, its history and marks, the restarts), audio_cache.c (the output
 * samples kept in blocks) and audio_source.c (the bytes). src/audio's files
 * alone include it. */
#ifndef REEL_AUDIO_AUDIO_INTERNAL_H
#define REEL_AUDIO_AUDIO_INTERNAL_H

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libswresample/swresample.h>

#include "audio/damage.h"
#include "core/error.h"
#include "io/io_front.h"
#include "reel/audio.h"

#define REEL_AUDIO_MAX_RATE     1000000
#define REEL_AUDIO_MAX_CHANNELS 64

/* A place a run can restart from: the decoded frame of timestamp `ts` was
 * placed with `pos` native samples before it (the 1 ms rule then decides
 * where it lands, as it did the first time). */
typedef struct reel__audio_mark {
    int64_t ts, pos;
} reel__audio_mark;

/* Damage a run met (REEL_CORRUPT_SKIP): `packets` dropped packets whose
 * samples are the zeros of native [lo, hi) (lo == hi: dropped without a
 * gap). The file's, like the marks: kept across runs, found once each. */
typedef struct reel__audio_hole {
    int64_t lo, hi, packets;
    int64_t ts; /* the first dropped packet's timestamp (the stream's time base; AV_NOPTS_VALUE: none) */
    int why;    /* and the codec's AVERROR for it */
} reel__audio_hole;

/* The audio packets' bytes of a remote mp4/mov (audio_source.c): the
 * stream's index entries by position, those that touch merged into runs
 * [pos, end); ts: the earliest timestamp in the run, in microseconds. */
typedef struct reel__audio_run_span {
    int64_t pos, end, ts;
} reel__audio_run_span;

/* Bytes [pos, pos + len) of the object that the first open read (the
 * container's header), kept for the reopens. */
typedef struct reel__audio_kept {
    int64_t pos;
    size_t len;
    uint8_t *data;
} reel__audio_kept;

/* reel_audio_settings.cache_bytes' default. */
#define REEL_AUDIO_CACHE_BYTES ((int64_t)8 << 20)

/* One block of the cache: output samples [index * len, (index + 1) * len),
 * channel planes of `len`, `used` its last use (the least used goes first). */
typedef struct reel__audio_block {
    int64_t index;
    uint64_t used;
    float *data;
} reel__audio_block;

struct reel_audio {
    char name[1024];
    char path[4096]; /* what was opened (a URL: as given, for the reopen) */
    reel_audio_settings s;
    reel_audio_info info;
    AVFormatContext *fmt;
    AVIOContext *avio; /* over `io` */
    reel__io *io;
    int64_t io_pos;
    reel_error io_err; /* the last read's failure, for the message */
    int remote;        /* io is an http(s)/s3 object */
    /* the byte plan (audio_source.c; remote mp4/mov only, else no runs) */
    reel__audio_run_span *runs; /* ascending by pos */
    size_t n_runs;
    int64_t gap_max;        /* runs closer than this come in one request (readahead_min) */
    int64_t fetch_max;      /* the most bytes one request brings (readahead_max) */
    reel__audio_kept *kept; /* the first open's reads, for the reopens (a fragmented mp4: one per moof) */
    size_t n_kept, kept_cap;
    int keeping; /* the first open is reading: keep what it reads */
    /* a remote mp4/mov's header walk (audio_source.c: walk_fetch): boxes,
     * its top-level boxes are read while opening (walking); walk_end, the
     * end of the last read; walk_len, the last fetch's length */
    int boxes, walking;
    int64_t walk_end, walk_len;
    AVCodecParameters *par;
    AVRational tb;
    int stream;
    float *scratch; /* one frame as float planes, then its mix */
    size_t scratch_cap;

    /* ---- the run: a decode that goes on from call to call (audio_run.c) */
    AVCodecContext *ctx; /* NULL: no run */
    SwrContext *swr;     /* NULL: the output rate is the native one */
    AVPacket *pkt;
    AVFrame *frame;
    int seekable;      /* a restart after a seek with preroll decodes the same samples */
    int64_t preroll;   /* native samples decoded before a restart's first placed frame */
    int64_t align;     /* resampler restarts at native indices that are multiples of this */
    int64_t pos;       /* native samples placed (grid index of the next) */
    int64_t feed_from; /* native index from which samples reach the output */
    int64_t out_pos;   /* output samples produced (grid index of the next) */
    int eof;           /* 0 reading; 1 decoder flushed; 2 decoder drained; 3 all out */
    int at_a0;         /* no run yet: ctx is the open's decoder, `frame` its first (a0's) */
    int pending;       /* a run began on it: `frame` goes out first */
    int waiting;       /* after a seek: frames before mark `resume` only warm the decoder */
    reel__audio_mark resume;
    int64_t end;        /* output samples the stream gives, once a run reached its end; -1 unknown */
    int64_t end_native; /* native samples the stream gives, once a run reached its end; -1 unknown */
    /* the window of the call in progress */
    int64_t win_lo, win_hi;
    float *win_dst;
    /* history: the last output samples [hist_lo, out_pos), planes of hist_cap */
    float *hist;
    int64_t hist_lo;
    int hist_cap;
    float *rs; /* the resampler's output planes */
    int rs_cap;
    reel__audio_mark *marks; /* ascending; from runs that decoded there */
    size_t n_marks, marks_cap;
    /* damage (REEL_CORRUPT_SKIP): packets dropped since the last placed
     * frame, the last packet sent (its time for a message), the holes found */
    int64_t dropped, last_pkt_ts;
    int64_t drop_ts; /* the first of the packets dropped since: its timestamp and AVERROR (a hole's) */
    int drop_why;
    reel__audio_hole *holes; /* ascending by lo */
    size_t n_holes, holes_cap;

    int64_t stream_lo, stream_hi; /* the last window's part from the stream, before damage narrowed it */

    int64_t exact_lo; /* the run's first output sample equal to a whole-stream decode's */

    /* ---- the cache (audio_cache.c): full blocks of exact output samples */
    reel__audio_block *blocks;   /* ascending index */
    size_t n_blocks, max_blocks; /* max_blocks 0: no cache */
    int block_len;               /* output samples a block holds */
    float *fill;                 /* the block being filled: block fill_index, its samples up to fill_next */
    int64_t fill_index, fill_next;
    uint64_t tick;
    reel_audio_stats stats;
};

/* floor(num / den + 1/2) for den > 0, exact. */
static inline __int128 reel__audio_round_half_up(__int128 num, __int128 den)
{
    __int128 q = (2 * num + den) / (2 * den);
    if ((2 * num + den) % (2 * den) < 0) q -= 1; /* C divides toward zero */
    return q;
}

/* floor(num / den) for den > 0, exact. */
static inline __int128 reel__audio_floor_div(__int128 num, __int128 den)
{
    __int128 q = num / den;
    if (num % den < 0) q -= 1;
    return q;
}

/* Fills dst[0 .. C x (hi - lo)) (zeroed by the caller) with the output
 * grid's [lo, hi), going on with the run, or restarting it from a0 or a mark;
 * *end: output samples the stream gave (INT64_MAX when the window ended
 * first). */
int reel__audio_fill(reel_audio *a, int64_t lo, int64_t hi, float *dst, int64_t *end, reel_error *err);

/* Native samples on each side of a gap whose resampled output the gap
 * reaches (0: no resampler). */
int64_t reel__audio_resample_reach(const reel_audio *a);

/* The damage that touches the output window [lo, hi) (window indices
 * relative to lo): w->missing, missing_lo/hi, corrupt_packets, and valid_*
 * narrowed to the longest clean run (audio.c). */
void reel__audio_damage(const reel_audio *a, int64_t lo, int64_t hi, reel_audio_window *w);

/* 1 when the caller's interrupt (reel_audio_settings.interrupt) asks to stop. */
static inline int reel__audio_interrupted(const reel_audio *a)
{
    return a->s.interrupt && a->s.interrupt(a->s.interrupt_opaque);
}

/* Sets up the run's codec-dependent constants (seekable, preroll, align). */
void reel__audio_run_init(reel_audio *a);

/* Ends the run and frees what it holds (marks and `end` stay: they are the
 * file's; the resampler too, set up again by the next run). */
void reel__audio_run_free(reel_audio *a);

/* A fresh resampler from the native rate to the output's, float planes of
 * the output's channels (*swr, when there is one, set up again: the same as
 * a new one, its filter kept: its build is most of the cost at rates such as
 * 44.1 kHz to 16 kHz). */
static inline int reel__audio_resampler(const reel_audio *a, SwrContext **swr)
{
    if (*swr) return swr_init(*swr) < 0 ? REEL_E_INTERNAL : REEL_OK;
    AVChannelLayout lay;
    av_channel_layout_default(&lay, a->info.channels);
    int bad = swr_alloc_set_opts2(swr, &lay, AV_SAMPLE_FMT_FLTP, a->info.sample_rate, &lay, AV_SAMPLE_FMT_FLTP,
                                  a->info.native_sample_rate, 0, NULL) < 0 ||
              swr_init(*swr) < 0;
    av_channel_layout_uninit(&lay);
    return bad ? REEL_E_INTERNAL : REEL_OK;
}

/* Opens a fresh decoder for the stream. */
int reel__audio_open_codec(reel_audio *a, AVCodecContext **out, reel_error *err);

/* The timestamp a decoded frame is placed by. */
int64_t reel__audio_frame_ts(const AVFrame *f);

/* ---- audio_cache.c: the output samples kept ---- */

/* Sizes the cache from a->s.cache_bytes (after the output rate and
 * channels are known). */
void reel__audio_cache_init(reel_audio *a);

/* Frees the cache's blocks. */
void reel__audio_cache_free(reel_audio *a);

/* Output samples [lo, hi) the cache holds from lo on into dst (planes of
 * hi - lo); returns the end of that cover (lo: none). */
int64_t reel__audio_cache_get(reel_audio *a, int64_t lo, int64_t hi, float *dst);

/* n output samples (planes of `stride`) the run produced at grid index
 * `at`: those from a->exact_lo on go into the blocks. */
void reel__audio_cache_put(reel_audio *a, const float *planes, int n, int stride, int64_t at);

/* Output samples a full cache holds (0: no cache). */
int64_t reel__audio_cache_span(const reel_audio *a);

/* ---- audio_source.c: the bytes ---- */

/* An AVIOContext over a->io (buf: av_malloc'd, `size` bytes; it takes it). */
AVIOContext *reel__audio_avio(reel_audio *a, unsigned char *buf, int size);

/* Opens the container over a->avio from its first byte (an AVERROR). */
int reel__audio_open_container(reel_audio *a);

/* Whether the remote object's header is walked by mp4/mov boxes (sets
 * a->boxes; audio_source.c's walk_fetch); before the first open. */
void reel__audio_boxes(reel_audio *a);

/* Sets every stream but a->stream to be discarded by the demuxer. */
void reel__audio_discard_others(reel_audio *a);

/* Back to the first byte: the container opened afresh. */
int reel__audio_reopen(reel_audio *a, reel_error *err);

/* For a remote mp4/mov: the stream's packets' byte ranges from its index,
 * so that the reads fetch those (coalesced) and not the bytes between. */
int reel__audio_plan(reel_audio *a, reel_error *err);

/* Frees the plan and the kept header bytes. */
void reel__audio_source_free(reel_audio *a);

#endif
