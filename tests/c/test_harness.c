/* test_harness.c: the test harness tests itself. Failing checks are run
 * through harness_run_nested() so that they are observed, not counted. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* setenv, unsetenv */
#endif
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static char g_msg[4096];

/* ---- bodies that are expected to fail or skip */
static void body_int_mismatch(void)
{
    CHECK_EQ_INT(1 + 1, 3);
}
static void body_int_wide(void)
{
    CHECK_EQ_INT(INT64_C(5000000000), INT64_C(-5000000000));
}
static void body_str_mismatch(void)
{
    CHECK_EQ_STR("abc", "abd");
}
static void body_str_null(void)
{
    CHECK_EQ_STR(NULL, "x");
}
static void body_check_false(void)
{
    CHECK(2 < 1);
}
static void body_status_fail(void)
{
    CHECK_OK(REEL_E_IO);
}
static void body_status_wrong(void)
{
    CHECK_STATUS(REEL_OK, REEL_E_NOT_FOUND);
}
static void body_skip(void)
{
    harness_skip("no such codec here");
}

static int g_after_failure;
static void body_stops_at_failure(void)
{
    CHECK(0);
    g_after_failure = 1; /* must not run */
}

static void body_all_pass(void)
{
    CHECK(1);
    CHECK_EQ_INT(7, 7);
    CHECK_EQ_STR("same", "same");
    CHECK_OK(REEL_OK);
}

/* ---- the tests */

TEST(registry_is_populated)
{
    CHECK(harness_test_count() >= 8);
}

TEST(equal_values_pass)
{
    CHECK(1 == 1);
    CHECK_EQ_INT(42, 42);
    CHECK_EQ_INT(-1, (int64_t)-1);
    CHECK_EQ_INT(INT64_MAX, INT64_MAX);
    CHECK_EQ_INT((uint8_t)255, 255);
    CHECK_EQ_STR("reel", "reel");
    CHECK_EQ_STR(NULL, NULL);
    CHECK_NEAR(0.1 + 0.2, 0.3, 1e-12);
    CHECK_OK(REEL_OK);
    CHECK_STATUS(REEL_E_OUT_OF_RANGE, REEL_E_OUT_OF_RANGE);
    CHECK_EQ_INT(harness_run_nested(body_all_pass, g_msg, sizeof g_msg), HARNESS_PASS);
}

TEST(int_mismatch_fails_with_both_values)
{
    CHECK_EQ_INT(harness_run_nested(body_int_mismatch, g_msg, sizeof g_msg), HARNESS_FAIL);
    CHECK_MSG(strstr(g_msg, "2 != 3") != NULL, "message was: %s", g_msg);
    CHECK_MSG(strstr(g_msg, "test_harness.c:") != NULL, "no file:line in: %s", g_msg);
    CHECK_EQ_INT(harness_run_nested(body_int_wide, g_msg, sizeof g_msg), HARNESS_FAIL);
    CHECK_MSG(strstr(g_msg, "5000000000 != -5000000000") != NULL, "message was: %s", g_msg);
}

TEST(string_mismatch_fails)
{
    CHECK_EQ_INT(harness_run_nested(body_str_mismatch, g_msg, sizeof g_msg), HARNESS_FAIL);
    CHECK_MSG(strstr(g_msg, "\"abc\" != \"abd\"") != NULL, "message was: %s", g_msg);
    CHECK_EQ_INT(harness_run_nested(body_str_null, g_msg, sizeof g_msg), HARNESS_FAIL);
    CHECK_MSG(strstr(g_msg, "NULL != \"x\"") != NULL, "message was: %s", g_msg);
}

TEST(failed_check_aborts_the_body)
{
    g_after_failure = 0;
    CHECK_EQ_INT(harness_run_nested(body_stops_at_failure, NULL, 0), HARNESS_FAIL);
    CHECK_EQ_INT(g_after_failure, 0);
    CHECK_EQ_INT(harness_run_nested(body_check_false, g_msg, sizeof g_msg), HARNESS_FAIL);
    CHECK_MSG(strstr(g_msg, "CHECK(2 < 1) failed") != NULL, "message was: %s", g_msg);
}

