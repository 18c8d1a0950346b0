/* http.c: remote byte sources over libcurl: http(s):// URLs and s3://bucket/key
 * (SigV4 signed by libcurl itself, or anonymous): libcurl set-up for one object
 * (its CA certificates: the setting, the environment or the system's store),
 * open, whole GETs (listings), close. Reads: http_cache.c; one GET: http_get.c. */
#define _GNU_SOURCE
#include "io/http.h"
#include "io/http_internal.h"
#include "io/pool.h"
#include "io/s3.h"
#include "core/clock.h"
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* A copy of an http(s) URL with the bytes no URL may hold (controls, space,
 * non-ASCII, " < > \\ ^ ` { | }) %-encoded, as a browser sends them: a
 * manifest's "air drumming/x.mp4" resolves to ".../air%20drumming/x.mp4".
 * Everything else, '%' included, is kept, so an encoded URL stays as it is.
 * NULL: out of memory. */
static char *url_escape_illegal(const char *uri)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)uri; *p; p++)
        n += (*p <= 0x20 || *p >= 0x7f || strchr("\"<>\\^`{|}", *p)) ? 3 : 1;
    char *out = malloc(n + 1);
    if (!out) return NULL;
    char *o = out;
    for (const unsigned char *p = (const unsigned char *)uri; *p; p++) {
        if (*p <= 0x20 || *p >= 0x7f || strchr("\"<>\\^`{|}", *p)) {
            static const char hex[] = "0123456789ABCDEF";
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        } else {
            *o++ = (char)*p;
        }
    }
    *o = '\0';
    return out;
}

/* The opener's handle: its requests (final: a share counts its own) go to
 * its tally now; the object lives on while a share is open. */
static void http_close(reel__io *io)
{
    http_io *h = (http_io *)io;
    pthread_mutex_lock(&h->mu);
    if (h->base.opt.tally) reel_remote_stats_add(h->base.opt.tally, &h->stats);
    pthread_mutex_unlock(&h->mu);
    reel__http_release(h);
}

static void http_stats(const reel__io *io, reel_remote_stats *out)
{
    http_io *h = (http_io *)(uintptr_t)io; /* the lock is not the object's value */
    pthread_mutex_lock(&h->mu);
    *out = h->stats;
    pthread_mutex_unlock(&h->mu);
}

static const reel__io_ops http_ops = { "http",          reel__http_read_at, reel__http_will_read, http_close,
                                       reel__http_held, http_stats,         reel__http_share };

/* ---------------------------------------------------------------- CA certificates */

/* The CA certificates for libcurl: CURLOPT_CAINFO `file` and CURLOPT_CAPATH
 * `dir`, borrowed (from ca_bundle, the environment or a static table: use
 * them at once). set_both 0: only a non-NULL file is set (ca_bundle) or
 * nothing (no store found: libcurl's own defaults stay); 1: both are set,
 * NULL turning libcurl's compiled-in default off. */
typedef struct http_ca {
    const char *file, *dir;
    int set_both;
} http_ca;

/* The system stores, looked for in this order when neither ca_bundle nor
 * SSL_CERT_FILE / SSL_CERT_DIR is set: the first readable file, else the
 * first directory (of hashed certificates, for CURLOPT_CAPATH). A libcurl
 * looks only where it was built to (Debian's: the first line), so reel
 * chooses for it. Documented in docs/WHEEL.md ("TLS"). */
static const struct {
    const char *path;
    int is_dir;
} system_stores[] = {
    { "/etc/ssl/certs/ca-certificates.crt", 0 },                /* Debian, Ubuntu */
    { "/etc/pki/tls/certs/ca-bundle.crt", 0 },                  /* RHEL, Fedora, CentOS, Amazon Linux */
    { "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", 0 }, /* RHEL, Fedora (the extracted store) */
    { "/etc/ssl/ca-bundle.pem", 0 },                            /* SUSE */
    { "/var/lib/ca-certificates/ca-bundle.pem", 0 },            /* SUSE */
    { "/etc/ssl/cert.pem", 0 },                                 /* Alpine */
    { "/etc/ssl/certs", 1 },                                    /* a directory of hashed certificates */
    { "/etc/pki/tls/certs", 1 },
};
enum { N_STORES = sizeof system_stores / sizeof system_stores[0] };

