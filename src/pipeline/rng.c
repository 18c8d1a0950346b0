/* rng.c: Philox4x32-10 (Salmon et al., SC'11) and the loader's draws on top
 * of it: doubles, bounded integers, per-epoch permutations. */
#include "pipeline/rng.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void reel__philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        uint32_t n0 = hi1 ^ c1 ^ k0;
        uint32_t n1 = lo1;
        uint32_t n2 = hi0 ^ c3 ^ k1;
        uint32_t n3 = lo0;
        c0 = n0;
        c1 = n1;
        c2 = n2;
        c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Counter: (draw, sample, epoch, purpose:8 | attempt:24) with the high
 * halves of draw/sample/epoch folded into the key's mix so 64-bit values
 * stay distinct. Key: the seed. */
uint64_t reel__rng_u64(const reel_rng_key *k, uint64_t draw)
{
    uint32_t ctr[4], key[2], out[4];
    ctr[0] = (uint32_t)draw;
    ctr[1] = (uint32_t)k->sample;
    ctr[2] = (uint32_t)k->epoch;
    ctr[3] = (k->purpose << 24) | (k->attempt & 0xFFFFFFu);
    uint32_t hi = (uint32_t)(draw >> 32) * 0x85EBCA6Bu ^ (uint32_t)(k->sample >> 32) * 0xC2B2AE35u ^
                  (uint32_t)(k->epoch >> 32) * 0x27D4EB2Fu;
    key[0] = (uint32_t)k->seed ^ hi;
    key[1] = (uint32_t)(k->seed >> 32);
    reel__philox4x32(ctr, key, out);
    return ((uint64_t)out[0] << 32) | out[1];
}

double reel__rng_double(const reel_rng_key *k, uint64_t draw)
{
    return (double)(reel__rng_u64(k, draw) >> 11) * (1.0 / 9007199254740992.0);
}

/* 64x64 -> 128 multiply: high and low halves (portable C11). */
static uint64_t mul_64x64(uint64_t a, uint64_t b, uint64_t *lo)
{
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    *lo = (mid << 32) | (uint32_t)p00;
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

uint64_t reel__rng_below(const reel_rng_key *k, uint64_t draw, uint64_t n)
{
    if (n <= 1) return 0;
    /* Lemire's multiply-shift; rejection draws use sub-counters in the high
     * half of the draw number so they never collide with other draws. */
    uint64_t threshold = (0 - n) % n;
    for (uint64_t sub = 0;; sub++) {
        uint64_t x = reel__rng_u64(k, draw + (sub << 40));
        uint64_t lo, hi = mul_64x64(x, n, &lo);
        if (lo >= threshold) return hi;
    }
}

void reel__rng_permutation(uint64_t seed, uint64_t epoch, int shuffle, int64_t *perm, size_t n)
{
    for (size_t i = 0; i < n; i++) perm[i] = (int64_t)i;
    if (!shuffle || n < 2) return;
    reel_rng_key k = { seed, epoch, 0, REEL_RNG_SHUFFLE, 0 };
    for (size_t i = n - 1; i > 0; i--) {
        k.sample = i;
        size_t j = (size_t)reel__rng_below(&k, 0, (uint64_t)i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

void reel__rng_permutation_blocks(uint64_t seed, uint64_t epoch, const int64_t *starts, size_t nblocks, size_t w,
                                  int64_t *perm, size_t n, int64_t *blocks_scratch)
{
    if (nblocks < 1 || n < 2) {
        reel__rng_permutation(seed, epoch, 1, perm, n);
        return;
    }
    int64_t *order = blocks_scratch;
    reel_rng_key k = { seed, epoch, 0, REEL_RNG_SHUFFLE, 1 };
    for (size_t b = 0; b < nblocks; b++) order[b] = (int64_t)b;
    for (size_t i = nblocks - 1; i > 0; i--) {
        k.sample = i;
        size_t j = (size_t)reel__rng_below(&k, 0, (uint64_t)i + 1);
        int64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    k.attempt = 2;
    size_t out = 0;
    for (size_t b = 0; b < nblocks; b++) {
        const size_t ob = (size_t)order[b];
        size_t lo = starts ? (size_t)starts[ob] : ob * w;
        size_t hi = starts ? (size_t)starts[ob + 1] : (lo + w < n ? lo + w : n);
        int64_t *p = perm + out;
        size_t len = hi > lo ? hi - lo : 0;
        for (size_t i = 0; i < len; i++) p[i] = (int64_t)(lo + i);
        for (size_t i = len ? len - 1 : 0; i > 0; i--) {
            k.sample = out + i; /* a position of the epoch: each draw its own */
            size_t j = (size_t)reel__rng_below(&k, 0, (uint64_t)i + 1);
            int64_t t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        out += len;
    }
}

void reel__rng_permutation_windowed(uint64_t seed, uint64_t epoch, int64_t window, int64_t *perm, size_t n,
                                    int64_t *blocks_scratch)
{
    if (window <= 0 || (uint64_t)window >= (uint64_t)n) {
        reel__rng_permutation(seed, epoch, 1, perm, n);
        return;
    }
    const size_t w = (size_t)window;
    reel__rng_permutation_blocks(seed, epoch, NULL, (n + w - 1) / w, w, perm, n, blocks_scratch);
}
