/* s3.c: s3://bucket/key addressing (path-style for custom endpoints,
 * virtual-hosted for AWS), the region, and credentials from the environment
 * or ~/.aws/credentials, for libcurl's own SigV4 signing. */
#define _GNU_SOURCE
#include "io/remote.h"
#include "core/error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *env(const char *a)
{
    const char *v = getenv(a);
    return v && *v ? v : NULL;
}

/* Appends s to out with every byte but unreserved ones and '/' %-encoded. */
static void put_encoded(char *out, size_t size, const char *s)
{
    size_t o = strlen(out);
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 4 < size; p++) {
        if (isalnum(*p) || strchr("-_.~/", *p))
            out[o++] = (char)*p;
        else
            o += (size_t)snprintf(out + o, size - o, "%%%02X", *p);
    }
    out[o] = '\0';
}

/* key, secret, token from ~/.aws/credentials [profile]; 0 when found. */
static int read_profile(char *key, char *secret, char *token, size_t size)
{
    char path[1024];
    const char *f = env("AWS_SHARED_CREDENTIALS_FILE");
    if (f)
        snprintf(path, sizeof path, "%s", f);
    else if (env("HOME"))
        snprintf(path, sizeof path, "%s/.aws/credentials", env("HOME"));
    else
        return -1;
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    const char *want = env("AWS_PROFILE") ? env("AWS_PROFILE") : "default";
    char line[1024];
    int in = 0, lines = 0;
    while (fgets(line, sizeof line, fp) && lines++ < 100000) {
        char *p = line;
        while (isspace((unsigned char)*p)) p++;
        char *e = p + strlen(p);
        while (e > p && isspace((unsigned char)e[-1])) *--e = '\0';
        if (*p == '[') {
            char *close = strchr(p, ']');
            if (close) *close = '\0';
            in = !strcmp(p + 1, want);
            continue;
        }
        if (!in || *p == '#' || *p == ';') continue;
        char *eq = strchr(p, '=');
        if (!eq) continue;
        *eq = '\0';
        char *k = p, *v = eq + 1;
        char *ke = k + strlen(k);
        while (ke > k && isspace((unsigned char)ke[-1])) *--ke = '\0';
        while (isspace((unsigned char)*v)) v++;
        if (!strcmp(k, "aws_access_key_id"))
            snprintf(key, size, "%s", v);
        else if (!strcmp(k, "aws_secret_access_key"))
            snprintf(secret, size, "%s", v);
        else if (!strcmp(k, "aws_session_token"))
            snprintf(token, size, "%s", v);
    }
    fclose(fp);
    memset(line, 0, sizeof line);
    return key[0] && secret[0] ? 0 : -1;
}

int reel__s3_resolve(const char *uri, int bucket_only, char **url, char **userpwd, char *sigv4, size_t sigv4_size,
                     struct curl_slist **headers, const char *name, reel_error *err)
{
    *url = NULL;
    *userpwd = NULL;
    const char *b = uri + 5;
    const char *slash = strchr(b, '/');
    if (bucket_only && !slash) slash = b + strlen(b);
    if (!slash || slash == b || (!bucket_only && !slash[1]))
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: want s3://bucket/key", name);
    char bucket[256];
    size_t bl = (size_t)(slash - b);
    if (bl >= sizeof bucket) return reel__error_set(err, REEL_E_INVALID_ARG, "%s: bucket name too long", name);
    memcpy(bucket, b, bl);
    bucket[bl] = '\0';
    const char *key = bucket_only ? "" : slash + 1;
    const char *region = env("AWS_REGION")           ? env("AWS_REGION")
                         : env("AWS_DEFAULT_REGION") ? env("AWS_DEFAULT_REGION")
                                                     : "us-east-1";
    const char *endpoint = env("AWS_ENDPOINT_URL_S3") ? env("AWS_ENDPOINT_URL_S3") : env("AWS_ENDPOINT_URL");
    const char *mode = env("REEL_S3_ADDRESSING");
    size_t n = strlen(key) * 3 + strlen(bucket) + (endpoint ? strlen(endpoint) : 0) + strlen(region) + 64;
    char *u = calloc(1, n);
    if (!u) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
    if (endpoint && !(mode && !strcmp(mode, "virtual"))) {
        size_t el = strlen(endpoint);
        while (el && endpoint[el - 1] == '/') el--;
        snprintf(u, n, "%.*s/%s/", (int)el, endpoint, bucket);
    } else if (endpoint) {
        const char *host = strstr(endpoint, "://");
        snprintf(u, n, "%.*s%s.%s/", host ? (int)(host - endpoint + 3) : 0, endpoint, bucket,
                 host ? host + 3 : endpoint);
        size_t l = strlen(u);
        if (l >= 2 && u[l - 2] == '/') u[l - 1] = '\0';
    } else {
        snprintf(u, n, "https://%s.s3.%s.amazonaws.com/", bucket, region);
    }
    put_encoded(u, n, key);
    *url = u;
    char id[256] = "", secret[256] = "", token[2048] = "";
    if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
        snprintf(id, sizeof id, "%s", env("AWS_ACCESS_KEY_ID"));
        snprintf(secret, sizeof secret, "%s", env("AWS_SECRET_ACCESS_KEY"));
        if (env("AWS_SESSION_TOKEN")) snprintf(token, sizeof token, "%s", env("AWS_SESSION_TOKEN"));
    } else {
        read_profile(id, secret, token, sizeof id);
    }
    int st = REEL_OK;
    if (id[0] && secret[0]) {
        size_t l = strlen(id) + strlen(secret) + 2;
        *userpwd = malloc(l);
        if (!*userpwd)
            st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
        else
            snprintf(*userpwd, l, "%s:%s", id, secret);
        snprintf(sigv4, sigv4_size, "aws:amz:%s:s3", region);
        /* S3 wants the payload hash header, which libcurl 7.88 does not add
         * by itself; as an x-amz-* header it is signed too */
        *headers = curl_slist_append(*headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
        if (st == REEL_OK && token[0]) {
            char h[2100];
            snprintf(h, sizeof h, "x-amz-security-token: %s", token);
            *headers = curl_slist_append(*headers, h);
            memset(h, 0, sizeof h);
        }
    }
    memset(secret, 0, sizeof secret);
    memset(token, 0, sizeof token);
    return st;
}

/* ---------------------------------------------------------------- listing */

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
    const char *pk = env("REEL_S3_LIST_PAGE");
    if (pk) {
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
