/* http_answer.c: reads the head of a server's answer (status, Content-Range,
 * Content-Length, encodings, validators) and judges it against the request:
 * the bytes asked for, no more, unencoded. Pure: no libcurl, no allocation. */
#include "io/http_answer.h"
#include "core/hash.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

void reel__http_head_reset(reel__http_head *h)
{
    memset(h, 0, sizeof *h);
    h->first = h->last = h->total = h->length = -1;
}

/* Skips spaces and tabs from i; the index of the first other byte. */
static size_t skip_blanks(const char *p, size_t i, size_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
    return i;
}

/* A decimal number at p[*i..n): 1 and *v (*i past it), or 0 (no digits, or
 * past 2^62: not a size). */
static int number(const char *p, size_t *i, size_t n, int64_t *v)
{
    int64_t x = 0;
    size_t j = *i;
    for (; j < n && p[j] >= '0' && p[j] <= '9'; j++) {
        if (x > ((int64_t)1 << 62) / 10) return 0;
        x = x * 10 + (p[j] - '0');
    }
    if (j == *i) return 0;
    *i = j;
    *v = x;
    return 1;
}

/* The value of header `name` in line (after the colon, trimmed): 1 and
 * [*a, *b), or 0 (another header). */
static int header_value(const char *p, size_t n, const char *name, size_t *a, size_t *b)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(p, name, k) != 0 || p[k] != ':') return 0;
    size_t i = skip_blanks(p, k + 1, n), e = n;
    while (e > i && (p[e - 1] == '\r' || p[e - 1] == '\n' || p[e - 1] == ' ' || p[e - 1] == '\t')) e--;
    *a = i;
    *b = e;
    return 1;
}

/* "bytes FIRST-LAST/TOTAL" (TOTAL may be '*') in p[i..e): 1, else 0. */
static int parse_content_range(const char *p, size_t i, size_t e, int64_t *first, int64_t *last, int64_t *total)
{
    if (e - i < 6 || strncasecmp(p + i, "bytes", 5) != 0) return 0;
    i = skip_blanks(p, i + 5, e);
    int64_t f, l, t = -1;
    if (!number(p, &i, e, &f) || i >= e || p[i] != '-') return 0;
    i++;
    if (!number(p, &i, e, &l) || i >= e || p[i] != '/') return 0;
    i++;
    if (i < e && p[i] == '*')
        i++;
    else if (!number(p, &i, e, &t))
        return 0;
    if (i != e || l < f || (t >= 0 && l >= t)) return 0; /* not a range of this object */
    *first = f;
    *last = l;
    *total = t;
    return 1;
}

int reel__http_content_range(const char *line, size_t n, int64_t *total)
{
    size_t a, b;
    int64_t f, l, t;
    if (!header_value(line, n, "Content-Range", &a, &b) || !parse_content_range(line, a, b, &f, &l, &t) || t < 0)
        return 0;
    *total = t;
    return 1;
}

/* 1 when the coding in p[a, b) changes the bytes (not identity or chunked). */
static int changes_bytes(const char *p, size_t a, size_t b)
{
    /* a list such as "chunked" or "identity"; anything else is an encoding */
    while (a < b) {
        size_t e = a;
        while (e < b && p[e] != ',') e++;
        size_t s = skip_blanks(p, a, e), t = e;
        while (t > s && (p[t - 1] == ' ' || p[t - 1] == '\t')) t--;
        size_t k = t - s;
        if (k && !(k == 7 && !strncasecmp(p + s, "chunked", 7)) && !(k == 8 && !strncasecmp(p + s, "identity", 8)))
            return 1;
        a = e + 1;
    }
    return 0;
}

void reel__http_head_line(reel__http_head *h, const char *p, size_t n)
{
    if (n >= 5 && !strncmp(p, "HTTP/", 5)) { /* a new answer: a redirect's, a 1xx's, or the last one */
        reel__http_head_reset(h);
        size_t i = 5;
        while (i < n && p[i] != ' ') i++;
        i = skip_blanks(p, i, n);
        int64_t code;
        if (number(p, &i, n, &code) && code < 1000) h->status = (long)code;
        return;
    }
    if (h->complete) return; /* trailers: the head is what was judged */
    if (n == 0 || (n <= 2 && (p[0] == '\r' || p[0] == '\n'))) {
        h->complete = 1;
        return;
    }
    size_t a, b;
    if (header_value(p, n, "Content-Range", &a, &b)) {
        if (!parse_content_range(p, a, b, &h->first, &h->last, &h->total)) h->first = h->last = h->total = -1;
    } else if (header_value(p, n, "Content-Length", &a, &b)) {
        int64_t v;
        size_t i = a;
        h->length = number(p, &i, b, &v) && i == b ? v : -1;
    } else if (header_value(p, n, "Content-Encoding", &a, &b) || header_value(p, n, "Transfer-Encoding", &a, &b)) {
        if (changes_bytes(p, a, b) && !h->encoding[0]) {
            size_t k = b - a < sizeof h->encoding - 1 ? b - a : sizeof h->encoding - 1;
            for (size_t i = 0; i < k; i++) /* printable only: it goes into a message */
                h->encoding[i] = p[a + i] >= 0x20 && p[a + i] < 0x7f ? p[a + i] : '?';
            h->encoding[k] = '\0';
        }
    } else if (header_value(p, n, "ETag", &a, &b)) {
        uint64_t v = reel__fnv1a(REEL_FNV_OFFSET, p + a, b - a);
        h->etag = v ? v : 1;
    } else if (header_value(p, n, "Last-Modified", &a, &b)) {
        uint64_t v = reel__fnv1a(REEL_FNV_OFFSET, p + a, b - a);
        h->modified = v ? v : 1;
    }
}

