/* test_checkpoint_text.c: the checkpoint's text form (issue 25, defect 7):
 * reel_loader_checkpoint_parse checks every number in its full width before
 * it narrows it and names what it refuses; a loader's checkpoint goes
 * through text and back unchanged and resumes; the last epoch
 * (REEL_EPOCH_MAX - 1) ends an endless loader instead of overflowing. */
#include "harness.h"
#include "loader_common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A valid text with `key` replaced by `value` (NULL: the key left out). */
static const char *const k_keys[] = { "version",         "epoch",           "samples_seen", "seed",
                                      "canonical_ranks", "canonical_batch", "shuffle",      "shuffle_window",
                                      "num_videos",      "fingerprint",     "topology" };
static const char *const k_values[] = { "2",
                                        "3",
                                        "4",
                                        "7",
                                        "2",
                                        "3",
                                        "true",
                                        "null",
                                        "25",
                                        "12345",
                                        "{\"world_size\": 4, \"batch_size\": 2, \"num_workers\": 1}" };
enum { NKEYS = sizeof k_keys / sizeof k_keys[0] };

static void text_with(char *out, size_t cap, const char *key, const char *value)
{
    size_t n = (size_t)snprintf(out, cap, "{");
    int first = 1;
    for (int k = 0; k < NKEYS; k++) {
        const char *v = strcmp(k_keys[k], key) == 0 ? value : k_values[k];
        if (!v) continue;
        n += (size_t)snprintf(out + n, cap - n, "%s\"%s\": %s", first ? "" : ", ", k_keys[k], v);
        first = 0;
    }
    snprintf(out + n, cap - n, "}");
}

static void check_refused(const char *key, const char *value, const char *expect)
{
    char text[1024];
    text_with(text, sizeof text, key, value);
    reel_loader_checkpoint cp;
    memset(&cp, 0x5a, sizeof cp);
    reel_error err;
    reel_error_clear(&err);
    CHECK_MSG(reel_loader_checkpoint_parse(&cp, text, strlen(text), &err) == REEL_E_INVALID_ARG, "accepted %s", text);
    CHECK_MSG(tg_contains(err.message, expect), "%s = %s: message \"%s\" lacks \"%s\"", key, value ? value : "(none)",
              err.message, expect);
    const unsigned char *b = (const unsigned char *)&cp; /* refused: *out untouched */
    for (size_t i = 0; i < sizeof cp; i++) CHECK(b[i] == 0x5a);
}

TEST(parse_reads_the_state_dict_form)
{
    char text[1024];
    text_with(text, sizeof text, "", NULL);
    reel_loader_checkpoint cp;
    reel_error err;
    CHECK_OK(reel_loader_checkpoint_parse(&cp, text, strlen(text), &err));
    CHECK_EQ_INT(cp.version, REEL_CHECKPOINT_VERSION);
    CHECK_EQ_INT(cp.epoch, 3);
    CHECK_EQ_INT(cp.samples_seen, 4);
    CHECK(cp.seed == 7);
    CHECK_EQ_INT(cp.canonical_ranks, 2);
    CHECK_EQ_INT(cp.canonical_batch, 3);
    CHECK_EQ_INT(cp.shuffle, 1);
    CHECK_EQ_INT(cp.shuffle_window, 0);
    CHECK_EQ_INT(cp.num_samples, 25);
    CHECK(cp.dataset_hash == 12345);
    CHECK_EQ_INT(cp.world_size, 4);
    CHECK_EQ_INT(cp.batch_size, 2);
    CHECK_EQ_INT(cp.num_workers, 1);
    /* the widest values that fit, and the other spellings */
    const char *ok[][3] = { { "seed", "18446744073709551615", "" },
                            { "fingerprint", "18446744073709551615", "" },
                            { "canonical_ranks", "2147483647", "" },
                            { "epoch", "9223372036854775807", "" },
                            { "shuffle", "0", "" },
                            { "shuffle_window", "\"full\"", "" },
                            { "shuffle_window", "64", "" },
                            { "topology", "{}", "" } };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        text_with(text, sizeof text, ok[i][0], ok[i][1]);
        CHECK_MSG(reel_loader_checkpoint_parse(&cp, text, strlen(text), &err) == REEL_OK, "%s: %s", text, err.message);
    }
    CHECK(cp.world_size == 1 && cp.batch_size == 1 && cp.num_workers == 1); /* topology {}: 1 each */
    text_with(text, sizeof text, "seed", "18446744073709551615");
    CHECK_OK(reel_loader_checkpoint_parse(&cp, text, strlen(text), &err));
    CHECK(cp.seed == UINT64_MAX);
    text_with(text, sizeof text, "topology", NULL); /* optional */
    CHECK_OK(reel_loader_checkpoint_parse(&cp, text, strlen(text), &err));
    const char *extra = "{\"future\": [1, {\"a\": 2}], \"version\": 2, \"epoch\": 0, \"samples_seen\": 0, "
                        "\"seed\": 0, \"canonical_ranks\": 1, \"canonical_batch\": 1, \"shuffle\": false, "
                        "\"shuffle_window\": null, \"num_videos\": 1, \"fingerprint\": 0}";
    CHECK_OK(reel_loader_checkpoint_parse(&cp, extra, strlen(extra), &err)); /* unknown keys: ignored */
}

