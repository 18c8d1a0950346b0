/* http_redirect.c: which redirects a remote source follows, judged on the
 * answer's Location header before libcurl follows it: only to http(s), and
 * for a request whose headers carry credentials (s3), only within its origin. */
#define _GNU_SOURCE
#include "io/http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* 1 when parts `what` of a and b are equal (ignoring case), both present. */
static int same_part(CURLU *a, CURLU *b, CURLUPart what)
{
    char *x = NULL, *y = NULL;
    const unsigned flags = what == CURLUPART_PORT ? CURLU_DEFAULT_PORT : 0;
    int same = curl_url_get(a, what, &x, flags) == CURLUE_OK && curl_url_get(b, what, &y, flags) == CURLUE_OK &&
               !strcasecmp(x, y);
    curl_free(x);
    curl_free(y);
    return same;
}

const char *reel__http_redirect_check(const http_io *h, const char *line, size_t n, char *to, size_t size)
{
    to[0] = '\0';
    if (n < 9 || strncasecmp(line, "Location:", 9) != 0) return NULL;
    const char *v = line + 9, *e = line + n;
    while (v < e && (*v == ' ' || *v == '\t')) v++;
    while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t')) e--;
    char *loc = strndup(v, (size_t)(e - v));
    if (!loc) {
        snprintf(to, size, "(a Location header)");
        return "out of memory";
    }
    char *here = NULL; /* the URL of the request answered: a relative Location resolves against it */
    curl_easy_getinfo(h->curl, CURLINFO_EFFECTIVE_URL, &here);
    CURLU *from = curl_url(), *dest = curl_url();
    const char *why = NULL;
    char *full = NULL, *scheme = NULL;
    if (!from || !dest || !here || curl_url_set(from, CURLUPART_URL, here, 0) != CURLUE_OK ||
        curl_url_set(dest, CURLUPART_URL, here, 0) != CURLUE_OK) {
        why = "out of memory";
    } else if (curl_url_set(dest, CURLUPART_URL, loc, CURLU_NON_SUPPORT_SCHEME | CURLU_URLENCODE | CURLU_ALLOW_SPACE) !=
                   CURLUE_OK ||
               curl_url_get(dest, CURLUPART_URL, &full, 0) != CURLUE_OK ||
               curl_url_get(dest, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
        why = "not a URL reel can follow";
    } else if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0) {
        why = "only http and https are followed";
    } else if (h->same_origin_only &&
               !(same_part(from, dest, CURLUPART_SCHEME) && same_part(from, dest, CURLUPART_HOST) &&
                 same_part(from, dest, CURLUPART_PORT))) {
        why = "another origin; the request's credentials are not sent there";
    }
    reel__io_redact(full ? full : loc, to, size);
    curl_free(full);
    curl_free(scheme);
    curl_url_cleanup(from);
    curl_url_cleanup(dest);
    memset(loc, 0, strlen(loc)); /* a presigned target's signature */
    free(loc);
    return why;
}
