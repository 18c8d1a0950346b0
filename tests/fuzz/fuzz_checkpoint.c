/* fuzz_checkpoint.c: libFuzzer target: the checkpoint's text reader
 * (reel_loader_checkpoint_parse), fed any bytes. What it accepts must be in
 * range field by field, and must go through the writer and back unchanged;
 * what it refuses must say why. Never a crash, leak or overflow. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reel/reel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reel_loader_checkpoint cp, back;
    reel_error err;
    reel_error_clear(&err);
    if (reel_loader_checkpoint_parse(&cp, (const char *)data, size, &err) != REEL_OK) {
        if (!err.message[0]) abort(); /* a refusal says why */
        return 0;
    }
    if (cp.version != REEL_CHECKPOINT_VERSION || cp.epoch < 0 || cp.samples_seen < 0 ||
        cp.samples_seen > cp.num_samples || cp.canonical_ranks < 1 || cp.canonical_batch < 1 ||
        (cp.shuffle != 0 && cp.shuffle != 1) || cp.shuffle_window < REEL_SHUFFLE_WINDOW_FULL || cp.world_size < 1 ||
        cp.batch_size < 1 || cp.num_workers < 1)
        abort();
    const uint8_t *r = cp.reserved;
    for (size_t i = 0; i < sizeof cp.reserved; i++)
        if (r[i]) abort();
    char *text = NULL;
    if (reel_loader_checkpoint_format(&cp, &text, &err) != REEL_OK) abort();
    if (reel_loader_checkpoint_parse(&back, text, strlen(text), &err) != REEL_OK) abort();
    reel_free(text);
    if (memcmp(&cp, &back, sizeof cp) != 0) abort();
    return 0;
}