/* Defect 7: numbers past the field were cut (2^32 + 3 ranks became 3) and
 * floats or strings truncated; every one is now refused by name. */
TEST(parse_refuses_out_of_range_and_mistyped_values_by_name)
{
    check_refused("canonical_ranks", "4294967299", "canonical_ranks 4294967299 is outside");
    check_refused("canonical_batch", "2147483648", "canonical_batch 2147483648 is outside");
    check_refused("canonical_ranks", "0", "canonical_ranks 0 is outside");
    check_refused("epoch", "9223372036854775808", "epoch 9223372036854775808 is outside");
    check_refused("epoch", "-1", "epoch -1 is outside");
    check_refused("epoch", "99999999999999999999999", "epoch 99999999999999999999999 is outside");
    check_refused("samples_seen", "8.9", "samples_seen must be an integer, not 8.9");
    check_refused("samples_seen", "8.0", "samples_seen must be an integer, not 8.0");
    check_refused("samples_seen", "8e0", "samples_seen must be an integer");
    check_refused("samples_seen", "\"8\"", "samples_seen must be an integer, not a string");
    check_refused("samples_seen", "true", "samples_seen must be an integer, not true");
    check_refused("samples_seen", "null", "samples_seen must be an integer, not null");
    check_refused("samples_seen", "[8]", "samples_seen must be an integer, not a list");
    check_refused("samples_seen", "26", "samples_seen 26 is outside [0, num_videos 25]");
    check_refused("samples_seen", "08", "samples_seen must be an integer"); /* not JSON's integer form */
    check_refused("seed", "18446744073709551616", "seed 18446744073709551616 is outside");
    check_refused("seed", "-1", "seed -1 is outside");
    check_refused("fingerprint", "1.5", "fingerprint must be an integer");
    check_refused("shuffle", "2", "shuffle 2 is outside");
    check_refused("shuffle_window", "\"all\"", "shuffle_window must be null");
    check_refused("shuffle_window", "-2", "shuffle_window -2 is outside");
    check_refused("num_videos", "-1", "num_videos -1 is outside");
    check_refused("topology", "[1, 2]", "topology must be an object, not a list");
    check_refused("topology", "4", "topology must be an object, not 4");
    check_refused("topology", "{\"world_size\": 4294967297}", "topology.world_size 4294967297 is outside");
    check_refused("topology", "{\"num_workers\": 0}", "topology.num_workers 0 is outside");
    check_refused("topology", "{\"batch_size\": 2.5}", "topology.batch_size must be an integer");
    check_refused("version", "3", "newer reel");
    check_refused("version", "1", "version 1 is not");
    for (int k = 0; k < NKEYS - 1; k++) { /* every key but topology is required */
        char expect[64];
        snprintf(expect, sizeof expect, "the key %s is missing", k_keys[k]);
        check_refused(k_keys[k], NULL, expect);
    }
    /* not an object, twice the same key, no text */
    reel_loader_checkpoint cp;
    reel_error err;
    const char *bad[] = { "[]", "null", "", "{\"epoch\": 1", "{} {}" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_STATUS(reel_loader_checkpoint_parse(&cp, bad[i], strlen(bad[i]), &err), REEL_E_INVALID_ARG);
        CHECK_MSG(tg_contains(err.message, "not a JSON object"), "%s: %s", bad[i], err.message);
    }
    const char *twice = "{\"epoch\": 1, \"epoch\": 2}";
    CHECK_STATUS(reel_loader_checkpoint_parse(&cp, twice, strlen(twice), &err), REEL_E_INVALID_ARG);
    CHECK(tg_contains(err.message, "epoch appears twice"));
    CHECK_STATUS(reel_loader_checkpoint_parse(&cp, NULL, 3, &err), REEL_E_INVALID_ARG);
}

