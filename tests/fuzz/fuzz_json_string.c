/* fuzz_json_string.c: libFuzzer target: core/json.c's string writer. The
 * input (up to its first NUL) is any bytes; the output must be strict JSON
 * in UTF-8 (no raw control character, no ill-formed sequence, escapes only
 * of the JSON kind), and reel's own reader must take it back as the input
 * with each byte that is not UTF-8 read as U+00XX. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Length of the well-formed UTF-8 sequence at p[0..n) (RFC 3629), or 0:
 * written apart from json.c's, from the table of well-formed sequences. */
static size_t wf_len(const unsigned char *p, size_t n)
{
    static const struct {
        unsigned char lo0, hi0, lo1, hi1;
        size_t len;
    } t[] = {
        { 0x00, 0x7F, 0, 0, 1 },       { 0xC2, 0xDF, 0x80, 0xBF, 2 }, { 0xE0, 0xE0, 0xA0, 0xBF, 3 },
        { 0xE1, 0xEC, 0x80, 0xBF, 3 }, { 0xED, 0xED, 0x80, 0x9F, 3 }, { 0xEE, 0xEF, 0x80, 0xBF, 3 },
        { 0xF0, 0xF0, 0x90, 0xBF, 4 }, { 0xF1, 0xF3, 0x80, 0xBF, 4 }, { 0xF4, 0xF4, 0x80, 0x8F, 4 },
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        if (p[0] < t[k].lo0 || p[0] > t[k].hi0) continue;
        size_t len = t[k].len;
        if (len > n) return 0;
        if (len > 1 && (p[1] < t[k].lo1 || p[1] > t[k].hi1)) return 0;
        for (size_t j = 2; j < len; j++)
            if (p[j] < 0x80 || p[j] > 0xBF) return 0;
        return len;
    }
    return 0;
}

/* A strict check of one JSON string token: text[0..n) is "..." and nothing else. */
static int strict_string(const unsigned char *s, size_t n)
{
    if (n < 2 || s[0] != '"' || s[n - 1] != '"') return 0;
    for (size_t i = 1; i < n - 1;) {
        if (s[i] < 0x20) return 0;
        if (s[i] == '"') return 0; /* an unescaped quote ends the string early */
        if (s[i] == '\\') {
            if (i + 1 >= n - 1) return 0;
            unsigned char e = s[i + 1];
            if (e == 'u') {
                if (i + 6 > n - 1) return 0;
                for (size_t j = i + 2; j < i + 6; j++)
                    if (!strchr("0123456789abcdefABCDEF", s[j]) || !s[j]) return 0;
                /* the writer escapes only code points below U+0100: never a surrogate */
                if (s[i + 2] != '0' || s[i + 3] != '0') return 0;
                i += 6;
            } else if (strchr("\"\\/bfnrt", e) && e) {
                i += 2;
            } else {
                return 0;
            }
            continue;
        }
        size_t l = wf_len(s + i, n - 1 - i);
        if (!l) return 0;
        i += l;
    }
    return 1;
}

static const char *g_want;
static int g_found;

static int member(void *opaque, const char *key, const reel_json_value *v)
{
    (void)opaque;
    if (strcmp(key, "k") != 0 || v->type != REEL_JSON_STRING || strcmp(v->text, g_want) != 0) abort();
    g_found++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size + 1);
    if (!in) return 0;
    memcpy(in, data, size);
    in[size] = '\0';
    size_t n = strlen(in);
    /* what the reader must give back: UTF-8 kept, any other byte as U+00XX */
    char *want = malloc(2 * n + 1);
    if (!want) {
        free(in);
        return 0;
    }
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char *p = (const unsigned char *)in + i;
        size_t l = wf_len(p, n - i);
        if (l) {
            memcpy(want + w, p, l);
            w += l;
            i += l;
        } else {
            want[w++] = (char)(0xC0 | (p[0] >> 6));
            want[w++] = (char)(0x80 | (p[0] & 0x3F));
            i++;
        }
    }
    want[w] = '\0';

    reel_buf b;
    reel__buf_init(&b);
    reel__buf_puts(&b, "{\"k\":");
    size_t at = b.len;
    reel__buf_json_string(&b, in);
    size_t end = b.len;
    reel__buf_puts(&b, "}");
    if (b.oom) {
        reel__buf_free(&b);
        free(want);
        free(in);
        return 0;
    }
    if (!strict_string((const unsigned char *)b.data + at, end - at)) abort();
    g_want = want;
    g_found = 0;
    size_t where = 0;
    if (reel__json_object_each(b.data, b.len, member, NULL, &where) != 0 || g_found != 1) abort();
    reel__buf_free(&b);
    free(want);
    free(in);
    return 0;
}
