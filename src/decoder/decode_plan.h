/* decode_plan.h: the decode plan, pure: a caller's frame requests sorted and
 * deduplicated, and the decode runs they need (each from a keyframe to its
 * last wanted frame, runs that overlap or touch merged, so seeks happen only
 * across gaps). No I/O and no codec: unit-tested on hand-made tables. */
#ifndef REEL_DECODER_DECODE_PLAN_H
#define REEL_DECODER_DECODE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/internal.h"

/* One request: a frame (presentation index) at a position of the caller's list. */
typedef struct reel__req {
    int64_t frame;
    size_t pos;
} reel__req;

/* One distinct wanted frame: its requests are reqs[first .. first+count). */
typedef struct reel__wanted {
    int64_t frame;
    size_t first;
    size_t count;
    int done;
} reel__wanted;

/* A decode run over decode positions [s, e]; s is a keyframe. */
typedef struct reel__interval {
    int64_t s, e;
} reel__interval;

/* Sorts reqs (n, frames already in range) by frame then position, and
 * writes the distinct frames to w (room for n). Returns their count. */
size_t reel__plan_requests(reel__req *reqs, size_t n, reel__wanted *w);

/* The wanted frame `frame` in w (sorted, nw), or NULL. */
reel__wanted *reel__plan_find(reel__wanted *w, size_t nw, int64_t frame);

/* The last keyframe before decode position d not marked unclean in
 * key_state (REEL_KEY_UNCLEAN; key_state may be NULL), 0 at worst. */
int64_t reel__plan_clean_key_before(const reel_table *t, const uint8_t *key_state, int64_t d);

/* The runs that decode every wanted frame not yet done, in decode order,
 * into iv (room for nw). A frame's run starts at its keyframe (an earlier
 * clean one when that keyframe is marked unclean; one more keyframe back
 * when `retry`) and ends at its decode position; without timestamps
 * (REEL_MATCH_COUNT) it goes on by reorder_depth, within its GOP, since
 * frames are then identified by counting outputs. Runs that overlap or
 * touch are merged. Returns the number of runs. */
size_t reel__plan_runs(const reel_table *t, const uint8_t *key_state, int reorder_depth, const reel__wanted *w,
                       size_t nw, int retry, reel__interval *iv);

/* The bytes of the file a run over decode positions [s, e] reads: from the
 * first of its packets to where the next video packet in the file begins
 * (the file's end after the last), so that a remote object can be fetched
 * by GOP in one request. 0 and [*lo, *hi), or -1 when the table has no byte
 * positions for them. */
int reel__plan_byte_range(const reel_table *t, int64_t s, int64_t e, int64_t file_size, int64_t *lo, int64_t *hi);

#endif
