/* plan.h: the epoch plan: the global order of an epoch (reel/order.h: a
 * permutation cut into the canonical spans) and a rank's stripe of it by
 * batch, from any number of samples already seen. Pure arithmetic plus one
 * permutation buffer. Not thread-safe: owned by the loader's feeder. */
#ifndef REEL_PIPELINE_PLAN_H
#define REEL_PIPELINE_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include "reel/order.h"

struct reel_order {
    int64_t n; /* dataset size */
    uint64_t seed;
    int shuffle;
    int64_t window;  /* shuffle window (0: full shuffle) */
    int64_t *starts; /* blocks of any size (a store's shards): nstarts - 1 blocks, or NULL */
    size_t nstarts;
    int canon_ranks, canon_batch; /* the canonical layout (C spans, U samples from each in turn) */
    int64_t *perm;                /* permutation of the epoch below */
    int64_t *blocks;              /* windowed or block shuffle: the block order (scratch) */
    int64_t perm_epoch;           /* -1: none yet */
    int64_t *fixed;               /* a caller's list (n entries): the order of every epoch; NULL: none */
};

int reel__order_init(reel_order *o, const reel_order_settings *s, reel_error *err);
void reel__order_free(reel_order *o);
/* Makes `epoch` the current permutation (nothing when it already is). */
void reel__order_epoch(reel_order *o, int64_t epoch);
/* The canonical layout, checked (>= 1 each). */
int reel__order_set_canonical(reel_order *o, int ranks, int batch, reel_error *err);
/* Makes the order the caller's list (o->n dataset indices, each in
 * [0, dataset_size), copied), the same every epoch and unshuffled. */
int reel__order_set_fixed(reel_order *o, const int64_t *list, int64_t dataset_size, reel_error *err);
/* Dataset index at order position g >= 0 (past the end: wrapped padding). */
int64_t reel__order_sample(const reel_order *o, int64_t g);

/* Batches of a stripe and batch k of it (both O(1), stripe assumed valid). */
int64_t reel__stripe_batches(const reel_stripe *s);
void reel__stripe_batch(const reel_stripe *s, int64_t k, reel_stripe_batch *b);

typedef struct reel_plan {
    reel_order order;
    reel_stripe stripe; /* this rank's, with samples_seen 0 (set per call below) */
    int64_t per_rank;   /* samples per rank of a whole epoch */
} reel_plan;

/* The order from `os`, the stripe `st` (its samples_seen ignored). Fails
 * with REEL_E_EMPTY when a rank would get no batch of a whole epoch. */
int reel__plan_init(reel_plan *p, const reel_order_settings *os, const reel_stripe *st, reel_error *err);
void reel__plan_free(reel_plan *p);

/* Batches of an epoch of which `seen` samples were already consumed. */
int64_t reel__plan_batches(const reel_plan *p, int64_t seen);
/* Batch k of such an epoch. */
void reel__plan_batch(const reel_plan *p, int64_t seen, int64_t k, reel_stripe_batch *b);
/* Makes `epoch` the current permutation. */
void reel__plan_epoch(reel_plan *p, int64_t epoch);
/* Dataset index at order position g of the current epoch; *padded is 1 for
 * a position past the end (a repeat that evens out the ranks). */
int64_t reel__plan_sample(const reel_plan *p, int64_t g, int *padded);

/* The shape of a whole epoch without a plan: samples per rank (pad or drop)
 * and batches (drop_last or not). Arguments assumed valid. */
void reel__plan_shape(int64_t n, int world, int shard_mode, int64_t batch, int drop_last, int64_t *per_rank,
                      int64_t *batches);

#endif