/* A loader's checkpoint goes to text and back unchanged, and a loader
 * restored from the parsed one continues where the first one was. */
TEST(a_checkpoint_goes_through_text_and_resumes)
{
    reel_dataset *ds = dataset_of_videos(2);
    reel_loader_settings s = readable_settings();
    s.batch_size = 2;
    s.decode_threads = 2;
    s.shuffle_window = REEL_SHUFFLE_WINDOW_FULL;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    reel_batch *b = NULL;
    for (int k = 0; k < 3; k++) {
        CHECK_OK(reel_loader_next(l, &b, &err));
        CHECK(b != NULL);
        CHECK_OK(reel_loader_release(l, b));
    }
    reel_loader_checkpoint cp, back;
    CHECK_OK(reel_loader_get_checkpoint(l, &cp, NULL));
    CHECK_EQ_INT(cp.samples_seen, 6);
    char *text = NULL;
    CHECK_OK(reel_loader_checkpoint_format(&cp, &text, &err));
    CHECK(tg_contains(text, "\"shuffle_window\": \"full\""));
    CHECK_OK(reel_loader_checkpoint_parse(&back, text, strlen(text), &err));
    reel_free(text);
    CHECK(memcmp(&cp, &back, sizeof cp) == 0);
    CHECK_OK(reel_loader_next(l, &b, &err)); /* what comes next here... */
    const int64_t pos = b->position, first = b->clips[0].sample;
    CHECK_OK(reel_loader_release(l, b));
    reel_loader *l2 = NULL;
    CHECK_OK(reel_loader_create(&l2, ds, &s, &err));
    CHECK_OK(reel_loader_restore_checkpoint(l2, &back, &err));
    CHECK_OK(reel_loader_next(l2, &b, &err)); /* ...comes next there */
    CHECK(b && b->position == pos && b->clips[0].sample == first);
    CHECK_OK(reel_loader_release(l2, b));
    /* the writer refuses what the reader would */
    cp.canonical_ranks = 0;
    CHECK_STATUS(reel_loader_checkpoint_format(&cp, &text, &err), REEL_E_INVALID_ARG);
    CHECK(text == NULL);
    reel_loader_destroy(&l2);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}

/* Without a loader: reel_loader_checkpoint_init gives what a loader of the
 * same settings and dataset gives, and reel_loader_checkpoint_check refuses
 * what its restore would, naming the difference. */
