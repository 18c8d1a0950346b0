/* ring.h: the ring of batch buffers and the per-sample work slots inside
 * each. Fixed-shape batches: preallocated, aligned buffers, one per batch.
 * Variable batches (samples of their own length or size): a byte budget;
 * each slot owns a buffer sized for its sample when stage 1 knows it
 * (reel__ring_slot_reserve), kept for reuse, and a batch is planned only
 * while the batches in flight hold less than the budget. A buffer goes FREE -> FILLING (feeder) -> READY
 * (collate) -> OUT (consumer) -> FREE (release, any thread). All state
 * changes happen under `mu`; `cond` is broadcast on every change. */
#ifndef REEL_PIPELINE_RING_H
#define REEL_PIPELINE_RING_H

#include <pthread.h>
#include <stdatomic.h>

#include "reel/pipeline.h"
#include "pipeline/pinned.h"

enum { REEL_BUF_FREE = 0, REEL_BUF_FILLING = 1, REEL_BUF_READY = 2, REEL_BUF_OUT = 3 };

struct reel_batchbuf;

/* One sample of a batch, as it travels through the stages. Owned by one
 * stage at a time (handed over through the queues). */
typedef struct reel_slot {
    struct reel_batchbuf *bb;
    int index;         /* slot number in the batch */
    int64_t position;  /* position in the epoch's global order (>= its size: padding) */
    int64_t requested; /* dataset index the plan chose */
    int64_t sample;    /* dataset index being decoded */
    int attempt;
    int padded;
    int status; /* REEL_OK once decoded, else the final failure */
    reel_error err;
    reel_remote_stats tally; /* requests for the sample's objects at URLs, until the loader takes them */
    void *handle;            /* the source's per-sample state, open between stage 1 and stage 2 */
    int64_t *indices;        /* clips_per_video * frames_per_clip requested frames (variable: num_frames) */
    int64_t *pts;            /* same count, filled while decoding */
    uint8_t *visited;        /* same count: 1 once the position was written */
    /* Time limit bookkeeping, under mu: the watchdog may abandon a slot
     * whose worker is stuck; the worker then drops it without touching the
     * batch again (the converter writes under mu too). */
    pthread_mutex_t mu;
    int64_t work_ns; /* time spent on this attempt in finished stages */
    int64_t t_begin; /* when the current stage began; 0: not in work */
    int abandoned;
    /* Read lock-free by the decoder's interrupt callback, so an abandoned
     * or shut-down sample leaves FFmpeg at its next packet or read. */
    atomic_int cut;          /* set with abandoned */
    const _Atomic int *stop; /* the loader's stop flag */
    int tb_num, tb_den, rotation;
    /* Variable batches: the sample's frame count and output size (stage 1),
     * its own frame buffer and index arrays (grown, kept for reuse). */
    int num_frames, width, height;
    int display_width, display_height; /* the display size (after rotation) */
    void *data;
    size_t data_cap;                     /* bytes allocated at data (under the ring's mu) */
    int data_pinned;                     /* data came from cudaHostAlloc */
    struct reel_device_buffer *data_dev; /* a ring on a GPU: the device buffer at data */
    int64_t frames_cap;                  /* entries allocated at indices, pts, visited */
    /* Audio (settings.audio): each clip's window [t0, t1) in the time base
     * (stage 1: 2 per clip, into the buffer's audio_win), and the clips'
     * samples one after another (stage 2; grown, kept for reuse; plain
     * memory: collate copies them into the batch's plane). */
    int64_t *audio_win;
    float *audio;
    size_t audio_cap; /* floats at audio */
} reel_slot;

typedef struct reel_batchbuf {
    void *data; /* aligned, bytes_cap (variable batches: the padded batch, or NULL) */
    size_t bytes_cap;
    int pinned; /* data came from cudaHostAlloc (free with cudaFreeHost) */
    int stale;  /* on a GPU: a row's copy in collate failed (err says why): raised whatever the policy */
    struct reel_device_buffer *dev; /* on a GPU: the memory at data (reel_batch.device_buffer) */
    int state;
    int64_t seq, epoch, index, position, nsamples;
    int64_t samples_seen;   /* the checkpoint's samples_seen once it is consumed */
    atomic_int pending;     /* slots not finished */
    atomic_int busy;        /* workers holding one of its slots; reused only at 0 */
    int slots_ready;        /* slot mutexes initialised */
    reel_slot *slots;       /* batch_size */
    int64_t *indices, *pts; /* batch_size * K * T */
    uint8_t *visited;
    reel_clip_info *rows;  /* batch_size * K, by slot (filled while decoding) */
    reel_clip_info *clips; /* compacted rows handed out */
    int64_t *labels;
    int64_t *audio_win; /* batch_size * K * 2: the slots' clip windows */
    float *audio;       /* the batch's audio plane [rows, C, S_max] (collate; grown, kept) */
    size_t audio_bytes; /* allocated at audio */
    int status;         /* first failure in the batch (for RAISE) */
    reel_error err;
    int64_t err_sample, err_position; /* whose failure it is (-1: none, or cancelled) */
    reel_batch batch;                 /* what the consumer sees */
} reel_batchbuf;

