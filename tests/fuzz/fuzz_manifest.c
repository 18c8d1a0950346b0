/* fuzz_manifest.c: libFuzzer target: the CSV, TSV and JSONL manifest
 * parsers (the first byte picks the format; the rest is the file). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reel/reel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static const char *const ext[3] = { "csv", "tsv", "jsonl" };
    char path[256];
    snprintf(path, sizeof path, "/tmp/reel-fuzz-manifest-%d.%s", (int)getpid(), ext[data[0] % 3]);
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    reel_dataset *ds = NULL;
    reel_error err;
    if (reel_dataset_create_from_manifest(&ds, path, &err) == REEL_OK) {
        size_t n = reel_dataset_get_size(ds);
        for (size_t i = 0; i < n; i++) {
            reel_sample smp;
            reel_dataset_get(ds, i, &smp, &err);
        }
        reel_dataset_destroy(&ds);
    }
    unlink(path);
    return 0;
}
