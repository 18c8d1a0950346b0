/* crc32.c: the store's CRC-32 (reflected 0x04C11DB7, the value carried in
 * and out as is, no inversion: av_crc's AV_CRC_32_IEEE_LE). Every frame read
 * from a store is checked, so this runs over every byte the loader reads:
 * on x86-64 with PCLMULQDQ it folds 64 bytes per step with carry-less
 * multiplies (about 10x av_crc's table walk); elsewhere, and for the last
 * bytes, av_crc. */
#include "store/store_internal.h"

#include <libavutil/crc.h>

static uint32_t crc_table(uint32_t crc, const uint8_t *p, size_t n)
{
    /* av_crc's tables are static and initialised once (thread-safe) */
    return av_crc(av_crc_get_table(AV_CRC_32_IEEE_LE), crc, p, n);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* x's two 64-bit halves multiplied by k's (low by low, high by high),
 * added (xor) to the next 16 bytes: one fold. */
__attribute__((target("pclmul,sse4.1"))) static inline __m128i fold(__m128i x, __m128i k, __m128i next)
{
    __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* n >= 64 and a multiple of 16. The constants are x^k mod P for the fold
 * distances (512 + 64 and 512 bits: k1, k2; 128 + 64 and 128: k3, k4), the
 * 64 -> 32 step (k5), P itself and the Barrett constant mu, all bit-reflected
 * and shifted as the reflected algorithm needs (Gopal et al., "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ", Intel, 2009). */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc_pclmul(uint32_t crc, const uint8_t *p, size_t n)
{
    const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
    const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
    const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124LL);
    const __m128i poly_mu = _mm_set_epi64x(0x1f7011641LL, 0x1db710641LL);
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);

    __m128i x1 = _mm_loadu_si128((const __m128i *)p);
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x4 = _mm_loadu_si128((const __m128i *)(p + 48));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
    p += 64;
    n -= 64;
    /* four lanes, 64 bytes a step */
    while (n >= 64) {
        x1 = fold(x1, k1k2, _mm_loadu_si128((const __m128i *)p));
        x2 = fold(x2, k1k2, _mm_loadu_si128((const __m128i *)(p + 16)));
        x3 = fold(x3, k1k2, _mm_loadu_si128((const __m128i *)(p + 32)));
        x4 = fold(x4, k1k2, _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    /* the lanes into one, then 16 bytes a step */
    x1 = fold(x1, k3k4, x2);
    x1 = fold(x1, k3k4, x3);
    x1 = fold(x1, k3k4, x4);
    while (n >= 16) {
        x1 = fold(x1, k3k4, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    /* 128 -> 64 bits */
    __m128i t = _mm_clmulepi64_si128(x1, k3k4, 0x10);
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), t);
    /* 64 -> 32 bits */
    t = _mm_and_si128(x1, mask32);
    x1 = _mm_srli_si128(x1, 4);
    x1 = _mm_xor_si128(x1, _mm_clmulepi64_si128(t, k5, 0x00));
    /* Barrett reduction to the remainder */
    t = _mm_and_si128(x1, mask32);
    t = _mm_clmulepi64_si128(t, poly_mu, 0x10);
    t = _mm_and_si128(t, mask32);
    t = _mm_clmulepi64_si128(t, poly_mu, 0x00);
    x1 = _mm_xor_si128(x1, t);
    return (uint32_t)_mm_extract_epi32(x1, 1);
}

uint32_t reel__crc32(uint32_t crc, const void *data, size_t n)
{
    const uint8_t *p = data;
    if (n >= 64 && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) {
        size_t body = n & ~(size_t)15;
        crc = crc_pclmul(crc, p, body);
        p += body;
        n -= body;
    }
    return n ? crc_table(crc, p, n) : crc;
}

#else

uint32_t reel__crc32(uint32_t crc, const void *data, size_t n)
{
    return crc_table(crc, data, n);
}

#endif
