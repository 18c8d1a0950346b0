/* plan.c: epoch permutation, DistributedSampler-style sharding (strided,
 * padded by wrapping or truncated), and batch boundaries. */
#include "pipeline/plan.h"
#include "pipeline/rng.h"
#include "core/error.h"

#include <stdlib.h>

static int64_t batches_of(int64_t samples, int64_t batch, int drop_last)
{
    if (samples <= 0) return 0;
    return drop_last ? samples / batch : (samples + batch - 1) / batch;
}

void reel__plan_shape(int64_t n, int world, int shard_mode, int64_t batch, int drop_last, int64_t *per_rank,
                      int64_t *batches)
{
    int64_t r = shard_mode == REEL_SHARD_PAD ? (n + world - 1) / world : n / world;
    if (per_rank) *per_rank = r;
    if (batches) *batches = batches_of(r, batch, drop_last);
}

int reel__plan_init(reel_plan *p, int64_t n, int world, int rank, int shard_mode, int64_t batch, int drop_last,
                    int shuffle, uint64_t seed, reel_error *err)
{
    p->perm = NULL;
    p->blocks = NULL;
    p->starts = NULL;
    p->nstarts = 0;
    p->window = 0;
    p->fixed = 0;
    if (n <= 0) return reel__error_set(err, REEL_E_EMPTY, "loader: the dataset is empty");
    if (world < 1 || rank < 0 || rank >= world)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: rank %d not in [0, world_size %d)", rank, world);
    if (shard_mode != REEL_SHARD_PAD && shard_mode != REEL_SHARD_DROP)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: unknown shard mode %d", shard_mode);
    if (batch < 1) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: batch_size must be >= 1");
    p->n = n;
    p->world = world;
    p->rank = rank;
    p->shard_mode = shard_mode;
    reel__plan_shape(n, world, shard_mode, batch, drop_last, &p->per_rank, NULL);
    p->batch = batch;
    p->drop_last = drop_last ? 1 : 0;
    p->shuffle = shuffle ? 1 : 0;
    p->seed = seed;
    p->perm_epoch = -1;
    if (p->per_rank == 0)
        return reel__error_set(err, REEL_E_EMPTY, "loader: %lld samples for %d ranks leave rank %d none (drop mode)",
                               (long long)n, world, rank);
    if (reel__plan_batches(p, 0) == 0)
        return reel__error_set(err, REEL_E_EMPTY,
                               "loader: %lld samples per rank are fewer than one batch of %lld with drop_last",
                               (long long)p->per_rank, (long long)batch);
    p->perm = malloc((size_t)n * sizeof *p->perm);
    if (!p->perm) return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for the permutation");
    return REEL_OK;
}

void reel__plan_free(reel_plan *p)
{
    free(p->perm);
    free(p->blocks);
    free(p->starts);
    p->perm = NULL;
    p->blocks = NULL;
    p->starts = NULL;
}

int reel__plan_set_window(reel_plan *p, int64_t window, reel_error *err)
{
    if (window < 0) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: shuffle_window must be >= 0");
    if (window == 0 || window >= p->n) {
        p->window = 0;
        return REEL_OK;
    }
    p->blocks = malloc((size_t)((p->n + window - 1) / window) * sizeof *p->blocks);
    if (!p->blocks) return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for the shuffle blocks");
    p->window = window;
    p->perm_epoch = -1;
    return REEL_OK;
}

int reel__plan_set_blocks(reel_plan *p, const int64_t *starts, size_t nblocks, reel_error *err)
{
    if (nblocks < 1 || starts[0] != 0 || starts[nblocks] != p->n)
        return reel__error_set(err, REEL_E_INTERNAL, "loader: read blocks do not cover the dataset");
    for (size_t b = 0; b < nblocks; b++)
        if (starts[b + 1] <= starts[b]) return reel__error_set(err, REEL_E_INTERNAL, "loader: an empty read block");
    free(p->starts);
    free(p->blocks);
    p->starts = malloc((nblocks + 1) * sizeof *p->starts);
    p->blocks = malloc(nblocks * sizeof *p->blocks);
    if (!p->starts || !p->blocks)
        return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for the read blocks");
    for (size_t b = 0; b <= nblocks; b++) p->starts[b] = starts[b];
    p->nstarts = nblocks + 1;
    p->window = 0;
    p->perm_epoch = -1;
    return REEL_OK;
}

int reel__plan_set_order(reel_plan *p, const int64_t *order, int64_t dataset_size, reel_error *err)
{
    for (int64_t i = 0; i < p->n; i++)
        if (order[i] < 0 || order[i] >= dataset_size)
            return reel__error_set(err, REEL_E_INVALID_ARG, "loader: samples[%lld] = %lld is not in [0, %lld)",
                                   (long long)i, (long long)order[i], (long long)dataset_size);
    for (int64_t i = 0; i < p->n; i++) p->perm[i] = order[i];
    p->fixed = 1;
    p->perm_epoch = -1;
    return REEL_OK;
}

int64_t reel__plan_batches(const reel_plan *p, int64_t start)
{
    if (start < 0) start = 0;
    return batches_of(p->per_rank - start, p->batch, p->drop_last);
}

void reel__plan_batch(const reel_plan *p, int64_t start, int64_t k, int64_t *pos, int64_t *count)
{
    int64_t a = start + k * p->batch;
    int64_t b = a + p->batch;
    if (b > p->per_rank) b = p->per_rank;
    *pos = a;
    *count = b > a ? b - a : 0;
}

void reel__plan_epoch(reel_plan *p, int64_t epoch)
{
    if (p->perm_epoch == epoch || p->fixed) return;
    if (p->shuffle && p->starts)
        reel__rng_permutation_blocks(p->seed, (uint64_t)epoch, p->starts, p->nstarts - 1, 0, p->perm, (size_t)p->n,
                                     p->blocks);
    else if (p->shuffle && p->window > 0)
        reel__rng_permutation_windowed(p->seed, (uint64_t)epoch, p->window, p->perm, (size_t)p->n, p->blocks);
    else
        reel__rng_permutation(p->seed, (uint64_t)epoch, p->shuffle, p->perm, (size_t)p->n);
    p->perm_epoch = epoch;
}

int64_t reel__plan_sample(const reel_plan *p, int64_t pos, int *padded)
{
    int64_t g = (int64_t)p->rank + (int64_t)p->world * pos;
    if (padded) *padded = g >= p->n;
    return p->perm[g % p->n];
}

int reel_loader_epoch_shape(int64_t num_samples, int world_size, reel_shard_mode shard_mode, int64_t batch_size,
                            int drop_last, int64_t *per_rank, int64_t *batches, reel_error *err)
{
    if (num_samples < 0 || world_size < 1 || batch_size < 1 ||
        (shard_mode != REEL_SHARD_PAD && shard_mode != REEL_SHARD_DROP))
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "reel_loader_epoch_shape: need num_samples >= 0, world_size >= 1, batch_size >= 1 "
                               "and a known shard mode");
    int64_t pr = 0, nb = 0;
    reel__plan_shape(num_samples, world_size, (int)shard_mode, batch_size, drop_last, &pr, &nb);
    if (per_rank) *per_rank = pr;
    if (batches) *batches = nb;
    return REEL_OK;
}
