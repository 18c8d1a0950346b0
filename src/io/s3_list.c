/* s3_list.c: listing an s3://bucket/prefix/ with ListObjectsV2 over every
 * page (continuation tokens), each page a whole GET of the http transport,
 * and the parser of one page (keys, XML entities, truncation). */
#define _GNU_SOURCE
#include "io/s3.h"
#include "io/http.h"
#include "core/error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends s %-encoded for a query value: A-Z a-z 0-9 - _ . ~ and '/' kept.
 * '/' stays literal because libcurl 7.88's SigV4 signing (Debian 12) signs
 * a %2F in a query differently from what S3 servers compute (checked
 * against moto), while a literal '/' is signed as S3 canonicalises it. */
static int put_query_value(char *out, size_t size, const char *s)
{
    size_t o = strlen(out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (o + 4 >= size) return -1;
        if (isalnum(*p) || strchr("-_.~/", *p))
            out[o++] = (char)*p;
        else
            o += (size_t)snprintf(out + o, size - o, "%%%02X", *p);
    }
    out[o] = '\0';
    return 0;
}

/* The text of the next <tag>...</tag> at or after *at (before `end`), XML
 * entities decoded, into out; advances *at past it. 0, or -1 when none. */
static int next_element(const char **at, const char *end, const char *tag, char *out, size_t size)
{
    char open[64], close[64];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    if (*at >= end) return -1;
    const char *a = memmem(*at, (size_t)(end - *at), open, strlen(open));
    if (!a) return -1;
    a += strlen(open);
    const char *b = memmem(a, (size_t)(end - a), close, strlen(close));
    if (!b) return -1;
    size_t o = 0;
    for (const char *p = a; p < b && o + 1 < size;) {
        static const struct {
            const char *ent;
            char c;
        } ents[] = { { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' } };
        int done = 0;
        if (*p == '&') {
            for (size_t e = 0; e < sizeof ents / sizeof ents[0]; e++) {
                size_t l = strlen(ents[e].ent);
                if ((size_t)(b - p) >= l && !strncmp(p, ents[e].ent, l)) {
                    out[o++] = ents[e].c;
                    p += l;
                    done = 1;
                    break;
                }
            }
            if (!done && p[1] == '#') { /* &#NN; or &#xHH; (ASCII only) */
                char *q;
                long v = p[2] == 'x' ? strtol(p + 3, &q, 16) : strtol(p + 2, &q, 10);
                if (q < b && *q == ';' && v > 0 && v < 128) {
                    out[o++] = (char)v;
                    p = q + 1;
                    done = 1;
                }
            }
        }
        if (!done) out[o++] = *p++;
    }
    out[o] = '\0';
    *at = b + strlen(close);
    return 0;
}

int reel__s3_parse_listing(const char *body, size_t len, const char *prefix, char ***names, size_t *count, size_t *cap,
                           char *token, size_t token_size, const char *name, reel_error *err)
{
    const size_t pl = strlen(prefix);
    const char *at = body, *end = body + len;
    int st = REEL_OK;
    if (!memmem(body, len, "<ListBucketResult", 17))
        return reel__error_set(err, REEL_E_IO, "%s: listing: not a ListObjectsV2 answer", name);
    char key[2048];
    const char *c = at;
    while ((c = memmem(c, (size_t)(end - c), "<Contents>", 10)) != NULL) {
        const char *ce = memmem(c, (size_t)(end - c), "</Contents>", 11);
        if (!ce) break;
        const char *k = c;
        if (next_element(&k, ce, "Key", key, sizeof key) == 0 && !strncmp(key, prefix, pl) && key[pl]) {
            if (*count == *cap) {
                size_t nc = *cap ? *cap * 2 : 1024;
                char **nv = realloc(*names, nc * sizeof *nv);
                if (!nv) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
                *names = nv;
                *cap = nc;
            }
            if (!((*names)[*count] = strdup(key + pl)))
                return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
            (*count)++;
        }
        c = ce + 11;
    }
    char trunc[16] = "";
    const char *t = at;
    next_element(&t, end, "IsTruncated", trunc, sizeof trunc);
    token[0] = '\0';
    if (!strcmp(trunc, "true")) {
        t = at;
        if (next_element(&t, end, "NextContinuationToken", token, token_size) != 0 || !token[0])
            st = reel__error_set(err, REEL_E_IO, "%s: listing: truncated without a continuation token", name);
    }
    return st;
}

int reel__s3_list(const char *uri, const reel__io_options *opt, char ***names, size_t *count, reel_error *err)
{
    *names = NULL;
    *count = 0;
    char name[512];
    reel__io_redact(uri, name, sizeof name);
    const char *b = uri + 5;
    const char *slash = strchr(b, '/');
    size_t bl = slash ? (size_t)(slash - b) : strlen(b);
    if (bl == 0 || bl >= 256) return reel__error_set(err, REEL_E_INVALID_ARG, "%s: want s3://bucket/prefix/", name);
    char bucket_uri[300];
    snprintf(bucket_uri, sizeof bucket_uri, "s3://%.*s/", (int)bl, b);
    /* the prefix, ending in '/' unless empty: a folder, as a local path is */
    char prefix[2048];
    snprintf(prefix, sizeof prefix, "%s", slash ? slash + 1 : "");
    size_t pl = strlen(prefix);
    if (pl && prefix[pl - 1] != '/') {
        if (pl + 1 >= sizeof prefix) return reel__error_set(err, REEL_E_INVALID_ARG, "%s: prefix too long", name);
        prefix[pl++] = '/';
        prefix[pl] = '\0';
    }
    /* keys per page: the server's default (1,000) unless REEL_S3_LIST_PAGE
     * asks for fewer (for tests: several pages from a few objects) */
    long page_keys = 0;
    const char *pk = getenv("REEL_S3_LIST_PAGE");
    if (pk && *pk) {
        char *e;
        page_keys = strtol(pk, &e, 10);
        if (*e || page_keys < 1 || page_keys > 1000)
            return reel__error_set(err, REEL_E_INVALID_ARG, "%s: REEL_S3_LIST_PAGE=\"%s\": want 1 to 1000 keys", name,
                                   pk);
    }
    char **v = NULL;
    size_t n = 0, cap = 0;
    char token[2048] = "";
    int st = REEL_OK;
    /* bounded: at most this many pages (1,000 keys each by default), each
     * request by the remote settings' timeouts and retries */
    for (int page = 0; st == REEL_OK && page < 100000; page++) {
        if (page > 0 && opt && opt->interrupt && opt->interrupt(opt->interrupt_opaque)) {
            st = reel__error_set(err, REEL_E_CANCELLED, "%s: listing: stopped after %d pages", name, page);
            break;
        }
        /* parameters in sorted order: the SigV4 canonical query wants them so */
        char query[8192] = "";
        if (token[0]) {
            strcat(query, "continuation-token=");
            if (put_query_value(query, sizeof query, token) != 0) {
                st = reel__error_set(err, REEL_E_IO, "%s: continuation token too long", name);
                break;
            }
            strcat(query, "&");
        }
        strcat(query, "list-type=2&");
        if (page_keys) snprintf(query + strlen(query), sizeof query - strlen(query), "max-keys=%ld&", page_keys);
        strcat(query, "prefix=");
        if (put_query_value(query, sizeof query, prefix) != 0) {
            st = reel__error_set(err, REEL_E_INVALID_ARG, "%s: prefix too long", name);
            break;
        }
        char last[sizeof token];
        memcpy(last, token, sizeof token);
        uint8_t *body = NULL;
        size_t len = 0;
        reel_error e;
        st = reel__http_get(bucket_uri, query, opt, &body, &len, &e);
        if (st != REEL_OK) {
            reel__error_set(err, st, "%s: listing: %s", name, e.message);
            break;
        }
        st = reel__s3_parse_listing((const char *)body, len, prefix, &v, &n, &cap, token, sizeof token, name, err);
        free(body);
        if (st != REEL_OK || !token[0]) break;
        if (!strcmp(token, last)) {
            st =
                reel__error_set(err, REEL_E_IO, "%s: listing: the server gave the same continuation token twice", name);
            break;
        }
    }
    if (st == REEL_OK && token[0]) st = reel__error_set(err, REEL_E_IO, "%s: listing: more than 100000 pages", name);
    if (st != REEL_OK) {
        for (size_t i = 0; i < n; i++) free(v[i]);
        free(v);
        return st;
    }
    *names = v;
    *count = n;
    return REEL_OK;
}
