/* fuzz_remote_responses.c: libFuzzer target: what a server, or anything
 * pretending to be one, feeds reel's own parsers: an S3 ListObjectsV2 answer
 * (keys, XML entities, truncation, continuation tokens), and the same bytes
 * as an HTTP Content-Range header line. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/remote.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the body as a server would give it: bytes, then the NUL reel adds */
    char *body = malloc(size + 1);
    if (!body) return 0;
    memcpy(body, data, size);
    body[size] = '\0';
    char **names = NULL;
    size_t n = 0, cap = 0;
    char token[2048];
    reel_error err;
    (void)reel__s3_parse_listing(body, size, size && data[0] & 1 ? "train/" : "", &names, &n, &cap, token, sizeof token,
                                 "s3://fuzz/", &err);
    int64_t total = -1;
    if (reel__http_content_range((const char *)data, size, &total) && total < 0) abort();
    for (size_t i = 0; i < n; i++) {
        if (!names[i]) abort(); /* every counted key is a string */
        free(names[i]);
    }
    free(names);
    free(body);
    return 0;
}
