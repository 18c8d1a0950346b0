/* plan.h: the epoch plan: per-epoch permutation, sharding by rank with pad
 * or drop, and the cut into batches. Pure arithmetic plus one permutation
 * buffer. Not thread-safe: owned by the loader's feeder. */
#ifndef REEL_PIPELINE_PLAN_H
#define REEL_PIPELINE_PLAN_H

#include <stdint.h>
#include "reel/pipeline.h"

typedef struct reel_plan {
    int64_t n; /* dataset size */
    int world, rank, shard_mode;
    int64_t per_rank; /* samples per rank per epoch */
    int64_t batch;    /* samples per batch */
    int drop_last;
    int shuffle;
    int64_t window; /* shuffle window (0: full shuffle) */
    uint64_t seed;
    int64_t *perm;   /* permutation of the epoch below */
    int64_t *blocks; /* windowed shuffle: the block order (scratch) */
    int64_t *starts; /* blocks of any size (a store's shards): nstarts - 1 blocks, or NULL */
    size_t nstarts;
    int64_t perm_epoch; /* -1: none yet */
    int fixed;          /* 1: perm is a caller's list, the same every epoch */
} reel_plan;

int reel__plan_init(reel_plan *p, int64_t n, int world, int rank, int shard_mode, int64_t batch, int drop_last,
                    int shuffle, uint64_t seed, reel_error *err);
void reel__plan_free(reel_plan *p);

/* Makes the shuffle windowed (see reel_loader_settings.shuffle_window):
 * window <= 0 or >= n keeps the full shuffle. Call after init, before the
 * first reel__plan_epoch. */
int reel__plan_set_window(reel_plan *p, int64_t window, reel_error *err);

/* Makes the shuffle go block by block over blocks of any size: block b is
 * [starts[b], starts[b+1]) (nblocks + 1 entries, 0 to n, copied); blocks in
 * a shuffled order, each shuffled within. Call after init, before the first
 * reel__plan_epoch. */
int reel__plan_set_blocks(reel_plan *p, const int64_t *starts, size_t nblocks, reel_error *err);

/* Makes the epoch the caller's list `order` (p->n dataset indices, each in
 * [0, dataset_size), copied), the same every epoch, unshuffled. Call after
 * init, before the first reel__plan_epoch. */
int reel__plan_set_order(reel_plan *p, const int64_t *order, int64_t dataset_size, reel_error *err);

/* The shape of an epoch without a plan: samples per rank (pad or drop) and
 * batches of `batch` (drop_last or not). Arguments as reel__plan_init's,
 * assumed valid. */
void reel__plan_shape(int64_t n, int world, int shard_mode, int64_t batch, int drop_last, int64_t *per_rank,
                      int64_t *batches);

/* Batches in an epoch whose first batch starts at rank-local `start`. */
int64_t reel__plan_batches(const reel_plan *p, int64_t start);

/* Batch k of such an epoch: first position and sample count. */
void reel__plan_batch(const reel_plan *p, int64_t start, int64_t k, int64_t *pos, int64_t *count);

/* Makes `epoch` the current permutation. */
void reel__plan_epoch(reel_plan *p, int64_t epoch);

/* Dataset index at rank-local position `pos` of the current epoch; *padded
 * is 1 for a sample repeated to even out the shards. */
int64_t reel__plan_sample(const reel_plan *p, int64_t pos, int *padded);

#endif
