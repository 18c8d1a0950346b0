/* plan.c: the global order of an epoch (a permutation cut into canonical
 * spans taken in turn), a rank's stripe of it by batch from any number of
 * samples seen (pad or drop on the remainder), and the public reel/order.h. */
#include "pipeline/plan.h"
#include "pipeline/rng.h"
#include "core/error.h"
#include "reel/loader.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- order */

int reel__order_set_canonical(reel_order *o, int ranks, int batch, reel_error *err)
{
    if (ranks < 1 || batch < 1)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "order: canonical_ranks (%d) and canonical_batch (%d) must be >= 1", ranks, batch);
    o->canon_ranks = ranks;
    o->canon_batch = batch;
    return REEL_OK;
}

static int set_blocks(reel_order *o, const int64_t *starts, size_t nblocks, reel_error *err)
{
    if (nblocks < 1 || starts[0] != 0 || starts[nblocks] != o->n)
        return reel__error_set(err, REEL_E_INVALID_ARG, "order: read blocks do not cover the dataset");
    for (size_t b = 0; b < nblocks; b++)
        if (starts[b + 1] <= starts[b]) return reel__error_set(err, REEL_E_INVALID_ARG, "order: an empty read block");
    o->starts = malloc((nblocks + 1) * sizeof *o->starts);
    o->blocks = malloc(nblocks * sizeof *o->blocks);
    if (!o->starts || !o->blocks) return reel__error_set(err, REEL_E_NOMEM, "order: out of memory for the read blocks");
    memcpy(o->starts, starts, (nblocks + 1) * sizeof *starts);
    o->nstarts = nblocks + 1;
    return REEL_OK;
}

int reel__order_init(reel_order *o, const reel_order_settings *s, reel_error *err)
{
    memset(o, 0, sizeof *o);
    o->perm_epoch = -1;
    if (s->num_samples <= 0) return reel__error_set(err, REEL_E_EMPTY, "order: the dataset is empty");
    if (s->shuffle_window < -1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "order: shuffle_window must be >= 0, or -1 (a full shuffle)");
    o->n = s->num_samples;
    o->seed = s->seed;
    o->shuffle = s->shuffle ? 1 : 0;
    int st = reel__order_set_canonical(o, s->canonical_ranks, s->canonical_batch, err);
    if (st != REEL_OK) return st;
    if (o->shuffle && s->shuffle_window > 0 && s->shuffle_window < o->n) {
        o->window = s->shuffle_window;
        o->blocks = malloc((size_t)((o->n + o->window - 1) / o->window) * sizeof *o->blocks);
        if (!o->blocks) return reel__error_set(err, REEL_E_NOMEM, "order: out of memory for the shuffle blocks");
    } else if (o->shuffle && s->shuffle_window == 0 && s->block_starts && s->num_blocks > 1) {
        st = set_blocks(o, s->block_starts, s->num_blocks, err);
        if (st != REEL_OK) return st;
    }
    o->perm = malloc((size_t)o->n * sizeof *o->perm);
    if (!o->perm) return reel__error_set(err, REEL_E_NOMEM, "order: out of memory for the permutation");
    return REEL_OK;
}

int reel__order_set_fixed(reel_order *o, const int64_t *list, int64_t dataset_size, reel_error *err)
{
    for (int64_t i = 0; i < o->n; i++)
        if (list[i] < 0 || list[i] >= dataset_size)
            return reel__error_set(err, REEL_E_INVALID_ARG, "loader: samples[%lld] = %lld is not in [0, %lld)",
                                   (long long)i, (long long)list[i], (long long)dataset_size);
    free(o->fixed);
    o->fixed = malloc((size_t)o->n * sizeof *o->fixed);
    if (!o->fixed) return reel__error_set(err, REEL_E_NOMEM, "loader: out of memory for the samples");
    memcpy(o->fixed, list, (size_t)o->n * sizeof *list);
    return REEL_OK;
}