static int readable(const char *path, int is_dir)
{
    struct stat st;
    if (stat(path, &st) != 0 || access(path, is_dir ? R_OK | X_OK : R_OK) != 0) return 0;
    return is_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
}

/* An environment variable's value; NULL when unset or empty. */
static const char *env_value(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Appends printf-style text to where[size], cut (never overflowing) when full. */
__attribute__((format(printf, 3, 4))) static void append(char *where, size_t size, const char *fmt, ...)
{
    size_t n = strlen(where);
    if (n + 1 >= size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(where + n, size - n, fmt, ap);
    va_end(ap);
}

/* Chooses the CA certificates once for a source: `ca_bundle` (the setting)
 * when set; else SSL_CERT_FILE and/or SSL_CERT_DIR when set; else the first
 * readable system store on the usual Linux paths (Debian/Ubuntu,
 * RHEL/Fedora/Amazon Linux, SUSE, Alpine; files first, then directories).
 * where[size] gets one line naming the source used ("SSL_CERT_FILE /x") or,
 * when none was found, every path tried. */
static http_ca ca_choose(const char *ca_bundle, char *where, size_t size)
{
    http_ca ca = { NULL, NULL, 0 };
    where[0] = '\0';
    if (ca_bundle && *ca_bundle) { /* the caller's, used as given (libcurl says if it cannot be read) */
        ca.file = ca_bundle;
        append(where, size, "ca_bundle %s", ca_bundle);
        return ca;
    }
    const char *file = env_value("SSL_CERT_FILE"), *dir = env_value("SSL_CERT_DIR");
    if (file || dir) { /* asked for by the environment: used as given, nothing else */
        ca.file = file;
        ca.dir = dir;
        ca.set_both = 1;
        if (file) append(where, size, "SSL_CERT_FILE %s%s", file, dir ? ", " : "");
        if (dir) append(where, size, "SSL_CERT_DIR %s", dir);
        return ca;
    }
    for (int pass = 0; pass < 2; pass++) /* the files first, then the directories */
        for (int i = 0; i < N_STORES; i++)
            if (system_stores[i].is_dir == pass && readable(system_stores[i].path, pass)) {
                *(pass ? &ca.dir : &ca.file) = system_stores[i].path;
                ca.set_both = 1;
                append(where, size, "%s (the system's store)", system_stores[i].path);
                return ca;
            }
    append(where, size, "none found (tried SSL_CERT_FILE, SSL_CERT_DIR,");
    for (int i = 0; i < N_STORES; i++)
        append(where, size, " %s%s", system_stores[i].path, i + 1 < N_STORES ? "," : ")");
    return ca;
}

/* ---------------------------------------------------------------- open */

static int setup(http_io *h, reel_error *err)
{
    reel__curl_init();
    h->curl = curl_easy_init();
    if (!h->curl) return reel__error_set(err, REEL_E_NOMEM, "%s: cannot start libcurl", h->base.name);
    CURL *c = h->curl;
    curl_easy_setopt(c, CURLOPT_URL, h->url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, reel__http_on_body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, reel__http_on_header);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, reel__http_on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    /* identity only: libcurl would inflate a gzip body whatever was asked
     * (a 4 MB answer can inflate to 4 GiB); an encoded answer is refused */
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "identity");
    curl_easy_setopt(c, CURLOPT_HTTP_CONTENT_DECODING, 0L);
    /* redirects: followed within http(s) only (each is judged first, see
     * http_redirect.c); libcurl refuses the other schemes by itself too */
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85 */
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(h->s.request_timeout * 1000));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(h->s.connect_timeout * 1000));
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    if (h->pool) curl_easy_setopt(c, CURLOPT_SHARE, reel__pool_share(h->pool));
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, h->s.verify_tls ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, h->s.verify_tls ? 2L : 0L);
    if (h->s.verify_tls) { /* reel chooses, whatever store the loaded libcurl was built to look in */
        const http_ca ca = ca_choose(h->s.ca_bundle, h->ca_where, sizeof h->ca_where);
        if (ca.file || ca.set_both) curl_easy_setopt(c, CURLOPT_CAINFO, ca.file);
        if (ca.set_both) curl_easy_setopt(c, CURLOPT_CAPATH, ca.dir);
    } else {
        snprintf(h->ca_where, sizeof h->ca_where, "none, not verified (verify_tls 0)");
    }
    if (h->s.bearer_token && *h->s.bearer_token) {
        size_t n = strlen(h->s.bearer_token) + 32;
        char *line = malloc(n);
        if (!line) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", h->base.name);
        snprintf(line, n, "Authorization: Bearer %s", h->s.bearer_token);
        h->headers = curl_slist_append(h->headers, line);
        memset(line, 0, n);
        free(line);
    }
    for (int i = 0; h->s.headers && h->s.headers[i]; i++) {
        h->headers = curl_slist_append(h->headers, h->s.headers[i]);
        h->same_origin_only = 1; /* libcurl would send them to any host redirected to */
    }
    if (h->userpwd) {
        curl_easy_setopt(c, CURLOPT_USERPWD, h->userpwd);
        curl_easy_setopt(c, CURLOPT_AWS_SIGV4, h->sigv4);
    }
    if (h->headers) curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->headers);
    return REEL_OK;
}

