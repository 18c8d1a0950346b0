/* fuzz_remote_responses.c: libFuzzer target: what a server, or anything
 * pretending to be one, feeds reel: an S3 ListObjectsV2 answer (keys, XML
 * entities, truncation, continuation tokens); and a whole answer to one GET
 * against the request it answers: the first 16 bytes are the request (offset,
 * length, whole-object limit) and the body's length, the rest is the head
 * (status line, headers, blank line; lines end at '\n', as libcurl hands them
 * over). The head is judged as http.c judges it, the body fed as on_body
 * takes it, and every verdict must keep the promises of http_answer.h: no
 * accepted 206 starts elsewhere than asked or claims more than asked plus
 * the slack, no buffer may grow past what was asked, every refusal names
 * its cause. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/http_answer.h"
#include "io/s3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The verdict's message names its cause, and fits any buffer. */
static void check_text(reel__http_verdict v, const reel__http_head *h, const reel__http_ask *q)
{
    static const char *const cause[] = { "ok", "encoded body refused", "body longer than", "200 for a range request",
                                         "range mismatch" };
    char big[512], small[9];
    reel__http_verdict_text(v, h, q, big, sizeof big);
    reel__http_verdict_text(v, h, q, small, sizeof small);
    if (strlen(big) >= sizeof big || strlen(small) >= sizeof small) abort();
    if ((unsigned)v > REEL_HTTP_RANGE_MISMATCH || !strstr(big, cause[v])) abort();
    for (const char *c = big; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) abort(); /* printable: it goes into messages */
}

static void one_answer(const uint8_t *data, size_t size)
{
    if (size < 16) return;
    /* the request: off (top bit: the whole object), len, whole_max; the body's length */
    const uint32_t o = u32(data), l = u32(data + 4);
    reel__http_ask q = { o & 0x80000000u ? -1 : (int64_t)(o & 0xffffff), (int64_t)(l & 0xffffff),
                         (int64_t)(u32(data + 8) & 0xffffff) };
    const int64_t body = (int64_t)(u32(data + 12) & 0x3ffffff);
    reel__http_head h;
    reel__http_head_reset(&h);
    reel__http_verdict v = REEL_HTTP_OK;
    const char *p = (const char *)data + 16, *end = (const char *)data + size;
    while (p < end && v == REEL_HTTP_OK) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        reel__http_head_line(&h, p, n);
        if (h.complete && reel__http_is_data(h.status)) v = reel__http_check_head(&h, &q); /* as on_header */
        p += n;
    }
    if (h.encoding[0] && reel__http_is_data(h.status) && h.complete && v == REEL_HTTP_OK) abort();
    if (v == REEL_HTTP_OK && h.complete && reel__http_is_data(h.status)) {
        const int64_t max = reel__http_body_max(&h, &q);
        if (max < 0) abort();
        if (h.status == 206) {
            /* accepted: it starts where asked, claims no more than asked plus the slack */
            if (q.off < 0 || h.first != q.off || h.last < h.first) abort();
            if (q.len > 0 && (h.last > q.off + q.len - 1 + REEL_HTTP_BODY_SLACK || max > q.len + REEL_HTTP_BODY_SLACK))
                abort();
            /* and ends at the asked end, or at the object's */
            if (q.len > 0 && h.last < q.off + q.len - 1 && h.last != h.total - 1) abort();
        } else if (max > q.whole_max) {
            abort(); /* a whole object within the limit */
        }
        if (body > max) { /* as on_body: the transfer stops, named */
            v = reel__http_overflow(&h, &q);
            if (v != REEL_HTTP_TOO_LONG && v != REEL_HTTP_WHOLE_TOO_BIG) abort();
        }
    }
    check_text(v, &h, &q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the body as a server would give it: bytes, then the NUL reel adds */
    char *body = malloc(size + 1);
    if (!body) return 0;
    memcpy(body, data, size);
    body[size] = '\0';
    char **names = NULL;
    size_t n = 0, cap = 0;
    char token[2048];
    reel_error err;
    (void)reel__s3_parse_listing(body, size, size && data[0] & 1 ? "train/" : "", &names, &n, &cap, token, sizeof token,
                                 "s3://fuzz/", &err);
    int64_t total = -1;
    if (reel__http_content_range((const char *)data, size, &total) && total < 0) abort();
    for (size_t i = 0; i < n; i++) {
        if (!names[i]) abort(); /* every counted key is a string */
        free(names[i]);
    }
    free(names);
    free(body);
    one_answer(data, size);
    return 0;
}
