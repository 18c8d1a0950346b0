/* bench_plan.c: the cost of planning an epoch for elastic resume (issue 16):
 * building the epoch's global order (once per epoch, O(N), the same for any
 * number of ranks) and a rank's plan from it, per batch (the stripe of
 * batch k and the dataset index of each of its samples), for 1 to 1,024
 * simulated ranks and up to 10 million samples, fresh and resumed from a
 * checkpoint on another world size. The floor per batch is reading B
 * consecutive entries of the permutation (no stripe, no canonical spans).
 *
 *   bench_plan [--samples N,N,...] [--ranks W,W,...] [--batch B] [--shard-size S]
 *
 * Prints a markdown table: one row per (N, W). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reel/order.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_list(const char *s, int64_t *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        out[n++] = strtoll(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
        if (end == s && *s) break;
    }
    return n;
}

static volatile int64_t sink;

/* Seconds per batch to plan rank `rank` of `st` (every batch of it, or at
 * most `cap` batches spread over the epoch), and the batches planned. */
static double per_batch(const reel_order *o, reel_stripe st, int64_t cap, int64_t *planned)
{
    const int64_t nb = reel_stripe_get_num_batches(&st);
    const int64_t step = nb > cap ? nb / cap : 1;
    int64_t acc = 0, done = 0;
    double t0 = now();
    for (int64_t k = 0; k < nb; k += step, done++) {
        reel_stripe_batch b;
        reel_stripe_get_batch(&st, k, &b, NULL);
        for (int64_t g = b.first; g < b.first + b.count; g++) {
            int64_t d = 0;
            reel_order_get_sample(o, g, &d, NULL);
            acc += d;
        }
    }
    double t = now() - t0;
    sink += acc;
    *planned = done;
    return done ? t / (double)done : 0;
}

int main(int argc, char **argv)
{
    int64_t samples[8] = { 100000, 1000000, 10000000 }, ranks[16] = { 1, 8, 64, 256, 1024 };
    int ns = 3, nr = 5;
    int64_t batch = 32, shard = 1000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--samples") && i + 1 < argc)
            ns = parse_list(argv[++i], samples, 8);
        else if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
            nr = parse_list(argv[++i], ranks, 16);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = strtoll(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--shard-size") && i + 1 < argc)
            shard = strtoll(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--samples N,...] [--ranks W,...] [--batch B] [--shard-size S]\n", argv[0]);
            return 2;
        }
    }
    printf("| samples | ranks | order per epoch (ms) | rank's batches | plan per batch (us) | per sample (ns) "
           "| resumed on W+1: per batch (us) | floor per batch (us) | x floor |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int a = 0; a < ns; a++) {
        const int64_t n = samples[a];
        /* a store's shards of `shard` records: the default order goes shard by shard */
        const size_t nblocks = (size_t)((n + shard - 1) / shard);
        int64_t *starts = malloc((nblocks + 1) * sizeof *starts);
        for (size_t b = 0; b < nblocks; b++) starts[b] = (int64_t)b * shard;
        starts[nblocks] = n;
        for (int c = 0; c < nr; c++) {
            const int w = (int)ranks[c];
            reel_order_settings os;
            reel_order_default_settings(&os);
            os.num_samples = n;
            os.seed = 42;
            os.block_starts = starts;
            os.num_blocks = nblocks;
            os.canonical_ranks = w;
            os.canonical_batch = (int)batch;
            reel_order *o = NULL;
            reel_error err;
            if (reel_order_create(&o, &os, &err) != REEL_OK) {
                fprintf(stderr, "%s\n", err.message);
                return 1;
            }
            double order_ms = 1e30, t0;
            for (int e = 1; e <= 3; e++) { /* the best of three epochs */
                t0 = now();
                reel_order_set_epoch(o, e, NULL);
                const double ms = (now() - t0) * 1e3;
                if (ms < order_ms) order_ms = ms;
            }
            reel_stripe st = reel_stripe_make(n, batch);
            st.world_size = w;
            st.rank = w / 2;
            int64_t planned = 0, planned2 = 0;
            double fresh = 1e30, resumed = 1e30, floor_b = 1e30;
            for (int r = 0; r < 3; r++) {
                const double f = per_batch(o, st, 20000, &planned);
                if (f < fresh) fresh = f;
            }
            /* resumed half way on one more rank (another canonical layout than the world) */
            reel_stripe st2 = st;
            st2.world_size = w + 1;
            st2.rank = w / 2;
            st2.samples_seen = n / 2;
            for (int r = 0; r < 3; r++) {
                const double f = per_batch(o, st2, 20000, &planned2);
                if (f < resumed) resumed = f;
            }
            /* floor: B consecutive reads of a permutation-sized array */
            int64_t *perm = malloc((size_t)n * sizeof *perm);
            for (int64_t i = 0; i < n; i++) reel_order_get_sample(o, i, &perm[i], NULL);
            const int64_t nb = reel_stripe_get_num_batches(&st), step = nb > 20000 ? nb / 20000 : 1;
            for (int r = 0; r < 3; r++) {
                int64_t acc = 0, done = 0;
                t0 = now();
                for (int64_t k = 0; k < nb; k += step, done++) {
                    reel_stripe_batch b;
                    reel_stripe_get_batch(&st, k, &b, NULL);
                    for (int64_t g = b.first; g < b.first + b.count; g++) acc += perm[g < n ? g : g - n];
                }
                const double f = done ? (now() - t0) / (double)done : 0;
                if (f < floor_b) floor_b = f;
                sink += acc;
            }
            free(perm);
            printf("| %lld | %d | %.1f | %lld | %.2f | %.1f | %.2f | %.2f | %.1f |\n", (long long)n, w, order_ms,
                   (long long)reel_stripe_get_num_batches(&st), fresh * 1e6, fresh * 1e9 / (double)batch, resumed * 1e6,
                   floor_b * 1e6, floor_b > 0 ? fresh / floor_b : 0);
            fflush(stdout);
            reel_order_destroy(&o);
        }
        free(starts);
    }
    return 0;
}
