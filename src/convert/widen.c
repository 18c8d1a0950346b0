/* widen.c: uint8 -> float32 normalisation, out = (v / scale - mean) / std,
 * in SIMD lanes, for the planar (CHW) float32 output; float -> float16 and
 * bfloat16, rounded to nearest even. */
#include "convert/convert_internal.h"
#include "convert/pixel.h"

#include <string.h>

/* The float32 output of a long video is the largest thing reel writes (a
 * 600-frame VLM sample is 1.6 GB): a table lookup per element cannot be
 * vectorised, so once a row is de-interleaved into three byte planes each
 * plane is widened 16 values at a time with the same three IEEE operations
 * the table was built with (convert, divide, subtract, divide: exact, no
 * contraction possible), which reel__widen_f32_matches proves value by
 * value before the converter uses it. */

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

void reel__widen_f32(const uint8_t *restrict s, float *restrict o, int n, float scale, float mean, float sd)
{
    const __m128i z = _mm_setzero_si128();
    const __m128 vs = _mm_set1_ps(scale), vm = _mm_set1_ps(mean), vd = _mm_set1_ps(sd);
    /* v / 1 - 0 / 1 is v exactly: reel.vlm's 0-255 float32 skips the arithmetic */
    const int ident = scale == 1.0f && mean == 0.0f && sd == 1.0f;
    int x = 0;
    for (; x + 16 <= n; x += 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(s + x));
        __m128i lo = _mm_unpacklo_epi8(b, z), hi = _mm_unpackhi_epi8(b, z);
        __m128i q[4] = { _mm_unpacklo_epi16(lo, z), _mm_unpackhi_epi16(lo, z), _mm_unpacklo_epi16(hi, z),
                         _mm_unpackhi_epi16(hi, z) };
        for (int k = 0; k < 4; k++) {
            __m128 f = _mm_cvtepi32_ps(q[k]);
            if (!ident) f = _mm_div_ps(_mm_sub_ps(_mm_div_ps(f, vs), vm), vd);
            _mm_storeu_ps(o + x + 4 * k, f);
        }
    }
    for (; x < n; x++) o[x] = ((float)s[x] / scale - mean) / sd;
}
#else
void reel__widen_f32(const uint8_t *restrict s, float *restrict o, int n, float scale, float mean, float sd)
{
    for (int x = 0; x < n; x++) o[x] = ((float)s[x] / scale - mean) / sd;
}
#endif

int reel__widen_f32_matches(float scale, float mean, float sd, const float lut[256])
{
    uint8_t v[256];
    float got[256];
    for (int i = 0; i < 256; i++) v[i] = (uint8_t)i;
    reel__widen_f32(v, got, 256, scale, mean, sd);
    return memcmp(got, lut, sizeof got) == 0;
}

/* The half and bfloat16 roundings are pixel.h's, shared with the GPU. */
uint16_t reel__f32_to_f16(float f)
{
    return reel__px_f16(f);
}

uint16_t reel__f32_to_bf16(float f)
{
    return reel__px_bf16(f);
}