TEST(status_checks_name_the_status)
{
    CHECK_EQ_INT(harness_run_nested(body_status_fail, g_msg, sizeof g_msg), HARNESS_FAIL);
    CHECK_MSG(strstr(g_msg, reel_strerror(REEL_E_IO)) != NULL, "message was: %s", g_msg);
    CHECK_MSG(strstr(g_msg, "returned -3") != NULL, "message was: %s", g_msg);
    CHECK_EQ_INT(harness_run_nested(body_status_wrong, g_msg, sizeof g_msg), HARNESS_FAIL);
    CHECK_MSG(strstr(g_msg, reel_strerror(REEL_E_NOT_FOUND)) != NULL, "message was: %s", g_msg);
}

TEST(skip_is_reported_with_reason)
{
    CHECK_EQ_INT(harness_run_nested(body_skip, g_msg, sizeof g_msg), HARNESS_SKIP);
    CHECK_EQ_STR(g_msg, "no such codec here");
}

/* tests/allowed_skips.txt: a listed skip with its message is allowed; the
 * same test skipping for another reason, or an unlisted test, is not. */
TEST(strict_mode_allows_only_the_listed_skips)
{
    const char *valgrind = "c/test_pipeline_loader/no_leak_under_valgrind_after_a_shutdown_mid_epoch";
    CHECK(harness_skip_allowed(valgrind, "valgrind does not run sanitized binaries"));
    CHECK(!harness_skip_allowed(valgrind, "no valgrind"));
    CHECK(harness_skip_allowed("c/test_real_videos/cold_gop_entry_matches_ffmpeg_from_the_start/fire2.mp4",
                               "one keyframe: no GOP to enter cold"));
    CHECK(!harness_skip_allowed("c/test_pipeline_cli/cli_runs", "REEL_CLI is not set"));
    CHECK(!harness_skip_allowed("c/test_real_videos/decodes_every_frame", "shared videos not found"));

    /* A nested skip that the list does not allow is refused in strict mode
     * (and not counted); the caller fails the test. */
    const char *old = getenv("REEL_STRICT");
    char saved[16] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv("REEL_STRICT", "1", 1);
    int accepted = harness_nested_skip("some_video.mp4", "not a listed reason");
    if (old)
        setenv("REEL_STRICT", saved, 1);
    else
        unsetenv("REEL_STRICT");
    CHECK_EQ_INT(accepted, 0);
}

TEST(tmpdir_is_a_writable_directory)
{
    const char *dir = harness_tmpdir();
    struct stat st;
    char path[4200];
    CHECK(dir != NULL && dir[0] == '/');
    CHECK_EQ_STR(harness_tmpdir(), dir); /* same one every call */
    CHECK_EQ_INT(stat(dir, &st), 0);
    CHECK(S_ISDIR(st.st_mode));
    snprintf(path, sizeof path, "%s/probe.txt", dir);
    FILE *f = fopen(path, "w");
    CHECK_MSG(f != NULL, "cannot write %s", path);
    CHECK_EQ_INT(fputs("ok\n", f) >= 0, 1);
    CHECK_EQ_INT(fclose(f), 0);
    CHECK_EQ_INT(stat(path, &st), 0);
    CHECK_EQ_INT(st.st_size, 3);
}

TEST(env_lookup_and_fallback)
{
    CHECK_EQ_STR(harness_env("REEL_HARNESS_SURELY_UNSET_1234", "fb"), "fb");
    CHECK_EQ_INT(setenv("REEL_HARNESS_SELFTEST", "", 1), 0);
    CHECK_EQ_STR(harness_env("REEL_HARNESS_SELFTEST", "fb"), "fb"); /* empty = unset */
    CHECK_EQ_INT(setenv("REEL_HARNESS_SELFTEST", "value", 1), 0);
    CHECK_EQ_STR(harness_env("REEL_HARNESS_SELFTEST", "fb"), "value");
    unsetenv("REEL_HARNESS_SELFTEST");
    /* The build's defaults are in place for the tests that need them. */
    CHECK(harness_env("REEL_TESTDATA", NULL) != NULL);
}

TEST(have_ffmpeg_is_stable)
{
    int a = harness_have_ffmpeg();
    CHECK(a == 0 || a == 1);
    CHECK_EQ_INT(harness_have_ffmpeg(), a);
}
