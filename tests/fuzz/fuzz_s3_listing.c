/* fuzz_s3_listing.c: libFuzzer target: the ListObjectsV2 answer parser
 * (keys, XML entities, truncation and continuation tokens) that an S3
 * server, or anything pretending to be one, feeds reel. */
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
    for (size_t i = 0; i < n; i++) {
        if (!names[i]) abort(); /* every counted key is a string */
        free(names[i]);
    }
    free(names);
    free(body);
    return 0;
}