/* A remote source for `uri` with its settings, URL (an s3 object's signed
 * one; with `query`, an s3 bucket's URL plus "?query") and libcurl handle,
 * before any request: 0, or a status with *out NULL. */
static int http_new(http_io **out, const char *uri, const char *query, const reel__io_options *opt, reel_error *err)
{
    *out = NULL;
    http_io *h = calloc(1, sizeof *h);
    if (!h) return reel__error_set(err, REEL_E_NOMEM, "remote: out of memory");
    if (pthread_mutex_init(&h->mu, NULL) != 0) {
        free(h);
        return reel__error_set(err, REEL_E_NOMEM, "remote: cannot make a lock");
    }
    h->refs = 1;
    h->base.ops = &http_ops;
    h->base.opt = *opt;
    reel__io_redact(uri, h->base.name, sizeof h->base.name);
    if (opt->remote)
        h->s = *(const reel_remote_settings *)opt->remote;
    else
        reel_remote_default_settings(&h->s);
    h->pool = h->s.pool;
    if (h->s.readahead_min == 0) reel_remote_default_settings(&h->s);
    h->readahead = h->s.readahead_min;
    h->rng = (uint64_t)(uintptr_t)h ^ (uint64_t)reel__clock_ns() ^ 0x9e3779b97f4a7c15ULL;
    if (!h->rng) h->rng = 1;
    int st = REEL_OK;
    char *base = NULL;
    if (!strncasecmp(uri, "s3://", 5)) {
        h->same_origin_only = 1; /* signed, maybe with a session token that libcurl would send anywhere */
        st = reel__s3_resolve(uri, query != NULL, &base, &h->userpwd, h->sigv4, sizeof h->sigv4, &h->headers,
                              h->base.name, err);
    } else if (!(base = url_escape_illegal(uri))) {
        st = reel__error_set(err, REEL_E_NOMEM, "remote: out of memory");
    }
    if (st == REEL_OK && query) {
        size_t n = strlen(base) + strlen(query) + 2;
        if (!(h->url = malloc(n)))
            st = reel__error_set(err, REEL_E_NOMEM, "remote: out of memory");
        else
            snprintf(h->url, n, "%s?%s", base, query);
    } else if (st == REEL_OK) {
        h->url = base;
        base = NULL;
    }
    free(base);
    if (st == REEL_OK) st = setup(h, err);
    if (st != REEL_OK) {
        http_close(&h->base);
        return st;
    }
    *out = h;
    return REEL_OK;
}