int reel__http_is_data(long status)
{
    return status == 200 || status == 206;
}

/* The last byte asked for; -1: to the end (or the whole object). */
static int64_t asked_last(const reel__http_ask *q)
{
    return q->off >= 0 && q->len > 0 ? q->off + q->len - 1 : -1;
}

reel__http_verdict reel__http_check_head(const reel__http_head *h, const reel__http_ask *q)
{
    if (!reel__http_is_data(h->status)) return REEL_HTTP_OK; /* not data: the status says what went wrong */
    if (h->encoding[0]) return REEL_HTTP_ENCODED;
    if (h->status == 200) {
        if (h->length > q->whole_max) return q->off >= 0 ? REEL_HTTP_WHOLE_TOO_BIG : REEL_HTTP_TOO_LONG;
        return REEL_HTTP_OK;
    }
    /* a 206: the range asked for, from where it was asked, to its end (or the object's) */
    if (q->off < 0 || h->first < 0 || h->first != q->off) return REEL_HTTP_RANGE_MISMATCH;
    if (h->length >= 0 && h->length != h->last - h->first + 1) return REEL_HTTP_RANGE_MISMATCH;
    const int64_t want = asked_last(q);
    if (want >= 0) {
        if (h->last > want + REEL_HTTP_BODY_SLACK) return REEL_HTTP_TOO_LONG;
        if (h->last < want && !(h->total >= 0 && h->last == h->total - 1)) return REEL_HTTP_RANGE_MISMATCH;
    } else if (h->last - h->first + 1 > q->whole_max + REEL_HTTP_BODY_SLACK) {
        return REEL_HTTP_TOO_LONG;
    }
    return REEL_HTTP_OK;
}

int64_t reel__http_body_max(const reel__http_head *h, const reel__http_ask *q)
{
    if (h->status == 206 && h->first >= 0) return h->last - h->first + 1; /* checked against q already */
    if (h->status == 206) return q->len > 0 ? q->len + REEL_HTTP_BODY_SLACK : q->whole_max + REEL_HTTP_BODY_SLACK;
    return q->whole_max;
}

reel__http_verdict reel__http_overflow(const reel__http_head *h, const reel__http_ask *q)
{
    return h->status == 200 && q->off >= 0 ? REEL_HTTP_WHOLE_TOO_BIG : REEL_HTTP_TOO_LONG;
}

void reel__http_verdict_text(reel__http_verdict v, const reel__http_head *h, const reel__http_ask *q, char *out,
                             size_t size)
{
    char asked[64], got[96];
    if (q->off < 0)
        snprintf(asked, sizeof asked, "the whole object");
    else if (q->len > 0)
        snprintf(asked, sizeof asked, "bytes %lld-%lld", (long long)q->off, (long long)asked_last(q));
    else
        snprintf(asked, sizeof asked, "bytes %lld-", (long long)q->off);
    if (h->first < 0)
        snprintf(got, sizeof got, "no Content-Range");
    else if (h->total < 0)
        snprintf(got, sizeof got, "bytes %lld-%lld/*", (long long)h->first, (long long)h->last);
    else
        snprintf(got, sizeof got, "bytes %lld-%lld/%lld", (long long)h->first, (long long)h->last, (long long)h->total);
    switch (v) {
    case REEL_HTTP_OK: snprintf(out, size, "ok"); break;
    case REEL_HTTP_ENCODED:
        snprintf(out, size, "encoded body refused (Content-Encoding: %s; reel asks for identity)", h->encoding);
        break;
    case REEL_HTTP_TOO_LONG:
        if (q->off < 0)
            snprintf(out, size, "body longer than the %lld-byte limit", (long long)q->whole_max);
        else
            snprintf(out, size, "body longer than the requested range (asked for %s; Content-Range: %s)", asked, got);
        break;
    case REEL_HTTP_WHOLE_TOO_BIG:
        if (h->length >= 0)
            snprintf(out, size,
                     "the server ignores Range: 200 for a range request on an object over the whole-object limit "
                     "(%lld bytes, limit %lld)",
                     (long long)h->length, (long long)q->whole_max);
        else
            snprintf(out, size,
                     "the server ignores Range: 200 for a range request on an object over the whole-object limit "
                     "(more than %lld bytes)",
                     (long long)q->whole_max);
        break;
    case REEL_HTTP_RANGE_MISMATCH:
        snprintf(out, size, "range mismatch: asked for %s, got %s%s", asked, got,
                 h->status == 206 && h->length >= 0 && h->first >= 0 && h->length != h->last - h->first + 1
                     ? " with another Content-Length"
                     : "");
        break;
    }
}
