/* hash.h: FNV-1a, 64-bit, the one small non-cryptographic hash of reel
 * (sidecar checksums, class-name lookup, index-cache file names, HTTP
 * validators). */
#ifndef REEL_CORE_HASH_H
#define REEL_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define REEL_FNV_OFFSET 0xcbf29ce484222325ULL

/* Continues hash h over n bytes (start with REEL_FNV_OFFSET). */
static inline uint64_t reel__fnv1a(uint64_t h, const void *data, size_t n)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

#endif
