/* reel/order.h: the order and stripe of an epoch, the planning that the
 * loader (and any other consumer: Ray, a custom sampler) uses to split an
 * epoch over ranks and to resume it on another number of them.
 *
 * The order. Each epoch has one global order of the dataset's samples, a
 * function of (seed, epoch, dataset, shuffle settings, canonical layout) and
 * of nothing else: not of the world size, the batch size, the threads or the
 * DataLoader workers of the run that reads it.
 *   1. A permutation of the dataset: a full shuffle, a windowed one, or block
 *      by block over the dataset's read blocks (a store's shards: blocks in a
 *      shuffled order, each shuffled within), or the identity without shuffle.
 *   2. The canonical layout (canonical_ranks C, canonical_batch U): the
 *      permutation is cut into C contiguous spans and the order takes U
 *      samples from each span in turn. With C ranks of batch U (the run that
 *      set the layout), rank c reads span c from front to back, so every
 *      rank stays in its own run of shards; another topology reads the same
 *      order, only cut differently. C = 1 is the permutation itself.
 *
 * The stripe. A rank's batches are a stripe of the order by batch: of the
 * samples not yet seen (the order from position `samples_seen` on), global
 * batch k is the next world_size * batch_size samples, and rank r's k-th
 * batch is the r-th run of batch_size in it. The remainder that does not
 * fill a global batch is split evenly: each rank gets ceil(T / world) of the
 * T left (shard mode PAD: positions past the dataset repeat the order from
 * its start and are marked padded) or floor(T / world) (DROP: the rest is
 * left out); drop_last drops that last batch when it is short. With
 * DataLoader workers, worker w of rank r reads as rank w * world + r of
 * world * workers, so the batches a rank's main process receives in turn
 * (worker 0, 1, ... round robin) are exactly those of a run without workers.
 *
 * samples_seen is a global count: the length of the prefix of the order that
 * every rank together has consumed. After k batches on every rank (full
 * ones) it is k * world_size * batch_size: every rank of a synchronous job
 * computes the same value, and a resume on any other topology continues from
 * it with no sample repeated or lost. */
#ifndef REEL_ORDER_H
#define REEL_ORDER_H

#include "common.h"
#include "dataset.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How the shards are evened out (reel_loader_settings.shard_mode). */
typedef enum reel_shard_mode {
    REEL_SHARD_PAD = 0, /**< the remainder's ranks get ceil(T/world) samples, repeats marked padded */
    REEL_SHARD_DROP = 1 /**< the remainder's ranks get floor(T/world) samples, the rest is dropped */
} reel_shard_mode;

/** What fixes an epoch's order. Initialise with reel_order_default_settings(). */
typedef struct reel_order_settings {
    int64_t num_samples;
    uint64_t seed;
    int shuffle;                 /**< 0: the dataset order; default 1 */
    int64_t shuffle_window;      /**< as reel_loader_settings.shuffle_window; default 0 */
    const int64_t *block_starts; /**< read blocks: num_blocks + 1 entries from 0 to num_samples
                                      (copied); NULL: none. Used with shuffle_window 0 */
    size_t num_blocks;
    int canonical_ranks;  /**< C >= 1; default 1 */
    int canonical_batch;  /**< U >= 1; default 1 */
    uint8_t reserved[32]; /**< zero; room to grow (common.h) */
} reel_order_settings;

/** A rank's part of an epoch from `samples_seen` on. Plain data. */
typedef struct reel_stripe {
    int64_t num_samples;
    int64_t samples_seen;       /**< global samples of the order already consumed, 0..num_samples */
    int world_size, rank;       /**< default 1, 0 */
    int num_workers, worker;    /**< DataLoader workers per rank and this one; default 1, 0 */
    int64_t batch_size;         /**< samples per batch of one rank (per worker) */
    reel_shard_mode shard_mode; /**< default PAD */
    int drop_last;              /**< drop a short last batch; default 0 */
    uint8_t reserved[32];       /**< zero; room to grow (common.h) */
} reel_stripe;

/** One batch of a stripe: order positions [first, first + count) (positions
 *  >= num_samples are padding: the order again from its start), and the
 *  global samples_seen once every rank has consumed it and what precedes it. */
typedef struct reel_stripe_batch {
    int64_t first, count;
    int64_t samples_seen_after;
    uint8_t reserved[16]; /**< zero; room to grow (common.h) */
} reel_stripe_batch;

/** The order of one epoch at a time. Thread-safety: reel_order_get_sample
 *  may run on many threads at once; reel_order_set_epoch needs exclusive
 *  access. Memory: one int64 per sample. */
typedef struct reel_order reel_order;

/** Defaults: shuffle on, no window or blocks, C = U = 1 (num_samples 0). */
REEL_API void reel_order_default_settings(reel_order_settings *s);

/** Creates an order (epoch 0 made). REEL_E_INVALID_ARG on num_samples < 1,
 *  a canonical value < 1, blocks that do not cover the samples;
 *  REEL_E_NOMEM. */
REEL_API int reel_order_create(reel_order **out, const reel_order_settings *s, reel_error *err);

/** Makes `epoch` (>= 0) the current one: O(num_samples) for a shuffle. */
REEL_API int reel_order_set_epoch(reel_order *o, int64_t epoch, reel_error *err);

/** Changes the canonical layout (both >= 1); the permutation is kept. */
REEL_API int reel_order_set_canonical(reel_order *o, int canonical_ranks, int canonical_batch, reel_error *err);

/** The dataset index at `position` (>= 0) of the current epoch's order;
 *  positions past the end wrap (padding). O(1). REEL_E_OUT_OF_RANGE for a
 *  negative position. */
REEL_API int reel_order_get_sample(const reel_order *o, int64_t position, int64_t *index, reel_error *err);

REEL_API void reel_order_destroy(reel_order **o);

/** A stripe with the defaults above for `num_samples` and `batch_size`. */
REEL_API reel_stripe reel_stripe_make(int64_t num_samples, int64_t batch_size);

/** Checks a stripe: REEL_E_INVALID_ARG with a message naming the field. */
REEL_API int reel_stripe_check(const reel_stripe *s, reel_error *err);

/** Batches in the stripe (0 when nothing is left). O(1). */
REEL_API int64_t reel_stripe_get_num_batches(const reel_stripe *s);

/** Batch k of the stripe (0 <= k < reel_stripe_get_num_batches). O(1).
 *  REEL_E_OUT_OF_RANGE for another k. */
REEL_API int reel_stripe_get_batch(const reel_stripe *s, int64_t k, reel_stripe_batch *out, reel_error *err);

/** Samples of the stripe (padding included). O(1). */
REEL_API int64_t reel_stripe_get_num_samples(const reel_stripe *s);

/** An order over a dataset as a loader with these order settings makes it:
 *  `s->num_samples` and the read blocks are taken from the dataset (a
 *  store's shards, for the default shuffle), the rest from `s` (see
 *  reel_order_default_settings). The dataset becomes frozen. For consumers
 *  that plan epochs without a loader (Ray tasks, a custom sampler). */
REEL_API int reel_order_create_for_dataset(reel_order **out, reel_dataset *ds, const reel_order_settings *s,
                                           reel_error *err);

#ifdef __cplusplus
}
#endif
#endif /* REEL_ORDER_H */
