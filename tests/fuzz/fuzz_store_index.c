/* fuzz_store_index.c: libFuzzer target: the packed store's index parser,
 * a pure function over untrusted bytes. */
#include <stdint.h>
#include <stdlib.h>

#include "store/store_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reel__store_params p;
    reel__store_rec *recs = NULL;
    int64_t n = 0;
    reel_error err;
    if (reel__store_index_parse(data, size, "fuzz", &p, &recs, &n, &err) == REEL_OK) {
        for (int64_t i = 0; i < n; i++) reel__store_rec_free(&recs[i]);
        free(recs);
    }
    return 0;
}
