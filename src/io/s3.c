/* s3.c: s3://bucket/key addressing (path-style for custom endpoints,
 * virtual-hosted for AWS), the region, and credentials from the environment
 * or ~/.aws/credentials, for libcurl's own SigV4 signing. */
#define _GNU_SOURCE
#include "io/s3.h"
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