typedef struct reel_ring_config {
    int count, batch_size, clips_per_video, frames_per_clip;
    int width, height, layout, dtype, channels;
    size_t alignment;
    int pin_memory; /* try page-locked buffers (CUDA runtime found at run time) */
    int variable;   /* per-sample buffers under a byte budget (width, height, frames_per_clip unused) */
    int64_t budget; /* variable: bytes */
    /* Fixed shapes on a GPU ("cuda:N"): each buffer a reel_device_buffer
     * there (its address in data; not cleared), held until the ring is
     * freed; NULL: host memory */
    const char *device;
} reel_ring_config;

typedef struct reel_ring {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    reel_batchbuf *bufs;
    int count, batch_size;
    size_t bytes_total;
    int pinned; /* buffers that are page-locked (variable: blocks held, under mu) */
    int plain;  /* variable: blocks held in plain memory (under mu) */
    int pin;    /* variable: try page-locked blocks (pin_memory) */
    size_t est; /* variable: a batch's bytes as planned, batch_size x the largest sample yet (under mu) */
    int inited;
    int variable;
    int64_t budget;
    size_t alignment;
    int device; /* the buffers are device memory (reel_ring_config.device) */
    /* variable on a GPU: each slot's block a reel_device_buffer on this
     * device (NULL: host memory), its bytes counted in *tally (set by the
     * loader once its device is open; NULL: not counted) */
    const char *vdevice;
    struct reel__cuda_tally *tally;
} reel_ring;

int reel__ring_init(reel_ring *r, const reel_ring_config *c, reel_error *err);
void reel__ring_free(reel_ring *r);
/* "pinned" (every buffer page-locked), "plain" (none), "mixed" or "device";
 * variable rings: of the blocks they hold (under mu). */
const char *reel__ring_memory(const reel_ring *r);

/* Under mu: a FREE buffer no worker holds, made FILLING, or NULL (variable
 * batches: also NULL while the batches in flight hold the budget, each
 * batch still filling counted at least as `est`, and while one is in flight
 * before any sample has been sized; the buffers' memory beyond the budget
 * is then given back). */
reel_batchbuf *reel__ring_take_free(reel_ring *r);
/* Under mu: the READY buffer with this sequence number / the READY buffer
 * of this epoch with the lowest sequence number, or NULL. */
reel_batchbuf *reel__ring_find_ready_seq(reel_ring *r, int64_t seq);
reel_batchbuf *reel__ring_find_ready_epoch(reel_ring *r, int64_t epoch);

/* Variable batches: makes the slot's arrays hold `frames` entries and its
 * buffer `bytes` (locks mu for the accounting). REEL_E_NOMEM. */
int reel__ring_slot_reserve(reel_ring *r, reel_slot *s, int64_t frames, size_t bytes, reel_error *err);
/* Variable batches: makes bb->data hold `bytes` (the padded batch). */
int reel__ring_batch_reserve(reel_ring *r, reel_batchbuf *bb, size_t bytes, reel_error *err);

/* Makes bb->audio hold `bytes` (collate; plain memory, counted in
 * bytes_total). REEL_E_NOMEM. */
int reel__ring_audio_reserve(reel_ring *r, reel_batchbuf *bb, size_t bytes, reel_error *err);
/* Makes the slot's audio buffer hold `floats` (stage 2). REEL_E_NOMEM. */
int reel__ring_slot_audio_reserve(reel_slot *s, size_t floats, reel_error *err);

/* Locks mu: marks READY and wakes waiters. */
void reel__ring_set_ready(reel_ring *r, reel_batchbuf *bb);
/* Collate (both batch kinds): a slot that failed; the batch keeps the first
 * real failure (for RAISE), or notes a cancellation. */
void reel__batchbuf_note_failure(reel_batchbuf *bb, const reel_slot *s);
/* Locks mu: OUT -> FREE for the buffer holding `batch`. REEL_E_INVALID_ARG
 * if the batch is not one of ours or is not handed out. */
int reel__ring_release(reel_ring *r, reel_batch *batch);
/* Locks mu: broadcast. */
void reel__ring_wake(reel_ring *r);
/* Locks mu: every buffer not handed out becomes FREE (after a stop). */
void reel__ring_reset_unheld(reel_ring *r);

#endif