int reel__io_open_http(reel__io **out, const char *uri, const reel__io_options *opt, reel_error *err)
{
    *out = NULL;
    http_io *h = NULL;
    int st = http_new(&h, uri, NULL, opt, err);
    if (st != REEL_OK) return st;
    /* the first GET learns the size; a small object comes whole */
    sink k = reel__http_sink(NULL, 0, 0, (int64_t)h->s.readahead_min, (int64_t)h->s.whole_object_max);
    st = reel__http_get_range(h, &k, err);
    const int ranged = k.head.status == 206;
    if (st == REEL_OK) {
        h->base.version = k.head.etag ? k.head.etag : k.head.modified;
        h->base.size = reel__http_sink_total(&k);
        if (h->base.size > 0) h->stats.object_bytes = h->base.size;
        if (h->base.size < 0)
            st = reel__error_set(err, REEL_E_IO, "%s: the server gave no object size (Content-Range)", h->base.name);
        else if (!ranged && h->base.size > (int64_t)h->s.whole_object_max)
            st = reel__error_set(err, REEL_E_IO,
                                 "%s: the server ignores Range requests and the object (%lld bytes) is larger "
                                 "than the whole-object limit (%zu)",
                                 h->base.name, (long long)h->base.size, h->s.whole_object_max);
    }
    h->cache = k.buf;
    h->cache_cap = k.cap;
    h->cache_off = 0;
    h->cache_len = k.len;
    h->last_end = (int64_t)k.len;
    if (st == REEL_OK && ranged && h->base.size > (int64_t)k.len && h->base.size <= (int64_t)h->s.whole_object_max) {
        /* small: the rest in one GET, then every read is local */
        sink r =
            reel__http_sink(NULL, 0, (int64_t)k.len, h->base.size - (int64_t)k.len, (int64_t)h->s.whole_object_max);
        st = reel__http_get_range(h, &r, err);
        if (st == REEL_OK && k.len + r.len == (size_t)h->base.size) {
            uint8_t *all = realloc(h->cache, (size_t)h->base.size);
            if (all) {
                memcpy(all + k.len, r.buf, r.len);
                h->cache = all;
                h->cache_cap = h->cache_len = (size_t)h->base.size;
            }
        }
        free(r.buf);
    }
    if (st != REEL_OK) {
        http_close(&h->base);
        return st;
    }
    *out = &h->base;
    return REEL_OK;
}

int reel__http_get(const char *uri, const char *query, const reel__io_options *opt, uint8_t **body, size_t *len,
                   reel_error *err)
{
    *body = NULL;
    *len = 0;
    reel__io_options o;
    if (!opt) {
        reel__io_default_options(&o);
        opt = &o;
    }
    http_io *h = NULL;
    int st = http_new(&h, uri, query, opt, err);
    if (st != REEL_OK) return st;
    /* a listing page or a manifest: whole, up to the larger of the
     * whole-object limit and REEL_WHOLE_GET_MAX */
    int64_t max =
        (int64_t)h->s.whole_object_max > REEL_WHOLE_GET_MAX ? (int64_t)h->s.whole_object_max : REEL_WHOLE_GET_MAX;
    sink k = reel__http_sink(NULL, 0, -1, 0, max);
    if (st == REEL_OK) st = reel__http_get_range(h, &k, err);
    if (st == REEL_OK) {
        uint8_t *b = realloc(k.buf, k.len + 1); /* room for the NUL */
        if (!b) {
            st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", h->base.name);
        } else {
            b[k.len] = 0;
            *body = b;
            *len = k.len;
            k.buf = NULL;
        }
    }
    free(k.buf);
    http_close(&h->base);
    return st;
}