void reel__order_free(reel_order *o)
{
    free(o->fixed);
    o->fixed = NULL;
    free(o->perm);
    free(o->blocks);
    free(o->starts);
    o->perm = o->blocks = o->starts = NULL;
}

void reel__order_epoch(reel_order *o, int64_t epoch)
{
    if (o->perm_epoch == epoch || o->fixed) return;
    if (o->shuffle && o->starts)
        reel__rng_permutation_blocks(o->seed, (uint64_t)epoch, o->starts, o->nstarts - 1, 0, o->perm, (size_t)o->n,
                                     o->blocks);
    else if (o->shuffle && o->window > 0)
        reel__rng_permutation_windowed(o->seed, (uint64_t)epoch, o->window, o->perm, (size_t)o->n, o->blocks);
    else
        reel__rng_permutation(o->seed, (uint64_t)epoch, o->shuffle, o->perm, (size_t)o->n);
    o->perm_epoch = epoch;
}

/* The canonical layout: the permutation cut into C contiguous spans (the
 * first n % C one longer), read U samples from each span in turn. Position g
 * of the order -> position in the permutation, O(1). Rounds in which every
 * span still has U samples are regular; what is left (fewer than U + 1 per
 * span) is one last round, span by span. */
static int64_t span_position(const reel_order *o, int64_t g)
{
    const int64_t C = o->canon_ranks, U = o->canon_batch, n = o->n;
    if (C == 1) return g;
    const int64_t q = n / C, r = n % C, rounds = q / U, regular = rounds * C * U;
    int64_t c, j;
    if (g < regular) {
        const int64_t round = g / (C * U), in = g % (C * U);
        c = in / U;
        j = round * U + in % U;
    } else {
        const int64_t h = g - regular, t = q - rounds * U; /* span c has t + (c < r) left */
        if (h < r * (t + 1)) {
            c = h / (t + 1);
            j = rounds * U + h % (t + 1);
        } else {
            c = r + (h - r * (t + 1)) / t;
            j = rounds * U + (h - r * (t + 1)) % t;
        }
    }
    return c * q + (c < r ? c : r) + j;
}

int64_t reel__order_sample(const reel_order *o, int64_t g)
{
    if (g >= o->n) g = (g - o->n) % o->n;
    if (o->fixed) return o->fixed[g];
    return o->perm[span_position(o, g)];
}

/* --------------------------------------------------------------- stripe */

typedef struct shape {
    int64_t virt, vrank; /* ranks x workers, and this one's number among them */
    int64_t full;        /* full global batches left */
    int64_t tail_total;  /* samples after them */
    int64_t tail;        /* of those, per virtual rank */
    int64_t batches;
} shape;

static shape stripe_shape(const reel_stripe *s)
{
    shape h;
    h.virt = (int64_t)s->world_size * s->num_workers;
    h.vrank = (int64_t)s->worker * s->world_size + s->rank;
    int64_t left = s->num_samples - s->samples_seen;
    if (left < 0) left = 0;
    h.full = left / (h.virt * s->batch_size);
    h.tail_total = left - h.full * h.virt * s->batch_size;
    h.tail = s->shard_mode == REEL_SHARD_PAD ? (h.tail_total + h.virt - 1) / h.virt : h.tail_total / h.virt;
    h.batches = h.full + (h.tail > 0 && !(s->drop_last && h.tail < s->batch_size));
    return h;
}

int64_t reel__stripe_batches(const reel_stripe *s)
{
    return stripe_shape(s).batches;
}

void reel__stripe_batch(const reel_stripe *s, int64_t k, reel_stripe_batch *b)
{
    const shape h = stripe_shape(s);
    const int64_t B = s->batch_size, W = s->world_size, group = s->worker + 1;
    if (k < h.full) {
        b->first = s->samples_seen + (k * h.virt + h.vrank) * B;
        b->count = B;
        b->samples_seen_after = s->samples_seen + k * h.virt * B + group * W * B;
    } else {
        const int64_t base = s->samples_seen + h.full * h.virt * B;
        b->first = base + h.vrank * h.tail;
        b->count = h.tail;
        b->samples_seen_after = base + group * W * h.tail;
    }
    /* the last group's last batch ends the epoch (what is dropped included) */
    if (b->samples_seen_after > s->num_samples || (k == h.batches - 1 && s->worker == s->num_workers - 1))
        b->samples_seen_after = s->num_samples;
}

