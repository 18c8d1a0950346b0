/* rng.h: the loader's counter-based random numbers (Philox4x32-10). Every
 * draw is a pure function of (seed, epoch, sample, purpose, attempt, draw),
 * so results never depend on thread count or scheduling. */
#ifndef REEL_PIPELINE_RNG_H
#define REEL_PIPELINE_RNG_H

#include <stddef.h>
#include <stdint.h>

/* What a draw is for; keeps the streams of different decisions apart. */
enum {
    REEL_RNG_SHUFFLE = 1, /* epoch permutation (sample = position) */
    REEL_RNG_SAMPLER = 2, /* clip starts (sample = dataset index) */
    REEL_RNG_CROP = 3,    /* crop / flip per clip */
    REEL_RNG_REPLACE = 4  /* replacement choice (sample = position) */
};

/* A draw address. Plain data. */
typedef struct reel_rng_key {
    uint64_t seed;
    uint64_t epoch;
    uint64_t sample;
    uint32_t purpose;
    uint32_t attempt;
} reel_rng_key;

/* Philox4x32-10 of (counter, key) into out[4]. */
void reel__philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* 64 random bits for draw number `draw` of `k`. */
uint64_t reel__rng_u64(const reel_rng_key *k, uint64_t draw);

/* Uniform double in [0, 1) with 53 random bits. */
double reel__rng_double(const reel_rng_key *k, uint64_t draw);

/* Uniform integer in [0, n) (n > 0), unbiased (Lemire with rejection on
 * successive sub-draws). */
uint64_t reel__rng_below(const reel_rng_key *k, uint64_t draw, uint64_t n);

/* Fills perm[0..n) with a permutation of 0..n-1: identity when shuffle is 0,
 * else Fisher-Yates driven by (seed, epoch, REEL_RNG_SHUFFLE). */
void reel__rng_permutation(uint64_t seed, uint64_t epoch, int shuffle, int64_t *perm, size_t n);

/* Fills perm[0..n) with the windowed (quasi-random) permutation: blocks of
 * `window` consecutive indices in a shuffled order, each block shuffled
 * within itself; window 0 or >= n is reel__rng_permutation's full shuffle
 * (the same permutation). Driven by (seed, epoch, REEL_RNG_SHUFFLE) with
 * attempt 1 for the block order and 2 for the within-block draws.
 * blocks_scratch holds ceil(n / window) entries (unused for a full shuffle). */
void reel__rng_permutation_windowed(uint64_t seed, uint64_t epoch, int64_t window, int64_t *perm, size_t n,
                                    int64_t *blocks_scratch);

/* The same over blocks of any size: block b is [starts[b], starts[b+1])
 * (starts has nblocks + 1 entries, from 0 to n; NULL: blocks of w, the last
 * shorter); blocks_scratch holds nblocks entries. */
void reel__rng_permutation_blocks(uint64_t seed, uint64_t epoch, const int64_t *starts, size_t nblocks, size_t w,
                                  int64_t *perm, size_t n, int64_t *blocks_scratch);

#endif
