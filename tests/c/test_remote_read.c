/* test_remote_read.c: reel_remote_read, a whole object by path or URL: the
 * bytes equal the file's, also through a proxy that resets connections,
 * answers 503 and cuts bodies short (the retries mend it); max_bytes, a
 * missing object, a directory and bad arguments refused by name, the URL
 * redacted. nginx and the proxy come from tests/python/serve_faults.py. */
#define _GNU_SOURCE
#include "harness.h"
#include "server_common.h"

#include <stdlib.h>
#include <string.h>

#define OBJECT_BYTES ((size_t)700 * 1000 + 13)

static char g_path[1024];

/* A file of OBJECT_BYTES bytes that differ along it (once per test run). */
static const unsigned char *object_bytes(void)
{
    static unsigned char *bytes;
    if (bytes) return bytes;
    bytes = malloc(OBJECT_BYTES);
    CHECK(bytes != NULL);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < OBJECT_BYTES; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        bytes[i] = (unsigned char)(x >> 24);
    }
    snprintf(g_path, sizeof g_path, "%s/object one.bin", harness_tmpdir());
    FILE *f = fopen(g_path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(bytes, 1, OBJECT_BYTES, f) == OBJECT_BYTES);
    CHECK(fclose(f) == 0);
    return bytes;
}

static void check_bytes(const void *data, size_t size)
{
    CHECK_EQ_INT((long long)size, (long long)OBJECT_BYTES);
    CHECK_MSG(memcmp(data, object_bytes(), OBJECT_BYTES) == 0, "the bytes read differ from the file's");
    CHECK_EQ_INT(((const char *)data)[size], 0);
}

TEST(a_local_file_is_read_whole_and_refused_by_name)
{
    object_bytes();
    void *data = NULL;
    size_t size = 7;
    reel_error err;
    CHECK_OK(reel_remote_read(g_path, NULL, OBJECT_BYTES, &data, &size, &err));
    check_bytes(data, size);
    reel_free(data);

    data = (void *)1;
    CHECK_STATUS(reel_remote_read(g_path, NULL, OBJECT_BYTES - 1, &data, &size, &err), REEL_E_INVALID_ARG);
    CHECK(data == NULL && size == 0);
    CHECK_MSG(strstr(err.message, "object one.bin") && strstr(err.message, "700013 bytes") &&
                  strstr(err.message, "700012"),
              "message: %s", err.message);

    char missing[1200];
    snprintf(missing, sizeof missing, "%s/none.bin", harness_tmpdir());
    CHECK_STATUS(reel_remote_read(missing, NULL, 1000, &data, &size, &err), REEL_E_NOT_FOUND);
    CHECK_MSG(strstr(err.message, "none.bin"), "message: %s", err.message);
    CHECK_STATUS(reel_remote_read(harness_tmpdir(), NULL, 1000, &data, &size, &err), REEL_E_IO);
    CHECK_STATUS(reel_remote_read("", NULL, 1000, &data, &size, &err), REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_remote_read(NULL, NULL, 1000, &data, &size, &err), REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_remote_read(g_path, NULL, 1000, NULL, &size, &err), REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_remote_read(g_path, NULL, 1000, &data, NULL, &err), REEL_E_INVALID_ARG);
}

TEST(a_url_through_faults_is_read_whole_by_the_retries)
{
    object_bytes();
    test_server sv;
    test_server_start_faults(&sv);
    test_server_command(&sv, "set reset_every 5", NULL, 0);
    test_server_command(&sv, "set burst_every 7", NULL, 0);
    test_server_command(&sv, "set cut_every 9", NULL, 0);
    reel_remote_settings rs;
    reel_remote_default_settings(&rs);
    rs.whole_object_max = 0; /* range reads in small pieces: many requests, so every fault meets some */
    rs.readahead_min = 16384;
    rs.readahead_max = 65536;
    rs.max_retries = 8;
    char url[1400];
    snprintf(url, sizeof url, "%s/object%%20one.bin", sv.base);
    void *data = NULL;
    size_t size = 0;
    reel_error err;
    int st = reel_remote_read(url, &rs, OBJECT_BYTES, &data, &size, &err);
    char counts[512];
    test_server_command(&sv, "counts", counts, sizeof counts);
    test_server_stop(&sv);
    CHECK_MSG(st == REEL_OK, "%s", err.message);
    check_bytes(data, size);
    reel_free(data);
    CHECK_MSG(!strstr(counts, "reset=0") && !strstr(counts, "503=0") && !strstr(counts, "cut=0"),
              "not every fault happened: %s", counts);
}

TEST(a_url_too_large_or_missing_is_named_redacted)
{
    object_bytes();
    test_server sv;
    test_server_start_faults(&sv);
    /* user info and a query string: a credential that no message may show */
    const char *host = strstr(sv.base, "://") + 3;
    char url[1400], missing[1400];
    snprintf(url, sizeof url, "http://user:pw-never-shown@%s/object%%20one.bin?X-Amz-Signature=sig-never-shown", host);
    snprintf(missing, sizeof missing, "http://user:pw-never-shown@%s/no/such.parquet?token=tok-never-shown", host);
    void *data = NULL;
    size_t size = 0;
    reel_error err;
    int too_large = reel_remote_read(url, NULL, 1000, &data, &size, &err);
    reel_error err2;
    int absent = reel_remote_read(missing, NULL, 1000, &data, &size, &err2);
    int ok = reel_remote_read(url, NULL, OBJECT_BYTES, &data, &size, NULL);
    test_server_stop(&sv);
    CHECK_EQ_INT(too_large, REEL_E_INVALID_ARG);
    CHECK_MSG(strstr(err.message, "object%20one.bin") && strstr(err.message, "1000") && strstr(err.message, "700013"),
              "message: %s", err.message);
    CHECK_EQ_INT(absent, REEL_E_NOT_FOUND);
    CHECK_MSG(strstr(err2.message, "/no/such.parquet") && strstr(err2.message, "404"), "message: %s", err2.message);
    for (const char *m = err.message; m; m = m == err.message ? err2.message : NULL)
        CHECK_MSG(!strstr(m, "never-shown"), "a credential in the message: %s", m);
    CHECK_EQ_INT(ok, REEL_OK);
    check_bytes(data, size);
    reel_free(data);
}