/* ----------------------------------------------------------------- plan */

void reel__plan_shape(int64_t n, int world, int shard_mode, int64_t batch, int drop_last, int64_t *per_rank,
                      int64_t *batches)
{
    reel_stripe s = reel_stripe_make(n, batch);
    s.world_size = world;
    s.shard_mode = (reel_shard_mode)shard_mode;
    s.drop_last = drop_last ? 1 : 0;
    const shape h = stripe_shape(&s);
    if (per_rank) *per_rank = h.full * batch + h.tail;
    if (batches) *batches = h.batches;
}

int reel__plan_init(reel_plan *p, const reel_order_settings *os, const reel_stripe *st, reel_error *err)
{
    memset(p, 0, sizeof *p);
    p->order.perm_epoch = -1;
    p->stripe = *st;
    p->stripe.num_samples = os->num_samples;
    p->stripe.samples_seen = 0;
    if (os->num_samples <= 0) return reel__error_set(err, REEL_E_EMPTY, "loader: the dataset is empty");
    int rc = reel_stripe_check(&p->stripe, err);
    if (rc != REEL_OK) return rc;
    const shape h = stripe_shape(&p->stripe);
    p->per_rank = h.full * st->batch_size + h.tail;
    if (p->per_rank == 0)
        return reel__error_set(err, REEL_E_EMPTY, "loader: %lld samples for %lld ranks leave rank %d none (drop mode)",
                               (long long)os->num_samples, (long long)h.virt, (int)h.vrank);
    if (h.batches == 0)
        return reel__error_set(err, REEL_E_EMPTY,
                               "loader: %lld samples per rank are fewer than one batch of %lld with drop_last",
                               (long long)p->per_rank, (long long)st->batch_size);
    return reel__order_init(&p->order, os, err);
}

void reel__plan_free(reel_plan *p)
{
    reel__order_free(&p->order);
}

int64_t reel__plan_batches(const reel_plan *p, int64_t seen)
{
    reel_stripe s = p->stripe;
    s.samples_seen = seen;
    return reel__stripe_batches(&s);
}

void reel__plan_batch(const reel_plan *p, int64_t seen, int64_t k, reel_stripe_batch *b)
{
    reel_stripe s = p->stripe;
    s.samples_seen = seen;
    reel__stripe_batch(&s, k, b);
}

void reel__plan_epoch(reel_plan *p, int64_t epoch)
{
    reel__order_epoch(&p->order, epoch);
}

int64_t reel__plan_sample(const reel_plan *p, int64_t g, int *padded)
{
    if (padded) *padded = g >= p->order.n;
    return reel__order_sample(&p->order, g);
}

/* --------------------------------------------------------------- public */

void reel_order_default_settings(reel_order_settings *s)
{
    memset(s, 0, sizeof *s);
    s->shuffle = 1;
    s->canonical_ranks = 1;
    s->canonical_batch = 1;
}

int reel_order_create(reel_order **out, const reel_order_settings *s, reel_error *err)
{
    if (!out || !s) return reel__error_set(err, REEL_E_INVALID_ARG, "order: NULL argument");
    *out = NULL;
    if (s->num_samples < 1) return reel__error_set(err, REEL_E_INVALID_ARG, "order: num_samples must be >= 1");
    reel_order *o = malloc(sizeof *o);
    if (!o) return reel__error_set(err, REEL_E_NOMEM, "order: out of memory");
    int st = reel__order_init(o, s, err);
    if (st != REEL_OK) {
        reel__order_free(o);
        free(o);
        return st;
    }
    reel__order_epoch(o, 0);
    *out = o;
    return REEL_OK;
}

