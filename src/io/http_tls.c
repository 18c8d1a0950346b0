/* http_tls.c: a remote source's CA certificates when TLS is verified (ca_bundle,
 * SSL_CERT_FILE / SSL_CERT_DIR, or the first system store on the usual Linux
 * paths: one table), chosen once per source, and named in a TLS error. */
#define _GNU_SOURCE
#include "io/http_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The system stores, looked for in this order when neither ca_bundle nor
 * SSL_CERT_FILE / SSL_CERT_DIR is set: the first readable file, else the
 * first directory (of hashed certificates, for CURLOPT_CAPATH). A libcurl
 * looks only where it was built to (Debian's: the first line), so reel
 * chooses for it. Documented in docs/python.md and docs/WHEEL.md. */
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

reel__http_ca reel__http_ca_choose(const char *ca_bundle, char *where, size_t size)
{
    reel__http_ca ca = { NULL, NULL, 0 };
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
    for (int i = 0; i < N_STORES; i++) append(where, size, " %s%s", system_stores[i].path, i + 1 < N_STORES ? "," : ")");
    return ca;
}
