/* audio_cache.c: the audio object's cache (audio_internal.h): full blocks of
 * output samples its runs produced, exact ones only, kept up to
 * reel_audio_settings.cache_bytes (the least used go first), that serve a
 * window again without decoding. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h"

/* Output samples a block holds (per channel). */
#define BLOCK_LEN 4096

static size_t block_bytes(const reel_audio *a)
{
    return (size_t)a->block_len * (size_t)a->info.channels * sizeof(float);
}

static void count_bytes(reel_audio *a)
{
    const int64_t b = (int64_t)((a->n_blocks + (a->fill ? 1 : 0)) * block_bytes(a));
    a->stats.cache_bytes = b;
    if (b > a->stats.cache_peak_bytes) a->stats.cache_peak_bytes = b;
}

void reel__audio_cache_init(reel_audio *a)
{
    a->block_len = BLOCK_LEN;
    a->fill_index = -1;
    a->max_blocks = 0;
    if (a->s.cache_bytes <= 0 || a->info.channels < 1) return;
    /* the blocks and the one being filled within the bound */
    const int64_t n = a->s.cache_bytes / (int64_t)block_bytes(a) - 1;
    if (n < 1) return;
    a->blocks = calloc((size_t)n, sizeof *a->blocks);
    if (a->blocks) a->max_blocks = (size_t)n; /* else: no cache */
}

void reel__audio_cache_free(reel_audio *a)
{
    for (size_t i = 0; i < a->n_blocks; i++) free(a->blocks[i].data);
    free(a->blocks);
    free(a->fill);
    a->blocks = NULL;
    a->fill = NULL;
    a->n_blocks = a->max_blocks = 0;
}

int64_t reel__audio_cache_span(const reel_audio *a)
{
    return (int64_t)a->max_blocks * a->block_len;
}

/* The position of block k in a->blocks, or where it would go (*found 0). */
static size_t find(const reel_audio *a, int64_t k, int *found)
{
    size_t lo = 0, hi = a->n_blocks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->blocks[mid].index < k) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = lo < a->n_blocks && a->blocks[lo].index == k;
    return lo;
}

int64_t reel__audio_cache_get(reel_audio *a, int64_t lo, int64_t hi, float *dst)
{
    const int64_t L = a->block_len, S = hi - lo;
    int64_t i = lo < 0 ? 0 : lo; /* before a0: zeros, already there */
    while (i < hi && a->n_blocks) {
        int found;
        const int64_t k = i / L;
        const size_t at = find(a, k, &found);
        if (!found) break;
        reel__audio_block *b = &a->blocks[at];
        const int64_t to = hi < (k + 1) * L ? hi : (k + 1) * L;
        for (int c = 0; c < a->info.channels; c++)
            memcpy(dst + (size_t)c * (size_t)S + (size_t)(i - lo),
                   b->data + (size_t)c * (size_t)L + (size_t)(i - k * L), (size_t)(to - i) * sizeof(float));
        b->used = ++a->tick;
        i = to;
    }
    if (i < hi && a->fill && a->fill_index == i / L && i < a->fill_next) { /* the block being filled */
        const int64_t to = hi < a->fill_next ? hi : a->fill_next;
        for (int c = 0; c < a->info.channels; c++)
            memcpy(dst + (size_t)c * (size_t)S + (size_t)(i - lo), a->fill + (size_t)c * (size_t)L + (size_t)(i % L),
                   (size_t)(to - i) * sizeof(float));
        i = to;
    }
    return i;
}

/* The filled block into the cache, the least used one out when it is full
 * (its memory is the next fill's). */
static void keep_fill(reel_audio *a)
{
    float *spare = NULL;
    int found;
    if (a->n_blocks == a->max_blocks) {
        size_t old = 0;
        for (size_t i = 1; i < a->n_blocks; i++)
            if (a->blocks[i].used < a->blocks[old].used) old = i;
        spare = a->blocks[old].data;
        memmove(&a->blocks[old], &a->blocks[old + 1], (a->n_blocks - old - 1) * sizeof *a->blocks);
        a->n_blocks--;
    }
    const size_t at = find(a, a->fill_index, &found);
    memmove(&a->blocks[at + 1], &a->blocks[at], (a->n_blocks - at) * sizeof *a->blocks);
    a->blocks[at] = (reel__audio_block){ a->fill_index, ++a->tick, a->fill };
    a->n_blocks++;
    a->fill = spare;
    a->fill_index = -1;
}

void reel__audio_cache_put(reel_audio *a, const float *planes, int n, int stride, int64_t at)
{
    if (!a->max_blocks) return;
    const int64_t L = a->block_len, end = at + n;
    int64_t i = at > a->exact_lo ? at : a->exact_lo;
    while (i < end) {
        const int64_t k = i / L, b0 = k * L, b1 = b0 + L;
        const int64_t to = end < b1 ? end : b1;
        if (a->fill_index != k || a->fill_next != i) { /* no fill goes on here */
            int found = 0;
            if (i == b0) find(a, k, &found);
            if (i != b0 || found) { /* a block begun before the exact samples, or kept already */
                a->fill_index = -1;
                i = to;
                continue;
            }
            if (!a->fill && !(a->fill = malloc(block_bytes(a)))) return; /* out of memory: not kept */
            a->fill_index = k;
            a->fill_next = b0;
        }
        for (int c = 0; c < a->info.channels; c++)
            memcpy(a->fill + (size_t)c * (size_t)L + (size_t)(i - b0),
                   planes + (size_t)c * (size_t)stride + (size_t)(i - at), (size_t)(to - i) * sizeof(float));
        a->fill_next = to;
        i = to;
        if (to == b1) keep_fill(a);
    }
    count_bytes(a);
}
