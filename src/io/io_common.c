/* io_common.c: the pieces every byte source shares: default options, "is
 * it remote?", and URLs redacted for messages (user info, query strings and
 * fragments replaced by "***"; public as reel_url_redact). */
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
    while (p < host && o + 1 < size) out[o++] = *p++;
    /* user info: everything up to the last '@' before the first '/' */
    const char *slash = strchr(host, '/');
    const char *at = NULL;
    for (const char *q = host; *q && (!slash || q < slash); q++)
        if (*q == '@') at = q;
    if (at) {
        const char *r = "***@";
        while (*r && o + 1 < size) out[o++] = *r++;
        p = at + 1;
    }
    /* the rest, up to a query string or fragment */
    while (*p && *p != '?' && *p != '#' && o + 1 < size) out[o++] = *p++;
    if (*p == '?' || *p == '#') {
        const char *r = *p == '?' ? "?***" : "#***";
        while (*r && o + 1 < size) out[o++] = *r++;
    }
    out[o] = '\0';
}

void reel_url_redact(const char *url, char *out, size_t size)
{
    reel__io_redact(url, out, size);
}