TEST(init_and_check_answer_without_a_loader)
{
    reel_dataset *ds = dataset_of_videos(2);
    reel_loader_settings s = readable_settings();
    s.batch_size = 2;
    s.decode_threads = 2;
    s.seed = 9;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    reel_batch *b = NULL;
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK_OK(reel_loader_release(l, b));
    reel_loader_checkpoint got, made;
    CHECK_OK(reel_loader_get_checkpoint(l, &got, NULL));
    reel_loader_destroy(&l);
    const uint64_t hash = reel_dataset_get_fingerprint(ds);
    CHECK_OK(reel_loader_checkpoint_init(&made, &s, got.num_samples, hash, got.epoch, got.samples_seen, &err));
    CHECK(memcmp(&got, &made, sizeof got) == 0);
    CHECK_OK(reel_loader_checkpoint_check(&made, &s, got.num_samples, hash, &err));
    reel_loader_settings other = s;
    other.seed = 10;
    CHECK_STATUS(reel_loader_checkpoint_check(&made, &other, got.num_samples, hash, &err), REEL_E_INVALID_ARG);
    CHECK(tg_contains(err.message, "seed 9"));
    CHECK_STATUS(reel_loader_checkpoint_check(&made, &s, got.num_samples, hash ^ 1, &err), REEL_E_INVALID_ARG);
    CHECK(tg_contains(err.message, "another dataset"));
    other = s;
    other.shuffle = !s.shuffle;
    CHECK_STATUS(reel_loader_checkpoint_check(&made, &other, got.num_samples, hash, &err), REEL_E_INVALID_ARG);
    CHECK(tg_contains(err.message, "shuffle="));
    CHECK_STATUS(reel_loader_checkpoint_init(&made, &s, 4, hash, 0, 5, &err), REEL_E_INVALID_ARG);
    CHECK(tg_contains(err.message, "samples_seen 5"));
    reel_dataset_destroy(&ds);
}

/* Defect 7: an endless loader restored to epoch INT64_MAX - 1 went on into
 * epoch INT64_MAX and then wrapped to INT64_MIN (signed overflow). The last
 * epoch now ends it; its checkpoint (REEL_EPOCH_MAX, 0) reads back and
 * restores to a finished loader. */
TEST(the_last_epoch_ends_an_endless_loader)
{
    reel_dataset *ds = dataset_of_videos(1);
    reel_loader_settings s = readable_settings();
    s.batch_size = 4;
    s.decode_threads = 2;
    s.epochs = 0; /* endless */
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    reel_loader_checkpoint cp;
    CHECK_OK(reel_loader_get_checkpoint(l, &cp, NULL));
    cp.epoch = REEL_EPOCH_MAX - 1;
    CHECK_OK(reel_loader_restore_checkpoint(l, &cp, &err));
    int batches = 0;
    for (int k = 0; k < 10; k++) {
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        CHECK_MSG(b->epoch == REEL_EPOCH_MAX - 1, "a batch of epoch %lld", (long long)b->epoch);
        batches++;
        CHECK_OK(reel_loader_release(l, b));
    }
    CHECK_EQ_INT(batches, NVID / 4);
    CHECK_OK(reel_loader_get_checkpoint(l, &cp, NULL));
    CHECK(cp.epoch == REEL_EPOCH_MAX);
    CHECK_EQ_INT(cp.samples_seen, 0);
    char *text = NULL;
    CHECK_OK(reel_loader_checkpoint_format(&cp, &text, &err));
    CHECK_OK(reel_loader_checkpoint_parse(&cp, text, strlen(text), &err));
    reel_free(text);
    reel_loader *l2 = NULL;
    CHECK_OK(reel_loader_create(&l2, ds, &s, &err));
    CHECK_OK(reel_loader_restore_checkpoint(l2, &cp, &err));
    reel_batch *b = NULL;
    CHECK_OK(reel_loader_next(l2, &b, &err));
    CHECK(b == NULL); /* nothing after the last epoch */
    reel_loader_checkpoint again;
    CHECK_OK(reel_loader_get_checkpoint(l2, &again, NULL));
    CHECK(again.epoch == REEL_EPOCH_MAX && again.samples_seen == 0);
    /* a whole last epoch seen: still REEL_EPOCH_MAX, never past it */
    cp.samples_seen = cp.num_samples;
    CHECK_OK(reel_loader_restore_checkpoint(l2, &cp, &err));
    CHECK_OK(reel_loader_get_checkpoint(l2, &again, NULL));
    CHECK(again.epoch == REEL_EPOCH_MAX);
    reel_loader_destroy(&l2);
    reel_loader_destroy(&l);
    reel_dataset_destroy(&ds);
}
