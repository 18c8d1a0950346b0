/* io_common.c: the pieces every byte source shares: default options, "is
 * it remote?", and URLs redacted for messages (user info, query strings and
 * fragments replaced by "***", control bytes as %XX; public as
 * reel_url_redact). */
#include "io/io_common.h"
#include "reel/io.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

void reel__io_default_options(reel__io_options *o)
{
    memset(o, 0, sizeof *o);
}

int reel__io_is_remote(const char *uri)
{
    if (!uri) return 0;
    return strncasecmp(uri, "http://", 7) == 0 || strncasecmp(uri, "https://", 8) == 0 ||
           strncasecmp(uri, "s3://", 5) == 0;
}

/* Appends byte c to out[*o] (size bytes, room kept for the NUL), a control
 * byte (CR, LF, ...) as %XX so that a message stays one line; a byte that
 * does not fit whole is dropped, and so is everything after it. */
static void put(char *out, size_t *o, size_t size, unsigned char c)
{
    if (c < 0x20 || c == 0x7f) {
        static const char hex[] = "0123456789ABCDEF";
        if (*o + 3 >= size) {
            *o = size; /* full: nothing more goes in */
            return;
        }
        out[(*o)++] = '%';
        out[(*o)++] = hex[c >> 4];
        out[(*o)++] = hex[c & 15];
    } else if (*o + 1 < size) {
        out[(*o)++] = (char)c;
    } else {
        *o = size;
    }
}

void reel__io_redact(const char *uri, char *out, size_t size)
{
    if (!out || size == 0) return;
    out[0] = '\0';
    if (!uri) return;
    const char *scheme_end = strstr(uri, "://");
    if (!scheme_end) {
        snprintf(out, size, "%s", uri);
        return;
    }
    size_t o = 0;
    const char *p = uri;
    const char *host = scheme_end + 3;
    /* scheme:// */
    while (p < host) put(out, &o, size, (unsigned char)*p++);
    /* user info: everything up to the last '@' before the first '/' */
    const char *slash = strchr(host, '/');
    const char *at = NULL;
    for (const char *q = host; *q && (!slash || q < slash); q++)
        if (*q == '@') at = q;
    if (at) {
        for (const char *r = "***@"; *r; r++) put(out, &o, size, (unsigned char)*r);
        p = at + 1;
    }
    /* the rest, up to a query string or fragment */
    while (*p && *p != '?' && *p != '#') put(out, &o, size, (unsigned char)*p++);
    if (*p == '?' || *p == '#')
        for (const char *r = *p == '?' ? "?***" : "#***"; *r; r++) put(out, &o, size, (unsigned char)*r);
    out[o < size ? o : size - 1] = '\0';
}

void reel_url_redact(const char *url, char *out, size_t size)
{
    reel__io_redact(url, out, size);
}
