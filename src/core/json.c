/* json.c: JSON text building (escaping, numbers) and a flat-object reader
 * for JSONL manifests. */
#include "core/json.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void reel__buf_init(reel_buf *b)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

void reel__buf_free(reel_buf *b)
{
    free(b->data);
    reel__buf_init(b);
}

static int reserve(reel_buf *b, size_t extra)
{
    if (b->oom) return -1;
    if (b->len + extra + 1 <= b->cap) return 0;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + extra + 1) nc *= 2;
    char *nd = realloc(b->data, nc);
    if (!nd) {
        b->oom = 1;
        return -1;
    }
    b->data = nd;
    b->cap = nc;
    return 0;
}

void reel__buf_put(reel_buf *b, const char *s, size_t n)
{
    if (reserve(b, n) < 0) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void reel__buf_puts(reel_buf *b, const char *s)
{
    reel__buf_put(b, s, strlen(s));
}

void reel__buf_printf(reel_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        reel__buf_put(b, small, (size_t)n);
        return;
    }
    if (reserve(b, (size_t)n) < 0) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0. p is NUL-terminated,
 * and a NUL is never a continuation byte, so the reads stop at the end. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80) return 1;
    if (c < 0xC2) return 0; /* a continuation byte, or an overlong 2-byte lead */
    if (c < 0xE0) return (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c < 0xF0) {
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF; /* overlong; surrogates */
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c < 0xF5) {
        unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF; /* overlong; past U+10FFFF */
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

void reel__buf_json_string(reel_buf *b, const char *s)
{
    if (!s) {
        reel__buf_puts(b, "null");
        return;
    }
    reel__buf_put(b, "\"", 1);
    const char *run = s;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const char *esc = NULL;
        char tmp[8];
        switch (*p) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (*p < 0x20) {
                snprintf(tmp, sizeof tmp, "\\u%04x", *p);
                esc = tmp;
            } else if (*p >= 0x80) {
                size_t n = utf8_len(p);
                if (n) { /* well-formed: kept as it is */
                    p += n;
                    continue;
                }
                /* a byte that is not UTF-8 (a file name is bytes): \u00XX,
                 * the code point of the byte's value, so the text stays
                 * valid UTF-8 JSON and still shows which byte it was */
                snprintf(tmp, sizeof tmp, "\\u%04x", *p);
                esc = tmp;
            }
        }
        if (esc) {
            reel__buf_put(b, run, (size_t)((const char *)p - run));
            reel__buf_puts(b, esc);
            run = (const char *)p + 1;
        }
        p++;
    }
    reel__buf_puts(b, run);
    reel__buf_put(b, "\"", 1);
}

void reel__buf_json_double(reel_buf *b, double v)
{
    if (!isfinite(v)) {
        reel__buf_puts(b, "null");
        return;
    }
    if (v == floor(v) && fabs(v) < 1e15)
        reel__buf_printf(b, "%.0f", v);
    else
        reel__buf_printf(b, "%.9g", v);
}

char *reel__buf_take(reel_buf *b)
{
    if (b->oom) {
        reel__buf_free(b);
        return NULL;
    }
    char *d = b->data;
    if (!d) {
        d = malloc(1);
        if (d) d[0] = '\0';
    }
    reel__buf_init(b);
    return d;
}

/* ---- reader ---- */

typedef struct parser {
    const char *s;
    size_t len, pos;
} parser;

static void skip_ws(parser *p)
{
    while (p->pos < p->len &&
           (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

static void put_utf8(reel_buf *b, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 63));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 63));
        u[2] = (char)(0x80 | (cp & 63));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 63));
        u[2] = (char)(0x80 | ((cp >> 6) & 63));
        u[3] = (char)(0x80 | (cp & 63));
        n = 4;
    }
    reel__buf_put(b, u, n);
}

static int hex4(parser *p, unsigned *out)
{
    if (p->pos + 4 > p->len) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos++];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

/* Parses a string at p->pos (which is at the opening quote) into b. */
static int parse_string(parser *p, reel_buf *b)
{
    b->len = 0;
    reel__buf_put(b, "", 0);
    if (p->pos >= p->len || p->s[p->pos] != '"') return -1;
    p->pos++;
    while (p->pos < p->len) {
        char c = p->s[p->pos++];
        if (c == '"') return b->oom ? -1 : 0;
        if ((unsigned char)c < 0x20) return -1;
        if (c != '\\') {
            reel__buf_put(b, &c, 1);
            continue;
        }
        if (p->pos >= p->len) return -1;
        c = p->s[p->pos++];
        switch (c) {
        case '"':
        case '\\':
        case '/': reel__buf_put(b, &c, 1); break;
        case 'b': reel__buf_put(b, "\b", 1); break;
        case 'f': reel__buf_put(b, "\f", 1); break;
        case 'n': reel__buf_put(b, "\n", 1); break;
        case 'r': reel__buf_put(b, "\r", 1); break;
        case 't': reel__buf_put(b, "\t", 1); break;
        case 'u': {
            unsigned cp;
            if (hex4(p, &cp) < 0) return -1;
            if (cp >= 0xD800 && cp < 0xDC00 && p->pos + 6 <= p->len && p->s[p->pos] == '\\' &&
                p->s[p->pos + 1] == 'u') {
                unsigned lo;
                p->pos += 2;
                if (hex4(p, &lo) < 0) return -1;
                if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp == 0) return -1; /* embedded NUL: not representable */
            put_utf8(b, cp);
            break;
        }
        default: return -1;
        }
    }
    return -1;
}