int reel_order_set_epoch(reel_order *o, int64_t epoch, reel_error *err)
{
    if (!o || epoch < 0) return reel__error_set(err, REEL_E_INVALID_ARG, "order: NULL or a negative epoch");
    reel__order_epoch(o, epoch);
    return REEL_OK;
}

int reel_order_set_canonical(reel_order *o, int canonical_ranks, int canonical_batch, reel_error *err)
{
    if (!o) return reel__error_set(err, REEL_E_INVALID_ARG, "order: NULL");
    return reel__order_set_canonical(o, canonical_ranks, canonical_batch, err);
}

int reel_order_get_sample(const reel_order *o, int64_t position, int64_t *index, reel_error *err)
{
    if (!o || !index) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_order_get_sample: NULL argument");
    if (position < 0)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "order: position %lld is negative", (long long)position);
    *index = reel__order_sample(o, position);
    return REEL_OK;
}

void reel_order_destroy(reel_order **o)
{
    if (!o || !*o) return;
    reel__order_free(*o);
    free(*o);
    *o = NULL;
}

reel_stripe reel_stripe_make(int64_t num_samples, int64_t batch_size)
{
    reel_stripe s;
    memset(&s, 0, sizeof s);
    s.num_samples = num_samples;
    s.batch_size = batch_size;
    s.world_size = 1;
    s.num_workers = 1;
    s.shard_mode = REEL_SHARD_PAD;
    return s;
}

int reel_stripe_check(const reel_stripe *s, reel_error *err)
{
    if (!s) return reel__error_set(err, REEL_E_INVALID_ARG, "stripe: NULL");
    if (s->num_samples < 0 || s->samples_seen < 0 || s->samples_seen > s->num_samples)
        return reel__error_set(err, REEL_E_INVALID_ARG, "stripe: samples_seen %lld not in [0, num_samples %lld]",
                               (long long)s->samples_seen, (long long)s->num_samples);
    if (s->world_size < 1 || s->rank < 0 || s->rank >= s->world_size)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: rank %d not in [0, world_size %d)", s->rank,
                               s->world_size);
    if (s->num_workers < 1 || s->worker < 0 || s->worker >= s->num_workers)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: worker %d not in [0, num_workers %d)", s->worker,
                               s->num_workers);
    if (s->batch_size < 1) return reel__error_set(err, REEL_E_INVALID_ARG, "loader: batch_size must be >= 1");
    if (s->shard_mode != REEL_SHARD_PAD && s->shard_mode != REEL_SHARD_DROP)
        return reel__error_set(err, REEL_E_INVALID_ARG, "loader: unknown shard mode %d", (int)s->shard_mode);
    return REEL_OK;
}

int64_t reel_stripe_get_num_batches(const reel_stripe *s)
{
    return s && reel_stripe_check(s, NULL) == REEL_OK ? reel__stripe_batches(s) : 0;
}

int64_t reel_stripe_get_num_samples(const reel_stripe *s)
{
    if (!s || reel_stripe_check(s, NULL) != REEL_OK) return 0;
    const shape h = stripe_shape(s);
    return h.full * s->batch_size + (h.batches > h.full ? h.tail : 0);
}

int reel_stripe_get_batch(const reel_stripe *s, int64_t k, reel_stripe_batch *out, reel_error *err)
{
    int st = reel_stripe_check(s, err);
    if (st != REEL_OK) return st;
    if (!out) return reel__error_set(err, REEL_E_INVALID_ARG, "stripe: out is NULL");
    if (k < 0 || k >= reel__stripe_batches(s))
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "stripe: batch %lld not in [0, %lld)", (long long)k,
                               (long long)reel__stripe_batches(s));
    memset(out, 0, sizeof *out); /* reserved too (common.h) */
    reel__stripe_batch(s, k, out);
    return REEL_OK;
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