/* Skips any value (for nested objects/arrays). */
static int skip_value(parser *p, reel_buf *scratch, int depth)
{
    if (depth > 64) return -1;
    skip_ws(p);
    if (p->pos >= p->len) return -1;
    char c = p->s[p->pos];
    if (c == '"') return parse_string(p, scratch);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        p->pos++;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == close) {
            p->pos++;
            return 0;
        }
        for (;;) {
            if (c == '{') {
                skip_ws(p);
                if (parse_string(p, scratch) < 0) return -1;
                skip_ws(p);
                if (p->pos >= p->len || p->s[p->pos] != ':') return -1;
                p->pos++;
            }
            if (skip_value(p, scratch, depth + 1) < 0) return -1;
            skip_ws(p);
            if (p->pos >= p->len) return -1;
            if (p->s[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (p->s[p->pos] == close) {
                p->pos++;
                return 0;
            }
            return -1;
        }
    }
    /* literal or number */
    size_t st = p->pos;
    while (p->pos < p->len && !strchr(",}] \t\r\n", p->s[p->pos])) p->pos++;
    return p->pos > st ? 0 : -1;
}

int reel__json_object_each(const char *text, size_t len,
                           int (*fn)(void *opaque, const char *key, const reel_json_value *v), void *opaque,
                           size_t *where)
{
    parser p = { text, len, 0 };
    reel_buf key, val;
    reel__buf_init(&key);
    reel__buf_init(&val);
    int rc = -1;
    skip_ws(&p);
    if (p.pos >= p.len || p.s[p.pos] != '{') goto out;
    p.pos++;
    skip_ws(&p);
    if (p.pos < p.len && p.s[p.pos] == '}') {
        p.pos++;
        rc = 0;
        goto tail;
    }
    for (;;) {
        skip_ws(&p);
        if (parse_string(&p, &key) < 0) goto out;
        skip_ws(&p);
        if (p.pos >= p.len || p.s[p.pos] != ':') goto out;
        p.pos++;
        skip_ws(&p);
        if (p.pos >= p.len) goto out;
        reel_json_value v = { REEL_JSON_OTHER, NULL, 0, 0 };
        char c = p.s[p.pos];
        if (c == '"') {
            if (parse_string(&p, &val) < 0) goto out;
            v.type = REEL_JSON_STRING;
            v.text = val.data;
        } else if (c == '{' || c == '[') {
            size_t st = p.pos;
            if (skip_value(&p, &val, 0) < 0) goto out;
            val.len = 0; /* its source text, for a caller that reads it in turn */
            reel__buf_put(&val, p.s + st, p.pos - st);
            if (val.oom) goto out;
            v.text = val.data;
        } else {
            size_t st = p.pos;
            while (p.pos < p.len && !strchr(",} \t\r\n", p.s[p.pos])) p.pos++;
            size_t n = p.pos - st;
            val.len = 0;
            reel__buf_put(&val, p.s + st, n);
            if (val.oom || n == 0) goto out;
            if (strcmp(val.data, "null") == 0)
                v.type = REEL_JSON_NULL;
            else if (strcmp(val.data, "true") == 0) {
                v.type = REEL_JSON_BOOL;
                v.boolean = 1;
            } else if (strcmp(val.data, "false") == 0) {
                v.type = REEL_JSON_BOOL;
                v.boolean = 0;
            } else {
                char *end;
                v.number = strtod(val.data, &end);
                if (*end != '\0') goto out;
                v.type = REEL_JSON_NUMBER;
                v.text = val.data;
            }
        }
        int r = fn(opaque, key.data, &v);
        if (r != 0) {
            rc = r;
            goto done;
        }
        skip_ws(&p);
        if (p.pos >= p.len) goto out;
        if (p.s[p.pos] == ',') {
            p.pos++;
            continue;
        }
        if (p.s[p.pos] == '}') {
            p.pos++;
            rc = 0;
            break;
        }
        goto out;
    }
tail:
    skip_ws(&p);
    if (p.pos != p.len) rc = -1;
    goto done;
out:
    rc = -1;
done:
    if (rc == -1 && where) *where = p.pos;
    reel__buf_free(&key);
    reel__buf_free(&val);
    return rc;
}
